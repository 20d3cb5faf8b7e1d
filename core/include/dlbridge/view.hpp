/*
 * dlbridge/view.hpp - typed element access on the host: BasicTensorView and its aliases
 * TensorView<T> and ConstTensorView<T> (made by Tensor::view<T>() and Tensor::cview<T>()).
 * Part of dlbridge/dlbridge.hpp, which includes it; including this header alone works too.
 */
#ifndef DLBRIDGE_VIEW_HPP_
#define DLBRIDGE_VIEW_HPP_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "dlbridge/dlbridge.h"
#include "dlbridge/error.hpp"

namespace dlbridge {

/* ========================================================================================== */
/* Typed views                                                                                */
/* ========================================================================================== */

class Tensor;

/* A typed, non-owning window on the elements of a host-readable tensor: element access that
 * honours shape, strides (negative ones included) and byte_offset, with every index checked.
 * E is the element type as accessed: T for TensorView<T>, const T for ConstTensorView<T>.
 *
 * Lifetime: a view holds a raw pointer into the tensor's memory and owns nothing. It must not
 * outlive the Tensor it was obtained from; more precisely, it stays valid while at least one
 * reference to that memory (the Tensor, a share, a zero-copy view Tensor) is alive. Moving a
 * Tensor object does not move its memory, so a view survives such moves; freeing the last
 * reference invalidates it, and using it after that is undefined behaviour.
 * A view keeps its own copy of the shape and strides (taken when it is made), so copying a view
 * costs one small allocation. Writes through views are not synchronised: concurrent writers to
 * the same elements need their own locking, as with any memory. */
template <class E>
class BasicTensorView {
 public:
  /* The element type as accessed (const T for a ConstTensorView), and without const. */
  using element_type = E;
  using value_type = std::remove_cv_t<E>;

  /* A mutable view converts to a const one. */
  template <class F, class = std::enable_if_t<std::is_const<E>::value &&
                                              std::is_same<const F, E>::value>>
  BasicTensorView(const BasicTensorView<F>& other)  // NOLINT(google-explicit-constructor)
      : base_(other.base_), ndim_(other.ndim_), dims_(other.dims_) {}

  /* Number of dimensions. */
  int32_t ndim() const noexcept { return ndim_; }

  /* Extent of dimension `axis` (0 <= axis < ndim()). Throws std::out_of_range otherwise. */
  int64_t shape(int32_t axis) const { return dims_[check_axis(axis)]; }

  /* Stride of dimension `axis` in elements. Throws std::out_of_range for a bad axis. */
  int64_t stride(int32_t axis) const {
    return dims_[static_cast<std::size_t>(ndim_) + check_axis(axis)];
  }

  /* Number of elements (1 for a scalar, 0 for an empty tensor). */
  int64_t size() const noexcept {
    int64_t n = 1;
    for (int32_t i = 0; i < ndim_; ++i) n *= dims_[static_cast<std::size_t>(i)];
    return n;
  }

  /* Pointer to the first element (data + byte_offset); may be NULL for an empty tensor. */
  E* data() const noexcept { return reinterpret_cast<E*>(base_); }

  /* The element at index {i, j, ...}: exactly ndim() indices, each -extent <= index < extent (a
   * negative one counts from the end). Throws Error (DLB_ERR_INVALID_ARGUMENT, the core's
   * message) for a wrong number of indices or an index out of range. at({}) reads a scalar. */
  E& at(std::initializer_list<int64_t> index) const {
    return *element(index.begin(), index.size());
  }

  /* The same as at() with the indices as arguments: view(i, j). Any integer types. */
  template <class... I>
  E& operator()(I... index) const {
    static_assert(std::conjunction<std::is_integral<I>...>::value,
                  "TensorView indices must be integers");
    const int64_t indices[sizeof...(I) + 1] = {static_cast<int64_t>(index)..., 0};
    return *element(indices, sizeof...(I));
  }

 private:
  friend class Tensor;
  template <class F>
  friend class BasicTensorView;

  explicit BasicTensorView(const DLTensor& tensor)
      : ndim_(tensor.ndim), dims_(static_cast<std::size_t>(tensor.ndim) * 2) {
    const auto n = static_cast<std::size_t>(ndim_);
    for (std::size_t i = 0; i < n; ++i) dims_[i] = tensor.shape[i];
    if (n != 0 && tensor.strides != nullptr) {
      for (std::size_t i = 0; i < n; ++i) dims_[n + i] = tensor.strides[i];
    } else if (n != 0) {
      dlb_compact_strides(ndim_, tensor.shape, dims_.data() + n);
    }
    if (tensor.data != nullptr) {
      base_ = static_cast<char*>(tensor.data) + tensor.byte_offset;
    }
  }

  std::size_t check_axis(int32_t axis) const {
    if (axis < 0 || axis >= ndim_) {
      throw std::out_of_range("axis " + std::to_string(axis) + " is out of range for a " +
                              std::to_string(ndim_) + "-dimensional view");
    }
    return static_cast<std::size_t>(axis);
  }

  E* element(const int64_t* index, std::size_t count) const {
    const auto n = static_cast<std::size_t>(ndim_);
    bool in_range = count == n;
    int64_t offset = 0;
    for (std::size_t i = 0; in_range && i < n; ++i) {
      // A negative index counts from the end, as everywhere in dlbridge (dlb_tensor_select).
      const int64_t position = index[i] < 0 ? index[i] + dims_[i] : index[i];
      in_range = position >= 0 && position < dims_[i];
      offset += position * dims_[n + i];
    }
    if (!in_range) refuse(index, count);
    return reinterpret_cast<E*>(base_ + offset * static_cast<int64_t>(sizeof(E)));
  }

  // The fast path above only tells in range from not; what is wrong, and in which words, is the
  // core's element check (dlb_tensor_element_data), asked about the same shape and index.
  [[noreturn]] void refuse(const int64_t* index, std::size_t count) const {
    std::vector<int64_t> dims(dims_);
    DLManagedTensorVersioned probe{};
    probe.version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    probe.dl_tensor.data = base_ != nullptr ? base_ : reinterpret_cast<char*>(&probe);
    probe.dl_tensor.device = DLDevice{kDLCPU, 0};
    probe.dl_tensor.ndim = ndim_;
    probe.dl_tensor.dtype = DLDataType{kDLUInt, 8, 1};
    probe.dl_tensor.shape = ndim_ > 0 ? dims.data() : nullptr;
    probe.dl_tensor.strides = ndim_ > 0 ? dims.data() + ndim_ : nullptr;
    void* address = nullptr;
    dlb_error error{};
    const int status = dlb_tensor_element_data(&probe, detail::clamp_count(count), index, 0,
                                               &address, &error);
    throw Error(status != DLB_OK ? status : DLB_ERR_INVALID_ARGUMENT,
                status != DLB_OK ? error.message : "index out of range");
  }

  char* base_ = nullptr;
  int32_t ndim_ = 0;
  std::vector<int64_t> dims_;  // shape, then strides in elements
};

/* A mutable typed view (from Tensor::view<T>()); the tensor must not be READ_ONLY. */
template <class T>
using TensorView = BasicTensorView<T>;

/* A read-only typed view (from Tensor::cview<T>()); works on READ_ONLY tensors. */
template <class T>
using ConstTensorView = BasicTensorView<const T>;

}  // namespace dlbridge

#endif  // DLBRIDGE_VIEW_HPP_
