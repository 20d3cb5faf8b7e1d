// The release engine of the managed bindings (dlbx_release.c): every token released comes back
// exactly once, handed back by the free that released it on the same thread, or through the
// queue from anywhere else, with the ring full (overflow), drained from several threads at once,
// and with frees nested inside deleters. Also the packing of devices and dtypes (dlbx_pack.h).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

#include "dlbx_pack.h"
#include "dlbx_release.h"

namespace {

float g_data[4];

// A tensor over g_data whose release is dlbx_release with `token`.
DLManagedTensorVersioned* wrap_with_token(int64_t token) {
  int64_t shape[1] = {4};
  DLTensor t{};
  t.data = g_data;
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = 1;
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = shape;
  DLManagedTensorVersioned* out = nullptr;
  REQUIRE(dlb_tensor_wrap_buffer(&t, sizeof g_data, 0, dlbx_release,
                                 reinterpret_cast<void*>(static_cast<intptr_t>(token)), &out,
                                 nullptr) == DLB_OK);
  return out;
}

int64_t queued() { return __atomic_load_n(dlbx_release_queued(), __ATOMIC_ACQUIRE); }

std::vector<int64_t> drain_all() {
  std::vector<int64_t> tokens;
  int64_t batch[64];
  for (;;) {
    const int32_t n = dlbx_release_drain(64, batch);
    if (n == 0) break;
    tokens.insert(tokens.end(), batch, batch + n);
  }
  return tokens;
}

// A foreign producer's tensor whose deleter frees the dlbridge tensors in its context.
struct Nested {
  DLManagedTensorVersioned managed;
  std::vector<DLManagedTensorVersioned*> to_free;
  float value = 0;
  int64_t one = 1;
};

void nested_deleter(DLManagedTensorVersioned* self) {
  Nested* n = reinterpret_cast<Nested*>(self);
  for (DLManagedTensorVersioned* t : n->to_free) dlb_tensor_free(t);
  delete n;
}

DLManagedTensorVersioned* import_nested(std::vector<DLManagedTensorVersioned*> to_free) {
  Nested* n = new Nested();
  n->to_free = std::move(to_free);
  n->managed.version = DLPackVersion{1, 3};
  n->managed.manager_ctx = n;
  n->managed.deleter = nested_deleter;
  n->managed.dl_tensor.data = &n->value;
  n->managed.dl_tensor.device = DLDevice{kDLCPU, 0};
  n->managed.dl_tensor.ndim = 1;
  n->managed.dl_tensor.dtype = DLDataType{kDLFloat, 32, 1};
  n->managed.dl_tensor.shape = &n->one;
  n->managed.dl_tensor.strides = &n->one;
  DLManagedTensorVersioned* out = nullptr;
  REQUIRE(dlb_tensor_import(&n->managed, &out, nullptr) == DLB_OK);
  return out;
}

}  // namespace

TEST_SUITE("swig.native.release") {
  TEST_CASE("the free that releases wrapped memory hands its token back; other frees return 0") {
    REQUIRE(drain_all().empty());
    DLManagedTensorVersioned* t = wrap_with_token(7);
    DLManagedTensorVersioned* view = nullptr;
    REQUIRE(dlb_tensor_transpose(t, &view, nullptr) == DLB_OK);
    CHECK(dlbx_tensor_free(t) == 0);  // the view still holds the memory
    CHECK(dlbx_tensor_free(view) == 7);
    CHECK(queued() == 0);
    CHECK(drain_all().empty());
    CHECK(dlbx_tensor_free(nullptr) == 0);
    CHECK(dlb_tensor_live_count() == 0);
  }

  TEST_CASE("a release outside dlbx_tensor_free is queued and drained once") {
    DLManagedTensorVersioned* t = wrap_with_token(11);
    dlb_tensor_free(t);  // a consumer calling the deleter itself
    CHECK(queued() == 1);
    std::thread([] { dlb_tensor_free(wrap_with_token(12)); }).join();
    CHECK(queued() == 2);
    std::vector<int64_t> tokens = drain_all();
    REQUIRE(tokens.size() == 2);
    CHECK(((tokens[0] == 11 && tokens[1] == 12) || (tokens[0] == 12 && tokens[1] == 11)));
    CHECK(queued() == 0);
    int64_t none[4];
    CHECK(dlbx_release_drain(4, none) == 0);
    CHECK(dlbx_release_drain(0, none) == 0);
    CHECK(dlbx_release_drain(4, nullptr) == 0);
  }

  TEST_CASE("frees nested in a deleter: the first release is handed back, the next queued") {
    DLManagedTensorVersioned* outer = import_nested({wrap_with_token(21), wrap_with_token(22)});
    CHECK(dlbx_tensor_free(outer) == 21);
    CHECK(drain_all() == std::vector<int64_t>{22});
    CHECK(dlb_tensor_live_count() == 0);
  }

  TEST_CASE("more releases than the ring holds go to the overflow list; none is lost") {
    constexpr int64_t kCount = 3 * 4096 + 17;
    for (int64_t i = 1; i <= kCount; ++i) dlb_tensor_free(wrap_with_token(i));
    CHECK(queued() == kCount);
    // A partial drain leaves the rest queued, overflow included.
    int64_t some[5];
    CHECK(dlbx_release_drain(5, some) == 5);
    std::vector<int64_t> tokens(some, some + 5);
    std::vector<int64_t> rest = drain_all();
    tokens.insert(tokens.end(), rest.begin(), rest.end());
    REQUIRE(static_cast<int64_t>(tokens.size()) == kCount);
    std::vector<char> seen(kCount + 1, 0);
    for (int64_t token : tokens) {
      REQUIRE(token >= 1);
      REQUIRE(token <= kCount);
      CHECK(seen[static_cast<size_t>(token)] == 0);
      seen[static_cast<size_t>(token)] = 1;
    }
    CHECK(queued() == 0);
  }

  TEST_CASE("threads releasing and threads draining at once: every token exactly once") {
    constexpr int kReleasers = 4, kDrainers = 2;
    constexpr int64_t kPerThread = 6000;
    std::atomic<int> releasing{kReleasers};
    std::vector<std::vector<int64_t>> drained(kDrainers + 1);
    std::vector<std::thread> threads;
    std::vector<int64_t> handed_back[kReleasers];
    for (int r = 0; r < kReleasers; ++r) {
      threads.emplace_back([r, &releasing, &handed_back] {
        for (int64_t i = 0; i < kPerThread; ++i) {
          const int64_t token = (r + 1) * 1000000 + i;
          DLManagedTensorVersioned* t = wrap_with_token(token);
          if (i % 3 == 0) {
            const int64_t back = dlbx_tensor_free(t);
            if (back != 0) handed_back[r].push_back(back);
          } else {
            dlb_tensor_free(t);
          }
        }
        releasing.fetch_sub(1);
      });
    }
    for (int d = 0; d < kDrainers; ++d) {
      threads.emplace_back([d, &releasing, &drained] {
        int64_t batch[16];
        while (releasing.load() > 0) {
          const int32_t n = dlbx_release_drain(16, batch);
          drained[static_cast<size_t>(d)].insert(drained[static_cast<size_t>(d)].end(), batch, batch + n);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    drained[kDrainers] = drain_all();
    std::map<int64_t, int> count;
    for (const auto& list : drained) {
      for (int64_t token : list) ++count[token];
    }
    for (const auto& list : handed_back) {
      CHECK(static_cast<int64_t>(list.size()) == (kPerThread + 2) / 3);
      for (int64_t token : list) ++count[token];
    }
    CHECK(static_cast<int64_t>(count.size()) == kReleasers * kPerThread);
    for (const auto& entry : count) {
      if (entry.second != 1) FAIL_CHECK("token " << entry.first << " came back " << entry.second << " times");
    }
    CHECK(queued() == 0);
    CHECK(dlb_tensor_live_count() == 0);
  }
}

TEST_SUITE("swig.native.pack") {
  TEST_CASE("devices and dtypes round-trip through one integer, unknown codes included") {
    for (DLDevice d : {DLDevice{kDLCPU, 0}, DLDevice{kDLCUDA, 3}, DLDevice{static_cast<DLDeviceType>(99), 7},
                       DLDevice{kDLOpenCL, INT32_MAX}}) {
      const int64_t packed = dlbx_pack_device(d);
      CHECK(packed == ((static_cast<int64_t>(d.device_type) << 32) | d.device_id));
      const DLDevice back = dlbx_unpack_device(packed);
      CHECK(back.device_type == d.device_type);
      CHECK(back.device_id == d.device_id);
    }
    for (DLDataType t : {DLDataType{kDLFloat, 32, 1}, DLDataType{kDLBfloat, 16, 4}, DLDataType{200, 255, 65535},
                         DLDataType{0, 0, 0}}) {
      const int32_t packed = dlbx_pack_dtype(t);
      CHECK(static_cast<uint32_t>(packed) == (t.code | (uint32_t{t.bits} << 8) | (uint32_t{t.lanes} << 16)));
      const DLDataType back = dlbx_unpack_dtype(packed);
      CHECK(back.code == t.code);
      CHECK(back.bits == t.bits);
      CHECK(back.lanes == t.lanes);
    }
    CHECK(dlbx_pack_dtype(DLDataType{0, 0, 0}) == 0);
  }
}
