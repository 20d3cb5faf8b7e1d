/* bench_ipc.h - what the parts of bench_ipc share: the plan of a run, the message every row
 * sends, the interface each way of moving a message implements (a "transport": dlbridge fresh,
 * dlbridge pooled, dlbridge re-send, iceoryx, socket copy), and the sender and receiver loops
 * that drive it in the two child processes of a measurement. */
#ifndef DLBRIDGE_BENCH_BENCH_IPC_H_
#define DLBRIDGE_BENCH_BENCH_IPC_H_

#include <stdint.h>

#define BENCH_MAX_SIZES 16

/* How much one size is measured, the same for every row so their medians compare. */
typedef struct bench_size_plan {
  uint64_t bytes;
  int warmups;     /* ping-pongs before the timed ones (page faults of a first use, caches) */
  int pingpongs;   /* timed ping-pongs: one-way latency and round trip samples */
  int bursts;      /* timed bursts, after one untimed (a pool grows to a burst's depth): throughput
                      samples */
  int burst_length;
  int iceoryx_queue; /* the iceoryx subscriber's queue capacity (its pool holds this + 2) */
} bench_size_plan;

typedef struct bench_plan {
  bench_size_plan sizes[BENCH_MAX_SIZES];
  int size_count;
} bench_plan;

/* One pair of processes: one row, one placement, one fill mode, every size of the plan. */
typedef struct bench_cell {
  const bench_plan* plan;
  int every_byte;      /* 1: the sender writes every byte, the receiver reads every byte;
                          0: header + last byte on both sides */
  const char* folder;  /* a private temporary folder (0700) for sockets */
  int id;              /* unique in this run: names the cell's sockets and topics */
  int pair[2];         /* the socket copy's connected pair: [0] the sender's, [1] the receiver's */
} bench_cell;

/* The first bytes of every message. The sender stamps the clock just before it acquires the
 * message's memory, so one-way latency covers allocate/loan + fill + send + receive + read. */
typedef struct bench_header {
  uint64_t cycle_start_ns; /* CLOCK_MONOTONIC before the buffer was acquired */
  uint64_t burst_start_ns; /* the same in every message of a burst; 0 in a ping-pong */
  uint64_t sequence;       /* per size, from 0; checked where each message has its own memory */
  uint32_t bytes;          /* the message's size, low 32 bits */
  uint8_t pattern;         /* the byte the sender wrote everywhere else (or at the end) */
  uint8_t reserved[3];
} bench_header;

/* The smallest message: a header and a last byte after it. */
#define BENCH_MIN_BYTES 64u
/* Every reply (round trip, end of a burst) is this small, through the same transport. */
#define BENCH_REPLY_BYTES 64u
#define BENCH_REPLY_PATTERN 0xA5u

/* One way to move a message from the sender process to the receiver process. Every function
 * either succeeds or ends the process through bench_fail(). */
typedef struct bench_transport {
  const char* key;   /* --rows name */
  const char* label; /* table row */
  /* 1: each message has memory of its own; 0: the same memory is sent again, so the sender
   * may write it while the receiver still reads an earlier message (same pattern throughout) */
  int own_memory;
  void* (*open_sender)(const bench_cell* cell);
  void* (*open_receiver)(const bench_cell* cell);
  /* Called by both sides before each size (may be NULL). */
  void (*begin_size)(void* state, int size_index, uint64_t bytes);
  /* Sender: memory for the next message, then send it (and drop the sender's hold on it). */
  uint8_t* (*acquire)(void* state, uint64_t bytes);
  void (*send)(void* state, uint64_t bytes);
  /* Sender: waits for the receiver's tiny reply and reads it. */
  void (*await_reply)(void* state);
  /* Receiver: waits for the next message; release gives it back (free, release a chunk). */
  const uint8_t* (*receive)(void* state, uint64_t bytes);
  void (*release)(void* state);
  void (*reply)(void* state);
  void (*close_sender)(void* state);
  void (*close_receiver)(void* state);
} bench_transport;

extern const bench_transport bench_dlbridge_fresh;
extern const bench_transport bench_dlbridge_pooled;
extern const bench_transport bench_dlbridge_resend;
extern const bench_transport bench_socket_copy;
#ifdef BENCH_HAVE_ICEORYX
extern const bench_transport bench_iceoryx;
#endif

/* The measurements the children report to the parent, one record per sample. */
enum bench_metric { BENCH_ONE_WAY_US = 0, BENCH_ROUND_TRIP_US = 1, BENCH_MESSAGES_PER_S = 2 };
#define BENCH_METRICS 3

typedef struct bench_record {
  uint32_t size_index;
  uint32_t metric;
  double value;
} bench_record;

/* The loops of the two children: samples go to `result_fd` as bench_record's. */
void bench_run_sender(const bench_transport* transport, const bench_cell* cell, int result_fd);
void bench_run_receiver(const bench_transport* transport, const bench_cell* cell, int result_fd);

/* Ends a child (or the program) with a message naming what failed. */
void bench_fail(const char* format, ...) __attribute__((noreturn, format(printf, 1, 2)));
uint64_t bench_now_ns(void);
/* The process's role, for messages ("sender", "receiver", "bench"). */
extern const char* bench_role;

/* RouDi's config and log, files in the bench's private folder. */
#define BENCH_ROUDI_CONFIG "roudi.toml"
#define BENCH_ROUDI_LOG "roudi.log"

#ifdef BENCH_HAVE_ICEORYX
/* RouDi, iceoryx's daemon, started by the bench with pools for `plan` and stopped by pid. */
typedef struct bench_roudi {
  int pid;
  char config[256];
  char log[256];
} bench_roudi;
/* 0 when RouDi runs and is ready; otherwise 1 with `why` saying why iceoryx is skipped. */
int bench_roudi_start(bench_roudi* roudi, const bench_plan* plan, const char* folder,
                      char* why, int why_size);
void bench_roudi_stop(bench_roudi* roudi);
/* Removes the socket and lock an iceoryx process leaves in /tmp when it is killed (a failed
 * measurement); nothing when it exited cleanly. */
void bench_iceoryx_remove_leftovers(int sender, int pid);
#endif

#endif /* DLBRIDGE_BENCH_BENCH_IPC_H_ */
