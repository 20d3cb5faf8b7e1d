// What a forging sender does to a channel, for suite ipc and fuzz_ipc_receive: a raw socket to
// a listener, a message with any bytes and any file descriptors, and memfds sealed or not.
// Each function returns false (or -1) where a system call fails; the callers check.
#ifndef DLBRIDGE_TESTS_IPC_FORGE_HPP_
#define DLBRIDGE_TESTS_IPC_FORGE_HPP_

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace forge {

// A raw client socket connected to the listener at `path`, or -1.
inline int connect_raw(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

// Sends `size` bytes (at least one) with up to 16 file descriptors; true when all were sent.
inline bool send(int socket_fd, const void* data, size_t size, const std::vector<int>& fds) {
  iovec io{const_cast<void*>(data), size};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(16 * sizeof(int))];
  if (fds.size() > 16) return false;
  if (!fds.empty()) {
    std::memset(control, 0, sizeof control);
    m.msg_control = control;
    m.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(h), fds.data(), fds.size() * sizeof(int));
  }
  return sendmsg(socket_fd, &m, MSG_NOSIGNAL) == static_cast<ssize_t>(size);
}

// A memfd of `size` bytes, sealed against shrinking and growing or not; -1 on failure.
inline int memfd(uint64_t size, bool sealed) {
  const int fd = memfd_create("dlbridge", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0 ||
      (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace forge

#endif  // DLBRIDGE_TESTS_IPC_FORGE_HPP_
