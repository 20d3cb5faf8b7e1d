/*
 * dlbridge/tensor.hpp - dlbridge::Tensor, the move-only RAII owner of one
 * DLManagedTensorVersioned*: construction (allocate, wrap, from_vector), exchange with other
 * producers and consumers (import, import_legacy, from_raw, release, export_legacy), shares,
 * zero-copy views, copies, queries and typed element access.
 * Part of dlbridge/dlbridge.hpp, which includes it; including this header alone works too.
 */
#ifndef DLBRIDGE_TENSOR_HPP_
#define DLBRIDGE_TENSOR_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dlbridge/dlbridge.h"
#include "dlbridge/error.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/device.hpp"
#include "dlbridge/legacy.hpp"
#include "dlbridge/view.hpp"

namespace dlbridge {

/* ========================================================================================== */
/* Tensors                                                                                    */
/* ========================================================================================== */

/* A move-only RAII owner of one DLManagedTensorVersioned*. The destructor frees it with
 * dlb_tensor_free (its deleter runs exactly once); a moved-from or released Tensor is empty and
 * frees nothing. Copying the handle is deliberately impossible: share() makes a second
 * reference to the same memory explicitly.
 *
 * Const-ness is shallow, as for std::shared_ptr: a const Tensor& can still make shares and
 * views of the memory (they are new owners); only view<T>() (mutable element access) requires a
 * non-const Tensor. Every member except the noexcept ones throws Error when the Tensor is empty
 * (status DLB_ERR_CLOSED, message DLB_CLOSED_MESSAGE, "the tensor is closed"). */
class Tensor {
 public:
  /* An empty Tensor (owns nothing). */
  Tensor() noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  /* Moves ownership; `other` becomes empty. */
  Tensor(Tensor&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  /* Frees what this held, then takes over `other`'s tensor; `other` becomes empty. */
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) reset(std::exchange(other.ptr_, nullptr));
    return *this;
  }
  /* Frees the held tensor (if any) exactly once. */
  ~Tensor() { dlb_tensor_free(ptr_); }

  /* ---- construction ------------------------------------------------------------------- */

  /* Allocates an uninitialised tensor on `device` (dlb_tensor_allocate). `strides` (in
   * elements) empty means compact row-major; otherwise it must have one value per dimension
   * (else Error DLB_ERR_INVALID_ARGUMENT here). `flags` may hold READ_ONLY and
   * IS_SUBBYTE_TYPE_PADDED. Ownership: on success the returned Tensor owns the memory; on error
   * (Error with the core's message) nothing is allocated. */
  static Tensor allocate(Device device, DType dtype, const std::vector<int64_t>& shape,
                         const std::vector<int64_t>& strides = {}, uint64_t flags = 0) {
    if (!strides.empty() && strides.size() != shape.size()) {
      throw Error(DLB_ERR_INVALID_ARGUMENT, DLB_STRIDES_LENGTH_MESSAGE);
    }
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_allocate(device.dl(), dtype.dl(), detail::clamp_count(shape.size()),
                                      detail::data_or_null(shape),
                                      detail::data_or_null(strides), flags, &out, &error),
                  error);
    return from_raw(out);
  }

  /* allocate() in memory another process can map, so that a Channel can send it without a
   * copy (dlb_tensor_allocate_shareable): on the CPU a sealed memfd, on a CUDA device memory
   * exported for other processes (see docs/ipc.md); zero-filled. Other devices: Error
   * DLB_ERR_UNSUPPORTED; without a CUDA driver, Error DLB_ERR_DEVICE_UNAVAILABLE. Ownership: on
   * success the returned Tensor owns the memory (the segment lives on while another process
   * maps it); on error nothing is allocated or left open. */
  static Tensor allocate_shareable(Device device, DType dtype, const std::vector<int64_t>& shape,
                                   const std::vector<int64_t>& strides = {}, uint64_t flags = 0) {
    if (!strides.empty() && strides.size() != shape.size()) {
      throw Error(DLB_ERR_INVALID_ARGUMENT, DLB_STRIDES_LENGTH_MESSAGE);
    }
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_allocate_shareable(device.dl(), dtype.dl(),
                                                detail::clamp_count(shape.size()),
                                                detail::data_or_null(shape),
                                                detail::data_or_null(strides), flags, &out,
                                                &error),
                  error);
    return from_raw(out);
  }

  /* An uninitialised compact tensor of element type T (see allocate). */
  template <class T>
  static Tensor empty(const std::vector<int64_t>& shape, Device device = Device::cpu()) {
    return allocate(device, dtype_of<T>(), shape);
  }

  /* Wraps memory the caller owns, zero-copy (dlb_tensor_wrap): `desc` describes it (its shape
   * and strides arrays are copied and need only live for the call). Ownership: on success the
   * Tensor owns the memory, and release(release_ctx) runs exactly once, on whichever thread
   * frees the last reference; on error (Error thrown) release is NOT called and the caller
   * still owns the memory. */
  static Tensor wrap(const DLTensor& desc, uint64_t flags, dlb_release_fn release,
                     void* release_ctx) {
    return wrap_buffer(desc, UINT64_MAX, flags, release, release_ctx);
  }

  /* wrap() of memory of known extent: `buffer_size` bytes from desc.data, which every byte the
   * elements reach must lie in (dlb_tensor_wrap_buffer; Error with the core's message before
   * anything is built otherwise). Ownership as wrap(). */
  static Tensor wrap_buffer(const DLTensor& desc, uint64_t buffer_size, uint64_t flags,
                            dlb_release_fn release, void* release_ctx) {
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_wrap_buffer(&desc, buffer_size, flags, release, release_ctx, &out,
                                         &error),
                  error);
    return from_raw(out);
  }

  /* Wraps memory the caller owns with a C++ callable as its release: `on_release()` is called
   * exactly once when the last reference is freed, possibly on another thread, and is then
   * destroyed. It must not throw: it runs inside a noexcept trampoline, so an exception ends
   * the program with std::terminate. Ownership: on success the Tensor owns the memory and the
   * callable; on error (Error, or std::bad_alloc) the callable is destroyed without being
   * called and the caller still owns the memory. */
  template <class F, class = std::enable_if_t<std::is_invocable<std::decay_t<F>&>::value>>
  static Tensor wrap(const DLTensor& desc, uint64_t flags, F&& on_release) {
    using Fn = std::decay_t<F>;
    std::unique_ptr<Fn> holder(new Fn(std::forward<F>(on_release)));
    Tensor result = wrap(desc, flags, &run_release<Fn>, holder.get());
    holder.release();  // now owned by the tensor
    return result;
  }

  /* Moves a std::vector<T> into a new CPU tensor of shape `shape`, zero-copy: the vector's
   * buffer becomes the tensor's memory and the vector is destroyed when the last reference is
   * freed. The shape must not reach beyond the vector's elements (the core's buffer check,
   * dlb_tensor_wrap_buffer). Ownership: on success `values` is left empty (moved from); on
   * error (Error) `values` is left exactly as it was. */
  template <class T>
  static Tensor from_vector(std::vector<T>&& values, const std::vector<int64_t>& shape,
                            uint64_t flags = 0) {
    static_assert(!std::is_same<T, bool>::value,
                  "std::vector<bool> is not contiguous bytes: use std::vector<uint8_t>");
    auto* holder = new std::vector<T>(std::move(values));
    DLTensor desc{};
    desc.data = holder->data();
    desc.device = Device::cpu().dl();
    desc.ndim = detail::clamp_count(shape.size());
    desc.dtype = dtype_of<T>().dl();
    desc.shape = const_cast<int64_t*>(detail::data_or_null(shape));
    desc.strides = nullptr;
    desc.byte_offset = 0;
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    const int status = dlb_tensor_wrap_buffer(&desc, holder->size() * sizeof(T), flags,
                                              &delete_vector<T>, holder, &out, &error);
    if (status != DLB_OK) {
      values = std::move(*holder);
      delete holder;
      detail::check(status, error);
    }
    return from_raw(out);
  }

  /* from_vector() as a 1-D tensor of values.size() elements, without flags. (There is no
   * flags argument here on purpose: from_vector(v, {6}) must mean the shape (6), not flags 6.) */
  template <class T>
  static Tensor from_vector(std::vector<T>&& values) {
    const std::vector<int64_t> shape{static_cast<int64_t>(values.size())};
    return from_vector(std::move(values), shape);
  }

  /* Imports a versioned tensor from any producer, validating it (dlb_tensor_import).
   * Ownership: `src` is consumed in every case: on success the Tensor owns it; on error
   * (Error with the core's message) src's deleter has already been called. */
  static Tensor import(DLManagedTensorVersioned* src) {
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_import(src, &out, &error), error);
    return from_raw(out);
  }

  /* Imports a legacy DLManagedTensor (dlb_tensor_import_legacy); the result has no flags.
   * Ownership: `src` is consumed in every case: on success the Tensor owns it (its deleter runs
   * when the last reference is freed); on error its deleter has already been called. */
  static Tensor import_legacy(DLManagedTensor* src) {
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_import_legacy(src, &out, &error), error);
    return from_raw(out);
  }

  /* import_legacy() of the tensor `src` holds; `src` is left empty in every case. */
  static Tensor import_legacy(LegacyTensor&& src) { return import_legacy(src.release()); }

  /* Takes ownership of a raw versioned tensor without validating it (NULL gives an empty
   * Tensor). Meant for tensors from the dlbridge C API or already imported; use import() for
   * a foreign producer's tensor (operations such as share() and the views need a dlbridge
   * tensor). The Tensor frees it with dlb_tensor_free. */
  static Tensor from_raw(DLManagedTensorVersioned* tensor) noexcept {
    Tensor result;
    result.ptr_ = tensor;
    return result;
  }

  /* ---- ownership ---------------------------------------------------------------------- */

  /* Gives up ownership ("into_raw"): returns the raw pointer (NULL if empty) and leaves this
   * Tensor empty. The caller, or the consumer it hands the pointer to, must then free it
   * exactly once (dlb_tensor_free or its deleter). */
  DLManagedTensorVersioned* release() noexcept { return std::exchange(ptr_, nullptr); }

  /* Frees the held tensor (if any) and takes ownership of `tensor` (may be NULL). */
  void reset(DLManagedTensorVersioned* tensor = nullptr) noexcept {
    DLManagedTensorVersioned* old = std::exchange(ptr_, tensor);
    dlb_tensor_free(old);
  }

  /* The raw pointer, still owned by this Tensor (NULL if empty). */
  DLManagedTensorVersioned* get() const noexcept { return ptr_; }

  /* True unless empty. */
  explicit operator bool() const noexcept { return ptr_ != nullptr; }

  /* Exports as a legacy DLManagedTensor for a consumer that only speaks DLPack < 1.0
   * (dlb_tensor_export_legacy); call it on an rvalue: std::move(t).export_legacy().
   * Ownership: on success the tensor moves into the returned LegacyTensor (free it by letting
   * it go out of scope, or release() the raw pointer to the consumer, which calls its deleter
   * once) and this Tensor is empty. On error (Error: DLB_ERR_READ_ONLY for a READ_ONLY tensor,
   * DLB_ERR_UNSUPPORTED for padded sub-byte data) this Tensor still owns its tensor. */
  LegacyTensor export_legacy() && {
    DLManagedTensor* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_export_legacy(require(), &out, &error), error);
    ptr_ = nullptr;  // moved into `out`
    return LegacyTensor::from_raw(out);
  }

  /* A new reference to the same memory (dlb_tensor_share) with its own shape and strides;
   * `add_flags` may add READ_ONLY. The memory lives until the last reference is freed. Needs a
   * dlbridge tensor. Ownership: this Tensor is unchanged; the caller owns the result. */
  Tensor share(uint64_t add_flags = 0) const {
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_share(require(), add_flags, &out, &error), error);
    return from_raw(out);
  }

  /* ---- zero-copy views (each result is a new owner that keeps the memory alive on its own,
   * so it may outlive this Tensor; flags carry over; Error with the core's message on failure,
   * with nothing allocated) ---------------------------------------------------------------- */

  /* Slices the first slices.size() dimensions with Python semantics (dlb_tensor_slice); see
   * dlbridge::range() and dlbridge::all(). */
  Tensor slice(const std::vector<dlb_slice>& slices) const {
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_slice(require(), detail::clamp_count(slices.size()),
                                   detail::data_or_null(slices), &out, &error),
                  error);
    return from_raw(out);
  }

  /* x[..., index, ...] along `axis`, removing that dimension (dlb_tensor_select); negative
   * axis and index count from the end. */
  Tensor select(int32_t axis, int64_t index) const {
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_select(require(), axis, index, &out, &error), error);
    return from_raw(out);
  }

  /* A view with a new shape and the same element count; one extent may be -1
   * (dlb_tensor_reshape). Error DLB_ERR_LAYOUT when the strides cannot express it. */
  Tensor reshape(const std::vector<int64_t>& shape) const {
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_reshape(require(), detail::clamp_count(shape.size()),
                                     detail::data_or_null(shape), &out, &error),
                  error);
    return from_raw(out);
  }

  /* Dimension i of the view is dimension axes[i] of this tensor (dlb_tensor_permute). */
  Tensor permute(const std::vector<int32_t>& axes) const {
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_permute(require(), detail::clamp_count(axes.size()),
                                     detail::data_or_null(axes), &out, &error),
                  error);
    return from_raw(out);
  }

  /* The dimensions in reverse order (dlb_tensor_transpose). */
  Tensor transpose() const {
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_transpose(require(), &out, &error), error);
    return from_raw(out);
  }

  /* ---- copies ------------------------------------------------------------------------- */

  /* A compact row-major copy on `device` (dlb_tensor_copy), flagged IS_COPIED and writable.
   * With a `stream` (a cudaStream_t, a cl_command_queue, ...) the copy is only queued on it
   * (dlb_tensor_copy_async): keep this tensor alive and synchronise before reading the result.
   * Ownership: this Tensor is borrowed; the caller owns the result. */
  Tensor copy(Device device = Device::cpu(), void* stream = nullptr) const {
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_tensor_copy_async(require(), device.dl(), stream, &out, &error), error);
    return from_raw(out);
  }

  /* Copies this tensor's elements into `dst` (same shape and dtype, any strides)
   * (dlb_tensor_copy_into; queued on `stream` when given: dlb_tensor_copy_into_async). Error
   * DLB_ERR_READ_ONLY when dst is READ_ONLY, DLB_ERR_INVALID_ARGUMENT on a shape or dtype
   * mismatch. Both are borrowed. */
  void copy_into(Tensor& dst, void* stream = nullptr) const {
    dlb_error error{};
    detail::check(dlb_tensor_copy_into_async(require(), dst.require(), stream, &error), error);
  }

  /* The elements, whatever the layout and device, copied into a new vector in C order
   * (dlb_tensor_copy_to_host). Error when dtype_of<T>() is not the tensor's dtype (the core's
   * message). Ownership: this Tensor is borrowed; the vector is the caller's. */
  template <class T>
  std::vector<T> to_vector() const {
    static_assert(!std::is_same<T, bool>::value, "use to_vector<uint8_t>() for bool tensors");
    std::vector<T> out(static_cast<std::size_t>(numel()));
    dlb_error error{};
    detail::check(dlb_tensor_copy_to_host(require(), dtype_of<T>().dl(), out.data(),
                                          out.size() * sizeof(T), &error),
                  error);
    return out;
  }

  /* Copies `count` C-ordered values of T into this tensor, whatever its layout and device
   * (dlb_tensor_copy_from_host): exactly numel() of them, of the tensor's dtype, into a tensor
   * that is not READ_ONLY (else Error with the core's message). Both are borrowed. */
  template <class T>
  void copy_from(const T* values, std::size_t count) {
    dlb_error error{};
    detail::check(dlb_tensor_copy_from_host(require(), dtype_of<T>().dl(), values,
                                            count * sizeof(T), &error),
                  error);
  }

  /* copy_from() of a vector's elements. */
  template <class T>
  void copy_from(const std::vector<T>& values) {
    static_assert(!std::is_same<T, bool>::value, "use a std::vector<uint8_t> for bool tensors");
    copy_from(values.data(), values.size());
  }

  /* ---- queries ------------------------------------------------------------------------ */

  /* The described memory (data, device, ndim, dtype, shape, strides, byte_offset). The
   * reference is valid while this Tensor holds the tensor. */
  const DLTensor& dl_tensor() const { return require()->dl_tensor; }

  /* Number of dimensions. */
  int32_t ndim() const { return dl_tensor().ndim; }

  /* The extents, copied into a vector (use shape(axis) to read one without allocating). */
  std::vector<int64_t> shape() const {
    const DLTensor& t = dl_tensor();
    const std::size_t n = checked_ndim(t);
    return n == 0 ? std::vector<int64_t>() : std::vector<int64_t>(t.shape, t.shape + n);
  }

  /* The extent of one dimension (0 <= axis < ndim(); std::out_of_range otherwise). */
  int64_t shape(int32_t axis) const { return dl_tensor().shape[check_axis(axis)]; }

  /* The strides in elements, copied into a vector; compact row-major strides are synthesised
   * when the tensor's strides pointer is NULL (a foreign tensor taken with from_raw). */
  std::vector<int64_t> strides() const {
    const DLTensor& t = dl_tensor();
    std::vector<int64_t> out(checked_ndim(t));
    if (out.empty()) return out;
    dlb_error error{};
    detail::check(dlb_tensor_get_strides(&t, t.ndim, out.data(), &error), error);
    return out;
  }

  /* The stride of one dimension in elements (std::out_of_range for a bad axis). */
  int64_t stride(int32_t axis) const {
    const DLTensor& t = dl_tensor();
    const std::size_t i = check_axis(axis);
    return t.strides != nullptr ? t.strides[i] : strides()[i];
  }

  /* Number of elements (1 for a scalar) (dlb_tensor_element_count). */
  int64_t numel() const {
    int64_t out = 0;
    dlb_error error{};
    detail::check(dlb_tensor_element_count(&dl_tensor(), &out, &error), error);
    return out;
  }

  /* Bytes the elements take stored compactly, packed-aware (dlb_tensor_byte_size). */
  uint64_t byte_size() const {
    uint64_t out = 0;
    dlb_error error{};
    detail::check(dlb_tensor_byte_size(&dl_tensor(), flags(), &out, &error), error);
    return out;
  }

  /* The element type. */
  DType dtype() const { return DType(dl_tensor().dtype); }

  /* The device holding the memory. */
  Device device() const { return Device(dl_tensor().device); }

  /* The DLPack flags (DLPACK_FLAG_BITMASK_*). */
  uint64_t flags() const { return require()->flags; }

  /* True if the tensor carries READ_ONLY. */
  bool read_only() const { return dlb_tensor_is_read_only(require()) != 0; }

  /* True if the elements are in C order without gaps (dlb_tensor_is_c_contiguous). */
  bool is_c_contiguous() const { return dlb_tensor_is_c_contiguous(&dl_tensor()) != 0; }

  /* True if the elements are in Fortran order without gaps. */
  bool is_f_contiguous() const { return dlb_tensor_is_f_contiguous(&dl_tensor()) != 0; }

  /* True if the host CPU can read the memory. */
  bool host_readable() const { return dlb_tensor_is_host_readable(&dl_tensor()) != 0; }

  /* The raw `data` field: the start of the allocation, or an opaque handle on devices such as
   * OpenCL. It does NOT include byte_offset: the first element is at data() + byte_offset()
   * (for host memory, view<T>().data() gives that pointer). Owned by the tensor. */
  void* data() const { return dl_tensor().data; }

  /* Offset in bytes of the first element from data(). */
  uint64_t byte_offset() const { return dl_tensor().byte_offset; }

  /* True if the memory is shareable: made by allocate_shareable(), received from a Channel,
   * or a view or share of one of those (dlb_tensor_is_shareable). */
  bool is_shareable() const noexcept { return dlb_tensor_is_shareable(ptr_) != 0; }

  /* Which kind of shareable memory the tensor is over: DLB_SHAREABLE_NONE (also for an empty
   * Tensor), DLB_SHAREABLE_MEMFD, DLB_SHAREABLE_CUDA_FD or DLB_SHAREABLE_CUDA_IPC
   * (dlb_tensor_shareable_kind; docs/ipc.md says what each kind's lifetime rule is). */
  int shareable_kind() const noexcept { return dlb_tensor_shareable_kind(ptr_); }

  /* The receiving half of Channel::send_cuda() (dlb_cuda_wait_received): work queued on
   * `consumer_stream` afterwards waits for the sender's work before its send, without blocking
   * the host. `consumer_stream` follows the DLPack convention (cuda::kStreamNone or 1: legacy
   * default stream; 2: per-thread default; -1: nothing is done; else a cudaStream_t of the
   * tensor's device). The tensor must be CUDA memory received from a Channel (or a view or
   * share of one): Error DLB_ERR_INVALID_ARGUMENT otherwise; DLB_ERR_UNSUPPORTED in a library
   * built without CUDA. Nothing is done when the sender attached no event (Channel::send). */
  void cuda_wait_received(int64_t consumer_stream = DLB_CUDA_STREAM_NONE) const {
    dlb_error error{};
    detail::check(dlb_cuda_wait_received(require(), consumer_stream, &error), error);
  }

  /* True if the tensor was made by this library (dlb_tensor_is_dlbridge). */
  bool is_dlbridge() const noexcept { return ptr_ != nullptr && dlb_tensor_is_dlbridge(ptr_) != 0; }

  /* ---- typed element access ----------------------------------------------------------- */

  /* A mutable typed view of the elements, any strides. Throws Error with the core's status and
   * message (dlb_tensor_host_elements) when the tensor is malformed (possible only for one taken
   * with from_raw), when dtype_of<T>() is not its dtype, when its elements are packed below a
   * byte, when it is READ_ONLY (use cview<T>()) or when its memory is not host-readable (copy()
   * it to the CPU first); DLB_ERR_CLOSED when this Tensor is empty. The view must not outlive
   * the memory (see BasicTensorView). */
  template <class T>
  TensorView<T> view() {
    static_assert(!std::is_const<T>::value, "use cview<T>() for const access");
    check_view(dtype_of<T>(), DLB_ACCESS_WRITE);
    return TensorView<T>(dl_tensor());
  }

  /* A read-only typed view; the same checks as view<T>() except READ_ONLY, which is allowed. */
  template <class T>
  ConstTensorView<T> cview() const {
    check_view(dtype_of<T>(), DLB_ACCESS_READ);
    return ConstTensorView<T>(dl_tensor());
  }

  /* Exchanges the held tensors. */
  void swap(Tensor& other) noexcept { std::swap(ptr_, other.ptr_); }

 private:
  // An empty Tensor was released, moved from or reset: the closed-object error every binding
  // reports.
  DLManagedTensorVersioned* require() const {
    if (ptr_ == nullptr) throw Error(DLB_ERR_CLOSED, DLB_CLOSED_MESSAGE);
    return ptr_;
  }

  // ndim as a size, after checking that ndim and the shape pointer are usable (a tensor taken
  // with from_raw is not validated): throws the core's message for a malformed one.
  static std::size_t checked_ndim(const DLTensor& t) {
    if (t.ndim < 0 || t.ndim > DLB_MAX_NDIM || (t.ndim > 0 && t.shape == nullptr)) {
      int64_t count = 0;
      dlb_error error{};
      detail::check(dlb_tensor_element_count(&t, &count, &error), error);
    }
    return static_cast<std::size_t>(t.ndim);
  }

  std::size_t check_axis(int32_t axis) const {
    const auto n = static_cast<int32_t>(checked_ndim(dl_tensor()));
    if (axis < 0 || axis >= n) {
      throw std::out_of_range("axis " + std::to_string(axis) + " is out of range for a " +
                              std::to_string(n) + "-dimensional tensor");
    }
    return static_cast<std::size_t>(axis);
  }

  // The core's typed-access check (dlb_tensor_host_elements) for a strided view: validation,
  // so that every in-range index lands inside the tensor's memory even for a tensor taken with
  // from_raw; the dtype; host-readable memory; READ_ONLY for a mutable view.
  void check_view(DType wanted, uint32_t access) const {
    void* data = nullptr;
    int64_t count = 0;
    dlb_error error{};
    detail::check(dlb_tensor_host_elements(require(), wanted.dl(), access | DLB_ACCESS_ANY_LAYOUT,
                                           &data, &count, &error),
                  error);
  }

  template <class Fn>
  static void run_release(void* ctx) noexcept {
    std::unique_ptr<Fn> fn(static_cast<Fn*>(ctx));
    (*fn)();
  }

  template <class T>
  static void delete_vector(void* ctx) noexcept {
    delete static_cast<std::vector<T>*>(ctx);
  }

  DLManagedTensorVersioned* ptr_ = nullptr;
};

/* Exchanges two Tensors. */
inline void swap(Tensor& a, Tensor& b) noexcept { a.swap(b); }

}  // namespace dlbridge

#endif  // DLBRIDGE_TENSOR_HPP_
