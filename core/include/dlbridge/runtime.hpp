/*
 * dlbridge/runtime.hpp - the device runtimes: dlbridge::cuda (availability, device count,
 * pointer device, the DLPack stream handshake) and dlbridge::opencl (availability, devices,
 * the queue handshake).
 * Part of dlbridge/dlbridge.hpp, which includes it; including this header alone works too.
 */
#ifndef DLBRIDGE_RUNTIME_HPP_
#define DLBRIDGE_RUNTIME_HPP_

#include <cstdint>
#include <optional>
#include <string>

#include "dlbridge/dlbridge.h"
#include "dlbridge/error.hpp"
#include "dlbridge/device.hpp"

namespace dlbridge {

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

}  // namespace dlbridge

#endif  // DLBRIDGE_RUNTIME_HPP_
