// Suite 'core', area 'dtype': versions and status names, and data types (names, widths,
// sizes, parsing and formatting).
//
// Every error path asserts the exact status and the exact message. Every test case ends with
// dlb_tensor_live_count() back at its starting value and every counter exact.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "support.hpp"

namespace {

using test::format_dtype;
using test::fresh_error;
using test::kIsCopied;
using test::kPadded;
using test::kReadOnly;
using test::kUntouched;
using test::msg;
using test::same_dtype;
using test::str;

}  // namespace

// ============================================================================================
// Versions and status names
// ============================================================================================

TEST_CASE("dlb_get_version reports the library, produced and accepted versions") {
  dlb_library_version library{99, 99, 99};
  DLPackVersion produced{99, 99};
  DLPackVersion accepted{99, 99};
  dlb_get_version(&library, &produced, &accepted);
  CHECK(library.major == DLB_VERSION_MAJOR);
  CHECK(library.minor == DLB_VERSION_MINOR);
  CHECK(library.patch == DLB_VERSION_PATCH);
  CHECK(produced.major == 1u);
  CHECK(produced.minor == 3u);
  CHECK(produced.major == DLB_DLPACK_PRODUCED_MAJOR);
  CHECK(produced.minor == DLB_DLPACK_PRODUCED_MINOR);
  CHECK(accepted.major == 1u);
  CHECK(accepted.minor == 3u);
  CHECK(accepted.major == DLPACK_MAJOR_VERSION);
  CHECK(accepted.minor == DLPACK_MINOR_VERSION);

  // The string and the numbers describe the same version.
  const std::string expected = std::to_string(library.major) + "." + std::to_string(library.minor) +
                               "." + std::to_string(library.patch);
  CHECK(std::string(dlb_version_string()) == expected);
}

TEST_CASE("dlb_get_version accepts NULL for any of its outputs") {
  dlb_get_version(nullptr, nullptr, nullptr);

  dlb_library_version library{0, 0, 0};
  dlb_get_version(&library, nullptr, nullptr);
  CHECK(library.major == DLB_VERSION_MAJOR);
  CHECK(library.minor == DLB_VERSION_MINOR);
  CHECK(library.patch == DLB_VERSION_PATCH);

  DLPackVersion produced{0, 0};
  dlb_get_version(nullptr, &produced, nullptr);
  CHECK(produced.major == 1u);
  CHECK(produced.minor == 3u);

  DLPackVersion accepted{0, 0};
  dlb_get_version(nullptr, nullptr, &accepted);
  CHECK(accepted.major == 1u);
  CHECK(accepted.minor == 3u);
}

TEST_CASE("dlb_version_string equals DLB_VERSION_STRING and is static") {
  const char* a = dlb_version_string();
  REQUIRE((a != nullptr));
  CHECK(std::string(a) == DLB_VERSION_STRING);
  CHECK(std::string(a) == "0.2.0");
  CHECK((dlb_version_string() == a));
}

TEST_CASE("dlb_status_name names every status code") {
  struct Row {
    int status;
    const char* name;
  };
  const Row rows[] = {
      {DLB_OK, "DLB_OK"},
      {DLB_ERR_INVALID_ARGUMENT, "DLB_ERR_INVALID_ARGUMENT"},
      {DLB_ERR_OUT_OF_MEMORY, "DLB_ERR_OUT_OF_MEMORY"},
      {DLB_ERR_UNSUPPORTED_VERSION, "DLB_ERR_UNSUPPORTED_VERSION"},
      {DLB_ERR_UNSUPPORTED, "DLB_ERR_UNSUPPORTED"},
      {DLB_ERR_READ_ONLY, "DLB_ERR_READ_ONLY"},
      {DLB_ERR_LAYOUT, "DLB_ERR_LAYOUT"},
      {DLB_ERR_OVERFLOW, "DLB_ERR_OVERFLOW"},
      {DLB_ERR_DEVICE, "DLB_ERR_DEVICE"},
      {DLB_ERR_DEVICE_UNAVAILABLE, "DLB_ERR_DEVICE_UNAVAILABLE"},
      {DLB_ERR_CLOSED, "DLB_ERR_CLOSED"},
      {DLB_ERR_NO_LISTENER, "DLB_ERR_NO_LISTENER"},
      {DLB_ERR_PERMISSION, "DLB_ERR_PERMISSION"},
      {DLB_ERR_PEER_CLOSED, "DLB_ERR_PEER_CLOSED"},
      {DLB_ERR_PROTOCOL, "DLB_ERR_PROTOCOL"},
      {DLB_ERR_TIMEOUT, "DLB_ERR_TIMEOUT"},
      {DLB_ERR_LIMIT, "DLB_ERR_LIMIT"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.status);
    CHECK(str(dlb_status_name(row.status)) == row.name);
  }
  CHECK(DLB_OK == 0);
  CHECK(DLB_ERR_DEVICE_UNAVAILABLE == 9);
  CHECK(DLB_ERR_CLOSED == 10);
  CHECK(DLB_ERR_LIMIT == 16);
  for (int unknown : {17, 18, 100, -1, -9, INT32_MAX, INT32_MIN}) {
    CAPTURE(unknown);
    CHECK(str(dlb_status_name(unknown)) == "DLB_ERR_UNKNOWN");
  }
}

// ============================================================================================
// Data types
// ============================================================================================

namespace {

struct NamedDType {
  const char* name;
  uint8_t code;
  uint8_t bits;
};

// Every scalar name the header lists, with the dtype it stands for.
const NamedDType kScalarNames[] = {
    {"int1", kDLInt, 1},
    {"int2", kDLInt, 2},
    {"int4", kDLInt, 4},
    {"int8", kDLInt, 8},
    {"int16", kDLInt, 16},
    {"int32", kDLInt, 32},
    {"int64", kDLInt, 64},
    {"uint1", kDLUInt, 1},
    {"uint2", kDLUInt, 2},
    {"uint4", kDLUInt, 4},
    {"uint8", kDLUInt, 8},
    {"uint16", kDLUInt, 16},
    {"uint32", kDLUInt, 32},
    {"uint64", kDLUInt, 64},
    {"float16", kDLFloat, 16},
    {"float32", kDLFloat, 32},
    {"float64", kDLFloat, 64},
    {"bfloat16", kDLBfloat, 16},
    {"bool", kDLBool, 8},
    {"complex32", kDLComplex, 32},
    {"complex64", kDLComplex, 64},
    {"complex128", kDLComplex, 128},
    {"bcomplex32", kDLBcomplex, 32},
    {"handle64", kDLOpaqueHandle, 64},
    {"float8_e3m4", kDLFloat8_e3m4, 8},
    {"float8_e4m3", kDLFloat8_e4m3, 8},
    {"float8_e4m3b11fnuz", kDLFloat8_e4m3b11fnuz, 8},
    {"float8_e4m3fn", kDLFloat8_e4m3fn, 8},
    {"float8_e4m3fnuz", kDLFloat8_e4m3fnuz, 8},
    {"float8_e5m2", kDLFloat8_e5m2, 8},
    {"float8_e5m2fnuz", kDLFloat8_e5m2fnuz, 8},
    {"float8_e8m0fnu", kDLFloat8_e8m0fnu, 8},
    {"float6_e2m3fn", kDLFloat6_e2m3fn, 6},
    {"float6_e3m2fn", kDLFloat6_e3m2fn, 6},
    {"float4_e2m1fn", kDLFloat4_e2m1fn, 4},
};

const char* const kCodeNames[] = {
    "int",           "uint",          "float",          "handle",        "bfloat",
    "complex",       "bool",          "float8_e3m4",    "float8_e4m3",   "float8_e4m3b11fnuz",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",  "float8_e5m2fnuz", "float8_e8m0fnu",
    "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",  "bcomplex",
};
constexpr unsigned kCodeCount = sizeof(kCodeNames) / sizeof(kCodeNames[0]);

// Whether the name of a code already implies its width (no bits suffix).
bool fixed_width(uint8_t code) { return code == kDLBool || (code >= kDLFloat8_e3m4 && code <= kDLFloat4_e2m1fn); }

// The legal lane widths of every code (the facts page and the header).
std::vector<unsigned> legal_widths(uint8_t code) {
  switch (code) {
    case kDLInt:
    case kDLUInt: return {1, 2, 4, 8, 16, 32, 64};
    case kDLFloat: return {16, 32, 64};
    case kDLOpaqueHandle: return {8, 16, 32, 64};
    case kDLBfloat: return {16};
    case kDLComplex: return {32, 64, 128};
    case kDLBool: return {8};
    case kDLFloat6_e2m3fn:
    case kDLFloat6_e3m2fn: return {6};
    case kDLFloat4_e2m1fn: return {4};
    case kDLBcomplex: return {32};
    default: return {8};  // every float8 code
  }
}

void check_parse(const std::string& name, DLDataType expected) {
  CAPTURE(name);
  DLDataType out{77, 77, 77};
  dlb_error error = fresh_error();
  const int status = dlb_dtype_parse(name.c_str(), &out, &error);
  INFO(msg(error));
  CHECK(status == DLB_OK);
  CHECK(msg(error) == kUntouched);
  CHECK(same_dtype(out, expected));
}

void check_parse_error(const char* name, int expected_status, const std::string& expected_message) {
  CAPTURE(str(name));
  DLDataType out{77, 77, 77};
  dlb_error error = fresh_error();
  CHECK(dlb_dtype_parse(name, &out, &error) == expected_status);
  CHECK(msg(error) == expected_message);
  // On error *out is cleared, like every output of every function.
  CHECK(same_dtype(out, DLDataType{0, 0, 0}));
  // The error report is optional.
  out = DLDataType{77, 77, 77};
  CHECK(dlb_dtype_parse(name, &out, nullptr) == expected_status);
  CHECK(same_dtype(out, DLDataType{0, 0, 0}));
}

}  // namespace

TEST_CASE("dlb_dtype_parse parses every scalar name") {
  for (const NamedDType& row : kScalarNames) {
    check_parse(row.name, test::dtype(row.code, row.bits, 1));
  }
  // The other opaque-handle widths.
  check_parse("handle8", test::dtype(kDLOpaqueHandle, 8));
  check_parse("handle16", test::dtype(kDLOpaqueHandle, 16));
  check_parse("handle32", test::dtype(kDLOpaqueHandle, 32));
  // A parse with a NULL error report works too.
  DLDataType out{0, 0, 0};
  CHECK(dlb_dtype_parse("float32", &out, nullptr) == DLB_OK);
  CHECK(same_dtype(out, test::f32()));
}

TEST_CASE("dlb_dtype_parse parses vector forms") {
  check_parse("float32x4", test::dtype(kDLFloat, 32, 4));
  check_parse("float8_e4m3fnx2", test::dtype(kDLFloat8_e4m3fn, 8, 2));
  check_parse("int4x3", test::dtype(kDLInt, 4, 3));
  check_parse("uint1x8", test::dtype(kDLUInt, 1, 8));
  check_parse("boolx16", test::dtype(kDLBool, 8, 16));
  check_parse("bfloat16x2", test::dtype(kDLBfloat, 16, 2));
  check_parse("float4_e2m1fnx2", test::dtype(kDLFloat4_e2m1fn, 4, 2));
  check_parse("float6_e3m2fnx4", test::dtype(kDLFloat6_e3m2fn, 6, 4));
  check_parse("complex64x2", test::dtype(kDLComplex, 64, 2));
  check_parse("complex128x3", test::dtype(kDLComplex, 128, 3));
  check_parse("bcomplex32x2", test::dtype(kDLBcomplex, 32, 2));
  check_parse("handle64x2", test::dtype(kDLOpaqueHandle, 64, 2));
  check_parse("float64x1", test::dtype(kDLFloat, 64, 1));
  check_parse("int8x65535", test::dtype(kDLInt, 8, 65535));
  // Every name with every kind of lane count.
  for (const NamedDType& row : kScalarNames) {
    for (unsigned lanes : {2u, 4u, 1000u, 65535u}) {
      check_parse(std::string(row.name) + "x" + std::to_string(lanes),
                  test::dtype(row.code, row.bits, static_cast<uint16_t>(lanes)));
    }
  }
}

TEST_CASE("dlb_dtype_parse refuses bad lane counts") {
  check_parse_error("float32x0", DLB_ERR_INVALID_ARGUMENT,
                    "dtype name 'float32x0' has an invalid lane count (1 to 65535)");
  check_parse_error("float32x65536", DLB_ERR_INVALID_ARGUMENT,
                    "dtype name 'float32x65536' has an invalid lane count (1 to 65535)");
  check_parse_error("int8x99999999999999999999", DLB_ERR_INVALID_ARGUMENT,
                    "dtype name 'int8x99999999999999999999' has an invalid lane count (1 to 65535)");
  check_parse_error("float8_e4m3fnx0", DLB_ERR_INVALID_ARGUMENT,
                    "dtype name 'float8_e4m3fnx0' has an invalid lane count (1 to 65535)");
  check_parse_error("float32x4y", DLB_ERR_INVALID_ARGUMENT,
                    "dtype name 'float32x4y' has an invalid lane count (1 to 65535)");
  // "x" with no digits after it is not a lane suffix: the whole name is unknown.
  check_parse_error("float32x", DLB_ERR_INVALID_ARGUMENT, "unknown dtype name 'float32x'");
  check_parse_error("float32x-1", DLB_ERR_INVALID_ARGUMENT, "unknown dtype name 'float32x-1'");
  check_parse_error("float32x4x4", DLB_ERR_INVALID_ARGUMENT, "unknown dtype name 'float32x4x4'");
}

TEST_CASE("dlb_dtype_parse refuses unknown names and illegal widths") {
  for (const char* name : {"", "gpu", "float", "int", "uint", "bfloat", "complex", "handle",
                           "Float32", "FLOAT32", "float32 ", " float32", "float-32", "int+8",
                           "bool8", "float8_e4m3fnuzz", "float8_e4m3f", "float4_e2m1", "x4", "int256",
                           "float8_e4m3fn8", "f32", "double", "half"}) {
    check_parse_error(name, DLB_ERR_INVALID_ARGUMENT, std::string("unknown dtype name '") + name + "'");
  }
  // A known base name with a width its code does not allow.
  check_parse_error("float7", DLB_ERR_INVALID_ARGUMENT, "dtype float with 7 bits is not a valid DLPack type");
  check_parse_error("float8", DLB_ERR_INVALID_ARGUMENT, "dtype float with 8 bits is not a valid DLPack type");
  check_parse_error("float128", DLB_ERR_INVALID_ARGUMENT,
                    "dtype float with 128 bits is not a valid DLPack type");
  check_parse_error("float4", DLB_ERR_INVALID_ARGUMENT, "dtype float with 4 bits is not a valid DLPack type");
  check_parse_error("int3", DLB_ERR_INVALID_ARGUMENT, "dtype int with 3 bits is not a valid DLPack type");
  check_parse_error("int128", DLB_ERR_INVALID_ARGUMENT, "dtype int with 128 bits is not a valid DLPack type");
  check_parse_error("uint0", DLB_ERR_INVALID_ARGUMENT, "dtype uint with 0 bits is not a valid DLPack type");
  check_parse_error("bfloat32", DLB_ERR_INVALID_ARGUMENT,
                    "dtype bfloat with 32 bits is not a valid DLPack type");
  check_parse_error("complex16", DLB_ERR_INVALID_ARGUMENT,
                    "dtype complex with 16 bits is not a valid DLPack type");
  check_parse_error("bcomplex64", DLB_ERR_INVALID_ARGUMENT,
                    "dtype bcomplex with 64 bits is not a valid DLPack type");
  check_parse_error("float7x4", DLB_ERR_INVALID_ARGUMENT, "dtype float with 7 bits is not a valid DLPack type");
  // A long name is quoted, cut to 64 characters.
  const std::string long_name(100, 'q');
  check_parse_error(long_name.c_str(), DLB_ERR_INVALID_ARGUMENT,
                    "unknown dtype name '" + std::string(64, 'q') + "'");
}

TEST_CASE("dlb_dtype_parse refuses NULL arguments") {
  check_parse_error(nullptr, DLB_ERR_INVALID_ARGUMENT, "dtype name is NULL");
  dlb_error error = fresh_error();
  CHECK(dlb_dtype_parse("float32", nullptr, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "out is NULL");
  CHECK(dlb_dtype_parse("float32", nullptr, nullptr) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(dlb_dtype_parse(nullptr, nullptr, nullptr) == DLB_ERR_INVALID_ARGUMENT);
}

TEST_CASE("dlb_dtype_format writes the documented names") {
  struct Row {
    DLDataType dtype;
    const char* name;
  };
  const Row rows[] = {
      {test::dtype(kDLFloat, 32), "float32"},
      {test::dtype(kDLFloat, 32, 4), "float32x4"},
      {test::dtype(kDLFloat8_e4m3fn, 8, 2), "float8_e4m3fnx2"},
      {test::dtype(kDLFloat8_e4m3fn, 8), "float8_e4m3fn"},
      {test::dtype(kDLBool, 8), "bool"},
      {test::dtype(kDLBool, 8, 3), "boolx3"},
      {test::dtype(kDLOpaqueHandle, 64), "handle64"},
      {test::dtype(kDLComplex, 64), "complex64"},
      {test::dtype(kDLComplex, 128, 2), "complex128x2"},
      {test::dtype(kDLBcomplex, 32), "bcomplex32"},
      {test::dtype(kDLBfloat, 16), "bfloat16"},
      {test::dtype(kDLInt, 4, 3), "int4x3"},
      {test::dtype(kDLUInt, 1), "uint1"},
      {test::dtype(kDLFloat4_e2m1fn, 4), "float4_e2m1fn"},
      {test::dtype(kDLFloat6_e2m3fn, 6), "float6_e2m3fn"},
      {test::dtype(kDLFloat8_e4m3b11fnuz, 8, 65535), "float8_e4m3b11fnuzx65535"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    CHECK(format_dtype(row.dtype) == row.name);
  }
}

TEST_CASE("dlb_dtype_format and dlb_dtype_parse round-trip every valid code, width and lane count") {
  int combinations = 0;
  for (unsigned code = 0; code < 256; ++code) {
    for (unsigned bits = 0; bits < 256; ++bits) {
      if (!dlb_dtype_bits_allowed(static_cast<uint8_t>(code), static_cast<uint8_t>(bits))) continue;
      ++combinations;
      for (unsigned lanes : {1u, 2u, 3u, 4u, 16u, 65535u}) {
        const DLDataType dtype = test::dtype(static_cast<uint8_t>(code), static_cast<uint8_t>(bits),
                                             static_cast<uint16_t>(lanes));
        CAPTURE(code);
        CAPTURE(bits);
        CAPTURE(lanes);
        std::string expected = kCodeNames[code];
        if (!fixed_width(static_cast<uint8_t>(code))) expected += std::to_string(bits);
        if (lanes != 1) expected += "x" + std::to_string(lanes);
        const std::string name = format_dtype(dtype);
        CHECK(name == expected);
        CHECK(name.size() < DLB_DTYPE_NAME_SIZE);
        DLDataType back{77, 77, 77};
        dlb_error error = fresh_error();
        const int status = dlb_dtype_parse(name.c_str(), &back, &error);
        INFO(msg(error));
        CHECK(status == DLB_OK);  // "complex64": the 'x' of "complex" is not a lane suffix
        CHECK(same_dtype(back, dtype));
      }
    }
  }
  // 7 int + 7 uint + 3 float + 4 handle + 1 bfloat + 3 complex + 1 bool + 8 float8 + 2 float6
  // + 1 float4 + 1 bcomplex.
  CHECK(combinations == 38);
}

TEST_CASE("dlb_dtype_format reports a NULL or too-small buffer and invalid dtypes") {
  dlb_error error = fresh_error();
  CHECK(dlb_dtype_format(test::f32(), nullptr, 16, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "buffer is NULL");

  char buffer[DLB_DTYPE_NAME_SIZE];
  std::memset(buffer, '#', sizeof(buffer));
  error = fresh_error();
  CHECK(dlb_dtype_format(test::f32(), buffer, 7, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "buffer of 7 bytes is too small for dtype name 'float32'");
  error = fresh_error();
  CHECK(dlb_dtype_format(test::f32(), buffer, 0, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "buffer of 0 bytes is too small for dtype name 'float32'");
  error = fresh_error();
  CHECK(dlb_dtype_format(test::dtype(kDLFloat8_e4m3fn, 8, 2), buffer, 15, &error) ==
        DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "buffer of 15 bytes is too small for dtype name 'float8_e4m3fnx2'");
  CHECK(dlb_dtype_format(test::f32(), buffer, 7, nullptr) == DLB_ERR_INVALID_ARGUMENT);

  // Exactly enough room (the name plus its NUL) is enough.
  error = fresh_error();
  CHECK(dlb_dtype_format(test::f32(), buffer, 8, &error) == DLB_OK);
  CHECK(std::string(buffer) == "float32");
  CHECK(msg(error) == kUntouched);
  std::memset(buffer, '#', sizeof(buffer));
  CHECK(dlb_dtype_format(test::dtype(kDLFloat8_e4m3fn, 8, 2), buffer, 16, nullptr) == DLB_OK);
  CHECK(std::string(buffer) == "float8_e4m3fnx2");

  // Invalid dtypes are refused with dlb_dtype_validate's errors.
  error = fresh_error();
  CHECK(dlb_dtype_format(test::dtype(99, 8), buffer, sizeof(buffer), &error) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) == "dtype code 99 is not a known DLPack type code");
  error = fresh_error();
  CHECK(dlb_dtype_format(test::dtype(kDLFloat, 7), buffer, sizeof(buffer), &error) ==
        DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "dtype float with 7 bits is not a valid DLPack type");
  error = fresh_error();
  CHECK(dlb_dtype_format(test::dtype(kDLFloat, 32, 0), buffer, sizeof(buffer), &error) ==
        DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "dtype lanes is 0; it must be at least 1");
}

TEST_CASE("dlb_dtype_code_name names all 19 codes and no others") {
  CHECK(kCodeCount == 19u);
  for (unsigned code = 0; code < kCodeCount; ++code) {
    CAPTURE(code);
    CHECK(str(dlb_dtype_code_name(static_cast<uint8_t>(code))) == kCodeNames[code]);
  }
  CHECK(str(dlb_dtype_code_name(kDLFloat8_e4m3fn)) == "float8_e4m3fn");
  CHECK(str(dlb_dtype_code_name(kDLBcomplex)) == "bcomplex");
  for (unsigned code = kCodeCount; code < 256; ++code) {
    CAPTURE(code);
    CHECK((dlb_dtype_code_name(static_cast<uint8_t>(code)) == nullptr));
  }
}

TEST_CASE("dlb_dtype_bits_allowed follows the width table of every code") {
  const unsigned widths[] = {0,  1,  2,  3,  4,  5,  6,  7,   8,   9,   10,  12, 15,
                             16, 24, 31, 32, 33, 48, 63, 64, 65, 96, 127, 128, 129, 255};
  for (unsigned code = 0; code < kCodeCount; ++code) {
    const std::vector<unsigned> legal = legal_widths(static_cast<uint8_t>(code));
    for (unsigned bits : widths) {
      CAPTURE(code);
      CAPTURE(bits);
      bool expected = false;
      for (unsigned w : legal) expected = expected || w == bits;
      CHECK(dlb_dtype_bits_allowed(static_cast<uint8_t>(code), static_cast<uint8_t>(bits)) ==
            (expected ? 1 : 0));
    }
    // The complete table: exactly the legal widths, nothing else among all 256.
    int count = 0;
    for (unsigned bits = 0; bits < 256; ++bits) {
      count += dlb_dtype_bits_allowed(static_cast<uint8_t>(code), static_cast<uint8_t>(bits));
    }
    CAPTURE(code);
    CHECK(count == static_cast<int>(legal.size()));
  }
  // Spot checks straight from the facts page.
  CHECK(dlb_dtype_bits_allowed(kDLBool, 8) == 1);
  CHECK(dlb_dtype_bits_allowed(kDLBool, 1) == 0);
  CHECK(dlb_dtype_bits_allowed(kDLBfloat, 16) == 1);
  CHECK(dlb_dtype_bits_allowed(kDLBfloat, 32) == 0);
  CHECK(dlb_dtype_bits_allowed(kDLFloat8_e5m2, 16) == 0);
  CHECK(dlb_dtype_bits_allowed(kDLFloat6_e2m3fn, 8) == 0);
  CHECK(dlb_dtype_bits_allowed(kDLFloat4_e2m1fn, 8) == 0);
  CHECK(dlb_dtype_bits_allowed(kDLComplex, 128) == 1);
  // Unknown codes allow nothing.
  for (unsigned code : {19u, 20u, 99u, 255u}) {
    for (unsigned bits : {1u, 8u, 32u, 64u}) {
      CHECK(dlb_dtype_bits_allowed(static_cast<uint8_t>(code), static_cast<uint8_t>(bits)) == 0);
    }
  }
}

TEST_CASE("dlb_dtype_validate checks the code, the width and the lanes") {
  dlb_error error = fresh_error();
  CHECK(dlb_dtype_validate(test::f32(), &error) == DLB_OK);
  CHECK(msg(error) == kUntouched);
  CHECK(dlb_dtype_validate(test::dtype(kDLInt, 4, 3), nullptr) == DLB_OK);
  CHECK(dlb_dtype_validate(test::dtype(kDLUInt, 8, 65535), nullptr) == DLB_OK);

  error = fresh_error();
  CHECK(dlb_dtype_validate(test::dtype(99, 8), &error) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) == "dtype code 99 is not a known DLPack type code");
  error = fresh_error();
  CHECK(dlb_dtype_validate(test::dtype(19, 32), &error) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) == "dtype code 19 is not a known DLPack type code");
  error = fresh_error();
  CHECK(dlb_dtype_validate(test::dtype(255, 32, 0), &error) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) == "dtype code 255 is not a known DLPack type code");

  error = fresh_error();
  CHECK(dlb_dtype_validate(test::dtype(kDLFloat, 8), &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "dtype float with 8 bits is not a valid DLPack type");
  error = fresh_error();
  CHECK(dlb_dtype_validate(test::dtype(kDLFloat8_e4m3fn, 16), &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "dtype float8_e4m3fn with 16 bits is not a valid DLPack type");
  error = fresh_error();
  CHECK(dlb_dtype_validate(test::dtype(kDLFloat6_e3m2fn, 8), &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "dtype float6_e3m2fn with 8 bits is not a valid DLPack type");
  error = fresh_error();
  CHECK(dlb_dtype_validate(test::dtype(kDLFloat4_e2m1fn, 8), &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "dtype float4_e2m1fn with 8 bits is not a valid DLPack type");
  error = fresh_error();
  CHECK(dlb_dtype_validate(test::dtype(kDLBool, 1), &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "dtype bool with 1 bits is not a valid DLPack type");
  error = fresh_error();
  CHECK(dlb_dtype_validate(test::dtype(kDLInt, 0), &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "dtype int with 0 bits is not a valid DLPack type");

  error = fresh_error();
  CHECK(dlb_dtype_validate(test::dtype(kDLFloat, 32, 0), &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "dtype lanes is 0; it must be at least 1");
  error = fresh_error();
  CHECK(dlb_dtype_validate(test::dtype(kDLBool, 8, 0), &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "dtype lanes is 0; it must be at least 1");

  CHECK(dlb_dtype_validate(test::dtype(99, 8), nullptr) == DLB_ERR_UNSUPPORTED);
  CHECK(dlb_dtype_validate(test::dtype(kDLFloat, 32, 0), nullptr) == DLB_ERR_INVALID_ARGUMENT);
}

TEST_CASE("element bits, element size and sub-byte detection") {
  CHECK(dlb_dtype_element_bits(test::f32()) == 32u);
  CHECK(dlb_dtype_element_bits(test::dtype(kDLFloat, 32, 4)) == 128u);
  CHECK(dlb_dtype_element_bits(test::dtype(kDLInt, 4, 3)) == 12u);
  CHECK(dlb_dtype_element_bits(test::dtype(kDLUInt, 1)) == 1u);
  CHECK(dlb_dtype_element_bits(test::dtype(kDLComplex, 128)) == 128u);
  CHECK(dlb_dtype_element_bits(test::dtype(kDLFloat6_e2m3fn, 6, 5)) == 30u);
  CHECK(dlb_dtype_element_bits(test::dtype(255, 255, 65535)) == 255u * 65535u);

  CHECK(dlb_dtype_element_size(test::f32()) == 4u);
  CHECK(dlb_dtype_element_size(test::dtype(kDLFloat, 32, 4)) == 16u);
  CHECK(dlb_dtype_element_size(test::dtype(kDLBool, 8)) == 1u);
  CHECK(dlb_dtype_element_size(test::dtype(kDLInt, 4)) == 1u);
  CHECK(dlb_dtype_element_size(test::dtype(kDLInt, 4, 2)) == 1u);
  CHECK(dlb_dtype_element_size(test::dtype(kDLInt, 4, 3)) == 2u);
  CHECK(dlb_dtype_element_size(test::dtype(kDLUInt, 1, 9)) == 2u);
  CHECK(dlb_dtype_element_size(test::dtype(kDLFloat6_e2m3fn, 6)) == 1u);
  CHECK(dlb_dtype_element_size(test::dtype(kDLFloat4_e2m1fn, 4)) == 1u);
  CHECK(dlb_dtype_element_size(test::dtype(kDLComplex, 128, 2)) == 32u);

  CHECK(dlb_dtype_is_subbyte(test::dtype(kDLInt, 4)) == 1);
  CHECK(dlb_dtype_is_subbyte(test::dtype(kDLUInt, 1)) == 1);
  CHECK(dlb_dtype_is_subbyte(test::dtype(kDLInt, 2)) == 1);
  CHECK(dlb_dtype_is_subbyte(test::dtype(kDLFloat6_e2m3fn, 6)) == 1);
  CHECK(dlb_dtype_is_subbyte(test::dtype(kDLFloat4_e2m1fn, 4)) == 1);
  CHECK(dlb_dtype_is_subbyte(test::dtype(kDLInt, 4, 4)) == 1);  // lanes do not change it
  CHECK(dlb_dtype_is_subbyte(test::dtype(kDLInt, 8)) == 0);
  CHECK(dlb_dtype_is_subbyte(test::dtype(kDLBool, 8)) == 0);
  CHECK(dlb_dtype_is_subbyte(test::dtype(kDLFloat8_e4m3fn, 8)) == 0);
  CHECK(dlb_dtype_is_subbyte(test::f32()) == 0);
}

namespace {

void check_storage(DLDataType dtype, int64_t count, uint64_t flags, uint64_t expected) {
  CAPTURE(format_dtype(dtype));
  CAPTURE(count);
  CAPTURE(flags);
  uint64_t out = 12345;
  dlb_error error = fresh_error();
  const int status = dlb_dtype_storage_size(dtype, count, flags, &out, &error);
  INFO(msg(error));
  CHECK(status == DLB_OK);
  CHECK(out == expected);
  CHECK(msg(error) == kUntouched);
}

void check_storage_error(DLDataType dtype, int64_t count, uint64_t flags, int expected_status,
                         const std::string& expected_message) {
  CAPTURE(count);
  uint64_t out = 12345;
  dlb_error error = fresh_error();
  CHECK(dlb_dtype_storage_size(dtype, count, flags, &out, &error) == expected_status);
  CHECK(msg(error) == expected_message);
  CHECK(dlb_dtype_storage_size(dtype, count, flags, &out, nullptr) == expected_status);
}

}  // namespace

TEST_CASE("dlb_dtype_storage_size: whole-byte types, packed and padded sub-byte data") {
  check_storage(test::f32(), 10, 0, 40);
  check_storage(test::f32(), 0, 0, 0);
  check_storage(test::dtype(kDLBool, 8), 3, 0, 3);
  check_storage(test::dtype(kDLFloat, 32, 4), 2, 0, 32);
  check_storage(test::dtype(kDLComplex, 128), 2, 0, 32);
  check_storage(test::dtype(kDLFloat8_e4m3fn, 8), 5, 0, 5);
  check_storage(test::dtype(kDLFloat8_e4m3fn, 8), 5, kPadded, 5);  // whole-byte: flag irrelevant
  check_storage(test::f32(), 3, kPadded | kReadOnly | kIsCopied, 12);

  // Packed sub-byte data rounds the total, not each element.
  check_storage(test::dtype(kDLFloat4_e2m1fn, 4), 3, 0, 2);
  check_storage(test::dtype(kDLFloat4_e2m1fn, 4), 4, 0, 2);
  check_storage(test::dtype(kDLFloat6_e2m3fn, 6), 5, 0, 4);
  check_storage(test::dtype(kDLFloat6_e3m2fn, 6), 4, 0, 3);
  check_storage(test::dtype(kDLInt, 4), 1, 0, 1);
  check_storage(test::dtype(kDLInt, 4), 0, 0, 0);
  check_storage(test::dtype(kDLInt, 4, 3), 3, 0, 5);  // 36 bits
  check_storage(test::dtype(kDLInt, 4, 2), 3, 0, 3);
  check_storage(test::dtype(kDLUInt, 1), 8, 0, 1);
  check_storage(test::dtype(kDLUInt, 1), 9, 0, 2);
  check_storage(test::dtype(kDLInt, 2), 4, 0, 1);
  check_storage(test::dtype(kDLInt, 2), 5, 0, 2);

  // Padded: every element on its own, ceil(bits * lanes / 8) bytes each.
  check_storage(test::dtype(kDLFloat4_e2m1fn, 4), 3, kPadded, 3);
  check_storage(test::dtype(kDLFloat6_e2m3fn, 6), 5, kPadded, 5);
  check_storage(test::dtype(kDLInt, 4), 7, kPadded, 7);
  check_storage(test::dtype(kDLUInt, 1), 9, kPadded, 9);
  check_storage(test::dtype(kDLInt, 4, 3), 3, kPadded, 6);
  check_storage(test::dtype(kDLInt, 4, 2), 3, kPadded, 3);

  // The largest counts that still fit.
  check_storage(test::dtype(kDLUInt, 1), INT64_MAX, 0, uint64_t{1} << 60);
  check_storage(test::dtype(kDLInt, 4), INT64_MAX, kPadded, static_cast<uint64_t>(INT64_MAX));
  check_storage(test::dtype(kDLInt, 8), INT64_MAX, 0, static_cast<uint64_t>(INT64_MAX));
}

TEST_CASE("dlb_dtype_storage_size errors: NULL output, invalid dtype, negative count, overflow") {
  check_storage_error(test::f32(), -1, 0, DLB_ERR_INVALID_ARGUMENT, "element count -1 is negative");
  check_storage_error(test::f32(), INT64_MIN, 0, DLB_ERR_INVALID_ARGUMENT,
                      "element count -9223372036854775808 is negative");
  check_storage_error(test::dtype(99, 8), 4, 0, DLB_ERR_UNSUPPORTED,
                      "dtype code 99 is not a known DLPack type code");
  check_storage_error(test::dtype(kDLFloat, 7), 4, 0, DLB_ERR_INVALID_ARGUMENT,
                      "dtype float with 7 bits is not a valid DLPack type");
  check_storage_error(test::dtype(kDLFloat, 32, 0), 4, 0, DLB_ERR_INVALID_ARGUMENT,
                      "dtype lanes is 0; it must be at least 1");

  dlb_error error = fresh_error();
  CHECK(dlb_dtype_storage_size(test::f32(), 4, 0, nullptr, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "out_bytes is NULL");

  // Overflow: of the 64-bit product, and of 63 bits.
  check_storage_error(test::f32(), INT64_MAX, 0, DLB_ERR_OVERFLOW,
                      "storage for 9223372036854775807 elements of float32 overflows 63 bits");
  check_storage_error(test::dtype(kDLFloat, 64), (int64_t{1} << 60) + 1, 0, DLB_ERR_OVERFLOW,
                      "storage for 1152921504606846977 elements of float64 overflows 63 bits");
  check_storage_error(test::dtype(kDLInt, 16), int64_t{1} << 62, 0, DLB_ERR_OVERFLOW,
                      "storage for 4611686018427387904 elements of int16 overflows 63 bits");
  check_storage_error(test::dtype(kDLFloat, 32, 4), int64_t{1} << 59, 0, DLB_ERR_OVERFLOW,
                      "storage for 576460752303423488 elements of float32x4 overflows 63 bits");
  // Packed: the bit count may pass 2^64 while the byte count fits in 63 bits.
  check_storage(test::dtype(kDLInt, 4), INT64_MAX, 0, uint64_t{1} << 62);
  check_storage_error(test::dtype(kDLInt, 4, 4), INT64_MAX, 0, DLB_ERR_OVERFLOW,
                      "storage for 9223372036854775807 elements of int4x4 overflows 63 bits");
  check_storage_error(test::dtype(kDLInt, 4, 3), INT64_MAX, kPadded, DLB_ERR_OVERFLOW,
                      "storage for 9223372036854775807 elements of int4x3 overflows 63 bits");
}
