// The descriptor that travels beside a shared segment's file descriptor on a channel (ipc/).
// Internal: both ends are this library on the same machine; the tests of suite ipc include it to
// forge descriptors.
#ifndef DLBRIDGE_SRC_IPC_WIRE_HPP_
#define DLBRIDGE_SRC_IPC_WIRE_HPP_

#include <cstdint>

#include "dlbridge/dlbridge.h"

namespace dlb {
namespace ipc {

inline constexpr char kWireMagic[8] = {'d', 'l', 'b', 'r', 'i', 'd', 'g', 'e'};
inline constexpr uint32_t kWireMajor = 1;
// 0: host memory only. 1: `handle` names the kind of memory (CUDA kinds added), and every kind
// but kHandleMemfd is followed by one WireExtension.
inline constexpr uint32_t kWireMinor = 1;

// What kind of memory a descriptor describes (Wire::handle). Minor 0 wrote 0 there.
inline constexpr uint32_t kHandleMemfd = 0;    // a sealed memfd, the file descriptor that comes along
inline constexpr uint32_t kHandleCudaFd = 1;   // a cuMemCreate allocation exported as a POSIX fd
inline constexpr uint32_t kHandleCudaIpc = 2;  // cudaMalloc memory: a cudaIpcMemHandle_t, no fd

// Fixed size, native byte order (both ends are on the same machine), no pointers. A reader
// checks magic, major and size before anything else; a new minor may only use `handle` (the
// field minor 0 called `reserved`, always 0) and the extension frame.
struct Wire {
  char magic[8];
  uint32_t major;
  uint32_t minor;
  uint32_t size;  // sizeof(Wire) as the sender compiled it
  int32_t device_type;
  int32_t device_id;
  int32_t ndim;
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
  uint32_t handle;  // kHandle*
  uint64_t flags;
  uint64_t byte_offset;   // of the first element from the segment's start
  uint64_t segment_size;  // the segment's (or CUDA allocation's) size in bytes
  int64_t shape[DLB_MAX_NDIM];
  int64_t strides[DLB_MAX_NDIM];
};

// The tensor a descriptor describes, over `data` with its first element `byte_offset` bytes in
// (shape and strides point into `wire`, which must outlive the result).
inline DLTensor described_tensor(const Wire& wire, void* data, uint64_t byte_offset) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{static_cast<DLDeviceType>(wire.device_type), wire.device_id};
  t.ndim = wire.ndim;
  t.dtype = DLDataType{wire.code, wire.bits, wire.lanes};
  t.shape = const_cast<int64_t*>(wire.shape);
  t.strides = const_cast<int64_t*>(wire.strides);
  t.byte_offset = byte_offset;
  return t;
}

inline constexpr char kExtensionMagic[8] = {'d', 'l', 'b', '-', 'c', 'u', 'd', 'a'};
inline constexpr unsigned kCudaHandleSize = 64;  // CUDA_IPC_HANDLE_SIZE (checked in cuda_ipc.cc)

// The frame that follows a Wire whose handle is not kHandleMemfd, in the same send. It is exactly
// as large as a Wire and starts with another magic: a minor-0 receiver, which refuses the Wire
// (not cpu memory), then reads this frame as one more descriptor and refuses it for its magic,
// and so stays in step with the stream. A receiver reads it for every handle other than
// kHandleMemfd, also one it does not know, before it refuses anything.
struct WireExtension {
  char magic[8];                                 // kExtensionMagic
  uint32_t has_event;                            // 1: event_handle is set
  uint32_t reserved;                             // 0
  unsigned char memory_handle[kCudaHandleSize];  // kHandleCudaIpc: the cudaIpcMemHandle_t
  unsigned char event_handle[kCudaHandleSize];   // a cudaIpcEventHandle_t recorded after the
                                                 // sender's work on the tensor
  unsigned char unused[sizeof(Wire) - 16 - 2 * kCudaHandleSize];  // 0
};
static_assert(sizeof(WireExtension) == sizeof(Wire), "the extension frame is a Wire's size");

}  // namespace ipc
}  // namespace dlb

#endif  // DLBRIDGE_SRC_IPC_WIRE_HPP_
