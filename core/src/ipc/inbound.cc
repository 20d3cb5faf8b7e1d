// What this end was lent by its peer's pool (pool.cc, on the peer's side): the segments it has
// seen, each mapped once and kept while the channel or a tensor over it lives, and the release
// socket on which a freed tensor's slot goes back. A tensor over a kept segment costs no system
// call to receive; its free costs one send on the release socket, never a wait.
#if defined(__linux__)
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ipc.hpp"

namespace dlb {
namespace ipc {

struct InSegment {
  Inbound* inbound;
  uint32_t number;  // the peer's name for it
  int fd;           // kept to map it read-only or read-write when a tensor first needs that
  uint64_t size;
  bool writable_checked;           // its seals and access mode allow a writable tensor
  char* mapped[2];                 // [0] read-write, [1] read-only: mapped on first need
  std::atomic<long> holders;       // the channel's table, and each tensor over it
};

struct Inbound {
  std::mutex mutex;  // guards release_fd, return_tail, dead, pending and holders
  int release_fd = -1;
  PoolRings* ring = nullptr;  // the peer's rings, when it sent them
  // This end's indices (the rings' own are the peer's word): returns written, posts taken.
  uint64_t return_tail = 0;
  uint64_t post_head = 0;  // the channel's thread alone touches it
  bool bells_closed = false;  // the peer's end of the release socket is gone (channel's thread)
  bool dead = false;  // the peer's end is gone: returns are dropped
  std::vector<unsigned char> pending;  // returns (ReleaseRecords) the socket had no room for yet
  long holders = 1;   // the channel, and each kept segment
  // The channel's thread alone touches these.
  std::unordered_map<uint32_t, InSegment*> segments;
  std::unordered_set<uint32_t> lost;  // segments whose memfd was dropped here
};

namespace {

// A received tensor's release context: which slot of which kept segment it is over.
struct Lent {
  InSegment* segment;
  uint32_t slot;
};

// Sends what is pending, without waiting (under the lock). The release socket is a stream: a
// send may take part of it, and the rest waits for the next try.
void flush_locked(Inbound* inbound) {
  size_t done = 0;
  while (done < inbound->pending.size()) {
    const ssize_t n = send(inbound->release_fd, inbound->pending.data() + done,
                           inbound->pending.size() - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) {
      done += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      break;  // the peer's side is full: the next receive, free or close tries again
    } else if (errno != EINTR) {
      inbound->dead = true;  // the peer's pool is gone; nothing more to tell it
      inbound->pending.clear();
      return;
    }
  }
  inbound->pending.erase(inbound->pending.begin(), inbound->pending.begin() + done);
}

// Sends `record` on the release socket (under the lock), after what waits there already.
void send_record_locked(Inbound* inbound, const ReleaseRecord& record) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(&record);
  inbound->pending.insert(inbound->pending.end(), bytes, bytes + sizeof record);
  flush_locked(inbound);
}

// Writes `record` to the return ring when it has room (under the lock). The ring's head is the
// peer's word: a head that says more room than the ring holds counts as a full ring.
bool ring_record(Inbound* inbound, const ReleaseRecord& record) {
  PoolRings* ring = inbound->ring;
  if (ring == nullptr) return false;
  const uint64_t head = __atomic_load_n(&ring->return_head, __ATOMIC_ACQUIRE);
  if (inbound->return_tail - head >= kReturnRingRecords) return false;
  std::memcpy(&ring->returns[inbound->return_tail % kReturnRingRecords], &record, sizeof record);
  ++inbound->return_tail;
  __atomic_store_n(&ring->return_tail, inbound->return_tail, __ATOMIC_SEQ_CST);
  return true;
}

// Gives a slot back: on the return ring (no system call, unless the peer's pool sleeps waiting
// for it: then a doorbell on the release socket), else on the release socket.
void give_back(Inbound* inbound, uint32_t segment, uint32_t slot, uint32_t outcome) {
  const ReleaseRecord record{segment, slot, outcome, 0};
  std::lock_guard<std::mutex> lock(inbound->mutex);
  if (inbound->dead) return;
  if (!ring_record(inbound, record)) {
    send_record_locked(inbound, record);
  } else if (__atomic_exchange_n(&inbound->ring->return_waiting, 0u, __ATOMIC_SEQ_CST) != 0) {
    send_record_locked(inbound, ReleaseRecord{0, 0, kDoorbell, 0});
  }
}

void unhold_inbound(Inbound* inbound) {
  bool last;
  {
    std::lock_guard<std::mutex> lock(inbound->mutex);
    last = --inbound->holders == 0;
  }
  if (!last) return;
  if (inbound->release_fd >= 0) close(inbound->release_fd);
  if (inbound->ring != nullptr) munmap(inbound->ring, sizeof(PoolRings));
  delete inbound;
}

void unhold_segment(InSegment* segment) {
  if (segment->holders.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  for (char* base : segment->mapped) {
    if (base != nullptr) munmap(base, segment->size);
  }
  close(segment->fd);
  Inbound* inbound = segment->inbound;
  delete segment;
  unhold_inbound(inbound);
}

void release_lent(void* ctx) {
  auto* lent = static_cast<Lent*>(ctx);
  InSegment* segment = lent->segment;
  give_back(segment->inbound, segment->number, lent->slot, kReleased);
  std::free(lent);
  unhold_segment(segment);
}

// A tensor lost here (its file descriptors dropped, no room to map it): the peer is told, so
// that it neither waits for the slot nor loses the tensor without a word.
void tell_lost(dlb_channel* channel, const PoolExtension& extension, uint32_t outcome) {
  if (channel->inbound != nullptr) {
    give_back(channel->inbound, extension.segment, extension.slot, outcome);
  }
}

// The release socket the channel's first pooled tensor brought (a stream socket), and the
// return ring when it came too (a memory segment of the ring's size, sealed against shrinking
// and growing, mapped read-write).
int install_release_socket(dlb_channel* channel, OwnedFd& fd, OwnedFd* ring_fd,
                           dlb_error* error) {
  int type = 0;
  socklen_t length = sizeof type;
  if (getsockopt(fd.get(), SOL_SOCKET, SO_TYPE, &type, &length) != 0 || type != SOCK_STREAM) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the file descriptor the peer's pool sent as its release socket is not a "
                "stream socket");
  }
  void* ring = nullptr;
  if (ring_fd != nullptr) {
    Wire expected{};
    expected.segment_size = sizeof(PoolRings);
    const int status = check_segment_fd(expected, ring_fd->get(), error);
    if (status != DLB_OK) return status;
    ring = mmap(nullptr, sizeof(PoolRings), PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd->get(),
                0);
    if (ring == MAP_FAILED) return os_fail(error, errno, DLB_ERR_LIMIT, "mmap of the return ring");
  }
  auto* inbound = new (std::nothrow) Inbound;
  if (inbound == nullptr) {
    if (ring != nullptr) munmap(ring, sizeof(PoolRings));
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory receiving");
  }
  inbound->release_fd = fd.release();
  inbound->ring = static_cast<PoolRings*>(ring);
  // Where the peer's pool will look first: the records it has not taken yet are its own word.
  if (ring != nullptr) {
    inbound->return_tail = __atomic_load_n(&inbound->ring->return_tail, __ATOMIC_ACQUIRE);
    inbound->post_head = __atomic_load_n(&inbound->ring->post_head, __ATOMIC_ACQUIRE);
  }
  channel->inbound = inbound;
  return DLB_OK;
}

// The kept segment a descriptor names: one that came with it (checked, then kept), or one that
// came before.
int find_segment(dlb_channel* channel, const Wire& wire, const PoolExtension& extension,
                 OwnedFd* fd, InSegment** out, dlb_error* error) {
  Inbound* inbound = channel->inbound;
  auto found = inbound->segments.find(extension.segment);
  if ((extension.attached & kPoolSegmentFd) == 0) {
    if (found == inbound->segments.end()) {
      if (inbound->lost.count(extension.segment) != 0) {
        tell_lost(channel, extension, kLostNoFds);
        return fail(error, DLB_ERR_LIMIT,
                    "the received tensor lies in segment %u of the peer's pool, whose file "
                    "descriptor was dropped when this process was at its limit of open file "
                    "descriptors (RLIMIT_NOFILE); the tensor is lost",
                    static_cast<unsigned>(extension.segment));
      }
      return fail(error, DLB_ERR_PROTOCOL,
                  "the descriptor names segment %u of the peer's pool, which never arrived",
                  static_cast<unsigned>(extension.segment));
    }
    InSegment* segment = found->second;
    if (segment->size != wire.segment_size) {
      return fail(error, DLB_ERR_PROTOCOL,
                  "the descriptor says segment %u of the peer's pool holds %llu bytes, but it "
                  "arrived with %llu",
                  static_cast<unsigned>(extension.segment),
                  static_cast<unsigned long long>(wire.segment_size),
                  static_cast<unsigned long long>(segment->size));
    }
    const bool writable = (wire.flags & DLPACK_FLAG_BITMASK_READ_ONLY) == 0;
    if (writable && !segment->writable_checked) {
      const int status = check_segment_fd(wire, segment->fd, error);
      if (status != DLB_OK) return status;
      segment->writable_checked = true;
    }
    *out = segment;
    return DLB_OK;
  }
  if (found != inbound->segments.end()) {
    return fail(error, DLB_ERR_PROTOCOL, "segment %u of the peer's pool arrived twice",
                static_cast<unsigned>(extension.segment));
  }
  const int status = check_segment_fd(wire, fd->get(), error);
  if (status != DLB_OK) return status;
  auto* segment = new (std::nothrow) InSegment{};
  if (segment == nullptr) return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory receiving");
  segment->inbound = inbound;
  segment->number = extension.segment;
  segment->fd = fd->release();
  segment->size = wire.segment_size;
  segment->writable_checked = (wire.flags & DLPACK_FLAG_BITMASK_READ_ONLY) == 0;
  segment->holders.store(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(inbound->mutex);
    ++inbound->holders;
  }
  inbound->segments.emplace(extension.segment, segment);
  inbound->lost.erase(extension.segment);
  *out = segment;
  return DLB_OK;
}

}  // namespace

int receive_pooled(dlb_channel* channel, const Wire& wire, const PoolExtension& extension,
                   Received* got, DLManagedTensorVersioned** out, dlb_error* error) {
  if (got->dropped) {
    Inbound* inbound = channel->inbound;
    if (inbound != nullptr && (extension.attached & kPoolSegmentFd) != 0) {
      inbound->lost.insert(extension.segment);
    }
    tell_lost(channel, extension, kLostNoFds);
    return fail_dropped(error);
  }
  Geometry g{};
  int status = check_pooled(wire, extension, got->count, &g, error);
  if (status != DLB_OK) return status;
  OwnedFd& segment_fd = got->fds[0];
  const int release_at = (extension.attached & kPoolSegmentFd) != 0 ? 1 : 0;
  OwnedFd& release_fd = got->fds[release_at];
  OwnedFd* ring_fd =
      (extension.attached & kPoolRingFd) != 0 ? &got->fds[release_at + 1] : nullptr;
  if ((extension.attached & kPoolReleaseFd) != 0) {
    if (channel->inbound != nullptr) {
      return fail(error, DLB_ERR_PROTOCOL, "the peer's pool sent its release socket twice");
    }
    status = install_release_socket(channel, release_fd, ring_fd, error);
    if (status != DLB_OK) return status;
  } else if (channel->inbound == nullptr) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a tensor of the peer's pool came before the pool's release socket");
  }
  InSegment* segment = nullptr;
  status = find_segment(channel, wire, extension, &segment_fd, &segment, error);
  if (status != DLB_OK) return status;
  const bool read_only = (wire.flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  char*& base = segment->mapped[read_only ? 1 : 0];
  if (base == nullptr) {
    void* mapped = mmap(nullptr, segment->size, read_only ? PROT_READ : PROT_READ | PROT_WRITE,
                        MAP_SHARED, segment->fd, 0);
    if (mapped == MAP_FAILED) {
      const int saved = errno;
      if (saved == ENOMEM) {
        tell_lost(channel, extension, kLostNoMapping);
        return fail(error, DLB_ERR_LIMIT,
                    "cannot map %llu bytes of the received segment: this process has no room "
                    "left for the mapping (its address space or the system's limit of mappings "
                    "per process, vm.max_map_count); the tensor is lost",
                    static_cast<unsigned long long>(segment->size));
      }
      return os_fail(error, saved, DLB_ERR_PROTOCOL, "mmap of the received segment");
    }
    base = static_cast<char*>(mapped);
  }
  auto* lent = static_cast<Lent*>(std::malloc(sizeof(Lent)));
  if (lent == nullptr) return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory receiving");
  *lent = Lent{segment, extension.slot};
  segment->holders.fetch_add(1, std::memory_order_relaxed);
  // The tensor's data at the cache line its first touched byte lies on, within the segment.
  const uint64_t first = g.span_bits == 0 ? 0 : static_cast<uint64_t>(g.begin_bits >> 3);
  const uint64_t start = std::min<uint64_t>(first, wire.byte_offset) & ~uint64_t{63};
  DLTensor desc = described_tensor(wire, base + start, wire.byte_offset - start);
  status = dlb_tensor_wrap_buffer(&desc, segment->size - start, wire.flags, release_lent, lent,
                                  out, error);
  if (status != DLB_OK) release_lent(lent);  // the slot goes back: this end never held it
  return status;
}

namespace {

// What take_post says of a tail further ahead than the ring holds.
constexpr uint32_t kPostOverrun = ~0u;

// Takes the next post (the channel's thread): true with *entry filled, false when the ring is
// empty. Tells a pool that waits for room that there is some now.
bool take_post(Inbound* inbound, PostEntry* entry) {
  PoolRings* ring = inbound->ring;
  const uint64_t tail = __atomic_load_n(&ring->post_tail, __ATOMIC_ACQUIRE);
  if (tail == inbound->post_head) return false;
  if (tail - inbound->post_head > kPostEntries) {
    // More than the ring holds: the peer wrote its tail wrong, and the order is lost.
    entry->kind = kPostOverrun;
    return true;
  }
  std::memcpy(entry, &ring->posts[inbound->post_head % kPostEntries], sizeof *entry);
  ++inbound->post_head;
  __atomic_store_n(&ring->post_head, inbound->post_head, __ATOMIC_SEQ_CST);
  if (__atomic_exchange_n(&ring->space_waiting, 0u, __ATOMIC_SEQ_CST) != 0) {
    std::lock_guard<std::mutex> lock(inbound->mutex);
    if (!inbound->dead) send_record_locked(inbound, ReleaseRecord{0, 0, kDoorbell, 0});
  }
  return true;
}

// Takes the wake-up bytes the peer's pool wrote to this end of the release socket, in one read
// (`flags` 0: waiting for one; a pool rings once per wait it sees, and any left over only make
// the next wait return at once). What recv returned: 0 when the peer closed its pool, and
// then no more posts come.
ssize_t take_bells(Inbound* inbound, int flags) {
  char bells[64];
  ssize_t n;
  do {
    n = recv(inbound->release_fd, bells, sizeof bells, flags);
  } while (n < 0 && errno == EINTR);
  if (n == 0) inbound->bells_closed = true;
  return n;
}

// A post of a tensor, made into its descriptor and extension and received as one from the
// socket would be: every check applies.
int receive_post(dlb_channel* channel, const PostEntry& entry, DLManagedTensorVersioned** out,
                 dlb_error* error) {
  Wire wire{};
  std::memcpy(&wire, entry.head, sizeof entry.head);
  int status = check_header(wire, error);
  if (status != DLB_OK) return status;
  if (wire.handle != kHandlePool || wire.ndim < 0 || wire.ndim > kPostMaxRank) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the peer's pool posted a descriptor of memory kind %u and rank %d (a post is "
                "a tensor of the pool, of rank at most %d)",
                static_cast<unsigned>(wire.handle), static_cast<int>(wire.ndim),
                static_cast<int>(kPostMaxRank));
  }
  std::memcpy(wire.shape, entry.shape, sizeof entry.shape);
  std::memcpy(wire.strides, entry.strides, sizeof entry.strides);
  PoolExtension extension{};
  std::memcpy(&extension, entry.extension, sizeof entry.extension);
  Received none;
  return receive_pooled(channel, wire, extension, &none, out, error);
}

}  // namespace

int receive_posted(dlb_channel* channel, const Deadline& deadline,
                   DLManagedTensorVersioned** out, dlb_error* error) {
  Inbound* inbound = channel->inbound;
  if (inbound == nullptr || inbound->ring == nullptr) return kFromSocket;
  PoolRings* ring = inbound->ring;
  // Socket data seen before its mark: the mark follows the data at once, so the wait for it
  // yields the cpu a while; a peer that never marks it is read from the socket all the same.
  int unmarked = 0;
  bool closed = false;  // the peer closed: what it posted before comes first
  for (;;) {
    PostEntry entry;
    if (take_post(inbound, &entry)) {
      if (entry.kind == kPostSocket) return kFromSocket;
      if (entry.kind == kPostTensor) return receive_post(channel, entry, out, error);
      if (entry.kind == kPostOverrun) {
        channel->out_of_step = true;
        return fail(error, DLB_ERR_PROTOCOL,
                    "the peer's pool says it posted more than its ring holds (%u entries)",
                    static_cast<unsigned>(kPostEntries));
      }
      return fail(error, DLB_ERR_PROTOCOL, "the peer's pool posted an entry of kind %u",
                  static_cast<unsigned>(entry.kind));
    }
    if (closed || unmarked > 1000) return kFromSocket;
    // A stream's next post often comes within a wake-up's time: look for it a while first.
    if (unmarked == 0 &&
        spin_until(
            [&] {
              return __atomic_load_n(&ring->post_tail, __ATOMIC_ACQUIRE) != inbound->post_head ||
                     is_shut(channel);
            },
            kRingSpin)) {
      if (is_shut(channel)) return fail_shut(error);
      continue;
    }
    // Asks for a wake-up, then looks once more: a post made after this sees the request.
    __atomic_store_n(&ring->post_waiting, 1u, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&ring->post_tail, __ATOMIC_SEQ_CST) != inbound->post_head) {
      __atomic_store_n(&ring->post_waiting, 0u, __ATOMIC_RELAXED);
      continue;
    }
    if (deadline.unlimited() && !inbound->bells_closed) {
      // The common wait, one system call: the pool rings for every post to a sleeping
      // receiver, the marks of socket sends included, and its end closes with the peer's
      // channel or process; dlb_channel_shutdown shuts this end for reading.
      if (is_shut(channel)) return fail_shut(error);
      const ssize_t got = take_bells(inbound, 0);
      if (is_shut(channel)) return fail_shut(error);
      if (got < 0) return os_fail(error, errno, DLB_ERR_DEVICE, "recv");
      continue;
    }
    pollfd ready[2] = {{channel->fd, POLLIN | POLLRDHUP, 0}, {inbound->release_fd, POLLIN, 0}};
    const int n = poll(ready, inbound->bells_closed ? 1 : 2, deadline.remaining_ms());
    if (is_shut(channel)) return fail_shut(error);
    if (n == 0) {
      return fail(error, DLB_ERR_TIMEOUT, "receiving on the channel: the time limit ran out");
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_fail(error, errno, DLB_ERR_DEVICE, "poll");
    }
    if ((ready[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) take_bells(inbound, MSG_DONTWAIT);
    if ((ready[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      closed = true;
    } else if ((ready[0].revents & POLLIN) != 0) {
      ++unmarked;
      sched_yield();
    }
  }
}

bool is_lent(const DLManagedTensorVersioned* tensor) {
  return release_context(tensor, release_lent) != nullptr;
}

bool lent_memory_is_exposed(dlb_release_fn release, void*) { return release == release_lent; }

bool flush_releases(dlb_channel* channel) {
  Inbound* inbound = channel->inbound;
  if (inbound == nullptr) return false;
  std::lock_guard<std::mutex> lock(inbound->mutex);
  if (inbound->dead || inbound->pending.empty()) return false;
  flush_locked(inbound);
  return !inbound->dead && !inbound->pending.empty();
}

int pending_release_fd(dlb_channel* channel, Inbound* inbound) {
  if (inbound == nullptr) inbound = channel->inbound;
  if (inbound == nullptr) return -1;
  std::lock_guard<std::mutex> lock(inbound->mutex);
  return !inbound->dead && !inbound->pending.empty() ? inbound->release_fd : -1;
}

int wait_releasing(dlb_channel* channel, const Deadline& deadline, dlb_error* error) {
  if (channel->inbound == nullptr || !flush_releases(channel)) return DLB_OK;
  for (;;) {
    const int release_fd = pending_release_fd(channel);
    if (release_fd < 0) return DLB_OK;
    pollfd ready[2] = {{channel->fd, POLLIN, 0}, {release_fd, POLLOUT, 0}};
    const int n = poll(ready, 2, deadline.remaining_ms());
    if (n == 0) return fail(error, DLB_ERR_TIMEOUT, "receiving on the channel: the time limit ran out");
    if (n < 0 && errno != EINTR) return os_fail(error, errno, DLB_ERR_DEVICE, "poll");
    if (n > 0 && ready[0].revents != 0) return DLB_OK;
    flush_releases(channel);
  }
}

void inbound_shutdown(dlb_channel* channel) {
  // After the flag (dlb_channel_shutdown set it): a receive that installs its inbound after this
  // load sees the flag before it waits.
  Inbound* inbound = channel->inbound.load(std::memory_order_seq_cst);
  if (inbound != nullptr) shutdown(inbound->release_fd, SHUT_RD);  // returns may still go out
}

void inbound_close(dlb_channel* channel) {
  Inbound* inbound = channel->inbound;
  if (inbound == nullptr) return;
  channel->inbound = nullptr;
  // The peer's posts would find no reader: its sends fail from now on.
  if (inbound->ring != nullptr) {
    __atomic_store_n(&inbound->ring->receiver_closed, 1u, __ATOMIC_RELEASE);
  }
  // Returns still waiting for room get a last chance (a peer that takes them back now and then
  // makes room within milliseconds), so that a receiver that frees and closes is acknowledged.
  const Deadline deadline(100000000);
  for (int release_fd; (release_fd = pending_release_fd(channel, inbound)) >= 0;) {
    pollfd ready{release_fd, POLLOUT, 0};
    if (poll(&ready, 1, deadline.remaining_ms()) <= 0) break;
    std::lock_guard<std::mutex> lock(inbound->mutex);
    flush_locked(inbound);
  }
  // Tensors over the kept segments stay valid; their frees still give their slots back.
  for (auto& entry : inbound->segments) unhold_segment(entry.second);
  inbound->segments.clear();
  unhold_inbound(inbound);
}

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
