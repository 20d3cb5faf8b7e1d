/* bench_remote.h - what the parts of bench_remote share: the plan of a run, the interface of the
 * two ways the bench moves a message between its own two processes (a "link": the dlbridge
 * remote channel and a plain TCP socket copy), the loops that drive a link in those processes,
 * and the ucx_perftest pair that runs as the third column. */
#ifndef DLBRIDGE_BENCH_BENCH_REMOTE_H_
#define DLBRIDGE_BENCH_BENCH_REMOTE_H_

#include <stdint.h>
#include <sys/types.h>

#define REMOTE_MAX_SIZES 16
/* The receiver's answer at the end of a stream: as small as a tensor gets here. */
#define REMOTE_ACK_BYTES 64u

/* How much one size is measured; every column gets the same counts, so their numbers compare. */
typedef struct remote_size_plan {
  uint64_t bytes;
  int pingpong_warmups; /* untimed ping-pongs first (first-touch faults, UCX's lanes) */
  int pingpongs;        /* timed ping-pongs: the latency is their median half round trip */
  int stream_warmups;   /* untimed messages of a first stream */
  int stream_messages;  /* back-to-back messages of the timed stream */
} remote_size_plan;

typedef struct remote_plan {
  remote_size_plan sizes[REMOTE_MAX_SIZES];
  int size_count;
  int only_size;                     /* -1: every size; else the one size this measurement takes */
  uint64_t largest;                  /* of the sizes this measurement takes */
  int ucx_scheme;                    /* 1: "ucx://" addresses (UCX picks); 0: "tcp://" */
  int stream_hints;                  /* 1: each stream message but the last says more follow */
  unsigned char key[32];             /* the dlbridge channel's key, the same in both processes */
} remote_plan;

/* Whether a measurement with `plan` takes size `s`. */
static inline int remote_plan_takes(const remote_plan* plan, int s) {
  return plan->only_size < 0 || plan->only_size == s;
}

/* What the sender reports per size; the parent takes the median over the runs. */
enum remote_metric { REMOTE_LATENCY_US = 0, REMOTE_BYTES_PER_S = 1 };
#define REMOTE_METRICS 2

typedef struct remote_record {
  uint32_t size_index;
  uint32_t metric;
  double value;
} remote_record;

/* One way to move messages between the sender and the receiver process. Every function succeeds
 * or ends the process through remote_fail(). A side holds at most one message of its own (what
 * it sends) and one received message at a time. */
typedef struct remote_link {
  const char* name; /* "dlbridge", "socket copy": for messages */
  /* Receiver: listens on 127.0.0.1 at a port the system picks, which *port says. */
  void* (*listen)(const remote_plan* plan, int* port);
  /* Receiver: takes the sender's connection (and drops the listener). */
  void (*accept)(void* side);
  /* Sender: connects to the receiver at 127.0.0.1:port. */
  void* (*connect)(const remote_plan* plan, int port);
  /* A message of its own of `bytes` bytes, every byte filled; replaces the previous one. */
  void (*prepare)(void* side, uint64_t bytes);
  /* `more`: more messages follow at once (a stream's, but its last, with hints on): dlbridge
   * sends with DLB_SEND_MORE, the socket with MSG_MORE. */
  void (*send_own)(void* side, int more);
  /* Waits for the next message, checks it has `bytes` bytes and the sender's pattern at both
   * ends, and holds it. */
  void (*receive)(void* side, uint64_t bytes);
  /* Sends the held message back as it came, then lets it go. */
  void (*send_received)(void* side);
  /* Lets the held message go (a dlbridge tensor is freed). */
  void (*drop)(void* side);
  void (*close)(void* side);
} remote_link;

extern const remote_link remote_dlbridge;
extern const remote_link remote_socket;

/* Every message of `bytes` bytes is filled with this byte, so a receiver sees the right size
 * arrived (and not zeros or an earlier size's bytes). */
static inline uint8_t remote_pattern(uint64_t bytes) {
  return (uint8_t)((0x5Bu + 37u * (unsigned)__builtin_ctzll(bytes) + (unsigned)(bytes & 0xFFu)) |
                   1u);
}

/* The two processes of a measurement. The receiver writes its port (one int) to `result_fd`
 * once it listens; the sender writes remote_record's. */
void remote_run_receiver(const remote_link* link, const remote_plan* plan, int result_fd);
void remote_run_sender(const remote_link* link, const remote_plan* plan, int port,
                       int result_fd);

/* Ends the process with a message naming its role and what failed. */
void remote_fail(const char* format, ...) __attribute__((noreturn, format(printf, 1, 2)));
extern const char* remote_role;
uint64_t remote_now_ns(void);

/* The two processes of the measurement in progress ([0] sender or client, [1] receiver or
 * server; 0 when none), kept by the parent so that it ends them when it fails or is stopped. */
extern pid_t remote_children[2];

/* ucx_perftest, run as a server and a client process at one size. */
typedef struct remote_perftest {
  const char* program; /* its path */
  int cpus[2];         /* [0] the client's cpu, [1] the server's; -1: not pinned */
  int peer_errors;     /* 1: endpoints with peer failure handling (-e), as dlbridge's have */
} remote_perftest;

/* Runs `test` (ucp_am_lat, ucp_am_bw, tag_bw) with `size` bytes, `iterations` timed after
 * `warmups`. Latency tests give the median one-way latency in microseconds (the client's
 * 50th percentile), bandwidth tests the overall bytes per second. Returns 0 with *value, or 1 with
 * `why` saying what failed (and the pair's output on stderr). */
int remote_perftest_run(const remote_perftest* perftest, const char* test, uint64_t size,
                        int iterations, int warmups, double* value, char* why, int why_size);

#endif /* DLBRIDGE_BENCH_BENCH_REMOTE_H_ */
