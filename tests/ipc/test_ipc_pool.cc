// Suite ipc: a channel's pool (dlb_channel_allocate). Slots go back to the sender when the
// receiver frees its tensors and are reused; a segment's memfd travels once and the receiver
// keeps one descriptor and one mapping per segment, however many tensors it holds; read-only
// tensors are mapped read-only; the lifetime rules of shared memory still hold (a received
// tensor outlives its sender, a killed receiver leaks nothing); a receiver out of descriptors
// loses the tensor with LIMIT and the sender hears of it; each refusal has its exact message.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "dlbridge/dlbridge.h"
#include "ipc_process.hpp"
#include "ipc_scratch.hpp"

namespace {

using ipc_process::child;
using ipc_process::wait_exit;
using ipc_scratch::count_fds;
using ipc_scratch::Folder;
using ipc_scratch::segment_mappings;

const DLDevice kCpu = {kDLCPU, 0};
const DLDataType kF32 = {kDLFloat, 32, 1};
const DLDataType kU8 = {kDLUInt, 8, 1};

int segment_fds() { return count_fds().segments; }

// The permissions of the mapping `address` lies in ("rw-s", "r--s"), or "".
std::string protection_of(const void* address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto at = reinterpret_cast<unsigned long long>(address);
  while (std::getline(maps, line)) {
    unsigned long long from = 0, to = 0;
    char perms[8] = {0};
    if (std::sscanf(line.c_str(), "%llx-%llx %7s", &from, &to, perms) == 3 && at >= from &&
        at < to) {
      return perms;
    }
  }
  return "";
}

// A listener, the channel it accepted from a child, and the child; closed at the end.
struct Pair {
  Folder folder{"pool"};
  dlb_channel* listener = nullptr;
  dlb_channel* server = nullptr;
  pid_t peer = -1;
  template <class F>
  explicit Pair(F&& body) {
    REQUIRE(dlb_channel_listen(folder.socket.c_str(), &listener, nullptr) == DLB_OK);
    peer = child([&] {
      dlb_channel* c = nullptr;
      if (dlb_channel_connect(folder.socket.c_str(), &c, nullptr) != DLB_OK) return 90;
      const int status = body(c);
      dlb_channel_close(c);
      return status;
    });
    REQUIRE(dlb_channel_accept(listener, &server, nullptr) == DLB_OK);
  }
  ~Pair() {
    dlb_channel_close(server);
    dlb_channel_close(listener);
  }
};

// Allocates from the pool and fills element i with base + i.
DLManagedTensorVersioned* pooled(dlb_channel* c, int64_t n, float base, uint64_t flags = 0) {
  DLManagedTensorVersioned* t = nullptr;
  dlb_error e;
  const int status = dlb_channel_allocate(c, kCpu, kF32, 1, &n, nullptr, flags, &t, &e);
  if (status != DLB_OK) {
    MESSAGE(e.message);
    return nullptr;
  }
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(t->dl_tensor.data)[i] = base + static_cast<float>(i);
  return t;
}

bool holds(const DLManagedTensorVersioned* t, int64_t n, float base) {
  const float* v = reinterpret_cast<const float*>(static_cast<const char*>(t->dl_tensor.data) +
                                                  t->dl_tensor.byte_offset);
  for (int64_t i = 0; i < n; ++i) {
    if (v[i] != base + static_cast<float>(i)) return false;
  }
  return t->dl_tensor.shape[0] == n;
}

// The pool's stats once the peer has given back everything it was lent (or after ~5 s).
dlb_pool_stats settled(dlb_channel* c) {
  dlb_pool_stats stats{};
  for (int i = 0; i < 5000; ++i) {
    REQUIRE(dlb_channel_pool_stats(c, &stats, nullptr) == DLB_OK);
    if (stats.lent == 0) break;
    usleep(1000);
  }
  return stats;
}

// Whether this run is under a sanitizer or valgrind, where a million tensors take too long.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DLB_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DLB_TEST_SANITIZED 1
#endif
bool instrumented() {
#if defined(DLB_TEST_SANITIZED)
  return true;
#else
  return ipc_scratch::under_valgrind();
#endif
}

}  // namespace

TEST_SUITE("ipc.pool") {
  TEST_CASE("slots go back when the receiver frees, and are reused: one segment for a stream") {
    // 4000-byte tensors take 4096-byte slots, 512 to a segment: 2000 of them fit in one only
    // because the slots come back.
    constexpr int kTensors = 2000;
    Pair pair([](dlb_channel* c) {
      for (int i = 0; i < kTensors; ++i) {
        DLManagedTensorVersioned* t = nullptr;
        if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 10;
        if (!holds(t, 1000, static_cast<float>(i))) return 11;
        if (dlb_tensor_is_shareable(t) != 0) return 12;  // lent, not shareable
        dlb_tensor_free(t);
      }
      // One descriptor and one mapping for the one segment the stream used, and the mapping of
      // the pool's return ring (its descriptor closed once mapped).
      const int fds = segment_fds();
      const size_t maps = segment_mappings().size();
      const size_t rings = segment_mappings(ipc_scratch::kRingName).size();
      DLManagedTensorVersioned* last = nullptr;
      if (dlb_channel_receive(c, &last, nullptr) != DLB_OK) return 13;
      dlb_tensor_free(last);
      return fds == 1 && maps == 1 && rings == 1 ? 0 : 14;
    });
    for (int i = 0; i <= kTensors; ++i) {
      DLManagedTensorVersioned* t = pooled(pair.server, 1000, static_cast<float>(i));
      REQUIRE(t != nullptr);
      CHECK(dlb_tensor_shareable_kind(t) == DLB_SHAREABLE_MEMFD);
      CHECK(reinterpret_cast<uintptr_t>(t->dl_tensor.data) % DLB_CPU_ALIGNMENT == 0);
      REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
      dlb_tensor_free(t);
    }
    CHECK(wait_exit(pair.peer) == 0);
    const dlb_pool_stats stats = settled(pair.server);
    CHECK(stats.segments == 1);
    CHECK(stats.bytes == (2u << 20));
    CHECK(stats.limit == DLB_POOL_DEFAULT_LIMIT);
    CHECK(stats.live == 0);
    CHECK(stats.lent == 0);
    CHECK(stats.returned == kTensors + 1);
    CHECK(stats.lost == 0);
  }

  TEST_CASE("a receiver holds many tensors over few segments: one descriptor and mapping each") {
    const int tensors = instrumented() ? 20000 : 1000000;
    Pair pair([tensors](dlb_channel* c) {
      std::vector<DLManagedTensorVersioned*> held(static_cast<size_t>(tensors));
      for (int i = 0; i < tensors; ++i) {
        if (dlb_channel_receive(c, &held[static_cast<size_t>(i)], nullptr) != DLB_OK) return 10;
      }
      for (int i = 0; i < tensors; i += 997) {
        if (!holds(held[static_cast<size_t>(i)], 4, static_cast<float>(i))) return 11;
      }
      // 256-byte slots, 8192 to a 2 MiB segment.
      const int segments = (tensors + 8191) / 8192;
      const int fds = segment_fds();
      const int maps = static_cast<int>(segment_mappings().size());
      for (DLManagedTensorVersioned* t : held) dlb_tensor_free(t);
      if (fds != segments) return 12;
      if (maps != segments) return 13;
      return dlb_tensor_live_count() == 0 ? 0 : 14;
    });
    for (int i = 0; i < tensors; ++i) {
      DLManagedTensorVersioned* t = pooled(pair.server, 4, static_cast<float>(i));
      REQUIRE(t != nullptr);
      REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
      dlb_tensor_free(t);
    }
    // Taking returns back while the receiver frees (its side of the release socket holds a few
    // hundred datagrams; what does not fit waits in the receiver for room).
    const dlb_pool_stats stats = settled(pair.server);
    CHECK(wait_exit(pair.peer) == 0);
    CHECK(stats.lent == 0);
    CHECK(stats.returned == static_cast<uint64_t>(tensors));
    CHECK(stats.segments == static_cast<uint64_t>((tensors + 8191) / 8192));
  }

  TEST_CASE("READ_ONLY is mapped read-only, writable tensors of the same segment read-write") {
    Pair pair([](dlb_channel* c) {
      DLManagedTensorVersioned* ro = nullptr;
      DLManagedTensorVersioned* rw = nullptr;
      if (dlb_channel_receive(c, &ro, nullptr) != DLB_OK) return 10;
      if (dlb_channel_receive(c, &rw, nullptr) != DLB_OK) return 11;
      if ((ro->flags & DLPACK_FLAG_BITMASK_READ_ONLY) == 0) return 12;
      if (protection_of(ro->dl_tensor.data) != "r--s") return 13;
      if (protection_of(rw->dl_tensor.data) != "rw-s") return 14;
      if (!holds(ro, 8, 10) || !holds(rw, 8, 20)) return 15;
      static_cast<float*>(rw->dl_tensor.data)[0] = 99;  // seen by the sender
      dlb_tensor_free(ro);
      dlb_tensor_free(rw);
      return 0;
    });
    DLManagedTensorVersioned* ro = pooled(pair.server, 8, 10, DLPACK_FLAG_BITMASK_READ_ONLY);
    DLManagedTensorVersioned* rw = pooled(pair.server, 8, 20);
    REQUIRE(ro != nullptr);
    REQUIRE(rw != nullptr);
    REQUIRE(dlb_channel_send(pair.server, ro, 0, nullptr) == DLB_OK);
    REQUIRE(dlb_channel_send(pair.server, rw, 0, nullptr) == DLB_OK);
    CHECK(wait_exit(pair.peer) == 0);
    CHECK(static_cast<float*>(rw->dl_tensor.data)[0] == 99);
    CHECK(dlb_tensor_is_exclusive(rw) == 0);  // the peer mapped its segment
    dlb_tensor_free(ro);
    dlb_tensor_free(rw);
  }

  TEST_CASE("large tensors have segments of their own, reused once both ends are done") {
    constexpr int64_t kFloats = 3 << 20;  // 12 MiB
    Pair pair([](dlb_channel* c) {
      for (int i = 0; i < 6; ++i) {
        DLManagedTensorVersioned* t = nullptr;
        if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 10;
        const float* v = static_cast<const float*>(t->dl_tensor.data);
        if (v[0] != static_cast<float>(i) || v[kFloats - 1] != static_cast<float>(i) + kFloats - 1) return 11;
        dlb_tensor_free(t);
      }
      return 0;
    });
    for (int i = 0; i < 6; ++i) {
      DLManagedTensorVersioned* t = pooled(pair.server, kFloats, static_cast<float>(i));
      REQUIRE(t != nullptr);
      REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
      dlb_tensor_free(t);
      settled(pair.server);
    }
    CHECK(wait_exit(pair.peer) == 0);
    const dlb_pool_stats stats = settled(pair.server);
    CHECK(stats.segments == 1);
    CHECK(stats.bytes == 12u << 20);
    CHECK(stats.returned == 6);
    CHECK(stats.huge_pages >= DLB_HUGE_PAGES_NONE);
    CHECK(stats.huge_pages <= DLB_HUGE_PAGES_HUGETLB);
  }

  TEST_CASE("a pool waits for a return before it grows, and still grows for a receiver that keeps") {
    constexpr int64_t kFloats = 1 << 21;  // 8 MiB: a segment of its own each
    constexpr int kStream = 24, kKept = 4;
    Pair pair([](dlb_channel* c) {
      for (int i = 0; i < kStream; ++i) {  // keeps up, reading all, and frees each as it comes
        DLManagedTensorVersioned* t = nullptr;
        if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 10;
        const float* v = static_cast<const float*>(t->dl_tensor.data);
        float sum = 0;
        for (int64_t k = 0; k < kFloats; k += 16) sum += v[k];  // a float of each line
        sum += v[kFloats - 1];
        if (sum != 2.0f * static_cast<float>(i)) return 11;
        dlb_tensor_free(t);
      }
      std::vector<DLManagedTensorVersioned*> kept(kKept);
      for (int i = 0; i < kKept; ++i) {  // keeps them all, then frees them
        if (dlb_channel_receive(c, &kept[i], nullptr) != DLB_OK) return 12;
        if (!holds(kept[i], kFloats, static_cast<float>(100 + i))) return 13;
      }
      for (DLManagedTensorVersioned* t : kept) dlb_tensor_free(t);
      return 0;
    });
    for (int i = 0; i < kStream; ++i) {  // sends faster than the receiver reads
      DLManagedTensorVersioned* t = nullptr;
      REQUIRE(dlb_channel_allocate(pair.server, kCpu, kF32, 1, &kFloats, nullptr, 0, &t,
                                   nullptr) == DLB_OK);
      float* v = static_cast<float*>(t->dl_tensor.data);
      v[0] = v[kFloats - 1] = static_cast<float>(i);  // the rest stays 0: no send wrote it
      REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
      dlb_tensor_free(t);
    }
    // Each allocation waited for a return for as long as a growth takes (about 1 ms for 8 MiB),
    // and the receiver freed within a tenth of that: the stream needed a segment or two, where
    // a pool that grows at once ends with 6 or 7 here. A sanitizer or valgrind slows the
    // receiver more than the growth, so there only the rest is checked.
    const dlb_pool_stats streamed = settled(pair.server);
    if (!instrumented()) CHECK(streamed.segments <= 3);
    CHECK(streamed.returned == kStream);
    for (int i = 0; i < kKept; ++i) {
      DLManagedTensorVersioned* t = pooled(pair.server, kFloats, static_cast<float>(100 + i));
      REQUIRE(t != nullptr);
      REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
      dlb_tensor_free(t);
    }
    CHECK(wait_exit(pair.peer) == 0);
    // Nothing came back while the receiver kept them: the pool grew to hold all it kept.
    const dlb_pool_stats kept = settled(pair.server);
    CHECK(kept.segments >= kKept);
    CHECK(kept.returned == kStream + kKept);
  }

  TEST_CASE("a full pool waits for the peer within the time limit, then takes the slot back") {
    int go[2];
    REQUIRE(pipe(go) == 0);
    Pair pair([&](dlb_channel* c) {
      DLManagedTensorVersioned* t = nullptr;
      if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 10;
      char byte;
      if (read(go[0], &byte, 1) != 1) return 11;  // the sender ran out of time meanwhile
      dlb_tensor_free(t);
      return 0;
    });
    const int64_t n = 1 << 20;  // 4 MiB: one segment, the whole limit
    REQUIRE(dlb_channel_set_pool_limit(pair.server, 4u << 20, nullptr) == DLB_OK);
    DLManagedTensorVersioned* t = pooled(pair.server, n, 0);
    REQUIRE(t != nullptr);
    REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
    dlb_tensor_free(t);
    REQUIRE(dlb_channel_set_timeout(pair.server, 20000000, nullptr) == DLB_OK);
    dlb_error e;
    DLManagedTensorVersioned* more = nullptr;
    CHECK(dlb_channel_allocate(pair.server, kCpu, kF32, 1, &n, nullptr, 0, &more, &e) == DLB_ERR_TIMEOUT);
    CHECK(std::string(e.message) ==
          "the channel's pool holds 4194304 of its limit of 4194304 bytes and a tensor needs "
          "4194304 more: the time limit ran out waiting for the peer to free what it received");
    CHECK(more == nullptr);
    REQUIRE(write(go[1], "x", 1) == 1);
    REQUIRE(dlb_channel_set_timeout(pair.server, 5000000000, nullptr) == DLB_OK);
    CHECK(dlb_channel_allocate(pair.server, kCpu, kF32, 1, &n, nullptr, 0, &more, &e) == DLB_OK);
    dlb_tensor_free(more);
    CHECK(wait_exit(pair.peer) == 0);
    close(go[0]);
    close(go[1]);
  }

  TEST_CASE("a received tensor outlives its sender; a killed receiver leaks nothing") {
    // The sender exits (its pool and channel gone) while the receiver still reads.
    Folder folder("pool");
    dlb_channel* listener = nullptr;
    REQUIRE(dlb_channel_listen(folder.socket.c_str(), &listener, nullptr) == DLB_OK);
    const pid_t sender = child([&] {
      dlb_channel* c = nullptr;
      if (dlb_channel_connect(folder.socket.c_str(), &c, nullptr) != DLB_OK) return 10;
      DLManagedTensorVersioned* t = pooled(c, 64, 7);
      if (t == nullptr || dlb_channel_send(c, t, 0, nullptr) != DLB_OK) return 11;
      dlb_tensor_free(t);
      dlb_channel_close(c);
      return 0;
    });
    dlb_channel* server = nullptr;
    REQUIRE(dlb_channel_accept(listener, &server, nullptr) == DLB_OK);
    DLManagedTensorVersioned* t = nullptr;
    REQUIRE(dlb_channel_receive(server, &t, nullptr) == DLB_OK);
    CHECK(wait_exit(sender) == 0);
    dlb_channel_close(server);
    CHECK(holds(t, 64, 7));
    dlb_tensor_free(t);
    CHECK(segment_fds() == 0);
    CHECK(segment_mappings().empty());

    // The receiver is killed holding a tensor: the sender's slot stays lent, nothing else changes.
    const pid_t receiver = child([&] {
      dlb_channel* c = nullptr;
      if (dlb_channel_connect(folder.socket.c_str(), &c, nullptr) != DLB_OK) return 10;
      DLManagedTensorVersioned* r = nullptr;
      if (dlb_channel_receive(c, &r, nullptr) != DLB_OK) return 11;
      pause();
      return 0;
    });
    REQUIRE(dlb_channel_accept(listener, &server, nullptr) == DLB_OK);
    DLManagedTensorVersioned* s = pooled(server, 64, 1);
    REQUIRE(s != nullptr);
    REQUIRE(dlb_channel_send(server, s, 0, nullptr) == DLB_OK);
    dlb_tensor_free(s);
    usleep(50000);
    kill(receiver, SIGKILL);
    CHECK(wait_exit(receiver) == 128 + SIGKILL);
    dlb_pool_stats stats{};
    REQUIRE(dlb_channel_pool_stats(server, &stats, nullptr) == DLB_OK);
    CHECK(stats.lent == 1);  // never given back, so never reused
    DLManagedTensorVersioned* next = pooled(server, 64, 2);
    REQUIRE(next != nullptr);
    dlb_error e;
    CHECK(dlb_channel_send(server, next, 0, &e) == DLB_ERR_PEER_CLOSED);
    dlb_tensor_free(next);
    dlb_channel_close(server);
    dlb_channel_close(listener);
    CHECK(segment_fds() == 0);
    CHECK(segment_mappings().empty());
    CHECK(dlb_tensor_live_count() == 0);
  }

  TEST_CASE("a receiver out of file descriptors loses the tensor with LIMIT, and the sender hears of it") {
    if (ipc_scratch::under_valgrind()) {
      MESSAGE("skipped under valgrind: it does not pass RLIMIT_NOFILE on to the kernel");
      return;
    }
    Pair pair([](dlb_channel* c) {
      DLManagedTensorVersioned* small = nullptr;
      if (dlb_channel_receive(c, &small, nullptr) != DLB_OK) return 10;  // the release socket came
      std::vector<int> filler;
      if (!ipc_scratch::fill_descriptor_table(64, &filler)) return 11;
      DLManagedTensorVersioned* big = nullptr;
      dlb_error e;
      if (dlb_channel_receive(c, &big, &e) != DLB_ERR_LIMIT) return 12;
      if (std::string(e.message) !=
          "the file descriptor that came with the received tensor was dropped: this process is "
          "at its limit of 64 open file descriptors (RLIMIT_NOFILE); the tensor is lost") {
        return 13;
      }
      for (int fd : filler) close(fd);
      // The small tensors' segment is kept: the next one arrives whole.
      DLManagedTensorVersioned* again = nullptr;
      if (dlb_channel_receive(c, &again, nullptr) != DLB_OK) return 14;
      const bool ok = holds(again, 4, 5);
      dlb_tensor_free(again);
      dlb_tensor_free(small);
      return ok ? 0 : 15;
    });
    DLManagedTensorVersioned* small = pooled(pair.server, 4, 0);
    REQUIRE(dlb_channel_send(pair.server, small, 0, nullptr) == DLB_OK);
    DLManagedTensorVersioned* big = pooled(pair.server, 1 << 20, 0);
    REQUIRE(dlb_channel_send(pair.server, big, 0, nullptr) == DLB_OK);
    DLManagedTensorVersioned* again = pooled(pair.server, 4, 5);
    REQUIRE(dlb_channel_send(pair.server, again, 0, nullptr) == DLB_OK);
    CHECK(wait_exit(pair.peer) == 0);
    const dlb_pool_stats stats = settled(pair.server);
    CHECK(stats.lost == 1);
    CHECK(stats.returned == 2);
    dlb_error e;
    CHECK(dlb_channel_send(pair.server, big, 0, &e) == DLB_ERR_LIMIT);
    CHECK(std::string(e.message) ==
          "the peer lost 1 tensor sent on this channel: it is at its limit of open file "
          "descriptors (RLIMIT_NOFILE); nothing was sent now");
    dlb_tensor_free(small);
    dlb_tensor_free(big);
    dlb_tensor_free(again);
  }

  TEST_CASE("refusals: listeners, devices, limits, another channel's pool, lent tensors") {
    Pair pair([](dlb_channel* c) {
      DLManagedTensorVersioned* t = nullptr;
      if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 10;
      dlb_error e;
      // A lent tensor goes back to its sender's pool: it cannot be sent on, a copy can.
      if (dlb_channel_send(c, t, 0, &e) != DLB_ERR_UNSUPPORTED) return 11;
      if (std::string(e.message) !=
          "the tensor was lent by its sender's pool and goes back to it when freed: it cannot be "
          "sent on; send a copy") {
        return 12;
      }
      if (dlb_channel_send(c, t, DLB_SEND_COPY, &e) != DLB_OK) return 13;
      dlb_tensor_free(t);
      return 0;
    });
    dlb_error e;
    DLManagedTensorVersioned* t = nullptr;
    const int64_t shape[1] = {4};
    CHECK(dlb_channel_allocate(pair.listener, kCpu, kF32, 1, shape, nullptr, 0, &t, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "a listener cannot allocate: accept a connection");
    CHECK(dlb_channel_allocate(nullptr, kCpu, kF32, 1, shape, nullptr, 0, &t, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "channel is NULL");
    CHECK(dlb_channel_allocate(pair.server, kCpu, kF32, 1, shape, nullptr, 0, nullptr, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "out is NULL");
    CHECK(dlb_channel_allocate(pair.server, DLDevice{kDLCUDA, 0}, kF32, 1, shape, nullptr, 0, &t, &e) == DLB_ERR_UNSUPPORTED);
    CHECK(std::string(e.message) ==
          "a channel's pool holds cpu memory, not cuda memory: allocate it with "
          "dlb_tensor_allocate_shareable");
    CHECK(dlb_channel_allocate(pair.server, kCpu, kF32, -1, shape, nullptr, 0, &t, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "ndim -1 is negative");
    CHECK(dlb_channel_set_pool_limit(pair.server, 0, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "a pool limit of 0 bytes leaves no room");
    REQUIRE(dlb_channel_set_pool_limit(pair.server, 1u << 20, nullptr) == DLB_OK);
    CHECK(dlb_channel_allocate(pair.server, kCpu, kU8, 1, shape, nullptr, 0, &t, &e) == DLB_ERR_LIMIT);
    CHECK(std::string(e.message) ==
          "a tensor of 4 bytes needs a pool segment of 2097152 bytes, more than the channel's "
          "pool limit of 1048576 bytes (dlb_channel_set_pool_limit)");
    CHECK(t == nullptr);
    // A pool at its limit with nothing of the size wanted lent does not wait for ever.
    REQUIRE(dlb_channel_set_pool_limit(pair.server, 4u << 20, nullptr) == DLB_OK);
    const int64_t three_mib = 3 << 20;
    REQUIRE(dlb_channel_allocate(pair.server, kCpu, kU8, 1, &three_mib, nullptr, 0, &t, nullptr) == DLB_OK);
    dlb_tensor_free(t);  // its 4 MiB segment is free, and the whole limit
    CHECK(dlb_channel_allocate(pair.server, kCpu, kU8, 1, shape, nullptr, 0, &t, &e) == DLB_ERR_LIMIT);
    CHECK(std::string(e.message) ==
          "the channel's pool holds 4194304 of its limit of 4194304 bytes in segments for other "
          "sizes, and a tensor of this size needs 2097152 more: raise the limit "
          "(dlb_channel_set_pool_limit)");
    REQUIRE(dlb_channel_set_pool_limit(pair.server, DLB_POOL_DEFAULT_LIMIT, nullptr) == DLB_OK);
    dlb_pool_stats stats;
    CHECK(dlb_channel_pool_stats(pair.server, nullptr, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "out is NULL");
    CHECK(dlb_channel_pool_stats(pair.listener, &stats, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "a listener cannot have a pool: accept a connection");
    REQUIRE(dlb_channel_pool_stats(pair.server, &stats, nullptr) == DLB_OK);
    CHECK(stats.segments == 1);
    CHECK(stats.limit == DLB_POOL_DEFAULT_LIMIT);

    // A pool tensor goes out on its own channel only.
    dlb_channel* other = nullptr;
    const pid_t second = child([&] {
      dlb_channel* c = nullptr;
      if (dlb_channel_connect(pair.folder.socket.c_str(), &c, nullptr) != DLB_OK) return 10;
      DLManagedTensorVersioned* r = nullptr;
      const int status = dlb_channel_receive(c, &r, nullptr);
      const bool copied = status == DLB_OK && (r->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0;
      dlb_tensor_free(r);
      dlb_channel_close(c);
      return copied ? 0 : 11;
    });
    REQUIRE(dlb_channel_accept(pair.listener, &other, nullptr) == DLB_OK);
    t = pooled(pair.server, 4, 1);
    REQUIRE(t != nullptr);
    CHECK(dlb_channel_send(other, t, 0, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) ==
          "the tensor was allocated from another channel's pool: send it on that channel, or "
          "send a copy");
    CHECK(dlb_channel_send(other, t, DLB_SEND_COPY, &e) == DLB_OK);
    CHECK(wait_exit(second) == 0);
    dlb_channel_close(other);
    REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
    DLManagedTensorVersioned* copy = nullptr;
    REQUIRE(dlb_channel_receive(pair.server, &copy, nullptr) == DLB_OK);
    CHECK(holds(copy, 4, 1));
    CHECK((copy->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
    dlb_tensor_free(copy);
    CHECK(wait_exit(pair.peer) == 0);
    dlb_tensor_free(t);
  }

  TEST_CASE("a pool tensor outlives its channel: freeing it after the close is safe") {
    Pair pair([](dlb_channel* c) {
      DLManagedTensorVersioned* t = nullptr;
      if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 10;
      dlb_tensor_free(t);
      return 0;
    });
    DLManagedTensorVersioned* t = pooled(pair.server, 16, 3);
    DLManagedTensorVersioned* view = nullptr;
    REQUIRE(dlb_tensor_share(t, 0, &view, nullptr) == DLB_OK);
    REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
    CHECK(wait_exit(pair.peer) == 0);
    dlb_channel_close(pair.server);
    pair.server = nullptr;
    CHECK(holds(view, 16, 3));
    dlb_tensor_free(t);
    CHECK(holds(view, 16, 3));
    dlb_tensor_free(view);
    CHECK(segment_fds() == 0);
    CHECK(segment_mappings().empty());
  }

  // The pool's rings (docs/ipc.md, "The pool"): a pooled send whose segment went before is a
  // post in shared memory; everything else goes on the socket with a mark among the posts.
  TEST_CASE("posts and sends on the socket arrive in the order they were sent") {
    constexpr int kTensors = 700;
    Pair pair([](dlb_channel* c) {
      for (int i = 0; i < kTensors; ++i) {
        DLManagedTensorVersioned* t = nullptr;
        if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 10;
        const float first = *reinterpret_cast<const float*>(
            static_cast<const char*>(t->dl_tensor.data) + t->dl_tensor.byte_offset);
        dlb_tensor_free(t);
        if (first != static_cast<float>(i)) return 11;
      }
      return 0;
    });
    for (int i = 0; i < kTensors; ++i) {
      DLManagedTensorVersioned* t = nullptr;
      if (i % 7 == 3) {
        // A fresh shareable tensor: its memfd goes on the socket.
        const int64_t n = 4;
        REQUIRE(dlb_tensor_allocate_shareable(kCpu, kF32, 1, &n, nullptr, 0, &t, nullptr) ==
                DLB_OK);
        static_cast<float*>(t->dl_tensor.data)[0] = static_cast<float>(i);
      } else if (i % 50 == 10) {
        // A size class of its own (a new segment's memfd goes along), or a rank above the
        // ring's: both go on the socket.
        const int64_t ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 2};
        if (i % 100 == 10) {
          const int64_t n = 20000 + i;  // segments of their own
          REQUIRE(dlb_channel_allocate(pair.server, kCpu, kF32, 1, &n, nullptr, 0, &t,
                                       nullptr) == DLB_OK);
        } else {
          REQUIRE(dlb_channel_allocate(pair.server, kCpu, kF32, 9, ones, nullptr, 0, &t,
                                       nullptr) == DLB_OK);
        }
        static_cast<float*>(t->dl_tensor.data)[0] = static_cast<float>(i);
      } else {
        t = pooled(pair.server, 4, static_cast<float>(i));
        REQUIRE(t != nullptr);
      }
      REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
      dlb_tensor_free(t);
    }
    CHECK(wait_exit(pair.peer) == 0);
    const dlb_pool_stats stats = settled(pair.server);
    CHECK(stats.lent == 0);
    CHECK(stats.lost == 0);
  }

  TEST_CASE("a full post ring waits for the receiver within the time limit, then goes on") {
    int go[2];
    REQUIRE(pipe(go) == 0);
    Pair pair([&](dlb_channel* c) {
      DLManagedTensorVersioned* t = nullptr;
      if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 10;  // brings the rings
      dlb_tensor_free(t);
      char byte;
      if (read(go[0], &byte, 1) != 1) return 11;  // the sender filled the ring meanwhile
      for (int i = 1; i < 258; ++i) {
        if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 12;
        const bool in_order = holds(t, 4, static_cast<float>(i));
        dlb_tensor_free(t);
        if (!in_order) return 13;
      }
      return 0;
    });
    DLManagedTensorVersioned* t = pooled(pair.server, 4, 0);
    REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
    dlb_tensor_free(t);
    settled(pair.server);  // the receiver has the rings
    for (int i = 1; i <= 256; ++i) {
      t = pooled(pair.server, 4, static_cast<float>(i));
      REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
      dlb_tensor_free(t);
    }
    REQUIRE(dlb_channel_set_timeout(pair.server, 50000000, nullptr) == DLB_OK);
    t = pooled(pair.server, 4, 257);
    dlb_error e;
    CHECK(dlb_channel_send(pair.server, t, 0, &e) == DLB_ERR_TIMEOUT);
    CHECK(std::string(e.message) == "sending on the channel: the time limit ran out");
    // Nothing went: the channel is in step, and the same tensor goes once there is room.
    REQUIRE(write(go[1], "x", 1) == 1);
    REQUIRE(dlb_channel_set_timeout(pair.server, 5000000000, nullptr) == DLB_OK);
    CHECK(dlb_channel_send(pair.server, t, 0, &e) == DLB_OK);
    dlb_tensor_free(t);
    CHECK(wait_exit(pair.peer) == 0);
    close(go[0]);
    close(go[1]);
  }

  TEST_CASE("a sender that exits leaves its posts to be received; then the peer is gone") {
    Pair pair([](dlb_channel* c) {
      for (int i = 0; i < 11; ++i) {
        DLManagedTensorVersioned* t = pooled(c, 4, static_cast<float>(i));
        if (t == nullptr || dlb_channel_send(c, t, 0, nullptr) != DLB_OK) return 10;
        dlb_tensor_free(t);
      }
      return 0;  // exits, its channel and pool with it
    });
    CHECK(wait_exit(pair.peer) == 0);
    for (int i = 0; i < 11; ++i) {
      DLManagedTensorVersioned* t = nullptr;
      REQUIRE(dlb_channel_receive(pair.server, &t, nullptr) == DLB_OK);
      CHECK(holds(t, 4, static_cast<float>(i)));
      dlb_tensor_free(t);
    }
    DLManagedTensorVersioned* t = nullptr;
    dlb_error e;
    CHECK(dlb_channel_receive(pair.server, &t, &e) == DLB_ERR_PEER_CLOSED);
    CHECK(std::string(e.message) == "the peer closed the channel");
  }

  TEST_CASE("a receiver that closed its channel fails the sender's posts, even holding tensors") {
    int closed[2], go[2];
    REQUIRE(pipe(closed) == 0);
    REQUIRE(pipe(go) == 0);
    Pair pair([&](dlb_channel* c) {
      DLManagedTensorVersioned* t = nullptr;
      if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 10;
      dlb_channel_close(c);  // the tensor, and with it the rings, live on
      if (write(closed[1], "x", 1) != 1) return 11;
      char byte;
      if (read(go[0], &byte, 1) != 1) return 12;
      const bool intact = holds(t, 4, 0);
      dlb_tensor_free(t);
      _exit(intact ? 0 : 13);  // the channel is closed already: not again by Pair's child
    });
    DLManagedTensorVersioned* t = pooled(pair.server, 4, 0);
    REQUIRE(dlb_channel_send(pair.server, t, 0, nullptr) == DLB_OK);
    dlb_tensor_free(t);
    char byte;
    REQUIRE(read(closed[0], &byte, 1) == 1);
    t = pooled(pair.server, 4, 1);
    dlb_error e;
    CHECK(dlb_channel_send(pair.server, t, 0, &e) == DLB_ERR_PEER_CLOSED);
    CHECK(std::string(e.message) == "sending on the channel failed: the peer closed the channel");
    dlb_tensor_free(t);
    REQUIRE(write(go[1], "x", 1) == 1);
    CHECK(wait_exit(pair.peer) == 0);
    for (int fd : {closed[0], closed[1], go[0], go[1]}) close(fd);
  }

  TEST_CASE("a receive waiting for posts ends with its time limit, and with a shutdown") {
    int go[2];
    REQUIRE(pipe(go) == 0);
    Pair pair([&](dlb_channel* c) {
      DLManagedTensorVersioned* t = pooled(c, 4, 0);
      if (t == nullptr || dlb_channel_send(c, t, 0, nullptr) != DLB_OK) return 10;
      dlb_tensor_free(t);
      char byte;
      return read(go[0], &byte, 1) == 1 ? 0 : 11;
    });
    DLManagedTensorVersioned* t = nullptr;
    REQUIRE(dlb_channel_receive(pair.server, &t, nullptr) == DLB_OK);  // brings the rings
    dlb_tensor_free(t);
    dlb_error e;
    REQUIRE(dlb_channel_set_timeout(pair.server, 30000000, nullptr) == DLB_OK);
    CHECK(dlb_channel_receive(pair.server, &t, &e) == DLB_ERR_TIMEOUT);
    CHECK(std::string(e.message) == "receiving on the channel: the time limit ran out");
    REQUIRE(dlb_channel_set_timeout(pair.server, DLB_TIMEOUT_NONE, nullptr) == DLB_OK);
    int status = -1;
    std::thread receiver([&] { status = dlb_channel_receive(pair.server, &t, &e); });
    usleep(50000);
    dlb_channel_shutdown(pair.server);
    receiver.join();
    CHECK(status == DLB_ERR_CLOSED);
    CHECK(t == nullptr);
    REQUIRE(write(go[1], "x", 1) == 1);
    CHECK(wait_exit(pair.peer) == 0);
    close(go[0]);
    close(go[1]);
  }
}
