// Status codes, error messages and version reporting.
#include <cstdarg>
#include <cstdio>

#include "internal.hpp"

namespace dlb {

int fail(dlb_error* error, int status, const char* format, ...) {
  if (error != nullptr) {
    va_list args;
    va_start(args, format);
    std::vsnprintf(error->message, sizeof(error->message), format, args);
    va_end(args);
  }
  return status;
}

size_t format_dims(char* buffer, size_t size, size_t pos, int32_t ndim, const int64_t* dims) {
  auto put = [&](const char* fmt, long long value) {
    if (pos < size) {
      int n = std::snprintf(buffer + pos, size - pos, fmt, value);
      if (n > 0) pos += static_cast<size_t>(n);
    }
  };
  if (pos < size) buffer[pos++] = '(';
  for (int32_t i = 0; i < ndim; ++i) put(i == 0 ? "%lld" : ", %lld", static_cast<long long>(dims[i]));
  if (pos < size) buffer[pos++] = ')';
  if (pos >= size) pos = size - 1;
  buffer[pos] = '\0';
  return pos;
}

DimsText::DimsText(int32_t ndim, const int64_t* dims) {
  text[0] = '\0';
  if (dims == nullptr && ndim > 0) {
    std::snprintf(text, sizeof(text), "(NULL)");
    return;
  }
  format_dims(text, sizeof(text), 0, ndim, dims);
}

DeviceTypeText::DeviceTypeText(int32_t device_type) {
  const char* name = dlb_device_type_name(device_type);
  if (name != nullptr) {
    std::snprintf(text, sizeof(text), "%s", name);
  } else {
    std::snprintf(text, sizeof(text), "device type %d", static_cast<int>(device_type));
  }
}

DTypeText::DTypeText(DLDataType dtype) {
  if (dlb_dtype_format(dtype, text, sizeof(text), nullptr) != DLB_OK) {
    std::snprintf(text, sizeof(text), "code %u bits %u lanes %u", static_cast<unsigned>(dtype.code),
                  static_cast<unsigned>(dtype.bits), static_cast<unsigned>(dtype.lanes));
  }
}

}  // namespace dlb

extern "C" {

DLB_API void dlb_get_version(dlb_library_version* library, DLPackVersion* produced,
                             DLPackVersion* newest_accepted) {
  if (library != nullptr) {
    library->major = DLB_VERSION_MAJOR;
    library->minor = DLB_VERSION_MINOR;
    library->patch = DLB_VERSION_PATCH;
  }
  if (produced != nullptr) {
    produced->major = DLB_DLPACK_PRODUCED_MAJOR;
    produced->minor = DLB_DLPACK_PRODUCED_MINOR;
  }
  if (newest_accepted != nullptr) {
    newest_accepted->major = DLPACK_MAJOR_VERSION;
    newest_accepted->minor = DLPACK_MINOR_VERSION;
  }
}

DLB_API const char* dlb_version_string(void) { return DLB_VERSION_STRING; }

DLB_API const char* dlb_status_name(dlb_status status) {
  switch (status) {
    case DLB_OK: return "DLB_OK";
    case DLB_ERR_INVALID_ARGUMENT: return "DLB_ERR_INVALID_ARGUMENT";
    case DLB_ERR_OUT_OF_MEMORY: return "DLB_ERR_OUT_OF_MEMORY";
    case DLB_ERR_UNSUPPORTED_VERSION: return "DLB_ERR_UNSUPPORTED_VERSION";
    case DLB_ERR_UNSUPPORTED: return "DLB_ERR_UNSUPPORTED";
    case DLB_ERR_READ_ONLY: return "DLB_ERR_READ_ONLY";
    case DLB_ERR_LAYOUT: return "DLB_ERR_LAYOUT";
    case DLB_ERR_OVERFLOW: return "DLB_ERR_OVERFLOW";
    case DLB_ERR_DEVICE: return "DLB_ERR_DEVICE";
    case DLB_ERR_DEVICE_UNAVAILABLE: return "DLB_ERR_DEVICE_UNAVAILABLE";
    case DLB_ERR_CLOSED: return "DLB_ERR_CLOSED";
    case DLB_ERR_NO_LISTENER: return "DLB_ERR_NO_LISTENER";
    case DLB_ERR_PERMISSION: return "DLB_ERR_PERMISSION";
    case DLB_ERR_PEER_CLOSED: return "DLB_ERR_PEER_CLOSED";
    case DLB_ERR_PROTOCOL: return "DLB_ERR_PROTOCOL";
    case DLB_ERR_TIMEOUT: return "DLB_ERR_TIMEOUT";
    case DLB_ERR_LIMIT: return "DLB_ERR_LIMIT";
    default: return "DLB_ERR_UNKNOWN";
  }
}

}  // extern "C"
