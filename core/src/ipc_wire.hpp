// The descriptor that travels beside a shared segment's file descriptor on a channel (ipc.cc).
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
inline constexpr uint32_t kWireMinor = 0;

// Fixed size, native byte order (both ends are on the same machine), no pointers. A reader
// checks magic, major and size before anything else; a new minor may only use `reserved`.
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
  uint32_t reserved;
  uint64_t flags;
  uint64_t byte_offset;   // of the first element from the segment's start
  uint64_t segment_size;  // the segment's size in bytes
  int64_t shape[DLB_MAX_NDIM];
  int64_t strides[DLB_MAX_NDIM];
};

}  // namespace ipc
}  // namespace dlb

#endif  // DLBRIDGE_SRC_IPC_WIRE_HPP_
