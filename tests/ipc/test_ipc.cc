// Suite ipc: tensors shared between processes (fork) through channels: zero copy both ways,
// layouts, READ_ONLY mapped read-only, a receiver killed with SIGKILL and a sender that exits
// first leak nothing, forged descriptors get their exact errors with nothing left open, and
// the socket's folder, mode and peer credentials are enforced. CUDA memory where no GPU is
// needed: the refusals without a driver or without CUDA, argument checks, forged CUDA
// descriptors (test_ipc_cuda.cc runs the GPU cases).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <string>
#include <vector>

#include "dlbridge/dlbridge.h"
#include "ipc_forge.hpp"
#include "ipc_process.hpp"
#include "ipc_scratch.hpp"
#include "ipc/wire.hpp"

namespace {

using ipc_process::child;
using ipc_process::wait_exit;
using ipc_scratch::count_fds;
using ipc_scratch::FdCount;
using ipc_scratch::Folder;
using ipc_scratch::segment_mappings;

const DLDevice kCpu = {kDLCPU, 0};
const DLDataType kF32 = {kDLFloat, 32, 1};

std::string message(const dlb_error& e) { return e.message; }

// The inode of the shared segment this process maps at `address` (from /proc/self/maps), or 0:
// what tells this test's segment apart from those of any other dlbridge program on the machine.
unsigned long segment_inode(const void* address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto at = reinterpret_cast<unsigned long long>(address);
  while (std::getline(maps, line)) {
    unsigned long long from = 0, to = 0;
    unsigned long inode = 0;
    if (line.find("memfd:dlbridge") == std::string::npos ||
        std::sscanf(line.c_str(), "%llx-%llx %*s %*s %*s %lu", &from, &to, &inode) != 3) {
      continue;
    }
    if (at >= from && at < to) return inode;
  }
  return 0;
}

// Other processes that still map the segment `inode`, or hold it open (every /proc/PID).
int segment_holders_elsewhere(unsigned long inode) {
  int holders = 0;
  const std::string wanted = " " + std::to_string(inode) + " ";
  DIR* proc = opendir("/proc");
  while (dirent* p = readdir(proc)) {
    const int pid = std::atoi(p->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    bool holds = false;
    std::ifstream maps(std::string("/proc/") + p->d_name + "/maps");
    std::string line;
    while (!holds && std::getline(maps, line)) {
      holds = line.find("memfd:dlbridge") != std::string::npos && line.find(wanted) != std::string::npos;
    }
    const std::string fds = std::string("/proc/") + p->d_name + "/fd";
    if (DIR* d = opendir(fds.c_str())) {
      while (dirent* e = !holds ? readdir(d) : nullptr) {
        struct stat info {};
        holds = e->d_name[0] != '.' && stat((fds + "/" + e->d_name).c_str(), &info) == 0 &&
                info.st_ino == inode && S_ISREG(info.st_mode);
      }
      closedir(d);
    }
    if (holds) ++holders;
  }
  closedir(proc);
  return holders;
}

DLManagedTensorVersioned* shareable_iota(std::vector<int64_t> shape) {
  DLManagedTensorVersioned* t = nullptr;
  dlb_error err;
  REQUIRE(dlb_tensor_allocate_shareable(kCpu, kF32, static_cast<int32_t>(shape.size()), shape.data(),
                                        nullptr, 0, &t, &err) == DLB_OK);
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(t->dl_tensor.data)[i] = static_cast<float>(i);
  return t;
}

std::vector<float> contents(const DLManagedTensorVersioned* t) {
  int64_t n = 0;
  dlb_tensor_element_count(&t->dl_tensor, &n, nullptr);
  std::vector<float> v(static_cast<size_t>(n));
  REQUIRE(dlb_tensor_copy_to_host(t, kF32, v.data(), v.size() * sizeof(float), nullptr) == DLB_OK);
  return v;
}

// A connected pair in this process: the listener's accepted end and the connecting end.
struct Pair {
  Folder folder;
  dlb_channel* listener = nullptr;
  dlb_channel* server = nullptr;
  dlb_channel* client = nullptr;
  Pair() {
    dlb_error err;
    REQUIRE(dlb_channel_listen(folder.socket.c_str(), &listener, &err) == DLB_OK);
    REQUIRE(dlb_channel_connect(folder.socket.c_str(), &client, &err) == DLB_OK);
    REQUIRE(dlb_channel_accept(listener, &server, &err) == DLB_OK);
  }
  ~Pair() {
    dlb_channel_close(client);
    dlb_channel_close(server);
    dlb_channel_close(listener);
  }
};

// True when the test runs as root, which switching to another uid needs; says so otherwise.
bool running_as_root() {
  if (geteuid() == 0) return true;
  MESSAGE("skipped: switching to another uid needs root");
  return false;
}

// A listener that another user can reach: past the first defence (a folder nobody else can
// enter: widened after listening to 0711, the socket to 0666), so that the second, the peer's
// credentials, decides.
struct OpenListener {
  Folder folder;
  dlb_channel* listener = nullptr;
  OpenListener() {
    REQUIRE(dlb_channel_listen(folder.socket.c_str(), &listener, nullptr) == DLB_OK);
    REQUIRE(chmod(folder.dir.c_str(), 0711) == 0);
    REQUIRE(chmod(folder.socket.c_str(), 0666) == 0);
  }
  ~OpenListener() { dlb_channel_close(listener); }
};

int raw_connect(const std::string& path) {
  const int fd = forge::connect_raw(path);
  REQUIRE(fd >= 0);
  return fd;
}

void raw_send(int fd, const void* data, size_t size, const std::vector<int>& fds) {
  REQUIRE(forge::send(fd, data, size, fds));
}

int memfd_of(uint64_t size, bool sealed) {
  const int fd = forge::memfd(size, sealed);
  REQUIRE(fd >= 0);
  return fd;
}

dlb::ipc::Wire wire_for(int64_t n, uint64_t segment_size) {
  dlb::ipc::Wire w{};
  std::memcpy(w.magic, dlb::ipc::kWireMagic, sizeof w.magic);
  w.major = dlb::ipc::kWireMajor;
  w.size = sizeof w;
  w.device_type = kDLCPU;
  w.ndim = 1;
  w.code = kDLFloat;
  w.bits = 32;
  w.lanes = 1;
  w.segment_size = segment_size;
  w.shape[0] = n;
  w.strides[0] = 1;
  return w;
}

}  // namespace

namespace {

// What this build and machine say about CUDA, found without starting CUDA (the tests fork):
// whether a driver can be loaded, and otherwise dlb_cuda_is_available's status and message.
struct CudaHere {
  bool driver = false;
  int status = DLB_OK;
  std::string message;
};
CudaHere cuda_here() {
  CudaHere here;
  if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
    here.driver = true;
    return here;
  }
  dlb_error err;
  here.status = dlb_cuda_is_available(&err);
  here.message = err.message;
  return here;
}
const std::string kWithoutCuda = "dlbridge was built without CUDA support";

// A forged CUDA descriptor: a float32 tensor of `n` elements on cuda:0 in an allocation of
// `segment_size` bytes, memory handle `handle`, and its extension frame right behind it.
struct CudaFrames {
  dlb::ipc::Wire wire;
  dlb::ipc::WireExtension extension;
};
// A forged pool descriptor: float32 [4] in slot 0 of `segment` (4096 bytes), bringing the file
// descriptors `attached` names, and its extension frame right behind it.
struct PoolFrames {
  dlb::ipc::Wire wire;
  dlb::ipc::PoolExtension extension;
};
PoolFrames pool_frames(uint32_t segment, uint32_t attached) {
  PoolFrames f{};
  f.wire = wire_for(4, 4096);
  f.wire.minor = dlb::ipc::kWireMinor;
  f.wire.handle = dlb::ipc::kHandlePool;
  std::memcpy(f.extension.magic, dlb::ipc::kPoolMagic, sizeof f.extension.magic);
  f.extension.segment = segment;
  f.extension.attached = attached;
  return f;
}

CudaFrames cuda_frames(uint32_t handle, int64_t n, uint64_t segment_size) {
  CudaFrames f{};
  f.wire = wire_for(n, segment_size);
  f.wire.minor = dlb::ipc::kWireMinor;
  f.wire.device_type = kDLCUDA;
  f.wire.handle = handle;
  std::memcpy(f.extension.magic, dlb::ipc::kExtensionMagic, sizeof f.extension.magic);
  return f;
}

}  // namespace

namespace {

// Each forged descriptor is refused with its own message, and nothing it carried stays open.
struct Forgery {
  Folder folder;
  dlb_channel* listener = nullptr;
  dlb_channel* server = nullptr;
  int raw = -1;
  FdCount before;
  Forgery() {
    REQUIRE(dlb_channel_listen(folder.socket.c_str(), &listener, nullptr) == DLB_OK);
    raw = raw_connect(folder.socket);
    REQUIRE(dlb_channel_accept(listener, &server, nullptr) == DLB_OK);
    before = count_fds();
  }
  // Forges: sends `frame` with `nfds` fresh memfds of `segment_size` bytes, closed here once
  // sent (the receiver holds its own copies).
  void send(const void* frame, size_t size, int nfds, uint64_t segment_size, bool sealed) {
    std::vector<int> fds;
    for (int i = 0; i < nfds; ++i) fds.push_back(memfd_of(segment_size, sealed));
    raw_send(raw, frame, size, fds);
    for (int fd : fds) close(fd);
  }
  // Receives what was forged and checks its refusal: the status, the exact message, and that
  // nothing it carried is left open or mapped.
  void expect_refused(int status, const std::string& message) {
    std::string text;
    CHECK(receive(&text) == status);
    CHECK(text == message);
    const FdCount after = count_fds();
    CHECK(after.total == before.total);
    CHECK(after.segments == 0);
    CHECK(segment_mappings().empty());
  }
  // Receives what was forged: the status, with *message set; the fds it carried are closed.
  int receive(std::string* text) {
    dlb_error err;
    DLManagedTensorVersioned* t = reinterpret_cast<DLManagedTensorVersioned*>(1);
    const int status = dlb_channel_receive(server, &t, &err);
    CHECK(t == nullptr);
    *text = err.message;
    return status;
  }
  ~Forgery() {
    close(raw);
    dlb_channel_close(server);
    dlb_channel_close(listener);
  }
};
}  // namespace

TEST_SUITE("ipc.exchange") {
  TEST_CASE("a tensor crosses to another process without a copy, and writes are seen both ways") {
    Folder folder;
    dlb_error err;
    dlb_channel* listener = nullptr;
    REQUIRE(dlb_channel_listen(folder.socket.c_str(), &listener, &err) == DLB_OK);
    struct stat info {};
    REQUIRE(stat(folder.socket.c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0600);
    int go[2];
    REQUIRE(pipe(go) == 0);
    const pid_t sender = child([&] {
      dlb_channel* c = nullptr;
      if (dlb_channel_connect(folder.socket.c_str(), &c, nullptr) != DLB_OK) return 10;
      DLManagedTensorVersioned* t = nullptr;
      const int64_t shape[2] = {2, 3};
      if (dlb_tensor_allocate_shareable(kCpu, kF32, 2, shape, nullptr, 0, &t, nullptr) != DLB_OK) return 11;
      float* v = static_cast<float*>(t->dl_tensor.data);
      for (int i = 0; i < 6; ++i) v[i] = static_cast<float>(i);
      if (dlb_channel_send(c, t, 0, nullptr) != DLB_OK) return 12;
      char byte;
      if (read(go[0], &byte, 1) != 1) return 13;  // the receiver wrote element 0
      const int seen = v[0] == 100.0f ? 0 : 14;
      v[5] = 500.0f;  // and now the sender writes
      dlb_tensor_free(t);
      dlb_channel_close(c);
      return seen;
    });
    dlb_channel* server = nullptr;
    REQUIRE(dlb_channel_accept(listener, &server, &err) == DLB_OK);
    int32_t pid = 0;
    uint32_t uid = 1;
    REQUIRE(dlb_channel_peer(server, &pid, &uid, &err) == DLB_OK);
    CHECK(pid == sender);
    CHECK(uid == geteuid());
    DLManagedTensorVersioned* t = nullptr;
    REQUIRE(dlb_channel_receive(server, &t, &err) == DLB_OK);
    CHECK(dlb_tensor_is_shareable(t) == 1);
    CHECK(contents(t) == std::vector<float>{0, 1, 2, 3, 4, 5});
    static_cast<float*>(t->dl_tensor.data)[0] = 100.0f;
    REQUIRE(write(go[1], "x", 1) == 1);
    CHECK(wait_exit(sender) == 0);
    CHECK(static_cast<float*>(t->dl_tensor.data)[5] == 500.0f);  // the sender's write, after it exited
    dlb_tensor_free(t);
    dlb_channel_close(server);
    dlb_channel_close(listener);
    close(go[0]);
    close(go[1]);
    CHECK(access(folder.socket.c_str(), F_OK) != 0);  // the listener removed its socket
    CHECK(count_fds().segments == 0);
    CHECK(segment_mappings().empty());
    CHECK(dlb_tensor_live_count() == 0);
  }

  TEST_CASE("views, strides, offsets and scalars travel as they are") {
    Pair p;
    dlb_error err;
    DLManagedTensorVersioned* base = shareable_iota({3, 4});
    DLManagedTensorVersioned *tr = nullptr, *sl = nullptr, *row = nullptr, *scalar = nullptr;
    REQUIRE(dlb_tensor_transpose(base, &tr, nullptr) == DLB_OK);
    const dlb_slice slices[2] = {{DLB_SLICE_NONE, DLB_SLICE_NONE, -1}, {1, 4, 2}};
    REQUIRE(dlb_tensor_slice(base, 2, slices, &sl, nullptr) == DLB_OK);
    REQUIRE(dlb_tensor_select(tr, 0, 3, &row, nullptr) == DLB_OK);
    REQUIRE(dlb_tensor_select(row, 0, 2, &scalar, nullptr) == DLB_OK);  // base[2][3], 0-d
    for (DLManagedTensorVersioned* t : {tr, sl, row, scalar}) {
      CHECK(dlb_tensor_is_shareable(t) == 1);
      REQUIRE(dlb_channel_send(p.client, t, 0, &err) == DLB_OK);
      DLManagedTensorVersioned* got = nullptr;
      REQUIRE(dlb_channel_receive(p.server, &got, &err) == DLB_OK);
      CHECK(contents(got) == contents(t));
      CHECK(got->dl_tensor.ndim == t->dl_tensor.ndim);
      dlb_tensor_free(got);
    }
    for (DLManagedTensorVersioned* t : {base, tr, sl, row, scalar}) dlb_tensor_free(t);
  }

  TEST_CASE("a received tensor is shareable: it can be sent on") {
    Pair a, b;
    DLManagedTensorVersioned* t = shareable_iota({4});
    DLManagedTensorVersioned *hop = nullptr, *end = nullptr;
    REQUIRE(dlb_channel_send(a.client, t, 0, nullptr) == DLB_OK);
    REQUIRE(dlb_channel_receive(a.server, &hop, nullptr) == DLB_OK);
    REQUIRE(dlb_channel_send(b.client, hop, 0, nullptr) == DLB_OK);
    REQUIRE(dlb_channel_receive(b.server, &end, nullptr) == DLB_OK);
    static_cast<float*>(end->dl_tensor.data)[3] = 42.0f;
    CHECK(static_cast<float*>(t->dl_tensor.data)[3] == 42.0f);  // one segment, three mappings
    for (DLManagedTensorVersioned* x : {t, hop, end}) dlb_tensor_free(x);
    CHECK(count_fds().segments == 0);
  }

  TEST_CASE("READ_ONLY is mapped read-only on the receiving side") {
    Pair p;
    dlb_error err;
    DLManagedTensorVersioned* t = shareable_iota({8});
    DLManagedTensorVersioned* ro = nullptr;
    REQUIRE(dlb_tensor_share(t, DLPACK_FLAG_BITMASK_READ_ONLY, &ro, nullptr) == DLB_OK);
    REQUIRE(dlb_channel_send(p.client, ro, 0, &err) == DLB_OK);
    DLManagedTensorVersioned* got = nullptr;
    REQUIRE(dlb_channel_receive(p.server, &got, &err) == DLB_OK);
    CHECK(dlb_tensor_is_read_only(got) == 1);
    void* data = nullptr;
    int64_t count = 0;
    CHECK(dlb_tensor_host_elements(got, kF32, DLB_ACCESS_WRITE, &data, &count, &err) == DLB_ERR_READ_ONLY);
    // The receiver's mapping itself has no write permission: the last mapping made is r--s.
    bool read_only_mapping = false;
    for (const std::string& line : segment_mappings()) {
      const uintptr_t start = std::strtoull(line.c_str(), nullptr, 16);
      if (start <= reinterpret_cast<uintptr_t>(got->dl_tensor.data) &&
          line.find(" r--s ") != std::string::npos) {
        read_only_mapping = true;
      }
    }
    CHECK(read_only_mapping);
    for (DLManagedTensorVersioned* x : {t, ro, got}) dlb_tensor_free(x);
  }

  TEST_CASE("shared memory is exclusive only until another process may map it") {
    Pair p;
    DLManagedTensorVersioned* t = shareable_iota({4});
    CHECK(dlb_tensor_is_exclusive(t) == 1);  // fresh: this tensor is its only holder
    REQUIRE(dlb_channel_send(p.client, t, 0, nullptr) == DLB_OK);
    CHECK(dlb_tensor_is_exclusive(t) == 0);  // sent: the peer maps it, for as long as it likes
    DLManagedTensorVersioned* got = nullptr;
    REQUIRE(dlb_channel_receive(p.server, &got, nullptr) == DLB_OK);
    CHECK(dlb_tensor_is_exclusive(got) == 0);  // received: the sender still maps it
    // A copy made for the exchange is the receiver's alone.
    DLManagedTensorVersioned* plain = nullptr;
    const int64_t two = 2;
    REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &two, nullptr, 0, &plain, nullptr) == DLB_OK);
    REQUIRE(dlb_channel_send(p.client, plain, DLB_SEND_COPY, nullptr) == DLB_OK);
    DLManagedTensorVersioned* copied = nullptr;
    REQUIRE(dlb_channel_receive(p.server, &copied, nullptr) == DLB_OK);
    CHECK(dlb_tensor_is_exclusive(copied) == 1);
    for (DLManagedTensorVersioned* x : {t, got, plain, copied}) dlb_tensor_free(x);
  }

  TEST_CASE("memory that is not shareable is refused, or copied when asked") {
    Pair p;
    dlb_error err;
    DLManagedTensorVersioned* plain = nullptr;
    const int64_t shape[2] = {2, 2};
    REQUIRE(dlb_tensor_allocate(kCpu, kF32, 2, shape, nullptr, 0, &plain, nullptr) == DLB_OK);
    for (int i = 0; i < 4; ++i) static_cast<float*>(plain->dl_tensor.data)[i] = static_cast<float>(i * 10);
    CHECK(dlb_tensor_is_shareable(plain) == 0);
    CHECK(dlb_channel_send(p.client, plain, 0, &err) == DLB_ERR_UNSUPPORTED);
    CHECK(message(err) ==
          "the tensor's memory is not shareable: allocate it as shareable memory, or send a copy");
    CHECK(dlb_channel_send(p.client, plain, 8, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(message(err) == "unknown send options 0x8");
    DLManagedTensorVersioned* tr = nullptr;
    REQUIRE(dlb_tensor_transpose(plain, &tr, nullptr) == DLB_OK);
    REQUIRE(dlb_channel_send(p.client, tr, DLB_SEND_COPY, &err) == DLB_OK);
    DLManagedTensorVersioned* got = nullptr;
    REQUIRE(dlb_channel_receive(p.server, &got, &err) == DLB_OK);
    CHECK((dlb_tensor_flags(got) & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
    CHECK(contents(got) == std::vector<float>{0, 20, 10, 30});
    for (DLManagedTensorVersioned* x : {plain, tr, got}) dlb_tensor_free(x);
    CHECK(count_fds().segments == 0);
    CHECK(dlb_tensor_live_count() == 0);
  }
}

TEST_SUITE("ipc.lifetime") {
  TEST_CASE("a receiver killed with SIGKILL mid-use leaks nothing once the sender releases") {
    Folder folder;
    dlb_channel* listener = nullptr;
    REQUIRE(dlb_channel_listen(folder.socket.c_str(), &listener, nullptr) == DLB_OK);
    const FdCount before = count_fds();
    int ready[2];
    REQUIRE(pipe(ready) == 0);
    const pid_t receiver = child([&] {
      dlb_channel* c = nullptr;
      DLManagedTensorVersioned* t = nullptr;
      if (dlb_channel_connect(folder.socket.c_str(), &c, nullptr) != DLB_OK) return 10;
      if (dlb_channel_receive(c, &t, nullptr) != DLB_OK) return 11;
      static_cast<float*>(t->dl_tensor.data)[0] = 7.0f;  // in use
      if (write(ready[1], "r", 1) != 1) return 12;
      pause();  // killed here, holding the mapping and the descriptor
      return 13;
    });
    dlb_channel* server = nullptr;
    REQUIRE(dlb_channel_accept(listener, &server, nullptr) == DLB_OK);
    DLManagedTensorVersioned* t = shareable_iota({1 << 20});
    REQUIRE(dlb_channel_send(server, t, 0, nullptr) == DLB_OK);
    char byte;
    REQUIRE(read(ready[0], &byte, 1) == 1);
    CHECK(static_cast<float*>(t->dl_tensor.data)[0] == 7.0f);
    // Only this test's segment is counted: other dlbridge programs may run on the machine.
    const unsigned long inode = segment_inode(t->dl_tensor.data);
    REQUIRE(inode != 0);
    CHECK(segment_holders_elsewhere(inode) == 1);
    kill(receiver, SIGKILL);
    CHECK(wait_exit(receiver) == 128 + SIGKILL);
    dlb_tensor_free(t);
    dlb_channel_close(server);
    dlb_channel_close(listener);
    close(ready[0]);
    close(ready[1]);
    const FdCount after = count_fds();
    CHECK(after.total == before.total - 1);  // the listener's own socket is gone
    CHECK(after.segments == 0);
    CHECK(segment_mappings().empty());
    CHECK(segment_holders_elsewhere(inode) == 0);
  }

  TEST_CASE("a sender that exits first leaves the receiver's tensor valid") {
    Folder folder;
    dlb_channel* listener = nullptr;
    REQUIRE(dlb_channel_listen(folder.socket.c_str(), &listener, nullptr) == DLB_OK);
    const pid_t sender = child([&] {
      dlb_channel* c = nullptr;
      if (dlb_channel_connect(folder.socket.c_str(), &c, nullptr) != DLB_OK) return 10;
      DLManagedTensorVersioned* t = nullptr;
      const int64_t n = 1000;
      if (dlb_tensor_allocate_shareable(kCpu, kF32, 1, &n, nullptr, 0, &t, nullptr) != DLB_OK) return 11;
      for (int i = 0; i < 1000; ++i) static_cast<float*>(t->dl_tensor.data)[i] = static_cast<float>(i);
      if (dlb_channel_send(c, t, 0, nullptr) != DLB_OK) return 12;
      dlb_tensor_free(t);
      dlb_channel_close(c);
      return 0;  // exits before the receiver has even accepted
    });
    CHECK(wait_exit(sender) == 0);
    dlb_channel* server = nullptr;
    REQUIRE(dlb_channel_accept(listener, &server, nullptr) == DLB_OK);
    DLManagedTensorVersioned* t = nullptr;
    dlb_error err;
    REQUIRE(dlb_channel_receive(server, &t, &err) == DLB_OK);
    CHECK(static_cast<float*>(t->dl_tensor.data)[999] == 999.0f);
    // The sender is gone: the next receive says so.
    DLManagedTensorVersioned* none = nullptr;
    CHECK(dlb_channel_receive(server, &none, &err) == DLB_ERR_PEER_CLOSED);
    CHECK(message(err) == "the peer closed the channel");
    dlb_tensor_free(t);
    dlb_channel_close(server);
    dlb_channel_close(listener);
  }
}

TEST_SUITE("ipc.forgery") {

  TEST_CASE("truncated, wrong version, no descriptor, two descriptors") {
    Forgery f;
    std::string text;
    dlb::ipc::Wire w = wire_for(4, 4096);
    raw_send(f.raw, &w, 100, {});
    close(f.raw);
    f.raw = -1;
    CHECK(f.receive(&text) == DLB_ERR_PEER_CLOSED);
    CHECK(text == "the peer closed the channel after 100 of the " + std::to_string(sizeof w) +
                      " bytes of a descriptor");
  }

  TEST_CASE("version, count of descriptors, sizes, seals, spans") {
    struct Case {
      const char* name;
      uint32_t major;
      uint64_t said_size;     // the descriptor's segment size
      uint64_t real_size;     // the memfd's
      bool sealed;
      int nfds;
      int64_t n;              // float32 elements
      int64_t extent0_sign;   // -1 forges a negative extent
      int status;
      std::string message;
    };
    const std::string size = std::to_string(sizeof(dlb::ipc::Wire));
    const Case cases[] = {
        {"another major version", 2, 4096, 4096, true, 1, 4, 1, DLB_ERR_UNSUPPORTED_VERSION,
         "tensor descriptor version 2.0 of " + size + " bytes is not supported (dlbridge reads version 1 of " + size + " bytes)"},
        {"no file descriptor", 1, 4096, 4096, true, 0, 4, 1, DLB_ERR_PROTOCOL,
         "a memfd descriptor must come with exactly one file descriptor; this one came with 0"},
        {"two file descriptors", 1, 4096, 4096, true, 2, 4, 1, DLB_ERR_PROTOCOL,
         "a memfd descriptor must come with exactly one file descriptor; this one came with 2"},
        {"twelve file descriptors", 1, 4096, 4096, true, 12, 4, 1, DLB_ERR_PROTOCOL,
         "a memfd descriptor must come with exactly one file descriptor; this one came with 12"},
        {"an empty segment", 1, 0, 0, true, 1, 0, 1, DLB_ERR_PROTOCOL,
         "the descriptor says its segment holds 0 bytes"},
        {"a smaller file than said", 1, 8192, 4096, true, 1, 4, 1, DLB_ERR_PROTOCOL,
         "the received segment holds 4096 bytes but its descriptor says 8192"},
        {"an unsealed segment", 1, 4096, 4096, false, 1, 4, 1, DLB_ERR_PROTOCOL,
         "the received segment is not sealed against shrinking and growing: its sender could cut "
         "it short under the mapping"},
        {"a span beyond the segment", 1, 4096, 4096, true, 1, 2000, 1, DLB_ERR_PROTOCOL,
         "the tensor's elements reach bytes [0, 8000) of a buffer of 4096 bytes"},
        {"a negative extent", 1, 4096, 4096, true, 1, 4, -1, DLB_ERR_PROTOCOL,
         "shape[0] is -4; extents must not be negative"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.name);
      Forgery f;
      dlb::ipc::Wire w = wire_for(c.n * c.extent0_sign, c.said_size);
      w.major = c.major;
      f.send(&w, sizeof w, c.nfds, c.real_size, c.sealed);
      f.expect_refused(c.status, c.message);
    }
  }

  TEST_CASE("a regular file, and garbage") {
    Forgery f;
    char path[] = "/tmp/dlbridge-ipc-file-XXXXXX";
    const int file = mkstemp(path);
    REQUIRE(ftruncate(file, 4096) == 0);
    unlink(path);
    dlb::ipc::Wire w = wire_for(4, 4096);
    raw_send(f.raw, &w, sizeof w, {file});
    close(file);
    std::string text;
    CHECK(f.receive(&text) == DLB_ERR_PROTOCOL);
    CHECK(text == "the received segment is not sealed against shrinking and growing: its sender "
                  "could cut it short under the mapping");
    std::vector<char> garbage(sizeof w, 'x');
    raw_send(f.raw, garbage.data(), garbage.size(), {});
    CHECK(f.receive(&text) == DLB_ERR_PROTOCOL);
    CHECK(text == "not a dlbridge tensor descriptor (bad magic)");
    CHECK(count_fds().total == f.before.total);
  }

  TEST_CASE("forged cuda descriptors are refused, with nothing left open and the stream in step") {
    const CudaHere here = cuda_here();
    using dlb::ipc::kHandleCudaFd;
    using dlb::ipc::kHandleCudaIpc;
    const std::string size = std::to_string(sizeof(dlb::ipc::Wire));
    struct Case {
      const char* name;
      uint32_t handle;
      int32_t device_type;
      int32_t device_id;
      uint64_t segment_size;
      int64_t n;
      int nfds;
      bool good_magic;
      uint32_t has_event;
      bool needs_no_driver;  // refused only where CUDA cannot map it
      int status;
      std::string message;
    };
    const std::string cannot_map = "received a cuda tensor but cannot map it here: " + here.message;
    // The sender's version is this end's (both are this build): the message names it twice.
    const std::string version =
        std::to_string(dlb::ipc::kWireMajor) + "." + std::to_string(dlb::ipc::kWireMinor);
    const Case cases[] = {
        {"a cuda-fd allocation where CUDA cannot run", kHandleCudaFd, kDLCUDA, 0, 4096, 4, 1, true, 0,
         true, here.status, cannot_map},
        {"a cuda-ipc handle where CUDA cannot run", kHandleCudaIpc, kDLCUDA, 0, 4096, 4, 0, true, 1,
         true, here.status, cannot_map},
        {"a cuda kind describing cpu memory", kHandleCudaFd, kDLCPU, 0, 4096, 4, 1, true, 0, false,
         DLB_ERR_PROTOCOL, "a cuda-fd descriptor describes cuda memory, not cpu"},
        {"a cuda-fd descriptor without its fd", kHandleCudaFd, kDLCUDA, 0, 4096, 4, 0, true, 0, false,
         DLB_ERR_PROTOCOL, "a cuda-fd descriptor must come with exactly one file descriptor; this one came with 0"},
        {"a cuda-fd descriptor with two fds", kHandleCudaFd, kDLCUDA, 0, 4096, 4, 2, true, 0, false,
         DLB_ERR_PROTOCOL, "a cuda-fd descriptor must come with exactly one file descriptor; this one came with 2"},
        {"a cuda-ipc descriptor with an fd", kHandleCudaIpc, kDLCUDA, 0, 4096, 4, 1, true, 0, false,
         DLB_ERR_PROTOCOL, "a cuda-ipc descriptor must come with no file descriptor; this one came with 1"},
        {"an unknown kind of memory", 7, kDLCUDA, 0, 4096, 4, 1, true, 0, false,
         DLB_ERR_UNSUPPORTED_VERSION,
         "tensor descriptor version " + version + " names memory handle kind 7, which this "
         "dlbridge (version " + version + ") does not know"},
        {"an extension with a bad magic", kHandleCudaFd, kDLCUDA, 0, 4096, 4, 1, false, 0, false,
         DLB_ERR_PROTOCOL,
         "a tensor descriptor with memory handle kind 1 must be followed by its extension frame "
         "(bad magic)"},
        {"a negative device", kHandleCudaFd, kDLCUDA, -1, 4096, 4, 1, true, 0, false,
         DLB_ERR_PROTOCOL, "device_id -1 is negative"},
        {"an empty allocation", kHandleCudaFd, kDLCUDA, 0, 0, 0, 1, true, 0, false,
         DLB_ERR_PROTOCOL, "the descriptor says the cuda allocation holds 0 bytes"},
        {"an event field that is neither 0 nor 1", kHandleCudaIpc, kDLCUDA, 0, 4096, 4, 0, true, 2,
         false, DLB_ERR_PROTOCOL,
         "the descriptor extension's event field is 2 and its reserved field 0 (expected 0 or 1, "
         "and 0)"},
        {"a span beyond the allocation", kHandleCudaFd, kDLCUDA, 0, 4096, 2000, 1, true, 0, false,
         DLB_ERR_PROTOCOL, "the tensor's elements reach bytes [0, 8000) of a buffer of 4096 bytes"},
        {"a negative extent", kHandleCudaIpc, kDLCUDA, 0, 4096, -4, 0, true, 0, false,
         DLB_ERR_PROTOCOL, "shape[0] is -4; extents must not be negative"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.name);
      if (c.needs_no_driver && here.driver) {
        MESSAGE("skipped where a driver is installed: " << c.name);
        continue;
      }
      Forgery f;
      CudaFrames frames = cuda_frames(c.handle, c.n, c.segment_size);
      frames.wire.device_type = c.device_type;
      frames.wire.device_id = c.device_id;
      frames.extension.has_event = c.has_event;
      if (!c.good_magic) frames.extension.magic[0] = 'X';
      f.send(&frames, sizeof frames, c.nfds, 4096, true);
      f.expect_refused(c.status, c.message);
      // Both frames were read: the next descriptor on the same connection is received.
      dlb::ipc::Wire next = wire_for(4, 4096);
      f.send(&next, sizeof next, 1, 4096, true);
      DLManagedTensorVersioned* t = nullptr;
      dlb_error err;
      CHECK(dlb_channel_receive(f.server, &t, &err) == DLB_OK);
      dlb_tensor_free(t);
    }
  }

  // A pool's first send brings its release socket and its return ring: a ring without the
  // socket, or a ring that is not a sealed memory segment of the ring's size, is refused, and
  // nothing it carried stays open or mapped.
  TEST_CASE("forged return rings of a pool are refused") {
    auto frames_for = [](uint32_t attached) { return pool_frames(0, attached); };
    using dlb::ipc::kPoolReleaseFd;
    using dlb::ipc::kPoolRingFd;
    using dlb::ipc::kPoolSegmentFd;
    {
      Forgery f;
      const PoolFrames frames = frames_for(kPoolSegmentFd | kPoolRingFd);
      f.send(&frames, sizeof frames, 2, 4096, true);
      f.expect_refused(DLB_ERR_PROTOCOL,
                       "the peer's pool sent its return ring without its release socket");
    }
    const std::string ring_size = std::to_string(sizeof(dlb::ipc::PoolRings));
    const struct {
      const char* name;
      uint64_t ring_bytes;
      bool sealed;
      std::string message;
    } cases[] = {
        {"a ring of another size", 4096, true,
         "the received segment holds 4096 bytes but its descriptor says " + ring_size},
        {"a ring that is not sealed", sizeof(dlb::ipc::PoolRings), false,
         "the received segment is not sealed against shrinking and growing: its sender could "
         "cut it short under the mapping"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.name);
      Forgery f;
      int ends[2];
      REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0);
      const std::vector<int> fds = {memfd_of(4096, true), ends[1],
                                    memfd_of(c.ring_bytes, c.sealed)};
      const PoolFrames frames = frames_for(kPoolSegmentFd | kPoolReleaseFd | kPoolRingFd);
      raw_send(f.raw, &frames, sizeof frames, fds);
      for (int fd : fds) close(fd);
      close(ends[0]);
      f.expect_refused(DLB_ERR_PROTOCOL, c.message);
    }
  }

  // A forged pool that hands over its rings, then writes posts there itself: each wrong post
  // is refused with its message when received, and the stream stays in step.
  TEST_CASE("forged posts on a pool's rings are refused") {
    auto frames_for = pool_frames;
    Forgery f;
    int ends[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0);
    const int rings_fd = memfd_of(sizeof(dlb::ipc::PoolRings), true);
    void* mapped = mmap(nullptr, sizeof(dlb::ipc::PoolRings), PROT_READ | PROT_WRITE, MAP_SHARED,
                        rings_fd, 0);
    REQUIRE(mapped != MAP_FAILED);
    auto* rings = static_cast<dlb::ipc::PoolRings*>(mapped);
    const std::vector<int> fds = {memfd_of(4096, true), ends[1], rings_fd};
    const PoolFrames handover = frames_for(0, dlb::ipc::kPoolSegmentFd |
                                                  dlb::ipc::kPoolReleaseFd |
                                                  dlb::ipc::kPoolRingFd);
    raw_send(f.raw, &handover, sizeof handover, fds);
    for (int fd : fds) close(fd);
    DLManagedTensorVersioned* t = nullptr;
    dlb_error err;
    REQUIRE(dlb_channel_receive(f.server, &t, &err) == DLB_OK);
    dlb_tensor_free(t);
    // Posts, written as the pool writes them.
    auto post = [&](uint32_t kind, const PoolFrames& frames) {
      dlb::ipc::PostEntry entry{};
      entry.kind = kind;
      std::memcpy(entry.head, &frames.wire, sizeof entry.head);
      std::memcpy(entry.shape, frames.wire.shape, sizeof entry.shape);
      std::memcpy(entry.strides, frames.wire.strides, sizeof entry.strides);
      std::memcpy(entry.extension, &frames.extension, sizeof entry.extension);
      const uint64_t tail = rings->post_tail;
      rings->posts[tail % dlb::ipc::kPostEntries] = entry;
      __atomic_store_n(&rings->post_tail, tail + 1, __ATOMIC_SEQ_CST);
    };
    auto expect = [&](int status, const std::string& message) {
      DLManagedTensorVersioned* got = nullptr;
      CHECK(dlb_channel_receive(f.server, &got, &err) == status);
      CHECK(got == nullptr);
      CHECK(std::string(err.message) == message);
    };
    post(7, frames_for(0, 0));
    expect(DLB_ERR_PROTOCOL, "the peer's pool posted an entry of kind 7");
    PoolFrames memfd_kind = frames_for(0, 0);
    memfd_kind.wire.handle = dlb::ipc::kHandleMemfd;
    post(dlb::ipc::kPostTensor, memfd_kind);
    expect(DLB_ERR_PROTOCOL,
           "the peer's pool posted a descriptor of memory kind 0 and rank 1 (a post is a tensor "
           "of the pool, of rank at most 8)");
    post(dlb::ipc::kPostTensor, frames_for(5, 0));
    expect(DLB_ERR_PROTOCOL,
           "the descriptor names segment 5 of the peer's pool, which never arrived");
    post(dlb::ipc::kPostTensor, frames_for(0, dlb::ipc::kPoolSegmentFd));
    expect(DLB_ERR_PROTOCOL, "a pool descriptor that brings 1 file descriptor came with 0");
    // The stream is in step: a good post is received.
    post(dlb::ipc::kPostTensor, frames_for(0, 0));
    REQUIRE(dlb_channel_receive(f.server, &t, &err) == DLB_OK);
    CHECK(t->dl_tensor.shape[0] == 4);
    dlb_tensor_free(t);
    // A tail past what the ring holds loses the order: the channel is out of step.
    __atomic_store_n(&rings->post_tail, rings->post_tail + 1000, __ATOMIC_SEQ_CST);
    expect(DLB_ERR_PROTOCOL,
           "the peer's pool says it posted more than its ring holds (256 entries)");
    munmap(mapped, sizeof(dlb::ipc::PoolRings));
    close(ends[0]);
  }

  TEST_CASE("a cuda descriptor whose extension never comes") {
    Forgery f;
    CudaFrames frames = cuda_frames(dlb::ipc::kHandleCudaFd, 4, 4096);
    const int segment = memfd_of(4096, true);
    raw_send(f.raw, &frames.wire, sizeof frames.wire, {segment});
    close(segment);
    close(f.raw);
    f.raw = -1;
    std::string text;
    CHECK(f.receive(&text) == DLB_ERR_PEER_CLOSED);
    CHECK(text == "the peer closed the channel after 0 of the " +
                      std::to_string(sizeof(dlb::ipc::WireExtension)) +
                      " bytes of a descriptor extension");
    CHECK(count_fds().total == f.before.total - 1);  // the forger's own socket is closed too
    CHECK(count_fds().segments == 0);
  }
}

TEST_SUITE("ipc.before_mapping") {
  // What a receiver refuses is refused before anything is mapped: over a huge sparse segment the
  // same descriptor gets the same message as over a small one, never an out-of-memory status.
  TEST_CASE("a huge sealed sparse segment: a bad dtype or a layout past its end is refused unmapped") {
    const uint64_t huge = uint64_t{1} << 47;
    struct Case {
      const char* name;
      uint8_t bits;
      int64_t n;
      uint64_t byte_offset;
      std::string message;
    };
    const Case cases[] = {
        {"a dtype validation refuses", 33, 4, 0, "dtype float with 33 bits is not a valid DLPack type"},
        {"a layout past the end", 32, 4, huge - 8,
         "the tensor's elements reach bytes [" + std::to_string(huge - 8) + ", " +
             std::to_string(huge + 8) + ") of a buffer of " + std::to_string(huge) + " bytes"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.name);
      Forgery f;
      dlb::ipc::Wire w = wire_for(c.n, huge);
      w.bits = c.bits;
      w.byte_offset = c.byte_offset;
      f.send(&w, sizeof w, 1, huge, true);
      f.expect_refused(DLB_ERR_PROTOCOL, c.message);
    }
    // A valid small tensor at the end of the huge segment: only its pages are mapped.
    Forgery f;
    dlb::ipc::Wire w = wire_for(4, huge);
    w.byte_offset = huge - 16;
    f.send(&w, sizeof w, 1, huge, true);
    DLManagedTensorVersioned* t = nullptr;
    dlb_error err;
    REQUIRE(dlb_channel_receive(f.server, &t, &err) == DLB_OK);
    CHECK(contents(t) == std::vector<float>{0, 0, 0, 0});
    static_cast<float*>(t->dl_tensor.data)[0] = 1;  // writable, and inside the mapping
    uint64_t mapped = 0;
    for (const std::string& line : segment_mappings()) {
      unsigned long long from = 0, to = 0;
      std::sscanf(line.c_str(), "%llx-%llx", &from, &to);
      mapped += to - from;
    }
    CHECK(mapped == static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
    dlb_tensor_free(t);
  }

  TEST_CASE("a segment sealed against writing, or a read-only descriptor, sent writable") {
    {
      Forgery f;
      const int segment = memfd_of(4096, false);
      REQUIRE(fcntl(segment, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) == 0);
      dlb::ipc::Wire w = wire_for(4, 4096);
      raw_send(f.raw, &w, sizeof w, {segment});
      close(segment);
      f.expect_refused(DLB_ERR_PROTOCOL,
                       "the received segment is sealed against writing, but its tensor was sent "
                       "writable (without READ_ONLY)");
      // Sent READ_ONLY, the same segment is received (and mapped read-only).
      const int again = memfd_of(4096, false);
      REQUIRE(fcntl(again, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) == 0);
      w.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
      raw_send(f.raw, &w, sizeof w, {again});
      close(again);
      DLManagedTensorVersioned* t = nullptr;
      dlb_error err;
      REQUIRE(dlb_channel_receive(f.server, &t, &err) == DLB_OK);
      dlb_tensor_free(t);
    }
    {
      Forgery f;
      const int segment = memfd_of(4096, true);
      const std::string self = "/proc/self/fd/" + std::to_string(segment);
      const int read_only = open(self.c_str(), O_RDONLY | O_CLOEXEC);
      REQUIRE(read_only >= 0);
      close(segment);
      dlb::ipc::Wire w = wire_for(4, 4096);
      raw_send(f.raw, &w, sizeof w, {read_only});
      close(read_only);
      f.expect_refused(DLB_ERR_PROTOCOL,
                       "the received segment's file descriptor was opened read-only, but its "
                       "tensor was sent writable (without READ_ONLY)");
    }
  }

  TEST_CASE("a cpu descriptor with a device id other than 0 is refused as import refuses it") {
    Forgery f;
    dlb::ipc::Wire w = wire_for(4, 4096);
    w.device_id = 1;
    f.send(&w, sizeof w, 1, 4096, true);
    f.expect_refused(DLB_ERR_PROTOCOL, "cpu tensors must have device_id 0, not 1");
  }

  TEST_CASE("a receiver out of file descriptors says so, loses only that tensor, and stays in step") {
    if (ipc_scratch::under_valgrind()) {
      MESSAGE("skipped under valgrind: it does not pass RLIMIT_NOFILE on to the kernel");
      return;
    }
    Folder folder;
    dlb_channel* listener = nullptr;
    REQUIRE(dlb_channel_listen(folder.socket.c_str(), &listener, nullptr) == DLB_OK);
    const pid_t receiver = child([&] {
      dlb_channel* c = nullptr;
      if (dlb_channel_connect(folder.socket.c_str(), &c, nullptr) != DLB_OK) return 10;
      // Fill the descriptor table up to a low limit, so that the segment's cannot be installed.
      std::vector<int> filler;
      if (!ipc_scratch::fill_descriptor_table(64, &filler)) return 11;
      DLManagedTensorVersioned* t = nullptr;
      dlb_error e;
      const int status = dlb_channel_receive(c, &t, &e);
      if (status != DLB_ERR_LIMIT) return 12;
      if (std::string(e.message) !=
          "the file descriptor that came with the received tensor was dropped: this process is "
          "at its limit of 64 open file descriptors (RLIMIT_NOFILE); the tensor is lost") {
        return 13;
      }
      for (int fd : filler) close(fd);
      if (dlb_channel_receive(c, &t, &e) != DLB_OK) return 14;  // the next one arrives whole
      const float first = static_cast<float*>(t->dl_tensor.data)[1];
      dlb_tensor_free(t);
      dlb_channel_close(c);
      return first == 1.0f ? 0 : 15;
    });
    dlb_channel* server = nullptr;
    REQUIRE(dlb_channel_accept(listener, &server, nullptr) == DLB_OK);
    DLManagedTensorVersioned* t = shareable_iota({4});
    REQUIRE(dlb_channel_send(server, t, 0, nullptr) == DLB_OK);
    REQUIRE(dlb_channel_send(server, t, 0, nullptr) == DLB_OK);
    CHECK(wait_exit(receiver) == 0);
    dlb_tensor_free(t);
    dlb_channel_close(server);
    dlb_channel_close(listener);
  }
}

TEST_SUITE("ipc.statuses") {
  TEST_CASE("nothing listening: no socket file, or one nobody accepts on") {
    Folder folder;
    dlb_channel* c = reinterpret_cast<dlb_channel*>(1);
    dlb_error err;
    CHECK(dlb_channel_connect(folder.socket.c_str(), &c, &err) == DLB_ERR_NO_LISTENER);
    CHECK(c == nullptr);
    CHECK(message(err) == "nothing listens at '" + folder.socket + "' (No such file or directory)");
    const int dead = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", folder.socket.c_str());
    REQUIRE(bind(dead, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    close(dead);
    CHECK(dlb_channel_connect_with(folder.socket.c_str(), DLB_UID_SELF, 1000000, &c, &err) ==
          DLB_ERR_NO_LISTENER);
    CHECK(message(err) == "nothing listens at '" + folder.socket + "' (Connection refused)");
  }

  TEST_CASE("time limits: accept, receive with nothing sent, receive of half a frame") {
    Pair p;
    dlb_error err;
    CHECK(dlb_channel_set_timeout(p.server, -5, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(message(err) == "timeout -5 ns is negative: a time limit is 0 ns or more, or none");
    dlb_channel* c = nullptr;
    CHECK(dlb_channel_connect_with(p.folder.socket.c_str(), DLB_UID_SELF, -2, &c, &err) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(message(err) == "timeout -2 ns is negative: a time limit is 0 ns or more, or none");
    // accept: nobody comes.
    REQUIRE(dlb_channel_set_timeout(p.listener, 20000000, &err) == DLB_OK);
    CHECK(dlb_channel_accept(p.listener, &c, &err) == DLB_ERR_TIMEOUT);
    CHECK(message(err) == "waiting for a connection: the time limit ran out");
    // receive with nothing sent: the channel stays usable.
    REQUIRE(dlb_channel_set_timeout(p.server, 20000000, &err) == DLB_OK);
    DLManagedTensorVersioned* t = nullptr;
    CHECK(dlb_channel_receive(p.server, &t, &err) == DLB_ERR_TIMEOUT);
    CHECK(message(err) == "receiving on the channel: the time limit ran out");
    DLManagedTensorVersioned* sent = shareable_iota({2});
    REQUIRE(dlb_channel_send(p.client, sent, 0, &err) == DLB_OK);
    REQUIRE(dlb_channel_receive(p.server, &t, &err) == DLB_OK);
    CHECK(contents(t) == std::vector<float>{0, 1});
    dlb_tensor_free(t);
    t = nullptr;
    // 0: do not wait.
    REQUIRE(dlb_channel_set_timeout(p.server, 0, &err) == DLB_OK);
    CHECK(dlb_channel_receive(p.server, &t, &err) == DLB_ERR_TIMEOUT);
    dlb_tensor_free(sent);
  }

  TEST_CASE("a peer that sends half a frame and then nothing: TIMEOUT, then the channel is out of step") {
    Forgery f;
    dlb::ipc::Wire w = wire_for(4, 4096);
    raw_send(f.raw, &w, 16, {});
    dlb_error err;
    REQUIRE(dlb_channel_set_timeout(f.server, 50000000, &err) == DLB_OK);
    std::string text;
    CHECK(f.receive(&text) == DLB_ERR_TIMEOUT);
    CHECK(text == "receiving on the channel: the time limit ran out");
    // The rest arrives late: the stream has lost its place, and the channel says so for good.
    raw_send(f.raw, reinterpret_cast<char*>(&w) + 16, sizeof w - 16, {});
    CHECK(f.receive(&text) == DLB_ERR_PROTOCOL);
    CHECK(text == "the channel lost its place in the stream when a time limit ran out in the "
                  "middle of a tensor: close it");
    DLManagedTensorVersioned* t = shareable_iota({2});
    CHECK(dlb_channel_send(f.server, t, 0, &err) == DLB_ERR_PROTOCOL);
    dlb_tensor_free(t);
  }

  TEST_CASE("a send into a peer that reads nothing runs out of time; a peer gone is PEER_CLOSED") {
    Forgery f;
    dlb_error err;
    REQUIRE(dlb_channel_set_timeout(f.server, 20000000, &err) == DLB_OK);
    DLManagedTensorVersioned* t = shareable_iota({2});
    int status = DLB_OK;
    int sends = 0;
    while (status == DLB_OK && sends < 100000) {
      status = dlb_channel_send(f.server, t, 0, &err);
      ++sends;
    }
    // The socket's buffer filled up (or the system's limit of descriptors in flight was hit).
    CHECK((status == DLB_ERR_TIMEOUT || status == DLB_ERR_LIMIT));
    close(f.raw);
    f.raw = -1;
    Pair p;
    dlb_channel_close(p.server);
    p.server = nullptr;
    status = DLB_OK;
    for (int i = 0; i < 4 && status == DLB_OK; ++i) status = dlb_channel_send(p.client, t, 0, &err);
    CHECK(status == DLB_ERR_PEER_CLOSED);
    CHECK(message(err) == "sending on the channel failed: the peer closed the channel (Broken pipe)");
    dlb_tensor_free(t);
  }

  TEST_CASE("status names") {
    CHECK(std::string(dlb_status_name(DLB_ERR_NO_LISTENER)) == "DLB_ERR_NO_LISTENER");
    CHECK(std::string(dlb_status_name(DLB_ERR_PERMISSION)) == "DLB_ERR_PERMISSION");
    CHECK(std::string(dlb_status_name(DLB_ERR_PEER_CLOSED)) == "DLB_ERR_PEER_CLOSED");
    CHECK(std::string(dlb_status_name(DLB_ERR_PROTOCOL)) == "DLB_ERR_PROTOCOL");
    CHECK(std::string(dlb_status_name(DLB_ERR_TIMEOUT)) == "DLB_ERR_TIMEOUT");
    CHECK(std::string(dlb_status_name(DLB_ERR_LIMIT)) == "DLB_ERR_LIMIT");
    CHECK(std::string(dlb_status_name(17)) == "DLB_ERR_UNKNOWN");
  }
}

TEST_SUITE("ipc.security") {
  TEST_CASE("the socket's folder must be the user's alone") {
    char templ[] = "/tmp/dlbridge-ipc-open-XXXXXX";
    const std::string dir = mkdtemp(templ);
    REQUIRE(chmod(dir.c_str(), 0755) == 0);
    dlb_channel* c = reinterpret_cast<dlb_channel*>(1);
    dlb_error err;
    CHECK(dlb_channel_listen((dir + "/s").c_str(), &c, &err) == DLB_ERR_PERMISSION);
    CHECK(c == nullptr);
    CHECK(message(err) == "folder '" + dir +
                              "' can be entered by other users (mode 0755): a channel's socket "
                              "must live in a folder only its user can enter (mode 0700)");
    // A missing folder is created for the user alone.
    const std::string fresh = dir + "/fresh";
    REQUIRE(chmod(dir.c_str(), 0700) == 0);
    REQUIRE(dlb_channel_listen((fresh + "/s").c_str(), &c, &err) == DLB_OK);
    struct stat info {};
    REQUIRE(stat(fresh.c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0700);
    // A live socket is not taken over; a stale one is.
    dlb_channel* second = nullptr;
    CHECK(dlb_channel_listen((fresh + "/s").c_str(), &second, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(message(err) == "something already listens at '" + fresh + "/s'");
    dlb_channel_close(c);
    // A socket file left by a process that died (bound, never unlinked, nobody listening).
    const int dead = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s/s", fresh.c_str());
    REQUIRE(bind(dead, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    close(dead);
    REQUIRE(dlb_channel_listen((fresh + "/s").c_str(), &c, &err) == DLB_OK);
    dlb_channel_close(c);
    CHECK(dlb_channel_listen("", &c, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(message(err) == "socket path '' is 0 bytes; a Unix socket path holds 1 to 107");
    rmdir(fresh.c_str());
    rmdir(dir.c_str());
  }

  TEST_CASE("two users: refused at accept and at connect unless named, then a tensor both ways") {
    if (!running_as_root()) return;
    OpenListener open;
    Folder& folder = open.folder;
    dlb_channel* listener = open.listener;
    dlb_error err;
    const uid_t nobody = 65534;
    // A child running as nobody: a plain connect refuses the root listener; a connect naming
    // uid 0 is accepted, and then the child receives a tensor, doubles it in place, and sends it
    // back. Exit 0 when everything went as described.
    auto connect_as_nobody = [&](bool name_root) {
      return child([&, name_root] {
        if (setgid(nobody) != 0 || setuid(nobody) != 0) return 20;
        dlb_channel* c = nullptr;
        dlb_error e;
        const int refused = dlb_channel_connect(folder.socket.c_str(), &c, &e);
        if (refused != DLB_ERR_PERMISSION ||
            std::string(e.message) != "the listener runs as uid 0, which this channel does not "
                                      "accept (name that uid when connecting)") {
          return 21;
        }
        if (!name_root) return 0;
        if (dlb_channel_connect_with(folder.socket.c_str(), 0, 5000000000LL, &c, &e) != DLB_OK) return 22;
        DLManagedTensorVersioned* t = nullptr;
        if (dlb_channel_receive(c, &t, &e) != DLB_OK) return 23;
        float* v = static_cast<float*>(t->dl_tensor.data);
        for (int i = 0; i < 4; ++i) v[i] *= 2;
        if (dlb_channel_send(c, t, 0, &e) != DLB_OK) return 24;
        dlb_tensor_free(t);
        DLManagedTensorVersioned* none = nullptr;
        const int end = dlb_channel_receive(c, &none, &e);  // the listener's side closes
        dlb_channel_close(c);
        return end == DLB_ERR_PEER_CLOSED ? 0 : 25;
      });
    };
    // Refused at accept: the plain connect's refusal is the child's own, so the listener sees the
    // refused connection first; then the child's second, named connection is refused too.
    pid_t pid = connect_as_nobody(false);
    dlb_channel* server = nullptr;
    CHECK(dlb_channel_accept(listener, &server, &err) == DLB_ERR_PERMISSION);
    CHECK(server == nullptr);
    CHECK(message(err) == "the peer runs as uid 65534, which this channel does not accept (allow "
                          "that uid on the listener)");
    CHECK(wait_exit(pid) == 0);
    // Allowed: the child's named connection is served, both ways.
    REQUIRE(dlb_channel_allow_uid(listener, nobody, &err) == DLB_OK);
    pid = connect_as_nobody(true);
    REQUIRE(dlb_channel_accept(listener, &server, &err) == DLB_OK);  // its plain connect
    uint32_t uid = 0;
    REQUIRE(dlb_channel_peer(server, nullptr, &uid, &err) == DLB_OK);
    CHECK(uid == nobody);
    dlb_channel_close(server);
    REQUIRE(dlb_channel_accept(listener, &server, &err) == DLB_OK);  // its named connect
    DLManagedTensorVersioned* t = shareable_iota({4});
    REQUIRE(dlb_channel_send(server, t, 0, &err) == DLB_OK);
    DLManagedTensorVersioned* back = nullptr;
    REQUIRE(dlb_channel_receive(server, &back, &err) == DLB_OK);
    CHECK(contents(back) == std::vector<float>{0, 2, 4, 6});
    CHECK(contents(t) == std::vector<float>{0, 2, 4, 6});  // the same memory
    dlb_tensor_free(back);
    dlb_tensor_free(t);
    dlb_channel_close(server);
    CHECK(wait_exit(pid) == 0);
  }

  TEST_CASE("a server loop skips a refused peer and keeps serving") {
    if (!running_as_root()) return;
    OpenListener open;
    Folder& folder = open.folder;
    dlb_channel* listener = open.listener;
    dlb_error err;
    int queued[2];
    REQUIRE(pipe(queued) == 0);
    const pid_t stranger = child([&] {
      if (setgid(65534) != 0 || setuid(65534) != 0) return 20;
      const int fd = forge::connect_raw(folder.socket);
      if (fd < 0 || write(queued[1], "q", 1) != 1) return 21;
      char byte;
      const ssize_t n = read(fd, &byte, 1);  // the listener closes the refused connection
      close(fd);
      return n == 0 ? 0 : 22;
    });
    char byte;
    REQUIRE(read(queued[0], &byte, 1) == 1);  // the stranger is queued first
    close(queued[0]);
    close(queued[1]);
    const pid_t friendly = child([&] {
      dlb_channel* c = nullptr;
      if (dlb_channel_connect(folder.socket.c_str(), &c, nullptr) != DLB_OK) return 10;
      DLManagedTensorVersioned* t = shareable_iota({3});
      const int status = dlb_channel_send(c, t, 0, nullptr);
      dlb_tensor_free(t);
      dlb_channel_close(c);
      return status == DLB_OK ? 0 : 11;
    });
    int served = 0, skipped = 0;
    while (served == 0) {
      dlb_channel* peer = nullptr;
      const int status = dlb_channel_accept(listener, &peer, &err);
      if (status == DLB_ERR_PERMISSION || status == DLB_ERR_PEER_CLOSED ||
          status == DLB_ERR_PROTOCOL || status == DLB_ERR_TIMEOUT) {
        ++skipped;
        continue;
      }
      REQUIRE(status == DLB_OK);
      DLManagedTensorVersioned* t = nullptr;
      REQUIRE(dlb_channel_receive(peer, &t, &err) == DLB_OK);
      CHECK(contents(t) == std::vector<float>{0, 1, 2});
      dlb_tensor_free(t);
      dlb_channel_close(peer);
      ++served;
    }
    CHECK(skipped == 1);
    CHECK(wait_exit(stranger) == 0);
    CHECK(wait_exit(friendly) == 0);
  }

  TEST_CASE("listeners neither send nor receive; a listener has no peer") {
    Pair p;
    dlb_error err;
    DLManagedTensorVersioned* t = shareable_iota({2});
    DLManagedTensorVersioned* got = nullptr;
    CHECK(dlb_channel_send(p.listener, t, 0, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(message(err) == "a listener cannot send: accept a connection");
    CHECK(dlb_channel_receive(p.listener, &got, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(message(err) == "a listener cannot receive: accept a connection");
    CHECK(dlb_channel_peer(p.listener, nullptr, nullptr, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(message(err) == "a listener has no peer");
    dlb_channel* none = nullptr;
    CHECK(dlb_channel_accept(p.client, &none, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(message(err) == "the channel is not a listener");
    dlb_tensor_free(t);
  }

  TEST_CASE("shutdown from another thread wakes a blocked receive and accept: both fail CLOSED") {
    // With a time limit the calls wait in poll(); shutdown wakes them there too.
    for (const bool limited : {false, true}) {
      CAPTURE(limited);
      Pair p;
      if (limited) {
        REQUIRE(dlb_channel_set_timeout(p.server, 60000000000LL, nullptr) == DLB_OK);
        REQUIRE(dlb_channel_set_timeout(p.listener, 60000000000LL, nullptr) == DLB_OK);
      }
      dlb_error recv_err, accept_err;
      int recv_status = DLB_OK, accept_status = DLB_OK;
      DLManagedTensorVersioned* got = nullptr;
      dlb_channel* accepted = nullptr;
      std::thread receiver([&] { recv_status = dlb_channel_receive(p.server, &got, &recv_err); });
      std::thread acceptor([&] { accept_status = dlb_channel_accept(p.listener, &accepted, &accept_err); });
      usleep(50 * 1000);  // both block: nothing was sent, nobody connects (a late start is fine too)
      dlb_channel_shutdown(p.server);
      dlb_channel_shutdown(p.listener);
      receiver.join();
      acceptor.join();
      CHECK(recv_status == DLB_ERR_CLOSED);
      CHECK(message(recv_err) == DLB_CHANNEL_CLOSED_MESSAGE);
      CHECK(got == nullptr);
      CHECK(accept_status == DLB_ERR_CLOSED);
      CHECK(message(accept_err) == DLB_CHANNEL_CLOSED_MESSAGE);
      CHECK(accepted == nullptr);

      // Every later call but close fails the same way; a second shutdown is a no-op.
      dlb_channel_shutdown(p.server);
      dlb_error err;
      DLManagedTensorVersioned* t = shareable_iota({2});
      CHECK(dlb_channel_send(p.server, t, 0, &err) == DLB_ERR_CLOSED);
      CHECK(message(err) == DLB_CHANNEL_CLOSED_MESSAGE);
      CHECK(dlb_channel_peer(p.server, nullptr, nullptr, &err) == DLB_ERR_CLOSED);
      CHECK(dlb_channel_allow_uid(p.listener, 12345, &err) == DLB_ERR_CLOSED);
      CHECK(message(err) == DLB_CHANNEL_CLOSED_MESSAGE);
      // The peer sees the end of the stream.
      CHECK(dlb_channel_receive(p.client, &got, &err) == DLB_ERR_PEER_CLOSED);
      CHECK(message(err) == "the peer closed the channel");
      dlb_channel_shutdown(nullptr);
      dlb_tensor_free(t);
    }
  }
}

TEST_SUITE("ipc.cuda_without_gpu") {
  TEST_CASE("shareable cuda memory without a driver, or without CUDA, is refused with the reason") {
    const CudaHere here = cuda_here();
    if (here.driver) {
      MESSAGE("skipped: an NVIDIA driver is installed (test_ipc_cuda covers that machine)");
      return;
    }
    if (here.status == DLB_ERR_UNSUPPORTED) {
      CHECK(here.message == kWithoutCuda);
    } else {
      CHECK(here.status == DLB_ERR_DEVICE_UNAVAILABLE);
      CHECK(here.message == "no CUDA driver found");
    }
    dlb_error err;
    DLManagedTensorVersioned* t = reinterpret_cast<DLManagedTensorVersioned*>(1);
    const int64_t n = 16;
    CHECK(dlb_tensor_allocate_shareable(DLDevice{kDLCUDA, 0}, kF32, 1, &n, nullptr, 0, &t, &err) ==
          here.status);
    CHECK(message(err) == here.message);
    CHECK(t == nullptr);
    // Pinned and managed memory are not shareable in any build.
    CHECK(dlb_tensor_allocate_shareable(DLDevice{kDLCUDAHost, 0}, kF32, 1, &n, nullptr, 0, &t,
                                        &err) == DLB_ERR_UNSUPPORTED);
    CHECK(message(err) == "shareable memory on cuda_host is not supported");
    CHECK(count_fds().segments == 0);
    CHECK(dlb_tensor_live_count() == 0);
  }

  TEST_CASE("dlb_channel_send_cuda, dlb_cuda_wait_received and dlb_tensor_shareable_kind refuse what they cannot take") {
    const CudaHere here = cuda_here();
    Pair p;
    dlb_error err;
    DLManagedTensorVersioned* t = shareable_iota({4});
    CHECK(dlb_tensor_shareable_kind(t) == DLB_SHAREABLE_MEMFD);
    CHECK(dlb_tensor_shareable_kind(nullptr) == DLB_SHAREABLE_NONE);
    DLManagedTensorVersioned* plain = nullptr;
    const int64_t two = 2;
    REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &two, nullptr, 0, &plain, nullptr) == DLB_OK);
    CHECK(dlb_tensor_shareable_kind(plain) == DLB_SHAREABLE_NONE);
    REQUIRE(dlb_channel_send(p.client, t, 0, &err) == DLB_OK);
    DLManagedTensorVersioned* got = nullptr;
    REQUIRE(dlb_channel_receive(p.server, &got, &err) == DLB_OK);
    CHECK(dlb_tensor_shareable_kind(got) == DLB_SHAREABLE_MEMFD);

    struct Case {
      const char* name;
      int status;
      std::string message;
      int (*call)(Pair&, DLManagedTensorVersioned*, DLManagedTensorVersioned*, dlb_error*);
    };
    const std::string invalid_stream0 =
        "consumer stream 0 is ambiguous and not allowed for CUDA: pass 1 for the legacy default "
        "stream or 2 for the per-thread default stream";
    const std::string not_received = "the tensor is not cuda memory received from a channel";
    const Case cases[] = {
        {"send: NULL channel", DLB_ERR_INVALID_ARGUMENT, "channel is NULL",
         [](Pair&, DLManagedTensorVersioned* x, DLManagedTensorVersioned*, dlb_error* e) {
           return dlb_channel_send_cuda(nullptr, x, nullptr, 0, e);
         }},
        {"send: NULL tensor", DLB_ERR_INVALID_ARGUMENT, "tensor is NULL",
         [](Pair& q, DLManagedTensorVersioned*, DLManagedTensorVersioned*, dlb_error* e) {
           return dlb_channel_send_cuda(q.client, nullptr, nullptr, 0, e);
         }},
        {"send: a listener", DLB_ERR_INVALID_ARGUMENT, "a listener cannot send: accept a connection",
         [](Pair& q, DLManagedTensorVersioned* x, DLManagedTensorVersioned*, dlb_error* e) {
           return dlb_channel_send_cuda(q.listener, x, nullptr, 0, e);
         }},
        {"send: unknown options", DLB_ERR_INVALID_ARGUMENT, "unknown send options 0x8",
         [](Pair& q, DLManagedTensorVersioned* x, DLManagedTensorVersioned*, dlb_error* e) {
           return dlb_channel_send_cuda(q.client, x, nullptr, 8, e);
         }},
        {"send: a cpu tensor", DLB_ERR_INVALID_ARGUMENT,
         "the cuda send takes cuda tensors, not cpu ones: send it without a stream",
         [](Pair& q, DLManagedTensorVersioned* x, DLManagedTensorVersioned*, dlb_error* e) {
           return dlb_channel_send_cuda(q.client, x, nullptr, DLB_SEND_COPY, e);
         }},
        {"wait: NULL tensor", DLB_ERR_INVALID_ARGUMENT, "tensor is NULL",
         [](Pair&, DLManagedTensorVersioned*, DLManagedTensorVersioned*, dlb_error* e) {
           return dlb_cuda_wait_received(nullptr, 1, e);
         }},
        {"wait: stream 0", DLB_ERR_INVALID_ARGUMENT, invalid_stream0,
         [](Pair&, DLManagedTensorVersioned*, DLManagedTensorVersioned* r, dlb_error* e) {
           return dlb_cuda_wait_received(r, 0, e);
         }},
        {"wait: stream -7", DLB_ERR_INVALID_ARGUMENT, "consumer stream -7 is not a valid CUDA stream",
         [](Pair&, DLManagedTensorVersioned*, DLManagedTensorVersioned* r, dlb_error* e) {
           return dlb_cuda_wait_received(r, -7, e);
         }},
        {"wait: received cpu memory", DLB_ERR_INVALID_ARGUMENT, not_received,
         [](Pair&, DLManagedTensorVersioned*, DLManagedTensorVersioned* r, dlb_error* e) {
           return dlb_cuda_wait_received(r, 1, e);
         }},
        {"wait: received cpu memory, no synchronisation asked", DLB_ERR_INVALID_ARGUMENT, not_received,
         [](Pair&, DLManagedTensorVersioned*, DLManagedTensorVersioned* r, dlb_error* e) {
           return dlb_cuda_wait_received(r, -1, e);
         }},
        {"wait: memory that was never sent", DLB_ERR_INVALID_ARGUMENT, not_received,
         [](Pair&, DLManagedTensorVersioned* x, DLManagedTensorVersioned*, dlb_error* e) {
           return dlb_cuda_wait_received(x, DLB_CUDA_STREAM_NONE, e);
         }},
    };
    for (const Case& c : cases) {
      CAPTURE(c.name);
      std::memset(err.message, 'x', sizeof err.message - 1);
      err.message[sizeof err.message - 1] = '\0';
      const int status = c.call(p, t, got, &err);
      if (here.status == DLB_ERR_UNSUPPORTED) {  // built without CUDA: both refuse everything
        CHECK(status == DLB_ERR_UNSUPPORTED);
        CHECK(message(err) == kWithoutCuda);
      } else {
        CHECK(status == c.status);
        CHECK(message(err) == c.message);
      }
    }
    for (DLManagedTensorVersioned* x : {t, plain, got}) dlb_tensor_free(x);
    CHECK(count_fds().segments == 0);
  }
}
