/* bench_ipc_socket.c - the socket copy row: what moving a tensor costs without shared memory.
 * The sender fills a buffer of its own (allocated and touched once) and writes its bytes
 * through a Unix stream socket; the receiver reads them into a buffer it owns (also touched
 * once) and reads that. Replies are 64 bytes back through the same socket. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_ipc.h"

typedef struct socket_side {
  int fd;
  uint8_t* buffer;
  uint64_t capacity;
} socket_side;

static void write_all(int fd, const uint8_t* bytes, uint64_t count) {
  while (count > 0) {
    const ssize_t n = write(fd, bytes, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) bench_fail("socket copy: write: %s", n < 0 ? strerror(errno) : "nothing written");
    bytes += n;
    count -= (uint64_t)n;
  }
}

static void read_all(int fd, uint8_t* bytes, uint64_t count) {
  while (count > 0) {
    const ssize_t n = read(fd, bytes, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) bench_fail("socket copy: read: %s", n < 0 ? strerror(errno) : "the peer closed");
    bytes += n;
    count -= (uint64_t)n;
  }
}

static socket_side* open_side(const bench_cell* cell, int mine, int theirs) {
  socket_side* side = calloc(1, sizeof *side);
  if (side == NULL) bench_fail("out of memory");
  close(cell->pair[theirs]);
  side->fd = cell->pair[mine];
  uint64_t largest = BENCH_REPLY_BYTES;
  for (int s = 0; s < cell->plan->size_count; ++s) {
    if (cell->plan->sizes[s].bytes > largest) largest = cell->plan->sizes[s].bytes;
  }
  side->buffer = malloc(largest);
  if (side->buffer == NULL) bench_fail("socket copy: out of memory for %llu bytes",
                                       (unsigned long long)largest);
  memset(side->buffer, 0, largest); /* a program's own buffer: touched long before use */
  side->capacity = largest;
  return side;
}

static void* open_sender(const bench_cell* cell) { return open_side(cell, 0, 1); }
static void* open_receiver(const bench_cell* cell) { return open_side(cell, 1, 0); }

static uint8_t* acquire(void* state, uint64_t bytes) {
  (void)bytes;
  return ((socket_side*)state)->buffer;
}

static void send_buffer(void* state, uint64_t bytes) {
  socket_side* side = state;
  write_all(side->fd, side->buffer, bytes);
}

static void await_reply(void* state) {
  socket_side* side = state;
  uint8_t answer[BENCH_REPLY_BYTES];
  read_all(side->fd, answer, sizeof answer);
  if (answer[0] != BENCH_REPLY_PATTERN) bench_fail("socket copy: the reply is not the one sent");
}

static const uint8_t* receive(void* state, uint64_t bytes) {
  socket_side* side = state;
  read_all(side->fd, side->buffer, bytes);
  return side->buffer;
}

static void release(void* state) { (void)state; /* the buffer is the receiver's own */ }

static void reply(void* state) {
  socket_side* side = state;
  uint8_t answer[BENCH_REPLY_BYTES];
  memset(answer, 0, sizeof answer);
  answer[0] = BENCH_REPLY_PATTERN;
  write_all(side->fd, answer, sizeof answer);
}

static void close_side(void* state) {
  socket_side* side = state;
  close(side->fd);
  free(side->buffer);
  free(side);
}

const bench_transport bench_socket_copy = {
    "socket", "socket copy", 1, open_sender, open_receiver, NULL, acquire, send_buffer,
    await_reply, receive, release, reply, close_side, close_side};
