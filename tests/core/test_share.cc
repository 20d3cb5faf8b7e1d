// Lifecycle of dlbridge tensors through the C API, part three: free, share, and ownership
// under concurrency (tensors and shares handed between threads and freed there).
//
// Every error path checks the exact status and message; every ownership path checks the exact
// number of deleter/release calls and that dlb_tensor_live_count() returns to where it started.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lifecycle.hpp"

namespace {

using test::Counter;
using test::cpu;
using test::Dims;
using test::dtype;
using test::Error;
using test::f32;
using test::ForeignLegacy;
using test::ForeignVersioned;
using test::kIsCopied;
using test::kPadded;
using test::kPresetLegacyOut;
using test::kPresetOut;
using test::kReadOnly;
using test::kUntouched;
using test::Live;
using test::OwnedBuffer;
using test::shape_of;
using test::strides_of;
using test::wrap_floats;

// Smaller iteration counts under valgrind (or when DLB_TEST_LIGHT is set), so that the whole
// executable stays within a few seconds there too.
bool light_mode() {
  static const bool light = [] {
    if (std::getenv("DLB_TEST_LIGHT") != nullptr) return true;
#ifdef DLB_TEST_HAVE_VALGRIND
    if (RUNNING_ON_VALGRIND) return true;
#endif
    return false;
  }();
  return light;
}

// ---- concurrency helpers --------------------------------------------------------------------

// A one-shot barrier (std::barrier is C++20).
class Barrier {
 public:
  explicit Barrier(int parties) : remaining_(parties) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (--remaining_ == 0) {
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [this] { return remaining_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int remaining_;
};

struct Handoff {
  DLManagedTensorVersioned* tensor;
  std::thread::id creator;
  uint64_t flags;
};

// A mutex-protected queue through which one thread hands tensors to another to free.
class Mailbox {
 public:
  void push(const Handoff& item) {
    std::lock_guard<std::mutex> lock(mutex_);
    items_.push_back(item);
  }
  bool pop(Handoff* item) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (items_.empty()) return false;
    *item = items_.front();
    items_.pop_front();
    return true;
  }

 private:
  std::mutex mutex_;
  std::deque<Handoff> items_;
};

}  // namespace

// =============================================================================================
TEST_SUITE("core.lifecycle.free_share") {
  TEST_CASE("dlb_tensor_free: NULL is a no-op, a NULL deleter is skipped, any producer works") {
    Live live;
    dlb_tensor_free(nullptr);
    DLManagedTensorVersioned m{};
    m.version = DLPackVersion{1, 3};
    m.deleter = nullptr;
    dlb_tensor_free(&m);
    Counter deleted;
    ForeignVersioned* f = test::make_foreign(deleted, f32(), {2});
    dlb_tensor_free(&f->managed);
    CHECK(deleted.get() == 1);
    // Calling a dlbridge tensor's own deleter is the same as dlb_tensor_free.
    OwnedBuffer owned;
    DLManagedTensorVersioned* t = wrap_floats(&owned, {3});
    CHECK(live.delta() == 1);
    t->deleter(t);
    CHECK(owned.released.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("shares outlive the original in any order; release once after the last") {
    Live live;
    int orders = 0;
    std::vector<int> order{0, 1, 2, 3};
    do {
      CAPTURE(order);
      OwnedBuffer owned;
      DLManagedTensorVersioned* original = wrap_floats(&owned, {2, 3});
      DLManagedTensorVersioned* tensors[4] = {original, nullptr, nullptr, nullptr};
      Error err;
      REQUIRE(dlb_tensor_share(original, 0, &tensors[1], err.fresh()) == DLB_OK);
      CHECK(err.text() == kUntouched);
      REQUIRE(dlb_tensor_share(tensors[1], kReadOnly, &tensors[2], err.fresh()) == DLB_OK);
      REQUIRE(dlb_tensor_share(tensors[2], 0, &tensors[3], err.fresh()) == DLB_OK);
      for (DLManagedTensorVersioned* t : tensors) {
        REQUIRE(t != nullptr);
        CHECK(t->dl_tensor.data == original->dl_tensor.data);
        CHECK(shape_of(t) == Dims{2, 3});
        CHECK(strides_of(t) == Dims{3, 1});
        CHECK(dlb_tensor_is_dlbridge(t) == 1);
        CHECK(t->version.major == 1);
        CHECK(t->version.minor == 3);
      }
      // Each share has its own shape and strides arrays.
      CHECK(tensors[1]->dl_tensor.shape != original->dl_tensor.shape);
      CHECK(tensors[1]->dl_tensor.strides != original->dl_tensor.strides);
      CHECK(tensors[1] != original);
      CHECK(live.delta() == 4);
      for (size_t i = 0; i < order.size(); ++i) {
        CHECK(owned.released.get() == 0);
        // The memory is still there for everyone not yet freed.
        for (size_t j = i; j < order.size(); ++j) {
          CHECK(static_cast<const float*>(tensors[order[j]]->dl_tensor.data)[5] == 5.0f);
        }
        dlb_tensor_free(tensors[order[i]]);
      }
      CHECK(owned.released.get() == 1);
      CHECK(live.delta() == 0);
      ++orders;
    } while (std::next_permutation(order.begin(), order.end()));
    CHECK(orders == 24);
  }

  TEST_CASE("a share may add READ_ONLY; the original stays writable; flags but IS_COPIED carry over") {
    Live live;
    OwnedBuffer owned;
    DLManagedTensorVersioned* original = wrap_floats(&owned, {4}, kIsCopied);
    DLManagedTensorVersioned* ro = nullptr;
    Error err;
    REQUIRE(dlb_tensor_share(original, kReadOnly, &ro, err.fresh()) == DLB_OK);
    REQUIRE(ro != nullptr);
    CHECK(ro->flags == kReadOnly);  // an alias is not the sole owner: IS_COPIED stays behind
    CHECK(dlb_tensor_is_read_only(ro) == 1);
    CHECK(original->flags == kIsCopied);
    CHECK(dlb_tensor_is_read_only(original) == 0);
    // A share of the read-only share stays read-only.
    DLManagedTensorVersioned* ro2 = nullptr;
    REQUIRE(dlb_tensor_share(ro, 0, &ro2, err.fresh()) == DLB_OK);
    CHECK(ro2->flags == kReadOnly);
    // The original can still be written (and exported to legacy, which needs writability).
    static_cast<float*>(original->dl_tensor.data)[0] = 42.0f;
    CHECK(static_cast<const float*>(ro->dl_tensor.data)[0] == 42.0f);
    DLManagedTensor* legacy_ro = kPresetLegacyOut;
    CHECK(dlb_tensor_export_legacy(ro, &legacy_ro, err.fresh()) == DLB_ERR_READ_ONLY);
    CHECK(legacy_ro == nullptr);
    // Padded carries over too.
    const Dims shape{3};
    DLManagedTensorVersioned* padded = nullptr;
    REQUIRE(dlb_tensor_allocate(cpu(), dtype(kDLInt, 4), 1, shape.data(), nullptr, kPadded,
                                &padded, err.fresh()) == DLB_OK);
    DLManagedTensorVersioned* padded_share = nullptr;
    REQUIRE(dlb_tensor_share(padded, kReadOnly, &padded_share, err.fresh()) == DLB_OK);
    CHECK(padded_share->flags == (kPadded | kReadOnly));
    CHECK(padded->flags == kPadded);
    dlb_tensor_free(padded);
    dlb_tensor_free(padded_share);
    dlb_tensor_free(ro2);
    dlb_tensor_free(original);
    CHECK(owned.released.get() == 0);
    dlb_tensor_free(ro);
    CHECK(owned.released.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("share errors: other add_flags, foreign tensors, NULL arguments") {
    Live live;
    OwnedBuffer owned;
    DLManagedTensorVersioned* t = wrap_floats(&owned, {2});
    for (uint64_t add : {kIsCopied, kPadded, kReadOnly | kIsCopied, uint64_t{1} << 9}) {
      CAPTURE(add);
      DLManagedTensorVersioned* s = kPresetOut;
      Error err;
      CHECK(dlb_tensor_share(t, add, &s, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
      char expected[96];
      std::snprintf(expected, sizeof(expected),
                    "a share can only add the READ_ONLY flag, not 0x%llx",
                    static_cast<unsigned long long>(add));
      CHECK(err.text() == expected);
      CHECK(s == nullptr);
      CHECK(live.delta() == 1);
    }
    Error err;
    DLManagedTensorVersioned* s = kPresetOut;
    CHECK(dlb_tensor_share(nullptr, 0, &s, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "tensor is NULL");
    CHECK(s == nullptr);
    CHECK(dlb_tensor_share(t, 0, nullptr, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "out is NULL");

    // A foreign tensor: refused and NOT consumed.
    Counter deleted;
    ForeignVersioned* f = test::make_foreign(deleted, f32(), {2});
    CHECK(dlb_tensor_is_dlbridge(&f->managed) == 0);
    s = kPresetOut;
    CHECK(dlb_tensor_share(&f->managed, 0, &s, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "tensor was not made by dlbridge; import it with dlb_tensor_import first");
    CHECK(s == nullptr);
    CHECK(deleted.get() == 0);
    // After import the same tensor can be shared.
    DLManagedTensorVersioned* imported = nullptr;
    REQUIRE(dlb_tensor_import(&f->managed, &imported, err.fresh()) == DLB_OK);
    CHECK(dlb_tensor_is_dlbridge(imported) == 1);
    REQUIRE(dlb_tensor_share(imported, 0, &s, err.fresh()) == DLB_OK);
    dlb_tensor_free(imported);
    CHECK(deleted.get() == 0);
    dlb_tensor_free(s);
    CHECK(deleted.get() == 1);

    CHECK(dlb_tensor_is_dlbridge(nullptr) == 0);
    CHECK(owned.released.get() == 0);
    dlb_tensor_free(t);
    CHECK(owned.released.get() == 1);
    CHECK(live.delta() == 0);
  }
}

// =============================================================================================
namespace {

// The release of the memory shared by the concurrency test: it must run exactly once, only
// after every share is gone (`outstanding` counts the holders still alive).
struct SharedRelease {
  std::atomic<int64_t> outstanding{0};
  std::atomic<int> calls{0};
  std::atomic<int> premature{0};
  float* memory = nullptr;
  std::mutex mutex;
  std::thread::id thread;
};
void shared_release(void* ctx) {
  auto* r = static_cast<SharedRelease*>(ctx);
  if (r->outstanding.load() != 0) r->premature++;
  std::free(r->memory);
  {
    std::lock_guard<std::mutex> lock(r->mutex);
    r->thread = std::this_thread::get_id();
  }
  r->calls++;
}

}  // namespace

TEST_SUITE("core.lifecycle.concurrency") {
  TEST_CASE("8 threads share one tensor, hand shares to each other and free them concurrently") {
    Live live;
    constexpr int kThreads = 8;
    constexpr int kElements = 64;
    const int rounds = light_mode() ? 4 : 32;
    const int iterations = light_mode() ? 250 : 2500;
    const std::thread::id main_id = std::this_thread::get_id();
    int64_t total_cross = 0;

    for (int round = 0; round < rounds; ++round) {
      CAPTURE(round);
      SharedRelease release;
      release.memory = static_cast<float*>(std::malloc(sizeof(float) * kElements));
      REQUIRE(release.memory != nullptr);
      for (int i = 0; i < kElements; ++i) release.memory[i] = static_cast<float>(i);
      const Dims shape{kElements};
      DLTensor desc{};
      desc.data = release.memory;
      desc.device = cpu();
      desc.ndim = 1;
      desc.dtype = f32();
      desc.shape = const_cast<int64_t*>(shape.data());
      DLManagedTensorVersioned* original = nullptr;
      Error err;
      REQUIRE(dlb_tensor_wrap(&desc, 0, shared_release, &release, &original, err.fresh()) ==
              DLB_OK);
      void* const data = original->dl_tensor.data;
      release.outstanding = 1;

      // Each worker starts with one share made here on the main thread.
      std::vector<DLManagedTensorVersioned*> initial(kThreads);
      for (auto& s : initial) {
        REQUIRE(dlb_tensor_share(original, 0, &s, err.fresh()) == DLB_OK);
        release.outstanding++;
      }
      // Even rounds drop the original before the workers start, so the release must run on a
      // worker; odd rounds drop it while they run.
      const bool early = round % 2 == 0;
      if (early) {
        release.outstanding--;
        dlb_tensor_free(original);
        CHECK(release.calls.load() == 0);
      }

      std::vector<Mailbox> mailboxes(kThreads);
      Barrier done_sending(kThreads);
      std::atomic<int> failures{0};
      std::atomic<int64_t> cross_thread{0};
      std::vector<std::thread> workers;
      for (int w = 0; w < kThreads; ++w) {
        workers.emplace_back([&, w] {
          const std::thread::id self = std::this_thread::get_id();
          DLManagedTensorVersioned* held = initial[static_cast<size_t>(w)];
          uint64_t held_flags = 0;
          auto check = [&](const DLManagedTensorVersioned* t, uint64_t flags) {
            const bool ok = t->dl_tensor.data == data && t->dl_tensor.ndim == 1 &&
                            t->dl_tensor.shape[0] == kElements && t->dl_tensor.strides[0] == 1 &&
                            t->flags == flags &&
                            static_cast<const float*>(t->dl_tensor.data)[kElements - 1] ==
                                static_cast<float>(kElements - 1);
            if (!ok) failures++;
          };
          auto drop = [&](const Handoff& item) {
            if (item.creator != self) cross_thread++;
            check(item.tensor, item.flags);
            release.outstanding--;
            dlb_tensor_free(item.tensor);
          };
          for (int it = 0; it < iterations; ++it) {
            const uint64_t add = (it % 3 == 0) ? kReadOnly : 0;
            DLManagedTensorVersioned* s = nullptr;
            if (dlb_tensor_share(held, add, &s, nullptr) != DLB_OK || s == nullptr) {
              failures++;
              continue;
            }
            release.outstanding++;
            mailboxes[static_cast<size_t>((w + 1) % kThreads)].push(
                Handoff{s, self, held_flags | add});
            Handoff item{};
            if (mailboxes[static_cast<size_t>(w)].pop(&item)) {
              if (it % 8 == 7) {
                // Keep a share made by another thread and drop the one held so far.
                check(held, held_flags);
                release.outstanding--;
                dlb_tensor_free(held);
                if (item.creator != self) cross_thread++;
                held = item.tensor;
                held_flags = item.flags;
              } else {
                drop(item);
              }
            }
          }
          done_sending.arrive_and_wait();
          Handoff item{};
          while (mailboxes[static_cast<size_t>(w)].pop(&item)) drop(item);
          check(held, held_flags);
          release.outstanding--;
          dlb_tensor_free(held);
        });
      }
      if (!early) {
        release.outstanding--;
        dlb_tensor_free(original);
      }
      for (auto& t : workers) t.join();

      CHECK(failures.load() == 0);
      CHECK(release.premature.load() == 0);
      CHECK(release.outstanding.load() == 0);
      CHECK(release.calls.load() == 1);
      CHECK(cross_thread.load() > 0);
      if (early) {
        std::lock_guard<std::mutex> lock(release.mutex);
        CHECK(release.thread != main_id);
      }
      CHECK(live.delta() == 0);
      total_cross += cross_thread.load();
    }
    CHECK(total_cross >= rounds);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("8 threads allocate, wrap, import, export and free concurrently; counts exact") {
    Live live;
    constexpr int kThreads = 8;
    const int iterations = light_mode() ? 1200 : 20000;
    Counter wrap_released;
    Counter versioned_deleted;
    Counter legacy_deleted;
    std::atomic<int> failures{0};
    std::vector<Mailbox> mailboxes(kThreads);
    Barrier done_sending(kThreads);
    std::vector<std::thread> workers;
    for (int w = 0; w < kThreads; ++w) {
      workers.emplace_back([&, w] {
        const std::thread::id self = std::this_thread::get_id();
        const Dims shape{4, 4};
        for (int it = 0; it < iterations; ++it) {
          DLManagedTensorVersioned* a = nullptr;
          if (dlb_tensor_allocate(cpu(), f32(), 2, shape.data(), nullptr, 0, &a, nullptr) !=
                  DLB_OK ||
              a == nullptr) {
            failures++;
            continue;
          }
          static_cast<float*>(a->dl_tensor.data)[15] = static_cast<float>(it);

          float* buffer = static_cast<float*>(std::malloc(sizeof(float) * 16));
          DLTensor desc{};
          desc.data = buffer;
          desc.device = cpu();
          desc.ndim = 2;
          desc.dtype = f32();
          desc.shape = const_cast<int64_t*>(shape.data());
          DLManagedTensorVersioned* wrapped = nullptr;
          if (dlb_tensor_wrap(&desc, 0, test::count_release, &wrap_released, &wrapped, nullptr) !=
              DLB_OK) {
            failures++;
          }
          // The buffer is freed here once the wrapped tensor (and its legacy export) is gone;
          // count_release only counts.

          ForeignVersioned* fv = test::make_foreign(versioned_deleted, f32(), {2, 2});
          DLManagedTensorVersioned* imported = nullptr;
          if (dlb_tensor_import(&fv->managed, &imported, nullptr) != DLB_OK) failures++;

          ForeignLegacy* fl = test::make_foreign_legacy(legacy_deleted, f32(), {3});
          DLManagedTensorVersioned* imported_legacy = nullptr;
          if (dlb_tensor_import_legacy(&fl->managed, &imported_legacy, nullptr) != DLB_OK) {
            failures++;
          }

          DLManagedTensorVersioned* share = nullptr;
          if (dlb_tensor_share(a, kReadOnly, &share, nullptr) != DLB_OK) failures++;

          // wrapped -> legacy -> versioned round trip.
          DLManagedTensor* legacy = nullptr;
          DLManagedTensorVersioned* round_trip = nullptr;
          if (dlb_tensor_export_legacy(wrapped, &legacy, nullptr) != DLB_OK ||
              dlb_tensor_import_legacy(legacy, &round_trip, nullptr) != DLB_OK) {
            failures++;
          }

          dlb_tensor_free(a);
          if (share == nullptr ||
              static_cast<const float*>(share->dl_tensor.data)[15] != static_cast<float>(it)) {
            failures++;
          }
          // Hand the share and the legacy import to the next thread to free.
          mailboxes[static_cast<size_t>((w + 1) % kThreads)].push(Handoff{share, self, kReadOnly});
          mailboxes[static_cast<size_t>((w + 1) % kThreads)].push(
              Handoff{imported_legacy, self, 0});
          dlb_tensor_free(imported);
          dlb_tensor_free(round_trip);
          std::free(buffer);
          Handoff item{};
          for (int k = 0; k < 2 && mailboxes[static_cast<size_t>(w)].pop(&item); ++k) {
            if (item.tensor->flags != item.flags) failures++;
            dlb_tensor_free(item.tensor);
          }
        }
        done_sending.arrive_and_wait();
        Handoff item{};
        while (mailboxes[static_cast<size_t>(w)].pop(&item)) dlb_tensor_free(item.tensor);
      });
    }
    for (auto& t : workers) t.join();
    const int total = kThreads * iterations;
    CHECK(failures.load() == 0);
    CHECK(wrap_released.get() == total);
    CHECK(versioned_deleted.get() == total);
    CHECK(legacy_deleted.get() == total);
    CHECK(live.delta() == 0);
  }
}

// =============================================================================================
TEST_SUITE("core.lifecycle.spares") {
  // A thread keeps the blocks of its freed tensors of up to 4 dimensions (not those of
  // allocated CPU tensors, which hold their data) for its next tensors, and gives them back to
  // the heap when it ends: under valgrind or a sanitizer these cases also show that nothing
  // kept is lost. Built with AddressSanitizer the library keeps none (so that it reports every
  // use of a freed handle), and which block a tensor gets is not checked.
#ifdef DLB_TEST_ASAN
  constexpr bool kKeepsBlocks = false;
#else
  constexpr bool kKeepsBlocks = true;
#endif
  TEST_CASE("a freed block serves the thread's next wrap, share or import of up to 4 dimensions") {
    Live live;
    float values[16] = {};
    const Dims shape2{4, 4};
    const Dims shape4{1, 2, 2, 4};
    const Dims shape5{1, 1, 2, 2, 4};
    DLTensor desc{};
    desc.data = values;
    desc.device = cpu();
    desc.ndim = 2;
    desc.dtype = f32();
    desc.shape = const_cast<int64_t*>(shape2.data());
    Counter released;
    DLManagedTensorVersioned* first = nullptr;
    REQUIRE(dlb_tensor_wrap(&desc, 0, test::count_release, &released, &first, nullptr) == DLB_OK);
    DLManagedTensorVersioned* const kept = first;
    dlb_tensor_free(first);
    CHECK(released.get() == 1);

    // While the block is kept, neither an allocated CPU tensor nor a 5-d one takes it (its
    // address cannot come back from the heap), and neither of their blocks is kept on top of it.
    DLManagedTensorVersioned* allocated = nullptr;
    REQUIRE(dlb_tensor_allocate(cpu(), f32(), 2, shape2.data(), nullptr, 0, &allocated, nullptr) ==
            DLB_OK);
    if (kKeepsBlocks) CHECK(allocated != kept);
    dlb_tensor_free(allocated);
    desc.ndim = 5;
    desc.shape = const_cast<int64_t*>(shape5.data());
    DLManagedTensorVersioned* wrapped5 = nullptr;
    REQUIRE(dlb_tensor_wrap(&desc, 0, test::count_release, &released, &wrapped5, nullptr) ==
            DLB_OK);
    if (kKeepsBlocks) CHECK(wrapped5 != kept);
    CHECK(shape_of(wrapped5) == shape5);
    dlb_tensor_free(wrapped5);
    CHECK(released.get() == 2);

    // A 4-d wrap takes it, whatever rank it had, with every field its own.
    desc.ndim = 4;
    desc.shape = const_cast<int64_t*>(shape4.data());
    DLManagedTensorVersioned* wrapped4 = nullptr;
    REQUIRE(dlb_tensor_wrap(&desc, 0, test::count_release, &released, &wrapped4, nullptr) ==
            DLB_OK);
    if (kKeepsBlocks) CHECK(wrapped4 == kept);
    CHECK(shape_of(wrapped4) == shape4);
    CHECK(strides_of(wrapped4) == Dims{16, 8, 4, 1});
    CHECK(dlb_tensor_is_exclusive(wrapped4) == 1);

    // A share of it gets a block from the heap; freeing the share then frees, and keeps, the
    // share's block and then the root's, which comes first for the next tensor.
    DLManagedTensorVersioned* share = nullptr;
    REQUIRE(dlb_tensor_share(wrapped4, 0, &share, nullptr) == DLB_OK);
    DLManagedTensorVersioned* const share_block = share;
    dlb_tensor_free(wrapped4);
    CHECK(released.get() == 2);
    dlb_tensor_free(share);
    CHECK(released.get() == 3);

    Counter deleted;
    ForeignVersioned* foreign = test::make_foreign(deleted, f32(), {2, 2});
    DLManagedTensorVersioned* imported = nullptr;
    REQUIRE(dlb_tensor_import(&foreign->managed, &imported, nullptr) == DLB_OK);
    if (kKeepsBlocks) CHECK(imported == kept);
    CHECK(shape_of(imported) == Dims{2, 2});
    DLManagedTensorVersioned* imported_share = nullptr;
    REQUIRE(dlb_tensor_share(imported, kReadOnly, &imported_share, nullptr) == DLB_OK);
    if (kKeepsBlocks) CHECK(imported_share == share_block);
    CHECK(imported_share->flags == kReadOnly);
    CHECK(dlb_tensor_is_exclusive(imported) == 0);
    dlb_tensor_free(imported);
    CHECK(deleted.get() == 0);
    dlb_tensor_free(imported_share);
    CHECK(deleted.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("threads that end give their kept blocks back, also those freed after that") {
    Live live;
    Counter released;
    // Frees a tensor when its thread ends, after the library's own thread cleanup: a
    // thread-local constructed first is destroyed last.
    struct FreeAtThreadEnd {
      DLManagedTensorVersioned* tensor = nullptr;
      ~FreeAtThreadEnd() { dlb_tensor_free(tensor); }
    };
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&released, &failures] {
        static thread_local FreeAtThreadEnd late;
        float values[4] = {};
        Dims shape{4};
        DLTensor desc{};
        desc.data = values;
        desc.device = cpu();
        desc.ndim = 1;
        desc.dtype = f32();
        desc.shape = shape.data();
        // More tensors alive at once than a thread keeps blocks for.
        std::vector<DLManagedTensorVersioned*> tensors(100, nullptr);
        for (auto*& tensor : tensors) {
          if (dlb_tensor_wrap(&desc, 0, test::count_release, &released, &tensor, nullptr) !=
              DLB_OK) {
            failures++;
          }
        }
        for (auto* tensor : tensors) dlb_tensor_free(tensor);
        desc.data = nullptr;  // `values` is gone when `late` is freed
        desc.shape[0] = 0;
        if (dlb_tensor_wrap(&desc, 0, test::count_release, &released, &late.tensor, nullptr) !=
            DLB_OK) {
          failures++;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    CHECK(failures.load() == 0);
    CHECK(released.get() == 4 * 101);
    CHECK(live.delta() == 0);
  }
}
