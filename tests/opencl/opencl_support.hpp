// Support shared by the opencl test programs: raw OpenCL, which the library's results are
// checked against, and the error-report helpers. The programs open libOpenCL.so.1 themselves
// (as the library does), so that they link on machines without an ICD loader and can report
// "skipped" there.
#ifndef DLBRIDGE_TESTS_OPENCL_OPENCL_SUPPORT_HPP_
#define DLBRIDGE_TESTS_OPENCL_OPENCL_SUPPORT_HPP_

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dlbridge/dlbridge.h"
#include "../error_report.hpp"

namespace raw {

#define TEST_CL_FUNCTIONS(X)                                                                 \
  X(clCreateBuffer)                                                                          \
  X(clCreateSubBuffer) X(clReleaseMemObject) X(clGetMemObjectInfo) X(clEnqueueReadBuffer)    \
      X(clEnqueueWriteBuffer) X(clCreateContext) X(clReleaseContext) X(clCreateCommandQueue) \
          X(clReleaseCommandQueue) X(clFinish) X(clGetDeviceInfo) X(clGetPlatformInfo)       \
              X(clGetCommandQueueInfo) X(clCreateImage)

struct Functions {
#define TEST_CL_MEMBER(name) decltype(&::name) name = nullptr;
  TEST_CL_FUNCTIONS(TEST_CL_MEMBER)
#undef TEST_CL_MEMBER
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;  // the library's context for device 0
  cl_command_queue queue = nullptr;
  int32_t device_count = 0;
};

inline Functions cl;

// Resolves the functions and the library's objects for device 0; false when either fails.
inline bool load() {
  void* library = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return false;
#define TEST_CL_RESOLVE(name)                                           \
  cl.name = reinterpret_cast<decltype(&::name)>(dlsym(library, #name)); \
  if (cl.name == nullptr) return false;
  TEST_CL_FUNCTIONS(TEST_CL_RESOLVE)
#undef TEST_CL_RESOLVE
  void *platform = nullptr, *device = nullptr, *context = nullptr, *queue = nullptr;
  if (dlb_opencl_device_objects(0, &platform, &device, &context, &queue, nullptr) != DLB_OK) {
    return false;
  }
  cl.platform = static_cast<cl_platform_id>(platform);
  cl.device = static_cast<cl_device_id>(device);
  cl.context = static_cast<cl_context>(context);
  cl.queue = static_cast<cl_command_queue>(queue);
  return dlb_opencl_device_count(&cl.device_count, nullptr) == DLB_OK;
}

// The start-up both opencl programs share: exit 77 without OpenCL (1 when DLB_REQUIRE_OPENCL=1
// asks for it), 1 when the raw functions cannot be loaded; -1 to go on with the tests.
inline int check_opencl_or_skip() {
  dlb_error error;
  const int status = dlb_opencl_is_available(&error);
  const char* require = std::getenv("DLB_REQUIRE_OPENCL");
  const bool required = require != nullptr && std::strcmp(require, "1") == 0;
  if (status != DLB_OK) {
    std::fprintf(stderr, "%s: OpenCL is not available: %s: %s\n",
                 required ? "FAIL (DLB_REQUIRE_OPENCL=1)" : "skipped", dlb_status_name(status),
                 error.message);
    return required ? 1 : 77;
  }
  if (!load()) {
    std::fprintf(stderr, "FAIL: dlbridge found OpenCL but this test could not load it itself\n");
    return 1;
  }
  return -1;
}

inline cl_mem buffer(size_t nbytes, cl_mem_flags flags = CL_MEM_READ_WRITE,
                     cl_context context = nullptr) {
  cl_int code = CL_SUCCESS;
  cl_mem mem =
      cl.clCreateBuffer(context != nullptr ? context : cl.context, flags, nbytes, nullptr, &code);
  REQUIRE(code == CL_SUCCESS);
  REQUIRE(mem != nullptr);
  return mem;
}

inline size_t buffer_size(const void* mem) {
  size_t size = 0;
  REQUIRE(cl.clGetMemObjectInfo(static_cast<cl_mem>(const_cast<void*>(mem)), CL_MEM_SIZE,
                                sizeof(size), &size, nullptr) == CL_SUCCESS);
  return size;
}

// The whole buffer, read with a blocking clEnqueueReadBuffer on `queue` (the library's by
// default: the library's NULL-stream calls have completed when they return).
inline std::vector<unsigned char> read_buffer(const void* mem, cl_command_queue queue = nullptr) {
  std::vector<unsigned char> bytes(buffer_size(mem));
  REQUIRE(cl.clEnqueueReadBuffer(queue != nullptr ? queue : cl.queue,
                                 static_cast<cl_mem>(const_cast<void*>(mem)), CL_TRUE, 0,
                                 bytes.size(), bytes.data(), 0, nullptr, nullptr) == CL_SUCCESS);
  return bytes;
}

inline void write_buffer(void* mem, const std::vector<unsigned char>& bytes,
                         cl_command_queue queue = nullptr) {
  REQUIRE(cl.clEnqueueWriteBuffer(queue != nullptr ? queue : cl.queue, static_cast<cl_mem>(mem),
                                  CL_TRUE, 0, bytes.size(), bytes.data(), 0, nullptr,
                                  nullptr) == CL_SUCCESS);
}

// Deterministic bytes that differ from element to element and from seed to seed.
inline void fill(void* data, size_t nbytes, uint32_t seed) {
  auto* bytes = static_cast<unsigned char*>(data);
  uint32_t state = seed * 2654435761u + 0x9E3779B9u;
  for (size_t i = 0; i < nbytes; ++i) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    bytes[i] = static_cast<unsigned char>(state >> 7);
  }
}

// A context of the caller's own on device 0, released at scope end.
struct OtherContext {
  cl_context context = nullptr;
  OtherContext() {
    cl_int code = CL_SUCCESS;
    context = cl.clCreateContext(nullptr, 1, &cl.device, nullptr, nullptr, &code);
    REQUIRE(code == CL_SUCCESS);
  }
  ~OtherContext() { cl.clReleaseContext(context); }
  OtherContext(const OtherContext&) = delete;
  OtherContext& operator=(const OtherContext&) = delete;
};

// A caller's queue (on the library's context unless told otherwise), released at scope end.
struct CallerQueue {
  cl_command_queue queue = nullptr;
  explicit CallerQueue(cl_context context = nullptr) {
    cl_int code = CL_SUCCESS;
    queue = cl.clCreateCommandQueue(context != nullptr ? context : cl.context, cl.device, 0, &code);
    REQUIRE(code == CL_SUCCESS);
  }
  ~CallerQueue() { cl.clReleaseCommandQueue(queue); }
  CallerQueue(const CallerQueue&) = delete;
  CallerQueue& operator=(const CallerQueue&) = delete;
};

}  // namespace raw

namespace test {

// What the library says about OpenCL device `id` when it does not exist.
inline std::string missing_device(int id) {
  const int count = raw::cl.device_count;
  return "opencl device " + std::to_string(id) + " does not exist (" + std::to_string(count) +
         (count == 1 ? " device)" : " devices)");
}

}  // namespace test

#endif  // DLBRIDGE_TESTS_OPENCL_OPENCL_SUPPORT_HPP_
