// Included by the suites that test the core alone (tests/core, tests/fuzz). The built-in device
// backends (CUDA, OpenCL) check the memory of device tensors entering the library, and these
// suites build device tensors from host memory and made-up handles to exercise validation,
// views and routing; so the built-in backends are unregistered before anything runs. The
// device suites (tests/cuda, tests/opencl) test the backends themselves.
#ifndef DLBRIDGE_TESTS_NO_BUILTIN_BACKENDS_HPP_
#define DLBRIDGE_TESTS_NO_BUILTIN_BACKENDS_HPP_

#include <cstdint>
#include <initializer_list>

#include "dlbridge/dlbridge.h"

inline const bool kBuiltinBackendsRemoved = [] {
  for (int32_t type : {int32_t{kDLCUDA}, int32_t{kDLCUDAHost}, int32_t{kDLCUDAManaged}, int32_t{kDLOpenCL}}) {
    dlb_backend_unregister(type, nullptr);  // DLB_ERR_INVALID_ARGUMENT when not built: fine
  }
  return true;
}();

#endif  // DLBRIDGE_TESTS_NO_BUILTIN_BACKENDS_HPP_
