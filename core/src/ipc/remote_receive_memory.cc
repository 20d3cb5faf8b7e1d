// The memory of a remote channel's received host tensors: a receive cache that keeps the
// buffers of freed tensors for the next ones of a size they fit (remote_internal.hpp,
// allocate_received and release_receive_cache).
#if defined(__linux__)
#include <sys/mman.h>

#include <cstdlib>
#include <mutex>
#include <new>

#include "remote_internal.hpp"

namespace dlb {
namespace ipc {
namespace {

// ---- memory for received tensors ----------------------------------------------------------------
// A stream of large tensors would otherwise cost the receiver a fresh allocation each time, whose
// pages the kernel zero-fills and faults in as UCX writes the bytes (at 1 GiB, longer than the
// transfer itself on a fast link). Freed received host tensors of at least kCacheFromBytes give
// their memory back to the channel, which keeps the kCachedBuffers freed last for the next tensors
// of a size they fit (no more than twice the size needed): a full cache frees its oldest, so that
// buffers of the sizes a stream sent before do not keep out those of the size it sends now
// (bench_remote's 1 GiB tensors, after 16 and 256 MiB ones, each paid a new allocation: 2.4x
// ucp_am_lat's time). After the channel closes, a tensor's memory is freed with it.
// From 32 KiB on: glibc gives the top of its heap back to the kernel once 128 KiB are free there,
// so a stream of 64 KiB tensors freed as they come faulted its pages in anew for every tensor
// (bench_remote's 64 KiB stream ran at half its rate).
constexpr uint64_t kCacheFromBytes = 32 * 1024;
// At most kCachedBuffers buffers, and no more than kCachedBytes in all beyond the kCachedAlways
// freed last. A batch (DLB_SEND_MORE) brings up to 32 tensors at once: with only the last 4
// kept, the rest of a stream of 64 KiB tensors faulted in fresh pages for each.
constexpr int kCachedBuffers = 64;
constexpr int kCachedAlways = 4;
constexpr uint64_t kCachedBytes = uint64_t{64} << 20;

}  // namespace

struct ReceiveCache {
  std::mutex mutex;
  // The channel's (until it closes) and one per received tensor over cache memory.
  std::atomic<int> references;
  bool closed;
  int count;
  uint64_t bytes;  // of the buffers kept
  void* data[kCachedBuffers + 1];  // the oldest first (one more while give_back adds one)
  uint64_t size[kCachedBuffers + 1];
};

namespace {

struct CacheLoan {
  ReceiveCache* cache;
  void* data;
  uint64_t size;
};

void drop_cache_reference(ReceiveCache* cache) {
  if (cache->references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    cache->~ReceiveCache();
    std::free(cache);
  }
}

// Takes entry `i` out of the cache, keeping the others in order.
void remove_cached(ReceiveCache* cache, int i) {
  cache->bytes -= cache->size[i];
  for (int k = i + 1; k < cache->count; ++k) {
    cache->data[k - 1] = cache->data[k];
    cache->size[k - 1] = cache->size[k];
  }
  --cache->count;
}

// A received tensor's release: its memory goes back to the cache while the channel is open (a
// full cache frees its oldest buffers instead), else it is freed.
void give_back(void* ctx) {
  auto* loan = static_cast<CacheLoan*>(ctx);
  ReceiveCache* cache = loan->cache;
  void* unwanted[kCachedBuffers + 1];
  int nunwanted = 0;
  {
    std::lock_guard<std::mutex> lock(cache->mutex);
    if (cache->closed) {
      unwanted[nunwanted++] = loan->data;
    } else {
      cache->data[cache->count] = loan->data;
      cache->size[cache->count] = loan->size;
      cache->bytes += loan->size;
      ++cache->count;
      while (cache->count > kCachedBuffers ||
             (cache->count > kCachedAlways && cache->bytes > kCachedBytes)) {
        unwanted[nunwanted++] = cache->data[0];
        remove_cached(cache, 0);
      }
    }
  }
  // Outside the lock: a large buffer's unmapping takes a while.
  for (int i = 0; i < nunwanted; ++i) std::free(unwanted[i]);
  std::free(loan);
  drop_cache_reference(cache);
}

}  // namespace

int allocate_received(Remote* r, DLDataType dtype, const Wire& wire, const int64_t* strides,
                      uint64_t bytes, uint64_t flags, DLManagedTensorVersioned** out,
                      dlb_error* error) {
  if (r->options.receive_device.device_type != kDLCPU || bytes < kCacheFromBytes) {
    return dlb_tensor_allocate(r->options.receive_device, dtype, wire.ndim, wire.shape, strides,
                               flags, out, error);
  }
  if (r->cache == nullptr) {
    void* memory = std::calloc(1, sizeof(ReceiveCache));
    if (memory == nullptr) {
      return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory receiving a tensor");
    }
    r->cache = new (memory) ReceiveCache();
    r->cache->references.store(1, std::memory_order_relaxed);
  }
  ReceiveCache* cache = r->cache;
  auto* loan = static_cast<CacheLoan*>(std::malloc(sizeof(CacheLoan)));
  if (loan == nullptr) {
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory receiving a tensor");
  }
  loan->cache = cache;
  loan->data = nullptr;
  {
    std::lock_guard<std::mutex> lock(cache->mutex);
    for (int i = cache->count - 1; i >= 0; --i) {  // the newest first: its pages are warmest
      if (cache->size[i] >= bytes && cache->size[i] / 2 <= bytes) {
        loan->data = cache->data[i];
        loan->size = cache->size[i];
        remove_cached(cache, i);
        break;
      }
    }
  }
  if (loan->data == nullptr) {
    // From 2 MiB on, in whole transparent huge pages where the system allows them for memory
    // that asks (a fault per 2 MiB, not per 4 KiB, on first touch).
    const uint64_t huge = uint64_t{2} << 20;
    const bool use_huge = bytes >= huge;
    loan->size = use_huge ? (bytes + huge - 1) / huge * huge : bytes;
    if (posix_memalign(&loan->data, use_huge ? huge : 4096, loan->size) != 0) {
      std::free(loan);
      return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory allocating a tensor of %llu bytes",
                  static_cast<unsigned long long>(bytes));
    }
    if (use_huge) madvise(loan->data, loan->size, MADV_HUGEPAGE);
  }
  DLTensor desc{};
  desc.data = static_cast<char*>(loan->data) + wire.byte_offset;
  desc.device = DLDevice{kDLCPU, 0};
  desc.ndim = wire.ndim;
  desc.dtype = dtype;
  desc.shape = const_cast<int64_t*>(wire.shape);
  desc.strides = const_cast<int64_t*>(strides);
  cache->references.fetch_add(1, std::memory_order_relaxed);
  const int status = dlb_tensor_wrap(&desc, flags, give_back, loan, out, error);
  if (status != DLB_OK) give_back(loan);  // not wrapped: the memory goes back at once
  return status;
}

void release_receive_cache(Remote* r) {
  ReceiveCache* cache = r->cache;
  if (cache == nullptr) return;
  r->cache = nullptr;
  {
    std::lock_guard<std::mutex> lock(cache->mutex);
    cache->closed = true;
    for (int i = 0; i < cache->count; ++i) std::free(cache->data[i]);
    cache->count = 0;
    cache->bytes = 0;
  }
  drop_cache_reference(cache);
}

int32_t remote_port(const dlb_channel* channel) { return channel->remote->port; }

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
