/* bench_remote.c - a tensor between two processes over the network path, three ways in one run,
 * over the same transport, at the same sizes (64 B to 1 GiB), with the same iteration counts:
 *   dlbridge      a remote channel (tcp://127.0.0.1, or ucx:// with --scheme ucx) between a
 *                 sender and a receiver process, set up as a user would (a key, a receive limit
 *                 that admits the largest size);
 *   ucx_perftest  UCX's own benchmark (ucx-utils) as a server and a client: ucp_am_lat for
 *                 latency, ucp_am_bw and tag_bw for bandwidth (the better of the two is the
 *                 baseline: in UCX 1.13 ucp_am_bw falls well below tag_bw over TCP);
 *   socket copy   a plain TCP connection over 127.0.0.1 (a length, then the bytes, read into a
 *                 buffer the receiver allocated once).
 * Latency is half a ping-pong's round trip (the receiver sends back what it received), as
 * ucx_perftest's latency tests measure it: the median of a run's ping-pongs. Bandwidth is bytes
 * per second over a stream of back-to-back messages that the receiver receives and frees, up to
 * the receiver's answer; each message of a stream but its last says more follow
 * (DLB_SEND_MORE, MSG_MORE on the socket; --no-hints: none says it). A stream is long enough
 * (up to 200000 messages) for the steady state: the kernel gathers a socket's small messages
 * only once its stream has run a while. Each run measures every column; the table shows the
 * median of the runs (5 by default) and judges dlbridge against the goals of issue #34 §7:
 *   bandwidth >= 0.90 of ucx_perftest's from 16 MiB;
 *   latency within 2 us or 1.5x (whichever allows more) of ucx_perftest's ucp_am_lat at 64 B to
 *   4 KiB;
 *   never slower than the socket copy, in latency or bandwidth, at any size.
 * A miss is reported, not an error: the exit status is 1 only when a measurement failed, 77
 * (skipped, with the reason) when this machine cannot make remote channels (no UCX or
 * libcrypto: dlb_remote_available says which).
 *
 * The parent never loads UCX: every measurement runs in child processes (the availability check
 * too), so each starts UCX fresh, as a program does.
 *
 *   bench_remote                the full run (a few minutes on two cores)
 *   bench_remote --quick        64 B and 4 KiB, one run, a few iterations (the smoke test)
 *   bench_remote --help         the other options */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_remote.h"
#include "bench_timing.h"
#include "dlbridge/dlbridge.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)
#define GiB (1024ull * 1024ull * 1024ull)
#define MAX_RUNS 101

/* What is measured: each series holds one value per size and run. */
enum series {
  DLB_LATENCY,
  DLB_BANDWIDTH,
  AM_LATENCY,   /* ucx_perftest ucp_am_lat */
  AM_BANDWIDTH, /* ucx_perftest ucp_am_bw */
  TAG_BANDWIDTH, /* ucx_perftest tag_bw */
  SOCKET_LATENCY,
  SOCKET_BANDWIDTH,
  SERIES
};

enum column { DLBRIDGE, PERFTEST, SOCKET, COLUMNS };
static const char* const column_keys[COLUMNS] = {"dlbridge", "perftest", "socket"};

typedef struct settings {
  int quick;
  int runs;
  int verbose;
  int pin;
  int perftest_peer_errors;
  remote_plan plan;
  int columns[COLUMNS];
  const char* perftest_path; /* NULL: look on PATH */
} settings;

static double values[SERIES][REMOTE_MAX_SIZES][MAX_RUNS];
static int failures;

/* What the parent ends when it fails or is stopped: the measurement's processes. */
pid_t remote_children[2];
static pid_t parent_pid;

static void end_children(void) {
  if (getpid() != parent_pid) return; /* a child leaving through exit() */
  for (int c = 0; c < 2; ++c) {
    if (remote_children[c] > 0) {
      kill(remote_children[c], SIGKILL);
      waitpid(remote_children[c], NULL, 0);
      remote_children[c] = 0;
    }
  }
}

static void on_signal(int sig) {
  end_children();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* ------------------------------------------------------------------------------------------ */
/* Options and the plan                                                                        */
/* ------------------------------------------------------------------------------------------ */

static int clamp_int(uint64_t value, int low, int high) {
  return value < (uint64_t)low ? low : value > (uint64_t)high ? high : (int)value;
}

/* Every column gets these counts. Ping-pongs move about 64 MiB each way per size and streams
 * about 4 GiB (at most 200000 messages), so a large size costs seconds, and a small one still has
 * thousands of samples. (With 1 GiB, a 16 MiB stream of 64 lasted a quarter of a second, and
 * its ratio to ucx_perftest's moved from 0.7 to 1.8 from one run of the bench to the next.) */
static remote_size_plan plan_size(uint64_t bytes, int quick) {
  remote_size_plan size;
  size.bytes = bytes;
  if (quick) {
    size.pingpong_warmups = 2;
    size.pingpongs = 20;
    size.stream_warmups = 2;
    size.stream_messages = 50;
  } else {
    size.pingpongs = clamp_int(64 * MiB / bytes, 5, 2000);
    size.pingpong_warmups = clamp_int((uint64_t)size.pingpongs / 10, 1, 200);
    size.stream_messages = clamp_int(4 * GiB / bytes, 4, 200000);
    size.stream_warmups = clamp_int((uint64_t)size.stream_messages / 10, 1, 200);
  }
  return size;
}

static void usage(FILE* out) {
  fprintf(out,
          "usage: bench_remote [--quick] [--runs N] [--sizes LIST] [--scheme tcp|ucx]\n"
          "                    [--columns LIST] [--perftest PATH] [--perftest-peer-errors]\n"
          "                    [--no-pin] [--no-hints] [--verbose]\n"
          "  --quick           64 B and 4 KiB, one run, a few iterations (the smoke test)\n"
          "  --runs N          runs per measurement, the table shows their median (default 5)\n"
          "  --sizes 64,4K,1M  message sizes, 64 B to 1 GiB (suffixes K, M, G: binary);\n"
          "                    default 64,4K,16K,64K,256K,1M,16M,256M,1G (1G when the memory is\n"
          "                    there)\n"
          "  --scheme tcp      dlbridge at tcp://127.0.0.1 and UCX_TLS=tcp UCX_NET_DEVICES=lo for\n"
          "                    every UCX process (the default: the network path on one machine)\n"
          "  --scheme ucx      dlbridge at ucx://127.0.0.1 and UCX's own choice of transports\n"
          "                    (shared memory here) for every UCX process\n"
          "  --columns LIST    of dlbridge, perftest, socket (default: all)\n"
          "  --perftest PATH   the ucx_perftest to run (default: the one on PATH)\n"
          "  --perftest-peer-errors\n"
          "                    ucx_perftest's endpoints handle peer failures (its -e), as\n"
          "                    dlbridge's do; UCX then leaves out transports that cannot\n"
          "                    (UCX 1.13: its shared memory, which matters with --scheme ucx)\n"
          "                    and, over TCP, its RMA lane, which dlbridge's endpoints\n"
          "                    (connected through UCX's listener) keep: there the default\n"
          "                    is the like-for-like comparison\n"
          "  --no-pin          leave the processes unpinned (default: sender and client on the\n"
          "                    first cpu this process may use, receiver and server on the second)\n"
          "  --no-hints        no stream message says more follow (default: all but the\n"
          "                    last: DLB_SEND_MORE, and MSG_MORE on the socket)\n"
          "  --verbose         also print every run's numbers\n");
}

static int parse_size(const char* text, uint64_t* out) {
  char* end = NULL;
  errno = 0;
  const unsigned long long number = strtoull(text, &end, 10);
  if (errno != 0 || end == text) return 1;
  uint64_t scale = 1;
  if (*end == 'K' || *end == 'k') scale = KiB;
  if (*end == 'M' || *end == 'm') scale = MiB;
  if (*end == 'G' || *end == 'g') scale = GiB;
  if (scale != 1) ++end;
  if (*end == 'B') ++end;
  else if (end[0] == 'i' && end[1] == 'B') end += 2;
  if (*end != '\0' || number == 0 || number > GiB / scale) return 1;
  *out = (uint64_t)number * scale;
  return *out < REMOTE_ACK_BYTES;
}

static int parse_settings(int argc, char** argv, settings* out) {
  memset(out, 0, sizeof *out);
  out->runs = -1;
  out->pin = 1;
  out->plan.stream_hints = 1;
  for (int c = 0; c < COLUMNS; ++c) out->columns[c] = 1;
  const char* sizes = NULL;
  for (int i = 1; i < argc; ++i) {
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--quick") == 0) {
      out->quick = 1;
    } else if (strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      exit(0);
    } else if (strcmp(argv[i], "--verbose") == 0) {
      out->verbose = 1;
    } else if (strcmp(argv[i], "--perftest-peer-errors") == 0) {
      out->perftest_peer_errors = 1;
    } else if (strcmp(argv[i], "--no-pin") == 0) {
      out->pin = 0;
    } else if (strcmp(argv[i], "--no-hints") == 0) {
      out->plan.stream_hints = 0;
    } else if (value != NULL && strcmp(argv[i], "--runs") == 0) {
      char* end = NULL;
      const long runs = strtol(value, &end, 10);
      if (*end != '\0' || runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "bench_remote: --runs: '%s' is not 1 to %d\n", value, MAX_RUNS);
        return 1;
      }
      out->runs = (int)runs;
      ++i;
    } else if (value != NULL && strcmp(argv[i], "--sizes") == 0) {
      sizes = value;
      ++i;
    } else if (value != NULL && strcmp(argv[i], "--scheme") == 0) {
      if (strcmp(value, "tcp") != 0 && strcmp(value, "ucx") != 0) {
        fprintf(stderr, "bench_remote: --scheme: '%s' is not tcp or ucx\n", value);
        return 1;
      }
      out->plan.ucx_scheme = strcmp(value, "ucx") == 0;
      ++i;
    } else if (value != NULL && strcmp(argv[i], "--columns") == 0) {
      for (int c = 0; c < COLUMNS; ++c) out->columns[c] = 0;
      char copy[256];
      snprintf(copy, sizeof copy, "%s", value);
      for (char* item = strtok(copy, ","); item != NULL; item = strtok(NULL, ",")) {
        int found = 0;
        for (int c = 0; c < COLUMNS; ++c) {
          if (strcmp(item, column_keys[c]) == 0) out->columns[c] = found = 1;
        }
        if (!found) {
          fprintf(stderr, "bench_remote: --columns: unknown '%s'\n", item);
          return 1;
        }
      }
      ++i;
    } else if (value != NULL && strcmp(argv[i], "--perftest") == 0) {
      out->perftest_path = value;
      ++i;
    } else {
      fprintf(stderr, "bench_remote: unknown or incomplete option '%s'\n", argv[i]);
      usage(stderr);
      return 1;
    }
  }
  if (out->runs < 0) out->runs = out->quick ? 1 : 5;
  if (sizes == NULL) sizes = out->quick ? "64,4K" : "64,4K,16K,64K,256K,1M,16M,256M,1G";
  remote_plan* plan = &out->plan;
  char copy[256];
  snprintf(copy, sizeof copy, "%s", sizes);
  for (char* item = strtok(copy, ","); item != NULL; item = strtok(NULL, ",")) {
    uint64_t bytes = 0;
    if (parse_size(item, &bytes) != 0) {
      fprintf(stderr, "bench_remote: --sizes: '%s' is not a size from 64 B to 1 GiB\n", item);
      return 1;
    }
    if (plan->size_count == REMOTE_MAX_SIZES) {
      fprintf(stderr, "bench_remote: --sizes: at most %d sizes\n", REMOTE_MAX_SIZES);
      return 1;
    }
    plan->sizes[plan->size_count++] = plan_size(bytes, out->quick);
  }
  /* Ascending, without repeats. */
  for (int a = 1; a < plan->size_count; ++a) {
    for (int b = a; b > 0 && plan->sizes[b].bytes < plan->sizes[b - 1].bytes; --b) {
      const remote_size_plan swap = plan->sizes[b];
      plan->sizes[b] = plan->sizes[b - 1];
      plan->sizes[b - 1] = swap;
    }
  }
  int kept = 0;
  for (int s = 0; s < plan->size_count; ++s) {
    if (kept == 0 || plan->sizes[s].bytes != plan->sizes[kept - 1].bytes) {
      plan->sizes[kept++] = plan->sizes[s];
    }
  }
  plan->size_count = kept;
  return 0;
}

static void size_label(uint64_t bytes, char* text, size_t size) {
  if (bytes % GiB == 0) snprintf(text, size, "%llu GiB", (unsigned long long)(bytes / GiB));
  else if (bytes % MiB == 0) snprintf(text, size, "%llu MiB", (unsigned long long)(bytes / MiB));
  else if (bytes % KiB == 0) snprintf(text, size, "%llu KiB", (unsigned long long)(bytes / KiB));
  else snprintf(text, size, "%llu B", (unsigned long long)bytes);
}

/* MemAvailable from /proc/meminfo in bytes; 0 when it cannot be read. */
static uint64_t available_memory(void) {
  FILE* info = fopen("/proc/meminfo", "r");
  if (info == NULL) return 0;
  char line[256];
  unsigned long long kib = 0;
  while (fgets(line, sizeof line, info) != NULL) {
    if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
  }
  fclose(info);
  return (uint64_t)kib * KiB;
}

/* Drops the sizes this machine lacks the memory for, saying so. The most any column holds at
 * once is about four messages (ucx_perftest's latency test: a send and a receive buffer in each
 * process; dlbridge's ping-pong: the sender's tensor and the echo, the receiver's tensor),
 * plus a margin for everything else running. */
static void drop_sizes_beyond_memory(remote_plan* plan) {
  const uint64_t available = available_memory();
  if (available == 0) return;
  int kept = 0;
  for (int s = 0; s < plan->size_count; ++s) {
    const uint64_t needed = 4 * plan->sizes[s].bytes + GiB;
    if (plan->sizes[s].bytes >= 64 * MiB && needed > available) {
      char label[32];
      size_label(plan->sizes[s].bytes, label, sizeof label);
      printf("  %s: skipped, it needs about %.1f GiB of memory and MemAvailable is %.1f GiB\n",
             label, (double)needed / (double)GiB, (double)available / (double)GiB);
      continue;
    }
    plan->sizes[kept++] = plan->sizes[s];
  }
  plan->size_count = kept;
}

static void finish_plan(remote_plan* plan) {
  plan->only_size = -1;
  plan->largest = 0;
  for (int s = 0; s < plan->size_count; ++s) {
    if (plan->sizes[s].bytes > plan->largest) plan->largest = plan->sizes[s].bytes;
  }
}

/* The first two cpus this process may run on; -1 where there are fewer. */
static void pick_cpus(int cpus[2]) {
  cpu_set_t allowed;
  cpus[0] = cpus[1] = -1;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  int found = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus[found++] = cpu;
  }
  if (found < 2) cpus[0] = cpus[1] = -1;
}

static void pin_to(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    remote_fail("cannot pin to cpu %d: %s", cpu, strerror(errno));
  }
}

/* The ucx_perftest on PATH, or NULL. */
static const char* find_on_path(const char* name, char* found, size_t size) {
  const char* path = getenv("PATH");
  if (path == NULL) path = "/usr/local/bin:/usr/bin:/bin";
  char copy[4096];
  snprintf(copy, sizeof copy, "%s", path);
  for (char* folder = strtok(copy, ":"); folder != NULL; folder = strtok(NULL, ":")) {
    snprintf(found, size, "%s/%s", folder, name);
    if (access(found, X_OK) == 0) return found;
  }
  return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Children                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static void describe_exit(int status, char* text, size_t size) {
  if (WIFEXITED(status)) snprintf(text, size, "exit status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) snprintf(text, size, "signal %d", WTERMSIG(status));
  else snprintf(text, size, "status %d", status);
}

/* Whether this process could make remote channels, asked in a child so that the parent never
 * loads UCX: DLB_OK, or the status with the library's message in `why`. */
static dlb_status remote_channels_available(char* why, size_t why_size) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) remote_fail("pipe: %s", strerror(errno));
  fflush(NULL);
  const pid_t pid = fork();
  if (pid < 0) remote_fail("fork: %s", strerror(errno));
  if (pid == 0) {
    close(pipe_fds[0]);
    dlb_error error;
    memset(&error, 0, sizeof error);
    const dlb_status status = dlb_remote_available(&error);
    const ssize_t written = write(pipe_fds[1], &status, sizeof status);
    const ssize_t message = write(pipe_fds[1], error.message, sizeof error.message);
    _exit(written == (ssize_t)sizeof status && message == (ssize_t)sizeof error.message ? 0 : 1);
  }
  close(pipe_fds[1]);
  dlb_status status = DLB_ERR_UNSUPPORTED;
  dlb_error error;
  memset(&error, 0, sizeof error);
  snprintf(error.message, sizeof error.message, "the availability check failed");
  if (read(pipe_fds[0], &status, sizeof status) != (ssize_t)sizeof status ||
      read(pipe_fds[0], error.message, sizeof error.message) != (ssize_t)sizeof error.message) {
    status = DLB_ERR_UNSUPPORTED;
  }
  close(pipe_fds[0]);
  int exit_status = 0;
  waitpid(pid, &exit_status, 0);
  error.message[sizeof error.message - 1] = '\0';
  snprintf(why, why_size, "%s", error.message);
  return status;
}

static pid_t start_peer(const remote_link* link, const remote_plan* plan, int sender, int port,
                        int cpu, int result_fd, int other_fd) {
  fflush(NULL);
  const pid_t pid = fork();
  if (pid < 0) remote_fail("fork: %s", strerror(errno));
  if (pid != 0) return pid;
  if (other_fd >= 0) close(other_fd);
  remote_role = sender ? "sender" : "receiver";
  pin_to(cpu);
  if (sender) remote_run_sender(link, plan, port, result_fd);
  else remote_run_receiver(link, plan, result_fd);
  close(result_fd);
  exit(0); /* exit, not _exit: libraries' destructors run, as in a real program */
}

static int read_within(int fd, void* bytes, size_t count, uint64_t deadline) {
  char* at = bytes;
  while (count > 0) {
    const uint64_t now = remote_now_ns();
    if (now > deadline) return 1;
    struct pollfd p = {fd, POLLIN, 0};
    const int ms = (int)((deadline - now) / 1000000u) + 1;
    if (poll(&p, 1, ms) < 0 && errno != EINTR) return 1;
    if (p.revents == 0) continue;
    const ssize_t n = read(fd, at, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 1;
    at += n;
    count -= (size_t)n;
  }
  return 0;
}

/* One run of a link over every size: a receiver and a sender process. The sender's records go
 * to values[latency or bandwidth series][size][run]. 0, or 1 with `why`. */
static int measure_pair(const remote_link* link, const remote_plan* plan, const int cpus[2],
                        int latency_series, int bandwidth_series, int run, char* why,
                        size_t why_size) {
  uint64_t moved = 0;
  for (int s = 0; s < plan->size_count; ++s) {
    if (!remote_plan_takes(plan, s)) continue;
    const remote_size_plan* size = &plan->sizes[s];
    moved += size->bytes * (uint64_t)(2 * (size->pingpong_warmups + size->pingpongs) +
                                      size->stream_warmups + size->stream_messages);
  }
  /* 10 MB/s or better even on a loaded machine; slower than that, the pair has stopped. */
  const uint64_t deadline = remote_now_ns() + 60000000000ull + moved * 100;
  int from_receiver[2], from_sender[2];
  if (pipe2(from_receiver, O_CLOEXEC) != 0 || pipe2(from_sender, O_CLOEXEC) != 0) {
    remote_fail("pipe: %s", strerror(errno));
  }
  remote_children[1] =
      start_peer(link, plan, 0, 0, cpus[1], from_receiver[1], from_receiver[0]);
  close(from_receiver[1]);
  int port = 0;
  int failed = 0;
  if (read_within(from_receiver[0], &port, sizeof port, deadline) != 0) {
    snprintf(why, why_size, "the receiver did not listen");
    failed = 1;
  }
  if (!failed) {
    remote_children[0] = start_peer(link, plan, 1, port, cpus[0], from_sender[1], from_sender[0]);
  }
  close(from_sender[1]);
  while (!failed) {
    remote_record record;
    const uint64_t now = remote_now_ns();
    if (now > deadline) {
      snprintf(why, why_size, "no result in time");
      failed = 1;
      break;
    }
    struct pollfd p = {from_sender[0], POLLIN, 0};
    if (poll(&p, 1, 1000) < 0 && errno != EINTR) remote_fail("poll: %s", strerror(errno));
    if (p.revents == 0) continue;
    const ssize_t n = read(from_sender[0], &record, sizeof record);
    if (n < 0 && errno == EINTR) continue;
    /* The end: the sender is done, or failed (its exit status says). */
    if (n <= 0) break;
    if ((size_t)n < sizeof record && read_within(from_sender[0], (char*)&record + n,
                                                 sizeof record - (size_t)n, deadline) != 0) {
      break;
    }
    if (record.size_index < (uint32_t)plan->size_count && record.metric < REMOTE_METRICS) {
      const int series = record.metric == REMOTE_LATENCY_US ? latency_series : bandwidth_series;
      values[series][record.size_index][run] = record.value;
    }
  }
  close(from_sender[0]);
  close(from_receiver[0]);
  static const char* const roles[2] = {"sender", "receiver"};
  for (int c = 0; c < 2; ++c) {
    if (remote_children[c] <= 0) continue;
    if (failed) kill(remote_children[c], SIGKILL);
    int status = 0;
    waitpid(remote_children[c], &status, 0);
    remote_children[c] = 0;
    if (!failed && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
      char how[64];
      describe_exit(status, how, sizeof how);
      snprintf(why, why_size, "the %s failed (%s)", roles[c], how);
      failed = 1;
    }
  }
  return failed;
}

/* ------------------------------------------------------------------------------------------ */
/* Tables and goals                                                                            */
/* ------------------------------------------------------------------------------------------ */

typedef struct tally {
  int pass;
  int miss;
} tally;

static double median_of_runs(int series, int size, int runs) {
  double kept[MAX_RUNS];
  int count = 0;
  for (int r = 0; r < runs; ++r) {
    if (!isnan(values[series][size][r])) kept[count++] = values[series][size][r];
  }
  return count > 0 ? median(kept, count) : NAN;
}

/* The median over the runs of each run's own ratio of series `a` to `b` at `size` (a run
 * measures a size's columns one after the other); with `b_other` >= 0, `b` is the better
 * (larger) of the two series in each run. */
static double median_ratio(int a, int b, int b_other, int size, int runs) {
  double kept[MAX_RUNS];
  int count = 0;
  for (int r = 0; r < runs; ++r) {
    double base = values[b][size][r];
    if (b_other >= 0 && !isnan(values[b_other][size][r]) &&
        (isnan(base) || values[b_other][size][r] > base)) {
      base = values[b_other][size][r];
    }
    if (!isnan(values[a][size][r]) && !isnan(base) && base > 0) {
      kept[count++] = values[a][size][r] / base;
    }
  }
  return count > 0 ? median(kept, count) : NAN;
}

/* Three significant digits or more. */
static void format_number(double value, char* text, size_t size) {
  if (isnan(value)) snprintf(text, size, "-");
  else if (value >= 1000) snprintf(text, size, "%.0f", value);
  else if (value >= 10) snprintf(text, size, "%.1f", value);
  else if (value >= 0.01) snprintf(text, size, "%.2f", value);
  else snprintf(text, size, "%.2g", value);
}

static void verdict(int pass, tally* count, char* text, size_t size) {
  const size_t used = strlen(text);
  snprintf(text + used, size - used, " %s", pass ? "PASS" : "MISS");
  if (pass) ++count->pass;
  else ++count->miss;
}

enum { LATENCY_VS_PERFTEST, LATENCY_VS_SOCKET, BANDWIDTH_VS_PERFTEST, BANDWIDTH_VS_SOCKET, GOALS };
static const char* const goal_names[GOALS] = {
    "latency vs ucx_perftest", "latency vs socket", "bandwidth vs ucx_perftest",
    "bandwidth vs socket"};

static void print_rule(int columns, const int* widths) {
  printf("|");
  for (int c = 0; c < columns; ++c) {
    printf("%.*s%s|", widths[c] + 1, "----------------------------------------------------------",
           c == 0 ? "-" : ":");
  }
  printf("\n");
}

static void print_latency_table(const settings* cfg, tally goals[GOALS]) {
  const remote_plan* plan = &cfg->plan;
  static const int widths[] = {8, 10, 12, 10, 28, 16};
  printf("\nlatency, one way (half a ping-pong's round trip), us: median of %d run%s\n\n",
         cfg->runs, cfg->runs == 1 ? "" : "s");
  printf("| %-*s | %*s | %*s | %*s | %*s | %*s |\n", widths[0], "size", widths[1], "dlbridge",
         widths[2], "ucp_am_lat", widths[3], "socket", widths[4],
         "dlbridge vs ucp_am_lat (1)", widths[5], "dlbridge/socket");
  print_rule(6, widths);
  for (int s = 0; s < plan->size_count; ++s) {
    const uint64_t bytes = plan->sizes[s].bytes;
    const double dlb = median_of_runs(DLB_LATENCY, s, cfg->runs);
    const double am = median_of_runs(AM_LATENCY, s, cfg->runs);
    const double sock = median_of_runs(SOCKET_LATENCY, s, cfg->runs);
    char label[32], a[32], b[32], c[32], versus_am[64] = "n/a", versus_socket[64] = "n/a";
    size_label(bytes, label, sizeof label);
    format_number(dlb, a, sizeof a);
    format_number(am, b, sizeof b);
    format_number(sock, c, sizeof c);
    if (!isnan(dlb) && !isnan(am) && am > 0) {
      char ratio[24];
      format_number(dlb / am, ratio, sizeof ratio);
      snprintf(versus_am, sizeof versus_am, "%sx %+.1f us", ratio, dlb - am);
      if (bytes <= 4 * KiB) {
        const double allowed = am + 2.0 > 1.5 * am ? am + 2.0 : 1.5 * am;
        verdict(dlb <= allowed, &goals[LATENCY_VS_PERFTEST], versus_am, sizeof versus_am);
      }
    }
    const double to_socket = median_ratio(DLB_LATENCY, SOCKET_LATENCY, -1, s, cfg->runs);
    if (!isnan(to_socket)) {
      format_number(to_socket, versus_socket, sizeof versus_socket);
      verdict(to_socket <= 1, &goals[LATENCY_VS_SOCKET], versus_socket, sizeof versus_socket);
    }
    printf("| %-*s | %*s | %*s | %*s | %*s | %*s |\n", widths[0], label, widths[1], a, widths[2],
           b, widths[3], c, widths[4], versus_am, widths[5], versus_socket);
  }
  printf("\n(1) goal from 64 B to 4 KiB: at most 2 us or 1.5x above ucp_am_lat, whichever "
         "allows more; larger sizes show the ratio only. dlbridge/socket: goal <= 1 at every "
         "size.\n");
}

static void print_bandwidth_table(const settings* cfg, tally goals[GOALS]) {
  const remote_plan* plan = &cfg->plan;
  static const int widths[] = {8, 10, 10, 10, 10, 22, 16};
  printf("\nbandwidth, MB/s (10^6 bytes per second): median of %d run%s\n\n", cfg->runs,
         cfg->runs == 1 ? "" : "s");
  printf("| %-*s | %*s | %*s | %*s | %*s | %*s | %*s |\n", widths[0], "size", widths[1],
         "dlbridge", widths[2], "ucp_am_bw", widths[3], "tag_bw", widths[4], "socket", widths[5],
         "dlbridge/best UCX (2)", widths[6], "dlbridge/socket");
  print_rule(7, widths);
  for (int s = 0; s < plan->size_count; ++s) {
    const uint64_t bytes = plan->sizes[s].bytes;
    const double dlb = median_of_runs(DLB_BANDWIDTH, s, cfg->runs) / 1e6;
    const double am = median_of_runs(AM_BANDWIDTH, s, cfg->runs) / 1e6;
    const double tag = median_of_runs(TAG_BANDWIDTH, s, cfg->runs) / 1e6;
    const double sock = median_of_runs(SOCKET_BANDWIDTH, s, cfg->runs) / 1e6;
    char label[32], a[32], b[32], c[32], d[32], versus_ucx[64] = "n/a", versus_socket[64] = "n/a";
    size_label(bytes, label, sizeof label);
    format_number(dlb, a, sizeof a);
    format_number(am, b, sizeof b);
    format_number(tag, c, sizeof c);
    format_number(sock, d, sizeof d);
    const double to_ucx = median_ratio(DLB_BANDWIDTH, AM_BANDWIDTH, TAG_BANDWIDTH, s, cfg->runs);
    if (!isnan(to_ucx)) {
      format_number(to_ucx, versus_ucx, sizeof versus_ucx);
      if (bytes >= 16 * MiB) {
        verdict(to_ucx >= 0.90, &goals[BANDWIDTH_VS_PERFTEST], versus_ucx, sizeof versus_ucx);
      }
    }
    const double to_socket = median_ratio(DLB_BANDWIDTH, SOCKET_BANDWIDTH, -1, s, cfg->runs);
    if (!isnan(to_socket)) {
      format_number(to_socket, versus_socket, sizeof versus_socket);
      verdict(to_socket >= 1, &goals[BANDWIDTH_VS_SOCKET], versus_socket, sizeof versus_socket);
    }
    printf("| %-*s | %*s | %*s | %*s | %*s | %*s | %*s |\n", widths[0], label, widths[1], a,
           widths[2], b, widths[3], c, widths[4], d, widths[5], versus_ucx, widths[6],
           versus_socket);
  }
  printf("\n(2) against the better of ucp_am_bw and tag_bw; goal >= 0.90 from 16 MiB, smaller "
         "sizes show the ratio only. dlbridge/socket: goal >= 1 at every size. The ratios here "
         "and in the latency table's last column are the median of each run's own ratio.\n");
}

static void print_runs(const settings* cfg) {
  static const char* const names[SERIES] = {"dlbridge latency us", "dlbridge MB/s",
                                            "ucp_am_lat us",       "ucp_am_bw MB/s",
                                            "tag_bw MB/s",         "socket latency us",
                                            "socket MB/s"};
  printf("\nevery run:\n");
  for (int series = 0; series < SERIES; ++series) {
    const double scale = series == DLB_BANDWIDTH || series == AM_BANDWIDTH ||
                                 series == TAG_BANDWIDTH || series == SOCKET_BANDWIDTH
                             ? 1e-6
                             : 1.0;
    for (int s = 0; s < cfg->plan.size_count; ++s) {
      char label[32];
      size_label(cfg->plan.sizes[s].bytes, label, sizeof label);
      printf("  %-20s %-8s", names[series], label);
      for (int r = 0; r < cfg->runs; ++r) {
        char text[32];
        format_number(values[series][s][r] * scale, text, sizeof text);
        printf(" %8s", text);
      }
      printf("\n");
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* The run                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static void measure_perftest(const remote_perftest* perftest, const remote_plan* plan, int run) {
  static const struct {
    const char* test;
    int series;
  } tests[] = {{"ucp_am_lat", AM_LATENCY}, {"ucp_am_bw", AM_BANDWIDTH},
               {"tag_bw", TAG_BANDWIDTH}};
  for (int s = 0; s < plan->size_count; ++s) {
    if (!remote_plan_takes(plan, s)) continue;
    const remote_size_plan* size = &plan->sizes[s];
    for (size_t t = 0; t < sizeof tests / sizeof tests[0]; ++t) {
      const int latency = tests[t].series == AM_LATENCY;
      char why[512];
      double value = NAN;
      if (remote_perftest_run(perftest, tests[t].test, size->bytes,
                              latency ? size->pingpongs : size->stream_messages,
                              latency ? size->pingpong_warmups : size->stream_warmups, &value,
                              why, (int)sizeof why) != 0) {
        char label[32];
        size_label(size->bytes, label, sizeof label);
        fprintf(stderr, "bench_remote: run %d, %s, %s: %s\n", run + 1, tests[t].test, label,
                why);
        ++failures;
        continue;
      }
      values[tests[t].series][s][run] = value;
    }
  }
}

int main(int argc, char** argv) {
  settings cfg;
  if (parse_settings(argc, argv, &cfg) != 0) return 2;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int series = 0; series < SERIES; ++series) {
    for (int s = 0; s < REMOTE_MAX_SIZES; ++s) {
      for (int r = 0; r < MAX_RUNS; ++r) values[series][s][r] = NAN;
    }
  }
  parent_pid = getpid();
  atexit(end_children);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGHUP, on_signal);

  printf("bench_remote: a tensor between two processes over %s, dlbridge against ucx_perftest "
         "and a TCP socket copy%s\n",
         cfg.plan.ucx_scheme ? "UCX's own choice of transports (ucx://127.0.0.1)"
                             : "TCP on 127.0.0.1 (tcp://127.0.0.1)",
         cfg.quick ? " (--quick)" : "");
  if (cfg.columns[DLBRIDGE]) {
    char why[sizeof(((dlb_error*)0)->message)];
    const dlb_status status = remote_channels_available(why, sizeof why);
    if (status != DLB_OK) {
      printf("bench_remote: skipped: remote channels are not available here: %s: %s\n",
             dlb_status_name(status), why);
      return 77;
    }
  }
  /* Every UCX process of the run reads the same environment: the parent sets it once. */
  if (!cfg.plan.ucx_scheme) {
    setenv("UCX_TLS", "tcp", 1);
    if (getenv("UCX_NET_DEVICES") == NULL) setenv("UCX_NET_DEVICES", "lo", 1);
  }
  printf("  UCX environment of every UCX process: UCX_TLS=%s UCX_NET_DEVICES=%s\n",
         getenv("UCX_TLS") ? getenv("UCX_TLS") : "(unset: all)",
         getenv("UCX_NET_DEVICES") ? getenv("UCX_NET_DEVICES") : "(unset: all)");
  drop_sizes_beyond_memory(&cfg.plan);
  finish_plan(&cfg.plan);
  if (cfg.plan.size_count == 0) {
    printf("bench_remote: no size left to measure\n");
    return 1;
  }
  if (getrandom(cfg.plan.key, sizeof cfg.plan.key, 0) != (ssize_t)sizeof cfg.plan.key) {
    remote_fail("getrandom: %s", strerror(errno));
  }

  int cpus[2] = {-1, -1};
  if (cfg.pin) pick_cpus(cpus);
  if (cpus[0] >= 0) {
    printf("  sender and ucx_perftest client on cpu %d, receiver and server on cpu %d\n",
           cpus[0], cpus[1]);
  } else {
    printf("  processes not pinned%s\n", cfg.pin ? " (fewer than two cpus allowed)" : "");
  }
  remote_perftest perftest = {NULL, {cpus[0], cpus[1]}, cfg.perftest_peer_errors};
  char perftest_path[4096];
  char perftest_note[4352] = "";
  if (cfg.columns[PERFTEST]) {
    perftest.program = cfg.perftest_path != NULL
                           ? (access(cfg.perftest_path, X_OK) == 0 ? cfg.perftest_path : NULL)
                           : find_on_path("ucx_perftest", perftest_path, sizeof perftest_path);
    if (perftest.program == NULL) {
      if (cfg.perftest_path != NULL) {
        snprintf(perftest_note, sizeof perftest_note, "skipped: %s is not a program to run",
                 cfg.perftest_path);
      } else {
        snprintf(perftest_note, sizeof perftest_note,
                 "skipped: no ucx_perftest on PATH (Debian's ucx-utils brings it)");
      }
      cfg.columns[PERFTEST] = 0;
    } else {
      snprintf(perftest_note, sizeof perftest_note, "%s%s", perftest.program,
               cfg.perftest_peer_errors ? ", endpoints with peer failure handling (-e)"
                                        : ", endpoints without peer failure handling");
    }
  } else {
    snprintf(perftest_note, sizeof perftest_note, "not requested (--columns)");
  }
  printf("  ucx_perftest: %s\n", perftest_note);
  printf("  streams: %s\n", cfg.plan.stream_hints
                               ? "every message but the last says more follow (dlbridge: "
                                 "DLB_SEND_MORE, socket: MSG_MORE)"
                               : "no message says more follow (--no-hints)");
  printf("  per size and run:");
  for (int s = 0; s < cfg.plan.size_count; ++s) {
    const remote_size_plan* size = &cfg.plan.sizes[s];
    char label[32];
    size_label(size->bytes, label, sizeof label);
    printf("%s %s: %d ping-pongs after %d, a stream of %d after %d", s ? ";" : "", label,
           size->pingpongs, size->pingpong_warmups, size->stream_messages,
           size->stream_warmups);
  }
  printf("\n");

  /* Every run measures each size with every column, one after the other (the columns take
   * turns at going first), so that a ratio compares measurements taken seconds apart: this
   * machine has slow moments that last a minute, and a column measured over all sizes at once
   * could fall into one that the other missed. */
  for (int run = 0; run < cfg.runs; ++run) {
    for (int s = 0; s < cfg.plan.size_count; ++s) {
      remote_plan plan = cfg.plan;
      plan.only_size = s;
      plan.largest = plan.sizes[s].bytes;
      for (int turn = 0; turn < COLUMNS; ++turn) {
        const int column = (run + s + turn) % COLUMNS;
        if (!cfg.columns[column]) continue;
        char why[512];
        if (column == PERFTEST) {
          measure_perftest(&perftest, &plan, run);
        } else if (measure_pair(column == DLBRIDGE ? &remote_dlbridge : &remote_socket, &plan,
                                cpus, column == DLBRIDGE ? DLB_LATENCY : SOCKET_LATENCY,
                                column == DLBRIDGE ? DLB_BANDWIDTH : SOCKET_BANDWIDTH, run, why,
                                sizeof why) != 0) {
          fprintf(stderr, "bench_remote: run %d, %s: %s\n", run + 1,
                  column == DLBRIDGE ? "dlbridge" : "socket copy", why);
          ++failures;
        }
      }
    }
    if (!cfg.quick) printf("  run %d of %d done\n", run + 1, cfg.runs);
  }

  tally goals[GOALS];
  memset(goals, 0, sizeof goals);
  print_latency_table(&cfg, goals);
  print_bandwidth_table(&cfg, goals);
  if (cfg.verbose) print_runs(&cfg);
  int met = 0, judged = 0;
  for (int g = 0; g < GOALS; ++g) {
    met += goals[g].pass;
    judged += goals[g].pass + goals[g].miss;
  }
  printf("\nsummary: dlbridge met %d of %d goals (", met, judged);
  for (int g = 0; g < GOALS; ++g) {
    printf("%s%s %d of %d", g ? ", " : "", goal_names[g], goals[g].pass,
           goals[g].pass + goals[g].miss);
  }
  printf(")%s%s; %d measurement%s failed\n", cfg.columns[PERFTEST] ? "" : "; ucx_perftest ",
         cfg.columns[PERFTEST] ? "" : perftest_note, failures, failures == 1 ? "" : "s");
  return failures == 0 ? 0 : 1;
}
