// The OpenCL functions of a library built without the OpenCL headers (-Dopencl=disabled): they
// exist, so that the exported ABI does not depend on build options, and say why they cannot work.
#include <initializer_list>

#include "../internal.hpp"

namespace {
int built_without_opencl(dlb_error* error) {
  return dlb::fail(error, DLB_ERR_UNSUPPORTED, "dlbridge was built without OpenCL support");
}
}  // namespace

void dlb::register_opencl_backend() {}

extern "C" {

DLB_API dlb_status dlb_opencl_is_available(dlb_error* error) { return built_without_opencl(error); }

DLB_API dlb_status dlb_opencl_device_count(int32_t* count, dlb_error* error) {
  if (count != nullptr) *count = 0;
  return built_without_opencl(error);
}

DLB_API dlb_status dlb_opencl_device_objects(int32_t, void** platform, void** device, void** context,
                                      void** queue, dlb_error* error) {
  for (void** out : {platform, device, context, queue}) {
    if (out != nullptr) *out = nullptr;
  }
  return built_without_opencl(error);
}

DLB_API dlb_status dlb_opencl_device_name(int32_t, char* buffer, uint64_t buffer_size, dlb_error* error) {
  if (buffer != nullptr && buffer_size > 0) buffer[0] = '\0';
  return built_without_opencl(error);
}

DLB_API dlb_status dlb_opencl_queue_handshake(void*, void*, dlb_error* error) {
  return built_without_opencl(error);
}

}  // extern "C"
