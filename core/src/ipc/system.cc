// What every part of the channel asks of the operating system beyond its own calls: the status
// an errno value stands for, and the clock of a time limit.
#if defined(__linux__)
#include <errno.h>
#include <sys/resource.h>
#include <time.h>

#include <cstring>

#include "ipc.hpp"

namespace dlb {
namespace ipc {

int os_fail(dlb_error* error, int err, int missing, const char* what) {
  switch (err) {
    case EPIPE:
    case ECONNRESET:
    case ENOTCONN:
      return fail(error, DLB_ERR_PEER_CLOSED, "%s failed: the peer closed the channel (%s)", what,
                  std::strerror(err));
    case EACCES:
    case EPERM:
      return fail(error, DLB_ERR_PERMISSION, "%s failed: %s", what, std::strerror(err));
    case EMFILE: {
      rlimit limit{};
      getrlimit(RLIMIT_NOFILE, &limit);
      return fail(error, DLB_ERR_LIMIT,
                  "%s failed: this process is at its limit of %llu open file descriptors "
                  "(RLIMIT_NOFILE)",
                  what, static_cast<unsigned long long>(limit.rlim_cur));
    }
    case ENFILE:
      return fail(error, DLB_ERR_LIMIT,
                  "%s failed: the system is at its limit of open files (fs.file-max)", what);
    case ETOOMANYREFS:
      return fail(error, DLB_ERR_LIMIT,
                  "%s failed: too many file descriptors are in flight on sockets for this user "
                  "(the peer has not received them yet)",
                  what);
    case ENOMEM:
    case ENOBUFS:
      return fail(error, DLB_ERR_OUT_OF_MEMORY, "%s failed: %s", what, std::strerror(err));
    case EAGAIN:
      return fail(error, DLB_ERR_TIMEOUT, "%s failed: the time limit ran out", what);
    case ENOENT:
    case ECONNREFUSED:
      return fail(error, missing, "%s failed: %s", what, std::strerror(err));
    default:
      return fail(error, DLB_ERR_DEVICE, "%s failed: %s", what, std::strerror(err));
  }
}

Deadline::Deadline(int64_t timeout_ns) : unlimited_(timeout_ns == DLB_TIMEOUT_NONE) {
  if (unlimited_) return;
  clock_gettime(CLOCK_MONOTONIC, &end_);
  const int64_t ns = end_.tv_nsec + timeout_ns % 1000000000;
  end_.tv_sec += static_cast<time_t>(timeout_ns / 1000000000 + ns / 1000000000);
  end_.tv_nsec = static_cast<long>(ns % 1000000000);
}

int Deadline::remaining_ms() const {
  if (unlimited_) return -1;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t ns = (static_cast<int64_t>(end_.tv_sec) - now.tv_sec) * 1000000000 +
                     (end_.tv_nsec - now.tv_nsec);
  if (ns <= 0) return 0;
  const int64_t ms = (ns + 999999) / 1000000;
  return ms > 1000000000 ? 1000000000 : static_cast<int>(ms);
}

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
