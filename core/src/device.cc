// Device types: their names, parsing and formatting, and which ones the host can read.
#include <cstdio>
#include <cstring>

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

}  // namespace

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

DLB_API dlb_status dlb_device_format(DLDevice device, char* buffer, uint64_t buffer_size,
                              dlb_error* error) {
  if (buffer == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "buffer is NULL");
  if (buffer_size > 0) buffer[0] = '\0';
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
                     "buffer of %llu bytes is too small for device name '%s'",
                     static_cast<unsigned long long>(buffer_size), text);
  }
  std::memcpy(buffer, text, length + 1);
  return DLB_OK;
}

DLB_API dlb_status dlb_device_parse(const char* text, DLDevice* out, dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = DLDevice{static_cast<DLDeviceType>(0), 0};
  if (text == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "device text is NULL");
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

}  // extern "C"
