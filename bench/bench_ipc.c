/* bench_ipc.c - a tensor from one process to another: through a channel (send the descriptor
 * and the segment's file descriptor, receive, map, read one element, free), against writing the
 * same bytes through a Unix stream socket and reading them on the other side (the copy every
 * other way to move a tensor between processes makes). Both sides run in two processes, the
 * sender a child. Prints a table of microseconds per tensor by size; the shared path should be
 * flat in the size, the copy linear.
 *
 *   bench_ipc            sizes 1 KiB to 1 GiB
 *   bench_ipc --quick    1 KiB and 1 MiB, a few rounds (the smoke test of suite bench) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlbridge/dlbridge.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char* what, const dlb_error* err) {
  fprintf(stderr, "bench_ipc: %s: %s\n", what, err != NULL ? err->message : "failed");
  exit(1);
}

/* Rounds for a size: enough to take about 0.3 s of copying at 4 GB/s, at least 3. */
static int rounds_for(uint64_t bytes, int quick) {
  uint64_t rounds = (uint64_t)1200 * 1024 * 1024 / (bytes > 0 ? bytes : 1);
  if (rounds > 2000) rounds = 2000;
  if (rounds < 3) rounds = 3;
  if (quick && rounds > 20) rounds = 20;
  return (int)rounds;
}

/* Microseconds per tensor through a channel: the child sends `rounds` times the same shareable
 * tensor of `bytes` bytes; the parent receives each, maps it, reads its last element and frees
 * it. */
static double through_channel(const char* path, uint64_t bytes, int rounds) {
  dlb_error err;
  dlb_channel* listener = NULL;
  if (dlb_channel_listen(path, &listener, &err) != DLB_OK) die("listen", &err);
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) {
    dlb_channel* c = NULL;
    DLManagedTensorVersioned* t = NULL;
    const DLDevice cpu = {kDLCPU, 0};
    const DLDataType u8 = {kDLUInt, 8, 1};
    const int64_t n = (int64_t)bytes;
    if (dlb_channel_connect(path, &c, &err) != DLB_OK) _exit(10);
    if (dlb_tensor_allocate_shareable(cpu, u8, 1, &n, NULL, 0, &t, &err) != DLB_OK) _exit(11);
    ((uint8_t*)t->dl_tensor.data)[bytes - 1] = 42;
    for (int i = 0; i < rounds; ++i) {
      if (dlb_channel_send(c, t, 0, &err) != DLB_OK) _exit(12);
    }
    dlb_tensor_free(t);
    dlb_channel_close(c);
    _exit(0);
  }
  dlb_channel* server = NULL;
  if (dlb_channel_accept(listener, &server, &err) != DLB_OK) die("accept", &err);
  double start = 0;
  unsigned sum = 0;
  for (int i = 0; i < rounds; ++i) {
    DLManagedTensorVersioned* t = NULL;
    if (dlb_channel_receive(server, &t, &err) != DLB_OK) die("receive", &err);
    if (i == 0) start = now_us();  /* the first round warms up, and waits for the child */
    sum += ((const uint8_t*)t->dl_tensor.data)[bytes - 1];
    dlb_tensor_free(t);
  }
  const double per = (now_us() - start) / (rounds > 1 ? rounds - 1 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || sum != 42u * (unsigned)rounds) {
    fprintf(stderr, "bench_ipc: the channel's sender failed (status %d, sum %u)\n", status, sum);
    exit(1);
  }
  dlb_channel_close(server);
  dlb_channel_close(listener);
  return per;
}

/* Microseconds per tensor when its bytes are written through a Unix stream socket: the child
 * writes `bytes` bytes `rounds` times; the parent reads each tensor's bytes into its buffer and
 * reads its last element. */
static double through_socket(uint64_t bytes, int rounds) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) die("socketpair", NULL);
  uint8_t* buffer = malloc(bytes);
  if (buffer == NULL) die("malloc", NULL);
  memset(buffer, 0, bytes);
  buffer[bytes - 1] = 42;
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    for (int i = 0; i < rounds; ++i) {
      uint64_t sent = 0;
      while (sent < bytes) {
        const ssize_t n = write(fds[1], buffer + sent, bytes - sent);
        if (n <= 0) _exit(12);
        sent += (uint64_t)n;
      }
    }
    _exit(0);
  }
  close(fds[1]);
  double start = 0;
  unsigned sum = 0;
  for (int i = 0; i < rounds; ++i) {
    uint64_t got = 0;
    while (got < bytes) {
      const ssize_t n = read(fds[0], buffer + got, bytes - got);
      if (n <= 0) die("read", NULL);
      got += (uint64_t)n;
    }
    if (i == 0) start = now_us();
    sum += buffer[bytes - 1];
  }
  const double per = (now_us() - start) / (rounds > 1 ? rounds - 1 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  free(buffer);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || sum != 42u * (unsigned)rounds) {
    fprintf(stderr, "bench_ipc: the socket's writer failed\n");
    exit(1);
  }
  return per;
}

int main(int argc, char** argv) {
  const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  char folder[] = "/tmp/dlbridge-bench-ipc-XXXXXX";
  if (mkdtemp(folder) == NULL) die("mkdtemp", NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/channel.sock", folder);
  static const uint64_t sizes[] = {1u << 10, 64u << 10, 1u << 20, 16u << 20, 256u << 20, 1u << 30};
  static const uint64_t quick_sizes[] = {1u << 10, 1u << 20};
  const uint64_t* list = quick ? quick_sizes : sizes;
  const size_t count = quick ? 2 : sizeof sizes / sizeof sizes[0];
  printf("a tensor from one process to another, microseconds per tensor (the shared path: send +\n"
         "receive + map + read one element + free; the copy: its bytes through a Unix socket)\n");
  printf("| %10s | %12s | %14s | %8s |\n", "size", "shared us", "socket copy us", "copy/shared");
  printf("|%s|%s|%s|%s|\n", "------------", "--------------", "----------------", "-------------");
  for (size_t i = 0; i < count; ++i) {
    const uint64_t bytes = list[i];
    /* The shared path costs the same at every size: the same number of rounds for all. */
    const double shared = through_channel(path, bytes, quick ? 20 : 200);
    const double copied = through_socket(bytes, rounds_for(bytes, quick));
    char size[32];
    if (bytes >= (1u << 30)) snprintf(size, sizeof size, "%llu GiB", (unsigned long long)(bytes >> 30));
    else if (bytes >= (1u << 20)) snprintf(size, sizeof size, "%llu MiB", (unsigned long long)(bytes >> 20));
    else snprintf(size, sizeof size, "%llu KiB", (unsigned long long)(bytes >> 10));
    printf("| %10s | %12.1f | %14.1f | %9.1fx |\n", size, shared, copied, copied / shared);
  }
  rmdir(folder);
  printf("live tensors at exit: %lld\n", (long long)dlb_tensor_live_count());
  return dlb_tensor_live_count() == 0 ? 0 : 1;
}
