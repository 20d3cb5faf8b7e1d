// The sender's end of a pool's post ring (wire.hpp, PoolRings): a pooled send whose segment
// the peer has is written there instead of on the socket, and a send that goes on the socket
// leaves a mark there, so that the receiver takes both in the order they were sent.
#if defined(__linux__)
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <mutex>

#include "pool_internal.hpp"

namespace dlb {
namespace ipc {

namespace {

// Writes `entry` on the post ring when it has room (under the lock), and rings the receiver's
// end of the release socket when it sleeps; false when the ring is full. The receiver's
// published head is its word: a head that says more room than the ring holds counts as full.
bool write_post(Pool* pool, const PostEntry& entry) {
  PoolRings* ring = pool->ring;
  const uint64_t head = __atomic_load_n(&ring->post_head, __ATOMIC_ACQUIRE);
  if (pool->post_tail - head >= kPostEntries) return false;
  std::memcpy(&ring->posts[pool->post_tail % kPostEntries], &entry, sizeof entry);
  ++pool->post_tail;
  __atomic_store_n(&ring->post_tail, pool->post_tail, __ATOMIC_SEQ_CST);
  if (__atomic_exchange_n(&ring->post_waiting, 0u, __ATOMIC_SEQ_CST) != 0) {
    const char bell = 1;  // a full socket already holds a wake-up: nothing more is needed
    while (send(pool->release_fd, &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
  }
  return true;
}

// A post to a peer that closed its channel or went away, in the words of a send on a socket
// whose peer did.
int fail_peer_closed(dlb_error* error) {
  return fail(error, DLB_ERR_PEER_CLOSED,
              "sending on the channel failed: the peer closed the channel");
}

// Posts `entry`, waiting within the channel's time limit for room on the ring. The wait sleeps
// on the release socket, where the receiver rings (a kDoorbell record) when it takes an entry
// while `space_waiting` is set; what else arrives there meanwhile (returns) is taken back.
int post(dlb_channel* channel, Pool* pool, const PostEntry& entry, const Deadline& deadline,
         dlb_error* error) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(pool->mutex);
      if (pool->peer_gone || __atomic_load_n(&pool->ring->receiver_closed, __ATOMIC_ACQUIRE)) {
        return fail_peer_closed(error);
      }
      if (write_post(pool, entry)) return DLB_OK;
      __atomic_store_n(&pool->ring->space_waiting, 1u, __ATOMIC_SEQ_CST);
      if (write_post(pool, entry)) {
        __atomic_store_n(&pool->ring->space_waiting, 0u, __ATOMIC_RELAXED);
        return DLB_OK;
      }
    }
    if (is_shut(channel)) return fail_shut(error);
    // The channel's socket tells of a peer that went away without a word (killed).
    pollfd ready[2] = {{pool->release_fd, POLLIN, 0}, {channel->fd, POLLRDHUP, 0}};
    const int n = poll(ready, 2, deadline.remaining_ms());
    if (is_shut(channel)) return fail_shut(error);
    if (n == 0) {
      return fail(error, DLB_ERR_TIMEOUT, "sending on the channel: the time limit ran out");
    }
    if (n < 0 && errno != EINTR) return os_fail(error, errno, DLB_ERR_DEVICE, "poll");
    if ((ready[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) return fail_peer_closed(error);
    std::lock_guard<std::mutex> lock(pool->mutex);
    take_from_ring(pool);
    take_from_socket(pool);  // the doorbell, and a peer that went away
  }
}

// A tensor's post: the descriptor's Wire up to its shape, its extents and strides, and the
// pool extension's fields.
PostEntry tensor_post(const Wire& wire, const PoolExtension& extension) {
  PostEntry entry{};
  entry.kind = kPostTensor;
  std::memcpy(entry.head, &wire, sizeof entry.head);
  std::memcpy(entry.shape, wire.shape, sizeof entry.shape);
  std::memcpy(entry.strides, wire.strides, sizeof entry.strides);
  std::memcpy(entry.extension, &extension, sizeof entry.extension);
  return entry;
}

// The channel's pool once the peer has its rings, else null.
Pool* posting_pool(dlb_channel* channel) {
  Pool* pool = channel->pool.load(std::memory_order_acquire);
  if (pool == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(pool->mutex);
  return pool->posting ? pool : nullptr;
}

}  // namespace

int pool_post(dlb_channel* channel, const Wire& wire, const PoolExtension& extension,
              const PooledSend& send, dlb_error* error) {
  Pool* pool = posting_pool(channel);
  if (pool == nullptr || send.nfds != 0 || wire.ndim > kPostMaxRank) return kNotPosted;
  return post(channel, pool, tensor_post(wire, extension), Deadline(channel->timeout_ns), error);
}

int pool_mark_socket(dlb_channel* channel, dlb_error* error) {
  Pool* pool = posting_pool(channel);
  if (pool == nullptr) return DLB_OK;
  PostEntry mark{};
  mark.kind = kPostSocket;
  const int status = post(channel, pool, mark, Deadline(channel->timeout_ns), error);
  // The tensor went on the socket already: without its mark the receiver would take the
  // tensors after it out of order, so the channel has lost its place.
  if (status != DLB_OK) channel->out_of_step = true;
  return status;
}

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
