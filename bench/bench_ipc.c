/* bench_ipc.c - a tensor from one process to another, measured five ways in one run:
 *   dlbridge fresh    allocate shareable, fill, send / receive, read, free
 *   dlbridge pooled   the same with a tensor lent by the channel's pool (dlb_channel_allocate),
 *                     whose slot the receiver's free gives back
 *   dlbridge re-send  a share of one pre-allocated tensor per size, sent again and again
 *   iceoryx           loan, fill, publish / take (blocking, in a waitset), read, release
 *   socket copy       the bytes written through a Unix stream socket / read into the
 *                     receiver's own buffer
 * for every size (64 B to 256 MiB), two placements (sender and receiver on two cpus, or both on
 * one) and two fill modes (the sender writes every byte and the receiver reads every byte, or
 * header + last byte on both sides). Each measurement is a pair of child processes pinned with
 * sched_setaffinity; the parent only collects their samples. Printed per placement and fill
 * mode: one-way latency, round trip and back-to-back throughput (medians), the ratios of
 * dlbridge pooled and fresh to iceoryx and to the socket copy, and PASS/MISS against the goals of
 * issue #33: latency and round trip <= 1.5x iceoryx's, throughput >= 0.5x iceoryx's, faster
 * than the socket copy from 4 KiB up. Missing goals is reported, not an error; the exit status
 * is 1 only when a measurement failed (a transport error, wrong bytes, a leaked tensor).
 *
 *   bench_ipc                 the full run (about two minutes on two cores)
 *   bench_ipc --quick         64 B, 4 KiB and 1 MiB, a few rounds (the smoke test)
 *   bench_ipc --help          the other options: sizes, rows, placements, fill modes
 *
 * iceoryx is measured when the bench was built with its C binding and iox-roudi (Debian's
 * iceoryx packages): the bench starts its own RouDi with pools sized to the run and stops it
 * by pid; where a RouDi already runs, or iceoryx is absent, its column says so. */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_ipc.h"
#include "bench_timing.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)
#define GiB (1024ull * 1024ull * 1024ull)

/* How long one pair of processes may take before the bench ends it: a full-run row takes seconds
 * (a minute under valgrind), so this only ends a transport that stopped answering. */
#define CELL_DEADLINE_NS 600000000000ull

enum { ROW_FRESH, ROW_POOLED, ROW_RESEND, ROW_ICEORYX, ROW_SOCKET, ROWS };
enum { TWO_CPUS, ONE_CPU, PLACEMENTS };
enum { EVERY_BYTE, ONE_BYTE, FILLS };

static const char* const row_keys[ROWS] = {"fresh", "pooled", "resend", "iceoryx", "socket"};
static const char* const row_labels[ROWS] = {"dlbridge fresh", "dlbridge pooled",
                                             "dlbridge re-send", "iceoryx", "socket copy"};
/* The dlbridge rows the goals judge, each against both baselines: the pool (the fast way to
 * send) and a fresh shareable tensor per message. */
enum { JUDGED = 2, BASELINES = 2 };
static const int judged_rows[JUDGED] = {ROW_POOLED, ROW_FRESH};
static const char* const judged_names[JUDGED] = {"pooled", "fresh"};
static const char* const placement_keys[PLACEMENTS] = {"two", "one"};
static const char* const fill_keys[FILLS] = {"every", "one"};

typedef struct settings {
  int quick;
  bench_plan plan;
  int rows[ROWS];  /* measured */
  int shown[ROWS]; /* in the tables: iceoryx stays there, empty, when it cannot be measured */
  int placements[PLACEMENTS];
  int fills[FILLS];
} settings;

/* Medians per row, placement, fill mode, size and metric; NAN where nothing was measured. */
static double results[ROWS][PLACEMENTS][FILLS][BENCH_MAX_SIZES][BENCH_METRICS];
static int failures;

/* What the parent must clean up, even when it fails or is interrupted: the paths are written
 * beforehand, so cleaning up takes only calls a signal handler may make (kill, waitpid, unlink,
 * rmdir, nanosleep). */
static pid_t parent_pid;
static pid_t children[2];
static char folder[64];
static char leftovers[3][128]; /* the current cell's socket, RouDi's config and log */
#ifdef BENCH_HAVE_ICEORYX
static bench_roudi roudi;
#endif

static void clean_up(void) {
  if (getpid() != parent_pid) return; /* a child leaving through exit() */
  for (int c = 0; c < 2; ++c) {
    if (children[c] > 0) {
      kill(children[c], SIGKILL);
      waitpid(children[c], NULL, 0);
      children[c] = 0;
    }
  }
#ifdef BENCH_HAVE_ICEORYX
  bench_roudi_stop(&roudi);
#endif
  for (int i = 0; i < 3; ++i) {
    if (leftovers[i][0] != '\0') unlink(leftovers[i]);
  }
  if (folder[0] != '\0') rmdir(folder);
}

static void on_signal(int sig) {
  clean_up();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* ------------------------------------------------------------------------------------------ */
/* Options and the plan                                                                        */
/* ------------------------------------------------------------------------------------------ */

static uint64_t clamp_u64(uint64_t value, uint64_t low, uint64_t high) {
  return value < low ? low : value > high ? high : value;
}

/* Every size gets the same rounds in every row. Ping-pongs and bursts shrink with the size so a
 * 256 MiB message costs seconds, not minutes; bursts hold at most 256 messages (a fresh
 * tensor's file descriptor stays in flight until received) and about 128 MiB. */
static bench_size_plan plan_size(uint64_t bytes, int quick) {
  bench_size_plan size;
  size.bytes = bytes;
  size.warmups = bytes >= 16 * MiB ? 1 : 2;
  if (quick) {
    size.pingpongs = (int)clamp_u64(64 * MiB / bytes, 3, 15);
    size.bursts = 3;
    size.burst_length = (int)clamp_u64(16 * MiB / bytes, 2, 32);
  } else {
    size.pingpongs = (int)clamp_u64(GiB / bytes, 7, 501);
    size.bursts = 7;
    size.burst_length = (int)clamp_u64(128 * MiB / bytes, 2, 256);
  }
  size.iceoryx_queue = (int)clamp_u64((uint64_t)size.burst_length, 2, 256);
  return size;
}

static void usage(FILE* out) {
  fprintf(out,
          "usage: bench_ipc [--quick] [--sizes LIST] [--rows LIST] [--placements LIST] "
          "[--fills LIST]\n"
          "  --quick            64 B, 4 KiB and 1 MiB with a few rounds (the smoke test)\n"
          "  --sizes 64,4K,1M   message sizes, 64 B to 1 GiB (suffixes K, M, G: binary)\n"
          "                     default 64,4K,64K,1M,16M,256M\n"
          "  --rows LIST        of fresh, pooled, resend, iceoryx, socket (default: all)\n"
          "  --placements LIST  of two (sender cpu A, receiver cpu B), one (both on cpu A)\n"
          "  --fills LIST       of every (every byte written and read), one (header + last "
          "byte)\n");
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
  if (*end == 'B' || (end[0] == 'i' && end[1] == 'B')) end += *end == 'B' ? 1 : 2;
  if (*end != '\0' || number == 0 || number > GiB / scale) return 1;
  *out = (uint64_t)number * scale;
  return *out < BENCH_MIN_BYTES;
}

/* Marks the keys a comma-separated list names; 1 (and a message) for an unknown one. */
static int parse_keys(const char* option, const char* list, const char* const* keys, int count,
                      int* chosen) {
  for (int k = 0; k < count; ++k) chosen[k] = 0;
  char copy[256];
  snprintf(copy, sizeof copy, "%s", list);
  for (char* item = strtok(copy, ","); item != NULL; item = strtok(NULL, ",")) {
    int found = 0;
    for (int k = 0; k < count; ++k) {
      if (strcmp(item, keys[k]) == 0) chosen[k] = found = 1;
    }
    if (!found) {
      fprintf(stderr, "bench_ipc: %s: unknown '%s'\n", option, item);
      return 1;
    }
  }
  return 0;
}

static int parse_settings(int argc, char** argv, settings* out) {
  memset(out, 0, sizeof *out);
  for (int k = 0; k < ROWS; ++k) out->rows[k] = 1;
  for (int k = 0; k < PLACEMENTS; ++k) out->placements[k] = 1;
  for (int k = 0; k < FILLS; ++k) out->fills[k] = 1;
  const char* sizes = NULL;
  for (int i = 1; i < argc; ++i) {
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--quick") == 0) {
      out->quick = 1;
    } else if (strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      exit(0);
    } else if (value != NULL && strcmp(argv[i], "--sizes") == 0) {
      sizes = value;
      ++i;
    } else if (value != NULL && strcmp(argv[i], "--rows") == 0) {
      if (parse_keys(argv[i], value, row_keys, ROWS, out->rows)) return 1;
      ++i;
    } else if (value != NULL && strcmp(argv[i], "--placements") == 0) {
      if (parse_keys(argv[i], value, placement_keys, PLACEMENTS, out->placements)) return 1;
      ++i;
    } else if (value != NULL && strcmp(argv[i], "--fills") == 0) {
      if (parse_keys(argv[i], value, fill_keys, FILLS, out->fills)) return 1;
      ++i;
    } else {
      fprintf(stderr, "bench_ipc: unknown or incomplete option '%s'\n", argv[i]);
      usage(stderr);
      return 1;
    }
  }
  if (sizes == NULL) sizes = out->quick ? "64,4K,1M" : "64,4K,64K,1M,16M,256M";
  char copy[256];
  snprintf(copy, sizeof copy, "%s", sizes);
  for (char* item = strtok(copy, ","); item != NULL; item = strtok(NULL, ",")) {
    uint64_t bytes = 0;
    if (parse_size(item, &bytes) != 0) {
      fprintf(stderr, "bench_ipc: --sizes: '%s' is not a size from 64 B to 1 GiB\n", item);
      return 1;
    }
    if (out->plan.size_count == BENCH_MAX_SIZES) {
      fprintf(stderr, "bench_ipc: --sizes: at most %d sizes\n", BENCH_MAX_SIZES);
      return 1;
    }
    out->plan.sizes[out->plan.size_count++] = plan_size(bytes, out->quick);
  }
  /* Ascending, without repeats: iceoryx's pools must be, and the tables read better. */
  for (int a = 1; a < out->plan.size_count; ++a) {
    for (int b = a; b > 0 && out->plan.sizes[b].bytes < out->plan.sizes[b - 1].bytes; --b) {
      const bench_size_plan swap = out->plan.sizes[b];
      out->plan.sizes[b] = out->plan.sizes[b - 1];
      out->plan.sizes[b - 1] = swap;
    }
  }
  int kept = 0;
  for (int s = 0; s < out->plan.size_count; ++s) {
    if (kept == 0 || out->plan.sizes[s].bytes != out->plan.sizes[kept - 1].bytes) {
      out->plan.sizes[kept++] = out->plan.sizes[s];
    }
  }
  out->plan.size_count = kept;
  return 0;
}

static void size_label(uint64_t bytes, char* text, size_t size) {
  if (bytes % GiB == 0) snprintf(text, size, "%llu GiB", (unsigned long long)(bytes / GiB));
  else if (bytes % MiB == 0) snprintf(text, size, "%llu MiB", (unsigned long long)(bytes / MiB));
  else if (bytes % KiB == 0) snprintf(text, size, "%llu KiB", (unsigned long long)(bytes / KiB));
  else snprintf(text, size, "%llu B", (unsigned long long)bytes);
}

/* ------------------------------------------------------------------------------------------ */
/* One measurement: a sender and a receiver process                                            */
/* ------------------------------------------------------------------------------------------ */

typedef struct samples {
  double* values;
  int count;
  int capacity;
} samples;

static void add_sample(samples* set, double value) {
  if (set->count == set->capacity) {
    set->capacity = set->capacity ? set->capacity * 2 : 64;
    set->values = realloc(set->values, (size_t)set->capacity * sizeof(double));
    if (set->values == NULL) bench_fail("out of memory for samples");
  }
  set->values[set->count++] = value;
}

static void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    bench_fail("cannot pin to cpu %d: %s", cpu, strerror(errno));
  }
}

static pid_t start_child(const bench_transport* transport, const bench_cell* cell, int sender,
                         int cpu, int result_fd, const int* close_fds, int close_count) {
  fflush(NULL);
  const pid_t pid = fork();
  if (pid < 0) bench_fail("fork: %s", strerror(errno));
  if (pid != 0) return pid;
  for (int i = 0; i < close_count; ++i) {
    if (close_fds[i] >= 0) close(close_fds[i]);
  }
  bench_role = sender ? "sender" : "receiver";
  pin_to(cpu);
  if (sender) {
    bench_run_sender(transport, cell, result_fd);
  } else {
    bench_run_receiver(transport, cell, result_fd);
  }
  close(result_fd);
  exit(0); /* exit, not _exit: libraries' static destructors run, as in a real program */
}

static void describe_exit(int status, char* text, size_t size) {
  if (WIFEXITED(status)) snprintf(text, size, "exit status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) snprintf(text, size, "signal %d", WTERMSIG(status));
  else snprintf(text, size, "status %d", status);
}

/* Runs one row for one placement and fill mode over every size; the medians go to `out`.
 * Returns 0, or 1 with `why` saying what failed (the children's own message is on stderr). */
static int measure(const bench_transport* transport, const bench_plan* plan, int cpus[2],
                   int every_byte, int id, double out[][BENCH_METRICS], char* why,
                   size_t why_size) {
  /* The dlbridge rows' socket: a receiver killed before it closed its listener leaves it. */
  snprintf(leftovers[0], sizeof leftovers[0], "%s/cell-%d.sock", folder, id);
  bench_cell cell;
  cell.plan = plan;
  cell.every_byte = every_byte;
  cell.folder = folder;
  cell.id = id;
  cell.pair[0] = cell.pair[1] = -1;
  if (transport == &bench_socket_copy &&
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, cell.pair) != 0) {
    snprintf(why, why_size, "socketpair: %s", strerror(errno));
    return 1;
  }
  int pipes[2][2]; /* [0] the sender's results, [1] the receiver's */
  if (pipe2(pipes[0], O_CLOEXEC) != 0 || pipe2(pipes[1], O_CLOEXEC) != 0) {
    bench_fail("pipe: %s", strerror(errno));
  }
  const int for_receiver[] = {pipes[0][0], pipes[0][1], pipes[1][0]};
  children[1] = start_child(transport, &cell, 0, cpus[1], pipes[1][1], for_receiver, 3);
  const int for_sender[] = {pipes[1][0], pipes[1][1], pipes[0][0]};
  children[0] = start_child(transport, &cell, 1, cpus[0], pipes[0][1], for_sender, 3);
  const pid_t started[2] = {children[0], children[1]};
  close(pipes[0][1]);
  close(pipes[1][1]);
  if (cell.pair[0] >= 0) {
    close(cell.pair[0]);
    close(cell.pair[1]);
  }

  samples collected[BENCH_MAX_SIZES][BENCH_METRICS];
  memset(collected, 0, sizeof collected);
  unsigned char pending[2][sizeof(bench_record)];
  size_t pending_bytes[2] = {0, 0};
  int open_pipes = 2;
  int failed = 0;
  const uint64_t deadline = bench_now_ns() + CELL_DEADLINE_NS;
  struct pollfd fds[2] = {{pipes[0][0], POLLIN, 0}, {pipes[1][0], POLLIN, 0}};
  while (open_pipes > 0 && !failed) {
    if (bench_now_ns() > deadline) {
      snprintf(why, why_size, "no result after %llu s", CELL_DEADLINE_NS / 1000000000ull);
      failed = 1;
      break;
    }
    if (poll(fds, 2, 1000) < 0 && errno != EINTR) bench_fail("poll: %s", strerror(errno));
    for (int c = 0; c < 2; ++c) {
      if (fds[c].fd < 0 || fds[c].revents == 0) continue;
      const ssize_t n = read(fds[c].fd, pending[c] + pending_bytes[c],
                             sizeof(bench_record) - pending_bytes[c]);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        pending_bytes[c] += (size_t)n;
        if (pending_bytes[c] == sizeof(bench_record)) {
          bench_record record;
          memcpy(&record, pending[c], sizeof record);
          pending_bytes[c] = 0;
          if (record.size_index < (uint32_t)plan->size_count && record.metric < BENCH_METRICS) {
            add_sample(&collected[record.size_index][record.metric], record.value);
          }
        }
        continue;
      }
      /* The child closed its end: it is exiting. A failure ends the other one too. */
      close(fds[c].fd);
      fds[c].fd = -1;
      --open_pipes;
      int status = 0;
      waitpid(children[c], &status, 0);
      children[c] = 0;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char how[64];
        describe_exit(status, how, sizeof how);
        snprintf(why, why_size, "the %s failed (%s)", c == 0 ? "sender" : "receiver", how);
        failed = 1;
      }
    }
  }
  for (int c = 0; c < 2; ++c) {
    if (fds[c].fd >= 0) close(fds[c].fd);
    if (children[c] > 0) {
      if (failed) kill(children[c], SIGKILL);
      int status = 0;
      waitpid(children[c], &status, 0);
      children[c] = 0;
      if (!failed && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        char how[64];
        describe_exit(status, how, sizeof how);
        snprintf(why, why_size, "the %s failed (%s)", c == 0 ? "sender" : "receiver", how);
        failed = 1;
      }
    }
  }
  unlink(leftovers[0]);
#ifdef BENCH_HAVE_ICEORYX
  if (transport == &bench_iceoryx) {
    for (int c = 0; c < 2; ++c) bench_iceoryx_remove_leftovers(c == 0, (int)started[c]);
  }
#else
  (void)started;
#endif
  for (int s = 0; s < plan->size_count; ++s) {
    for (int m = 0; m < BENCH_METRICS; ++m) {
      samples* set = &collected[s][m];
      out[s][m] = set->count > 0 ? median(set->values, set->count) : NAN;
      free(set->values);
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

/* Three significant digits or more: microseconds, messages per second and ratios alike. */
static void format_number(double value, char* text, size_t size) {
  if (isnan(value)) snprintf(text, size, "-");
  else if (value >= 1000) snprintf(text, size, "%.0f", value);
  else if (value >= 10) snprintf(text, size, "%.1f", value);
  else if (value >= 0.01) snprintf(text, size, "%.2f", value);
  else snprintf(text, size, "%.2g", value);
}

static const int label_width = 38;
static const int cell_width = 12;

/* One goal line: dlbridge fresh against `baseline` at each size. Latency: fresh / baseline,
 * which must be <= `limit`; throughput: fresh / baseline, >= `limit`. `strict`: the comparison
 * excludes equality (faster than). Sizes below `from` show the ratio without a verdict. */
static void goal_row(const char* label, const double* fresh, const double* baseline,
                     const bench_plan* plan, int higher_is_better, double limit, int strict,
                     uint64_t from, tally* count) {
  printf("| %-*s |", label_width, label);
  for (int s = 0; s < plan->size_count; ++s) {
    char text[32];
    if (isnan(fresh[s]) || isnan(baseline[s]) || baseline[s] <= 0) {
      snprintf(text, sizeof text, "n/a");
    } else {
      const double ratio = fresh[s] / baseline[s];
      char number[24];
      format_number(ratio, number, sizeof number);
      if (plan->sizes[s].bytes < from) {
        snprintf(text, sizeof text, "%s", number);
      } else {
        int pass;
        if (higher_is_better) pass = strict ? ratio > limit : ratio >= limit;
        else pass = strict ? ratio < limit : ratio <= limit;
        snprintf(text, sizeof text, "%s %s", number, pass ? "PASS" : "MISS");
        if (pass) ++count->pass;
        else ++count->miss;
      }
    }
    printf(" %*s |", cell_width, text);
  }
  printf("\n");
}

/* Prints the tables of one placement and fill mode; PASS/MISS counts go to tallies[judged row]
 * [0: against iceoryx, 1: against the socket copy]. */
static void print_tables(const settings* cfg, int placement, int fill, const int cpus[2],
                         tally tallies[JUDGED][BASELINES]) {
  static const char* const metric_titles[BENCH_METRICS] = {"one-way us", "round trip us",
                                                           "messages/s, back to back"};
  const bench_plan* plan = &cfg->plan;
  if (placement == TWO_CPUS) {
    printf("\n### two cpus (sender on cpu %d, receiver on cpu %d), ", cpus[0], cpus[1]);
  } else {
    printf("\n### one cpu (sender and receiver on cpu %d), ", cpus[0]);
  }
  printf("%s\n", fill == EVERY_BYTE ? "the sender writes every byte, the receiver reads every byte"
                                    : "the sender writes the header + last byte, the receiver "
                                      "reads them");
  for (int m = 0; m < BENCH_METRICS; ++m) {
    printf("\n| %-*s |", label_width, metric_titles[m]);
    for (int s = 0; s < plan->size_count; ++s) {
      char text[32];
      size_label(plan->sizes[s].bytes, text, sizeof text);
      printf(" %*s |", cell_width, text);
    }
    printf("\n|%.*s|", label_width + 2,
           "------------------------------------------------------------");
    for (int s = 0; s < plan->size_count; ++s) {
      printf("%.*s:|", cell_width + 1, "------------------------------");
    }
    printf("\n");
    double rows[ROWS][BENCH_MAX_SIZES];
    for (int r = 0; r < ROWS; ++r) {
      for (int s = 0; s < plan->size_count; ++s) rows[r][s] = results[r][placement][fill][s][m];
      if (!cfg->shown[r]) continue;
      printf("| %-*s |", label_width, row_labels[r]);
      for (int s = 0; s < plan->size_count; ++s) {
        char text[32];
        format_number(rows[r][s], text, sizeof text);
        printf(" %*s |", cell_width, text);
      }
      printf("\n");
    }
    const int rate = m == BENCH_MESSAGES_PER_S;
    for (int j = 0; j < JUDGED; ++j) {
      const int judged = judged_rows[j];
      if (!cfg->shown[judged]) continue;
      char label[64];
      if (cfg->shown[ROW_ICEORYX]) {
        snprintf(label, sizeof label, "%s / iceoryx (goal %s)", judged_names[j],
                 rate ? ">= 0.5" : "<= 1.5");
        goal_row(label, rows[judged], rows[ROW_ICEORYX], plan, rate, rate ? 0.5 : 1.5, 0, 0,
                 &tallies[j][0]);
      }
      if (cfg->shown[ROW_SOCKET]) {
        snprintf(label, sizeof label, "%s / socket (goal %s from 4 KiB)", judged_names[j],
                 rate ? "> 1" : "< 1");
        goal_row(label, rows[judged], rows[ROW_SOCKET], plan, rate, 1.0, 1, 4 * KiB,
                 &tallies[j][1]);
      }
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* The run                                                                                     */
/* ------------------------------------------------------------------------------------------ */

/* The first two cpus this process may run on; -1 where there are fewer. */
static void pick_cpus(int cpus[2]) {
  cpu_set_t allowed;
  cpus[0] = cpus[1] = -1;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) bench_fail("sched_getaffinity");
  int found = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus[found++] = cpu;
  }
}

int main(int argc, char** argv) {
  settings cfg;
  if (parse_settings(argc, argv, &cfg) != 0) return 2;
  const bench_plan* plan = &cfg.plan;
  for (int r = 0; r < ROWS; ++r) {
    for (int p = 0; p < PLACEMENTS; ++p) {
      for (int f = 0; f < FILLS; ++f) {
        for (int s = 0; s < BENCH_MAX_SIZES; ++s) {
          for (int m = 0; m < BENCH_METRICS; ++m) results[r][p][f][s][m] = NAN;
        }
      }
    }
  }
  parent_pid = getpid();
  snprintf(folder, sizeof folder, "/tmp/dlbridge-bench-ipc-XXXXXX");
  if (mkdtemp(folder) == NULL) {
    folder[0] = '\0';
    bench_fail("mkdtemp: %s", strerror(errno));
  }
  snprintf(leftovers[1], sizeof leftovers[1], "%s/" BENCH_ROUDI_CONFIG, folder);
  snprintf(leftovers[2], sizeof leftovers[2], "%s/" BENCH_ROUDI_LOG, folder);
  atexit(clean_up);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGHUP, on_signal);

  int cpus[2];
  pick_cpus(cpus);
  if (cpus[1] < 0 && cfg.placements[TWO_CPUS]) {
    printf("two cpus: skipped, this process may run on one cpu only (%d)\n", cpus[0]);
    cfg.placements[TWO_CPUS] = 0;
  }

  memcpy(cfg.shown, cfg.rows, sizeof cfg.shown);
  const bench_transport* transports[ROWS] = {&bench_dlbridge_fresh, &bench_dlbridge_pooled,
                                             &bench_dlbridge_resend, NULL, &bench_socket_copy};
  char iceoryx_note[512] = "";
#ifdef BENCH_HAVE_ICEORYX
  transports[ROW_ICEORYX] = &bench_iceoryx;
  if (cfg.rows[ROW_ICEORYX] && access(BENCH_IOX_ROUDI, X_OK) != 0) {
    snprintf(iceoryx_note, sizeof iceoryx_note, "not installed (no %s)", BENCH_IOX_ROUDI);
    cfg.rows[ROW_ICEORYX] = 0;
  } else if (cfg.rows[ROW_ICEORYX]) {
    if (bench_roudi_start(&roudi, plan, folder, iceoryx_note, sizeof iceoryx_note) != 0) {
      cfg.rows[ROW_ICEORYX] = 0;
    } else {
      snprintf(iceoryx_note, sizeof iceoryx_note,
               "measured; the bench's own RouDi (pid %d, %s) has one pool per size", roudi.pid,
               BENCH_IOX_ROUDI);
    }
  }
#else
  if (cfg.rows[ROW_ICEORYX]) {
    snprintf(iceoryx_note, sizeof iceoryx_note,
             "not installed (built without iceoryx's C binding: Debian's "
             "libiceoryx-binding-c-dev and iceoryx)");
    cfg.rows[ROW_ICEORYX] = 0;
  }
#endif
  printf("bench_ipc: a tensor from one process to another%s\n", cfg.quick ? " (--quick)" : "");
  printf("  rows: dlbridge fresh = allocate shareable, fill, send / receive, read, free;\n"
         "        dlbridge pooled = allocate from the channel's pool, fill, send / receive, "
         "read, free (the slot goes back to the sender's pool);\n"
         "        dlbridge re-send = a share of one pre-allocated tensor per size, fill, send, "
         "free the share / the same;\n"
         "        iceoryx = loan, fill, publish / take (blocking, in a waitset), read, release;\n"
         "        socket copy = fill its own buffer, write the bytes through a Unix stream "
         "socket / read them into the receiver's buffer, read\n");
  printf("  one-way: the sender's clock before it allocates (or loans) the message, carried in "
         "the message, to the receiver's clock after reading it (CLOCK_MONOTONIC, one clock for "
         "both processes)\n"
         "  round trip: the same start to the sender's read of the receiver's 64-byte reply, "
         "sent the row's own way\n"
         "  throughput: messages per second in back-to-back bursts, from the burst's first "
         "stamp to the receiver's read of its last message\n");
  printf("  medians of, per size:");
  for (int s = 0; s < plan->size_count; ++s) {
    char text[32];
    size_label(plan->sizes[s].bytes, text, sizeof text);
    printf("%s %s: %d ping-pongs, %d bursts of %d", s ? ";" : "", text,
           plan->sizes[s].pingpongs, plan->sizes[s].bursts, plan->sizes[s].burst_length);
  }
  printf("\n  iceoryx: %s\n", iceoryx_note[0] ? iceoryx_note : "not requested (--rows)");
  fflush(stdout);

  tally tallies[JUDGED][BASELINES];
  memset(tallies, 0, sizeof tallies);
  int id = 0;
  for (int p = 0; p < PLACEMENTS; ++p) {
    if (!cfg.placements[p]) continue;
    int placed[2] = {cpus[0], p == TWO_CPUS ? cpus[1] : cpus[0]};
    for (int f = 0; f < FILLS; ++f) {
      if (!cfg.fills[f]) continue;
      for (int r = 0; r < ROWS; ++r) {
        if (!cfg.rows[r]) continue;
        char why[256];
        if (measure(transports[r], plan, placed, f == EVERY_BYTE, id++,
                    results[r][p][f], why, sizeof why) != 0) {
          fprintf(stderr, "bench_ipc: %s, %s, %s: %s\n", row_labels[r],
                  p == TWO_CPUS ? "two cpus" : "one cpu",
                  f == EVERY_BYTE ? "every byte" : "header + last byte", why);
          ++failures;
        }
      }
      print_tables(&cfg, p, f, placed, tallies);
      fflush(stdout);
    }
  }

  /* Goals: against iceoryx, latency and round trip <= 1.5x, throughput >= 0.5x; against the
   * socket copy, faster from 4 KiB up. */
  printf("\nsummary:");
  for (int j = 0; j < JUDGED; ++j) {
    if (!cfg.shown[judged_rows[j]]) continue;
    printf(" dlbridge %s met", judged_names[j]);
    if (cfg.rows[ROW_ICEORYX]) {
      printf(" %d of %d goals against iceoryx and", tallies[j][0].pass,
             tallies[j][0].pass + tallies[j][0].miss);
    }
    printf(" %d of %d against the socket copy;", tallies[j][1].pass,
           tallies[j][1].pass + tallies[j][1].miss);
  }
  if (cfg.shown[ROW_ICEORYX] && !cfg.rows[ROW_ICEORYX]) {
    printf(" iceoryx %s, its goals not judged;", iceoryx_note);
  }
  printf(" %d measurement%s failed\n", failures, failures == 1 ? "" : "s");
  return failures == 0 ? 0 : 1;
}
