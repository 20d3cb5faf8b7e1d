// Where a channel's socket lives: a path that fits a Unix socket address, in a folder only the
// listener's user can enter.
#if defined(__linux__)
#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include "ipc.hpp"

namespace dlb {
namespace ipc {

int address_of(const char* path, sockaddr_un* address, dlb_error* error) {
  if (path == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "path is NULL");
  const size_t length = std::strlen(path);
  if (length == 0 || length >= sizeof(address->sun_path)) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "socket path '%.64s' is %zu bytes; a Unix socket path holds 1 to %zu", path,
                length, sizeof(address->sun_path) - 1);
  }
  std::memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  std::memcpy(address->sun_path, path, length + 1);
  return DLB_OK;
}

// The folder of a listener's socket: created 0700 when missing; otherwise it must belong to the
// caller and be closed to everyone else, so that no other user can reach the socket at all.
int check_folder(const char* path, dlb_error* error) {
  char folder[sizeof(sockaddr_un::sun_path)];
  std::snprintf(folder, sizeof folder, "%s", path);
  char* slash = std::strrchr(folder, '/');
  if (slash == nullptr) {
    std::snprintf(folder, sizeof folder, ".");
  } else if (slash == folder) {
    slash[1] = '\0';
  } else {
    *slash = '\0';
  }
  struct stat info {};
  if (stat(folder, &info) != 0) {
    if (errno != ENOENT) return os_fail(error, errno, DLB_ERR_INVALID_ARGUMENT, "stat of the socket's folder");
    if (mkdir(folder, 0700) != 0) {
      return os_fail(error, errno, DLB_ERR_INVALID_ARGUMENT, "mkdir of the socket's folder");
    }
    return DLB_OK;
  }
  if (!S_ISDIR(info.st_mode)) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "'%s' is not a folder", folder);
  }
  if (info.st_uid != geteuid()) {
    return fail(error, DLB_ERR_PERMISSION,
                "folder '%s' belongs to uid %u, not to this process's user (uid %u)", folder,
                static_cast<unsigned>(info.st_uid), static_cast<unsigned>(geteuid()));
  }
  if ((info.st_mode & 0077) != 0) {
    return fail(error, DLB_ERR_PERMISSION,
                "folder '%s' can be entered by other users (mode %04o): a channel's socket "
                "must live in a folder only its user can enter (mode 0700)",
                folder, static_cast<unsigned>(info.st_mode & 07777));
  }
  return DLB_OK;
}

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
