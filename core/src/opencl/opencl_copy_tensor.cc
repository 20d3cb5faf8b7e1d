// The OpenCL backend's strided tensor copies (copy_tensor): which copies the kernels take (the
// rest is declined with DLB_ERR_UNSUPPORTED and staged through the host), and the plan of each,
// between two buffers or between a buffer and dense host memory: one buffer copy or transfer when
// both layouts match, otherwise a kernel copy, through a temporary buffer where needed.
#include "opencl_copy.hpp"

#include <initializer_list>

#include "opencl_copy_internal.hpp"

namespace dlb {
namespace opencl {

namespace {

// True when the elements fill [begin, begin + count * element size) exactly once: sorted by
// stride, the dimensions form a compact layout (in any order and direction).
bool is_dense(int32_t ndim, const int64_t* shape, const int64_t* strides) {
  StridedDim dims[DLB_MAX_NDIM];
  int32_t n = 0;
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] > 1) dims[n++] = StridedDim{shape[i], magnitude(strides[i]), 0};
  }
  for (int32_t i = 1; i < n; ++i) {
    const StridedDim key = dims[i];
    int32_t k = i - 1;
    while (k >= 0 && dims[k].ss > key.ss) {
      dims[k + 1] = dims[k];
      --k;
    }
    dims[k + 1] = key;
  }
  int64_t expected = 1;
  for (int32_t i = 0; i < n; ++i) {
    if (dims[i].ss != expected) return false;
    expected *= dims[i].n;
  }
  return true;
}

bool same_strides(int32_t ndim, const int64_t* shape, const int64_t* a, const int64_t* b) {
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] > 1 && a[i] != b[i]) return false;
  }
  return true;
}

// One side of a tensor copy: its strides in elements and the bytes its elements touch.
struct Side {
  const DLTensor* t;
  int64_t strides[DLB_MAX_NDIM];
  int64_t begin;  // first byte touched, relative to data (byte_offset included)
  uint64_t span;  // bytes from there to the end of the last element
};

void describe(const DLTensor* t, const Geometry& g, Side* side) {
  side->t = t;
  dlb_tensor_get_strides(t, DLB_MAX_NDIM, side->strides, nullptr);
  side->begin = g.begin_bits / 8;  // unpacked data starts on a byte
  // The span ends at the last element's value bits: padded sub-byte data fills its byte.
  side->span = (g.span_bits + 7) / 8;
}

int create_temp(const Api& api, const Device& device, uint64_t nbytes, TempBuffer* temp,
                dlb_error* error) {
  if (nbytes > device.max_alloc) {
    return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                     "a temporary buffer of %llu bytes exceeds the largest OpenCL allocation of "
                     "the device (%llu bytes)",
                     static_cast<unsigned long long>(nbytes),
                     static_cast<unsigned long long>(device.max_alloc));
  }
  return create_buffer(api, device.context, nbytes, &temp->mem, error);
}

cl_mem mem_of(const DLTensor* t) { return static_cast<cl_mem>(t->data); }

// Both sides on the device, in the device's context.
int device_to_device(Runtime& rt, Device& device, Submission& sub, const Side& d, const Side& s,
                     uint64_t element_size, dlb_error* error) {
  const Api& api = rt.api;
  const DLTensor* dst = d.t;
  const DLTensor* src = s.t;
  Root dst_root{}, src_root{};
  int status = root_of(api, dst->data, &dst_root, error);
  if (status == DLB_OK) status = root_of(api, src->data, &src_root, error);
  if (status != DLB_OK) return status;
  const bool same = same_strides(src->ndim, src->shape, d.strides, s.strides);
  const bool overlap = ranges_overlap(dst_root, static_cast<uint64_t>(d.begin), d.span, src_root,
                                      static_cast<uint64_t>(s.begin), s.span);
  if (overlap && same && dst_root.offset + dst->byte_offset == src_root.offset + src->byte_offset) {
    return DLB_OK;  // every element onto itself
  }
  // Overlapping memory: the source is copied aside first, so the result is as if through a
  // temporary.
  TempBuffer temp(api);
  cl_mem src_mem = mem_of(src);
  int64_t src_begin = s.begin;
  if (overlap) {
    status = create_temp(api, device, s.span, &temp, error);
    if (status != DLB_OK) return status;
    const cl_int code =
        api.clEnqueueCopyBuffer(sub.queue(), src_mem, temp.mem, static_cast<size_t>(s.begin), 0,
                                static_cast<size_t>(s.span), 0, nullptr, sub.track());
    if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueCopyBuffer", code);
    src_mem = temp.mem;
    src_begin = 0;
  }
  if (same && is_dense(dst->ndim, dst->shape, d.strides)) {
    const cl_int code = api.clEnqueueCopyBuffer(
        sub.queue(), src_mem, mem_of(dst), static_cast<size_t>(src_begin),
        static_cast<size_t>(d.begin), static_cast<size_t>(d.span), 0, nullptr, sub.track());
    if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueCopyBuffer", code);
    return DLB_OK;
  }
  const Operand to{mem_of(dst), static_cast<int64_t>(dst->byte_offset), d.strides};
  const Operand from{src_mem, static_cast<int64_t>(src->byte_offset) - s.begin + src_begin,
                     s.strides};
  return enqueue_kernel_copy(rt, device, sub, to, from, src->ndim, src->shape, element_size, error);
}

// Dense host memory to the device: one write, through a temporary buffer and a kernel when the
// layouts differ.
int host_to_device(Runtime& rt, Device& device, Submission& sub, const Side& d, const Side& s,
                   uint64_t element_size, dlb_error* error) {
  const Api& api = rt.api;
  const DLTensor* dst = d.t;
  const DLTensor* src = s.t;
  const char* host = static_cast<const char*>(src->data) + s.begin;
  if (same_strides(src->ndim, src->shape, d.strides, s.strides)) {
    const cl_int code =
        api.clEnqueueWriteBuffer(sub.queue(), mem_of(dst), CL_FALSE, static_cast<size_t>(d.begin),
                                 static_cast<size_t>(d.span), host, 0, nullptr, sub.track());
    if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueWriteBuffer", code);
    return DLB_OK;
  }
  TempBuffer temp(api);
  int status = create_temp(api, device, s.span, &temp, error);
  if (status != DLB_OK) return status;
  const cl_int code =
      api.clEnqueueWriteBuffer(sub.queue(), temp.mem, CL_FALSE, 0, static_cast<size_t>(s.span),
                               host, 0, nullptr, sub.track());
  if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueWriteBuffer", code);
  const Operand to{mem_of(dst), static_cast<int64_t>(dst->byte_offset), d.strides};
  const Operand from{temp.mem, static_cast<int64_t>(src->byte_offset) - s.begin, s.strides};
  return enqueue_kernel_copy(rt, device, sub, to, from, src->ndim, src->shape, element_size, error);
}

// The device to dense host memory: one read, after a kernel into a temporary buffer when the
// layouts differ.
int device_to_host(Runtime& rt, Device& device, Submission& sub, const Side& d, const Side& s,
                   uint64_t element_size, dlb_error* error) {
  const Api& api = rt.api;
  const DLTensor* dst = d.t;
  const DLTensor* src = s.t;
  char* host = static_cast<char*>(dst->data) + d.begin;
  if (same_strides(src->ndim, src->shape, d.strides, s.strides)) {
    const cl_int code =
        api.clEnqueueReadBuffer(sub.queue(), mem_of(src), CL_FALSE, static_cast<size_t>(s.begin),
                                static_cast<size_t>(s.span), host, 0, nullptr, sub.track());
    if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueReadBuffer", code);
    return DLB_OK;
  }
  TempBuffer temp(api);
  int status = create_temp(api, device, d.span, &temp, error);
  if (status != DLB_OK) return status;
  const Operand to{temp.mem, static_cast<int64_t>(dst->byte_offset) - d.begin, d.strides};
  const Operand from{mem_of(src), static_cast<int64_t>(src->byte_offset), s.strides};
  status =
      enqueue_kernel_copy(rt, device, sub, to, from, src->ndim, src->shape, element_size, error);
  if (status != DLB_OK) return status;
  const cl_int code =
      api.clEnqueueReadBuffer(sub.queue(), temp.mem, CL_FALSE, 0, static_cast<size_t>(d.span), host,
                              0, nullptr, sub.track());
  if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueReadBuffer", code);
  return DLB_OK;
}

}  // namespace

int copy_tensor(const DLTensor* dst, uint64_t dst_flags, const DLTensor* src, uint64_t src_flags,
                void* stream, dlb_error* error) {
  Geometry gd{}, gs{};
  int status = validate_tensor(dst, dst_flags, &gd, error);
  if (status == DLB_OK) status = validate_tensor(src, src_flags, &gs, error);
  if (status != DLB_OK) return status;
  // The kernels move whole bytes: padded sub-byte data (one byte per element, padding bits
  // included, as the core's host copy does) is theirs, packed data the host's bit copy.
  if (gs.packed || gd.packed) {
    return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                     "opencl copies of packed sub-byte data are staged through the host");
  }
  const bool dst_on_device = dst->device.device_type == kDLOpenCL;
  const bool src_on_device = src->device.device_type == kDLOpenCL;
  if (!dst_on_device && !src_on_device) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "neither side of the copy is an opencl buffer");
  }
  if (gs.element_count == 0) return DLB_OK;
  Side d{}, s{};
  describe(dst, gd, &d);
  describe(src, gs, &s);
  // Host memory moves in one transfer, so the host side must fill its span.
  const Side* host = !src_on_device ? &s : !dst_on_device ? &d : nullptr;
  if (host != nullptr && !is_dense(host->t->ndim, host->t->shape, host->strides)) {
    return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                     "opencl copies with a non-contiguous host side are staged through the host");
  }
  Runtime* rt = nullptr;
  Device* device = nullptr;
  const DLTensor* device_side = dst_on_device ? dst : src;
  status = find_device(device_side->device.device_id, &rt, &device, error);
  if (status == DLB_OK) status = ensure_context(*rt, *device, error);
  if (status != DLB_OK) return status;
  const Api& api = rt->api;
  // The kernels live in the library's context of the device: both buffers and the queue must
  // belong to it. Anything else goes through the host with copy_bytes.
  for (const DLTensor* t : {dst, src}) {
    if (t->device.device_type != kDLOpenCL) continue;
    cl_context context = nullptr;
    status = mem_context(api, t->data, &context, error);
    if (status != DLB_OK) return status;
    if (context != device->context) {
      return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                       "opencl buffers of two contexts, or of a context dlbridge did not create, "
                       "are copied through the host");
    }
  }
  if (stream != nullptr) {
    cl_context stream_context = nullptr;
    const cl_int code =
        api.clGetCommandQueueInfo(static_cast<cl_command_queue>(stream), CL_QUEUE_CONTEXT,
                                  sizeof(stream_context), &stream_context, nullptr);
    if (code != CL_SUCCESS) return cl_fail(error, "clGetCommandQueueInfo", code);
    if (stream_context != device->context) {
      return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                       "the queue belongs to another OpenCL context than the buffers: the copy "
                       "is staged through the host");
    }
  }
  Submission sub(api);
  status = sub.open(*rt, *device, device->context, stream, error);
  if (status != DLB_OK) return status;
  const uint64_t element_size = gs.unit_bits / 8;
  if (src_on_device && dst_on_device) {
    status = device_to_device(*rt, *device, sub, d, s, element_size, error);
  } else if (dst_on_device) {
    status = host_to_device(*rt, *device, sub, d, s, element_size, error);
  } else {
    status = device_to_host(*rt, *device, sub, d, s, element_size, error);
  }
  if (status != DLB_OK) {
    sub.abandon();
    return status;
  }
  return sub.complete(error);
}

}  // namespace opencl
}  // namespace dlb
