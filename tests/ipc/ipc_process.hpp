// Forking and waiting for suite ipc's tests (test_ipc.cc, test_ipc_cuda.cc): the other end of a
// channel runs in a child process. Include after doctest (the fork is REQUIRE'd).
#ifndef DLBRIDGE_TESTS_IPC_PROCESS_HPP_
#define DLBRIDGE_TESTS_IPC_PROCESS_HPP_

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace ipc_process {

// Forks a child running `body`, whose return value is its exit status.
template <class F>
pid_t child(F&& body) {
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  REQUIRE(pid > 0);
  return pid;
}

// The child's exit status, or 128 + the signal that ended it.
inline int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ipc_process

#endif  // DLBRIDGE_TESTS_IPC_PROCESS_HPP_
