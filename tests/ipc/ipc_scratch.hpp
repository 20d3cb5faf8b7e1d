// What suite ipc's tests (test_ipc.cc, test_ipc_pool.cc) need around a channel: a scratch
// folder for its socket, and what this process holds of shared segments.
#ifndef DLBRIDGE_TESTS_IPC_SCRATCH_HPP_
#define DLBRIDGE_TESTS_IPC_SCRATCH_HPP_

#include <dirent.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace ipc_scratch {

// A folder only this user can enter, with a socket path in it; removed at the end.
struct Folder {
  std::string dir;
  std::string socket;
  explicit Folder(const char* name = "ipc") {
    std::string templ = std::string("/tmp/dlbridge-") + name + "-XXXXXX";
    dir = mkdtemp(&templ[0]);
    socket = dir + "/channel.sock";
  }
  ~Folder() {
    unlink(socket.c_str());
    rmdir(dir.c_str());
  }
};

// How /proc names the memfd of a shared segment, and of a pool's return ring.
inline constexpr const char* kSegmentName = "memfd:dlbridge (deleted)";
inline constexpr const char* kRingName = "memfd:dlbridge-ring (deleted)";

// Open file descriptors of this process, and how many of them are shared segments.
struct FdCount {
  int total = 0;
  int segments = 0;
};
inline FdCount count_fds() {
  FdCount c;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    ++c.total;
    char link[256] = {0};
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    if (readlink(path.c_str(), link, sizeof link - 1) > 0 && std::strstr(link, kSegmentName)) {
      ++c.segments;
    }
  }
  closedir(d);
  return c;
}

// Mappings of shared segments in this process (/proc/self/maps), with their permissions; with
// `name` kRingName, those of pools' return rings.
inline std::vector<std::string> segment_mappings(const char* name = kSegmentName) {
  std::vector<std::string> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(name) != std::string::npos) out.push_back(line);
  }
  return out;
}

// Whether this process runs under valgrind, which keeps its own table of descriptors and answers
// setrlimit itself: the kernel, which installs received descriptors, never sees a lowered limit.
inline bool under_valgrind() {
  const char* preload = std::getenv("LD_PRELOAD");
  return preload != nullptr && std::strstr(preload, "vgpreload") != nullptr;
}

// Lowers RLIMIT_NOFILE to `limit` and fills the descriptor table up to it, so that no received
// descriptor can be installed; the caller closes the returned fillers. False when setrlimit fails.
inline bool fill_descriptor_table(rlim_t limit, std::vector<int>* fillers) {
  rlimit current{};
  getrlimit(RLIMIT_NOFILE, &current);
  current.rlim_cur = limit;
  if (setrlimit(RLIMIT_NOFILE, &current) != 0) return false;
  for (int fd; (fd = dup(0)) >= 0;) fillers->push_back(fd);
  return true;
}

}  // namespace ipc_scratch

#endif  // DLBRIDGE_TESTS_IPC_SCRATCH_HPP_
