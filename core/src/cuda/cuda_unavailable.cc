// The CUDA functions of a library built without CUDA (-Dcuda=disabled, or no nvcc): they exist,
// so that the exported ABI does not depend on build options, and say why they cannot work.
#include "../internal.hpp"

namespace {
int built_without_cuda(dlb_error* error) {
  return dlb::fail(error, DLB_ERR_UNSUPPORTED, "dlbridge was built without CUDA support");
}
}  // namespace

void dlb::register_cuda_backends() {}

extern "C" {

DLB_API dlb_status dlb_cuda_is_available(dlb_error* error) { return built_without_cuda(error); }

DLB_API dlb_status dlb_cuda_device_count(int32_t* count, dlb_error* error) {
  if (count != nullptr) *count = 0;
  return built_without_cuda(error);
}

DLB_API dlb_status dlb_cuda_pointer_device(const void*, DLDevice* out, dlb_error* error) {
  if (out != nullptr) *out = DLDevice{};
  return built_without_cuda(error);
}

DLB_API dlb_status dlb_cuda_stream_handshake(int32_t, void*, int64_t, dlb_error* error) {
  return built_without_cuda(error);
}

}  // extern "C"
