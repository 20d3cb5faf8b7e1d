// Validation of tensors that enter the library, and layout queries.
#include <cstring>

#include "internal.hpp"

namespace {

int count_elements(int32_t ndim, const int64_t* shape, int64_t* out, dlb_error* error) {
  const int status = dlb::check_rank(ndim, shape, error);
  if (status != DLB_OK) return status;
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] < 0) {
      return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                       "shape[%d] is %lld; extents must not be negative", static_cast<int>(i),
                       static_cast<long long>(shape[i]));
    }
  }
  int64_t count = 0;
  if (!dlb::shape_product(ndim, shape, &count)) {
    dlb::DimsText dims(ndim, shape);
    return dlb::fail(error, DLB_ERR_OVERFLOW, "element count of shape %s overflows 63 bits",
                     dims.text);
  }
  *out = count;
  return DLB_OK;
}

// The checks shared by dlb_tensor_get_shape and dlb_tensor_get_strides: a well-formed shape
// and an output with room for ndim values.
int check_dims_output(const DLTensor* tensor, int32_t capacity, int64_t* out, dlb_error* error) {
  if (tensor == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  int64_t count = 0;
  int status = count_elements(tensor->ndim, tensor->shape, &count, error);
  if (status != DLB_OK) return status;
  if (tensor->ndim == 0) return DLB_OK;
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  if (capacity < tensor->ndim) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "output has room for %d values but the tensor has %d dimensions",
                     static_cast<int>(capacity), static_cast<int>(tensor->ndim));
  }
  return DLB_OK;
}

}  // namespace

namespace dlb {

bool is_subbyte_packed(DLDataType dtype, uint64_t flags) {
  return dtype.bits < 8 && (flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) == 0;
}

int compute_geometry(int32_t ndim, const int64_t* shape, const int64_t* strides,
                     DLDataType dtype, uint64_t flags, uint64_t byte_offset, Geometry* geometry,
                     dlb_error* error) {
  int64_t count = 0;
  int status = count_elements(ndim, shape, &count, error);
  if (status != DLB_OK) return status;
  status = dlb_dtype_validate(dtype, error);
  if (status != DLB_OK) return status;
  if ((flags & ~kKnownFlags) != 0) {
    return fail(error, DLB_ERR_UNSUPPORTED, "flags 0x%llx contain bits unknown to DLPack %d.%d",
                static_cast<unsigned long long>(flags & ~kKnownFlags), DLPACK_MAJOR_VERSION,
                DLPACK_MINOR_VERSION);
  }
  if (byte_offset > static_cast<uint64_t>(INT64_MAX) / 8) {
    return fail(error, DLB_ERR_OVERFLOW, "byte_offset %llu is too large",
                static_cast<unsigned long long>(byte_offset));
  }
  Geometry& g = *geometry;
  g.element_count = count;
  g.element_bits = static_cast<uint64_t>(dtype.bits) * dtype.lanes;
  g.packed = is_subbyte_packed(dtype, flags);
  g.unit_bits = g.packed ? g.element_bits : 8 * ((g.element_bits + 7) / 8);
  g.begin_bits = static_cast<int64_t>(byte_offset * 8);
  g.span_bits = 0;
  if (count == 0) return DLB_OK;
  // Reach of the strides in elements, forwards and backwards from the first element. Every
  // step is overflow-checked; the limit is 63 bits of bits, so byte arithmetic never wraps.
  int64_t forward = 0, backward = 0, compact = 1;
  bool overflow = false;
  for (int32_t i = ndim - 1; i >= 0; --i) {
    const int64_t extent = shape[i];
    const int64_t stride = strides != nullptr ? strides[i] : compact;
    compact *= extent;  // bounded by count, which fits
    if (extent <= 1) continue;
    int64_t reach;
    overflow |= __builtin_mul_overflow(stride, extent - 1, &reach);
    if (reach >= 0) {
      overflow |= __builtin_add_overflow(forward, reach, &forward);
    } else {
      overflow |= reach == INT64_MIN || __builtin_sub_overflow(backward, reach, &backward);
    }
  }
  int64_t span_units, span_bits, back_bits, begin_bits, end_bits;
  const int64_t unit = static_cast<int64_t>(g.unit_bits);
  overflow = overflow || __builtin_add_overflow(forward, backward, &span_units) ||
             __builtin_mul_overflow(span_units, unit, &span_bits) ||
             __builtin_add_overflow(span_bits, static_cast<int64_t>(g.element_bits), &span_bits) ||
             __builtin_mul_overflow(backward, unit, &back_bits) ||
             __builtin_sub_overflow(g.begin_bits, back_bits, &begin_bits) ||
             __builtin_add_overflow(begin_bits, span_bits, &end_bits) ||
             end_bits > INT64_MAX - 7 || begin_bits < -(INT64_MAX - 7);
  if (overflow) return fail(error, DLB_ERR_OVERFLOW, "byte span of the tensor exceeds 2^60 bytes");
  g.begin_bits = begin_bits;
  g.span_bits = static_cast<uint64_t>(span_bits);
  return DLB_OK;
}

int check_device(DLDevice device, dlb_error* error) {
  if (!dlb_device_type_is_known(device.device_type)) {
    return fail(error, DLB_ERR_UNSUPPORTED, "device type %d is not a known DLPack device type",
                static_cast<int>(device.device_type));
  }
  if (device.device_id < 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "device_id %d is negative",
                static_cast<int>(device.device_id));
  }
  if (device.device_type == kDLCPU && device.device_id != 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "cpu tensors must have device_id 0, not %d",
                static_cast<int>(device.device_id));
  }
  return DLB_OK;
}

namespace {

// True when [data + begin, data + end) does not fit between address 0 and the top of the
// address space, so that computing the address of an element would wrap.
bool wraps_address_space(const void* data, const Geometry& g) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(data);
  const int64_t begin = g.begin_bits >> 3;  // floor
  const int64_t end = (g.begin_bits + static_cast<int64_t>(g.span_bits) + 7) >> 3;
  if (begin < 0 && base < static_cast<uintptr_t>(-begin)) return true;
  return end > 0 && static_cast<uintptr_t>(end) > UINTPTR_MAX - base;
}

}  // namespace

// The full validation: every check in order, with the message that names the first problem.
int validate_tensor_slow(const DLTensor* tensor, uint64_t flags, Geometry* geometry,
                         dlb_error* error) {
  Geometry& g = *geometry;
  int status = compute_geometry(tensor->ndim, tensor->shape, tensor->strides, tensor->dtype, flags,
                                tensor->byte_offset, &g, error);
  if (status != DLB_OK) return status;
  const int32_t type = tensor->device.device_type;
  status = check_device(tensor->device, error);
  if (status != DLB_OK) return status;
  if (tensor->data == nullptr && g.element_count > 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "data is NULL but the tensor has %lld elements",
                static_cast<long long>(g.element_count));
  }
  if (g.span_bits > 0 && is_pointer_addressable(type) && wraps_address_space(tensor->data, g)) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "the tensor's memory wraps around the address space (data %p, byte_offset %llu)",
                tensor->data, static_cast<unsigned long long>(tensor->byte_offset));
  }
  if (!is_pointer_addressable(type) && g.begin_bits < 0) {
    DeviceTypeText name(type);
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "strides reach %lld bytes before the start of the %s buffer (byte_offset %llu)",
                static_cast<long long>((-g.begin_bits + 7) / 8), name.text,
                static_cast<unsigned long long>(tensor->byte_offset));
  }
  return DLB_OK;
}

// The general path: one loop over the dimensions for the element count and the reach of the
// strides, any device, dtype and layout; errors and anything that could overflow go to
// validate_tensor_slow.
int validate_tensor_general(const DLTensor* tensor, uint64_t flags, Geometry* geometry,
                            dlb_error* error) {
  if (tensor == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  Geometry local;
  Geometry& g = geometry != nullptr ? *geometry : local;
  const int32_t ndim = tensor->ndim;
  const int64_t* shape = tensor->shape;
  const int64_t* strides = tensor->strides;
  const DLDataType dtype = tensor->dtype;
  const int32_t type = tensor->device.device_type;
  const bool usual = ndim >= 0 && ndim <= DLB_MAX_NDIM && (shape != nullptr || ndim == 0) &&
                     dtype_is_valid(dtype) && (flags & ~kKnownFlags) == 0 &&
                     is_standard_device_type(type) && tensor->device.device_id >= 0 &&
                     (type != kDLCPU || tensor->device.device_id == 0) &&
                     tensor->byte_offset <= (uint64_t{1} << 56);  // 2^59 bits
  if (!usual) return validate_tensor_slow(tensor, flags, &g, error);

  int64_t count = 1, forward = 0, backward = 0;
  bool negative = false, overflow = false;
  for (int32_t i = ndim - 1; i >= 0; --i) {
    const int64_t extent = shape[i];
    // With NULL strides the compact stride of dimension i is the count of the later ones.
    const int64_t stride = strides != nullptr ? strides[i] : count;
    negative |= extent < 0;
    overflow |= __builtin_mul_overflow(count, extent, &count);
    if (extent > 1) {
      int64_t reach;
      overflow |= __builtin_mul_overflow(stride, extent - 1, &reach);
      if (reach >= 0) overflow |= __builtin_add_overflow(forward, reach, &forward);
      else overflow |= __builtin_sub_overflow(backward, reach, &backward);
    }
  }
  // Negative extents and overflows anywhere (even in an empty tensor's strides) are sorted out
  // by the slow path, and so are reaches above 2^50 elements and elements wider than 1024 bits:
  // below those bounds every position in bits fits in 62 bits, so plain arithmetic is exact.
  constexpr int64_t kFastReach = int64_t{1} << 50;
  if (negative || overflow || forward > kFastReach || backward > kFastReach) {
    return validate_tensor_slow(tensor, flags, &g, error);
  }
  g.element_count = count;
  g.element_bits = static_cast<uint64_t>(dtype.bits) * dtype.lanes;
  g.packed = is_subbyte_packed(dtype, flags);
  g.unit_bits = g.packed ? g.element_bits : 8 * ((g.element_bits + 7) / 8);
  g.begin_bits = static_cast<int64_t>(tensor->byte_offset * 8);
  g.span_bits = 0;
  if (count == 0) return DLB_OK;
  if (tensor->data == nullptr || g.unit_bits > 1024) return validate_tensor_slow(tensor, flags, &g, error);
  const int64_t unit = static_cast<int64_t>(g.unit_bits);
  const int64_t begin = g.begin_bits - backward * unit;
  const int64_t span = (forward + backward) * unit + static_cast<int64_t>(g.element_bits);
  g.begin_bits = begin;
  g.span_bits = static_cast<uint64_t>(span);
  if (is_pointer_addressable(type) ? wraps_address_space(tensor->data, g) : begin < 0) {
    return validate_tensor_slow(tensor, flags, &g, error);
  }
  return DLB_OK;
}

// Every import, wrap, view and copy validates its tensors, in three steps: the common case
// (validate_common: compact, whole bytes, a device with addresses), then the general fast path
// above, then the slow path, which alone writes messages.
int validate_tensor(const DLTensor* tensor, uint64_t flags, Geometry* geometry,
                    dlb_error* error) {
  return validate_tensor_inline(tensor, flags, geometry, error);
}

int check_rank(int32_t ndim, const int64_t* shape, dlb_error* error) {
  if (ndim < 0) return fail(error, DLB_ERR_INVALID_ARGUMENT, "ndim %d is negative", static_cast<int>(ndim));
  if (ndim > DLB_MAX_NDIM) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "ndim %d exceeds the maximum of %d",
                static_cast<int>(ndim), DLB_MAX_NDIM);
  }
  if (ndim > 0 && shape == nullptr) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "shape is NULL but ndim is %d",
                static_cast<int>(ndim));
  }
  return DLB_OK;
}

int check_buffer_span(const Geometry& g, uint64_t buffer_size, dlb_error* error) {
  if (g.span_bits == 0) return DLB_OK;
  // Validation bounded the span below 2^60 bytes, so these never overflow.
  const int64_t begin = g.begin_bits >> 3;
  const int64_t end = (g.begin_bits + static_cast<int64_t>(g.span_bits) + 7) >> 3;
  if (begin < 0 || static_cast<uint64_t>(end) > buffer_size) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "the tensor's elements reach bytes [%lld, %lld) of a buffer of %llu bytes",
                static_cast<long long>(begin), static_cast<long long>(end),
                static_cast<unsigned long long>(buffer_size));
  }
  return DLB_OK;
}

int check_element_type(DLDataType actual, DLDataType wanted, dlb_error* error) {
  if (wanted.code == 0 && wanted.bits == 0 && wanted.lanes == 0) return DLB_OK;
  if (actual.code == wanted.code && actual.bits == wanted.bits && actual.lanes == wanted.lanes) {
    return DLB_OK;
  }
  DTypeText have(actual), want(wanted);
  return fail(error, DLB_ERR_INVALID_ARGUMENT, "the tensor holds %s elements, not %s", have.text,
              want.text);
}

int refuse_packed(DLDataType dtype, dlb_error* error) {
  DTypeText name(dtype);
  return fail(error, DLB_ERR_UNSUPPORTED,
              "%s elements are packed below a byte: they have no address of their own", name.text);
}

int check_host_access(const DLManagedTensorVersioned& tensor, int writable, dlb_error* error) {
  if (!dlb_device_is_host_readable(tensor.dl_tensor.device)) {
    char device[DLB_DEVICE_NAME_SIZE];
    dlb_device_format(tensor.dl_tensor.device, device, sizeof device, nullptr);
    return fail(error, DLB_ERR_UNSUPPORTED,
                "%s memory is not readable by the host: copy the tensor to the cpu first", device);
  }
  if (writable != 0 && (tensor.flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0) {
    return fail(error, DLB_ERR_READ_ONLY, "the tensor is read-only");
  }
  return DLB_OK;
}

int check_typed_host_access(const DLManagedTensorVersioned* tensor, DLDataType dtype,
                            uint32_t access, Geometry* geometry, dlb_error* error) {
  if (tensor == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  int status = validate_tensor(&tensor->dl_tensor, tensor->flags, geometry, error);
  // The caller names the type it reads and writes: no wildcard (an all-zero dtype is not one).
  if (status == DLB_OK) status = dlb_dtype_validate(dtype, error);
  if (status == DLB_OK) status = check_element_type(tensor->dl_tensor.dtype, dtype, error);
  if (status != DLB_OK) return status;
  if (!has_byte_addresses(*geometry)) return refuse_packed(tensor->dl_tensor.dtype, error);
  return check_host_access(*tensor, (access & DLB_ACCESS_WRITE) != 0, error);
}

}  // namespace dlb

extern "C" {

DLB_API dlb_status dlb_tensor_validate(const DLTensor* tensor, uint64_t flags, dlb_error* error) {
  return dlb::validate_tensor(tensor, flags, nullptr, error);
}

DLB_API dlb_status dlb_shape_element_count(int32_t ndim, const int64_t* shape, int64_t* out,
                                    dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = 0;
  return count_elements(ndim, shape, out, error);
}

DLB_API dlb_status dlb_tensor_element_count(const DLTensor* tensor, int64_t* out, dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = 0;
  if (tensor == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  return count_elements(tensor->ndim, tensor->shape, out, error);
}

DLB_API dlb_status dlb_tensor_byte_size(const DLTensor* tensor, uint64_t flags, uint64_t* out,
                                 dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = 0;
  int64_t count = 0;
  int status = dlb_tensor_element_count(tensor, &count, error);
  if (status != DLB_OK) return status;
  return dlb_dtype_storage_size(tensor->dtype, count, flags, out, error);
}

DLB_API dlb_status dlb_tensor_byte_span(const DLTensor* tensor, uint64_t flags, int64_t* out_begin,
                                 int64_t* out_size, dlb_error* error) {
  if (out_begin != nullptr) *out_begin = 0;
  if (out_size != nullptr) *out_size = 0;
  if (tensor == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  dlb::Geometry g{};
  int status = dlb::compute_geometry(tensor->ndim, tensor->shape, tensor->strides, tensor->dtype,
                                     flags, tensor->byte_offset, &g, error);
  if (status != DLB_OK) return status;
  // Floor division for negative bit positions.
  const int64_t begin = g.begin_bits >= 0 ? g.begin_bits / 8 : -((-g.begin_bits + 7) / 8);
  const int64_t end_bits = g.begin_bits + static_cast<int64_t>(g.span_bits);
  const int64_t end = end_bits >= 0 ? (end_bits + 7) / 8 : -((-end_bits) / 8);
  if (out_begin != nullptr) *out_begin = begin;
  if (out_size != nullptr) *out_size = g.span_bits == 0 ? 0 : end - begin;
  return DLB_OK;
}

DLB_API void dlb_compact_strides(int32_t ndim, const int64_t* shape, int64_t* out) {
  if (out == nullptr || shape == nullptr) return;
  int64_t stride = 1;
  for (int32_t i = ndim - 1; i >= 0; --i) {
    out[i] = stride;
    const int64_t extent = shape[i] > 1 ? shape[i] : 1;
    if (__builtin_mul_overflow(stride, extent, &stride)) stride = INT64_MAX;
  }
}

DLB_API dlb_status dlb_tensor_get_shape(const DLTensor* tensor, int32_t capacity, int64_t* out,
                                 dlb_error* error) {
  int status = check_dims_output(tensor, capacity, out, error);
  if (status != DLB_OK) return status;
  if (tensor->ndim > 0) {
    std::memcpy(out, tensor->shape, sizeof(int64_t) * static_cast<size_t>(tensor->ndim));
  }
  return DLB_OK;
}

DLB_API dlb_status dlb_tensor_get_strides(const DLTensor* tensor, int32_t capacity, int64_t* out,
                                   dlb_error* error) {
  int status = check_dims_output(tensor, capacity, out, error);
  if (status != DLB_OK) return status;
  if (tensor->strides != nullptr) {
    if (tensor->ndim > 0) {
      std::memcpy(out, tensor->strides, sizeof(int64_t) * static_cast<size_t>(tensor->ndim));
    }
  } else {
    dlb_compact_strides(tensor->ndim, tensor->shape, out);
  }
  return DLB_OK;
}

}  // extern "C"

namespace {

// Shared by the two contiguity checks: C order walks the dimensions from the last, Fortran
// order from the first.
bool is_contiguous(const DLTensor* tensor, bool c_order) {
  // A malformed shape (ndim out of range, NULL shape, a negative extent, an element count that
  // overflows) is not contiguous; an empty one is.
  int64_t count = 0;
  if (tensor == nullptr || count_elements(tensor->ndim, tensor->shape, &count, nullptr) != DLB_OK) {
    return false;
  }
  if (count == 0) return true;
  const int32_t ndim = tensor->ndim;
  if (tensor->strides == nullptr) {
    if (c_order) return true;
    // Compact row-major strides are Fortran-contiguous only with at most one extent above 1.
    int32_t above_one = 0;
    for (int32_t i = 0; i < ndim; ++i) above_one += tensor->shape[i] > 1 ? 1 : 0;
    return above_one <= 1;
  }
  int64_t expected = 1;
  for (int32_t k = 0; k < ndim; ++k) {
    const int32_t i = c_order ? ndim - 1 - k : k;
    if (tensor->shape[i] == 1) continue;
    if (tensor->strides[i] != expected) return false;
    if (__builtin_mul_overflow(expected, tensor->shape[i], &expected)) return false;
  }
  return true;
}

}  // namespace

extern "C" {

DLB_API int dlb_tensor_is_c_contiguous(const DLTensor* tensor) {
  return is_contiguous(tensor, true) ? 1 : 0;
}

DLB_API int dlb_tensor_is_f_contiguous(const DLTensor* tensor) {
  return is_contiguous(tensor, false) ? 1 : 0;
}

DLB_API int dlb_tensor_is_aligned(const DLTensor* tensor, uint64_t alignment) {
  if (tensor == nullptr || alignment == 0 || (alignment & (alignment - 1)) != 0) return 0;
  uint64_t address = tensor->byte_offset;
  if (dlb::is_pointer_addressable(tensor->device.device_type)) {
    address += static_cast<uint64_t>(reinterpret_cast<uintptr_t>(tensor->data));
  }
  return (address & (alignment - 1)) == 0 ? 1 : 0;
}

DLB_API int dlb_tensor_is_host_readable(const DLTensor* tensor) {
  return tensor != nullptr && dlb_device_is_host_readable(tensor->device) ? 1 : 0;
}

DLB_API uint64_t dlb_tensor_flags(const DLManagedTensorVersioned* tensor) {
  return tensor != nullptr ? tensor->flags : 0;
}

DLB_API int dlb_tensor_is_read_only(const DLManagedTensorVersioned* tensor) {
  return tensor != nullptr && (tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0 ? 1 : 0;
}

DLB_API dlb_status dlb_tensor_host_data(const DLManagedTensorVersioned* tensor, int writable,
                                 void** out_data, uint64_t* out_size, dlb_error* error) {
  if (out_data != nullptr) *out_data = nullptr;
  if (out_size != nullptr) *out_size = 0;
  if (tensor == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  const DLTensor& t = tensor->dl_tensor;
  int status = dlb::check_host_access(*tensor, writable, error);
  if (status != DLB_OK) return status;
  uint64_t size = 0;
  status = dlb_tensor_byte_size(&t, tensor->flags, &size, error);
  if (status != DLB_OK) return status;
  if (!is_contiguous(&t, true)) {
    return dlb::fail(error, DLB_ERR_LAYOUT,
                     "the tensor is not C-contiguous: copy it to a contiguous tensor first");
  }
  if (out_data != nullptr) *out_data = static_cast<char*>(t.data) + t.byte_offset;
  if (out_size != nullptr) *out_size = size;
  return DLB_OK;
}

DLB_API dlb_status dlb_tensor_host_elements(const DLManagedTensorVersioned* tensor,
                                            DLDataType dtype, uint32_t access, void** out_data,
                                            int64_t* out_count, dlb_error* error) {
  if (out_data != nullptr) *out_data = nullptr;
  if (out_count != nullptr) *out_count = 0;
  dlb::Geometry g{};
  const int status = dlb::check_typed_host_access(tensor, dtype, access, &g, error);
  if (status != DLB_OK) return status;
  const DLTensor& t = tensor->dl_tensor;
  if ((access & DLB_ACCESS_ANY_LAYOUT) == 0 && !is_contiguous(&t, true)) {
    return dlb::fail(error, DLB_ERR_LAYOUT,
                     "the tensor is not C-contiguous: copy it to a contiguous tensor first");
  }
  if (out_data != nullptr) *out_data = static_cast<char*>(t.data) + t.byte_offset;
  if (out_count != nullptr) *out_count = g.element_count;
  return DLB_OK;
}

}  // extern "C"
