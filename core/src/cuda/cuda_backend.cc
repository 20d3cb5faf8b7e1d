// The CUDA backends (kDLCUDA device memory, kDLCUDAHost pinned memory, kDLCUDAManaged managed
// memory) and the dlb_cuda_* functions.
//
// The CUDA runtime is linked statically and loads the driver at its first call, so the library
// loads everywhere. Before that first call the backend looks for the driver itself: without
// one, every CUDA operation reports "no CUDA driver found" and the runtime is never started.
//
// Streams: a NULL stream means "synchronous": the work is queued on the legacy default stream
// (which waits for the work of every blocking stream, as cudaMemcpy does) and waited for.
// Otherwise everything is queued on the caller's stream, temporaries included (stream-ordered
// cudaMallocAsync/cudaFreeAsync), and nothing blocks the host.
#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include <cuda_runtime_api.h>

#include "../internal.hpp"
#include "cuda_copy_plan.hpp"

namespace {

using dlb::fail;
using dlb::cuda::CopyPlan;

// ---- the runtime: found once, at the first CUDA operation --------------------------------

struct Runtime {
  int status;  // DLB_OK, or why CUDA work cannot run here
  char reason[160];
  int32_t device_count;
};

const Runtime& runtime() {
  static const Runtime state = [] {
    Runtime r{};
    // Left loaded on purpose: the CUDA runtime uses this same handle for the whole process.
    if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) == nullptr) {
      r.status = DLB_ERR_DEVICE_UNAVAILABLE;
      std::snprintf(r.reason, sizeof(r.reason), "no CUDA driver found");
      return r;
    }
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaErrorNoDevice || (e == cudaSuccess && count <= 0)) {
      r.status = DLB_ERR_DEVICE_UNAVAILABLE;
      std::snprintf(r.reason, sizeof(r.reason), "no CUDA device");
    } else if (e == cudaErrorInsufficientDriver) {
      r.status = DLB_ERR_DEVICE_UNAVAILABLE;
      std::snprintf(r.reason, sizeof(r.reason),
                    "the CUDA driver is older than the CUDA %d.%d runtime dlbridge was built with",
                    CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
    } else if (e != cudaSuccess) {
      r.status = DLB_ERR_DEVICE;
      std::snprintf(r.reason, sizeof(r.reason), "cudaGetDeviceCount failed: %s: %s",
                    cudaGetErrorName(e), cudaGetErrorString(e));
    } else {
      r.status = DLB_OK;
      r.device_count = count;
    }
    return r;
  }();
  return state;
}

int ready(dlb_error* error) {
  const Runtime& r = runtime();
  return r.status == DLB_OK ? DLB_OK : fail(error, r.status, "%s", r.reason);
}

// Reports a failed CUDA call: "<what> failed: cudaErrorX: text". Clears the thread's
// last-error slot so that a later call does not see this failure again.
__attribute__((format(printf, 3, 4))) int cuda_fail(dlb_error* error, cudaError_t e,
                                                    const char* what, ...) {
  cudaGetLastError();
  char text[256];
  va_list args;
  va_start(args, what);
  std::vsnprintf(text, sizeof(text), what, args);
  va_end(args);
  const int status = e == cudaErrorMemoryAllocation ? DLB_ERR_OUT_OF_MEMORY : DLB_ERR_DEVICE;
  return fail(error, status, "%s failed: %s: %s", text, cudaGetErrorName(e), cudaGetErrorString(e));
}

const char* kind_name(int32_t device_type) {
  return device_type == kDLCUDA ? "cuda" : device_type == kDLCUDAHost ? "cuda_host" : "cuda_managed";
}

// Device ids: any visible device for kDLCUDA; 0 for pinned and managed memory, which DLPack
// does not tie to one device.
int check_device_id(DLDevice device, dlb_error* error) {
  if (device.device_type == kDLCUDA) {
    const int32_t count = runtime().device_count;
    if (device.device_id >= count) {
      return fail(error, DLB_ERR_INVALID_ARGUMENT, "cuda device %d does not exist (%d visible)",
                  static_cast<int>(device.device_id), static_cast<int>(count));
    }
  } else if (device.device_id != 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "%s memory uses device_id 0 (the DLPack convention), not %d",
                kind_name(device.device_type), static_cast<int>(device.device_id));
  }
  return DLB_OK;
}

// Makes a device current for the scope and restores the caller's current device afterwards:
// a library must not change which device its caller's thread works on.
class DeviceScope {
 public:
  DeviceScope() = default;
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  int enter(int32_t device_id, dlb_error* error) {
    cudaError_t e = cudaGetDevice(&previous_);
    if (e != cudaSuccess) return cuda_fail(error, e, "cudaGetDevice");
    if (previous_ == device_id) return DLB_OK;
    e = cudaSetDevice(device_id);
    if (e != cudaSuccess) return cuda_fail(error, e, "cudaSetDevice(%d)", static_cast<int>(device_id));
    switched_ = true;
    return DLB_OK;
  }

 private:
  int previous_ = 0;
  bool switched_ = false;
};

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

// ---- backend callbacks --------------------------------------------------------------------

int cuda_allocate(void*, DLDevice device, uint64_t nbytes, void** out_data, dlb_error* error) {
  int status = ready(error);
  if (status == DLB_OK) status = check_device_id(device, error);
  if (status != DLB_OK) return status;
  // CUDA hands out no memory for 0 bytes, and DLPack consumers expect non-NULL data.
  const size_t bytes = nbytes == 0 ? 1 : static_cast<size_t>(nbytes);
  void* data = nullptr;
  cudaError_t e;
  if (device.device_type == kDLCUDA) {
    DeviceScope scope;
    status = scope.enter(device.device_id, error);
    if (status != DLB_OK) return status;
    e = cudaMalloc(&data, bytes);
  } else if (device.device_type == kDLCUDAHost) {
    // Portable: pinned for every device, as DLPack's cuda_host does not name one.
    e = cudaHostAlloc(&data, bytes, cudaHostAllocPortable);
  } else {
    e = cudaMallocManaged(&data, bytes, cudaMemAttachGlobal);
  }
  if (e != cudaSuccess) {
    return cuda_fail(error, e, "allocating %llu bytes of %s memory on device %d",
                     static_cast<unsigned long long>(nbytes), kind_name(device.device_type),
                     static_cast<int>(device.device_id));
  }
  *out_data = data;
  return DLB_OK;
}

void cuda_free(void*, DLDevice device, void* data) {
  // Errors are ignored: freeing cannot fail for the caller, and at process exit the runtime may
  // already be gone (cudaErrorCudartUnloading), taking the memory with it.
  if (device.device_type == kDLCUDAHost) {
    cudaFreeHost(data);
  } else {
    cudaFree(data);
  }
  cudaGetLastError();
}

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

int cuda_synchronize(void*, DLDevice device, void* stream, dlb_error* error) {
  int status = ready(error);
  if (status == DLB_OK) status = check_device_id(device, error);
  if (status != DLB_OK) return status;
  // Pinned and managed memory belong to no device: without a stream, wait for all of them.
  const int32_t first = device.device_type == kDLCUDA ? device.device_id : 0;
  const int32_t last = device.device_type == kDLCUDA || stream != nullptr ? first : runtime().device_count - 1;
  for (int32_t id = first; id <= last; ++id) {
    DeviceScope scope;
    status = scope.enter(id, error);
    if (status != DLB_OK) return status;
    const cudaError_t e = stream != nullptr ? cudaStreamSynchronize(static_cast<cudaStream_t>(stream))
                                            : cudaDeviceSynchronize();
    if (e != cudaSuccess) {
      return cuda_fail(error, e, stream != nullptr ? "cudaStreamSynchronize" : "cudaDeviceSynchronize");
    }
  }
  return DLB_OK;
}

// What CUDA says a pointer is, for messages: "device memory of cuda:0", ...
void describe_memory(const cudaPointerAttributes& attributes, char* text, size_t size) {
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      std::snprintf(text, size, "device memory of cuda:%d", attributes.device);
      break;
    case cudaMemoryTypeHost:
      std::snprintf(text, size, "pinned host memory");
      break;
    case cudaMemoryTypeManaged:
      std::snprintf(text, size, "managed memory");
      break;
    default:
      std::snprintf(text, size, "memory CUDA does not know");
      break;
  }
}

cudaPointerAttributes pointer_attributes(const void* pointer) {
  cudaPointerAttributes attributes;
  std::memset(&attributes, 0, sizeof(attributes));
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    // Older drivers fail for memory they do not know instead of reporting "unregistered".
    cudaGetLastError();
    std::memset(&attributes, 0, sizeof(attributes));
    attributes.type = cudaMemoryTypeUnregistered;
  }
  return attributes;
}

int cuda_check_memory(void*, const DLTensor* tensor, uint64_t, dlb_error* error) {
  // Without a driver nothing can be checked, and no CUDA work can touch the memory either.
  if (runtime().status != DLB_OK || tensor->data == nullptr) return DLB_OK;
  int64_t count = 0;
  if (dlb_tensor_element_count(tensor, &count, nullptr) != DLB_OK || count == 0) return DLB_OK;
  const int32_t type = tensor->device.device_type;
  const cudaPointerAttributes attributes = pointer_attributes(tensor->data);
  bool good;
  const char* expected;
  char device_text[48];
  if (type == kDLCUDA) {
    // Managed memory is usable from every device, so it may travel as a cuda tensor.
    good = attributes.type == cudaMemoryTypeManaged ||
           (attributes.type == cudaMemoryTypeDevice && attributes.device == tensor->device.device_id);
    std::snprintf(device_text, sizeof(device_text), "device memory of cuda:%d",
                  static_cast<int>(tensor->device.device_id));
    expected = device_text;
  } else if (type == kDLCUDAHost) {
    good = attributes.type == cudaMemoryTypeHost;
    expected = "pinned host memory";
  } else {
    good = attributes.type == cudaMemoryTypeManaged;
    expected = "managed memory";
  }
  if (good) return DLB_OK;
  char actual[64];
  describe_memory(attributes, actual, sizeof(actual));
  return fail(error, DLB_ERR_INVALID_ARGUMENT, "the data of a %s:%d tensor is %s, not %s",
              kind_name(type), static_cast<int>(tensor->device.device_id), actual, expected);
}

}  // namespace

void dlb::register_cuda_backends() {
  for (int32_t type : {int32_t{kDLCUDA}, int32_t{kDLCUDAHost}, int32_t{kDLCUDAManaged}}) {
    dlb_backend backend;
    std::memset(&backend, 0, sizeof(backend));
    backend.struct_size = sizeof(backend);
    backend.device_type = type;
    backend.name = kind_name(type);
    backend.allocate = cuda_allocate;
    backend.free = cuda_free;
    backend.copy_bytes = cuda_copy_bytes;
    backend.copy_tensor = cuda_copy_tensor;
    backend.synchronize = cuda_synchronize;
    backend.check_memory = cuda_check_memory;
    dlb::register_backend(&backend, nullptr);
  }
}

extern "C" {

DLB_API int dlb_cuda_is_available(dlb_error* error) { return ready(error); }

DLB_API int dlb_cuda_device_count(int32_t* count, dlb_error* error) {
  if (count == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "count is NULL");
  *count = 0;
  const int status = ready(error);
  if (status == DLB_OK) *count = runtime().device_count;
  return status;
}

DLB_API int dlb_cuda_pointer_device(const void* pointer, DLDevice* out, dlb_error* error) {
  if (out == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = DLDevice{};
  const int status = ready(error);
  if (status != DLB_OK) return status;
  *out = DLDevice{kDLCPU, 0};
  if (pointer == nullptr) return DLB_OK;
  const cudaPointerAttributes attributes = pointer_attributes(pointer);
  switch (attributes.type) {
    case cudaMemoryTypeDevice:
      *out = DLDevice{kDLCUDA, attributes.device};
      break;
    case cudaMemoryTypeHost:
      *out = DLDevice{kDLCUDAHost, 0};
      break;
    case cudaMemoryTypeManaged:
      *out = DLDevice{kDLCUDAManaged, 0};
      break;
    default:
      break;
  }
  return DLB_OK;
}

DLB_API int dlb_cuda_stream_handshake(int32_t device_id, void* producer_stream,
                                      int64_t consumer_stream, dlb_error* error) {
  if (consumer_stream == 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "consumer stream 0 is ambiguous and not allowed for CUDA: pass 1 for the legacy "
                "default stream or 2 for the per-thread default stream");
  }
  if (consumer_stream < -1 && consumer_stream != DLB_CUDA_STREAM_NONE) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "consumer stream %lld is not a valid CUDA stream",
                static_cast<long long>(consumer_stream));
  }
  if (device_id < 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "device_id %d is negative", static_cast<int>(device_id));
  }
  if (consumer_stream == -1) return DLB_OK;  // the consumer synchronises itself
  int status = ready(error);
  if (status == DLB_OK) status = check_device_id(DLDevice{kDLCUDA, device_id}, error);
  if (status != DLB_OK) return status;
  const cudaStream_t consumer = consumer_stream == DLB_CUDA_STREAM_NONE || consumer_stream == 1
                                    ? cudaStreamLegacy
                                : consumer_stream == 2
                                    ? cudaStreamPerThread
                                    : reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(consumer_stream));
  const cudaStream_t producer = producer_stream != nullptr ? static_cast<cudaStream_t>(producer_stream)
                                                           : cudaStreamLegacy;
  if (producer == consumer) return DLB_OK;
  DeviceScope scope;
  status = scope.enter(device_id, error);
  if (status != DLB_OK) return status;
  cudaEvent_t event;
  cudaError_t e = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (e != cudaSuccess) return cuda_fail(error, e, "cudaEventCreateWithFlags");
  e = cudaEventRecord(event, producer);
  if (e == cudaSuccess) {
    e = cudaStreamWaitEvent(consumer, event, 0);
    if (e != cudaSuccess) status = cuda_fail(error, e, "cudaStreamWaitEvent on the consumer's stream");
  } else {
    status = cuda_fail(error, e, "cudaEventRecord on the producer's stream");
  }
  // Destroying an event that a stream still waits for is allowed: the wait completes first.
  cudaEventDestroy(event);
  return status;
}

}  // extern "C"
