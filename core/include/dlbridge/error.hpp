/*
 * dlbridge/error.hpp - the C++ helpers' errors: dlbridge::Error, the exception every failed C
 * call becomes (its DLB_ERR_* status and the core's message, verbatim), and the detail helpers
 * that turn a status into that exception and hand counts and arrays to the C API.
 * Part of dlbridge/dlbridge.hpp, which includes it; including this header alone works too.
 */
#ifndef DLBRIDGE_ERROR_HPP_
#define DLBRIDGE_ERROR_HPP_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
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

}  // namespace dlbridge

#endif  // DLBRIDGE_ERROR_HPP_
