// Copies for the CUDA backend: planning on the host (the word size, the merged dimensions;
// free of CUDA calls, so that tests can check plans on machines without a GPU), and the
// copy_bytes and copy_tensor callbacks, which queue copies and the copy kernels.
#include "cuda_copy.hpp"

#include <cstdint>

#include "../internal.hpp"
#include "cuda_runtime.hpp"

namespace dlb {
namespace cuda {

bool make_copy_plan(int32_t ndim, const int64_t* shape, const int64_t* src_strides,
                    const int64_t* dst_strides, uint64_t unit, const void* src_first,
                    void* dst_first, CopyPlan* plan) {
  // The widest word that keeps every access aligned: it must divide the element size, both
  // start addresses and every byte stride.
  uint64_t alignment = unit | reinterpret_cast<uintptr_t>(src_first) |
                       reinterpret_cast<uintptr_t>(dst_first);
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] == 1) continue;
    alignment |= static_cast<uint64_t>(src_strides[i]) * unit;
    alignment |= static_cast<uint64_t>(dst_strides[i]) * unit;
  }
  int64_t word = 16;
  while (word > 1 && (alignment % static_cast<uint64_t>(word)) != 0) word /= 2;
  const int64_t words_per_element = static_cast<int64_t>(unit) / word;

  StridedDim dims[DLB_MAX_NDIM + 1];
  int32_t n = 0;
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] == 1) continue;
    dims[n++] = StridedDim{shape[i], src_strides[i] * words_per_element,
                           dst_strides[i] * words_per_element};
  }
  if (words_per_element > 1) dims[n++] = StridedDim{words_per_element, 1, 1};
  if (n == 0) dims[n++] = StridedDim{1, 1, 1};  // one element of one word
  n = simplify_dims(dims, n);
  if (n > kMaxKernelDims) return false;

  // Runs contiguous on both sides may allow wider words than one element: a row of uint8
  // moves 16 bytes per thread instead of one, when the run length, every other stride and
  // both addresses allow it.
  StridedDim& inner = dims[n - 1];
  while (word < 16 && inner.ss == 1 && inner.ds == 1 && inner.n % 2 == 0) {
    const uint64_t wider = static_cast<uint64_t>(word) * 2;
    bool fits = (reinterpret_cast<uintptr_t>(src_first) % wider) == 0 &&
                (reinterpret_cast<uintptr_t>(dst_first) % wider) == 0;
    for (int32_t i = 0; fits && i < n - 1; ++i) fits = dims[i].ss % 2 == 0 && dims[i].ds % 2 == 0;
    if (!fits) break;
    for (int32_t i = 0; i < n - 1; ++i) {
      dims[i].ss /= 2;
      dims[i].ds /= 2;
    }
    inner.n /= 2;
    word *= 2;
  }

  plan->src = src_first;
  plan->dst = dst_first;
  plan->ndim = n;
  plan->word = static_cast<int32_t>(word);
  plan->count = 1;
  for (int32_t i = 0; i < n; ++i) {
    plan->shape[i] = dims[i].n;
    plan->src_stride[i] = dims[i].ss;
    plan->dst_stride[i] = dims[i].ds;
    plan->count *= dims[i].n;
  }
  return true;
}

bool plan_is_one_run(const CopyPlan& plan, const void** src_low, void** dst_low) {
  if (plan.ndim != 1) return false;
  const int64_t ss = plan.src_stride[0], ds = plan.dst_stride[0];
  if (plan.shape[0] == 1 || (ss == 1 && ds == 1)) {
    *src_low = plan.src;
    *dst_low = plan.dst;
    return true;
  }
  if (ss == -1 && ds == -1) {
    const int64_t back = (plan.shape[0] - 1) * plan.word;
    *src_low = static_cast<const char*>(plan.src) - back;
    *dst_low = static_cast<char*>(plan.dst) - back;
    return true;
  }
  return false;
}

namespace {

cudaStream_t work_stream(void* stream) {
  return stream != nullptr ? static_cast<cudaStream_t>(stream) : cudaStreamLegacy;
}

// Ends an operation: a synchronous one (NULL stream) waits for its work.
int finish(void* stream, dlb_error* error) {
  if (stream != nullptr) return DLB_OK;
  const cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy);
  return e == cudaSuccess ? DLB_OK : cuda_fail(error, e, "cudaStreamSynchronize");
}

// Device memory for the duration of one copy, allocated and freed in the order of `stream`, so
// that an asynchronous copy needs no host synchronisation. Devices without memory pools get
// cudaMalloc, and the release then waits for the stream.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch() {
    if (memory_ == nullptr) return;
    if (pooled_) {
      cudaFreeAsync(memory_, stream_);
    } else {
      cudaStreamSynchronize(stream_);
      cudaFree(memory_);
    }
  }
  int allocate(uint64_t bytes, int32_t device_id, cudaStream_t stream, dlb_error* error) {
    stream_ = stream;
    int pools = 0;
    if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device_id) != cudaSuccess) {
      cudaGetLastError();
      pools = 0;
    }
    cudaError_t e;
    if (pools != 0) {
      e = cudaMallocAsync(&memory_, bytes, stream);
      pooled_ = e == cudaSuccess;
    } else {
      e = cudaMalloc(&memory_, bytes);
    }
    if (e != cudaSuccess) {
      memory_ = nullptr;
      return cuda_fail(error, e, "allocating %llu bytes of scratch memory on cuda:%d",
                       static_cast<unsigned long long>(bytes), static_cast<int>(device_id));
    }
    return DLB_OK;
  }
  char* memory() const { return static_cast<char*>(memory_); }

 private:
  void* memory_ = nullptr;
  bool pooled_ = false;
  cudaStream_t stream_ = nullptr;
};

// The bytes a planned side touches: [low, low + bytes).
struct Span {
  const char* low;
  uint64_t bytes;
};

Span span_of(const CopyPlan& plan, const void* first, const int64_t* strides) {
  int64_t low = 0, high = 0;
  for (int32_t i = 0; i < plan.ndim; ++i) {
    const int64_t reach = (plan.shape[i] - 1) * strides[i];
    if (reach < 0) low += reach;
    else high += reach;
  }
  return Span{static_cast<const char*>(first) + low * plan.word,
              static_cast<uint64_t>(high - low + 1) * static_cast<uint64_t>(plan.word)};
}

bool overlap(Span a, Span b) { return a.low < b.low + b.bytes && b.low < a.low + a.bytes; }

bool same_elements(const CopyPlan& plan) {
  if (plan.src != plan.dst) return false;
  for (int32_t i = 0; i < plan.ndim; ++i) {
    if (plan.src_stride[i] != plan.dst_stride[i]) return false;
  }
  return true;
}

}  // namespace

int cuda_copy_bytes(void*, DLDevice dst_device, void* dst, uint64_t dst_offset, DLDevice src_device,
                    const void* src, uint64_t src_offset, uint64_t nbytes, void* stream,
                    dlb_error* error) {
  int status = ready(error);
  if (status != DLB_OK || nbytes == 0) return status;
  const int32_t device = dst_device.device_type == kDLCUDA   ? dst_device.device_id
                         : src_device.device_type == kDLCUDA ? src_device.device_id
                                                             : 0;
  DeviceScope scope;
  status = scope.enter(device, error);
  if (status != DLB_OK) return status;
  const cudaError_t e = cudaMemcpyAsync(static_cast<char*>(dst) + dst_offset,
                                        static_cast<const char*>(src) + src_offset, nbytes,
                                        cudaMemcpyDefault, work_stream(stream));
  if (e != cudaSuccess) {
    return cuda_fail(error, e, "copying %llu bytes", static_cast<unsigned long long>(nbytes));
  }
  return finish(stream, error);
}

// Element copies with at least one side in CUDA device memory (the other is host memory or
// another device's memory). Returns DLB_ERR_UNSUPPORTED for the cases the core does better by
// staging through the host: packed sub-byte data, a host side whose span is mostly gaps, and a
// host destination that does not cover its span (writing the span back would overwrite the
// bytes between its elements).
int cuda_copy_tensor(void*, const DLTensor* dst, uint64_t dst_flags, const DLTensor* src,
                     uint64_t src_flags, void* stream, dlb_error* error) {
  int status = ready(error);
  if (status != DLB_OK) return status;
  if (dlb::is_subbyte_packed(src->dtype, src_flags) || dlb::is_subbyte_packed(dst->dtype, dst_flags)) {
    return fail(error, DLB_ERR_UNSUPPORTED, "packed sub-byte data is copied through the host");
  }
  const bool src_on_device = src->device.device_type == kDLCUDA;
  const bool dst_on_device = dst->device.device_type == kDLCUDA;
  const uint64_t unit = (uint64_t{src->dtype.bits} * src->dtype.lanes + 7) / 8;
  int64_t src_strides[DLB_MAX_NDIM], dst_strides[DLB_MAX_NDIM];
  dlb_tensor_get_strides(src, DLB_MAX_NDIM, src_strides, nullptr);
  dlb_tensor_get_strides(dst, DLB_MAX_NDIM, dst_strides, nullptr);
  const char* src_first = static_cast<const char*>(src->data) + src->byte_offset;
  char* dst_first = static_cast<char*>(dst->data) + dst->byte_offset;
  CopyPlan plan;
  if (!dlb::cuda::make_copy_plan(src->ndim, src->shape, src_strides, dst_strides, unit,
                                 src_first, dst_first, &plan)) {
    return fail(error, DLB_ERR_UNSUPPORTED, "the layout has more than %d dimensions after merging",
                dlb::cuda::kMaxKernelDims);
  }

  // The work runs on the destination's device when it is one, else on the source's: the
  // caller's stream belongs to that device.
  const int32_t device = dst_on_device ? dst->device.device_id : src->device.device_id;
  DeviceScope scope;
  status = scope.enter(device, error);
  if (status != DLB_OK) return status;
  const cudaStream_t s = work_stream(stream);
  const Span src_span = span_of(plan, plan.src, plan.src_stride);
  const Span dst_span = span_of(plan, plan.dst, plan.dst_stride);
  const bool same_device = src_on_device && dst_on_device && src->device.device_id == dst->device.device_id;
  const bool overlapping = same_device && overlap(src_span, dst_span);
  const uint64_t payload = static_cast<uint64_t>(plan.count) * static_cast<uint64_t>(plan.word);
  if (overlapping && same_elements(plan)) return finish(stream, error);

  cudaError_t e;
  const void* src_low;
  void* dst_low;
  if (!overlapping && dlb::cuda::plan_is_one_run(plan, &src_low, &dst_low)) {
    e = cudaMemcpyAsync(dst_low, src_low, payload, cudaMemcpyDefault, s);
    if (e != cudaSuccess) return cuda_fail(error, e, "copying %llu bytes", static_cast<unsigned long long>(payload));
    return finish(stream, error);
  }

  DeviceScratch scratch;
  if (!dst_on_device) {
    // A host destination: gather into a device image of its span, then copy the image over.
    // Only when the elements cover the span: the bytes between them must stay untouched.
    if (dst_span.bytes != payload) {
      return fail(error, DLB_ERR_UNSUPPORTED, "a host destination with gaps is written on the host");
    }
    status = scratch.allocate(dst_span.bytes, device, s, error);
    if (status != DLB_OK) return status;
    plan.dst = scratch.memory() + (static_cast<char*>(plan.dst) - dst_span.low);
  } else if (overlapping || !same_device) {
    // Stage the source span in memory of the working device: this brings host data or another
    // device's data over (a peer copy), or removes an overlap with the destination.
    if (!src_on_device && src_span.bytes / 2 > payload) {
      return fail(error, DLB_ERR_UNSUPPORTED, "a sparse host source is gathered on the host");
    }
    status = scratch.allocate(src_span.bytes, device, s, error);
    if (status != DLB_OK) return status;
    e = cudaMemcpyAsync(scratch.memory(), src_span.low, src_span.bytes, cudaMemcpyDefault, s);
    if (e != cudaSuccess) {
      return cuda_fail(error, e, "staging %llu bytes", static_cast<unsigned long long>(src_span.bytes));
    }
    plan.src = scratch.memory() + (static_cast<const char*>(plan.src) - src_span.low);
  }
  e = dlb::cuda::launch_copy(plan, s);
  if (e != cudaSuccess) return cuda_fail(error, e, "launching the copy kernel");
  if (!dst_on_device) {
    e = cudaMemcpyAsync(const_cast<char*>(dst_span.low), scratch.memory(), dst_span.bytes,
                        cudaMemcpyDefault, s);
    if (e != cudaSuccess) {
      return cuda_fail(error, e, "copying %llu bytes to the host",
                       static_cast<unsigned long long>(dst_span.bytes));
    }
  }
  return finish(stream, error);
}

}  // namespace cuda
}  // namespace dlb
