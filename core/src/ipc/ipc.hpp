// What the parts of the channel share (Linux only): the shareable host segments (segment.cc),
// the wire codec and the checks of what arrives (codec.cc), the socket channel itself
// (channel.cc). The CUDA backend's half is ipc/cuda.hpp; the channel calls it, never the reverse.
#ifndef DLBRIDGE_SRC_IPC_IPC_HPP_
#define DLBRIDGE_SRC_IPC_IPC_HPP_

#include <sched.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>

#include "../internal.hpp"
#include "wire.hpp"

namespace dlb {
namespace ipc {
struct Pool;     // pool.cc: what this end lends to its peer
struct Inbound;  // inbound.cc: what this end was lent by its peer's pool
struct Remote;   // remote.cc: a channel across machines
// The most file descriptors one tensor's descriptor brings: a pool's first send brings its
// segment, its release socket and its return ring.
inline constexpr int kMaxCarriedFds = 3;
}  // namespace ipc
}  // namespace dlb

struct dlb_channel {
  int fd;
  bool listener;
  std::atomic<bool> shut;  // dlb_channel_shutdown was called: every call fails CLOSED
  bool out_of_step;        // a time limit ran out in the middle of a tensor's frames
  int64_t timeout_ns;      // DLB_TIMEOUT_NONE or >= 0
  pid_t peer_pid;
  uid_t peer_uid;
  int nallowed;
  uid_t allowed[16];
  char path[sizeof(sockaddr_un::sun_path)];
  std::atomic<dlb::ipc::Pool*> pool;  // made by the first dlb_channel_allocate
  uint64_t pool_limit;                // bytes (dlb_channel_set_pool_limit)
  // Made by the first pooled tensor received; atomic for dlb_channel_shutdown, which wakes a
  // receive waiting on its release socket.
  std::atomic<dlb::ipc::Inbound*> inbound;
  // Bytes a receive read past its descriptor (the next one's start), with what came along.
  char carry[sizeof(dlb::ipc::Wire)];
  uint32_t carry_size;
  int carry_fds[dlb::ipc::kMaxCarriedFds];
  int carry_fd_count;
  bool carry_dropped;
  dlb::ipc::Remote* remote;  // a channel across machines (then fd is -1): remote.cc serves it
};

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

// ---- the channel (channel.cc) -------------------------------------------------------------

// A channel over the socket `fd` (-1 for a remote one), with the defaults; NULL when out of
// memory. Ownership: the channel takes `fd` on success.
dlb_channel* new_channel(int fd, bool listener, int64_t timeout_ns);

// The checks every call that sends or receives makes: a channel (not NULL, not shut down, not a
// listener: "a listener cannot VERB: accept a connection", in step).
int check_connected(dlb_channel* channel, const char* verb, dlb_error* error);

// The options of a send: DLB_SEND_COPY and nothing else (DLB_ERR_INVALID_ARGUMENT).
int check_send_options(uint32_t options, dlb_error* error);

// DLB_ERR_CLOSED with DLB_CHANNEL_CLOSED_MESSAGE, and whether dlb_channel_shutdown was called.
int fail_shut(dlb_error* error);
bool is_shut(const dlb_channel* channel);
// DLB_ERR_PROTOCOL once a time limit ran out in the middle of a tensor's frames.
int check_in_step(const dlb_channel* channel, dlb_error* error);

// What came with the frames of one tensor: the first two file descriptors (kept), how many came
// in all (the others are closed), and whether the kernel dropped some because this process is
// at its limit of open files (MSG_CTRUNC: the control buffer has room for SCM_MAX_FD of them).
struct Received {
  OwnedFd fds[kMaxCarriedFds];
  int count = 0;
  bool dropped = false;
};

// A listener's socket path as an address ("socket path '...' is N bytes; a Unix socket path
// holds 1 to 107"), and its folder: created 0700 when missing, else the caller's and closed to
// everyone else (socket_path.cc).
int address_of(const char* path, sockaddr_un* address, dlb_error* error);
int check_folder(const char* path, dlb_error* error);

// ---- the socket's byte stream (stream.cc) ---------------------------------------------------

class Deadline;
// Waits until `fd` is ready for `events` or the deadline passes (DLB_ERR_TIMEOUT, the message
// naming `what`). Without a limit, returns at once: the call that follows blocks.
int wait_ready(int fd, short events, const Deadline& deadline, const char* what,
               dlb_error* error);
// Sends all of `size` bytes, the `nfds` (at most 2) file descriptors `fds` with the first of them.
int send_all(dlb_channel* channel, const void* data, size_t size, const int* fds, int nfds,
             dlb_error* error);
// Receives into `bytes` until `*have` (what is there already) reaches `least`, asking for no
// more than `most` in all, and the file descriptors that come along into `got`: the rest of the
// frame (a descriptor, or its extension) that starts at `frame`; `first` for a tensor's first
// frame. `deadline` covers all of a tensor's frames.
int receive_bytes(dlb_channel* channel, char* bytes, size_t* have, size_t frame, size_t least,
                  size_t most, bool first, const char* what, const Deadline& deadline,
                  Received* got, dlb_error* error);
// Bytes read past the descriptor a receive consumed wait in the channel for the next receive,
// with the file descriptors that came with them (keep_carry); take_carry hands them over.
void keep_carry(dlb_channel* channel, const char* bytes, size_t size, Received* got);
size_t take_carry(dlb_channel* channel, char* bytes, Received* got);

// DLB_ERR_LIMIT: the file descriptors that came with a tensor were dropped (RLIMIT_NOFILE).
int fail_dropped(dlb_error* error);

// ---- waiting without sleeping -------------------------------------------------------------

// How long an end spins on its ring before it sleeps in the kernel: about what a wake-up costs
// (measured here: 5-10 us a side, more from an idle virtual cpu), which a stream whose next
// record comes within it saves.
inline constexpr std::chrono::nanoseconds kRingSpin{20000};

// Spins until `ready()` or `most` has passed: whether it became ready. It yields the cpu every
// few dozen looks: a peer on the same cpu then runs (and makes it ready) at the cost of a
// system call, not of a sleep and a wake-up; a peer on another cpu never waits for it.
template <class Ready>
bool spin_until(Ready ready, std::chrono::nanoseconds most) {
  const auto end = std::chrono::steady_clock::now() + most;
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= end) return ready();
    sched_yield();
  }
}

// When a call with a time limit must be done (DLB_TIMEOUT_NONE: never).
class Deadline {
 public:
  explicit Deadline(int64_t timeout_ns);
  bool unlimited() const { return unlimited_; }
  // Milliseconds left for poll, rounded up (0 once passed; -1 without a limit).
  int remaining_ms() const;

 private:
  bool unlimited_;
  timespec end_{};
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

// The memfd every shareable host segment is: created, sized and sealed (no shrinking, growing
// or changing the seals). `huge_pages` asks for hugetlbfs pages (`size` a multiple of 2 MiB);
// without them the caller falls back. Ownership: *out holds the descriptor on success; nothing
// is left open on error.
int create_sealed_memfd(uint64_t size, bool huge_pages, OwnedFd* out, dlb_error* error,
                        const char* name = "dlbridge");

// ---- the pool (pool.cc): dlb_channel_allocate's slots, sent with kHandlePool ---------------

struct Slot;

// The pool slot behind `tensor` (itself, a view or a share of a tensor over one), or NULL.
Slot* pool_slot_of(const DLManagedTensorVersioned* tensor);
// Memory of the pool slot `ctx` when `release` is the pool's release function: exposed while
// the peer holds a send of it. False for anything else.
bool pool_memory_is_exposed(dlb_release_fn release, void* ctx);

// What a send of a pool slot carries besides its descriptor.
struct PooledSend {
  Slot* slot = nullptr;
  int fds[kMaxCarriedFds] = {-1, -1, -1};
  int nfds = 0;
};

// Prepares the send of the pool tensor `tensor` (over `slot`, of the sending channel's pool): the descriptor and
// its extension, and the file descriptors that go along (the segment's the first time, the
// release socket with the channel's first pooled send). Refuses a slot of another channel's
// pool (DLB_ERR_INVALID_ARGUMENT) and reports tensors the peer lost (DLB_ERR_LIMIT, once).
// Counts the slot as lent until pool_finish_send says the send failed.
int pool_prepare_send(const DLManagedTensorVersioned& tensor, Slot* slot, Wire* wire,
                      PoolExtension* extension, PooledSend* send, dlb_error* error);
void pool_finish_send(const PooledSend& send, bool sent);

// What pool_post returns for a send that must go on the socket.
inline constexpr int kNotPosted = -1;
// Posts a prepared pooled send on the rings (wire.hpp, PoolRings): DLB_OK, or an error
// (DLB_ERR_TIMEOUT waiting for room on the ring, DLB_ERR_PEER_CLOSED, DLB_ERR_CLOSED); or
// kNotPosted where it goes on the socket instead: the peer has no rings yet, file descriptors
// come along, or its rank is above kPostMaxRank.
int pool_post(dlb_channel* channel, const Wire& wire, const PoolExtension& extension,
              const PooledSend& send, dlb_error* error);
// After a send on the socket, once the peer has the rings: the kPostSocket entry that puts it
// in its place among the posts. A failure leaves the channel out of step.
int pool_mark_socket(dlb_channel* channel, dlb_error* error);

// What receive_posted returns when the next tensor comes on the socket.
inline constexpr int kFromSocket = -2;
// The receiving end of the rings: the next tensor when the peer posted it (received as
// receive_pooled receives one), else kFromSocket when its mark says it is on the socket, the
// peer closed, or the peer has no rings. Waits (within `deadline`) on the channel's socket and
// on this end of the release socket, where the peer's pool rings when it posts.
int receive_posted(dlb_channel* channel, const Deadline& deadline,
                   DLManagedTensorVersioned** out, dlb_error* error);
// dlb_channel_shutdown's part: wakes a receive waiting for posts.
void inbound_shutdown(dlb_channel* channel);
// Whether `slot` belongs to `channel`'s pool.
bool pool_belongs(const dlb_channel* channel, const Slot* slot);
// The channel shuts down (wakes an allocation waiting for the peer) or closes.
void pool_shutdown(dlb_channel* channel);
void pool_close(dlb_channel* channel);

// ---- what the peer's pool lent (inbound.cc) ------------------------------------------------

// Receives a kHandlePool descriptor and its extension with the file descriptors `got` brought:
// checks all of it, then wraps the slot over the segment's kept mapping (mapping it once, the
// first time). Tells the peer about a tensor lost here (file descriptors dropped, no room to
// map). Ownership: `got`'s descriptors are taken in every case.
int receive_pooled(dlb_channel* channel, const Wire& wire, const PoolExtension& extension,
                   Received* got, DLManagedTensorVersioned** out, dlb_error* error);
// Whether `tensor` (or the tensor its view or share came from) was lent by a peer's pool.
bool is_lent(const DLManagedTensorVersioned* tensor);
// Memory lent by a peer's pool: always exposed (the peer maps it).
bool lent_memory_is_exposed(dlb_release_fn release, void* ctx);
// Sends what the frees of lent tensors have not sent yet (without waiting). Returns true when
// something is still waiting, because the peer's side of the release socket is full.
bool flush_releases(dlb_channel* channel);
// The release socket's descriptor while releases wait to go out, else -1 (for poll); of
// `inbound`, or of the channel's when NULL.
int pending_release_fd(dlb_channel* channel, Inbound* inbound = nullptr);
void inbound_close(dlb_channel* channel);
// Before a receive waits: the releases of lent tensors go out first. While the peer's side of
// the release socket is full, waits for room there as well as for the next tensor, so that a
// peer waiting for its slots and this end waiting for a tensor never wait on each other.
int wait_releasing(dlb_channel* channel, const Deadline& deadline, dlb_error* error);

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

// The file descriptor of a received host segment: a memory segment (fstat) of the descriptor's
// size, sealed against shrinking and growing, and writable when the tensor is sent writable.
int check_segment_fd(const Wire& wire, int fd, dlb_error* error);

// A received pool descriptor and its extension, with the `fds` file descriptors that came with
// it, before anything is mapped: the extension, the count, the device, the tensor's layout
// against the segment's size. Fills `g` (offsets from the segment's first byte).
int check_pooled(const Wire& wire, const PoolExtension& extension, int fds, Geometry* g,
                 dlb_error* error);

// A descriptor that arrived on a remote channel as an active message's `header` (the remote
// form, wire.hpp's pack_remote) with `arrived` bytes behind it, before anything is allocated for
// it: its head (magic, major), its rank and size, then (decoded into *wire and *extension) its
// kind and extension, the layout (shape, strides, wire->byte_offset) as an import checks it on
// this end's host memory, then the bytes: they are the tensor's covering span, from its lowest
// element (so byte_offset places the first element) to the end of its highest, which must be
// what arrived (DLB_ERR_PROTOCOL) and at most `max_tensor_bytes` (DLB_ERR_LIMIT, naming
// `peer`). Where `may_come_in_parts` (a lone tensor, not one of a batch), a descriptor whose
// extension says `in_parts` must have brought fewer than its payload_bytes: the rest comes in
// Part messages, which the caller counts. *placed says whether the header was whole, so that
// extension->sequence holds the tensor's place.
int check_remote(const void* header, size_t header_size, uint64_t arrived, bool may_come_in_parts,
                 uint64_t max_tensor_bytes, const char* peer, Wire* wire,
                 RemoteExtension* extension, bool* placed, dlb_error* error);

// A batch's header (BatchHeader, `header_size` bytes) as it arrived: its number of records, or
// DLB_ERR_PROTOCOL naming what is wrong.
int check_batch(const void* header, size_t header_size, uint32_t* count, dlb_error* error);
// The record of a batch's data (`length` bytes) that starts at *offset: its parts, *offset moved
// past it. A record that does not fit in what is left, or says a header of a size no tensor has:
// DLB_ERR_PROTOCOL, naming it (`index`, counted from 0). What the header says is check_remote's.
int next_batch_record(const unsigned char* data, size_t length, size_t* offset, uint32_t index,
                      BatchEntry* out, dlb_error* error);
// Whether a remote descriptor that check_remote accepted keeps its strides: its layout is not
// compact row-major (the sender sent a covering span: a broadcast or overlapping view, or with
// DLB_SEND_KEEP_LAYOUT). A compact one is received with compact strides whatever the strides of
// its extents of 1 said.
bool remote_keeps_strides(const Wire& wire);

// A received CUDA descriptor and its extension, before the backend maps anything.
int check_cuda(const Wire& wire, const WireExtension& extension, int fds, dlb_error* error);

}  // namespace ipc
}  // namespace dlb

#endif  // DLBRIDGE_SRC_IPC_IPC_HPP_
