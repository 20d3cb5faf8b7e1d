// Zero-copy views: slice, select, reshape, permute, transpose.
#include <cstring>

#include "internal.hpp"

namespace {

__extension__ typedef __int128 int128;

// Validates a view's source and returns its geometry.
int check_source(const DLManagedTensorVersioned* src, DLManagedTensorVersioned** out,
                 dlb::Geometry* geometry, dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (src == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  if (!dlb_tensor_is_dlbridge(src)) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "tensor was not made by dlbridge; import it with dlb_tensor_import first");
  }
  return dlb::validate_tensor(&src->dl_tensor, src->flags, geometry, error);
}

// An index along axis `axis` (negative counts from the end) as a position in [0, extent).
int resolve_index(const DLTensor& t, int32_t axis, int64_t index, int64_t* position,
                  dlb_error* error) {
  const int64_t extent = t.shape[axis];
  const int64_t i = index < 0 ? index + extent : index;
  if (i < 0 || i >= extent) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "index %lld is out of range for axis %d with extent %lld",
                     static_cast<long long>(index), static_cast<int>(axis),
                     static_cast<long long>(extent));
  }
  *position = i;
  return DLB_OK;
}

// Python's slice.indices(): the first index and the number of elements selected.
void resolve_slice(int64_t extent, int64_t start, int64_t stop, int64_t step, int64_t* first,
                   int64_t* length) {
  auto clamp = [extent](int64_t value, int64_t low, int64_t high) {
    if (value < 0) value = value + extent < low ? low : value + extent;
    return value > high ? high : value;
  };
  int64_t s, e;
  if (step > 0) {
    s = start == DLB_SLICE_NONE ? 0 : clamp(start, 0, extent);
    e = stop == DLB_SLICE_NONE ? extent : clamp(stop, 0, extent);
    *length = e > s ? (e - s - 1) / step + 1 : 0;
  } else {
    s = start == DLB_SLICE_NONE ? extent - 1 : clamp(start, -1, extent - 1);
    e = stop == DLB_SLICE_NONE ? -1 : clamp(stop, -1, extent - 1);
    *length = s > e ? (s - e - 1) / (-step) + 1 : 0;
  }
  *first = s;
}

}  // namespace

namespace dlb {

int apply_offset(const DLTensor* tensor, const Geometry& geometry, int64_t delta_elements,
                 void** data, uint64_t* byte_offset, dlb_error* error) {
  const int128 delta_bits = int128{delta_elements} * geometry.unit_bits;
  if (delta_bits % 8 != 0) {
    DTypeText name(tensor->dtype);
    return fail(error, DLB_ERR_LAYOUT,
                "a view of packed %s data must start on a byte boundary, not at bit %d of a byte",
                name.text, static_cast<int>(((delta_bits % 8) + 8) % 8));
  }
  const int128 offset = int128{tensor->byte_offset} + delta_bits / 8;
  *data = tensor->data;
  if (offset >= 0) {
    *byte_offset = static_cast<uint64_t>(offset);
    return DLB_OK;
  }
  // Only reachable through negative strides of a producer that put byte_offset at 0; an
  // address can absorb that, an opaque handle cannot.
  if (!is_pointer_addressable(tensor->device.device_type)) {
    DeviceTypeText name(tensor->device.device_type);
    return fail(error, DLB_ERR_LAYOUT, "a view of this %s tensor would start before its buffer",
                name.text);
  }
  // Validation guarantees that the tensor's memory does not wrap around the address space.
  *data = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(tensor->data) +
                                  static_cast<uintptr_t>(static_cast<int64_t>(offset)));
  *byte_offset = 0;
  return DLB_OK;
}

}  // namespace dlb

extern "C" {

DLB_API dlb_status dlb_tensor_slice(const DLManagedTensorVersioned* src, int32_t nslices,
                             const dlb_slice* slices, DLManagedTensorVersioned** out,
                             dlb_error* error) {
  dlb::Geometry g{};
  int status = check_source(src, out, &g, error);
  if (status != DLB_OK) return status;
  const DLTensor& t = src->dl_tensor;
  if (nslices < 0 || nslices > t.ndim) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "%d slices given for a tensor with %d dimensions", static_cast<int>(nslices),
                     static_cast<int>(t.ndim));
  }
  if (slices == nullptr && nslices > 0) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "slices is NULL");
  }
  int64_t shape[DLB_MAX_NDIM], strides[DLB_MAX_NDIM];
  if (t.ndim > 0) {
    std::memcpy(shape, t.shape, sizeof(int64_t) * static_cast<size_t>(t.ndim));
  }
  dlb_tensor_get_strides(&t, DLB_MAX_NDIM, strides, nullptr);
  int64_t delta = 0;
  bool empty = g.element_count == 0;
  for (int32_t d = 0; d < nslices; ++d) {
    const int64_t step = slices[d].step == DLB_SLICE_NONE ? 1 : slices[d].step;
    if (step == 0) {
      return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "slice step is 0 in dimension %d",
                       static_cast<int>(d));
    }
    int64_t first, length;
    resolve_slice(shape[d], slices[d].start, slices[d].stop, step, &first, &length);
    if (length == 0) empty = true;
    // An empty tensor touches no memory, so its strides are unchecked: never use them.
    if (length > 0 && g.element_count > 0) delta += first * strides[d];  // within the span
    // Within a non-empty tensor the new stride stays inside the validated reach; an empty
    // tensor keeps its (unchecked, meaningless) strides as they are.
    if (length > 1 && g.element_count > 0 &&
        __builtin_mul_overflow(strides[d], step, &strides[d])) {
      return dlb::fail(error, DLB_ERR_OVERFLOW, "stride of dimension %d overflows with step %lld",
                       static_cast<int>(d), static_cast<long long>(step));
    }
    shape[d] = length;
  }
  void* data;
  uint64_t byte_offset;
  status = dlb::apply_offset(&t, g, empty ? 0 : delta, &data, &byte_offset, error);
  if (status != DLB_OK) return status;
  return dlb::make_view(src, data, byte_offset, t.ndim, shape, strides, src->flags, out, error);
}

DLB_API dlb_status dlb_tensor_select(const DLManagedTensorVersioned* src, int32_t axis, int64_t index,
                              DLManagedTensorVersioned** out, dlb_error* error) {
  dlb::Geometry g{};
  int status = check_source(src, out, &g, error);
  if (status != DLB_OK) return status;
  const DLTensor& t = src->dl_tensor;
  const int32_t a = axis < 0 ? axis + t.ndim : axis;
  if (a < 0 || a >= t.ndim) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "axis %d is out of range for a tensor with %d dimensions",
                     static_cast<int>(axis), static_cast<int>(t.ndim));
  }
  int64_t i = 0;
  status = resolve_index(t, a, index, &i, error);
  if (status != DLB_OK) return status;
  int64_t strides[DLB_MAX_NDIM], shape[DLB_MAX_NDIM], new_strides[DLB_MAX_NDIM];
  dlb_tensor_get_strides(&t, DLB_MAX_NDIM, strides, nullptr);
  int32_t n = 0;
  for (int32_t d = 0; d < t.ndim; ++d) {
    if (d == a) continue;
    shape[n] = t.shape[d];
    new_strides[n] = strides[d];
    ++n;
  }
  void* data;
  uint64_t byte_offset;
  status = dlb::apply_offset(&t, g, g.element_count == 0 ? 0 : i * strides[a], &data,
                             &byte_offset, error);
  if (status != DLB_OK) return status;
  return dlb::make_view(src, data, byte_offset, n, shape, new_strides, src->flags, out, error);
}

}  // extern "C"

namespace {
// The address of the element at `index` of a validated tensor `t` (geometry `g`): the index
// count, then each index in range (negative ones count from the end).
int element_address(const DLTensor& t, const dlb::Geometry& g, int32_t nindex,
                    const int64_t* index, void** out_data, dlb_error* error) {
  if (nindex != t.ndim) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "%d indices given for a tensor with %d dimensions", static_cast<int>(nindex),
                     static_cast<int>(t.ndim));
  }
  if (index == nullptr && nindex > 0) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "index is NULL");
  }
  int64_t strides[DLB_MAX_NDIM];
  if (t.ndim > 0) dlb_tensor_get_strides(&t, DLB_MAX_NDIM, strides, nullptr);
  // Validation bounded every in-range element's bit position to int64, so no sum overflows.
  int64_t units = 0;
  for (int32_t d = 0; d < t.ndim; ++d) {
    int64_t position = 0;
    const int status = resolve_index(t, d, index[d], &position, error);
    if (status != DLB_OK) return status;
    units += position * strides[d];
  }
  *out_data = static_cast<char*>(t.data) + t.byte_offset +
              units * static_cast<int64_t>(g.unit_bits / 8);
  return DLB_OK;
}
}  // namespace

extern "C" {

DLB_API dlb_status dlb_tensor_element_data(const DLManagedTensorVersioned* tensor, int32_t nindex,
                                    const int64_t* index, int writable, void** out_data,
                                    dlb_error* error) {
  if (out_data == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out_data is NULL");
  *out_data = nullptr;
  if (tensor == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  const DLTensor& t = tensor->dl_tensor;
  dlb::Geometry g{};
  int status = dlb::validate_tensor(&t, tensor->flags, &g, error);
  if (status != DLB_OK) return status;
  if (nindex != t.ndim || (index == nullptr && nindex > 0)) {
    return element_address(t, g, nindex, index, out_data, error);  // its refusal
  }
  status = dlb::check_host_access(*tensor, writable, error);
  if (status != DLB_OK) return status;
  if (!dlb::has_byte_addresses(g)) return dlb::refuse_packed(t.dtype, error);
  return element_address(t, g, nindex, index, out_data, error);
}

DLB_API dlb_status dlb_tensor_typed_element(const DLManagedTensorVersioned* tensor,
                                            DLDataType dtype, uint32_t access, int32_t nindex,
                                            const int64_t* index, void** out_data,
                                            dlb_error* error) {
  if (out_data == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out_data is NULL");
  *out_data = nullptr;
  dlb::Geometry g{};
  const int status = dlb::check_typed_host_access(tensor, dtype, access, &g, error);
  if (status != DLB_OK) return status;
  return element_address(tensor->dl_tensor, g, nindex, index, out_data, error);
}

DLB_API dlb_status dlb_tensor_reshape(const DLManagedTensorVersioned* src, int32_t ndim, const int64_t* shape,
                               DLManagedTensorVersioned** out, dlb_error* error) {
  dlb::Geometry g{};
  int status = check_source(src, out, &g, error);
  if (status != DLB_OK) return status;
  const DLTensor& t = src->dl_tensor;
  status = dlb::check_rank(ndim, shape, error);
  if (status != DLB_OK) return status;
  // Resolve a -1 extent (counted as 1 until it is known).
  int64_t new_shape[DLB_MAX_NDIM];
  int32_t inferred = -1;
  for (int32_t d = 0; d < ndim; ++d) {
    new_shape[d] = shape[d];
    if (shape[d] == -1) {
      if (inferred >= 0) {
        dlb::DimsText text(ndim, shape);
        return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "shape %s has more than one -1 extent",
                         text.text);
      }
      inferred = d;
      new_shape[d] = 1;
    } else if (shape[d] < 0) {
      return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                       "shape[%d] is %lld; extents must not be negative", static_cast<int>(d),
                       static_cast<long long>(shape[d]));
    }
  }
  // The shape must exist by the rule validation uses (an extent 0 makes any other extents
  // fine) and hold as many elements as the source.
  int64_t known = 0;
  bool exists = dlb::shape_product(ndim, new_shape, &known);
  const int64_t count = g.element_count;
  if (inferred >= 0) {
    if (exists && known == 0) {
      dlb::DimsText text(ndim, shape);
      return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                       "cannot infer the -1 extent of shape %s: the other extents multiply to 0",
                       text.text);
    }
    if (count == 0 || (exists && count % known == 0)) {
      new_shape[inferred] = count == 0 ? 0 : count / known;
      exists = true;
      known = count;
    }
  }
  if (!exists || known != count) {
    dlb::DimsText text(ndim, shape);
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "cannot reshape %lld elements into shape %s",
                     static_cast<long long>(count), text.text);
  }

  int64_t new_strides[DLB_MAX_NDIM];
  if (count == 0 || dlb_tensor_is_c_contiguous(&t)) {
    dlb_compact_strides(ndim, new_shape, new_strides);
  } else {
    // Group old and new dimensions into runs with equal products; each old run must be
    // contiguous in itself, and then the new run's strides follow from its last stride.
    int64_t old_shape[DLB_MAX_NDIM], old_strides[DLB_MAX_NDIM], all_strides[DLB_MAX_NDIM];
    dlb_tensor_get_strides(&t, DLB_MAX_NDIM, all_strides, nullptr);
    int32_t old_ndim = 0;
    for (int32_t d = 0; d < t.ndim; ++d) {
      if (t.shape[d] == 1) continue;
      old_shape[old_ndim] = t.shape[d];
      old_strides[old_ndim] = all_strides[d];
      ++old_ndim;
    }
    int32_t oi = 0, oj = 1, ni = 0, nj = 1;
    bool possible = true;
    while (possible && ni < ndim && oi < old_ndim) {
      int64_t np = new_shape[ni], op = old_shape[oi];
      while (np != op) {
        if (np < op) np *= new_shape[nj++];
        else op *= old_shape[oj++];
      }
      for (int32_t k = oi; possible && k < oj - 1; ++k) {
        int64_t run_stride;
        possible = !__builtin_mul_overflow(old_shape[k + 1], old_strides[k + 1], &run_stride) &&
                   old_strides[k] == run_stride;
      }
      if (!possible) break;
      // Inside a contiguous run the new strides stay within the run's validated reach.
      new_strides[nj - 1] = old_strides[oj - 1];
      for (int32_t k = nj - 1; k > ni; --k) new_strides[k - 1] = new_strides[k] * new_shape[k];
      ni = nj++;
      oi = oj++;
    }
    if (!possible) {
      char text[DLB_ERROR_MESSAGE_SIZE];
      size_t pos = dlb::format_dims(text, sizeof(text), 0, t.ndim, t.shape);
      static const char kStrides[] = " and strides ";
      if (pos + sizeof(kStrides) < sizeof(text)) {
        std::memcpy(text + pos, kStrides, sizeof(kStrides));
        pos += sizeof(kStrides) - 1;
      }
      dlb::format_dims(text, sizeof(text), pos, t.ndim, all_strides);
      dlb::DimsText target(ndim, new_shape);
      return dlb::fail(error, DLB_ERR_LAYOUT,
                       "cannot reshape a tensor of shape %s into shape %s without copying", text,
                       target.text);
    }
    // Trailing extent-1 dimensions take any stride; use the last one (or 1).
    const int64_t last = ni > 0 ? new_strides[ni - 1] : 1;
    for (int32_t k = ni; k < ndim; ++k) new_strides[k] = last;
  }
  return dlb::make_view(src, t.data, t.byte_offset, ndim, new_shape, new_strides, src->flags, out,
                        error);
}

DLB_API dlb_status dlb_tensor_permute(const DLManagedTensorVersioned* src, int32_t naxes,
                               const int32_t* axes, DLManagedTensorVersioned** out,
                               dlb_error* error) {
  dlb::Geometry g{};
  int status = check_source(src, out, &g, error);
  if (status != DLB_OK) return status;
  const DLTensor& t = src->dl_tensor;
  if (naxes != t.ndim) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "permute needs %d axes, got %d",
                     static_cast<int>(t.ndim), static_cast<int>(naxes));
  }
  if (axes == nullptr && naxes > 0) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "axes is NULL");
  int64_t strides[DLB_MAX_NDIM], shape[DLB_MAX_NDIM], new_strides[DLB_MAX_NDIM];
  bool seen[DLB_MAX_NDIM] = {};
  dlb_tensor_get_strides(&t, DLB_MAX_NDIM, strides, nullptr);
  for (int32_t d = 0; d < naxes; ++d) {
    const int32_t a = axes[d] < 0 ? axes[d] + t.ndim : axes[d];
    if (a < 0 || a >= t.ndim) {
      return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                       "axis %d is out of range for a tensor with %d dimensions",
                       static_cast<int>(axes[d]), static_cast<int>(t.ndim));
    }
    if (seen[a]) {
      return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "axis %d appears twice in the permutation",
                       static_cast<int>(a));
    }
    seen[a] = true;
    shape[d] = t.shape[a];
    new_strides[d] = strides[a];
  }
  return dlb::make_view(src, t.data, t.byte_offset, t.ndim, shape, new_strides, src->flags, out,
                        error);
}

DLB_API dlb_status dlb_tensor_transpose(const DLManagedTensorVersioned* src, DLManagedTensorVersioned** out,
                                 dlb_error* error) {
  int32_t axes[DLB_MAX_NDIM];
  const int32_t ndim = src != nullptr && src->dl_tensor.ndim >= 0 && src->dl_tensor.ndim <= DLB_MAX_NDIM
                           ? src->dl_tensor.ndim
                           : 0;
  for (int32_t d = 0; d < ndim; ++d) axes[d] = ndim - 1 - d;
  // For a NULL or malformed tensor, permute reports the problem.
  return dlb_tensor_permute(src, src != nullptr ? src->dl_tensor.ndim : 0, axes, out, error);
}

}  // extern "C"
