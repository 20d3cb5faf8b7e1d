// The OpenCL runtime as the backend sees it: the ICD loader opened at run time, the devices of
// every platform, and per device the context, queue and copy kernels the library owns.
//
// Nothing here links against OpenCL: the functions are looked up with dlsym the first time
// anything asks for the runtime, so a library built with the OpenCL headers loads and does all
// its CPU work on machines without an ICD loader.
#ifndef DLBRIDGE_SRC_OPENCL_OPENCL_RUNTIME_HPP_
#define DLBRIDGE_SRC_OPENCL_OPENCL_RUNTIME_HPP_

// Only OpenCL 1.2 calls are used, so that any ICD loader and any platform will do.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <cstdint>
#include <mutex>

#include "../internal.hpp"

namespace dlb {
namespace opencl {

// Every OpenCL function the backend calls. The table member has the function's own name, so
// that call sites read like plain OpenCL (`api.clFinish(queue)`).
#define DLB_OPENCL_FUNCTIONS(X)   \
  X(clGetPlatformIDs)             \
  X(clGetPlatformInfo)            \
  X(clGetDeviceIDs)               \
  X(clGetDeviceInfo)              \
  X(clCreateContext)              \
  X(clGetContextInfo)             \
  X(clCreateCommandQueue)         \
  X(clReleaseCommandQueue)        \
  X(clGetCommandQueueInfo)        \
  X(clCreateBuffer)               \
  X(clReleaseMemObject)           \
  X(clGetMemObjectInfo)           \
  X(clCreateProgramWithSource)    \
  X(clBuildProgram)               \
  X(clGetProgramBuildInfo)        \
  X(clCreateKernel)               \
  X(clSetKernelArg)               \
  X(clGetKernelWorkGroupInfo)     \
  X(clEnqueueNDRangeKernel)       \
  X(clEnqueueReadBuffer)          \
  X(clEnqueueWriteBuffer)         \
  X(clEnqueueCopyBuffer)          \
  X(clEnqueueMarkerWithWaitList)  \
  X(clEnqueueBarrierWithWaitList) \
  X(clWaitForEvents)              \
  X(clReleaseEvent)               \
  X(clFlush)                      \
  X(clFinish)

struct Api {
#define DLB_OPENCL_MEMBER(name) decltype(&::name) name;
  DLB_OPENCL_FUNCTIONS(DLB_OPENCL_MEMBER)
#undef DLB_OPENCL_MEMBER
};

// Word sizes the copy kernels move: 1, 2, 4, 8 and 16 bytes (index = log2 of the size).
constexpr int kWordSizes = 5;

// One OpenCL device and what the library made for it. The context and queue are created the
// first time the device is used, the copy kernels the first time a strided copy needs them;
// both are kept until the process ends.
struct Device {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  char name[256] = {};     // "platform name / device name"
  uint64_t max_alloc = 0;  // CL_DEVICE_MAX_MEM_ALLOC_SIZE

  std::once_flag context_once;
  int context_status = DLB_OK;
  char context_message[DLB_ERROR_MESSAGE_SIZE] = {};
  cl_context context = nullptr;      // one context per device (see docs/opencl.md)
  cl_command_queue queue = nullptr;  // the library's in-order queue

  std::once_flag kernels_once;
  int kernels_status = DLB_OK;
  char kernels_message[DLB_ERROR_MESSAGE_SIZE] = {};
  cl_kernel rows[kWordSizes] = {};   // strided copy along the innermost dimension
  cl_kernel tiles[kWordSizes] = {};  // transposing copy in 32x32 blocks
  size_t rows_group_size = 1;        // the largest work-group the rows kernels accept
  size_t max_item_sizes[2] = {1, 1};  // CL_DEVICE_MAX_WORK_ITEM_SIZES along dimensions 0 and 1
  bool tiles_usable = false;         // the tile kernels were built and fit the device
  bool cpu_layout = false;           // kernels laid out for a CPU device (see the source)
  // clSetKernelArg is the one OpenCL call that is not thread-safe: arguments are set and the
  // kernel enqueued under this lock (enqueueing captures the arguments).
  std::mutex launch_mutex;
};

// The process-wide runtime: the loader's functions and the devices of all platforms, flattened
// (platform 0's devices first). Loaded once; never freed, so that deleters running at exit
// still find it.
struct Runtime {
  int status = DLB_OK;  // DLB_OK, or why OpenCL cannot be used here (replayed to every caller)
  char message[DLB_ERROR_MESSAGE_SIZE] = {};
  Api api{};
  int32_t device_count = 0;
  Device* devices = nullptr;
  // The ICD dispatch-table pointer of each platform: the first word of every OpenCL object
  // the platform makes, used to recognise cl_mem handles without calling into the runtime.
  cl_uint platform_count = 0;
  uintptr_t* dispatch = nullptr;
};

// Loads the runtime on the first call (thread-safe); never NULL. Check `status` before use.
Runtime* runtime();

// The runtime when it is usable; otherwise its status and message.
int require_runtime(Runtime** out, dlb_error* error);

// The runtime plus device `device_id`, checked against the device count.
int find_device(int32_t device_id, Runtime** runtime_out, Device** device_out, dlb_error* error);

// Creates the device's context and queue on first use.
int ensure_context(Runtime& rt, Device& device, dlb_error* error);

// Builds the copy kernels in the device's context on first use (and the context before them).
int ensure_kernels(Runtime& rt, Device& device, dlb_error* error);

// "CL_INVALID_VALUE" for an OpenCL error code, "CL_UNKNOWN_ERROR" for one this table lacks.
const char* error_name(cl_int code);

// Reports a failed OpenCL call: DLB_ERR_DEVICE, "clFinish failed: CL_INVALID_VALUE (-30)".
int cl_fail(dlb_error* error, const char* call, cl_int code);

}  // namespace opencl
}  // namespace dlb

#endif  // DLBRIDGE_SRC_OPENCL_OPENCL_RUNTIME_HPP_
