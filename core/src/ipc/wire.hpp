// The descriptor that travels beside a shared segment's file descriptor on a channel (ipc/).
// Internal: both ends are this library on the same machine; the tests of suite ipc include it to
// forge descriptors.
#ifndef DLBRIDGE_SRC_IPC_WIRE_HPP_
#define DLBRIDGE_SRC_IPC_WIRE_HPP_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dlbridge/dlbridge.h"

namespace dlb {
namespace ipc {

inline constexpr char kWireMagic[8] = {'d', 'l', 'b', 'r', 'i', 'd', 'g', 'e'};
inline constexpr uint32_t kWireMajor = 1;
// 0: host memory only. 1: `handle` names the kind of memory (CUDA kinds added), and every kind
// but kHandleMemfd is followed by one extension frame. 2: kHandlePool (a channel's pool).
// 3: kHandleRemote (a channel across machines: the bytes follow the descriptor). 4: those bytes
// are the tensor's covering span, laid out by the descriptor's strides, the first element
// byte_offset bytes in (3 sent compact bytes only, and its readers ignored the strides); a
// pool's first send may bring its rings (kPoolRingFd). 5: a remote tensor's bytes may come in
// parts (RemoteExtension::in_parts, PartHeader).
inline constexpr uint32_t kWireMinor = 5;

// What kind of memory a descriptor describes (Wire::handle). Minor 0 wrote 0 there.
inline constexpr uint32_t kHandleMemfd = 0;    // a sealed memfd, the file descriptor that comes along
inline constexpr uint32_t kHandleCudaFd = 1;   // a cuMemCreate allocation exported as a POSIX fd
inline constexpr uint32_t kHandleCudaIpc = 2;  // cudaMalloc memory: a cudaIpcMemHandle_t, no fd
inline constexpr uint32_t kHandlePool = 3;     // a slot of the sender's pool (PoolExtension)
inline constexpr uint32_t kHandleRemote = 4;   // the bytes travel after it (RemoteExtension)

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

// The extension frame of a kHandlePool descriptor: which segment of the sender's pool and which
// slot in it. A segment travels (its memfd) the first time one of its slots is sent on the
// channel; later sends name it by `segment`, and the receiver uses the mapping it kept. The
// first pooled send of a channel also brings the pool's release socket, on which the receiver
// gives each slot back when it frees its tensor.
inline constexpr char kPoolMagic[8] = {'d', 'l', 'b', '-', 'p', 'o', 'o', 'l'};
inline constexpr uint32_t kPoolSegmentFd = 1;   // the segment's memfd comes along (first)
inline constexpr uint32_t kPoolReleaseFd = 2;   // the release socket comes along (after it)
inline constexpr uint32_t kPoolRingFd = 4;      // the pool's rings (after the socket)
struct PoolExtension {
  char magic[8];      // kPoolMagic
  uint32_t segment;   // the segment's number in the sender's pool (0, 1, 2, ...)
  uint32_t slot;      // the slot's number in its segment
  uint32_t attached;  // kPoolSegmentFd | kPoolReleaseFd | kPoolRingFd: what comes along
  uint32_t reserved;  // 0
  unsigned char unused[sizeof(Wire) - 24];  // 0
};
static_assert(sizeof(PoolExtension) == sizeof(Wire), "the extension frame is a Wire's size");

// What a receiver sends back on a pool's release socket (a stream of them): the slot it
// no longer holds, and whether its tensor arrived (kReleased) or was lost at the receiver
// because that process ran out of file descriptors or room for mappings.
inline constexpr uint32_t kReleased = 0;
inline constexpr uint32_t kLostNoFds = 1;
inline constexpr uint32_t kLostNoMapping = 2;
inline constexpr uint32_t kDoorbell = 3;  // names no slot: wakes a pool that waits for returns
struct ReleaseRecord {
  uint32_t segment;
  uint32_t slot;
  uint32_t outcome;  // kReleased, kLostNoFds, kLostNoMapping, kDoorbell
  uint32_t reserved;
};
// The most records the pool's end reads at once (64 KiB).
inline constexpr size_t kMaxReleasesPerDatagram = 4096;

// The pool's rings (wire minor 4): shared memory, a sealed memfd the first pooled send brings
// beside the release socket, so that the common case of a pool costs no system call at either
// end. Each ring has one writer and one reader; each end keeps its own index and only publishes
// it, so a peer that scribbles on the rings loses its own tensors and slots and nothing more:
// every entry is copied out and checked as if it had come on the socket.
//  - Returns (receiver → pool): the receiver writes release records at `return_tail`, the pool
//    takes them from `return_head`. A receiver whose ring is full sends on the release socket
//    instead. A pool that waits for returns sets `return_waiting`; the receiver that then gives
//    a slot back clears it and rings the release socket (a kDoorbell record).
//  - Posts (pool → receiver): a pooled send whose descriptor brings no file descriptor (its
//    segment went before) and whose rank is at most kPostMaxRank is written at `post_tail` as a
//    PostEntry; every other send on the channel goes on the socket, after a kPostSocket entry
//    that says so, so the receiver takes both in the order they were sent. A receiver that
//    waits sets `post_waiting`; the pool that then posts clears it and writes one byte to its
//    end of the release socket, which the receiver polls beside the channel. A pool that finds
//    the ring full sets `space_waiting` and sleeps on the release socket until the receiver
//    takes an entry and rings it (a kDoorbell record). A receiver that closes its channel
//    says so in `receiver_closed` (its tensors, and so the rings, may live on), and posts then
//    fail as a send to a closed socket does.
inline constexpr uint32_t kReturnRingRecords = 4096;
inline constexpr int32_t kPostMaxRank = 8;
inline constexpr uint32_t kPostEntries = 256;
inline constexpr uint32_t kPostTensor = 1;  // the entry's descriptor is the tensor
inline constexpr uint32_t kPostSocket = 2;  // the next tensor comes on the channel's socket
struct PostEntry {
  uint32_t kind;  // kPostTensor, kPostSocket
  uint32_t reserved;
  unsigned char head[offsetof(Wire, shape)];  // the Wire's fields before its shape
  int64_t shape[kPostMaxRank];
  int64_t strides[kPostMaxRank];
  unsigned char extension[offsetof(PoolExtension, unused)];  // its fields before `unused`
};
struct PoolRings {
  alignas(64) uint64_t return_head;  // release records the pool took back (written there)
  alignas(64) uint64_t return_tail;  // release records the receiver wrote (written there)
  alignas(64) uint32_t return_waiting;  // 1: the pool sleeps until a doorbell
  alignas(64) uint64_t post_head;  // entries the receiver took (written there)
  alignas(64) uint64_t post_tail;  // entries the pool wrote (written there)
  alignas(64) uint32_t post_waiting;   // 1: the receiver sleeps until a byte on its socket end
  alignas(64) uint32_t space_waiting;  // 1: the pool sleeps until a doorbell
  alignas(64) uint32_t receiver_closed;  // 1: the receiver closed its channel: posts fail
  alignas(64) ReleaseRecord returns[kReturnRingRecords];
  alignas(64) PostEntry posts[kPostEntries];
};

// The extension frame of a kHandleRemote descriptor, on a channel across machines (remote.cc):
// the descriptor and this frame, both cut to the tensor's rank (pack_remote), are one UCX active
// message's header, and the tensor's bytes, `payload_bytes` of them (its compact bytes or its
// covering span), its data; or, with `in_parts`, some of them, the rest coming in Part messages
// (PartHeader). Byte order is the machines' own: both ends must be little-endian (the
// handshake checks it), as every platform this library builds on is.
inline constexpr char kRemoteMagic[8] = {'d', 'l', 'b', '-', 'n', 'e', 't', '1'};
struct RemoteExtension {
  char magic[8];                 // kRemoteMagic
  uint64_t payload_bytes;        // the tensor's bytes that follow (its compact size)
  unsigned char device_uuid[16]; // the sender's CUDA device's UUID, or 0 for host memory
  uint32_t sequence;             // the sender's count of tensors sent on the channel, from 0
  uint32_t in_parts;             // 1: bytes besides the message's own come in Part messages
                                 // (minor 5; a lone tensor only); else 0
  unsigned char unused[sizeof(Wire) - 40];  // 0
};
static_assert(sizeof(RemoteExtension) == sizeof(Wire), "the extension frame is a Wire's size");

// On a remote channel both frames travel cut to the tensor's rank, so that a small tensor's
// header is about a hundred bytes, not two frames of a fixed 1 KiB each: the Wire's fields
// before `shape` (with `size` = kWireHeadBytes + 16 * ndim), its first ndim extents, its first
// ndim strides, then the RemoteExtension's fields before `unused`. A receiver reads the head,
// checks magic, major and size, and only then the rest (codec.cc, check_remote).
inline constexpr size_t kWireHeadBytes = offsetof(Wire, shape);
inline constexpr size_t kRemoteExtensionBytes = offsetof(RemoteExtension, unused);
inline constexpr size_t remote_wire_size(int32_t ndim) {
  return kWireHeadBytes + 2 * sizeof(int64_t) * static_cast<size_t>(ndim);
}
inline constexpr size_t remote_header_size(int32_t ndim) {
  return remote_wire_size(ndim) + kRemoteExtensionBytes;
}
inline constexpr size_t kMaxRemoteHeaderBytes = remote_header_size(DLB_MAX_NDIM);

// Writes `wire` (its `size` set here) and `extension` in the remote form into `out`
// (kMaxRemoteHeaderBytes at least); returns the header's size. `wire.ndim` must be in
// 0..DLB_MAX_NDIM.
inline size_t pack_remote(const Wire& wire, const RemoteExtension& extension, unsigned char* out) {
  const size_t dims = sizeof(int64_t) * static_cast<size_t>(wire.ndim);
  const auto size = static_cast<uint32_t>(remote_wire_size(wire.ndim));
  std::memcpy(out, &wire, kWireHeadBytes);
  std::memcpy(out + offsetof(Wire, size), &size, sizeof size);
  std::memcpy(out + kWireHeadBytes, wire.shape, dims);
  std::memcpy(out + kWireHeadBytes + dims, wire.strides, dims);
  std::memcpy(out + kWireHeadBytes + 2 * dims, &extension, kRemoteExtensionBytes);
  return remote_header_size(wire.ndim);
}

// A batch: tensors a sender held (dlb_channel_send with DLB_SEND_MORE) travelling as one UCX
// active message, so that a stream of small tensors costs the transport one message, not one
// each. Its header is a BatchHeader; its data `count` records back to back, each a BatchRecord,
// then the tensor's remote header (pack_remote) and its payload, exactly as a lone tensor's
// header and data would be. A batch holds at most kBatchBytes of records
// (remote_internal.hpp); one over kEagerMaxBytes goes by rendezvous, and a receiver refuses a
// rendezvous batch with more records than its window has room for before it makes its buffer.
inline constexpr char kBatchMagic[8] = {'d', 'l', 'b', '-', 'b', 't', 'c', 'h'};
struct BatchHeader {
  char magic[8];   // kBatchMagic
  uint32_t count;  // records in the batch, at least 1
  uint32_t reserved;  // 0
};
struct BatchRecord {
  uint32_t header_bytes;   // the tensor's remote header that follows
  uint32_t reserved;       // 0
  uint64_t payload_bytes;  // the tensor's bytes after its header
};

// A Part message: bytes of the tensor whose message came last, which said `in_parts`, from byte
// `offset` of its payload; its header a PartHeader, its data the bytes. The parts of a tensor
// follow its message at once, in order, and bring the payload's bytes the message does not:
//  - after an eager message's: a tensor that with its header is more than one transport segment
//    (UCX's TCP: 64 KiB) goes as messages that fit one each, which the receiver copies out as
//    they come, where UCX would send fragments and join them in a buffer of its own first;
//  - before a rendezvous's (the payload's last bytes): the first bytes of a large tensor travel
//    eagerly while the rendezvous makes its round trip.
inline constexpr char kPartMagic[8] = {'d', 'l', 'b', '-', 'p', 'a', 'r', 't'};
struct PartHeader {
  char magic[8];      // kPartMagic
  uint32_t sequence;  // the tensor's (RemoteExtension::sequence)
  uint32_t reserved;  // 0
  uint64_t offset;    // of the part's first byte in the tensor's payload
};

// One record of a batch, as next_batch_record found it in the batch's data.
struct BatchEntry {
  const unsigned char* header;
  size_t header_bytes;
  const unsigned char* payload;
  uint64_t payload_bytes;
};

}  // namespace ipc
}  // namespace dlb

#endif  // DLBRIDGE_SRC_IPC_WIRE_HPP_
