// A channel's pool (dlb_channel_allocate): memory this end lends to its peer and takes back.
// Segments are sealed memfds kept mapped (and faulted in) for the channel's life; a small tensor
// takes a slot of its size class in a 2 MiB segment, a large one a segment of its own. A slot
// is free again once no tensor of this process is over it and the peer has given back every
// send of it, on the release socket the channel's first pooled send handed to the peer.
// The sender's end of the post ring is pool_post.cc; both share pool_internal.hpp.
#if defined(__linux__)
#include <errno.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "pool_internal.hpp"

namespace dlb {
namespace ipc {

namespace {

constexpr uint64_t kSmallestSlot = DLB_CPU_ALIGNMENT;  // every first element stays aligned
constexpr uint64_t kLargestSlabSlot = uint64_t{64} << 10;
constexpr uint64_t kHugePage = uint64_t{2} << 20;
constexpr uint64_t kSlabSize = kHugePage;
#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14
#endif

void release_slot(void* ctx);

// The size class of a tensor needing `bytes`: powers of two from kSmallestSlot up to
// kLargestSlabSlot; above, multiples of 1/8 of the next lower power of two (at most 12.5% more
// than needed), and of the huge page size from there up.
uint64_t slot_size_for(uint64_t bytes) {
  if (bytes <= kSmallestSlot) return kSmallestSlot;
  uint64_t power = uint64_t{1} << (64 - __builtin_clzll(bytes - 1));  // >= bytes
  if (power <= kLargestSlabSlot) return power;
  uint64_t step = std::max<uint64_t>(power / 16, 4096);
  if (bytes >= kHugePage) step = std::max(step, kHugePage);
  return (bytes + step - 1) / step * step;
}

uint64_t segment_size_for(uint64_t slot_size) {
  return slot_size <= kLargestSlabSlot ? kSlabSize : slot_size;
}

SizeClass& size_class(Pool* pool, uint64_t slot_size) {
  for (SizeClass& entry : pool->classes) {
    if (entry.slot_size == slot_size) return entry;
  }
  pool->classes.push_back(SizeClass{slot_size, nullptr, std::chrono::nanoseconds{0}});
  return pool->classes.back();
}

Slot* pop_free(Pool* pool, uint64_t slot_size) {
  for (SizeClass& entry : pool->classes) {
    if (entry.slot_size != slot_size || entry.free == nullptr) continue;
    Slot* slot = entry.free;
    entry.free = slot->next_free;
    return slot;
  }
  return nullptr;
}

void push_free(Pool* pool, Slot* slot) {
  SizeClass& entry = size_class(pool, slot->segment->slot_size);
  slot->next_free = entry.free;
  entry.free = slot;
}

void destroy(Pool* pool) {
  for (PoolSegment* segment : pool->segments) {
    munmap(segment->base, segment->size);
    close(segment->fd);
    delete[] segment->slots;
    delete segment;
  }
  if (pool->release_fd >= 0) close(pool->release_fd);
  if (pool->peer_end >= 0) close(pool->peer_end);
  if (pool->ring != nullptr) munmap(pool->ring, sizeof(PoolRings));
  if (pool->ring_fd >= 0) close(pool->ring_fd);
  delete pool;
}

// One holder fewer (under the pool's lock, which it gives up): the last one frees the pool.
void drop_holder(Pool* pool, std::unique_lock<std::mutex>& lock) {
  const bool last = --pool->holders == 0;
  lock.unlock();
  if (last) destroy(pool);
}

// One return (under the lock). A record naming no slot it was lent is ignored (a doorbell names
// none): a peer that lies only loses its own slots.
void take_record(Pool* pool, const ReleaseRecord& record) {
  if (record.segment >= pool->segments.size()) return;
  PoolSegment* segment = pool->segments[record.segment];
  if (record.slot >= segment->slot_count) return;
  Slot* slot = &segment->slots[record.slot];
  if (slot->lent == 0 || record.outcome == kDoorbell) return;
  --slot->lent;
  --pool->lent;
  if (record.outcome == kReleased) {
    ++pool->returned;
  } else {
    ++pool->lost;
    ++pool->unreported_lost;
    pool->lost_outcome = record.outcome;
    // The peer never kept the segment: its memfd goes along again with the next send.
    if (record.outcome == kLostNoFds) segment->sent = false;
  }
  if (slot->lent == 0 && !slot->local) push_free(pool, slot);
}

}  // namespace

bool take_from_ring(Pool* pool) {
  PoolRings* ring = pool->ring;
  if (ring == nullptr) return false;
  const uint64_t tail = __atomic_load_n(&ring->return_tail, __ATOMIC_ACQUIRE);
  const uint64_t count = std::min<uint64_t>(tail - pool->return_head, kReturnRingRecords);
  for (uint64_t i = 0; i < count; ++i) {
    ReleaseRecord record;
    std::memcpy(&record, &ring->returns[(pool->return_head + i) % kReturnRingRecords],
                sizeof record);
    take_record(pool, record);
  }
  pool->return_head += count;
  __atomic_store_n(&ring->return_head, pool->return_head, __ATOMIC_RELEASE);
  return count > 0;
}

void take_from_socket(Pool* pool) {
  if (pool->release_fd < 0 || pool->peer_gone) return;
  constexpr size_t kBuffer = kMaxReleasesPerDatagram * sizeof(ReleaseRecord);
  pool->returns.resize(kBuffer);
  unsigned char* buffer = pool->returns.data();
  for (;;) {
    const ssize_t n = recv(pool->release_fd, buffer + pool->partial, kBuffer - pool->partial,
                           MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      pool->peer_gone = true;  // what it holds stays lent for good
      return;
    }
    if (n < 0) return;
    const size_t bytes = pool->partial + static_cast<size_t>(n);
    const size_t whole = bytes / sizeof(ReleaseRecord);
    for (size_t i = 0; i < whole; ++i) {
      ReleaseRecord record;
      std::memcpy(&record, buffer + i * sizeof record, sizeof record);
      take_record(pool, record);
    }
    pool->partial = bytes - whole * sizeof(ReleaseRecord);
    std::memmove(buffer, buffer + whole * sizeof(ReleaseRecord), pool->partial);
    if (bytes < kBuffer) return;  // everything there was
  }
}

namespace {

// Takes back, without waiting, what the peer gave back: the records on the return ring, else
// those on the release socket. The socket carries what a full ring had no room for and
// doorbells; a ring that gave something leaves it for the next time, which saves a system call.
void take_back(Pool* pool) {
  if (pool->release_fd < 0 || pool->peer_gone) return;
  if (take_from_ring(pool)) return;
  take_from_socket(pool);
}

// Whether the system lets shared memory use transparent huge pages when asked (madvise).
bool shmem_transparent_huge_pages() {
  FILE* file = std::fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");
  if (file == nullptr) return false;
  char text[128] = {};
  const size_t n = std::fread(text, 1, sizeof text - 1, file);
  std::fclose(file);
  text[n] = '\0';
  return std::strstr(text, "[advise]") != nullptr || std::strstr(text, "[always]") != nullptr ||
         std::strstr(text, "[within_size]") != nullptr || std::strstr(text, "[force]") != nullptr;
}

// Adds a segment for slots of `slot_size`, mapped and faulted in (MAP_POPULATE: the sender's
// writes then take no page faults), and puts its slots on the free list.
int grow(Pool* pool, uint64_t slot_size, dlb_error* error) {
  const auto started = std::chrono::steady_clock::now();
  const uint64_t size = segment_size_for(slot_size);
  OwnedFd fd;
  void* base = MAP_FAILED;
  bool hugetlb = false;
  if (size % kHugePage == 0 && create_sealed_memfd(size, true, &fd, nullptr) == DLB_OK) {
    // Reserved hugetlbfs pages, if the system has enough of them; else small pages below.
    base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd.get(), 0);
    hugetlb = base != MAP_FAILED;
  }
  if (!hugetlb) {
    const int status = create_sealed_memfd(size, false, &fd, error);
    if (status != DLB_OK) return status;
    base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (base == MAP_FAILED) {
      if (errno == ENOMEM) {
        return fail(error, DLB_ERR_OUT_OF_MEMORY, "cannot map %llu bytes of shareable memory",
                    static_cast<unsigned long long>(size));
      }
      return os_fail(error, errno, DLB_ERR_DEVICE, "mmap of the shareable memory");
    }
    if (size % kHugePage == 0 && madvise(base, size, MADV_HUGEPAGE) == 0 &&
        shmem_transparent_huge_pages() && pool->huge_pages == DLB_HUGE_PAGES_NONE) {
      pool->huge_pages = DLB_HUGE_PAGES_TRANSPARENT;
    }
    // Fault every page in now, once, rather than on the sender's first write to each.
    madvise(base, size, MADV_POPULATE_WRITE);
  } else {
    pool->huge_pages = DLB_HUGE_PAGES_HUGETLB;
  }
  auto* segment = new (std::nothrow) PoolSegment{};
  const uint32_t count = static_cast<uint32_t>(size / slot_size);
  Slot* slots = segment == nullptr ? nullptr : new (std::nothrow) Slot[count];
  if (slots == nullptr) {
    delete segment;
    munmap(base, size);
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory growing a channel's pool");
  }
  *segment = PoolSegment{pool, static_cast<uint32_t>(pool->segments.size()), fd.release(),
                         static_cast<char*>(base), size, slot_size, count, false, slots};
  pool->segments.push_back(segment);
  pool->bytes += size;
  for (uint32_t i = count; i-- > 0;) {
    slots[i] = Slot{segment, i, false, 0, nullptr};
    push_free(pool, &slots[i]);
  }
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - started;
  pool->grow_ns_per_byte = took.count() / static_cast<double>(size);
  return DLB_OK;
}

// The channel's pool, made with its release socket on first use.
int pool_of(dlb_channel* channel, Pool** out, dlb_error* error) {
  Pool* pool = channel->pool.load(std::memory_order_acquire);
  if (pool == nullptr) {
    int ends[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
      return os_fail(error, errno, DLB_ERR_DEVICE, "socketpair for the pool's release socket");
    }
    pool = new (std::nothrow) Pool;
    if (pool == nullptr) {
      close(ends[0]);
      close(ends[1]);
      return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel's pool");
    }
    pool->release_fd = ends[0];
    pool->peer_end = ends[1];
    // The return ring. Without one (no memory for it), returns come on the socket alone.
    OwnedFd ring_fd;
    if (create_sealed_memfd(sizeof(PoolRings), false, &ring_fd, nullptr, "dlbridge-ring") ==
        DLB_OK) {
      void* ring = mmap(nullptr, sizeof(PoolRings), PROT_READ | PROT_WRITE, MAP_SHARED,
                        ring_fd.get(), 0);
      if (ring != MAP_FAILED) {
        pool->ring = static_cast<PoolRings*>(ring);
        pool->ring_fd = ring_fd.release();
      }
    }
    channel->pool.store(pool, std::memory_order_seq_cst);
    // A shutdown that ran before the store found no pool to wake: this call sees its flag.
    if (is_shut(channel)) shutdown(pool->release_fd, SHUT_RDWR);
  }
  *out = pool;
  return DLB_OK;
}

// Whether the ring holds returns not yet taken (asks for the doorbell first: a receiver that
// gives a slot back after this looks at `waiting` and rings).
bool ring_has_returns(Pool* pool) {
  if (pool->ring == nullptr) return false;
  __atomic_store_n(&pool->ring->return_waiting, 1u, __ATOMIC_SEQ_CST);
  std::lock_guard<std::mutex> lock(pool->mutex);
  if (__atomic_load_n(&pool->ring->return_tail, __ATOMIC_SEQ_CST) == pool->return_head) {
    return false;
  }
  __atomic_store_n(&pool->ring->return_waiting, 0u, __ATOMIC_RELAXED);  // not sleeping after all
  return true;
}

// Waits for the peer to give something back, for at most `budget` (none: kNoBudget), and says
// in `*waited` (when not null) how long it did: true when something may have come back (or the
// channel was shut, which the caller's next check says), false when the budget or the channel's
// time limit ran out first. Called and returns with `lock` held on the pool's mutex, which it
// lets go of while it waits. Watches the return ring first (spin_until), then sleeps on the
// release socket with the doorbell asked for.
constexpr std::chrono::nanoseconds kNoBudget = std::chrono::nanoseconds::max();

bool await_return(std::unique_lock<std::mutex>& lock, dlb_channel* channel, Pool* pool,
                  std::chrono::nanoseconds budget, const Deadline& deadline,
                  std::chrono::nanoseconds* waited) {
  using Clock = std::chrono::steady_clock;
  const uint64_t seen = pool->return_head;  // returns taken so far
  lock.unlock();
  const auto started = Clock::now();
  const auto account = [&](bool came) {
    if (waited != nullptr) {
      *waited = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started);
    }
    lock.lock();
    return came;
  };
  if (pool->ring != nullptr) {
    const PoolRings* ring = pool->ring;
    const bool came = spin_until(
        [&] {
          return __atomic_load_n(&ring->return_tail, __ATOMIC_ACQUIRE) != seen ||
                 is_shut(channel);
        },
        std::min(kRingSpin, budget));
    if (came) return account(true);
  }
  for (;;) {
    if (is_shut(channel) || ring_has_returns(pool)) return account(true);
    const int limit_ms = deadline.remaining_ms();  // -1: none
    if (limit_ms == 0) return account(false);
    std::chrono::nanoseconds left = budget;
    if (budget != kNoBudget) {
      left -= Clock::now() - started;
      if (left.count() <= 0) return account(false);
    }
    if (limit_ms > 0) {
      left = std::min<std::chrono::nanoseconds>(left, std::chrono::milliseconds(limit_ms));
    }
    timespec wait{static_cast<time_t>(left.count() / 1000000000),
                  static_cast<long>(left.count() % 1000000000)};
    pollfd ready{pool->release_fd, POLLIN, 0};
    const int n = ppoll(&ready, 1, left == kNoBudget ? nullptr : &wait, nullptr);
    // A failed poll (only EINTR or ENOMEM on this descriptor) is looked at again by the caller.
    if (n != 0) return account(true);
  }
}

// Whether the peer holds a send of some slot of `slot_size` (under the lock): only then can a
// return free one of that size.
bool lends(const Pool* pool, uint64_t slot_size) {
  for (const PoolSegment* segment : pool->segments) {
    if (segment->slot_size != slot_size) continue;
    for (uint32_t i = 0; i < segment->slot_count; ++i) {
      if (segment->slots[i].lent > 0) return true;
    }
  }
  return false;
}

void release_slot(void* ctx) {
  auto* slot = static_cast<Slot*>(ctx);
  Pool* pool = slot->segment->pool;
  std::unique_lock<std::mutex> lock(pool->mutex);
  slot->local = false;
  --pool->live;
  if (slot->lent == 0) push_free(pool, slot);
  drop_holder(pool, lock);
}

}  // namespace

Slot* pool_slot_of(const DLManagedTensorVersioned* tensor) {
  return static_cast<Slot*>(release_context(tensor, release_slot));
}

bool pool_memory_is_exposed(dlb_release_fn release, void* ctx) {
  if (release != release_slot) return false;
  // While the peer holds a send of the slot it may write it; once given back, no tensor of the
  // peer reaches it.
  const Slot* slot = static_cast<Slot*>(ctx);
  std::lock_guard<std::mutex> lock(slot->segment->pool->mutex);
  return slot->lent > 0;
}

bool pool_belongs(const dlb_channel* channel, const Slot* slot) {
  return slot->segment->pool == channel->pool.load(std::memory_order_acquire);
}

int pool_prepare_send(const DLManagedTensorVersioned& tensor, Slot* slot, Wire* wire,
                      PoolExtension* extension, PooledSend* send, dlb_error* error) {
  PoolSegment* segment = slot->segment;
  Pool* pool = segment->pool;
  std::lock_guard<std::mutex> lock(pool->mutex);
  // Returns are taken back now and then while sending too, not only when a size class runs out:
  // the peer's side of the release socket must keep room for its frees.
  if (++pool->sends_since_take_back == 16) {
    pool->sends_since_take_back = 0;
    take_back(pool);
  }
  if (pool->unreported_lost > 0) {
    const uint64_t lost = pool->unreported_lost;
    pool->unreported_lost = 0;
    return fail(error, DLB_ERR_LIMIT,
                "the peer lost %llu tensor%s sent on this channel: it is at its limit of %s; "
                "nothing was sent now",
                static_cast<unsigned long long>(lost), lost == 1 ? "" : "s",
                pool->lost_outcome == kLostNoFds
                    ? "open file descriptors (RLIMIT_NOFILE)"
                    : "mappings (vm.max_map_count) or address space");
  }
  encode(tensor, kHandlePool, segment->base, 0, segment->size, wire);
  std::memcpy(extension->magic, kPoolMagic, sizeof kPoolMagic);
  extension->segment = segment->number;
  extension->slot = slot->index;
  send->slot = slot;
  if (!segment->sent) {
    extension->attached |= kPoolSegmentFd;
    send->fds[send->nfds++] = segment->fd;
  }
  if (pool->peer_end >= 0) {
    extension->attached |= kPoolReleaseFd;
    send->fds[send->nfds++] = pool->peer_end;
    if (pool->ring_fd >= 0) {
      extension->attached |= kPoolRingFd;
      send->fds[send->nfds++] = pool->ring_fd;
    }
  }
  ++slot->lent;
  ++pool->lent;
  return DLB_OK;
}

void pool_finish_send(const PooledSend& send, bool sent) {
  PoolSegment* segment = send.slot->segment;
  Pool* pool = segment->pool;
  std::lock_guard<std::mutex> lock(pool->mutex);
  if (sent) {
    segment->sent = true;
    bool handed_over = false;
    for (int i = 0; i < send.nfds; ++i) handed_over |= send.fds[i] == pool->peer_end;
    if (handed_over) {
      close(pool->peer_end);  // the peer holds it now, and the rings' memfd
      pool->peer_end = -1;
      if (pool->ring_fd >= 0) {
        close(pool->ring_fd);
        pool->ring_fd = -1;
        pool->posting = true;
      }
    }
    return;
  }
  --send.slot->lent;
  --pool->lent;
  if (send.slot->lent == 0 && !send.slot->local) push_free(pool, send.slot);
}

void pool_shutdown(dlb_channel* channel) {
  Pool* pool = channel->pool.load(std::memory_order_seq_cst);
  if (pool != nullptr) shutdown(pool->release_fd, SHUT_RDWR);
}

void pool_close(dlb_channel* channel) {
  Pool* pool = channel->pool.exchange(nullptr);
  if (pool == nullptr) return;
  std::unique_lock<std::mutex> lock(pool->mutex);
  // Returns can no longer arrive: what the peer holds stays lent, and its slots are never reused.
  if (pool->release_fd >= 0) close(pool->release_fd);
  pool->release_fd = -1;
  drop_holder(pool, lock);
}

}  // namespace ipc
}  // namespace dlb

extern "C" {

DLB_API dlb_status dlb_channel_allocate(dlb_channel* channel, DLDevice device, DLDataType dtype,
                                        int32_t ndim, const int64_t* shape,
                                        const int64_t* strides, uint64_t flags,
                                        DLManagedTensorVersioned** out, dlb_error* error) {
  using namespace dlb::ipc;
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  int status = check_connected(channel, "allocate", error);
  if (status != DLB_OK) return status;
  if (device.device_type != kDLCPU) {
    dlb::DeviceTypeText name(device.device_type);
    return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                     "a channel's pool holds cpu memory, not %s memory: allocate it with "
                     "dlb_tensor_allocate_shareable",
                     name.text);
  }
  // A remote channel's tensors travel as bytes: an ordinary tensor serves, no pool is needed.
  if (channel->remote != nullptr) {
    return dlb_tensor_allocate(device, dtype, ndim, shape, strides, flags, out, error);
  }
  uint64_t byte_offset = 0, nbytes = 0;
  status = dlb::allocation_layout(device, dtype, ndim, shape, strides, flags, &byte_offset,
                                  &nbytes, error);
  if (status != DLB_OK) return status;
  // As dlb_tensor_allocate_shareable: the first element aligned, what negative strides reach
  // before it in the lead.
  const uint64_t lead = (byte_offset + DLB_CPU_ALIGNMENT - 1) & ~uint64_t{DLB_CPU_ALIGNMENT - 1};
  const uint64_t needed = lead + (nbytes - byte_offset);
  const uint64_t slot_size = slot_size_for(needed);
  if (segment_size_for(slot_size) > channel->pool_limit) {
    return dlb::fail(error, DLB_ERR_LIMIT,
                     "a tensor of %llu bytes needs a pool segment of %llu bytes, more than the "
                     "channel's pool limit of %llu bytes (dlb_channel_set_pool_limit)",
                     static_cast<unsigned long long>(nbytes),
                     static_cast<unsigned long long>(segment_size_for(slot_size)),
                     static_cast<unsigned long long>(channel->pool_limit));
  }
  Pool* pool = nullptr;
  status = pool_of(channel, &pool, error);
  if (status != DLB_OK) return status;
  const Deadline deadline(channel->timeout_ns);
  std::unique_lock<std::mutex> lock(pool->mutex);
  Slot* slot = pop_free(pool, slot_size);
  while (slot == nullptr) {
    take_back(pool);
    slot = pop_free(pool, slot_size);
    if (slot != nullptr) break;
    const uint64_t segment_size = segment_size_for(slot_size);
    const bool class_lent = lends(pool, slot_size);
    if (pool->bytes + segment_size <= channel->pool_limit) {
      // Growing costs a segment's page faults, once; waiting costs the time until the peer
      // frees a tensor of this size, which a receiver that keeps up does within microseconds,
      // but again whenever the stream runs ahead of the pool. As in the ski-rental problem,
      // the size waits for returns until its waits since it last grew add up to what growing
      // costs, then grows: a stream's pool stops at about the depth that keeps its waits rare,
      // and a receiver that keeps what it gets costs each growth at most twice.
      const std::chrono::nanoseconds cost(static_cast<int64_t>(
          pool->grow_ns_per_byte * static_cast<double>(segment_size)));
      SizeClass& size = size_class(pool, slot_size);
      if (class_lent && !pool->peer_gone && size.waited < cost) {
        std::chrono::nanoseconds waited{0};
        const bool came = await_return(lock, channel, pool, cost - size.waited, deadline,
                                       &waited);
        size_class(pool, slot_size).waited += waited;  // `size` may have moved meanwhile
        if (is_shut(channel)) return fail_shut(error);
        if (came) continue;
      }
      size_class(pool, slot_size).waited = std::chrono::nanoseconds{0};
      status = grow(pool, slot_size, error);
      if (status != DLB_OK) return status;
      continue;
    }
    if (pool->peer_gone) {
      return dlb::fail(error, DLB_ERR_PEER_CLOSED,
                       "the channel's pool is full (%llu of its limit of %llu bytes) and the "
                       "peer is gone: what it held will not come back",
                       static_cast<unsigned long long>(pool->bytes),
                       static_cast<unsigned long long>(channel->pool_limit));
    }
    if (!class_lent) {
      // Nothing of this size can come back: waiting would never end.
      return dlb::fail(error, DLB_ERR_LIMIT,
                       "the channel's pool holds %llu of its limit of %llu bytes in segments "
                       "for other sizes, and a tensor of this size needs %llu more: raise the "
                       "limit (dlb_channel_set_pool_limit)",
                       static_cast<unsigned long long>(pool->bytes),
                       static_cast<unsigned long long>(channel->pool_limit),
                       static_cast<unsigned long long>(segment_size));
    }
    const bool came = await_return(lock, channel, pool, kNoBudget, deadline, nullptr);
    if (is_shut(channel)) return fail_shut(error);
    if (!came) {
      return dlb::fail(error, DLB_ERR_TIMEOUT,
                       "the channel's pool holds %llu of its limit of %llu bytes and a tensor "
                       "needs %llu more: the time limit ran out waiting for the peer to free "
                       "what it received",
                       static_cast<unsigned long long>(pool->bytes),
                       static_cast<unsigned long long>(channel->pool_limit),
                       static_cast<unsigned long long>(segment_size));
    }
  }
  slot->local = true;
  ++pool->live;
  ++pool->holders;
  PoolSegment* segment = slot->segment;
  lock.unlock();
  DLTensor desc{};
  desc.data = segment->base + static_cast<uint64_t>(slot->index) * segment->slot_size;
  desc.device = device;
  desc.ndim = ndim;
  desc.dtype = dtype;
  desc.shape = const_cast<int64_t*>(shape);
  desc.strides = const_cast<int64_t*>(strides);
  desc.byte_offset = lead;
  status = dlb_tensor_wrap_buffer(&desc, segment->slot_size, flags, release_slot, slot, out,
                                  error);
  if (status != DLB_OK) release_slot(slot);
  return status;
}

DLB_API dlb_status dlb_channel_set_pool_limit(dlb_channel* channel, uint64_t bytes,
                                              dlb_error* error) {
  const int status = dlb::ipc::check_connected(channel, "have a pool", error);
  if (status != DLB_OK) return status;
  if (bytes == 0) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "a pool limit of 0 bytes leaves no room");
  }
  channel->pool_limit = bytes;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_pool_stats(dlb_channel* channel, dlb_pool_stats* out,
                                          dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  std::memset(out, 0, sizeof *out);
  const int status = dlb::ipc::check_connected(channel, "have a pool", error);
  if (status != DLB_OK) return status;
  out->limit = channel->pool_limit;
  dlb::ipc::Pool* pool = channel->pool.load(std::memory_order_acquire);
  if (pool == nullptr) return DLB_OK;
  std::lock_guard<std::mutex> lock(pool->mutex);
  dlb::ipc::take_back(pool);
  out->segments = pool->segments.size();
  out->bytes = pool->bytes;
  out->live = pool->live;
  out->lent = pool->lent;
  out->returned = pool->returned;
  out->lost = pool->lost;
  out->huge_pages = pool->huge_pages;
  return DLB_OK;
}

}  // extern "C"

#endif  // __linux__
