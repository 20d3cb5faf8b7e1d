/* bench_ipc_worker.c - the sender's and the receiver's loops, the same for every transport, so
 * the rows differ only in how a message moves. Per size:
 *   ping-pong: the sender stamps the clock, acquires memory, fills it, sends, and waits for the
 *     receiver's tiny reply; the receiver receives, reads, takes the one-way sample (its clock
 *     minus the sender's stamp: both are CLOCK_MONOTONIC, one clock for the whole machine),
 *     releases the message and replies. The sender's round trip ends when the reply is read.
 *   bursts: the sender sends burst_length messages back to back (each acquired and filled),
 *     the receiver reads them all and answers once; the rate is burst_length over the time from
 *     the sender's stamp at the burst's start to the receiver's read of the last message. The
 *     first burst is not timed: memory a transport keeps (a pool) grows to a burst's depth
 *     there, as the ping-pongs' warm-ups prepare a single message. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_ipc.h"

const char* bench_role = "bench";

void bench_fail(const char* format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof text, format, args);
  va_end(args);
  fprintf(stderr, "bench_ipc (%s): %s\n", bench_role, text);
  exit(1);
}

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Where each message has memory of its own, its pattern changes with it, so a stale or mixed
 * up message fails the check; re-sent memory keeps one pattern. */
static uint8_t pattern_for(const bench_transport* transport, uint64_t sequence) {
  return transport->own_memory ? (uint8_t)(sequence % 251u + 1u) : (uint8_t)0x3Cu;
}

static void fill(uint8_t* memory, uint64_t bytes, int every_byte, const bench_header* header) {
  if (every_byte) {
    memset(memory + sizeof *header, header->pattern, bytes - sizeof *header);
  } else {
    memory[bytes - 1] = header->pattern;
  }
  memcpy(memory, header, sizeof *header);
}

/* Reads what the sender wrote (every byte, or the last one) and checks it; returns the header. */
static bench_header read_message(const bench_transport* transport, const uint8_t* memory,
                                 uint64_t bytes, int every_byte, uint64_t sequence) {
  bench_header header;
  memcpy(&header, memory, sizeof header);
  if (header.bytes != (uint32_t)bytes) {
    bench_fail("%s: a message of %llu bytes says it has %u", transport->label,
               (unsigned long long)bytes, header.bytes);
  }
  if (transport->own_memory && header.sequence != sequence) {
    bench_fail("%s: message %llu of %llu bytes arrived as number %llu", transport->label,
               (unsigned long long)sequence, (unsigned long long)bytes,
               (unsigned long long)header.sequence);
  }
  if (every_byte) {
    /* An OR of differences the compiler vectorises: every byte is read at memory speed. */
    uint64_t expected;
    memset(&expected, header.pattern, sizeof expected);
    uint64_t differences = 0;
    uint64_t at = sizeof header;
    for (; at + 8 <= bytes; at += 8) {
      uint64_t word;
      memcpy(&word, memory + at, sizeof word);
      differences |= word ^ expected;
    }
    for (; at < bytes; ++at) differences |= (uint64_t)(memory[at] ^ header.pattern);
    if (differences != 0) {
      bench_fail("%s: message %llu of %llu bytes does not hold the bytes its sender wrote",
                 transport->label, (unsigned long long)sequence, (unsigned long long)bytes);
    }
  } else if (memory[bytes - 1] != header.pattern) {
    bench_fail("%s: message %llu of %llu bytes does not end with the byte its sender wrote",
               transport->label, (unsigned long long)sequence, (unsigned long long)bytes);
  }
  return header;
}

/* Samples are kept until a size is done, then written in one go: no pipe traffic while timing. */
typedef struct record_buffer {
  bench_record* records;
  size_t count;
  size_t capacity;
} record_buffer;

static void add_record(record_buffer* buffer, int size_index, int metric, double value) {
  if (buffer->count == buffer->capacity) {
    size_t capacity = buffer->capacity ? buffer->capacity * 2 : 256;
    bench_record* grown = realloc(buffer->records, capacity * sizeof *grown);
    if (grown == NULL) bench_fail("out of memory for samples");
    buffer->records = grown;
    buffer->capacity = capacity;
  }
  bench_record record = {(uint32_t)size_index, (uint32_t)metric, value};
  buffer->records[buffer->count++] = record;
}

static void flush_records(record_buffer* buffer, int result_fd) {
  const char* at = (const char*)buffer->records;
  size_t left = buffer->count * sizeof(bench_record);
  while (left > 0) {
    ssize_t written = write(result_fd, at, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) bench_fail("cannot report results to the parent: %s", strerror(errno));
    at += written;
    left -= (size_t)written;
  }
  buffer->count = 0;
}

void bench_run_sender(const bench_transport* transport, const bench_cell* cell, int result_fd) {
  bench_role = "sender";
  void* state = transport->open_sender(cell);
  record_buffer samples = {NULL, 0, 0};
  for (int s = 0; s < cell->plan->size_count; ++s) {
    const bench_size_plan* size = &cell->plan->sizes[s];
    const uint64_t bytes = size->bytes;
    if (transport->begin_size != NULL) transport->begin_size(state, s, bytes);
    uint64_t sequence = 0;
    for (int i = 0; i < size->warmups + size->pingpongs; ++i, ++sequence) {
      bench_header header = {0, 0, sequence, (uint32_t)bytes, pattern_for(transport, sequence),
                             {0, 0, 0}};
      header.cycle_start_ns = bench_now_ns();
      uint8_t* memory = transport->acquire(state, bytes);
      fill(memory, bytes, cell->every_byte, &header);
      transport->send(state, bytes);
      transport->await_reply(state);
      const uint64_t end = bench_now_ns();
      if (i >= size->warmups) {
        add_record(&samples, s, BENCH_ROUND_TRIP_US, (double)(end - header.cycle_start_ns) / 1e3);
      }
    }
    for (int b = 0; b < 1 + size->bursts; ++b) {
      const uint64_t burst_start = bench_now_ns();
      for (int m = 0; m < size->burst_length; ++m, ++sequence) {
        bench_header header = {0, burst_start, sequence, (uint32_t)bytes,
                               pattern_for(transport, sequence), {0, 0, 0}};
        header.cycle_start_ns = m == 0 ? burst_start : bench_now_ns();
        uint8_t* memory = transport->acquire(state, bytes);
        fill(memory, bytes, cell->every_byte, &header);
        transport->send(state, bytes);
      }
      transport->await_reply(state); /* the burst is over: the next one starts afresh */
    }
    flush_records(&samples, result_fd);
  }
  transport->close_sender(state);
  free(samples.records);
}

void bench_run_receiver(const bench_transport* transport, const bench_cell* cell,
                        int result_fd) {
  bench_role = "receiver";
  void* state = transport->open_receiver(cell);
  record_buffer samples = {NULL, 0, 0};
  for (int s = 0; s < cell->plan->size_count; ++s) {
    const bench_size_plan* size = &cell->plan->sizes[s];
    const uint64_t bytes = size->bytes;
    if (transport->begin_size != NULL) transport->begin_size(state, s, bytes);
    uint64_t sequence = 0;
    for (int i = 0; i < size->warmups + size->pingpongs; ++i, ++sequence) {
      const uint8_t* memory = transport->receive(state, bytes);
      const bench_header header = read_message(transport, memory, bytes, cell->every_byte,
                                               sequence);
      const uint64_t read_at = bench_now_ns();
      transport->release(state);
      transport->reply(state);
      if (i >= size->warmups) {
        add_record(&samples, s, BENCH_ONE_WAY_US,
                   (double)(read_at - header.cycle_start_ns) / 1e3);
      }
    }
    for (int b = 0; b < 1 + size->bursts; ++b) { /* the first is untimed */
      uint64_t burst_start = 0;
      uint64_t last_read = 0;
      for (int m = 0; m < size->burst_length; ++m, ++sequence) {
        const uint8_t* memory = transport->receive(state, bytes);
        const bench_header header = read_message(transport, memory, bytes, cell->every_byte,
                                                 sequence);
        last_read = bench_now_ns();
        burst_start = header.burst_start_ns;
        transport->release(state);
      }
      transport->reply(state);
      if (burst_start == 0 || last_read <= burst_start) {
        bench_fail("%s: a burst of %llu-byte messages carried no start time", transport->label,
                   (unsigned long long)bytes);
      }
      if (b > 0) {
        add_record(&samples, s, BENCH_MESSAGES_PER_S,
                   (double)size->burst_length / ((double)(last_read - burst_start) / 1e9));
      }
    }
    flush_records(&samples, result_fd);
  }
  transport->close_receiver(state);
  free(samples.records);
}
