// The CUDA backends (kDLCUDA device memory, kDLCUDAHost pinned memory, kDLCUDAManaged managed
// memory): the dlb_backend callbacks other than the copies (cuda_copy.cc), registration, and
// the dlb_cuda_* functions. The runtime is found in cuda_runtime.cc.
//
// Streams: a NULL stream means "synchronous": the work is queued on the legacy default stream
// (which waits for the work of every blocking stream, as cudaMemcpy does) and waited for.
// Otherwise everything is queued on the caller's stream, temporaries included (stream-ordered
// cudaMallocAsync/cudaFreeAsync), and nothing blocks the host.
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include <cuda_runtime_api.h>

#include "../internal.hpp"
#include "cuda_copy.hpp"
#include "cuda_runtime.hpp"

namespace {

using dlb::fail;
using dlb::cuda::cuda_copy_bytes;
using dlb::cuda::cuda_copy_tensor;
using dlb::cuda::cuda_fail;
using dlb::cuda::DeviceScope;
using dlb::cuda::ready;
using dlb::cuda::runtime;

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

DLB_API dlb_status dlb_cuda_is_available(dlb_error* error) { return ready(error); }

DLB_API dlb_status dlb_cuda_device_count(int32_t* count, dlb_error* error) {
  if (count == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "count is NULL");
  *count = 0;
  const int status = ready(error);
  if (status == DLB_OK) *count = runtime().device_count;
  return status;
}

DLB_API dlb_status dlb_cuda_pointer_device(const void* pointer, DLDevice* out, dlb_error* error) {
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

DLB_API dlb_status dlb_cuda_stream_handshake(int32_t device_id, void* producer_stream,
                                      int64_t consumer_stream, dlb_error* error) {
  int status = dlb::cuda::check_consumer_stream(consumer_stream, error);
  if (status != DLB_OK) return status;
  if (device_id < 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "device_id %d is negative", static_cast<int>(device_id));
  }
  if (consumer_stream == -1) return DLB_OK;  // the consumer synchronises itself
  status = ready(error);
  if (status == DLB_OK) status = check_device_id(DLDevice{kDLCUDA, device_id}, error);
  if (status != DLB_OK) return status;
  const cudaStream_t consumer = dlb::cuda::consumer_stream_handle(consumer_stream);
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
