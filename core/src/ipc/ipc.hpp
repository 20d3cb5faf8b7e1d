// What the parts of the channel share (Linux only): the shareable host segments (segment.cc),
// the wire codec and the checks of what arrives (codec.cc), the socket channel itself
// (channel.cc). The CUDA backend's half is ipc/cuda.hpp; the channel calls it, never the reverse.
#ifndef DLBRIDGE_SRC_IPC_IPC_HPP_
#define DLBRIDGE_SRC_IPC_IPC_HPP_

#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "../internal.hpp"
#include "wire.hpp"

namespace dlb {
namespace ipc {

// ---- operating system failures ------------------------------------------------------------

// Fails with the channel status that `err` (an errno value) stands for, the message "WHAT
// failed: STRERROR", and, for the limits, the limit's value: EPIPE, ECONNRESET, ENOTCONN →
// DLB_ERR_PEER_CLOSED; EACCES, EPERM → DLB_ERR_PERMISSION; EMFILE, ENFILE, ETOOMANYREFS →
// DLB_ERR_LIMIT; ENOMEM, ENOBUFS → DLB_ERR_OUT_OF_MEMORY; EAGAIN → DLB_ERR_TIMEOUT; ENOENT,
// ECONNREFUSED → `missing`; anything else → DLB_ERR_DEVICE (the header's catch-all).
int os_fail(dlb_error* error, int err, int missing, const char* what);

// A file descriptor closed when the holder goes out of scope, unless it was released.
class OwnedFd {
 public:
  explicit OwnedFd(int fd = -1) : fd_(fd) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() { reset(-1); }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// ---- segments (segment.cc) ----------------------------------------------------------------

// One process's mapping of (a part of) a shared memfd segment, the release context of the
// tensor over it.
struct Segment {
  int fd;
  void* base;         // the mapping's first byte
  uint64_t mapped;    // bytes mapped from base
  uint64_t offset;    // where the mapping starts in the segment (a multiple of the page size)
  uint64_t size;      // the whole segment's size (the memfd's)
  // Set once the segment was sent, or when it was received from a peer that keeps it: another
  // process may map it, so no tensor of this process is its only holder any more.
  std::atomic<bool> exposed;
};

// The segment behind `tensor` (itself, a view or a share of a tensor over one), or NULL.
Segment* segment_of(const DLManagedTensorVersioned* tensor);

// Maps the pages of the received memfd `fd` that the descriptor's tensor reaches (`g`, from
// check_memfd) and wraps them as *out. Ownership: `fd` is taken in every case.
int map_received_segment(OwnedFd& fd, const Wire& wire, const Geometry& g,
                         DLManagedTensorVersioned** out, dlb_error* error);

// ---- the wire codec (codec.cc) ------------------------------------------------------------

// Writes the descriptor of `tensor` over memory of kind `handle` whose first byte in this
// process is `base` at `base_offset` bytes into a segment of `segment_size` bytes.
void encode(const DLManagedTensorVersioned& tensor, uint32_t handle, const void* base,
            uint64_t base_offset, uint64_t segment_size, Wire* wire);

// Magic, size and major version of a received descriptor (DLB_ERR_PROTOCOL, or
// DLB_ERR_UNSUPPORTED_VERSION for another major or size).
int check_header(const Wire& wire, dlb_error* error);

// A received memfd descriptor with the `fds` file descriptors that came with it (the first one
// `fd`), before anything is mapped: the count, the device, the tensor's layout against the
// segment's size, the segment's real size, seals and access mode. DLB_ERR_PROTOCOL. Fills `g`,
// the tensor's geometry (offsets from the segment's first byte), for map_received_segment.
int check_memfd(const Wire& wire, int fd, int fds, Geometry* g, dlb_error* error);

// A received CUDA descriptor and its extension, before the backend maps anything.
int check_cuda(const Wire& wire, const WireExtension& extension, int fds, dlb_error* error);

}  // namespace ipc
}  // namespace dlb

#endif  // DLBRIDGE_SRC_IPC_IPC_HPP_
