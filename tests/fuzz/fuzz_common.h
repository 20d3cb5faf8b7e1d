// fuzz_common.h - small helpers shared by the fuzz targets: a byte reader that returns zeros
// once the input runs out, and FUZZ_CHECK, which prints the failed condition and aborts (the
// fuzzer, or the corpus replay driver, then reports the input as a crash).
#ifndef DLB_TESTS_FUZZ_COMMON_H_
#define DLB_TESTS_FUZZ_COMMON_H_

#include <dlbridge/dlbridge.h>
#include "../no_builtin_backends.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

// Like FUZZ_CHECK, with the dlbridge status and message of the call that was checked.
#define FUZZ_CHECK_MSG(cond, status, err)                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s (status %d, message \"%s\")\n", __FILE__, \
                   __LINE__, #cond, (status), (err).message);                                      \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)

namespace fuzz {

// Reads little-endian integers from the fuzz input; past the end every read yields 0.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() {
    uint32_t lo = u16();
    uint32_t hi = u16();
    return lo | (hi << 16);
  }
  uint64_t u64() {
    uint64_t lo = u32();
    uint64_t hi = u32();
    return lo | (hi << 32);
  }
  int8_t i8() { return static_cast<int8_t>(u8()); }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  int64_t i64() { return static_cast<int64_t>(u64()); }

  size_t remaining() const { return size_ - pos_; }
  const uint8_t* rest() const { return data_ + pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// A dlb_error whose message is set to a marker, so that "left untouched on success" and
// "filled in on error" can both be checked.
inline void error_reset(dlb_error* e) {
  std::memset(e->message, 0, sizeof e->message);
  std::memcpy(e->message, "<untouched>", sizeof "<untouched>");
}
inline bool error_untouched(const dlb_error& e) {
  return std::strcmp(e.message, "<untouched>") == 0;
}
// A filled-in message: NUL-terminated inside the buffer, not empty, not the marker.
inline bool error_filled(const dlb_error& e) {
  return std::memchr(e.message, '\0', sizeof e.message) != nullptr && e.message[0] != '\0' &&
         !error_untouched(e);
}

// Devices whose data is an address: every tensor dlbridge hands out for them has its offset
// folded into data (byte_offset 0) unless data is NULL.
inline bool address_based(int32_t device_type) {
  switch (device_type) {
    case kDLCPU: case kDLCUDA: case kDLCUDAHost: case kDLROCM: case kDLROCMHost:
    case kDLCUDAManaged: case kDLOneAPI:
      return true;
    default:
      return false;
  }
}

}  // namespace fuzz

#endif  // DLB_TESTS_FUZZ_COMMON_H_
