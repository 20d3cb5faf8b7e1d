// The registry of device backends (registration, lookup, reference counting, the built-in
// backends) and dlb_device_synchronize, which hands the wait to a device's backend.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "internal.hpp"

namespace {

// The registry: one slot per device type. Reads and writes take the mutex; the hot paths that
// need no backend (CPU tensors, wrap, import, views) never touch it.
std::mutex g_registry_mutex;
dlb::Backend* g_backends[DLB_MAX_DEVICE_TYPE + 1];

}  // namespace

namespace dlb {

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

DLB_API dlb_status dlb_backend_register(const dlb_backend* backend, dlb_error* error) {
  dlb::ensure_builtin_backends();
  return dlb::register_backend(backend, error);
}

}  // extern "C"

int dlb::register_backend(const dlb_backend* backend, dlb_error* error) {
  if (backend == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "backend is NULL");
  constexpr size_t kMinimumSize = offsetof(dlb_backend, copy_bytes) + sizeof(backend->copy_bytes);
  if (backend->struct_size < kMinimumSize) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "backend struct_size %llu is smaller than the %zu bytes every version has",
                     static_cast<unsigned long long>(backend->struct_size), kMinimumSize);
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
              backend->struct_size < sizeof(ops) ? static_cast<size_t>(backend->struct_size)
                                                 : sizeof(ops));
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

DLB_API dlb_status dlb_backend_unregister(int32_t device_type, dlb_error* error) {
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

DLB_API dlb_status dlb_device_synchronize(DLDevice device, void* stream, dlb_error* error) {
  int status = dlb::check_device(device, error);
  if (status != DLB_OK) return status;
  if (device.device_type == kDLCPU) return DLB_OK;
  dlb::Backend* backend = dlb::acquire_backend(device.device_type);
  if (backend == nullptr) {
    dlb::DeviceTypeText name(device.device_type);
    return dlb::fail(error, DLB_ERR_UNSUPPORTED, "no backend is registered for %s", name.text);
  }
  if (backend->ops.synchronize != nullptr) {
    status = dlb::call_backend(backend, "synchronize", error, [&](dlb_error* report) {
      return backend->ops.synchronize(backend->ops.ctx, device, stream, report);
    });
  }
  dlb::release_backend(backend);
  return status;
}

}  // extern "C"
