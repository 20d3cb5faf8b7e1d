// Data types: names, legal widths, element and storage sizes.
#include <cstdio>
#include <cstring>

#include "internal.hpp"

namespace {

using dlb::CodeInfo;
using dlb::kCodeCount;
using dlb::kCodes;
using dlb::width_allowed;

const CodeInfo* code_info(uint8_t code) { return code < kCodeCount ? &kCodes[code] : nullptr; }

// Parses a decimal number made only of digits; false on empty input, junk or overflow.
bool parse_decimal(const char* begin, const char* end, unsigned long max, unsigned long* out) {
  if (begin == end) return false;
  unsigned long value = 0;
  for (const char* p = begin; p != end; ++p) {
    if (*p < '0' || *p > '9') return false;
    value = value * 10 + static_cast<unsigned long>(*p - '0');
    if (value > max) return false;
  }
  *out = value;
  return true;
}

// Matches [begin, end) against a code name followed by its width ("int8"), or a fixed-width
// name alone ("float8_e4m3fn"). The width may still be illegal for the code.
bool match_scalar(const char* begin, const char* end, const CodeInfo** info, unsigned long* bits) {
  const size_t length = static_cast<size_t>(end - begin);
  for (const CodeInfo& candidate : kCodes) {
    const size_t name_length = std::strlen(candidate.name);
    if (length < name_length || std::strncmp(begin, candidate.name, name_length) != 0) continue;
    if (candidate.fixed_width) {
      if (length != name_length) continue;
      unsigned width = 0;
      while (!width_allowed(candidate, width)) ++width;
      *bits = width;
    } else if (!parse_decimal(begin + name_length, end, 255, bits)) {
      continue;  // "uint8" must not be read as "u" + ..., nor "float8_e5m2" as "float" + ...
    }
    *info = &candidate;
    return true;
  }
  return false;
}

}  // namespace

extern "C" {

DLB_API const char* dlb_dtype_code_name(int32_t code) {
  if (code < 0 || code > UINT8_MAX) return nullptr;
  const CodeInfo* info = code_info(static_cast<uint8_t>(code));
  return info != nullptr ? info->name : nullptr;
}

DLB_API int dlb_dtype_bits_allowed(int32_t code, int32_t bits) {
  if (code < 0 || code > UINT8_MAX || bits < 0 || bits > UINT8_MAX) return 0;
  const CodeInfo* info = code_info(static_cast<uint8_t>(code));
  return info != nullptr && width_allowed(*info, static_cast<unsigned>(bits)) ? 1 : 0;
}

DLB_API dlb_status dlb_dtype_validate(DLDataType dtype, dlb_error* error) {
  const CodeInfo* info = code_info(dtype.code);
  if (info == nullptr) {
    return dlb::fail(error, DLB_ERR_UNSUPPORTED, "dtype code %u is not a known DLPack type code",
                     static_cast<unsigned>(dtype.code));
  }
  if (!width_allowed(*info, dtype.bits)) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "dtype %s with %u bits is not a valid DLPack type", info->name,
                     static_cast<unsigned>(dtype.bits));
  }
  if (dtype.lanes == 0) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "dtype lanes is 0; it must be at least 1");
  }
  return DLB_OK;
}

DLB_API uint32_t dlb_dtype_element_bits(DLDataType dtype) {
  return static_cast<uint32_t>(dtype.bits) * dtype.lanes;
}

DLB_API int dlb_dtype_is_subbyte(DLDataType dtype) { return dtype.bits < 8 ? 1 : 0; }

DLB_API uint64_t dlb_dtype_element_size(DLDataType dtype) {
  return (static_cast<uint64_t>(dlb_dtype_element_bits(dtype)) + 7) / 8;
}

DLB_API dlb_status dlb_dtype_storage_size(DLDataType dtype, int64_t element_count, uint64_t flags,
                                   uint64_t* out_bytes, dlb_error* error) {
  if (out_bytes == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out_bytes is NULL");
  *out_bytes = 0;
  int status = dlb_dtype_validate(dtype, error);
  if (status != DLB_OK) return status;
  if (element_count < 0) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "element count %lld is negative",
                     static_cast<long long>(element_count));
  }
  // In 128 bits: the bit count of packed data may pass 2^64 while its byte count fits.
  __extension__ typedef unsigned __int128 uint128;
  const uint128 count = static_cast<uint64_t>(element_count);
  const uint128 result = dlb::is_subbyte_packed(dtype, flags)
                             ? (count * dlb_dtype_element_bits(dtype) + 7) / 8
                             : count * dlb_dtype_element_size(dtype);
  if (result > static_cast<uint64_t>(INT64_MAX)) {
    dlb::DTypeText name(dtype);
    return dlb::fail(error, DLB_ERR_OVERFLOW, "storage for %lld elements of %s overflows 63 bits",
                     static_cast<long long>(element_count), name.text);
  }
  *out_bytes = static_cast<uint64_t>(result);
  return DLB_OK;
}

DLB_API dlb_status dlb_dtype_format(DLDataType dtype, char* buffer, uint64_t buffer_size,
                             dlb_error* error) {
  if (buffer == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "buffer is NULL");
  if (buffer_size > 0) buffer[0] = '\0';
  int status = dlb_dtype_validate(dtype, error);
  if (status != DLB_OK) return status;
  const CodeInfo& info = kCodes[dtype.code];
  char text[DLB_DTYPE_NAME_SIZE];
  int n = info.fixed_width
              ? std::snprintf(text, sizeof(text), "%s", info.name)
              : std::snprintf(text, sizeof(text), "%s%u", info.name, static_cast<unsigned>(dtype.bits));
  if (dtype.lanes != 1 && n > 0) {
    std::snprintf(text + n, sizeof(text) - static_cast<size_t>(n), "x%u",
                  static_cast<unsigned>(dtype.lanes));
  }
  size_t length = std::strlen(text);
  if (length + 1 > buffer_size) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "buffer of %llu bytes is too small for dtype name '%s'",
                     static_cast<unsigned long long>(buffer_size), text);
  }
  std::memcpy(buffer, text, length + 1);
  return DLB_OK;
}

DLB_API dlb_status dlb_dtype_parse(const char* name, DLDataType* out, dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = DLDataType{0, 0, 0};
  if (name == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "dtype name is NULL");
  const size_t length = std::strlen(name);
  const char* end = name + length;
  // Show at most 64 characters of a bad name in messages.
  const int shown = length > 64 ? 64 : static_cast<int>(length);

  // The whole name is a scalar type ("complex64"), or a scalar type followed by "x<lanes>"
  // ("complex64x2", "float32x4"): try the first reading, then the second.
  const CodeInfo* info = nullptr;
  unsigned long bits = 0;
  unsigned long lanes = 1;
  if (!match_scalar(name, end, &info, &bits)) {
    const char* x = std::strrchr(name, 'x');
    if (x == nullptr || x + 1 >= end || x[1] < '0' || x[1] > '9' ||
        !match_scalar(name, x, &info, &bits)) {
      return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "unknown dtype name '%.*s'", shown, name);
    }
    if (!parse_decimal(x + 1, end, 65535, &lanes) || lanes == 0) {
      return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                       "dtype name '%.*s' has an invalid lane count (1 to 65535)", shown, name);
    }
  }
  DLDataType dtype{static_cast<uint8_t>(info - kCodes), static_cast<uint8_t>(bits),
                   static_cast<uint16_t>(lanes)};
  int status = dlb_dtype_validate(dtype, error);
  if (status != DLB_OK) return status;
  *out = dtype;
  return DLB_OK;
}

}  // extern "C"
