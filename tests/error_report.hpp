// The error-report helper every C++ test suite shares: a sentinel-filled dlb_error, so that a
// test can tell a report the call left untouched from one it wrote, and its message as a string.
// Kept apart from tests/core/support.hpp, which also unregisters the built-in device backends.
#ifndef DLBRIDGE_TESTS_ERROR_REPORT_HPP_
#define DLBRIDGE_TESTS_ERROR_REPORT_HPP_

#include <cstdio>
#include <cstring>
#include <string>

#include "dlbridge/dlbridge.h"

namespace test {

// ---- error reports ------------------------------------------------------------------------

// The sentinel every error report starts from, so that a test can tell a report the call left
// untouched from one it wrote, and a stale message cannot pass for a new one.
constexpr const char kUntouched[] = "<untouched>";

// An error report pre-filled with the sentinel.
inline dlb_error fresh_error() {
  dlb_error error;
  std::memset(&error, 0, sizeof(error));
  std::snprintf(error.message, sizeof(error.message), "%s", kUntouched);
  return error;
}

// The message of a report, for comparisons.
inline std::string msg(const dlb_error& error) { return std::string(error.message); }

// The same report as an object reused across calls: fresh() refills it before each call.
struct Error {
  dlb_error e = fresh_error();
  dlb_error* fresh() {
    e = fresh_error();
    return &e;
  }
  std::string text() const { return msg(e); }
};

}  // namespace test

#endif  // DLBRIDGE_TESTS_ERROR_REPORT_HPP_
