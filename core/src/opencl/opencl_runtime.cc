// Loading the OpenCL ICD loader, finding the devices, and the per-device context, queue and
// copy kernels.
#include "opencl_runtime.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace dlb {
namespace opencl {

namespace {

// The ICD loader's "no platform" code (cl_khr_icd); the 1.2 headers declare it in cl_ext.h.
constexpr cl_int kPlatformNotFoundKhr = -1001;

// kKernelSource: the text of opencl_kernels.cl, compiled once per context (see that file).
// The build generates this fragment with embed_cl.py.
#include "opencl_kernels_cl.inc"

// The tile kernels' fixed work-group shape and the local memory their widest tile needs.
constexpr size_t kTileGroupX = 32, kTileGroupY = 8;
constexpr cl_ulong kTileLocalBytes = 32 * 33 * 16;

struct ErrorName {
  cl_int code;
  const char* name;
};

// OpenCL 1.2's error codes, plus the few later versions and the ICD loader added.
constexpr ErrorName kErrorNames[] = {
    {0, "CL_SUCCESS"},
    {-1, "CL_DEVICE_NOT_FOUND"},
    {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},
    {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
    {-8, "CL_MEM_COPY_OVERLAP"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH"},
    {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"},
    {-12, "CL_MAP_FAILURE"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
    {-15, "CL_COMPILE_PROGRAM_FAILURE"},
    {-16, "CL_LINKER_NOT_AVAILABLE"},
    {-17, "CL_LINK_PROGRAM_FAILURE"},
    {-18, "CL_DEVICE_PARTITION_FAILED"},
    {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
    {-30, "CL_INVALID_VALUE"},
    {-31, "CL_INVALID_DEVICE_TYPE"},
    {-32, "CL_INVALID_PLATFORM"},
    {-33, "CL_INVALID_DEVICE"},
    {-34, "CL_INVALID_CONTEXT"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES"},
    {-36, "CL_INVALID_COMMAND_QUEUE"},
    {-37, "CL_INVALID_HOST_PTR"},
    {-38, "CL_INVALID_MEM_OBJECT"},
    {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
    {-40, "CL_INVALID_IMAGE_SIZE"},
    {-41, "CL_INVALID_SAMPLER"},
    {-42, "CL_INVALID_BINARY"},
    {-43, "CL_INVALID_BUILD_OPTIONS"},
    {-44, "CL_INVALID_PROGRAM"},
    {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"},
    {-47, "CL_INVALID_KERNEL_DEFINITION"},
    {-48, "CL_INVALID_KERNEL"},
    {-49, "CL_INVALID_ARG_INDEX"},
    {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"},
    {-52, "CL_INVALID_KERNEL_ARGS"},
    {-53, "CL_INVALID_WORK_DIMENSION"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE"},
    {-56, "CL_INVALID_GLOBAL_OFFSET"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST"},
    {-58, "CL_INVALID_EVENT"},
    {-59, "CL_INVALID_OPERATION"},
    {-60, "CL_INVALID_GL_OBJECT"},
    {-61, "CL_INVALID_BUFFER_SIZE"},
    {-62, "CL_INVALID_MIP_LEVEL"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
    {-64, "CL_INVALID_PROPERTY"},
    {-65, "CL_INVALID_IMAGE_DESCRIPTOR"},
    {-66, "CL_INVALID_COMPILER_OPTIONS"},
    {-67, "CL_INVALID_LINKER_OPTIONS"},
    {-68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
    {-69, "CL_INVALID_PIPE_SIZE"},
    {-70, "CL_INVALID_DEVICE_QUEUE"},
    {-71, "CL_INVALID_SPEC_ID"},
    {-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED"},
    {kPlatformNotFoundKhr, "CL_PLATFORM_NOT_FOUND_KHR"},
};

// Runtime holds only trivially destructible members, so this static has no exit-time
// destructor that a deleter running late could trip over.
Runtime g_runtime;

int record(Runtime* rt, int status, const char* message) {
  rt->status = status;
  std::snprintf(rt->message, sizeof(rt->message), "%s", message);
  return status;
}

// Drivers pad some info strings with spaces or NULs; names read better without them.
void trim(char* text) {
  size_t length = std::strlen(text);
  while (length > 0 && (text[length - 1] == ' ' || text[length - 1] == '\n')) text[--length] = '\0';
}

// Clears a failed dlopen or dlsym from this thread's dlerror state (the first call formats the
// message, the second frees it), so that the program's own dlerror() does not report our miss.
void clear_dlerror() {
  dlerror();
  dlerror();
}

void load(Runtime* rt) {
  void* library = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    clear_dlerror();
    record(rt, DLB_ERR_DEVICE_UNAVAILABLE, "no OpenCL runtime found (libOpenCL.so.1)");
    return;
  }
  // The loader stays open for the life of the process: objects made through it may be
  // released by deleters running as late as exit.
  const char* missing = nullptr;
#define DLB_OPENCL_RESOLVE(name)                                             \
  rt->api.name = reinterpret_cast<decltype(&::name)>(dlsym(library, #name)); \
  if (rt->api.name == nullptr && missing == nullptr) missing = #name;
  DLB_OPENCL_FUNCTIONS(DLB_OPENCL_RESOLVE)
#undef DLB_OPENCL_RESOLVE
  if (missing != nullptr) {
    clear_dlerror();
    char text[DLB_ERROR_MESSAGE_SIZE];
    std::snprintf(text, sizeof(text),
                  "the OpenCL runtime (libOpenCL.so.1) lacks %s: OpenCL 1.2 is required", missing);
    record(rt, DLB_ERR_DEVICE_UNAVAILABLE, text);
    return;
  }
  const Api& api = rt->api;

  cl_uint platform_count = 0;
  cl_int code = api.clGetPlatformIDs(0, nullptr, &platform_count);
  if (code == kPlatformNotFoundKhr || (code == CL_SUCCESS && platform_count == 0)) {
    record(rt, DLB_ERR_DEVICE_UNAVAILABLE, "no OpenCL platform found");
    return;
  }
  dlb_error error;
  if (code != CL_SUCCESS) {
    record(rt, cl_fail(&error, "clGetPlatformIDs", code), error.message);
    return;
  }
  auto* platforms = new (std::nothrow) cl_platform_id[platform_count];
  rt->dispatch = new (std::nothrow) uintptr_t[platform_count];
  if (platforms == nullptr || rt->dispatch == nullptr) {
    delete[] platforms;
    record(rt, DLB_ERR_OUT_OF_MEMORY, "out of memory listing OpenCL platforms");
    return;
  }
  code = api.clGetPlatformIDs(platform_count, platforms, nullptr);
  if (code != CL_SUCCESS) {
    delete[] platforms;
    record(rt, cl_fail(&error, "clGetPlatformIDs", code), error.message);
    return;
  }
  rt->platform_count = platform_count;

  // Two passes: count the devices, then fill them in platform order.
  cl_uint total = 0;
  cl_uint* counts = new (std::nothrow) cl_uint[platform_count];
  if (counts == nullptr) {
    delete[] platforms;
    record(rt, DLB_ERR_OUT_OF_MEMORY, "out of memory listing OpenCL devices");
    return;
  }
  for (cl_uint p = 0; p < platform_count; ++p) {
    // Every ICD object starts with its platform's dispatch table pointer.
    std::memcpy(&rt->dispatch[p], platforms[p], sizeof(uintptr_t));
    counts[p] = 0;
    code = api.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &counts[p]);
    if (code == CL_DEVICE_NOT_FOUND)
      counts[p] = 0;
    else if (code != CL_SUCCESS) {
      delete[] platforms;
      delete[] counts;
      record(rt, cl_fail(&error, "clGetDeviceIDs", code), error.message);
      return;
    }
    total += counts[p];
  }
  if (total == 0) {
    delete[] platforms;
    delete[] counts;
    record(rt, DLB_ERR_DEVICE_UNAVAILABLE, "no OpenCL device found");
    return;
  }
  Device* devices = new (std::nothrow) Device[total];
  cl_device_id* ids = new (std::nothrow) cl_device_id[total];
  if (devices == nullptr || ids == nullptr) {
    delete[] devices;
    delete[] ids;
    delete[] platforms;
    delete[] counts;
    record(rt, DLB_ERR_OUT_OF_MEMORY, "out of memory listing OpenCL devices");
    return;
  }
  cl_uint next = 0;
  for (cl_uint p = 0; p < platform_count && code == CL_SUCCESS; ++p) {
    if (counts[p] == 0) continue;
    code = api.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, counts[p], ids + next, nullptr);
    char platform_name[128] = {};
    if (code == CL_SUCCESS) {
      code = api.clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof(platform_name) - 1,
                                   platform_name, nullptr);
    }
    trim(platform_name);
    for (cl_uint i = 0; i < counts[p] && code == CL_SUCCESS; ++i, ++next) {
      Device& device = devices[next];
      device.platform = platforms[p];
      device.id = ids[next];
      char device_name[112] = {};
      code = api.clGetDeviceInfo(device.id, CL_DEVICE_NAME, sizeof(device_name) - 1, device_name,
                                 nullptr);
      trim(device_name);
      std::snprintf(device.name, sizeof(device.name), "%s / %s", platform_name, device_name);
      cl_ulong max_alloc = 0;
      if (code == CL_SUCCESS) {
        code = api.clGetDeviceInfo(device.id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc),
                                   &max_alloc, nullptr);
      }
      device.max_alloc = max_alloc;
    }
  }
  delete[] ids;
  delete[] platforms;
  delete[] counts;
  if (code != CL_SUCCESS) {
    delete[] devices;
    record(rt, cl_fail(&error, "clGetDeviceInfo", code), error.message);
    return;
  }
  rt->devices = devices;
  rt->device_count = static_cast<int32_t>(total);
}

void create_context(Runtime& rt, Device& device) {
  const Api& api = rt.api;
  dlb_error error;
  const cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(device.platform), 0};
  cl_int code = CL_SUCCESS;
  cl_context context = api.clCreateContext(properties, 1, &device.id, nullptr, nullptr, &code);
  if (context == nullptr || code != CL_SUCCESS) {
    device.context_status = cl_fail(&error, "clCreateContext", code);
    std::memcpy(device.context_message, error.message, sizeof(error.message));
    return;
  }
  // In order: a NULL-stream copy waits for its own last command only.
  cl_command_queue queue = api.clCreateCommandQueue(context, device.id, 0, &code);
  if (queue == nullptr || code != CL_SUCCESS) {
    device.context_status = cl_fail(&error, "clCreateCommandQueue", code);
    std::memcpy(device.context_message, error.message, sizeof(error.message));
    return;
  }
  device.context = context;
  device.queue = queue;
}

void build_kernels(Runtime& rt, Device& device) {
  const Api& api = rt.api;
  dlb_error error;
  auto failed = [&device, &error](int status) {
    device.kernels_status = status;
    std::memcpy(device.kernels_message, error.message, sizeof(error.message));
  };
  // The tile kernels need a 32x8 work-group and 17 KiB of local memory; devices that cannot
  // give them that (some embedded ones) get the rows kernels only.
  size_t max_group = 0, item_sizes[3] = {};
  cl_ulong local_bytes = 0;
  cl_uint dimensions = 0;
  cl_int code = api.clGetDeviceInfo(device.id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(max_group),
                                    &max_group, nullptr);
  if (code == CL_SUCCESS) {
    code = api.clGetDeviceInfo(device.id, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, sizeof(dimensions),
                               &dimensions, nullptr);
  }
  if (code == CL_SUCCESS && dimensions > 0) {
    // One size per dimension: at least 3, possibly more.
    size_t* all_sizes = new (std::nothrow) size_t[dimensions];
    if (all_sizes == nullptr) {
      dlb::fail(&error, DLB_ERR_OUT_OF_MEMORY, "out of memory reading OpenCL device limits");
      return failed(DLB_ERR_OUT_OF_MEMORY);
    }
    code = api.clGetDeviceInfo(device.id, CL_DEVICE_MAX_WORK_ITEM_SIZES,
                               sizeof(size_t) * dimensions, all_sizes, nullptr);
    for (cl_uint i = 0; i < dimensions && i < 3; ++i) item_sizes[i] = all_sizes[i];
    delete[] all_sizes;
  }
  if (code == CL_SUCCESS) {
    code = api.clGetDeviceInfo(device.id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local_bytes),
                               &local_bytes, nullptr);
  }
  cl_device_type type = 0;
  if (code == CL_SUCCESS) {
    code = api.clGetDeviceInfo(device.id, CL_DEVICE_TYPE, sizeof(type), &type, nullptr);
  }
  if (code != CL_SUCCESS) return failed(cl_fail(&error, "clGetDeviceInfo", code));
  bool cpu_layout = (type & CL_DEVICE_TYPE_CPU) != 0;
  // DLB_OPENCL_LAYOUT=gpu or cpu overrides the choice: for tuning, and so that the tests run
  // the GPU kernels on a CPU device too.
  const char* forced = std::getenv("DLB_OPENCL_LAYOUT");
  if (forced != nullptr && std::strcmp(forced, "gpu") == 0) cpu_layout = false;
  if (forced != nullptr && std::strcmp(forced, "cpu") == 0) cpu_layout = true;
  // The CPU layout's tile kernels need nothing special.
  const bool with_tiles =
      cpu_layout || (max_group >= kTileGroupX * kTileGroupY && item_sizes[0] >= kTileGroupX &&
                     item_sizes[1] >= kTileGroupY && local_bytes >= kTileLocalBytes);
  char options[64];
  std::snprintf(options, sizeof(options), "-DDLB_CPU_LAYOUT=%d -DDLB_WITH_TILES=%d",
                cpu_layout ? 1 : 0, with_tiles ? 1 : 0);

  const char* source = kKernelSource;
  cl_program program = api.clCreateProgramWithSource(device.context, 1, &source, nullptr, &code);
  if (program == nullptr || code != CL_SUCCESS) {
    return failed(cl_fail(&error, "clCreateProgramWithSource", code));
  }
  code = api.clBuildProgram(program, 1, &device.id, options, nullptr, nullptr);
  if (code != CL_SUCCESS) {
    // The head of the build log says what the compiler disliked. Ask for its size first:
    // some implementations report nothing when the buffer is too small.
    char log[320] = {};
    size_t log_size = 0;
    if (api.clGetProgramBuildInfo(program, device.id, CL_PROGRAM_BUILD_LOG, 0, nullptr,
                                  &log_size) == CL_SUCCESS &&
        log_size > 0) {
      char* full = new (std::nothrow) char[log_size + 1];
      if (full != nullptr && api.clGetProgramBuildInfo(program, device.id, CL_PROGRAM_BUILD_LOG,
                                                       log_size, full, nullptr) == CL_SUCCESS) {
        full[log_size] = '\0';
        std::snprintf(log, sizeof(log), "%s", full);
      }
      delete[] full;
    }
    log[sizeof(log) - 1] = '\0';
    for (char* c = log; *c != '\0'; ++c) {
      if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
    }
    trim(log);
    dlb::fail(&error, DLB_ERR_DEVICE, "clBuildProgram failed: %s (%d); build log: %s",
              error_name(code), static_cast<int>(code), log[0] != '\0' ? log : "(empty)");
    return failed(DLB_ERR_DEVICE);
  }
  static const char* const kRowNames[kWordSizes] = {"dlb_rows_1", "dlb_rows_2", "dlb_rows_4",
                                                    "dlb_rows_8", "dlb_rows_16"};
  static const char* const kTileNames[kWordSizes] = {"dlb_tiles_1", "dlb_tiles_2", "dlb_tiles_4",
                                                     "dlb_tiles_8", "dlb_tiles_16"};
  size_t rows_group = SIZE_MAX;
  bool tiles_usable = with_tiles;
  for (int w = 0; w < kWordSizes; ++w) {
    device.rows[w] = api.clCreateKernel(program, kRowNames[w], &code);
    if (device.rows[w] == nullptr || code != CL_SUCCESS) {
      return failed(cl_fail(&error, "clCreateKernel", code));
    }
    size_t group = 0;
    code = api.clGetKernelWorkGroupInfo(device.rows[w], device.id, CL_KERNEL_WORK_GROUP_SIZE,
                                        sizeof(group), &group, nullptr);
    if (code != CL_SUCCESS) return failed(cl_fail(&error, "clGetKernelWorkGroupInfo", code));
    if (group < rows_group) rows_group = group;
    if (!with_tiles) continue;
    device.tiles[w] = api.clCreateKernel(program, kTileNames[w], &code);
    if (device.tiles[w] == nullptr || code != CL_SUCCESS) {
      return failed(cl_fail(&error, "clCreateKernel", code));
    }
    code = api.clGetKernelWorkGroupInfo(device.tiles[w], device.id, CL_KERNEL_WORK_GROUP_SIZE,
                                        sizeof(group), &group, nullptr);
    if (code != CL_SUCCESS) return failed(cl_fail(&error, "clGetKernelWorkGroupInfo", code));
    // A kernel that uses many registers may allow less than the device maximum.
    if (!cpu_layout && group < kTileGroupX * kTileGroupY) tiles_usable = false;
  }
  device.rows_group_size = rows_group > 0 ? rows_group : 1;
  device.max_item_sizes[0] = item_sizes[0] > 0 ? item_sizes[0] : 1;
  device.max_item_sizes[1] = dimensions >= 2 && item_sizes[1] > 0 ? item_sizes[1] : 1;
  device.tiles_usable = tiles_usable;
  device.cpu_layout = cpu_layout;
}

}  // namespace

const char* error_name(cl_int code) {
  for (const ErrorName& entry : kErrorNames) {
    if (entry.code == code) return entry.name;
  }
  return "CL_UNKNOWN_ERROR";
}

int cl_fail(dlb_error* error, const char* call, cl_int code) {
  return dlb::fail(error, DLB_ERR_DEVICE, "%s failed: %s (%d)", call, error_name(code),
                   static_cast<int>(code));
}

Runtime* runtime() {
  static std::once_flag once;
  std::call_once(once, [] { load(&g_runtime); });
  return &g_runtime;
}

int require_runtime(Runtime** out, dlb_error* error) {
  Runtime* rt = runtime();
  *out = rt;
  if (rt->status != DLB_OK) return dlb::fail(error, rt->status, "%s", rt->message);
  return DLB_OK;
}

int find_device(int32_t device_id, Runtime** runtime_out, Device** device_out, dlb_error* error) {
  *device_out = nullptr;
  int status = require_runtime(runtime_out, error);
  if (status != DLB_OK) return status;
  const Runtime* rt = *runtime_out;
  if (device_id < 0 || device_id >= rt->device_count) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "opencl device %d does not exist (%d device%s)", static_cast<int>(device_id),
                     static_cast<int>(rt->device_count), rt->device_count == 1 ? "" : "s");
  }
  *device_out = &rt->devices[device_id];
  return DLB_OK;
}

int ensure_context(Runtime& rt, Device& device, dlb_error* error) {
  std::call_once(device.context_once, [&rt, &device] { create_context(rt, device); });
  if (device.context_status != DLB_OK) {
    return dlb::fail(error, device.context_status, "%s", device.context_message);
  }
  return DLB_OK;
}

int ensure_kernels(Runtime& rt, Device& device, dlb_error* error) {
  int status = ensure_context(rt, device, error);
  if (status != DLB_OK) return status;
  std::call_once(device.kernels_once, [&rt, &device] { build_kernels(rt, device); });
  if (device.kernels_status != DLB_OK) {
    return dlb::fail(error, device.kernels_status, "%s", device.kernels_message);
  }
  return DLB_OK;
}

}  // namespace opencl
}  // namespace dlb
