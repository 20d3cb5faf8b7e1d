/* bench_remote_perftest.c - the ucx_perftest column: UCX's own benchmark (Debian's ucx-utils) as
 * a server and a client process, with the environment the bench set for every column (UCX_TLS,
 * UCX_NET_DEVICES) and the same cpus, sizes and iteration counts. Its client prints one line of
 * final numbers (-f); this file reads the median latency or the overall bandwidth from it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_remote.h"

#define OUTPUT_BYTES 16384

typedef struct running {
  int slot; /* its place in remote_children */
  pid_t pid;
  int fd; /* its stdout and stderr */
  char output[OUTPUT_BYTES];
  size_t length;
  int status;
  int exited;
} running;

/* A port nothing listens on now (ucx_perftest's server binds every IPv4 address). Another
 * program may take it before the server does: the caller then tries another. */
static int free_port(void) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t size = sizeof address;
  int port = -1;
  if (bind(fd, (struct sockaddr*)&address, sizeof address) == 0 &&
      getsockname(fd, (struct sockaddr*)&address, &size) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

/* Whether a TCP socket listens on `port` (state 0A in /proc/net/tcp): the server is ready for
 * its client. Asking the kernel, not connecting, since the server takes the first connection
 * as its client. */
static int listening(int port) {
  FILE* table = fopen("/proc/net/tcp", "r");
  if (table == NULL) return 0;
  char line[512];
  int found = 0;
  while (!found && fgets(line, sizeof line, table) != NULL) {
    unsigned local_port = 0, state = 0;
    char local[64];
    if (sscanf(line, " %*d: %63[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x", local, &local_port,
               &state) == 3) {
      found = (int)local_port == port && state == 0x0A;
    }
  }
  fclose(table);
  return found;
}

static void start(running* process, int slot, const char* program, char* const argv[], int cpu) {
  memset(process, 0, sizeof *process);
  process->slot = slot;
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) remote_fail("pipe: %s", strerror(errno));
  fflush(NULL);
  process->pid = fork();
  if (process->pid < 0) remote_fail("fork: %s", strerror(errno));
  if (process->pid == 0) {
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      sched_setaffinity(0, sizeof set, &set);
    }
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    execv(program, argv);
    fprintf(stderr, "cannot run %s: %s\n", program, strerror(errno));
    _exit(127);
  }
  remote_children[slot] = process->pid;
  close(out[1]);
  /* Read without waiting: the parent polls, or looks between its checks of the server. */
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  process->fd = out[0];
}

/* Reads what is there without waiting; 1 once the process closed its output. */
static int drain(running* process) {
  if (process->fd < 0) return 1;
  char chunk[4096];
  const ssize_t n = read(process->fd, chunk, sizeof chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
  if (n > 0) {
    const size_t room = sizeof process->output - 1 - process->length;
    const size_t kept = (size_t)n < room ? (size_t)n : room;
    memcpy(process->output + process->length, chunk, kept);
    process->length += kept;
    process->output[process->length] = '\0';
    return 0;
  }
  close(process->fd);
  process->fd = -1;
  return 1;
}

static void finish(running* process, int kill_it) {
  if (process->pid <= 0) return;
  if (kill_it) kill(process->pid, SIGKILL);
  waitpid(process->pid, &process->status, 0);
  process->exited = 1;
  process->pid = 0;
  remote_children[process->slot] = 0;
  if (process->fd >= 0) {
    close(process->fd);
    process->fd = -1;
  }
}

static int has_exited(running* process) {
  if (process->pid <= 0) return 1;
  if (waitpid(process->pid, &process->status, WNOHANG) == process->pid) {
    process->exited = 1;
    process->pid = 0;
    remote_children[process->slot] = 0;
    return 1;
  }
  return 0;
}

static int succeeded(const running* process) {
  return process->exited && WIFEXITED(process->status) && WEXITSTATUS(process->status) == 0;
}

/* The last line of eight numbers: iterations, latency (50th percentile, average, overall, in
 * microseconds), bandwidth (average, overall, in MiB/s) and message rate (average, overall). */
static int parse_final_line(const char* output, double numbers[8]) {
  int found = 0;
  const char* line = output;
  while (*line != '\0') {
    const char* end = strchr(line, '\n');
    const size_t length = end != NULL ? (size_t)(end - line) : strlen(line);
    char copy[512];
    if (length < sizeof copy) {
      memcpy(copy, line, length);
      copy[length] = '\0';
      double values[8];
      int count = 0;
      char* cursor = copy;
      for (;;) {
        char* after = NULL;
        const double value = strtod(cursor, &after);
        if (after == cursor) break;
        if (count < 8) values[count] = value;
        ++count;
        cursor = after;
      }
      while (*cursor == ' ' || *cursor == '\t' || *cursor == '\r') ++cursor;
      if (count == 8 && *cursor == '\0') {
        memcpy(numbers, values, sizeof values);
        found = 1;
      }
    }
    if (end == NULL) break;
    line = end + 1;
  }
  return found;
}

static void show_output(const char* who, const running* process) {
  if (process->length > 0) {
    fprintf(stderr, "--- ucx_perftest %s said:\n%s%s---\n", who, process->output,
            process->output[process->length - 1] == '\n' ? "" : "\n");
  }
}

/* One try on one port: 0 with *value, 1 with why, 2 when the server did not start (the port
 * may have been taken: the caller tries another). */
static int run_once(const remote_perftest* perftest, const char* test, uint64_t size,
                    int iterations, int warmups, int port, double* value, char* why,
                    int why_size) {
  char size_text[32], iterations_text[32], warmups_text[32], port_text[16];
  snprintf(size_text, sizeof size_text, "%llu", (unsigned long long)size);
  snprintf(iterations_text, sizeof iterations_text, "%d", iterations);
  snprintf(warmups_text, sizeof warmups_text, "%d", warmups);
  snprintf(port_text, sizeof port_text, "%d", port);
  char* program = (char*)perftest->program;
  /* "-e" last where asked for; otherwise the list ends there. */
  char* peer_errors = perftest->peer_errors ? "-e" : NULL;
  char* server_argv[] = {program, "-p", port_text, "-t", (char*)test, "-s", size_text,
                         "-n", iterations_text, "-w", warmups_text, peer_errors, NULL};
  char* client_argv[] = {program, "127.0.0.1", "-p", port_text, "-t", (char*)test, "-s",
                         size_text, "-n", iterations_text, "-w", warmups_text, "-f",
                         peer_errors, NULL};
  static running server, client;
  start(&server, 1, program, server_argv, perftest->cpus[1]);
  const uint64_t ready_by = remote_now_ns() + 10000000000ull;
  while (!listening(port)) {
    drain(&server);
    if (has_exited(&server)) {
      while (!drain(&server)) {
      }
      show_output("server", &server);
      finish(&server, 0);
      return 2;
    }
    if (remote_now_ns() > ready_by) {
      finish(&server, 1);
      snprintf(why, (size_t)why_size, "the ucx_perftest server did not listen within 10 s");
      return 1;
    }
    const struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
  }
  start(&client, 0, program, client_argv, perftest->cpus[0]);
  /* A message moves at 10 MB/s or better even on a loaded machine; beyond that the pair hangs. */
  const uint64_t moved = size * (uint64_t)(iterations + warmups) * 2;
  const uint64_t deadline = remote_now_ns() + 60000000000ull + moved * 100;
  int open = 2;
  int failed = 0;
  while (open > 0) {
    if (remote_now_ns() > deadline) {
      snprintf(why, (size_t)why_size, "ucx_perftest %s at %llu bytes did not finish in time",
               test, (unsigned long long)size);
      failed = 1;
      break;
    }
    struct pollfd fds[2] = {{client.fd, POLLIN, 0}, {server.fd, POLLIN, 0}};
    if (poll(fds, 2, 1000) < 0 && errno != EINTR) remote_fail("poll: %s", strerror(errno));
    open = 0;
    if (client.fd >= 0 && (fds[0].revents == 0 || !drain(&client))) ++open;
    if (server.fd >= 0 && (fds[1].revents == 0 || !drain(&server))) ++open;
  }
  finish(&client, failed);
  finish(&server, failed);
  double numbers[8];
  if (!failed && (!succeeded(&client) || !succeeded(&server))) {
    snprintf(why, (size_t)why_size, "ucx_perftest %s at %llu bytes failed (client %s, server %s)",
             test, (unsigned long long)size, succeeded(&client) ? "ok" : "failed",
             succeeded(&server) ? "ok" : "failed");
    failed = 1;
  }
  if (!failed && !parse_final_line(client.output, numbers)) {
    snprintf(why, (size_t)why_size, "ucx_perftest %s printed no line of final numbers", test);
    failed = 1;
  }
  if (failed) {
    show_output("client", &client);
    show_output("server", &server);
    return 1;
  }
  const int latency_test = strstr(test, "lat") != NULL;
  *value = latency_test ? numbers[1] : numbers[5] * 1048576.0;
  return 0;
}

int remote_perftest_run(const remote_perftest* perftest, const char* test, uint64_t size,
                        int iterations, int warmups, double* value, char* why, int why_size) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int port = free_port();
    if (port <= 0) {
      snprintf(why, (size_t)why_size, "no free TCP port for ucx_perftest");
      return 1;
    }
    const int result =
        run_once(perftest, test, size, iterations, warmups, port, value, why, why_size);
    if (result != 2) return result;
  }
  snprintf(why, (size_t)why_size, "the ucx_perftest server did not start (three ports tried)");
  return 1;
}
