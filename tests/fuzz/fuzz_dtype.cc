// fuzz_dtype.cc - libFuzzer target for the dtype and device names and dtype arithmetic.
//
// The first byte picks what the rest of the input is:
//  0: a string, given to dlb_dtype_parse and dlb_device_parse. Every successful parse must
//     format back to a name that parses to the identical value; a failed parse must leave the
//     dtype untouched and fill in the message.
//  1: raw DLDataType bytes (+ flags and an element count), given to dlb_dtype_validate,
//     dlb_dtype_format and dlb_dtype_storage_size: format succeeds exactly when validate does,
//     a valid dtype's name parses back to it, and storage sizes match the packed/padded rules.
//  2: raw DLDevice bytes, given to dlb_device_format (and parse when the type has a name).
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_common.h"

namespace {

using fuzz::Reader;

bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

bool same_device(DLDevice a, DLDevice b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}

// Checks formatting of a dtype that validated, and that its name parses back to it.
void check_valid_dtype_round_trip(DLDataType dt) {
  char name[DLB_DTYPE_NAME_SIZE] = {};
  dlb_error err;
  fuzz::error_reset(&err);
  int s = dlb_dtype_format(dt, name, sizeof name, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  FUZZ_CHECK(fuzz::error_untouched(err));
  const size_t len = std::strlen(name);
  FUZZ_CHECK(len > 0 && len < sizeof name);

  DLDataType back = {0xEE, 0xEE, 0xEEEE};
  s = dlb_dtype_parse(name, &back, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  if (!same_dtype(back, dt)) {
    std::fprintf(stderr, "dtype {%u,%u,%u} formats as \"%s\", which parses to {%u,%u,%u}\n",
                 dt.code, dt.bits, dt.lanes, name, back.code, back.bits, back.lanes);
    FUZZ_CHECK(same_dtype(back, dt));
  }

  // Exactly len + 1 bytes is enough; one less is not; no buffer is an error.
  char exact[DLB_DTYPE_NAME_SIZE] = {};
  s = dlb_dtype_format(dt, exact, len + 1, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  FUZZ_CHECK(std::strcmp(exact, name) == 0);
  fuzz::error_reset(&err);
  s = dlb_dtype_format(dt, exact, len, &err);
  FUZZ_CHECK(s != DLB_OK);
  FUZZ_CHECK(fuzz::error_filled(err));
  FUZZ_CHECK(dlb_dtype_format(dt, nullptr, 0, nullptr) != DLB_OK);
  FUZZ_CHECK(dlb_dtype_format(dt, nullptr, sizeof name, nullptr) != DLB_OK);
}

void check_device_round_trip(DLDevice dev) {
  char text[DLB_DEVICE_NAME_SIZE] = {};
  dlb_error err;
  fuzz::error_reset(&err);
  int s = dlb_device_format(dev, text, sizeof text, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  const size_t len = std::strlen(text);
  FUZZ_CHECK(len > 0 && len < sizeof text);

  const char* type_name = dlb_device_type_name(dev.device_type);
  if (type_name != nullptr) {
    FUZZ_CHECK(std::strncmp(text, type_name, std::strlen(type_name)) == 0);
    if (dev.device_id >= 0) {
      DLDevice back = {kDLExtDev, -77};
      s = dlb_device_parse(text, &back, &err);
      FUZZ_CHECK_MSG(s == DLB_OK, s, err);
      if (!same_device(back, dev)) {
        std::fprintf(stderr, "device {%d,%d} formats as \"%s\", which parses to {%d,%d}\n",
                     static_cast<int>(dev.device_type), dev.device_id, text,
                     static_cast<int>(back.device_type), back.device_id);
        FUZZ_CHECK(same_device(back, dev));
      }
    }
  }

  char exact[DLB_DEVICE_NAME_SIZE] = {};
  s = dlb_device_format(dev, exact, len + 1, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  FUZZ_CHECK(std::strcmp(exact, text) == 0);
  fuzz::error_reset(&err);
  FUZZ_CHECK(dlb_device_format(dev, exact, len, &err) != DLB_OK);
  FUZZ_CHECK(fuzz::error_filled(err));
  FUZZ_CHECK(dlb_device_format(dev, nullptr, sizeof text, nullptr) != DLB_OK);
}

void fuzz_strings(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);  // stops at the first NUL
  const char* str = text.c_str();
  dlb_error err;

  const DLDataType sentinel = {0xAB, 0xCD, 0xEF01};
  DLDataType dt = sentinel;
  fuzz::error_reset(&err);
  int s = dlb_dtype_parse(str, &dt, &err);
  if (s == DLB_OK) {
    FUZZ_CHECK(fuzz::error_untouched(err));
    const int v = dlb_dtype_validate(dt, &err);
    FUZZ_CHECK_MSG(v == DLB_OK, v, err);
    check_valid_dtype_round_trip(dt);
  } else {
    FUZZ_CHECK(fuzz::error_filled(err));
    FUZZ_CHECK(same_dtype(dt, DLDataType{0, 0, 0}));  // outputs are cleared on error
  }
  FUZZ_CHECK(dlb_dtype_parse(str, &dt, nullptr) == s);  // no message wanted: same answer

  DLDevice dev = {kDLExtDev, -77};
  fuzz::error_reset(&err);
  s = dlb_device_parse(str, &dev, &err);
  if (s == DLB_OK) {
    FUZZ_CHECK(fuzz::error_untouched(err));
    // "device_type_<n>" (what dlb_device_format writes for types without a name) is accepted
    // for any n, so the type need not be known; ids are never negative.
    FUZZ_CHECK(static_cast<int32_t>(dev.device_type) >= 0 && dev.device_id >= 0);
    check_device_round_trip(dev);
    // The parsed device formats to a name that parses back to it.
    char again[DLB_DEVICE_NAME_SIZE] = {};
    FUZZ_CHECK(dlb_device_format(dev, again, sizeof again, nullptr) == DLB_OK);
    DLDevice back = {kDLExtDev, -77};
    s = dlb_device_parse(again, &back, &err);
    FUZZ_CHECK_MSG(s == DLB_OK, s, err);
    FUZZ_CHECK(same_device(back, dev));
  } else {
    FUZZ_CHECK(fuzz::error_filled(err));
  }
  FUZZ_CHECK(dlb_device_parse(str, &dev, nullptr) == s);
}

// Expected result of dlb_dtype_storage_size for a valid dtype, or false if it overflows 64 bits.
bool expected_storage(DLDataType dt, uint64_t count, uint64_t flags, uint64_t* out) {
  const uint64_t element_bits = static_cast<uint64_t>(dt.bits) * dt.lanes;
  const bool packed = dt.bits < 8 && (flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) == 0;
  if (packed) {
    uint64_t total_bits;
    if (__builtin_mul_overflow(count, element_bits, &total_bits)) {
      // ceil(count * element_bits / 8) without the 64-bit product: split count.
      const uint64_t whole = count / 8, rest = count % 8;
      uint64_t a, b = (rest * element_bits + 7) / 8;
      if (__builtin_mul_overflow(whole, element_bits, &a)) return false;
      return !__builtin_add_overflow(a, b, out);
    }
    *out = total_bits / 8 + (total_bits % 8 != 0 ? 1 : 0);
    return true;
  }
  const uint64_t element_size = (element_bits + 7) / 8;
  return !__builtin_mul_overflow(count, element_size, out);
}

void fuzz_raw_dtype(Reader& in) {
  DLDataType dt;
  dt.code = in.u8();
  dt.bits = in.u8();
  dt.lanes = in.u16();
  const uint8_t flag_byte = in.u8();
  const uint64_t flags = flag_byte == 0xFF ? in.u64() : (flag_byte & 0x07);
  const uint8_t count_kind = in.u8();
  const int64_t count = count_kind < 0xC0 ? static_cast<int64_t>(in.u16()) : in.i64();

  dlb_error verr, ferr;
  fuzz::error_reset(&verr);
  fuzz::error_reset(&ferr);
  char name[DLB_DTYPE_NAME_SIZE] = {};
  const int v = dlb_dtype_validate(dt, &verr);
  const int f = dlb_dtype_format(dt, name, sizeof name, &ferr);
  if ((v == DLB_OK) != (f == DLB_OK)) {
    std::fprintf(stderr, "dtype {%u,%u,%u}: validate says %d (%s), format says %d (%s)\n", dt.code,
                 dt.bits, dt.lanes, v, verr.message, f, ferr.message);
    FUZZ_CHECK((v == DLB_OK) == (f == DLB_OK));
  }

  const char* code_name = dlb_dtype_code_name(dt.code);
  FUZZ_CHECK((code_name != nullptr) == (dt.code <= kDLBcomplex));
  if (code_name == nullptr) FUZZ_CHECK(dlb_dtype_bits_allowed(dt.code, dt.bits) == 0);
  const bool rules_ok =
      code_name != nullptr && dt.lanes >= 1 && dlb_dtype_bits_allowed(dt.code, dt.bits) == 1;
  FUZZ_CHECK((v == DLB_OK) == rules_ok);

  uint64_t bytes = 0xDEADBEEF;
  dlb_error serr;
  fuzz::error_reset(&serr);
  const int s = dlb_dtype_storage_size(dt, count, flags, &bytes, &serr);
  if (v != DLB_OK) {
    FUZZ_CHECK(fuzz::error_filled(verr));
    FUZZ_CHECK(fuzz::error_filled(ferr));
    FUZZ_CHECK(s != DLB_OK);
    FUZZ_CHECK(fuzz::error_filled(serr));
    return;
  }
  FUZZ_CHECK(fuzz::error_untouched(verr));
  FUZZ_CHECK(fuzz::error_untouched(ferr));
  FUZZ_CHECK(std::strlen(name) > 0);
  // The fixed widths of the facts page.
  if (dt.code == kDLBool) FUZZ_CHECK(dt.bits == 8);
  if (dt.code >= kDLFloat8_e3m4 && dt.code <= kDLFloat8_e8m0fnu) FUZZ_CHECK(dt.bits == 8);
  if (dt.code == kDLFloat6_e2m3fn || dt.code == kDLFloat6_e3m2fn) FUZZ_CHECK(dt.bits == 6);
  if (dt.code == kDLFloat4_e2m1fn) FUZZ_CHECK(dt.bits == 4);

  const uint32_t element_bits = static_cast<uint32_t>(dt.bits) * dt.lanes;
  FUZZ_CHECK(dlb_dtype_element_bits(dt) == element_bits);
  FUZZ_CHECK(dlb_dtype_is_subbyte(dt) == (dt.bits < 8 ? 1 : 0));
  FUZZ_CHECK(dlb_dtype_element_size(dt) == (element_bits + 7) / 8);
  check_valid_dtype_round_trip(dt);

  if (count < 0) {
    FUZZ_CHECK(s != DLB_OK);
    FUZZ_CHECK(fuzz::error_filled(serr));
    return;
  }
  uint64_t want = 0;
  const bool fits = expected_storage(dt, static_cast<uint64_t>(count), flags, &want);
  if (s == DLB_OK) {
    FUZZ_CHECK(fits);
    if (bytes != want) {
      std::fprintf(stderr, "storage_size({%u,%u,%u}, %lld, flags %llu) = %llu, want %llu\n",
                   dt.code, dt.bits, dt.lanes, static_cast<long long>(count),
                   static_cast<unsigned long long>(flags), static_cast<unsigned long long>(bytes),
                   static_cast<unsigned long long>(want));
      FUZZ_CHECK(bytes == want);
    }
  } else {
    // Only sizes near the 64-bit range may be refused as overflow.
    FUZZ_CHECK_MSG(s == DLB_ERR_OVERFLOW, s, serr);
    FUZZ_CHECK(!fits || want >= (uint64_t{1} << 60));
  }
}

void fuzz_raw_device(Reader& in) {
  DLDevice dev;
  const uint8_t t = in.u8();
  const int32_t type = t < 0xC0 ? static_cast<int32_t>(t % 24) - 1 : in.i32();
  dev.device_type = static_cast<DLDeviceType>(type);
  const uint8_t id = in.u8();
  dev.device_id = id < 0xC0 ? static_cast<int32_t>(id % 8) : in.i32();

  // Names exist exactly for the device types DLPack defines (1..20 without 5 and 6).
  const bool defined = type >= 1 && type <= 20 && type != 5 && type != 6;
  const char* type_name = dlb_device_type_name(type);
  FUZZ_CHECK((type_name != nullptr) == defined);
  if (defined) FUZZ_CHECK(dlb_device_type_is_known(type) == 1);
  if (dev.device_id == 0) {
    const bool host =
        type == kDLCPU || type == kDLCUDAHost || type == kDLCUDAManaged || type == kDLROCMHost;
    FUZZ_CHECK(dlb_device_is_host_readable(dev) == (host ? 1 : 0));
  }
  check_device_round_trip(dev);

  FUZZ_CHECK(dlb_status_name(static_cast<int>(in.i32())) != nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  switch (data[0] % 3) {
    case 0:
      fuzz_strings(data + 1, size - 1);
      break;
    case 1: {
      Reader in(data + 1, size - 1);
      fuzz_raw_dtype(in);
      break;
    }
    default: {
      Reader in(data + 1, size - 1);
      fuzz_raw_device(in);
      break;
    }
  }
  return 0;
}
