// The OpenCL backend: registration, the dlb_backend callbacks other than the copies, the check
// of imported buffers, and the public dlb_opencl_* functions.
#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <new>

#include "opencl_copy.hpp"
#include "opencl_runtime.hpp"

namespace dlb {
namespace opencl {
namespace {

// ---- callbacks ----------------------------------------------------------------------------------

int allocate(void*, DLDevice device, uint64_t nbytes, void** out_data, dlb_error* error) {
  *out_data = nullptr;
  Runtime* rt = nullptr;
  Device* dev = nullptr;
  int status = find_device(device.device_id, &rt, &dev, error);
  if (status == DLB_OK) status = ensure_context(*rt, *dev, error);
  if (status != DLB_OK) return status;
  // OpenCL refuses empty buffers, and a tensor with no elements still needs a handle.
  const uint64_t size = nbytes > 0 ? nbytes : 1;
  if (size > dev->max_alloc) {
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY,
                     "cannot allocate %llu bytes on opencl:%d: the device allows at most %llu "
                     "bytes in one buffer",
                     static_cast<unsigned long long>(size), static_cast<int>(device.device_id),
                     static_cast<unsigned long long>(dev->max_alloc));
  }
  cl_mem mem = nullptr;
  status = create_buffer(rt->api, dev->context, size, &mem, error);
  if (status != DLB_OK) return status;
  *out_data = mem;
  return DLB_OK;
}

void release(void*, DLDevice, void* data) {
  // A buffer exists, so the runtime was loaded. Commands still queued on the buffer keep it
  // alive: OpenCL deletes it once they are done.
  if (data != nullptr) runtime()->api.clReleaseMemObject(static_cast<cl_mem>(data));
}

int copy_bytes_callback(void*, DLDevice dst_device, void* dst, uint64_t dst_offset,
                        DLDevice src_device, const void* src, uint64_t src_offset, uint64_t nbytes,
                        void* stream, dlb_error* error) {
  return copy_bytes(dst_device, dst, dst_offset, src_device, src, src_offset, nbytes, stream,
                    error);
}

int copy_tensor_callback(void*, const DLTensor* dst, uint64_t dst_flags, const DLTensor* src,
                         uint64_t src_flags, void* stream, dlb_error* error) {
  return copy_tensor(dst, dst_flags, src, src_flags, stream, error);
}

int synchronize(void*, DLDevice device, void* stream, dlb_error* error) {
  Runtime* rt = nullptr;
  Device* dev = nullptr;
  int status = find_device(device.device_id, &rt, &dev, error);
  if (status != DLB_OK) return status;
  cl_command_queue queue = static_cast<cl_command_queue>(stream);
  if (queue == nullptr) {
    // OpenCL has no device-wide wait: NULL means the library's own queue.
    status = ensure_context(*rt, *dev, error);
    if (status != DLB_OK) return status;
    queue = dev->queue;
  }
  const cl_int code = rt->api.clFinish(queue);
  if (code != CL_SUCCESS) return cl_fail(error, "clFinish", code);
  return DLB_OK;
}

// Reads the word at `address` without faulting when nothing is mapped there. Returns false
// when the memory is not readable.
bool read_word(const void* address, uintptr_t* out) {
  iovec local{out, sizeof(*out)};
  iovec remote{const_cast<void*>(address), sizeof(*out)};
  const ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (n == static_cast<ssize_t>(sizeof(*out))) return true;
  if (n < 0 && errno == EFAULT) return false;
  // process_vm_readv refused (seccomp, an old kernel): a pipe write faults the same way.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return true;  // cannot tell: let OpenCL judge
  bool readable = write(fds[1], address, sizeof(*out)) == static_cast<ssize_t>(sizeof(*out)) &&
                  read(fds[0], out, sizeof(*out)) == static_cast<ssize_t>(sizeof(*out));
  close(fds[0]);
  close(fds[1]);
  return readable;
}

// OpenCL cannot be asked whether a pointer is a cl_mem: the ICD loader jumps through the first
// word of whatever it is given. So that a wrong handle is refused rather than crashing, the
// first word is read safely and compared with the dispatch-table pointer that every object of
// a platform (the platform object included) starts with.
bool looks_like_opencl_object(const Runtime& rt, const void* handle) {
  uintptr_t dispatch = 0;
  if (!read_word(handle, &dispatch)) return false;
  for (cl_uint p = 0; p < rt.platform_count; ++p) {
    if (rt.dispatch[p] == dispatch) return true;
  }
  return false;
}

int check_memory(void*, const DLTensor* tensor, uint64_t flags, dlb_error* error) {
  // Without a runtime there is nothing to check against (as for CUDA without a driver).
  Runtime* rt = runtime();
  if (rt->status != DLB_OK) return DLB_OK;
  Device* dev = nullptr;
  int status = find_device(tensor->device.device_id, &rt, &dev, error);
  if (status != DLB_OK) return status;
  if (tensor->data == nullptr) return DLB_OK;  // an empty tensor without memory
  if (!looks_like_opencl_object(*rt, tensor->data)) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "data %p is not an OpenCL buffer (cl_mem)",
                     tensor->data);
  }
  const Api& api = rt->api;
  cl_mem mem = static_cast<cl_mem>(tensor->data);
  cl_mem_object_type type = 0;
  cl_int code = api.clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof(type), &type, nullptr);
  if (code == CL_INVALID_MEM_OBJECT) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "data %p is not an OpenCL buffer (cl_mem)",
                     tensor->data);
  }
  if (code != CL_SUCCESS) return cl_fail(error, "clGetMemObjectInfo", code);
  if (type != CL_MEM_OBJECT_BUFFER) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "data %p is an OpenCL image, not a buffer",
                     tensor->data);
  }
  size_t size = 0;
  cl_context context = nullptr;
  code = api.clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof(size), &size, nullptr);
  if (code == CL_SUCCESS) {
    code = api.clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(context), &context, nullptr);
  }
  if (code != CL_SUCCESS) return cl_fail(error, "clGetMemObjectInfo", code);

  // The buffer must be usable on the claimed device: its context must hold that device.
  cl_uint context_devices = 0;
  code = api.clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, sizeof(context_devices),
                              &context_devices, nullptr);
  cl_device_id* devices =
      new (std::nothrow) cl_device_id[context_devices > 0 ? context_devices : 1];
  if (devices == nullptr) {
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory checking an OpenCL buffer");
  }
  if (code == CL_SUCCESS) {
    code = api.clGetContextInfo(context, CL_CONTEXT_DEVICES, sizeof(cl_device_id) * context_devices,
                                devices, nullptr);
  }
  bool found = false;
  for (cl_uint i = 0; code == CL_SUCCESS && i < context_devices; ++i)
    found |= devices[i] == dev->id;
  delete[] devices;
  if (code != CL_SUCCESS) return cl_fail(error, "clGetContextInfo", code);
  if (!found) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "the cl_mem belongs to a context without opencl device %d (%s)",
                     static_cast<int>(tensor->device.device_id), dev->name);
  }

  int64_t begin = 0;
  int64_t span = 0;
  status = dlb_tensor_byte_span(tensor, flags, &begin, &span, error);
  if (status != DLB_OK) return status;
  const uint64_t end = static_cast<uint64_t>(begin) + static_cast<uint64_t>(span);
  if (span > 0 && end > size) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "the cl_mem holds %llu bytes but the tensor's elements reach byte %llu "
                     "(byte_offset %llu)",
                     static_cast<unsigned long long>(size), static_cast<unsigned long long>(end),
                     static_cast<unsigned long long>(tensor->byte_offset));
  }
  return DLB_OK;
}

}  // namespace
}  // namespace opencl
}  // namespace dlb

void dlb::register_opencl_backend() {
  // Registration only: the runtime is loaded by the first callback that needs it.
  dlb_backend backend;
  std::memset(&backend, 0, sizeof(backend));
  backend.struct_size = sizeof(backend);
  backend.device_type = kDLOpenCL;
  backend.name = "opencl";
  backend.ctx = nullptr;  // the runtime is process-wide state
  backend.allocate = &opencl::allocate;
  backend.free = &opencl::release;
  backend.copy_bytes = &opencl::copy_bytes_callback;
  backend.copy_tensor = &opencl::copy_tensor_callback;
  backend.synchronize = &opencl::synchronize;
  backend.destroy = nullptr;
  backend.check_memory = &opencl::check_memory;
  dlb::register_backend(&backend, nullptr);
}

extern "C" {

DLB_API dlb_status dlb_opencl_is_available(dlb_error* error) {
  dlb::opencl::Runtime* rt = nullptr;
  return dlb::opencl::require_runtime(&rt, error);
}

DLB_API dlb_status dlb_opencl_device_count(int32_t* count, dlb_error* error) {
  if (count == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "count is NULL");
  *count = 0;
  dlb::opencl::Runtime* rt = nullptr;
  const int status = dlb::opencl::require_runtime(&rt, error);
  if (status != DLB_OK) return status;
  *count = rt->device_count;
  return DLB_OK;
}

DLB_API dlb_status dlb_opencl_device_objects(int32_t device_id, void** platform, void** device,
                                      void** context, void** queue, dlb_error* error) {
  for (void** out : {platform, device, context, queue}) {
    if (out != nullptr) *out = nullptr;
  }
  dlb::opencl::Runtime* rt = nullptr;
  dlb::opencl::Device* dev = nullptr;
  int status = dlb::opencl::find_device(device_id, &rt, &dev, error);
  if (status != DLB_OK) return status;
  // The context and queue are made only when asked for.
  if (context != nullptr || queue != nullptr) {
    status = dlb::opencl::ensure_context(*rt, *dev, error);
    if (status != DLB_OK) return status;
  }
  if (platform != nullptr) *platform = dev->platform;
  if (device != nullptr) *device = dev->id;
  if (context != nullptr) *context = dev->context;
  if (queue != nullptr) *queue = dev->queue;
  return DLB_OK;
}

DLB_API dlb_status dlb_opencl_device_name(int32_t device_id, char* buffer, uint64_t buffer_size,
                                   dlb_error* error) {
  if (buffer == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "buffer is NULL");
  if (buffer_size > 0) buffer[0] = '\0';
  dlb::opencl::Runtime* rt = nullptr;
  dlb::opencl::Device* dev = nullptr;
  const int status = dlb::opencl::find_device(device_id, &rt, &dev, error);
  if (status != DLB_OK) return status;
  const size_t length = std::strlen(dev->name);
  if (length + 1 > buffer_size) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "buffer of %llu bytes is too small for opencl device name '%s'",
                     static_cast<unsigned long long>(buffer_size), dev->name);
  }
  std::memcpy(buffer, dev->name, length + 1);
  return DLB_OK;
}

DLB_API dlb_status dlb_opencl_queue_handshake(void* producer_queue, void* consumer_queue,
                                       dlb_error* error) {
  if (producer_queue == nullptr) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "producer queue is NULL");
  }
  if (consumer_queue == nullptr) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "consumer queue is NULL");
  }
  if (producer_queue == consumer_queue) return DLB_OK;  // an in-order queue orders itself
  dlb::opencl::Runtime* rt = nullptr;
  int status = dlb::opencl::require_runtime(&rt, error);
  if (status != DLB_OK) return status;
  const dlb::opencl::Api& api = rt->api;
  auto producer = static_cast<cl_command_queue>(producer_queue);
  auto consumer = static_cast<cl_command_queue>(consumer_queue);
  cl_context producer_context = nullptr, consumer_context = nullptr;
  cl_int code = api.clGetCommandQueueInfo(producer, CL_QUEUE_CONTEXT, sizeof(producer_context),
                                          &producer_context, nullptr);
  if (code == CL_SUCCESS) {
    code = api.clGetCommandQueueInfo(consumer, CL_QUEUE_CONTEXT, sizeof(consumer_context),
                                     &consumer_context, nullptr);
  }
  if (code != CL_SUCCESS) return dlb::opencl::cl_fail(error, "clGetCommandQueueInfo", code);
  if (producer_context != consumer_context) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "the producer and consumer queues belong to different OpenCL contexts");
  }
  cl_event marker = nullptr;
  code = api.clEnqueueMarkerWithWaitList(producer, 0, nullptr, &marker);
  if (code != CL_SUCCESS) return dlb::opencl::cl_fail(error, "clEnqueueMarkerWithWaitList", code);
  // An event from another queue may only be waited on once its queue has been flushed.
  code = api.clFlush(producer);
  const char* call = "clFlush";
  if (code == CL_SUCCESS) {
    code = api.clEnqueueBarrierWithWaitList(consumer, 1, &marker, nullptr);
    call = "clEnqueueBarrierWithWaitList";
  }
  api.clReleaseEvent(marker);
  if (code != CL_SUCCESS) return dlb::opencl::cl_fail(error, call, code);
  return DLB_OK;
}

}  // extern "C"
