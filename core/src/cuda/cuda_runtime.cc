// The CUDA runtime: finding the driver and the devices, and reporting CUDA errors.
#include "cuda_runtime.hpp"

#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>

namespace dlb {
namespace cuda {

const Runtime& runtime() {
  static const Runtime state = [] {
    Runtime r{};
    // Left loaded on purpose: the CUDA runtime uses this same handle for the whole process.
    if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) == nullptr) {
      r.status = DLB_ERR_DEVICE_UNAVAILABLE;
      std::snprintf(r.reason, sizeof(r.reason), "no CUDA driver found");
      return r;
    }
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaErrorNoDevice || (e == cudaSuccess && count <= 0)) {
      r.status = DLB_ERR_DEVICE_UNAVAILABLE;
      std::snprintf(r.reason, sizeof(r.reason), "no CUDA device");
    } else if (e == cudaErrorInsufficientDriver) {
      r.status = DLB_ERR_DEVICE_UNAVAILABLE;
      std::snprintf(r.reason, sizeof(r.reason),
                    "the CUDA driver is older than the CUDA %d.%d runtime dlbridge was built with",
                    CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
    } else if (e != cudaSuccess) {
      r.status = DLB_ERR_DEVICE;
      std::snprintf(r.reason, sizeof(r.reason), "cudaGetDeviceCount failed: %s: %s",
                    cudaGetErrorName(e), cudaGetErrorString(e));
    } else {
      r.status = DLB_OK;
      r.device_count = count;
    }
    return r;
  }();
  return state;
}

int ready(dlb_error* error) {
  const Runtime& r = runtime();
  return r.status == DLB_OK ? DLB_OK : fail(error, r.status, "%s", r.reason);
}

int check_consumer_stream(int64_t consumer_stream, dlb_error* error) {
  if (consumer_stream == 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "consumer stream 0 is ambiguous and not allowed for CUDA: pass 1 for the legacy "
                "default stream or 2 for the per-thread default stream");
  }
  if (consumer_stream < -1 && consumer_stream != DLB_CUDA_STREAM_NONE) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "consumer stream %lld is not a valid CUDA stream",
                static_cast<long long>(consumer_stream));
  }
  return DLB_OK;
}

// Reports a failed CUDA call: "<what> failed: cudaErrorX: text". Clears the thread's
// last-error slot so that a later call does not see this failure again.
__attribute__((format(printf, 3, 4))) int cuda_fail(dlb_error* error, cudaError_t e,
                                                    const char* what, ...) {
  cudaGetLastError();
  char text[256];
  va_list args;
  va_start(args, what);
  std::vsnprintf(text, sizeof(text), what, args);
  va_end(args);
  const int status = e == cudaErrorMemoryAllocation ? DLB_ERR_OUT_OF_MEMORY : DLB_ERR_DEVICE;
  return fail(error, status, "%s failed: %s: %s", text, cudaGetErrorName(e), cudaGetErrorString(e));
}

}  // namespace cuda
}  // namespace dlb
