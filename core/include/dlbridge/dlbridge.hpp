/*
 * dlbridge.hpp - header-only C++17 helpers over the dlbridge C API (dlbridge.h).
 *
 * What this layer adds to the C API, and nothing more:
 *  - RAII: dlbridge::Tensor owns one DLManagedTensorVersioned* and frees it exactly once (with
 *    dlb_tensor_free) when it is destroyed; dlbridge::LegacyTensor does the same for a legacy
 *    DLManagedTensor*. Both are move-only; a moved-from object is empty and frees nothing.
 *  - Exceptions instead of status codes, on the caller's side only: every C call is made with a
 *    dlb_error, and a status other than DLB_OK becomes a dlbridge::Error carrying that status and
 *    the core's message verbatim. The C functions never throw; callbacks this header hands to the
 *    C library (release trampolines) are noexcept, so no exception ever crosses the C boundary.
 *  - Value types for dtypes and devices (DType, Device) that stay open: any integer code is
 *    representable, so a tensor from a newer producer never becomes undefined behaviour.
 *  - Typed, bounds-checked element access on the host (TensorView<T>, ConstTensorView<T>).
 *  - Channels between processes (dlbridge::Listener, dlbridge::Channel: move-only owners that
 *    close in their destructor), in dlbridge/channel.hpp, which this header includes.
 *
 * Ownership rules follow the C API one for one, and each function below restates its own:
 * a function that "consumes" a raw pointer takes it over whether it succeeds or throws; a
 * function that "borrows" leaves ownership where it was.
 *
 * Thread safety: one Tensor object must not be used from two threads at once without external
 * synchronisation (like any C++ object); distinct Tensor objects, including shares and views of
 * the same memory, may be used and destroyed on any threads.
 *
 * Requires C++17 and exceptions. Link with the dlbridge library.
 */
#ifndef DLBRIDGE_DLBRIDGE_HPP_
#define DLBRIDGE_DLBRIDGE_HPP_

#include <complex>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dlbridge/dlbridge.h"

namespace dlbridge {

/* ========================================================================================== */
/* Errors                                                                                     */
/* ========================================================================================== */

/* The exception thrown when a dlbridge C call fails, or when this header refuses an operation
 * for the same kind of reason (dtype mismatch in view<T>(), write access to a READ_ONLY tensor,
 * use of an empty Tensor). status() is one of the DLB_ERR_* codes; what() is the message, which
 * for a failed C call is exactly the text the core wrote into its dlb_error. */
class Error : public std::runtime_error {
 public:
  /* Makes an error with a DLB_ERR_* status and a message (copied). */
  Error(int status, const std::string& message) : std::runtime_error(message), status_(status) {}

  /* The DLB_ERR_* status code. */
  int status() const noexcept { return status_; }

  /* The status as a static string such as "DLB_ERR_READ_ONLY" (dlb_status_name); do not free. */
  const char* status_name() const noexcept { return dlb_status_name(status_); }

 private:
  int status_;
};

namespace detail {

/* The one place where a C status becomes an exception: throws Error(status, error.message)
 * unless status is DLB_OK. `error` must be the dlb_error passed to the call that returned
 * `status`. */
inline void check(int status, const dlb_error& error) {
  if (status != DLB_OK) throw Error(status, error.message);
}

/* Counts passed to the C API are int32_t. A count that does not fit is clamped to INT32_MAX,
 * which every function refuses (it exceeds DLB_MAX_NDIM) before reading the array. */
inline int32_t clamp_count(std::size_t count) noexcept {
  constexpr auto kMax = static_cast<std::size_t>(std::numeric_limits<int32_t>::max());
  return static_cast<int32_t>(count > kMax ? kMax : count);
}

/* "(2, 3)", the way the core renders shapes in its messages. */
inline std::string format_dims(const std::vector<int64_t>& dims) {
  std::string text = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + ")";
}

/* A pointer to an array the C API may read, or NULL for an empty vector. */
template <class T>
const T* data_or_null(const std::vector<T>& values) noexcept {
  return values.empty() ? nullptr : values.data();
}

}  // namespace detail

/* ========================================================================================== */
/* Data types                                                                                 */
/* ========================================================================================== */

/* An element type: a value type over DLDataType. The fields are plain integers, never a closed
 * enum, so a dtype code this library does not know (from a newer producer) stays representable;
 * valid()/validate() tell whether the library understands it. Nothing here allocates except
 * name()/to_string(), which return std::string. */
struct DType {
  /* DLDataTypeCode value (kDLInt, kDLFloat, ...), or any other code. */
  uint8_t code = 0;
  /* Bits of one lane. */
  uint8_t bits = 0;
  /* Number of lanes (1 for scalars; 4 for float32x4). */
  uint16_t lanes = 0;

  /* An all-zero (invalid) dtype: code 0, bits 0, lanes 0. */
  constexpr DType() noexcept = default;
  /* A dtype from its three fields; lanes defaults to 1. */
  constexpr DType(uint8_t code_, uint8_t bits_, uint16_t lanes_ = 1) noexcept
      : code(code_), bits(bits_), lanes(lanes_) {}
  /* Implicit conversion from the C struct (every value representable). */
  constexpr DType(DLDataType dtype) noexcept  // NOLINT(google-explicit-constructor)
      : code(dtype.code), bits(dtype.bits), lanes(dtype.lanes) {}

  /* The C struct. */
  constexpr DLDataType dl() const noexcept { return DLDataType{code, bits, lanes}; }

  /* Parses a dtype name ("float32", "int4", "float32x4", "float8_e4m3fn", ...; see
   * dlb_dtype_parse). Throws Error (DLB_ERR_INVALID_ARGUMENT) with the core's message, which
   * quotes the name, if it is not one. */
  static DType parse(const std::string& name) {
    DLDataType out{0, 0, 0};
    dlb_error error{};
    detail::check(dlb_dtype_parse(name.c_str(), &out, &error), error);
    return DType(out);
  }

  /* The canonical name ("float32", "int8x4"), the inverse of parse(). Throws Error for a dtype
   * the library does not understand (unknown code, illegal bits, zero lanes). */
  std::string name() const {
    char buffer[DLB_DTYPE_NAME_SIZE];
    dlb_error error{};
    detail::check(dlb_dtype_format(dl(), buffer, sizeof(buffer), &error), error);
    return buffer;
  }

  /* name() when the dtype is valid, otherwise "dtype(code=C, bits=B, lanes=L)". Never throws
   * Error (only std::bad_alloc); meant for messages and logging. */
  std::string to_string() const {
    char buffer[DLB_DTYPE_NAME_SIZE];
    if (dlb_dtype_format(dl(), buffer, sizeof(buffer), nullptr) == DLB_OK) return buffer;
    return "dtype(code=" + std::to_string(code) + ", bits=" + std::to_string(bits) +
           ", lanes=" + std::to_string(lanes) + ")";
  }

  /* True if the library understands this dtype (dlb_dtype_validate). */
  bool valid() const noexcept { return dlb_dtype_validate(dl(), nullptr) == DLB_OK; }

  /* Throws Error with the core's message unless the dtype is valid. */
  void validate() const {
    dlb_error error{};
    detail::check(dlb_dtype_validate(dl(), &error), error);
  }

  /* Bytes one element occupies on its own: ceil(bits * lanes / 8) (dlb_dtype_element_size). */
  uint64_t element_size() const noexcept { return dlb_dtype_element_size(dl()); }

  /* Bits of one element: bits * lanes. */
  uint32_t element_bits() const noexcept { return dlb_dtype_element_bits(dl()); }

  /* True when a lane is narrower than a byte (packed unless the tensor is flagged padded). */
  bool is_subbyte() const noexcept { return dlb_dtype_is_subbyte(dl()) != 0; }

  /* The same dtype with another lane count (float32 -> float32x4). */
  constexpr DType with_lanes(uint16_t lanes_) const noexcept { return DType(code, bits, lanes_); }

  /* Factories for the common dtypes. */
  static constexpr DType int8() noexcept { return DType(kDLInt, 8); }
  static constexpr DType int16() noexcept { return DType(kDLInt, 16); }
  static constexpr DType int32() noexcept { return DType(kDLInt, 32); }
  static constexpr DType int64() noexcept { return DType(kDLInt, 64); }
  static constexpr DType uint8() noexcept { return DType(kDLUInt, 8); }
  static constexpr DType uint16() noexcept { return DType(kDLUInt, 16); }
  static constexpr DType uint32() noexcept { return DType(kDLUInt, 32); }
  static constexpr DType uint64() noexcept { return DType(kDLUInt, 64); }
  static constexpr DType float16() noexcept { return DType(kDLFloat, 16); }
  static constexpr DType float32() noexcept { return DType(kDLFloat, 32); }
  static constexpr DType float64() noexcept { return DType(kDLFloat, 64); }
  static constexpr DType bfloat16() noexcept { return DType(kDLBfloat, 16); }
  static constexpr DType complex64() noexcept { return DType(kDLComplex, 64); }
  static constexpr DType complex128() noexcept { return DType(kDLComplex, 128); }
  /* bool: code kDLBool, 8 bits (one byte per element). */
  static constexpr DType boolean() noexcept { return DType(kDLBool, 8); }
  /* A pointer-sized opaque handle (handle64). */
  static constexpr DType handle() noexcept { return DType(kDLOpaqueHandle, 64); }

  /* Field-wise comparison. */
  friend constexpr bool operator==(DType a, DType b) noexcept {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
  }
  friend constexpr bool operator!=(DType a, DType b) noexcept { return !(a == b); }

  /* Writes to_string(). */
  friend std::ostream& operator<<(std::ostream& os, DType dtype) {
    return os << dtype.to_string();
  }
};

/* The dtype of a C++ element type. The primary template marks a type as unsupported
 * (supported == false, no `value`); specialisations give `value`. Supported out of the box:
 * float (float32), double (float64), bool (bool, one byte), std::complex<float> (complex64),
 * std::complex<double> (complex128), and every signed and unsigned integer type other than the
 * character types (int8_t..int64_t -> int8..int64, uint8_t..uint64_t -> uint8..uint64, and
 * long long / unsigned long long where they are distinct types). The character types (char,
 * wchar_t, char16_t, char32_t) are deliberately unsupported. A program may specialise it for its
 * own element types (a half-precision struct, for instance) by defining `supported = true` and
 * `value`; sizeof(T) must then equal value.element_size(). */
template <class T, class Enable = void>
struct dtype_traits {
  /* False: T has no DLPack dtype (a specialisation that gives `value` sets it to true). */
  static constexpr bool supported = false;
};

/* float is float32. */
template <>
struct dtype_traits<float> {
  static_assert(sizeof(float) == 4, "float must be IEEE binary32");
  static constexpr bool supported = true;
  static constexpr DType value = DType::float32();
};

/* double is float64. */
template <>
struct dtype_traits<double> {
  static_assert(sizeof(double) == 8, "double must be IEEE binary64");
  static constexpr bool supported = true;
  static constexpr DType value = DType::float64();
};

/* bool is DLPack's bool, one byte per element. */
template <>
struct dtype_traits<bool> {
  static_assert(sizeof(bool) == 1, "DLPack bool is one byte: C++ bool must be one byte too");
  static constexpr bool supported = true;
  static constexpr DType value = DType::boolean();
};

/* std::complex<float> is complex64. */
template <>
struct dtype_traits<std::complex<float>> {
  static_assert(sizeof(std::complex<float>) == 8, "complex64 is two packed float32");
  static constexpr bool supported = true;
  static constexpr DType value = DType::complex64();
};

/* std::complex<double> is complex128. */
template <>
struct dtype_traits<std::complex<double>> {
  static_assert(sizeof(std::complex<double>) == 16, "complex128 is two packed float64");
  static constexpr bool supported = true;
  static constexpr DType value = DType::complex128();
};

namespace detail {
/* True for the character types (char, wchar_t, char16_t, char32_t), which have no dtype. */
template <class T>
struct is_character
    : std::integral_constant<bool, std::is_same<T, char>::value ||
                                       std::is_same<T, wchar_t>::value ||
                                       std::is_same<T, char16_t>::value ||
                                       std::is_same<T, char32_t>::value> {};
}  // namespace detail

/* Every integer type other than bool and the character types: intN/uintN of its size. */
template <class T>
struct dtype_traits<T, std::enable_if_t<std::is_integral<T>::value && !std::is_same<T, bool>::value &&
                                        !detail::is_character<T>::value>> {
  static constexpr bool supported = true;
  static constexpr DType value =
      DType(std::is_signed<T>::value ? kDLInt : kDLUInt, static_cast<uint8_t>(sizeof(T) * 8));
};

/* The dtype of T (cv-qualifiers ignored). Does not compile for an unsupported T. */
template <class T>
constexpr DType dtype_of() noexcept {
  using U = std::remove_cv_t<T>;
  static_assert(dtype_traits<U>::supported,
                "dlbridge::dtype_of<T>: T has no DLPack dtype (specialise dlbridge::dtype_traits)");
  return dtype_traits<U>::value;
}

/* ========================================================================================== */
/* Devices                                                                                    */
/* ========================================================================================== */

/* A device: a value type over DLDevice. `type` is a plain int32_t, so device types this library
 * does not name (a newer producer's, or a plug-in's) stay representable. Nothing allocates
 * except name(). */
struct Device {
  /* DLDeviceType value (kDLCPU, kDLCUDA, ...) or any other type. */
  int32_t type = kDLCPU;
  /* The ordinal of the device of that type (0 for CPU, pinned and managed memory). */
  int32_t id = 0;

  /* The CPU. */
  constexpr Device() noexcept = default;
  /* A device from its type and ordinal. */
  constexpr Device(int32_t type_, int32_t id_) noexcept : type(type_), id(id_) {}
  /* Implicit conversion from the C struct. */
  constexpr Device(DLDevice device) noexcept  // NOLINT(google-explicit-constructor)
      : type(static_cast<int32_t>(device.device_type)), id(device.device_id) {}

  /* The C struct. */
  constexpr DLDevice dl() const noexcept {
    return DLDevice{static_cast<DLDeviceType>(type), id};
  }

  /* Factories for the common devices: the CPU, and device `id_` of a device type. */
  static constexpr Device cpu() noexcept { return Device(kDLCPU, 0); }
  static constexpr Device cuda(int32_t id_ = 0) noexcept { return Device(kDLCUDA, id_); }
  /* CUDA pinned host memory (host-readable). */
  static constexpr Device cuda_host() noexcept { return Device(kDLCUDAHost, 0); }
  /* CUDA managed (unified) memory (host-readable). */
  static constexpr Device cuda_managed() noexcept { return Device(kDLCUDAManaged, 0); }
  static constexpr Device opencl(int32_t id_ = 0) noexcept { return Device(kDLOpenCL, id_); }
  static constexpr Device vulkan(int32_t id_ = 0) noexcept { return Device(kDLVulkan, id_); }
  static constexpr Device metal(int32_t id_ = 0) noexcept { return Device(kDLMetal, id_); }
  static constexpr Device rocm(int32_t id_ = 0) noexcept { return Device(kDLROCM, id_); }
  /* ROCm pinned host memory (host-readable). */
  static constexpr Device rocm_host() noexcept { return Device(kDLROCMHost, 0); }
  static constexpr Device oneapi(int32_t id_ = 0) noexcept { return Device(kDLOneAPI, id_); }
  /* Implementation-defined devices (plug-in backends). */
  static constexpr Device ext_dev(int32_t id_ = 0) noexcept { return Device(kDLExtDev, id_); }

  /* Parses "cpu", "cuda:1", "opencl" (id 0), ... (dlb_device_parse). Throws Error with the
   * core's message for text that is not a device. */
  static Device parse(const std::string& text) {
    DLDevice out{kDLCPU, 0};
    dlb_error error{};
    detail::check(dlb_device_parse(text.c_str(), &out, &error), error);
    return Device(out);
  }

  /* "cpu", "cuda:1", or "device_type_25:0" for a type without a name (dlb_device_format). */
  std::string name() const {
    char buffer[DLB_DEVICE_NAME_SIZE];
    dlb_error error{};
    detail::check(dlb_device_format(dl(), buffer, sizeof(buffer), &error), error);
    return buffer;
  }

  /* True if the host CPU can read this device's memory (CPU, CUDA pinned/managed, ROCm
   * pinned). */
  bool host_readable() const noexcept { return dlb_device_is_host_readable(dl()) != 0; }

  /* True if imports accept this device type (DLPack defines it or a backend serves it). */
  bool known() const noexcept { return dlb_device_type_is_known(type) != 0; }

  /* Field-wise comparison. */
  friend constexpr bool operator==(Device a, Device b) noexcept {
    return a.type == b.type && a.id == b.id;
  }
  friend constexpr bool operator!=(Device a, Device b) noexcept { return !(a == b); }

  /* Writes name(). */
  friend std::ostream& operator<<(std::ostream& os, Device device) { return os << device.name(); }
};

/* ========================================================================================== */
/* Slices                                                                                     */
/* ========================================================================================== */

/* Marks an omitted slice bound (Python's None). */
constexpr int64_t kSliceNone = DLB_SLICE_NONE;

/* The slice start:stop:step of one dimension (Python semantics, see dlb_slice). */
constexpr dlb_slice range(int64_t start, int64_t stop, int64_t step = 1) noexcept {
  return dlb_slice{start, stop, step};
}

/* The whole dimension, ::step (all(-1) reverses it). */
constexpr dlb_slice all(int64_t step = 1) noexcept {
  return dlb_slice{DLB_SLICE_NONE, DLB_SLICE_NONE, step};
}

/* The number of tensors made by the library that are not freed yet (dlb_tensor_live_count). */
inline int64_t live_count() noexcept { return dlb_tensor_live_count(); }

/* The library version as a string such as "0.2.0". */
inline std::string version_string() { return dlb_version_string(); }

/* Waits until the work queued on `stream` is done; with a NULL stream, all work on `device`
 * (dlb_device_synchronize; a no-op on the CPU). Throws Error with the runtime's failure. */
inline void synchronize(Device device, void* stream = nullptr) {
  dlb_error error{};
  detail::check(dlb_device_synchronize(device.dl(), stream, &error), error);
}

/* ========================================================================================== */
/* Device runtimes                                                                            */
/* ========================================================================================== */

/* CUDA (see dlbridge.h): nothing here allocates anything the caller must free. */
namespace cuda {

/* Why CUDA cannot run here (dlb_cuda_is_available's status and message: no driver, no device,
 * built without CUDA), or nothing when it can. */
inline std::optional<Error> unavailable_reason() {
  dlb_error error{};
  const int status = dlb_cuda_is_available(&error);
  if (status == DLB_OK) return std::nullopt;
  return Error(status, error.message);
}

/* True when CUDA work can run here; unavailable_reason() says why not. */
inline bool is_available() { return dlb_cuda_is_available(nullptr) == DLB_OK; }

/* The number of CUDA devices (Error DLB_ERR_DEVICE_UNAVAILABLE without a driver or device). */
inline int32_t device_count() {
  int32_t count = 0;
  dlb_error error{};
  detail::check(dlb_cuda_device_count(&count, &error), error);
  return count;
}

/* The device `pointer` lives on: CUDA device, pinned or managed memory, else the CPU. */
inline Device pointer_device(const void* pointer) {
  DLDevice out{kDLCPU, 0};
  dlb_error error{};
  detail::check(dlb_cuda_pointer_device(pointer, &out, &error), error);
  return Device(out);
}

/* The "not given" consumer stream (Python's None): the legacy default stream. */
constexpr int64_t kStreamNone = DLB_CUDA_STREAM_NONE;

/* The DLPack stream handshake (dlb_cuda_stream_handshake): work queued so far on
 * `producer_stream` of device `device_id` is visible to work the consumer queues on
 * `consumer_stream` (a DLPack stream value: kStreamNone, 1, 2, -1 or a cudaStream_t). */
inline void stream_handshake(int32_t device_id, void* producer_stream, int64_t consumer_stream) {
  dlb_error error{};
  detail::check(dlb_cuda_stream_handshake(device_id, producer_stream, consumer_stream, &error),
                error);
}

}  // namespace cuda

/* OpenCL (see dlbridge.h): the objects named here belong to the library. */
namespace opencl {

/* Why OpenCL cannot run here (no loader, no platform, built without OpenCL), or nothing. */
inline std::optional<Error> unavailable_reason() {
  dlb_error error{};
  const int status = dlb_opencl_is_available(&error);
  if (status == DLB_OK) return std::nullopt;
  return Error(status, error.message);
}

/* True when an OpenCL platform with a device was found; unavailable_reason() says why not. */
inline bool is_available() { return dlb_opencl_is_available(nullptr) == DLB_OK; }

/* The number of OpenCL devices over all platforms. */
inline int32_t device_count() {
  int32_t count = 0;
  dlb_error error{};
  detail::check(dlb_opencl_device_count(&count, &error), error);
  return count;
}

/* "platform name / device name" of device `device_id`. */
inline std::string device_name(int32_t device_id) {
  char buffer[DLB_ERROR_MESSAGE_SIZE];
  dlb_error error{};
  detail::check(dlb_opencl_device_name(device_id, buffer, sizeof(buffer), &error), error);
  return buffer;
}

/* The OpenCL counterpart of the stream handshake (dlb_opencl_queue_handshake). */
inline void queue_handshake(void* producer_queue, void* consumer_queue) {
  dlb_error error{};
  detail::check(dlb_opencl_queue_handshake(producer_queue, consumer_queue, &error), error);
}

}  // namespace opencl

/* ========================================================================================== */
/* Legacy tensors                                                                             */
/* ========================================================================================== */

/* A move-only owner of a legacy DLManagedTensor* (DLPack < 1.0), as produced by
 * Tensor::export_legacy() for consumers that only speak the legacy struct. The destructor frees
 * the tensor (dlb_tensor_free_legacy: its deleter runs exactly once); release() hands the raw
 * pointer to a consumer instead, which then must call its deleter exactly once. */
class LegacyTensor {
 public:
  /* An empty owner. */
  LegacyTensor() noexcept = default;
  LegacyTensor(const LegacyTensor&) = delete;
  LegacyTensor& operator=(const LegacyTensor&) = delete;
  /* Moves ownership; `other` becomes empty. */
  LegacyTensor(LegacyTensor&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  /* Frees what this held, then takes over `other`'s tensor; `other` becomes empty. */
  LegacyTensor& operator=(LegacyTensor&& other) noexcept {
    if (this != &other) reset(std::exchange(other.ptr_, nullptr));
    return *this;
  }
  /* Frees the held tensor, if any. */
  ~LegacyTensor() { dlb_tensor_free_legacy(ptr_); }

  /* Takes ownership of a raw legacy tensor from any producer (NULL gives an empty owner). No
   * validation happens here; import it with Tensor::import_legacy() to validate it. */
  static LegacyTensor from_raw(DLManagedTensor* tensor) noexcept {
    LegacyTensor result;
    result.ptr_ = tensor;
    return result;
  }

  /* Gives up ownership: returns the raw pointer (NULL if empty) and leaves this empty. The
   * caller must now call its deleter exactly once (or hand it to a consumer that will). */
  DLManagedTensor* release() noexcept { return std::exchange(ptr_, nullptr); }

  /* Frees the held tensor (if any) and takes ownership of `tensor` (may be NULL). */
  void reset(DLManagedTensor* tensor = nullptr) noexcept {
    DLManagedTensor* old = std::exchange(ptr_, tensor);
    dlb_tensor_free_legacy(old);
  }

  /* The raw pointer, still owned by this object (NULL if empty). */
  DLManagedTensor* get() const noexcept { return ptr_; }

  /* True unless empty. */
  explicit operator bool() const noexcept { return ptr_ != nullptr; }

 private:
  DLManagedTensor* ptr_ = nullptr;
};

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

// Channels: tensors across processes (Listener, Channel), in a header of their own.
#include "dlbridge/channel.hpp"

#endif  // DLBRIDGE_DLBRIDGE_HPP_
