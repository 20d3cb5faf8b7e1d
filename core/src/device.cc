// Device types, device names, and the registry of device backends.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "internal.hpp"

namespace {

// Indexed by DLDeviceType; NULL where DLPack defines no device (5, 6).
constexpr const char* kDeviceNames[] = {
    nullptr,  "cpu",    "cuda",   "cuda_host", "opencl",      nullptr, nullptr,
    "vulkan", "metal",  "vpi",    "rocm",      "rocm_host",   "ext_dev", "cuda_managed",
    "oneapi", "webgpu", "hexagon", "maia",     "trn",         "tpu",   "tpu_host",
};
constexpr int32_t kDeviceNameCount = sizeof(kDeviceNames) / sizeof(kDeviceNames[0]);

// The names table and the bit set of standard device types must agree.
constexpr bool names_match_standard_types() {
  for (int32_t i = 0; i < 32; ++i) {
    const bool named = i < kDeviceNameCount && kDeviceNames[i] != nullptr;
    if (named != (((dlb::kStandardDeviceTypes >> i) & 1u) != 0)) return false;
  }
  return true;
}
static_assert(names_match_standard_types(), "kDeviceNames and kStandardDeviceTypes disagree");

// The registry: one slot per device type. Reads and writes take the mutex; the hot paths that
// need no backend (CPU tensors, wrap, import, views) never touch it.
std::mutex g_registry_mutex;
dlb::Backend* g_backends[DLB_MAX_DEVICE_TYPE + 1];

}  // namespace

namespace dlb {

bool is_pointer_addressable(int32_t device_type) {
  switch (device_type) {
    case kDLCPU:
    case kDLCUDA:
    case kDLCUDAHost:
    case kDLROCM:
    case kDLROCMHost:
    case kDLCUDAManaged:
    case kDLOneAPI:
      return true;
    default:
      return false;
  }
}

// The built-in backends join the registry the first time anyone looks at it, so that a program
// that registers its own backend for kDLCUDA replaces the built-in one instead of racing it.
void ensure_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_cuda_backends();
    register_opencl_backend();
  });
}

Backend* acquire_backend(int32_t device_type) {
  if (device_type <= 0 || device_type > DLB_MAX_DEVICE_TYPE) return nullptr;
  ensure_builtin_backends();
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  Backend* backend = g_backends[device_type];
  if (backend != nullptr) backend->refs.fetch_add(1, std::memory_order_relaxed);
  return backend;
}

void release_backend(Backend* backend) {
  if (backend == nullptr) return;
  if (backend->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    if (backend->ops.destroy != nullptr) backend->ops.destroy(backend->ops.ctx);
    backend->~Backend();
    std::free(backend);
  }
}

int check_backend_memory(const DLTensor* tensor, uint64_t flags, dlb_error* error) {
  Backend* backend = acquire_backend(tensor->device.device_type);
  if (backend == nullptr) return DLB_OK;
  int status = DLB_OK;
  if (backend->ops.check_memory != nullptr) {
    status = call_backend(backend, "check_memory", error, [&](dlb_error* report) {
      return backend->ops.check_memory(backend->ops.ctx, tensor, flags, report);
    });
  }
  release_backend(backend);
  return status;
}

int backend_failed(const Backend* backend, const char* operation, int status,
                   const dlb_error& report, dlb_error* error) {
  if (report.message[0] == '\0') {
    return fail(error, status, "backend '%s' failed in %s with %s and gave no message",
                backend->name, operation, dlb_status_name(status));
  }
  if (error != nullptr) {
    std::memcpy(error->message, report.message, sizeof(error->message));
    error->message[sizeof(error->message) - 1] = '\0';
  }
  return status;
}

}  // namespace dlb

extern "C" {

DLB_API const char* dlb_device_type_name(int32_t device_type) {
  return dlb::is_standard_device_type(device_type) ? kDeviceNames[device_type] : nullptr;
}

DLB_API int dlb_device_type_is_known(int32_t device_type) {
  if (dlb::is_standard_device_type(device_type)) return 1;
  return dlb_backend_is_registered(device_type);
}

DLB_API int dlb_device_is_host_readable(DLDevice device) {
  switch (device.device_type) {
    case kDLCPU:
    case kDLCUDAHost:
    case kDLCUDAManaged:
    case kDLROCMHost:
      return 1;
    default:
      return 0;
  }
}

DLB_API int dlb_device_format(DLDevice device, char* buffer, size_t buffer_size,
                              dlb_error* error) {
  if (buffer == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "buffer is NULL");
  char text[DLB_DEVICE_NAME_SIZE];
  const char* name = dlb_device_type_name(device.device_type);
  if (device.device_type == kDLCPU && device.device_id == 0) {
    std::snprintf(text, sizeof(text), "cpu");
  } else if (name != nullptr) {
    std::snprintf(text, sizeof(text), "%s:%d", name, static_cast<int>(device.device_id));
  } else {
    std::snprintf(text, sizeof(text), "device_type_%d:%d", static_cast<int>(device.device_type),
                  static_cast<int>(device.device_id));
  }
  size_t length = std::strlen(text);
  if (length + 1 > buffer_size) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "buffer of %zu bytes is too small for device name '%s'", buffer_size, text);
  }
  std::memcpy(buffer, text, length + 1);
  return DLB_OK;
}

DLB_API int dlb_device_parse(const char* text, DLDevice* out, dlb_error* error) {
  if (text == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "device text is NULL");
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  const size_t length = std::strlen(text);
  const int shown = length > 64 ? 64 : static_cast<int>(length);
  const char* colon = std::strchr(text, ':');
  const size_t name_length = colon != nullptr ? static_cast<size_t>(colon - text) : length;

  auto parse_number = [](const char* begin, const char* end, long* value) {
    if (begin == end || end - begin > 10) return false;
    long v = 0;
    for (const char* p = begin; p != end; ++p) {
      if (*p < '0' || *p > '9') return false;
      v = v * 10 + (*p - '0');
    }
    if (v > INT32_MAX) return false;
    *value = v;
    return true;
  };

  long type = -1;
  for (int32_t i = 0; i < kDeviceNameCount; ++i) {
    const char* name = kDeviceNames[i];
    if (name != nullptr && std::strlen(name) == name_length &&
        std::strncmp(text, name, name_length) == 0) {
      type = i;
      break;
    }
  }
  static const char kGeneric[] = "device_type_";
  const size_t generic_length = sizeof(kGeneric) - 1;
  if (type < 0 && name_length > generic_length &&
      std::strncmp(text, kGeneric, generic_length) == 0 &&
      !parse_number(text + generic_length, text + name_length, &type)) {
    type = -1;
  }
  if (type < 0) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "unknown device name '%.*s'", shown, text);
  }
  long id = 0;
  if (colon != nullptr && !parse_number(colon + 1, text + length, &id)) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "device '%.*s' has an invalid device id (0 to 2147483647)", shown, text);
  }
  out->device_type = static_cast<DLDeviceType>(type);
  out->device_id = static_cast<int32_t>(id);
  return DLB_OK;
}

DLB_API int dlb_backend_register(const dlb_backend* backend, dlb_error* error) {
  dlb::ensure_builtin_backends();
  return dlb::register_backend(backend, error);
}

}  // extern "C"

int dlb::register_backend(const dlb_backend* backend, dlb_error* error) {
  if (backend == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "backend is NULL");
  constexpr size_t kMinimumSize = offsetof(dlb_backend, copy_bytes) + sizeof(backend->copy_bytes);
  if (backend->struct_size < kMinimumSize) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "backend struct_size %zu is smaller than the %zu bytes every version has",
                     backend->struct_size, kMinimumSize);
  }
  const int32_t type = backend->device_type;
  if (type == kDLCPU) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "the cpu backend is built in and cannot be replaced");
  }
  if (type < 1 || type > DLB_MAX_DEVICE_TYPE) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "device type %d is outside the range a backend can serve (1 to %d)",
                     static_cast<int>(type), DLB_MAX_DEVICE_TYPE);
  }
  // Members the caller's struct does not have stay NULL.
  dlb_backend ops;
  std::memset(&ops, 0, sizeof(ops));
  std::memcpy(&ops, backend,
              backend->struct_size < sizeof(ops) ? backend->struct_size : sizeof(ops));
  ops.struct_size = sizeof(ops);
  dlb::DeviceTypeText type_name(type);
  const char* missing = ops.allocate == nullptr ? "allocate"
                        : ops.free == nullptr   ? "free"
                        : ops.copy_bytes == nullptr ? "copy_bytes"
                                                    : nullptr;
  if (missing != nullptr) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "backend for %s has no %s callback", type_name.text, missing);
  }
  void* memory = std::malloc(sizeof(dlb::Backend));
  if (memory == nullptr) {
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory registering a backend");
  }
  auto* entry = new (memory) dlb::Backend();
  entry->ops = ops;
  std::snprintf(entry->name, sizeof(entry->name), "%s",
                ops.name != nullptr ? ops.name : type_name.text);
  entry->ops.name = entry->name;
  entry->refs.store(1, std::memory_order_relaxed);
  dlb::Backend* previous;
  {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    previous = g_backends[type];
    g_backends[type] = entry;
  }
  dlb::release_backend(previous);
  return DLB_OK;
}

extern "C" {

DLB_API int dlb_backend_unregister(int32_t device_type, dlb_error* error) {
  dlb::ensure_builtin_backends();
  dlb::DeviceTypeText type_name(device_type);
  if (device_type == kDLCPU) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "the cpu backend is built in and cannot be unregistered");
  }
  dlb::Backend* previous = nullptr;
  if (device_type >= 1 && device_type <= DLB_MAX_DEVICE_TYPE) {
    std::lock_guard<std::mutex> lock(g_registry_mutex);
    previous = g_backends[device_type];
    g_backends[device_type] = nullptr;
  }
  if (previous == nullptr) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "no backend is registered for %s",
                     type_name.text);
  }
  dlb::release_backend(previous);
  return DLB_OK;
}

DLB_API int dlb_backend_is_registered(int32_t device_type) {
  if (device_type == kDLCPU) return 1;
  if (device_type <= 0 || device_type > DLB_MAX_DEVICE_TYPE) return 0;
  dlb::ensure_builtin_backends();
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  return g_backends[device_type] != nullptr ? 1 : 0;
}

}  // extern "C"
