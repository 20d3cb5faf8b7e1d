// The CUDA runtime as the backend sees it: whether a driver and a device are there (found
// once, at the first CUDA operation), the translation of CUDA errors, and the scope that
// makes a device current.
//
// The CUDA runtime is linked statically and loads the driver at its first call, so the library
// loads everywhere. Before that first call the backend looks for the driver itself: without
// one, every CUDA operation reports "no CUDA driver found" and the runtime is never started.
#ifndef DLBRIDGE_SRC_CUDA_CUDA_RUNTIME_HPP_
#define DLBRIDGE_SRC_CUDA_CUDA_RUNTIME_HPP_

#include <cstdint>

#include <cuda_runtime_api.h>

#include "../internal.hpp"

namespace dlb {
namespace cuda {

struct Runtime {
  int status;  // DLB_OK, or why CUDA work cannot run here
  char reason[160];
  int32_t device_count;
};

// Looks for the driver and the devices on the first call (thread-safe).
const Runtime& runtime();

// DLB_OK when CUDA work can run here; otherwise the reason, reported into `error`.
int ready(dlb_error* error);

// Reports a failed CUDA call: "<what> failed: cudaErrorX: text". Clears the thread's
// last-error slot so that a later call does not see this failure again.
int cuda_fail(dlb_error* error, cudaError_t e, const char* what, ...)
    __attribute__((format(printf, 3, 4)));

// Checks a consumer stream given by the DLPack CUDA convention (dlb_cuda_stream_handshake):
// 0 and negative values other than -1 and DLB_CUDA_STREAM_NONE are refused.
int check_consumer_stream(int64_t consumer_stream, dlb_error* error);

// The cudaStream_t of a checked consumer stream other than -1.
inline cudaStream_t consumer_stream_handle(int64_t consumer_stream) {
  return consumer_stream == DLB_CUDA_STREAM_NONE || consumer_stream == 1 ? cudaStreamLegacy
         : consumer_stream == 2 ? cudaStreamPerThread
                                : reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(consumer_stream));
}

// Makes a device current for the scope and restores the caller's current device afterwards:
// a library must not change which device its caller's thread works on.
class DeviceScope {
 public:
  DeviceScope() = default;
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  ~DeviceScope() {
    if (switched_) cudaSetDevice(previous_);
  }
  int enter(int32_t device_id, dlb_error* error) {
    cudaError_t e = cudaGetDevice(&previous_);
    if (e != cudaSuccess) return cuda_fail(error, e, "cudaGetDevice");
    if (previous_ == device_id) return DLB_OK;
    e = cudaSetDevice(device_id);
    if (e != cudaSuccess) return cuda_fail(error, e, "cudaSetDevice(%d)", static_cast<int>(device_id));
    switched_ = true;
    return DLB_OK;
  }

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace cuda
}  // namespace dlb

#endif  // DLBRIDGE_SRC_CUDA_CUDA_RUNTIME_HPP_
