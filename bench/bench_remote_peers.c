/* bench_remote_peers.c - the sender's and the receiver's loops, the same for every link, so the
 * dlbridge channel and the socket copy are measured in exactly the same shapes:
 *   ping-pong  the sender sends its message, the receiver receives it and sends it back, the
 *              sender receives that and lets it go: half the round trip is one latency sample;
 *   stream     the sender sends its message `stream_messages` times back to back, the receiver
 *              receives and lets go of each, then answers with a 64-byte message: the bytes
 *              sent over the time from the first send to the answer's arrival. With hints (the
 *              default), every message of a stream but its last says that more follow, as a
 *              program that streams would say it: DLB_SEND_MORE, and MSG_MORE on the socket. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_remote.h"
#include "bench_timing.h"

const char* remote_role = "bench";

void remote_fail(const char* format, ...) {
  char text[768];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof text, format, args);
  va_end(args);
  fprintf(stderr, "bench_remote (%s): %s\n", remote_role, text);
  exit(1);
}

uint64_t remote_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void write_all(int fd, const void* bytes, size_t count) {
  const char* at = bytes;
  while (count > 0) {
    const ssize_t n = write(fd, at, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) remote_fail("writing to the parent: %s", n < 0 ? strerror(errno) : "nothing");
    at += n;
    count -= (size_t)n;
  }
}

static void report(int fd, int size_index, enum remote_metric metric, double value) {
  const remote_record record = {(uint32_t)size_index, (uint32_t)metric, value};
  write_all(fd, &record, sizeof record);
}

void remote_run_receiver(const remote_link* link, const remote_plan* plan, int result_fd) {
  int port = 0;
  void* side = link->listen(plan, &port);
  write_all(result_fd, &port, sizeof port);
  link->accept(side);
  link->prepare(side, REMOTE_ACK_BYTES);
  for (int s = 0; s < plan->size_count; ++s) {
    if (!remote_plan_takes(plan, s)) continue;
    const remote_size_plan* size = &plan->sizes[s];
    for (int i = 0; i < size->pingpong_warmups + size->pingpongs; ++i) {
      link->receive(side, size->bytes);
      link->send_received(side);
    }
    for (int i = 0; i < size->stream_warmups; ++i) {
      link->receive(side, size->bytes);
      link->drop(side);
    }
    link->send_own(side, 0);
    for (int i = 0; i < size->stream_messages; ++i) {
      link->receive(side, size->bytes);
      link->drop(side);
    }
    link->send_own(side, 0);
  }
  link->close(side);
}

void remote_run_sender(const remote_link* link, const remote_plan* plan, int port,
                       int result_fd) {
  void* side = link->connect(plan, port);
  int most = 0;
  for (int s = 0; s < plan->size_count; ++s) {
    if (remote_plan_takes(plan, s) && plan->sizes[s].pingpongs > most) {
      most = plan->sizes[s].pingpongs;
    }
  }
  double* samples = malloc((size_t)(most > 0 ? most : 1) * sizeof(double));
  if (samples == NULL) remote_fail("out of memory for samples");
  for (int s = 0; s < plan->size_count; ++s) {
    if (!remote_plan_takes(plan, s)) continue;
    const remote_size_plan* size = &plan->sizes[s];
    link->prepare(side, size->bytes);
    for (int i = 0; i < size->pingpong_warmups + size->pingpongs; ++i) {
      const uint64_t start = remote_now_ns();
      link->send_own(side, 0);
      link->receive(side, size->bytes);
      link->drop(side);
      const uint64_t end = remote_now_ns();
      if (i >= size->pingpong_warmups) {
        samples[i - size->pingpong_warmups] = (double)(end - start) / 2000.0;
      }
    }
    if (size->pingpongs > 0) {
      report(result_fd, s, REMOTE_LATENCY_US, median(samples, size->pingpongs));
    }
    for (int i = 0; i < size->stream_warmups; ++i) {
      link->send_own(side, plan->stream_hints && i + 1 < size->stream_warmups);
    }
    link->receive(side, REMOTE_ACK_BYTES);
    link->drop(side);
    const uint64_t start = remote_now_ns();
    for (int i = 0; i < size->stream_messages; ++i) {
      link->send_own(side, plan->stream_hints && i + 1 < size->stream_messages);
    }
    link->receive(side, REMOTE_ACK_BYTES);
    link->drop(side);
    const uint64_t end = remote_now_ns();
    if (size->stream_messages > 0) {
      report(result_fd, s, REMOTE_BYTES_PER_S,
             (double)size->bytes * size->stream_messages * 1e9 / (double)(end - start));
    }
  }
  free(samples);
  link->close(side);
}
