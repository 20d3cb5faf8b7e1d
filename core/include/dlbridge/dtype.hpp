/*
 * dlbridge/dtype.hpp - element types: dlbridge::DType (a value type over DLDataType that stays
 * open to codes this library does not know), dtype_traits (the dtype of a C++ element type)
 * and dtype_of<T>().
 * Part of dlbridge/dlbridge.hpp, which includes it; including this header alone works too.
 */
#ifndef DLBRIDGE_DTYPE_HPP_
#define DLBRIDGE_DTYPE_HPP_

#include <complex>
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>

#include "dlbridge/dlbridge.h"
#include "dlbridge/error.hpp"

namespace dlbridge {

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

}  // namespace dlbridge

#endif  // DLBRIDGE_DTYPE_HPP_
