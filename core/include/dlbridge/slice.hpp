/*
 * dlbridge/slice.hpp - slice bounds for Tensor::slice() (kSliceNone, range(), all()) and the
 * library-wide free functions live_count(), version_string() and synchronize().
 * Part of dlbridge/dlbridge.hpp, which includes it; including this header alone works too.
 */
#ifndef DLBRIDGE_SLICE_HPP_
#define DLBRIDGE_SLICE_HPP_

#include <cstdint>
#include <string>

#include "dlbridge/dlbridge.h"
#include "dlbridge/error.hpp"
#include "dlbridge/device.hpp"

namespace dlbridge {

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

}  // namespace dlbridge

#endif  // DLBRIDGE_SLICE_HPP_
