// Suite ipc, CUDA memory across processes on a real GPU: shareable kDLCUDA memory, sent and
// received across fork with writes seen both ways, READ_ONLY, the cross-process event handshake,
// a copy of memory that is not shareable, the cudaIpcMemHandle fallback, and a receiver killed
// with SIGKILL leaking nothing. Exits 77 (skipped) without a usable GPU, unless
// DLB_REQUIRE_CUDA=1. test_ipc.cc covers the machines without one.
//
// CUDA does not survive fork: this process never starts it. Every CUDA call, the check for a GPU
// included, runs in a forked child; the parent only listens, forks and waits.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "dlbridge/dlbridge.h"
#include "ipc_process.hpp"

namespace {

using ipc_process::child;
using ipc_process::wait_exit;

const DLDataType kF32 = {kDLFloat, 32, 1};
const DLDevice kCpu = {kDLCPU, 0};
const DLDevice kGpu = {kDLCUDA, 0};

// A child reports a failed step on stderr and exits with its line number (1..255).
#define EXPECT(cond)                                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d (pid %d): failed: %s\n", __FILE__, __LINE__,         \
                   static_cast<int>(getpid()), #cond);                                 \
      return __LINE__ % 250 + 1;                                                       \
    }                                                                                  \
  } while (0)
#define EXPECT_OK(call)                                                                \
  do {                                                                                 \
    dlb_error expect_error;                                                            \
    expect_error.message[0] = '\0';                                                    \
    const int expect_status = (call);                                                  \
    if (expect_status != DLB_OK) {                                                     \
      std::fprintf(stderr, "%s:%d (pid %d): %s failed: %d: %s\n", __FILE__, __LINE__,  \
                   static_cast<int>(getpid()), #call, expect_status,                   \
                   expect_error.message);                                              \
      return __LINE__ % 250 + 1;                                                       \
    }                                                                                  \
  } while (0)

int open_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// A listener in a folder of this user's; the children connect and accept on it.
struct Rendezvous {
  std::string dir, socket;
  dlb_channel* listener = nullptr;
  Rendezvous() {
    char templ[] = "/tmp/dlbridge-ipc-cuda-XXXXXX";
    dir = mkdtemp(templ);
    socket = dir + "/s";
    REQUIRE(dlb_channel_listen(socket.c_str(), &listener, nullptr) == DLB_OK);
  }
  ~Rendezvous() {
    dlb_channel_close(listener);
    rmdir(dir.c_str());
  }
};

// One byte through a pipe: the two children's lockstep.
struct Signal {
  int fd[2];
  Signal() { REQUIRE(pipe(fd) == 0); }
  ~Signal() {
    close(fd[0]);
    close(fd[1]);
  }
  bool give() const { return write(fd[1], "x", 1) == 1; }
  bool take() const {
    char byte;
    return read(fd[0], &byte, 1) == 1;
  }
};

// Runs `sender` and `receiver` in two children connected through a channel; both must exit 0.
void exchange(const std::function<int(dlb_channel*)>& sender,
              const std::function<int(dlb_channel*)>& receiver) {
  Rendezvous r;
  const pid_t b = child([&] {
    dlb_channel* c = nullptr;
    if (dlb_channel_accept(r.listener, &c, nullptr) != DLB_OK) return 200;
    const int rc = receiver(c);
    dlb_channel_close(c);
    return rc;
  });
  const pid_t a = child([&] {
    dlb_channel* c = nullptr;
    if (dlb_channel_connect(r.socket.c_str(), &c, nullptr) != DLB_OK) return 201;
    const int rc = sender(c);
    dlb_channel_close(c);
    return rc;
  });
  CHECK(wait_exit(a) == 0);
  CHECK(wait_exit(b) == 0);
}

// Device tensor contents through the public API (a copy to the host).
std::vector<float> contents(const DLManagedTensorVersioned* t) {
  int64_t n = 0;
  dlb_tensor_element_count(&t->dl_tensor, &n, nullptr);
  std::vector<float> v(static_cast<size_t>(n));
  if (dlb_tensor_copy_to_host(t, kF32, v.data(), v.size() * sizeof(float), nullptr) != DLB_OK) v.clear();
  return v;
}

// Writes values into a device tensor through a host tensor, on `stream` (NULL: synchronous).
int fill(DLManagedTensorVersioned* t, const std::vector<float>& values, void* stream,
         DLManagedTensorVersioned** staging) {
  const int64_t n = static_cast<int64_t>(values.size());
  int status = dlb_tensor_allocate(kCpu, kF32, 1, &n, nullptr, 0, staging, nullptr);
  if (status != DLB_OK) return status;
  std::memcpy((*staging)->dl_tensor.data, values.data(), values.size() * sizeof(float));
  return stream == nullptr ? dlb_tensor_copy_into(*staging, t, nullptr)
                           : dlb_tensor_copy_into_async(*staging, t, stream, nullptr);
}

std::vector<float> iota(int n, float start = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("shareable cuda memory: zero-filled device memory of cuda:0, exported as a POSIX fd") {
  CHECK(wait_exit(child([] {
          DLManagedTensorVersioned* t = nullptr;
          const int64_t n = 1000;
          EXPECT_OK(dlb_tensor_allocate_shareable(kGpu, kF32, 1, &n, nullptr, 0, &t, &expect_error));
          EXPECT(dlb_tensor_is_shareable(t) == 1);
          EXPECT(dlb_tensor_shareable_kind(t) == DLB_SHAREABLE_CUDA_FD);
          DLDevice where{};
          EXPECT_OK(dlb_cuda_pointer_device(t->dl_tensor.data, &where, &expect_error));
          EXPECT(where.device_type == kDLCUDA && where.device_id == 0);
          EXPECT(contents(t) == std::vector<float>(1000, 0.0f));
          EXPECT(dlb_tensor_is_exclusive(t) == 1);
          dlb_tensor_free(t);
          return dlb_tensor_live_count() == 0 ? 0 : 2;
        })) == 0);
}

TEST_CASE("a cuda tensor crosses to another process, and writes are seen both ways") {
  Signal received, written;
  exchange(
      [&](dlb_channel* c) {
        DLManagedTensorVersioned *t = nullptr, *staging = nullptr;
        const int64_t n = 4096;
        EXPECT_OK(dlb_tensor_allocate_shareable(kGpu, kF32, 1, &n, nullptr, 0, &t, &expect_error));
        EXPECT_OK(fill(t, iota(4096), nullptr, &staging));
        EXPECT_OK(dlb_channel_send(c, t, 0, &expect_error));
        EXPECT(dlb_tensor_is_exclusive(t) == 0);
        EXPECT(written.take());
        EXPECT(contents(t)[0] == 100.0f);  // the receiver's write, in this process's tensor
        dlb_tensor_free(staging);
        dlb_tensor_free(t);
        return 0;
      },
      [&](dlb_channel* c) {
        DLManagedTensorVersioned *t = nullptr, *one = nullptr, *staging = nullptr;
        EXPECT_OK(dlb_channel_receive(c, &t, &expect_error));
        EXPECT(t->dl_tensor.device.device_type == kDLCUDA && t->dl_tensor.device.device_id == 0);
        EXPECT(dlb_tensor_shareable_kind(t) == DLB_SHAREABLE_CUDA_FD);
        EXPECT(contents(t) == iota(4096));
        const dlb_slice first = {0, 1, 1};
        EXPECT_OK(dlb_tensor_slice(t, 1, &first, &one, &expect_error));
        EXPECT_OK(fill(one, {100.0f}, nullptr, &staging));
        EXPECT(written.give());
        // No event came with a plain send: waiting is a no-op.
        EXPECT_OK(dlb_cuda_wait_received(t, 1, &expect_error));
        for (DLManagedTensorVersioned* x : {one, staging, t}) dlb_tensor_free(x);
        return 0;
      });
}

TEST_CASE("READ_ONLY travels, and the receiver's mapping is read-only") {
  exchange(
      [&](dlb_channel* c) {
        DLManagedTensorVersioned *t = nullptr, *ro = nullptr;
        const int64_t n = 64;
        EXPECT_OK(dlb_tensor_allocate_shareable(kGpu, kF32, 1, &n, nullptr, 0, &t, &expect_error));
        EXPECT_OK(dlb_tensor_share(t, DLPACK_FLAG_BITMASK_READ_ONLY, &ro, &expect_error));
        EXPECT_OK(dlb_channel_send(c, ro, 0, &expect_error));
        DLManagedTensorVersioned* back = nullptr;  // wait for the receiver to finish
        dlb_error err;
        EXPECT(dlb_channel_receive(c, &back, &err) == DLB_ERR_PEER_CLOSED);
        dlb_tensor_free(ro);
        dlb_tensor_free(t);
        return 0;
      },
      [&](dlb_channel* c) {
        DLManagedTensorVersioned *t = nullptr, *staging = nullptr;
        EXPECT_OK(dlb_channel_receive(c, &t, &expect_error));
        EXPECT(dlb_tensor_is_read_only(t) == 1);
        EXPECT(contents(t) == std::vector<float>(64, 0.0f));  // readable
        const int64_t n = 64;
        EXPECT(dlb_tensor_allocate(kCpu, kF32, 1, &n, nullptr, 0, &staging, nullptr) == DLB_OK);
        dlb_error err;
        EXPECT(dlb_tensor_copy_into(staging, t, &err) == DLB_ERR_READ_ONLY);
        dlb_tensor_free(staging);
        dlb_tensor_free(t);
        return 0;
      });
}

namespace {
void CUDART_CB hold_stream(void*) { usleep(300 * 1000); }
}  // namespace

TEST_CASE("the event handshake orders the receiver's stream after the sender's work") {
  Signal waited;
  exchange(
      [&](dlb_channel* c) {
        DLManagedTensorVersioned *t = nullptr, *staging = nullptr;
        const int64_t n = 1 << 20;
        EXPECT_OK(dlb_tensor_allocate_shareable(kGpu, kF32, 1, &n, nullptr, 0, &t, &expect_error));
        cudaStream_t stream = nullptr;
        EXPECT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
        // The stream is held 300 ms before the data is written: a receiver that did not wait
        // would read zeros.
        EXPECT(cudaLaunchHostFunc(stream, hold_stream, nullptr) == cudaSuccess);
        EXPECT_OK(fill(t, iota(1 << 20, 1.0f), stream, &staging));
        EXPECT_OK(dlb_channel_send_cuda(c, t, stream, 0, &expect_error));
        EXPECT(waited.take());  // the event lives with t: keep it until the receiver waited
        EXPECT(cudaStreamSynchronize(stream) == cudaSuccess);
        dlb_tensor_free(staging);
        dlb_tensor_free(t);
        cudaStreamDestroy(stream);
        return 0;
      },
      [&](dlb_channel* c) {
        DLManagedTensorVersioned *t = nullptr, *host = nullptr;
        EXPECT_OK(dlb_channel_receive(c, &t, &expect_error));
        cudaStream_t stream = nullptr;
        EXPECT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
        EXPECT_OK(dlb_cuda_wait_received(t, static_cast<int64_t>(reinterpret_cast<uintptr_t>(stream)),
                                         &expect_error));
        const int64_t n = 1 << 20;
        EXPECT(dlb_tensor_allocate(kCpu, kF32, 1, &n, nullptr, 0, &host, nullptr) == DLB_OK);
        EXPECT_OK(dlb_tensor_copy_into_async(t, host, stream, &expect_error));
        EXPECT(cudaStreamSynchronize(stream) == cudaSuccess);
        EXPECT(waited.give());
        const float* v = static_cast<const float*>(host->dl_tensor.data);
        EXPECT(v[0] == 1.0f && v[(1 << 20) - 1] == static_cast<float>(1 << 20));
        dlb_tensor_free(host);
        dlb_tensor_free(t);
        cudaStreamDestroy(stream);
        return 0;
      });
}

TEST_CASE("memory that is not shareable is copied into shareable memory on its device") {
  exchange(
      [&](dlb_channel* c) {
        DLManagedTensorVersioned *t = nullptr, *staging = nullptr;
        const int64_t n = 300;
        EXPECT_OK(dlb_tensor_allocate(kGpu, kF32, 1, &n, nullptr, 0, &t, &expect_error));
        EXPECT(dlb_tensor_is_shareable(t) == 0);
        EXPECT_OK(fill(t, iota(300, 5.0f), nullptr, &staging));
        dlb_error err;
        EXPECT(dlb_channel_send(c, t, 0, &err) == DLB_ERR_UNSUPPORTED);
        EXPECT_OK(dlb_channel_send_cuda(c, t, nullptr, DLB_SEND_COPY, &expect_error));
        dlb_tensor_free(staging);
        dlb_tensor_free(t);  // the copy lives on in the receiver
        return 0;
      },
      [&](dlb_channel* c) {
        DLManagedTensorVersioned* t = nullptr;
        EXPECT_OK(dlb_channel_receive(c, &t, &expect_error));
        EXPECT((dlb_tensor_flags(t) & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
        EXPECT(t->dl_tensor.device.device_type == kDLCUDA);
        EXPECT(dlb_tensor_is_exclusive(t) == 1);
        EXPECT(contents(t) == iota(300, 5.0f));
        dlb_tensor_free(t);
        return 0;
      });
}

TEST_CASE("the cudaIpcMemHandle fallback: marked on the wire, usable, not sent on") {
  setenv("DLB_CUDA_SHAREABLE", "ipc-handle", 1);  // inherited by both children
  Signal done;
  exchange(
      [&](dlb_channel* c) {
        DLManagedTensorVersioned *t = nullptr, *staging = nullptr;
        const int64_t n = 128;
        EXPECT_OK(dlb_tensor_allocate_shareable(kGpu, kF32, 1, &n, nullptr, 0, &t, &expect_error));
        EXPECT(dlb_tensor_shareable_kind(t) == DLB_SHAREABLE_CUDA_IPC);
        EXPECT_OK(fill(t, iota(128), nullptr, &staging));
        EXPECT_OK(dlb_channel_send(c, t, 0, &expect_error));
        EXPECT(done.take());  // the exporter keeps the memory until the receiver is done
        dlb_tensor_free(staging);
        dlb_tensor_free(t);
        return 0;
      },
      [&](dlb_channel* c) {
        DLManagedTensorVersioned* t = nullptr;
        EXPECT_OK(dlb_channel_receive(c, &t, &expect_error));
        EXPECT(dlb_tensor_shareable_kind(t) == DLB_SHAREABLE_CUDA_IPC);
        EXPECT(dlb_tensor_is_exclusive(t) == 0);
        EXPECT(contents(t) == iota(128));
        dlb_error err;
        EXPECT(dlb_channel_send(c, t, 0, &err) == DLB_ERR_UNSUPPORTED);
        EXPECT(std::string(err.message) ==
               "cuda memory received through a CUDA IPC handle cannot be sent on: only the process "
               "that allocated it can share it");
        dlb_tensor_free(t);
        EXPECT(done.give());
        return 0;
      });
  unsetenv("DLB_CUDA_SHAREABLE");
}

TEST_CASE("a receiver killed with SIGKILL mid-use leaks nothing once the sender releases") {
  Rendezvous r;
  Signal mapped, killed;
  const pid_t receiver = child([&] {
    dlb_channel* c = nullptr;
    DLManagedTensorVersioned* t = nullptr;
    if (dlb_channel_accept(r.listener, &c, nullptr) != DLB_OK) return 10;
    if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 11;
    if (contents(t).empty()) return 12;  // in use
    if (!mapped.give()) return 13;
    pause();  // killed here, holding the import and the mapping
    return 14;
  });
  const pid_t sender = child([&] {
    dlb_channel* c = nullptr;
    EXPECT_OK(dlb_channel_connect(r.socket.c_str(), &c, &expect_error));
    // A first shareable allocation, freed, so that whatever the driver opens once per process
    // is open before the counts are taken.
    DLManagedTensorVersioned* warm = nullptr;
    const int64_t one = 1;
    EXPECT_OK(dlb_tensor_allocate_shareable(kGpu, kF32, 1, &one, nullptr, 0, &warm, &expect_error));
    dlb_tensor_free(warm);
    size_t free_before = 0, total = 0;
    EXPECT(cudaSetDevice(0) == cudaSuccess && cudaFree(nullptr) == cudaSuccess);
    EXPECT(cudaMemGetInfo(&free_before, &total) == cudaSuccess);
    const int fds_before = open_fds();
    DLManagedTensorVersioned* t = nullptr;
    const int64_t n = 64 << 20;  // 256 MiB
    EXPECT_OK(dlb_tensor_allocate_shareable(kGpu, kF32, 1, &n, nullptr, 0, &t, &expect_error));
    EXPECT_OK(dlb_channel_send(c, t, 0, &expect_error));
    EXPECT(killed.take());
    dlb_tensor_free(t);
    dlb_channel_close(c);
    EXPECT(open_fds() == fds_before - 1);  // the channel's socket is gone too
    size_t free_after = 0;
    EXPECT(cudaMemGetInfo(&free_after, &total) == cudaSuccess);
    // The 256 MiB are back, within what the driver keeps for itself.
    EXPECT(free_after + (32u << 20) >= free_before);
    return 0;
  });
  char byte;
  REQUIRE(read(mapped.fd[0], &byte, 1) == 1);
  kill(receiver, SIGKILL);
  CHECK(wait_exit(receiver) == 128 + SIGKILL);
  REQUIRE(killed.give());
  CHECK(wait_exit(sender) == 0);
}

int main(int argc, char** argv) {
  // Whether CUDA can run here, asked in a child: this process must not start CUDA.
  int report[2];
  if (pipe(report) != 0) return 1;
  std::fflush(nullptr);
  const pid_t probe = fork();
  if (probe == 0) {
    dlb_error error;
    const int status = dlb_cuda_is_available(&error);
    if (status != DLB_OK) {
      const ssize_t ignored = write(report[1], error.message, std::strlen(error.message));
      (void)ignored;
    }
    _exit(status == DLB_OK ? 0 : 1);
  }
  close(report[1]);
  char reason[sizeof(dlb_error::message)] = {0};
  const ssize_t length = read(report[0], reason, sizeof reason - 1);
  (void)length;
  close(report[0]);
  int status = 0;
  waitpid(probe, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const char* require = std::getenv("DLB_REQUIRE_CUDA");
    std::printf("CUDA is not usable here: %s\n", reason);
    return require != nullptr && std::strcmp(require, "1") == 0 ? 1 : 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
