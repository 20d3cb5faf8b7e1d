/* bench_remote_socket.c - the socket copy column: what a program gets from a plain TCP
 * connection over 127.0.0.1 (TCP_NODELAY, as a request/response program sets it). A message is
 * an 8-byte length and the bytes, written with one sendmsg; the receiver reads the length, then
 * the bytes into a buffer it allocated (and touched) once for the largest size, as a program
 * reuses its buffer. A ping-pong sends that buffer back the same way. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench_remote.h"

typedef struct socket_side {
  int listener;
  int fd;
  uint8_t* own;
  uint64_t own_bytes;
  uint8_t* buffer; /* what receives read into */
  uint64_t received_bytes;
} socket_side;

static socket_side* new_side(const remote_plan* plan) {
  socket_side* side = calloc(1, sizeof *side);
  if (side == NULL) remote_fail("out of memory");
  side->listener = side->fd = -1;
  const uint64_t largest = plan->largest > REMOTE_ACK_BYTES ? plan->largest : REMOTE_ACK_BYTES;
  side->buffer = malloc(largest);
  if (side->buffer == NULL) {
    remote_fail("socket copy: out of memory for %llu bytes", (unsigned long long)largest);
  }
  memset(side->buffer, 0, largest);
  return side;
}

static void no_delay(int fd) {
  const int on = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0) {
    remote_fail("socket copy: TCP_NODELAY: %s", strerror(errno));
  }
}

static struct sockaddr_in loopback(int port) {
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_port = htons((uint16_t)port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

static void* listen_at(const remote_plan* plan, int* port) {
  socket_side* side = new_side(plan);
  side->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (side->listener < 0) remote_fail("socket copy: socket: %s", strerror(errno));
  struct sockaddr_in address = loopback(0);
  socklen_t size = sizeof address;
  if (bind(side->listener, (struct sockaddr*)&address, sizeof address) != 0 ||
      listen(side->listener, 1) != 0 ||
      getsockname(side->listener, (struct sockaddr*)&address, &size) != 0) {
    remote_fail("socket copy: listening on 127.0.0.1: %s", strerror(errno));
  }
  *port = ntohs(address.sin_port);
  return side;
}

static void accept_peer(void* state) {
  socket_side* side = state;
  do {
    side->fd = accept4(side->listener, NULL, NULL, SOCK_CLOEXEC);
  } while (side->fd < 0 && errno == EINTR);
  if (side->fd < 0) remote_fail("socket copy: accept: %s", strerror(errno));
  no_delay(side->fd);
  close(side->listener);
  side->listener = -1;
}

static void* connect_to(const remote_plan* plan, int port) {
  socket_side* side = new_side(plan);
  side->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (side->fd < 0) remote_fail("socket copy: socket: %s", strerror(errno));
  const struct sockaddr_in address = loopback(port);
  if (connect(side->fd, (const struct sockaddr*)&address, sizeof address) != 0) {
    remote_fail("socket copy: connecting to 127.0.0.1:%d: %s", port, strerror(errno));
  }
  no_delay(side->fd);
  return side;
}

static void prepare(void* state, uint64_t bytes) {
  socket_side* side = state;
  free(side->own);
  side->own = malloc(bytes);
  if (side->own == NULL) remote_fail("socket copy: out of memory for %llu bytes",
                                     (unsigned long long)bytes);
  memset(side->own, remote_pattern(bytes), bytes);
  side->own_bytes = bytes;
}

/* The length and the bytes in one call where the kernel takes them all, as a program would;
 * `more`: MSG_MORE, more messages follow at once. */
static void send_message(int fd, const uint8_t* bytes, uint64_t count, int more) {
  uint64_t length = count;
  struct iovec parts[2] = {{&length, sizeof length}, {(void*)bytes, count}};
  struct msghdr message;
  memset(&message, 0, sizeof message);
  message.msg_iov = parts;
  message.msg_iovlen = 2;
  while (message.msg_iovlen > 0) {
    ssize_t n = sendmsg(fd, &message, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) remote_fail("socket copy: send: %s", n < 0 ? strerror(errno) : "nothing sent");
    while (message.msg_iovlen > 0 && (size_t)n >= message.msg_iov[0].iov_len) {
      n -= (ssize_t)message.msg_iov[0].iov_len;
      ++message.msg_iov;
      --message.msg_iovlen;
    }
    if (message.msg_iovlen > 0) {
      message.msg_iov[0].iov_base = (char*)message.msg_iov[0].iov_base + n;
      message.msg_iov[0].iov_len -= (size_t)n;
    }
  }
}

static void read_all(int fd, void* bytes, uint64_t count) {
  char* at = bytes;
  while (count > 0) {
    const ssize_t n = read(fd, at, count);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) remote_fail("socket copy: read: %s", n < 0 ? strerror(errno) : "the peer closed");
    at += n;
    count -= (uint64_t)n;
  }
}

static void send_own(void* state, int more) {
  socket_side* side = state;
  send_message(side->fd, side->own, side->own_bytes, more);
}

static void receive(void* state, uint64_t bytes) {
  socket_side* side = state;
  uint64_t length = 0;
  read_all(side->fd, &length, sizeof length);
  if (length != bytes) {
    remote_fail("socket copy: a message of %llu bytes came where %llu were due",
                (unsigned long long)length, (unsigned long long)bytes);
  }
  read_all(side->fd, side->buffer, bytes);
  const uint8_t pattern = remote_pattern(bytes);
  if (side->buffer[0] != pattern || side->buffer[bytes - 1] != pattern) {
    remote_fail("socket copy: a message of %llu bytes does not hold the bytes sent",
                (unsigned long long)bytes);
  }
  side->received_bytes = bytes;
}

static void send_received(void* state) {
  socket_side* side = state;
  send_message(side->fd, side->buffer, side->received_bytes, 0);
  side->received_bytes = 0;
}

static void drop(void* state) { ((socket_side*)state)->received_bytes = 0; }

static void close_side(void* state) {
  socket_side* side = state;
  if (side->fd >= 0) close(side->fd);
  if (side->listener >= 0) close(side->listener);
  free(side->own);
  free(side->buffer);
  free(side);
}

const remote_link remote_socket = {
    "socket copy", listen_at, accept_peer, connect_to, prepare, send_own, receive, send_received,
    drop,          close_side,
};
