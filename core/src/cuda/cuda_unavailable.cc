// The CUDA functions of a library built without CUDA (-Dcuda=disabled, or no nvcc): they exist,
// so that the exported ABI does not depend on build options, and say why they cannot work.
#include <unistd.h>

#include "../internal.hpp"
#include "../ipc/cuda.hpp"

namespace {
int built_without_cuda(dlb_error* error) {
  return dlb::fail(error, DLB_ERR_UNSUPPORTED, "dlbridge was built without CUDA support");
}
}  // namespace

void dlb::register_cuda_backends() {}

namespace dlb {
namespace ipc {

int cuda_allocate_shareable(DLDevice, DLDataType, int32_t, const int64_t*, const int64_t*,
                            uint64_t, uint64_t, uint64_t, DLManagedTensorVersioned**,
                            dlb_error* error) {
  return built_without_cuda(error);
}

int cuda_handle_kind(const DLManagedTensorVersioned*) { return -1; }

int cuda_prepare_send(const DLManagedTensorVersioned*, bool, void*, CudaSend*, dlb_error* error) {
  return built_without_cuda(error);
}

int cuda_receive(const Wire&, const WireExtension&, int fd, DLManagedTensorVersioned**,
                 dlb_error* error) {
  if (fd >= 0) close(fd);
  return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                   "received a cuda tensor but cannot map it here: dlbridge was built without "
                   "CUDA support");
}

int cuda_send_available(dlb_error* error) { return built_without_cuda(error); }

bool cuda_memory_is_exposed(dlb_release_fn, void*) { return false; }

}  // namespace ipc
}  // namespace dlb

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

DLB_API dlb_status dlb_cuda_wait_received(const DLManagedTensorVersioned*, int64_t,
                                          dlb_error* error) {
  return built_without_cuda(error);
}

}  // extern "C"
