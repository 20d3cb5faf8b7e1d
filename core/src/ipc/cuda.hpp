// What the channel (ipc/channel.cc) asks of the CUDA backend to share CUDA memory across
// processes. Implemented in cuda/cuda_ipc.cc; a build without CUDA has cuda/cuda_unavailable.cc's,
// which refuse with DLB_ERR_UNSUPPORTED. The channel calls the backend; the backend never calls
// the channel.
#ifndef DLBRIDGE_SRC_IPC_CUDA_HPP_
#define DLBRIDGE_SRC_IPC_CUDA_HPP_

#include <cstdint>

#include "../internal.hpp"
#include "wire.hpp"

namespace dlb {
namespace ipc {

// Allocates shareable kDLCUDA memory for a tensor whose layout allocation_layout() computed
// (`byte_offset` of its first element, `nbytes` reached) and wraps it as *out.
int cuda_allocate_shareable(DLDevice device, DLDataType dtype, int32_t ndim, const int64_t* shape,
                            const int64_t* strides, uint64_t flags, uint64_t byte_offset,
                            uint64_t nbytes, DLManagedTensorVersioned** out, dlb_error* error);

// kHandleCudaFd or kHandleCudaIpc when `tensor`'s memory is shareable CUDA memory of this
// library (allocated, or received from a channel); -1 otherwise.
int cuda_handle_kind(const DLManagedTensorVersioned* tensor);

// What a sender puts on the wire for shareable CUDA memory.
struct CudaSend {
  uint32_t handle;     // kHandleCudaFd or kHandleCudaIpc
  int fd;              // kHandleCudaFd: the allocation's descriptor (stays the tensor's); else -1
  const void* base;    // the allocation's first byte in this process
  uint64_t size;       // the allocation's bytes
  WireExtension extension;
};

// Fills `out` for `tensor` (cuda_handle_kind() >= 0). With `record`, an interprocess event is
// recorded on `stream` (a cudaStream_t; NULL: the legacy default stream) and its handle set in
// the extension. Marks the memory exposed (another process may map it from now on).
int cuda_prepare_send(const DLManagedTensorVersioned* tensor, bool record, void* stream,
                      CudaSend* out, dlb_error* error);

// Maps what a peer sent (wire->handle kHandleCudaFd with `fd`, or kHandleCudaIpc with fd -1)
// as *out. The descriptor was checked by the caller (check_cuda). Ownership: `fd` is taken
// in every case (kept by the tensor, or closed on error); nothing is left mapped on error.
int cuda_receive(const Wire& wire, const WireExtension& extension, int fd,
                 DLManagedTensorVersioned** out, dlb_error* error);

// DLB_OK where this library was built with CUDA; DLB_ERR_UNSUPPORTED and the reason otherwise
// (dlb_channel_send_cuda's first check).
int cuda_send_available(dlb_error* error);

// True when `release`/`ctx` is shareable CUDA memory another process may map.
bool cuda_memory_is_exposed(dlb_release_fn release, void* ctx);

}  // namespace ipc
}  // namespace dlb

#endif  // DLBRIDGE_SRC_IPC_CUDA_HPP_
