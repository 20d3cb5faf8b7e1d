// The memory of large CPU tensors (dlb_tensor_allocate, from kLargeCpuBufferBytes): 2 MiB-aligned
// and advised to use transparent huge pages, and kept a while after its tensor is freed, for the
// next large tensor of a size it fits.
//
// Why keep it: glibc maps a buffer this large with mmap and unmaps it at free, so every new
// tensor got fresh pages, which the kernel zero-fills as they are first touched: a transpose
// into a new 64 MiB tensor spent more time in those faults than in the copy (0.5x a memcpy
// between touched buffers, against 0.9-1.1x into an existing tensor). A program that makes
// tensors of the same sizes again and again (a data pipeline, a training loop) now reuses the
// pages it already has, as allocators such as jemalloc do with their dirty pages.
//
// Bounds: at most kMaxKept buffers and kMaxKeptBytes in all, each for at most kKeptFor after
// its free (checked whenever a large tensor is made or freed); a kept buffer is given to the
// kernel with MADV_FREE, which takes its pages back under memory pressure instead of swapping
// them, and leaves them in place (no fault, no zeroing) otherwise. Built with AddressSanitizer,
// nothing is kept, so that a read of a freed tensor's data is still reported.
#include <stdlib.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "internal.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define DLB_KEEP_CPU_BUFFERS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DLB_KEEP_CPU_BUFFERS 0
#endif
#endif
#ifndef DLB_KEEP_CPU_BUFFERS
#define DLB_KEEP_CPU_BUFFERS 1
#endif

namespace dlb {
namespace {

constexpr bool kKeepBuffers = DLB_KEEP_CPU_BUFFERS != 0;
constexpr size_t kHugePage = size_t{2} << 20;
// The buffer's record, before its data: the data stays DLB_CPU_ALIGNMENT-aligned.
constexpr size_t kHeader = DLB_CPU_ALIGNMENT;
constexpr int kMaxKept = 8;
constexpr size_t kMaxKeptBytes = size_t{256} << 20;
constexpr std::chrono::steady_clock::duration kKeptFor = std::chrono::seconds(1);

struct Buffer {
  size_t capacity;  // bytes of data after the header
  std::chrono::steady_clock::time_point freed_at;
};
static_assert(sizeof(Buffer) <= kHeader, "the record fits before the data");

struct Kept {
  std::mutex mutex;
  int count = 0;
  size_t bytes = 0;
  Buffer* buffers[kMaxKept];  // the oldest first
};

// Never destroyed: a tensor may be freed while the process exits.
Kept& kept() {
  static Kept* k = new Kept;
  return *k;
}

void free_buffer(Buffer* buffer) { std::free(buffer); }

// What a new buffer for `bytes` bytes holds: the header and the data rounded up to huge pages.
size_t capacity_for(size_t bytes) {
  return (kHeader + bytes + kHugePage - 1) / kHugePage * kHugePage - kHeader;
}

// Takes entry `i` out (under the lock), keeping the others in order.
Buffer* remove_kept(Kept& k, int i) {
  Buffer* buffer = k.buffers[i];
  for (int n = i + 1; n < k.count; ++n) k.buffers[n - 1] = k.buffers[n];
  --k.count;
  k.bytes -= buffer->capacity;
  return buffer;
}

// The buffers kept too long, moved into `out` (under the lock; freed by the caller after it).
int take_expired(Kept& k, std::chrono::steady_clock::time_point now, Buffer** out) {
  int n = 0;
  while (k.count > 0 && now - k.buffers[0]->freed_at >= kKeptFor) out[n++] = remove_kept(k, 0);
  return n;
}

}  // namespace

char* take_large_cpu_buffer(size_t bytes, void** release_ctx) {
  if (bytes > SIZE_MAX / 4) return nullptr;  // no machine has it; the sizes below stay exact
  Buffer* found = nullptr;
  Buffer* expired[kMaxKept];
  int n_expired = 0;
  if (kKeepBuffers) {
    Kept& k = kept();
    std::lock_guard<std::mutex> lock(k.mutex);
    n_expired = take_expired(k, std::chrono::steady_clock::now(), expired);
    // The smallest that fits, no larger than a new buffer for a quarter more than is asked.
    const size_t most = capacity_for(bytes + bytes / 4);
    int best = -1;
    for (int i = 0; i < k.count; ++i) {
      const size_t capacity = k.buffers[i]->capacity;
      if (capacity >= bytes && capacity <= most &&
          (best < 0 || capacity < k.buffers[best]->capacity)) {
        best = i;
      }
    }
    if (best >= 0) found = remove_kept(k, best);
  }
  for (int i = 0; i < n_expired; ++i) free_buffer(expired[i]);
  if (found == nullptr) {
    const size_t total = kHeader + capacity_for(bytes);
    void* memory = nullptr;
    if (posix_memalign(&memory, kHugePage, total) != 0) return nullptr;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    (void)madvise(memory, total, MADV_HUGEPAGE);  // advice only: failure changes nothing
#endif
    found = static_cast<Buffer*>(memory);
    found->capacity = total - kHeader;
  }
  *release_ctx = found;
  return reinterpret_cast<char*>(found) + kHeader;
}

void give_back_large_cpu_buffer(void* release_ctx) {
  auto* buffer = static_cast<Buffer*>(release_ctx);
  if (!kKeepBuffers || buffer->capacity > kMaxKeptBytes) {
    free_buffer(buffer);
    return;
  }
#if defined(__linux__) && defined(MADV_FREE)
  // Before it is kept: from then on another thread may take it and write to it. The first huge
  // page holds the record and stays (freeing part of it would split it); the rest is whole huge
  // pages, up to the end of the buffer, which is one.
  const size_t total = kHeader + buffer->capacity;
  if (total > kHugePage) {
    (void)madvise(reinterpret_cast<char*>(buffer) + kHugePage, total - kHugePage, MADV_FREE);
  }
#endif
  Buffer* unwanted[kMaxKept + 1];
  int n_unwanted = 0;
  {
    Kept& k = kept();
    std::lock_guard<std::mutex> lock(k.mutex);
    const auto now = std::chrono::steady_clock::now();
    n_unwanted = take_expired(k, now, unwanted);
    // The oldest make room: the sizes a program makes now matter more than those of before.
    while (k.count == kMaxKept || k.bytes + buffer->capacity > kMaxKeptBytes) {
      unwanted[n_unwanted++] = remove_kept(k, 0);
    }
    buffer->freed_at = now;
    k.buffers[k.count++] = buffer;
    k.bytes += buffer->capacity;
  }
  for (int i = 0; i < n_unwanted; ++i) free_buffer(unwanted[i]);  // outside the lock: munmap
}

}  // namespace dlb
