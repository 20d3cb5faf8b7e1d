// The pool's own state, shared by its two files: pool.cc (segments, slots, returns,
// dlb_channel_allocate) and pool_post.cc (the sender's end of the post ring).
#ifndef DLBRIDGE_SRC_IPC_POOL_INTERNAL_HPP_
#define DLBRIDGE_SRC_IPC_POOL_INTERNAL_HPP_
#if defined(__linux__)

#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "ipc.hpp"

namespace dlb {
namespace ipc {

// What a pool assumes growing costs before it has grown once: zeroing and mapping fresh pages
// at about 7 GB/s (measured here: 16 MiB in 2.3 ms).
inline constexpr double kAssumedGrowNsPerByte = 0.14;

struct PoolSegment;

struct Slot {
  PoolSegment* segment;
  uint32_t index;
  bool local;     // a tensor of this process is over it
  uint32_t lent;  // sends of it the peer has not given back
  Slot* next_free;
};

struct PoolSegment {
  Pool* pool;
  uint32_t number;  // its index in Pool::segments, the name the peer knows it by
  int fd;
  char* base;
  uint64_t size;
  uint64_t slot_size;
  uint32_t slot_count;
  bool sent;  // its memfd went to the peer (later sends name it only)
  Slot* slots;
};

// The slots of one size: those free, and how long allocations of this size waited for the
// peer's returns since the class last grew (what decides when it grows next).
struct SizeClass {
  uint64_t slot_size;
  Slot* free;
  std::chrono::nanoseconds waited;
};

struct Pool {
  std::mutex mutex;  // guards everything below; a tensor's release may run on any thread
  int holders = 1;   // the channel, and each slot with a local tensor
  int release_fd = -1;  // this end of the release socket: the peer's returns arrive here
  int peer_end = -1;    // the peer's end, until the channel's first pooled send hands it over
  PoolRings* ring = nullptr;  // the rings, mapped for the pool's life
  int ring_fd = -1;            // their memfd, until the first pooled send hands it over
  bool posting = false;        // the peer has the rings: sends go through them
  // This end's indices (the rings' own are the peer's word): returns taken, entries posted.
  uint64_t return_head = 0;
  uint64_t post_tail = 0;
  bool peer_gone = false;
  std::vector<PoolSegment*> segments;
  std::vector<SizeClass> classes;
  uint64_t bytes = 0, live = 0, lent = 0, returned = 0, lost = 0;
  uint64_t unreported_lost = 0;  // reported by the next send
  unsigned sends_since_take_back = 0;
  std::vector<unsigned char> returns;  // take_back's buffer
  size_t partial = 0;                  // bytes of a record cut short at its start
  uint32_t lost_outcome = kReleased;
  int huge_pages = DLB_HUGE_PAGES_NONE;
  // What growing cost, per byte of segment (the last growth, measured).
  double grow_ns_per_byte = kAssumedGrowNsPerByte;
};

// Takes the records on the return ring (under the lock); whether there were any. The ring's
// tail is the peer's word: no more than the ring holds is read, each record copied out first.
bool take_from_ring(Pool* pool);
// Takes the records on the release socket, without waiting (under the lock): a stream, so one
// recv takes every return so far, and a record may be cut between two. A closed socket marks
// the peer gone.
void take_from_socket(Pool* pool);

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
#endif  // DLBRIDGE_SRC_IPC_POOL_INTERNAL_HPP_
