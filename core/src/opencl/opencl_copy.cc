// Copies for the OpenCL backend.
//
// Every copy runs as OpenCL commands on one in-order queue: the caller's queue when it belongs
// to the buffers' context (the call then returns once the work is queued), otherwise the
// library's queue for the device (the call then waits for its last command). Dense copies with
// the same layout on both sides are one clEnqueueCopyBuffer/ReadBuffer/WriteBuffer; anything
// else runs a copy kernel, with one transfer to or from a temporary buffer when the other side
// is host memory. What the kernels cannot do is declined with DLB_ERR_UNSUPPORTED, and the
// core then stages the copy through host memory with copy_bytes.
//
// This file: the copies of contiguous bytes (copy_bytes), within a context, across contexts and
// between host memory and a buffer, and create_buffer; opencl_copy_tensor.cc plans the copies of
// strided tensors, and opencl_copy_kernels.cc launches their kernels.
#include "opencl_copy.hpp"

#include <cstdlib>

#include "opencl_copy_internal.hpp"

namespace dlb {
namespace opencl {

int mem_context(const Api& api, const void* mem, cl_context* out, dlb_error* error) {
  const cl_int code = api.clGetMemObjectInfo(static_cast<cl_mem>(const_cast<void*>(mem)),
                                             CL_MEM_CONTEXT, sizeof(*out), out, nullptr);
  if (code != CL_SUCCESS) return cl_fail(error, "clGetMemObjectInfo", code);
  return DLB_OK;
}

int root_of(const Api& api, const void* handle, Root* out, dlb_error* error) {
  cl_mem mem = static_cast<cl_mem>(const_cast<void*>(handle));
  cl_mem parent = nullptr;
  cl_int code =
      api.clGetMemObjectInfo(mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof(parent), &parent, nullptr);
  if (code != CL_SUCCESS) return cl_fail(error, "clGetMemObjectInfo", code);
  *out = Root{mem, 0};
  if (parent == nullptr) return DLB_OK;
  size_t offset = 0;
  code = api.clGetMemObjectInfo(mem, CL_MEM_OFFSET, sizeof(offset), &offset, nullptr);
  if (code != CL_SUCCESS) return cl_fail(error, "clGetMemObjectInfo", code);
  *out = Root{parent, offset};
  return DLB_OK;
}

bool ranges_overlap(const Root& a, uint64_t a_begin, uint64_t a_size, const Root& b,
                    uint64_t b_begin, uint64_t b_size) {
  if (a.mem != b.mem) return false;
  const uint64_t a0 = a.offset + a_begin, b0 = b.offset + b_begin;
  return a0 < b0 + b_size && b0 < a0 + a_size;
}

namespace {

// Copies between two buffers of one context, through a temporary buffer when their ranges
// overlap (OpenCL refuses overlapping copies).
int enqueue_buffer_copy(const Api& api, Submission& sub, cl_context context, cl_mem dst,
                        uint64_t dst_offset, cl_mem src, uint64_t src_offset, uint64_t nbytes,
                        bool overlap, dlb_error* error) {
  if (!overlap) {
    const cl_int code = api.clEnqueueCopyBuffer(sub.queue(), src, dst, src_offset, dst_offset,
                                                nbytes, 0, nullptr, sub.track());
    if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueCopyBuffer", code);
    return DLB_OK;
  }
  TempBuffer temp(api);
  int status = create_buffer(api, context, nbytes, &temp.mem, error);
  if (status != DLB_OK) return status;
  cl_int code = api.clEnqueueCopyBuffer(sub.queue(), src, temp.mem, src_offset, 0, nbytes, 0,
                                        nullptr, sub.track());
  if (code == CL_SUCCESS) {
    code = api.clEnqueueCopyBuffer(sub.queue(), temp.mem, dst, 0, dst_offset, nbytes, 0, nullptr,
                                   sub.track());
  }
  if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueCopyBuffer", code);
  return DLB_OK;
}

// Buffers of two contexts share no queue: their bytes go through host memory, and the copy
// completes before the call returns.
int copy_across_contexts(DLDevice dst_device, void* dst, uint64_t dst_offset, DLDevice src_device,
                         const void* src, uint64_t src_offset, uint64_t nbytes, dlb_error* error) {
  void* host = std::malloc(static_cast<size_t>(nbytes));
  if (host == nullptr) {
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY,
                     "out of memory staging %llu bytes between two OpenCL contexts",
                     static_cast<unsigned long long>(nbytes));
  }
  const DLDevice cpu{kDLCPU, 0};
  int status = copy_bytes(cpu, host, 0, src_device, src, src_offset, nbytes, nullptr, error);
  if (status == DLB_OK) {
    status = copy_bytes(dst_device, dst, dst_offset, cpu, host, 0, nbytes, nullptr, error);
  }
  std::free(host);
  return status;
}

int copy_between_buffers(Runtime& rt, Device& device, DLDevice dst_device, void* dst,
                         uint64_t dst_offset, DLDevice src_device, const void* src,
                         uint64_t src_offset, uint64_t nbytes, void* stream, dlb_error* error) {
  const Api& api = rt.api;
  cl_context dst_context = nullptr, src_context = nullptr;
  int status = mem_context(api, dst, &dst_context, error);
  if (status == DLB_OK) status = mem_context(api, src, &src_context, error);
  if (status != DLB_OK) return status;
  if (dst_context != src_context) {
    return copy_across_contexts(dst_device, dst, dst_offset, src_device, src, src_offset, nbytes,
                                error);
  }
  Root dst_root{}, src_root{};
  status = root_of(api, dst, &dst_root, error);
  if (status == DLB_OK) status = root_of(api, src, &src_root, error);
  if (status != DLB_OK) return status;
  const bool overlap = ranges_overlap(dst_root, dst_offset, nbytes, src_root, src_offset, nbytes);
  if (overlap && dst_root.offset + dst_offset == src_root.offset + src_offset) return DLB_OK;
  Submission sub(api);
  status = sub.open(rt, device, dst_context, stream, error);
  if (status != DLB_OK) return status;
  status = enqueue_buffer_copy(api, sub, dst_context, static_cast<cl_mem>(dst), dst_offset,
                               static_cast<cl_mem>(const_cast<void*>(src)), src_offset, nbytes,
                               overlap, error);
  if (status != DLB_OK) {
    sub.abandon();
    return status;
  }
  return sub.complete(error);
}

}  // namespace

int copy_bytes(DLDevice dst_device, void* dst, uint64_t dst_offset, DLDevice src_device,
               const void* src, uint64_t src_offset, uint64_t nbytes, void* stream,
               dlb_error* error) {
  const bool dst_on_device = dst_device.device_type == kDLOpenCL;
  const bool src_on_device = src_device.device_type == kDLOpenCL;
  if (!dst_on_device && !src_on_device) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "neither side of the copy is an opencl buffer");
  }
  Runtime* rt = nullptr;
  Device* device = nullptr;
  int status =
      find_device(dst_on_device ? dst_device.device_id : src_device.device_id, &rt, &device, error);
  if (status != DLB_OK) return status;
  if (dst_on_device && src_on_device) {
    Device* src_dev = nullptr;
    status = find_device(src_device.device_id, &rt, &src_dev, error);
    if (status != DLB_OK) return status;
  }
  if (nbytes == 0) return DLB_OK;  // OpenCL refuses empty transfers
  if (dst_on_device && src_on_device) {
    return copy_between_buffers(*rt, *device, dst_device, dst, dst_offset, src_device, src,
                                src_offset, nbytes, stream, error);
  }
  const Api& api = rt->api;
  cl_context context = nullptr;
  status = mem_context(api, dst_on_device ? dst : src, &context, error);
  if (status != DLB_OK) return status;
  Submission sub(api);
  status = sub.open(*rt, *device, context, stream, error);
  if (status != DLB_OK) return status;
  // Non-blocking transfers: a blocking operation waits for the event instead. On a caller's
  // queue the host memory must stay untouched until the queue is synchronised, as for any
  // asynchronous copy (the core keeps its staging buffers until then).
  cl_int code;
  if (dst_on_device) {
    code = api.clEnqueueWriteBuffer(sub.queue(), static_cast<cl_mem>(dst), CL_FALSE,
                                    static_cast<size_t>(dst_offset), static_cast<size_t>(nbytes),
                                    static_cast<const char*>(src) + src_offset, 0, nullptr,
                                    sub.track());
  } else {
    code =
        api.clEnqueueReadBuffer(sub.queue(), static_cast<cl_mem>(const_cast<void*>(src)), CL_FALSE,
                                static_cast<size_t>(src_offset), static_cast<size_t>(nbytes),
                                static_cast<char*>(dst) + dst_offset, 0, nullptr, sub.track());
  }
  if (code != CL_SUCCESS) {
    sub.abandon();
    return cl_fail(error, dst_on_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", code);
  }
  return sub.complete(error);
}

int create_buffer(const Api& api, cl_context context, uint64_t nbytes, cl_mem* out,
                  dlb_error* error) {
  cl_int code = CL_SUCCESS;
  *out =
      api.clCreateBuffer(context, CL_MEM_READ_WRITE, static_cast<size_t>(nbytes), nullptr, &code);
  if (*out != nullptr && code == CL_SUCCESS) return DLB_OK;
  *out = nullptr;
  const int status = cl_fail(error, "clCreateBuffer", code);
  const bool exhausted = code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
                         code == CL_OUT_OF_HOST_MEMORY;
  return exhausted ? DLB_ERR_OUT_OF_MEMORY : status;
}

}  // namespace opencl
}  // namespace dlb
