// The options a channel is made with (dlb_channel_options_*): plain settings, checked when set, so
// that a listen or connect only has to check what depends on the machine.
#include <cstdlib>
#include <cstring>

#include "remote.hpp"

namespace dlb {
namespace ipc {

void default_options(dlb_channel_options* options) {
  std::memset(options, 0, sizeof *options);
  options->receive_device = DLDevice{kDLCPU, 0};
  options->max_tensor_bytes = DLB_REMOTE_DEFAULT_MAX_TENSOR_BYTES;
  options->max_in_flight = DLB_REMOTE_DEFAULT_MAX_IN_FLIGHT;
  options->timeout_ns = DLB_TIMEOUT_NONE;
  options->listener_uid = DLB_UID_SELF;
}

int check_timeout(int64_t timeout_ns, dlb_error* error) {
  if (timeout_ns < 0 && timeout_ns != DLB_TIMEOUT_NONE) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "timeout %lld ns is negative: a time limit is 0 ns or more, or none",
                static_cast<long long>(timeout_ns));
  }
  return DLB_OK;
}

bool is_remote_address(const char* address) {
  return address != nullptr &&
         (std::strncmp(address, "ucx://", 6) == 0 || std::strncmp(address, "tcp://", 6) == 0);
}

namespace {

// Wipes the key so that freed memory does not keep it; volatile keeps the stores.
void wipe(void* bytes, size_t size) {
  volatile unsigned char* p = static_cast<volatile unsigned char*>(bytes);
  for (size_t i = 0; i < size; ++i) p[i] = 0;
}

int check_options(const dlb_channel_options* options, dlb_error* error) {
  return options == nullptr ? fail(error, DLB_ERR_INVALID_ARGUMENT, "options is NULL") : DLB_OK;
}

}  // namespace
}  // namespace ipc
}  // namespace dlb

using dlb::fail;
using dlb::ipc::check_options;

extern "C" {

DLB_API dlb_status dlb_channel_options_create(dlb_channel_options** out, dlb_error* error) {
  if (out == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = static_cast<dlb_channel_options*>(std::malloc(sizeof(dlb_channel_options)));
  if (*out == nullptr) return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making options");
  dlb::ipc::default_options(*out);
  return DLB_OK;
}

DLB_API void dlb_channel_options_free(dlb_channel_options* options) {
  if (options == nullptr) return;
  dlb::ipc::wipe(options->key, sizeof options->key);
  std::free(options);
}

DLB_API dlb_status dlb_channel_options_set_key(dlb_channel_options* options, const void* key,
                                               size_t size, dlb_error* error) {
  int status = check_options(options, error);
  if (status != DLB_OK) return status;
  if (key == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "key is NULL");
  if (size < DLB_REMOTE_MIN_KEY_BYTES || size > DLB_REMOTE_MAX_KEY_BYTES) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "a key of %zu bytes: a channel's key has %u to %u bytes (random ones: 32 is "
                "plenty)",
                size, DLB_REMOTE_MIN_KEY_BYTES, DLB_REMOTE_MAX_KEY_BYTES);
  }
  dlb::ipc::wipe(options->key, sizeof options->key);
  std::memcpy(options->key, key, size);
  options->key_size = static_cast<uint32_t>(size);
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_options_set_receive_device(dlb_channel_options* options,
                                                          DLDevice device, dlb_error* error) {
  int status = check_options(options, error);
  if (status != DLB_OK) return status;
  status = dlb::check_device(device, error);
  if (status != DLB_OK) return status;
  switch (device.device_type) {
    case kDLCPU:  // check_device made sure of device 0
    case kDLCUDAHost:
    case kDLCUDA:
    case kDLCUDAManaged:
      break;
    default: {
      dlb::DeviceTypeText name(device.device_type);
      return fail(error, DLB_ERR_UNSUPPORTED,
                  "a remote channel receives into cpu, cuda_host, cuda or cuda_managed memory, "
                  "not %s",
                  name.text);
    }
  }
  options->receive_device = device;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_options_set_max_tensor_bytes(dlb_channel_options* options,
                                                            uint64_t bytes, dlb_error* error) {
  int status = check_options(options, error);
  if (status != DLB_OK) return status;
  if (bytes == 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "a maximum tensor size of 0 bytes: at least 1");
  }
  options->max_tensor_bytes = bytes;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_options_set_max_in_flight(dlb_channel_options* options,
                                                         uint32_t tensors, dlb_error* error) {
  int status = check_options(options, error);
  if (status != DLB_OK) return status;
  if (tensors == 0 || tensors > 65536) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "a maximum of %u tensors in flight: 1 to 65536", tensors);
  }
  options->max_in_flight = tensors;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_options_set_timeout(dlb_channel_options* options,
                                                   int64_t timeout_ns, dlb_error* error) {
  int status = check_options(options, error);
  if (status == DLB_OK) status = dlb::ipc::check_timeout(timeout_ns, error);
  if (status != DLB_OK) return status;
  options->timeout_ns = timeout_ns;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_options_set_listener_uid(dlb_channel_options* options,
                                                        uint32_t uid, dlb_error* error) {
  const int status = check_options(options, error);
  if (status != DLB_OK) return status;
  options->listener_uid = uid;
  return DLB_OK;
}

}  // extern "C"
