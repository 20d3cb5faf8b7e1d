// The Unix-socket channel's byte stream (channel.cc is the channel around it): a tensor's frames
// sent whole with the file descriptors that go along, frames received with the ones that came,
// and what a receive read past its descriptor kept for the next one. A time limit that runs out
// in the middle of a tensor's frames leaves the stream out of step, for good.
#if defined(__linux__)
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "ipc.hpp"

namespace dlb {
namespace ipc {
namespace {

// The time limit ran out after part of a tensor's frames went out or came in: the stream is
// out of step for good.
int lose_place(dlb_channel* channel, int status) {
  if (status == DLB_ERR_TIMEOUT) channel->out_of_step = true;
  return status;
}

}  // namespace

// Waits until `fd` is ready for `events` or the deadline passes (DLB_ERR_TIMEOUT, the message
// naming `what`). Without a limit, returns at once: the call that follows blocks.
int wait_ready(int fd, short events, const Deadline& deadline, const char* what,
               dlb_error* error) {
  if (deadline.unlimited()) return DLB_OK;
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, deadline.remaining_ms());
    if (n > 0) return DLB_OK;  // ready, or an error or hang-up the call itself reports
    if (n == 0) return fail(error, DLB_ERR_TIMEOUT, "%s: the time limit ran out", what);
    if (errno != EINTR) return os_fail(error, errno, DLB_ERR_DEVICE, "poll");
  }
}

// Sends all of `size` bytes, the `nfds` file descriptors `fds` with the first of them.
int send_all(dlb_channel* channel, const void* data, size_t size, const int* fds, int nfds,
             dlb_error* error) {
  if (nfds > kMaxCarriedFds) {  // never, from this library's own sends
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "%d file descriptors for one message, at most %d",
                nfds, kMaxCarriedFds);
  }
  const Deadline deadline(channel->timeout_ns);
  const int flags = MSG_NOSIGNAL | (deadline.unlimited() ? 0 : MSG_DONTWAIT);
  const char* bytes = static_cast<const char*>(data);
  size_t sent = 0;
  while (sent < size) {
    iovec io{const_cast<char*>(bytes + sent), size - sent};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxCarriedFds * sizeof(int))];
    if (sent == 0 && nfds > 0) {
      std::memset(control, 0, sizeof control);
      message.msg_control = control;
      message.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
      cmsghdr* header = CMSG_FIRSTHDR(&message);
      header->cmsg_level = SOL_SOCKET;
      header->cmsg_type = SCM_RIGHTS;
      header->cmsg_len = CMSG_LEN(nfds * sizeof(int));
      std::memcpy(CMSG_DATA(header), fds, nfds * sizeof(int));
    }
    const ssize_t n = sendmsg(channel->fd, &message, flags);
    if (n >= 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      const int status = wait_ready(channel->fd, POLLOUT, deadline, "sending on the channel", error);
      if (status == DLB_OK) continue;
      return sent == 0 ? status : lose_place(channel, status);
    }
    const int status = os_fail(error, errno, DLB_ERR_PEER_CLOSED, "sending on the channel");
    return sent == 0 ? status : lose_place(channel, status);
  }
  return DLB_OK;
}

// Receives into `bytes` until `*have` (what is there already) reaches `least`, asking for no
// more than `most` in all, and the file descriptors that come along into `got`: the rest of
// the frame (a descriptor, or its extension) that starts at `frame`. `deadline` covers all of a
// tensor's frames.
int receive_bytes(dlb_channel* channel, char* bytes, size_t* have, size_t frame, size_t least,
                  size_t most, bool first, const char* what, const Deadline& deadline,
                  Received* got, dlb_error* error) {
  const size_t size = least - frame;
  size_t received = *have - frame;
  constexpr int kMaxFds = 253;  // SCM_MAX_FD: the most one message can carry
  // The wait for a tensor's first byte blocks (up to SO_RCVTIMEO with a positive limit).
  const bool blocking_first = first && channel->timeout_ns > 0;
  while (received < size) {
    const bool blocking = deadline.unlimited() || (blocking_first && received == 0 && got->count == 0);
    const int flags = MSG_CMSG_CLOEXEC | (blocking ? 0 : MSG_DONTWAIT);
    iovec io{bytes + frame + received, most - frame - received};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))];
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(channel->fd, &message, flags);
    const bool started = !first || received > 0 || got->count > 0;
    if (n < 0) {
      if (errno == EINTR) continue;
      int status;
      if ((errno == EAGAIN || errno == EWOULDBLOCK) && blocking) {
        status = fail(error, DLB_ERR_TIMEOUT, "receiving on the channel: the time limit ran out");
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        status = wait_ready(channel->fd, POLLIN, deadline, "receiving on the channel", error);
        if (status == DLB_OK) continue;
      } else {
        status = os_fail(error, errno, DLB_ERR_PEER_CLOSED, "receiving on the channel");
      }
      return started ? lose_place(channel, status) : status;
    }
    for (cmsghdr* h = CMSG_FIRSTHDR(&message); h != nullptr; h = CMSG_NXTHDR(&message, h)) {
      if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int one;
        std::memcpy(&one, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
        if (got->count < kMaxCarriedFds) {
          got->fds[got->count].reset(one);
        } else {
          close(one);
        }
        ++got->count;
      }
    }
    if ((message.msg_flags & MSG_CTRUNC) != 0) got->dropped = true;
    if (n == 0) {
      if (!started) return fail(error, DLB_ERR_PEER_CLOSED, "the peer closed the channel");
      return fail(error, DLB_ERR_PEER_CLOSED,
                  "the peer closed the channel after %zu of the %zu bytes of a %s", received,
                  size, what);
    }
    received += static_cast<size_t>(n);
  }
  *have = frame + received;
  return DLB_OK;
}

// Bytes read past the descriptor a receive consumed (the next tensor's start, read along with a
// one-frame descriptor) wait in the channel for the next receive, with the file descriptors
// that came with them: a descriptor that brings file descriptors ends the kernel's read, so
// any that arrived with bytes past it are the next tensor's.
void keep_carry(dlb_channel* channel, const char* bytes, size_t size, Received* got) {
  std::memcpy(channel->carry, bytes, size);
  channel->carry_size = static_cast<uint32_t>(size);
  for (int i = 0; i < kMaxCarriedFds; ++i) channel->carry_fds[i] = got->fds[i].release();
  channel->carry_fd_count = got->count;
  channel->carry_dropped = got->dropped;
  got->count = 0;
  got->dropped = false;
}

size_t take_carry(dlb_channel* channel, char* bytes, Received* got) {
  const size_t size = channel->carry_size;
  if (size == 0) return 0;
  std::memcpy(bytes, channel->carry, size);
  for (int i = 0; i < kMaxCarriedFds; ++i) {
    got->fds[i].reset(channel->carry_fds[i]);
    channel->carry_fds[i] = -1;
  }
  got->count = channel->carry_fd_count;
  got->dropped = channel->carry_dropped;
  channel->carry_size = 0;
  return size;
}

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
