// Copies: the dlb_tensor_copy* functions and the routing of element copies between devices:
// host memory on both sides goes to the host kernels (copy_host.cc); otherwise a backend
// that sees both sides copies directly, or the copy is staged through host memory.
#include <cstdlib>

#include "internal.hpp"

namespace {

// Host memory that holds a device tensor's span while a copy is staged; freed on every path.
struct Staging {
  void* memory = nullptr;
  ~Staging() { std::free(memory); }
};

// Where a device tensor's span starts, as the (pointer, offset) pair copy_bytes takes.
void span_origin(const DLTensor* t, const dlb::Geometry& g, void** base, uint64_t* offset) {
  const int64_t begin = g.begin_bits >> 3;
  if (begin >= 0) {
    *base = t->data;
    *offset = static_cast<uint64_t>(begin);
  } else {  // only pointer-addressable devices get here (validation refuses the others)
    *base = static_cast<char*>(t->data) + begin;
    *offset = 0;
  }
}

uint64_t span_bytes(const dlb::Geometry& g) {
  const int64_t begin = g.begin_bits >> 3;
  const int64_t end = (g.begin_bits + static_cast<int64_t>(g.span_bits) + 7) >> 3;
  return static_cast<uint64_t>(end - begin);
}

// Describes the span of `t`, once copied to host memory at `memory`, as a host tensor.
void host_view(const DLTensor* t, const dlb::Geometry& g, void* memory, DLTensor* out,
               dlb::Geometry* gout) {
  *out = *t;
  const int64_t begin = g.begin_bits >> 3;
  out->data = memory;
  out->device = DLDevice{kDLCPU, 0};
  out->byte_offset = static_cast<uint64_t>(static_cast<int64_t>(t->byte_offset) - begin);
  *gout = g;
  gout->begin_bits = g.begin_bits - begin * 8;
}

// The caller's host buffer as a compact C-order tensor shaped like `like` (validated, geometry
// `g`), after the checks dlb_tensor_copy_to_host and dlb_tensor_copy_from_host share: the
// caller's element type, the buffer's size and address. `strides` holds the compact strides.
int describe_host_buffer(const DLManagedTensorVersioned& like, const dlb::Geometry& g,
                         DLDataType dtype, const void* buffer, uint64_t buffer_size,
                         int64_t* strides, DLManagedTensorVersioned* out, dlb::Geometry* gout,
                         dlb_error* error) {
  const DLTensor& t = like.dl_tensor;
  int status = dlb::check_element_type(t.dtype, dtype, error);
  if (status != DLB_OK) return status;
  uint64_t needed = 0;
  status = dlb_tensor_byte_size(&t, like.flags, &needed, error);
  if (status != DLB_OK) return status;
  if (buffer_size != needed) {
    dlb::DTypeText name(t.dtype);
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "the buffer holds %llu bytes but the tensor's %lld %s elements take %llu",
                     static_cast<unsigned long long>(buffer_size),
                     static_cast<long long>(g.element_count), name.text,
                     static_cast<unsigned long long>(needed));
  }
  if (buffer == nullptr && needed != 0) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "buffer is NULL");
  }
  dlb_compact_strides(t.ndim, t.shape, strides);
  *out = DLManagedTensorVersioned{};
  out->version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  out->flags = like.flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
  out->dl_tensor = DLTensor{const_cast<void*>(buffer), DLDevice{kDLCPU, 0}, t.ndim, t.dtype,
                            t.shape, strides, 0};
  return dlb::validate_tensor(&out->dl_tensor, out->flags, gout, error);
}

}  // namespace

namespace dlb {

int copy_elements(const DLManagedTensorVersioned* dst_tensor, const Geometry& gd,
                  const DLManagedTensorVersioned* src_tensor, const Geometry& gs, void* stream,
                  dlb_error* error) {
  const DLTensor* dst = &dst_tensor->dl_tensor;
  const DLTensor* src = &src_tensor->dl_tensor;
  const uint64_t dst_flags = dst_tensor->flags, src_flags = src_tensor->flags;
  int status = DLB_OK;
  if (gs.element_count == 0) return DLB_OK;

  const bool src_host = dlb_device_is_host_readable(src->device) != 0;
  const bool dst_host = dlb_device_is_host_readable(dst->device) != 0;
  if (src_host && dst_host) {
    // Pinned or managed memory read by the host: what is queued on the stream comes first. The
    // stream belongs to the destination's device, or to the source's when that is the CPU.
    const DLDevice queued = dst->device.device_type != kDLCPU ? dst->device : src->device;
    if (stream != nullptr && queued.device_type != kDLCPU) {
      status = dlb_device_synchronize(queued, stream, error);
      if (status != DLB_OK) return status;
    }
    return host_copy(dst, gd, src, gs, src_flags, error);
  }

  Backend* src_backend = src_host ? nullptr : acquire_tensor_backend(src_tensor);
  Backend* dst_backend = dst_host ? nullptr : acquire_tensor_backend(dst_tensor);
  struct Release {
    Backend* a;
    Backend* b;
    ~Release() {
      release_backend(a);
      release_backend(b);
    }
  } release{src_backend, dst_backend};
  const DLTensor* missing = !src_host && src_backend == nullptr   ? src
                            : !dst_host && dst_backend == nullptr ? dst
                                                                  : nullptr;
  if (missing != nullptr) {
    DeviceTypeText name(missing->device.device_type);
    return fail(error, DLB_ERR_UNSUPPORTED, "no backend is registered for %s", name.text);
  }

  // Host-readable sides are presented to backends as plain host memory.
  DLTensor src_desc = *src, dst_desc = *dst;
  if (src_host) src_desc.device = DLDevice{kDLCPU, 0};
  if (dst_host) dst_desc.device = DLDevice{kDLCPU, 0};

  // A direct path: one backend sees both sides.
  Backend* direct = nullptr;
  if (src_host) direct = dst_backend;
  else if (dst_host || src_backend == dst_backend) direct = src_backend;
  if (direct != nullptr && direct->ops.copy_tensor != nullptr) {
    // A backend that declines explains why in its own report; the caller's stays untouched
    // unless the copy really fails.
    dlb_error declined;
    declined.message[0] = '\0';
    status = direct->ops.copy_tensor(direct->ops.ctx, &dst_desc, dst_flags, &src_desc, src_flags,
                                     stream, &declined);
    if (status != DLB_ERR_UNSUPPORTED) {
      return status == DLB_OK ? DLB_OK : backend_failed(direct, "copy_tensor", status, declined, error);
    }
  }

  // Staging through host memory with copy_bytes. The caller's stream belongs to the
  // destination's device (to the source's when the destination is host memory): only that
  // backend gets it, the other side runs synchronously. Work queued on the stream must be
  // finished before the host reads a staging buffer or frees one.
  void* const src_stream = dst_host ? stream : nullptr;
  auto finish = [error](Backend* backend, DLDevice device, void* queue) {
    if (queue == nullptr || backend->ops.synchronize == nullptr) return DLB_OK;
    return call_backend(backend, "synchronize", error, [&](dlb_error* report) {
      return backend->ops.synchronize(backend->ops.ctx, device, queue, report);
    });
  };
  auto copy_bytes = [error](Backend* backend, DLDevice dst_device, void* dst, uint64_t dst_offset,
                            DLDevice src_device, const void* src, uint64_t src_offset,
                            uint64_t nbytes, void* queue) {
    return call_backend(backend, "copy_bytes", error, [&](dlb_error* report) {
      return backend->ops.copy_bytes(backend->ops.ctx, dst_device, dst, dst_offset, src_device,
                                     src, src_offset, nbytes, queue, report);
    });
  };
  Staging src_stage, dst_stage;
  DLTensor host_src = src_desc;
  Geometry host_src_geometry = gs;
  if (!src_host) {
    const uint64_t nbytes = span_bytes(gs);
    src_stage.memory = std::malloc(nbytes);
    if (src_stage.memory == nullptr) {
      return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory staging %llu bytes",
                  static_cast<unsigned long long>(nbytes));
    }
    void* base;
    uint64_t offset;
    span_origin(src, gs, &base, &offset);
    status = copy_bytes(src_backend, DLDevice{kDLCPU, 0}, src_stage.memory, 0, src->device, base,
                        offset, nbytes, src_stream);
    if (status == DLB_OK) status = finish(src_backend, src->device, src_stream);
    if (status != DLB_OK) return status;
    host_view(src, gs, src_stage.memory, &host_src, &host_src_geometry);
  }
  if (dst_host) return host_copy(&dst_desc, gd, &host_src, host_src_geometry, src_flags, error);

  const uint64_t nbytes = span_bytes(gd);
  dst_stage.memory = std::malloc(nbytes);
  if (dst_stage.memory == nullptr) {
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory staging %llu bytes",
                static_cast<unsigned long long>(nbytes));
  }
  void* base;
  uint64_t offset;
  span_origin(dst, gd, &base, &offset);
  // Unless the destination covers its span completely, keep the bytes between its elements.
  const bool covers_span = !gd.packed && dlb_tensor_is_c_contiguous(dst) &&
                           gd.span_bits == static_cast<uint64_t>(gd.element_count) * gd.unit_bits;
  if (!covers_span) {
    status = copy_bytes(dst_backend, DLDevice{kDLCPU, 0}, dst_stage.memory, 0, dst->device, base,
                        offset, nbytes, stream);
    if (status == DLB_OK) status = finish(dst_backend, dst->device, stream);
    if (status != DLB_OK) return status;
  }
  DLTensor host_dst;
  Geometry host_dst_geometry;
  host_view(dst, gd, dst_stage.memory, &host_dst, &host_dst_geometry);
  status = host_copy(&host_dst, host_dst_geometry, &host_src, host_src_geometry, src_flags, error);
  if (status != DLB_OK) return status;
  status = copy_bytes(dst_backend, dst->device, base, offset, DLDevice{kDLCPU, 0},
                      dst_stage.memory, 0, nbytes, stream);
  if (status == DLB_OK) status = finish(dst_backend, dst->device, stream);
  return status;
}

}  // namespace dlb

extern "C" {

DLB_API dlb_status dlb_tensor_copy_async(const DLManagedTensorVersioned* src, DLDevice device,
                                  void* stream, DLManagedTensorVersioned** out,
                                  dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (src == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  dlb::Geometry gs, gd;
  int status = dlb::validate_tensor(&src->dl_tensor, src->flags, &gs, error);
  if (status != DLB_OK) return status;
  const DLTensor& t = src->dl_tensor;
  const uint64_t keep = src->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
  DLManagedTensorVersioned* copy = nullptr;
  status = dlb_tensor_allocate(device, t.dtype, t.ndim, t.shape, nullptr, keep, &copy, error);
  if (status != DLB_OK) return status;
  status = dlb::validate_tensor(&copy->dl_tensor, copy->flags, &gd, error);
  if (status == DLB_OK) status = dlb::copy_elements(copy, gd, src, gs, stream, error);
  if (status != DLB_OK) {
    dlb_tensor_free(copy);
    return status;
  }
  copy->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
  *out = copy;
  return DLB_OK;
}

DLB_API dlb_status dlb_tensor_copy(const DLManagedTensorVersioned* src, DLDevice device,
                            DLManagedTensorVersioned** out, dlb_error* error) {
  return dlb_tensor_copy_async(src, device, nullptr, out, error);
}

DLB_API dlb_status dlb_tensor_copy_into(const DLManagedTensorVersioned* src,
                                 DLManagedTensorVersioned* dst, dlb_error* error) {
  return dlb_tensor_copy_into_async(src, dst, nullptr, error);
}

DLB_API dlb_status dlb_tensor_copy_into_async(const DLManagedTensorVersioned* src,
                                       DLManagedTensorVersioned* dst, void* stream,
                                       dlb_error* error) {
  if (src == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "source tensor is NULL");
  if (dst == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "destination tensor is NULL");
  if ((dst->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0) {
    return dlb::fail(error, DLB_ERR_READ_ONLY, "cannot copy into a read-only tensor");
  }
  dlb::Geometry gs, gd;
  int status = dlb::validate_tensor(&src->dl_tensor, src->flags, &gs, error);
  if (status == DLB_OK) status = dlb::validate_tensor(&dst->dl_tensor, dst->flags, &gd, error);
  if (status != DLB_OK) return status;
  const DLTensor& s = src->dl_tensor;
  const DLTensor& d = dst->dl_tensor;
  if (s.dtype.code != d.dtype.code || s.dtype.bits != d.dtype.bits || s.dtype.lanes != d.dtype.lanes) {
    dlb::DTypeText a(s.dtype), b(d.dtype);
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "dtype mismatch: source is %s, destination is %s", a.text, b.text);
  }
  bool same_shape = s.ndim == d.ndim;
  for (int32_t i = 0; same_shape && i < s.ndim; ++i) same_shape = s.shape[i] == d.shape[i];
  if (!same_shape) {
    dlb::DimsText a(s.ndim, s.shape), b(d.ndim, d.shape);
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "shape mismatch: source is %s, destination is %s", a.text, b.text);
  }
  return dlb::copy_elements(dst, gd, src, gs, stream, error);
}

DLB_API dlb_status dlb_tensor_copy_to_host(const DLManagedTensorVersioned* src, DLDataType dtype,
                                           void* buffer, uint64_t buffer_size, dlb_error* error) {
  if (src == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  dlb::Geometry gs, gd;
  int status = dlb::validate_tensor(&src->dl_tensor, src->flags, &gs, error);
  if (status != DLB_OK) return status;
  int64_t strides[DLB_MAX_NDIM];
  DLManagedTensorVersioned host;
  status = describe_host_buffer(*src, gs, dtype, buffer, buffer_size, strides, &host, &gd, error);
  if (status != DLB_OK) return status;
  return dlb::copy_elements(&host, gd, src, gs, nullptr, error);
}

DLB_API dlb_status dlb_tensor_copy_from_host(DLManagedTensorVersioned* dst, DLDataType dtype,
                                             const void* buffer, uint64_t buffer_size,
                                             dlb_error* error) {
  if (dst == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  if ((dst->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0) {
    return dlb::fail(error, DLB_ERR_READ_ONLY, "cannot copy into a read-only tensor");
  }
  dlb::Geometry gd, gs;
  int status = dlb::validate_tensor(&dst->dl_tensor, dst->flags, &gd, error);
  if (status != DLB_OK) return status;
  int64_t strides[DLB_MAX_NDIM];
  DLManagedTensorVersioned host;
  status = describe_host_buffer(*dst, gd, dtype, buffer, buffer_size, strides, &host, &gs, error);
  if (status != DLB_OK) return status;
  return dlb::copy_elements(dst, gd, &host, gs, nullptr, error);
}

}  // extern "C"
