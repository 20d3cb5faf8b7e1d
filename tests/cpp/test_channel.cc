// dlbridge::Listener and dlbridge::Channel (dlbridge/channel.hpp): move-only owners that close in
// their destructor, the core's statuses and messages as dlbridge::Error, time limits as
// std::chrono durations, shareable tensors sent zero-copy, two users (as root), CUDA refusals.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "helpers.hpp"
#include "../ipc/ipc_process.hpp"

using dlbridge::Channel;
using dlbridge::Device;
using dlbridge::DType;
using dlbridge::Listener;
using dlbridge::Tensor;
using ipc_process::child;
using ipc_process::wait_exit;
using namespace std::chrono_literals;

namespace {

static_assert(!std::is_copy_constructible<Listener>::value, "Listener is move-only");
static_assert(!std::is_copy_assignable<Listener>::value, "Listener is move-only");
static_assert(std::is_nothrow_move_constructible<Listener>::value, "");
static_assert(std::is_nothrow_move_assignable<Listener>::value, "");
static_assert(!std::is_copy_constructible<Channel>::value, "Channel is move-only");
static_assert(!std::is_copy_assignable<Channel>::value, "Channel is move-only");
static_assert(std::is_nothrow_move_constructible<Channel>::value, "");
static_assert(std::is_nothrow_move_assignable<Channel>::value, "");

const uint32_t kNobody = 65534;

// A fresh folder of mode 0700 for a socket; removed (with what is left in it) at the end.
struct Folder {
  std::string dir;
  std::string socket;
  Folder() {
    char tmpl[] = "/tmp/dlbridge-cpp-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    socket = dir + "/s";
  }
  ~Folder() {
    unlink(socket.c_str());
    rmdir(dir.c_str());
  }
};

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

// A shareable float32 tensor holding 0, 1, 2, ...
Tensor shareable_iota(const std::vector<int64_t>& shape) {
  Tensor t = Tensor::allocate_shareable(Device::cpu(), DType::float32(), shape);
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  t.copy_from(v);
  return t;
}

// A listener at folder.socket, a channel connected to it, and the accepted end.
struct Pair {
  Listener listener;
  Channel client;
  Channel server;
  explicit Pair(const Folder& folder)
      : listener(Listener::listen(folder.socket)),
        client(Channel::connect(folder.socket)),
        server(listener.accept()) {}
};

// A connection made with a plain socket, not a dlbridge channel: a peer that misbehaves.
int raw_connect(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

// Drops this (child) process to uid and gid 65534; false when that failed.
bool become_nobody() { return setgid(kNobody) == 0 && setuid(kNobody) == 0; }

}  // namespace

TEST_SUITE("cpp.channel") {
  TEST_CASE("Listener and Channel are move-only owners; an empty one throws CLOSED") {
    Folder folder;
    Listener first = Listener::listen(folder.socket);
    CHECK(first);
    CHECK(first.get() != nullptr);
    Listener listener = std::move(first);
    CHECK_FALSE(first);  // NOLINT(bugprone-use-after-move): moved from is empty, by contract
    CHECK(first.get() == nullptr);
    const char* closed = DLB_CHANNEL_CLOSED_MESSAGE;
    CHECK_DLB_ERROR(first.accept(), DLB_ERR_CLOSED, closed);
    CHECK_DLB_ERROR(first.allow_uid(kNobody), DLB_ERR_CLOSED, closed);
    CHECK_DLB_ERROR(first.set_timeout(1ms), DLB_ERR_CLOSED, closed);
    first.shutdown();  // no-ops on an empty owner
    first.close();
    CHECK(exists(folder.socket));  // still the moved-to listener's

    Channel client = Channel::connect(folder.socket);
    Channel server = listener.accept();
    Channel moved(std::move(client));
    CHECK_FALSE(client);  // NOLINT(bugprone-use-after-move)
    Tensor t = shareable_iota({2});
    CHECK_DLB_ERROR(client.send(t), DLB_ERR_CLOSED, closed);
    CHECK_DLB_ERROR(client.send_cuda(t, nullptr), DLB_ERR_CLOSED, closed);
    CHECK_DLB_ERROR(client.receive(), DLB_ERR_CLOSED, closed);
    CHECK_DLB_ERROR(client.peer(), DLB_ERR_CLOSED, closed);
    CHECK_DLB_ERROR(client.set_timeout(std::nullopt), DLB_ERR_CLOSED, closed);
    moved.send(t);
    CHECK(server.receive().to_vector<float>() == std::vector<float>{0, 1});

    // Move assignment closes what the target held: that listener's socket file goes.
    Folder other;
    Listener target = Listener::listen(other.socket);
    CHECK(exists(other.socket));
    target = std::move(listener);
    CHECK_FALSE(exists(other.socket));
    CHECK(exists(folder.socket));
    CHECK_FALSE(listener);  // NOLINT(bugprone-use-after-move)

    // release() and from_raw() hand the raw channel out and back.
    dlb_channel* raw = target.release();
    CHECK_FALSE(target);
    Listener back = Listener::from_raw(raw);
    CHECK(back.get() == raw);
    back.close();
    CHECK_FALSE(back);
    CHECK_FALSE(exists(folder.socket));
    back.close();  // a second close is a no-op

    // An empty Tensor sent is the closed-tensor error every Tensor member gives.
    Tensor empty;
    CHECK_DLB_ERROR(moved.send(empty), DLB_ERR_CLOSED, DLB_CLOSED_MESSAGE);
  }

  TEST_CASE("the destructor closes: a listener's socket file goes, the peer sees PEER_CLOSED") {
    Folder folder;
    {
      Listener listener = Listener::listen(folder.socket);
      CHECK(exists(folder.socket));
    }
    CHECK_FALSE(exists(folder.socket));

    Listener listener = Listener::listen(folder.socket);
    Channel server;
    {
      Channel client = Channel::connect(folder.socket);
      server = listener.accept();
    }  // the client is closed here
    CHECK_DLB_ERROR(server.receive(), DLB_ERR_PEER_CLOSED, "the peer closed the channel");
  }

  TEST_CASE("nothing listening: NO_LISTENER with the path and the system's reason") {
    Folder folder;
    const std::string absent = folder.dir + "/absent.sock";
    CHECK_DLB_ERROR(Channel::connect(absent), DLB_ERR_NO_LISTENER,
                    "nothing listens at '" + absent + "' (No such file or directory)");
    CHECK_DLB_ERROR(Channel::connect_with(absent, dlbridge::kUidSelf, 1s), DLB_ERR_NO_LISTENER,
                    "nothing listens at '" + absent + "' (No such file or directory)");
    // A socket file that nobody accepts on (bound, then closed).
    const int dead = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", folder.socket.c_str());
    REQUIRE(bind(dead, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    close(dead);
    CHECK_DLB_ERROR(Channel::connect(folder.socket), DLB_ERR_NO_LISTENER,
                    "nothing listens at '" + folder.socket + "' (Connection refused)");
  }

  TEST_CASE("a folder others can enter: PERMISSION") {
    Folder folder;
    REQUIRE(chmod(folder.dir.c_str(), 0755) == 0);
    CHECK_DLB_ERROR(Listener::listen(folder.socket), DLB_ERR_PERMISSION,
                    "folder '" + folder.dir +
                        "' can be entered by other users (mode 0755): a channel's socket must "
                        "live in a folder only its user can enter (mode 0700)");
  }

  TEST_CASE("time limits are durations: accept and receive throw TIMEOUT and stay usable") {
    Folder folder;
    Listener listener = Listener::listen(folder.socket);
    listener.set_timeout(50ms);
    CHECK_DLB_ERROR(listener.accept(), DLB_ERR_TIMEOUT,
                    "waiting for a connection: the time limit ran out");
    CHECK_DLB_ERROR(listener.set_timeout(-5ns), DLB_ERR_INVALID_ARGUMENT,
                    "timeout -5 ns is negative: a time limit is 0 ns or more, or none");
    // The listener is still usable, and its limit passes to the channel it accepts.
    Channel client = Channel::connect_with(folder.socket, dlbridge::kUidSelf, 2s);
    Channel server = listener.accept();
    const auto start = std::chrono::steady_clock::now();
    CHECK_DLB_ERROR(server.receive(), DLB_ERR_TIMEOUT,
                    "receiving on the channel: the time limit ran out");
    CHECK(std::chrono::steady_clock::now() - start >= 50ms);
    server.set_timeout(0ns);  // do not wait
    CHECK_DLB_ERROR(server.receive(), DLB_ERR_TIMEOUT,
                    "receiving on the channel: the time limit ran out");
    // Nothing of a tensor had arrived: the channel is still in step.
    server.set_timeout(std::nullopt);
    client.send(shareable_iota({3}));
    CHECK(server.receive().to_vector<float>() == std::vector<float>{0, 1, 2});
    // connect_with refuses a negative limit with the core's message, as set_timeout does.
    const CResult c = c_call([&](dlb_error* e) {
      dlb_channel* out = nullptr;
      const int status = dlb_channel_connect_with(folder.socket.c_str(), DLB_UID_SELF, -5, &out, e);
      dlb_channel_close(out);
      return status;
    });
    CHECK(c.status == DLB_ERR_INVALID_ARGUMENT);
    CHECK_DLB_ERROR(Channel::connect_with(folder.socket, dlbridge::kUidSelf, -5ns), c.status,
                    c.message);
  }

  TEST_CASE("a limit that runs out in the middle of a tensor: TIMEOUT, then PROTOCOL") {
    Folder folder;
    Listener listener = Listener::listen(folder.socket);
    const int peer = raw_connect(folder.socket);
    Channel server = listener.accept();
    const char half[16] = {};
    REQUIRE(write(peer, half, sizeof half) == static_cast<ssize_t>(sizeof half));
    server.set_timeout(100ms);
    CHECK_DLB_ERROR(server.receive(), DLB_ERR_TIMEOUT,
                    "receiving on the channel: the time limit ran out");
    const char* lost =
        "the channel lost its place in the stream when a time limit ran out in the middle of a "
        "tensor: close it";
    CHECK_DLB_ERROR(server.receive(), DLB_ERR_PROTOCOL, lost);
    CHECK_DLB_ERROR(server.send(shareable_iota({2})), DLB_ERR_PROTOCOL, lost);
    close(peer);
  }

  TEST_CASE("a tensor crosses zero-copy through the RAII types, in one process and to a child") {
    LiveCount live;
    Folder folder;
    {
      Pair p(folder);
      const dlbridge::Peer who = p.server.peer();
      CHECK(who.pid == getpid());
      CHECK(who.uid == getuid());

      Tensor x = shareable_iota({2, 3});
      CHECK(x.is_shareable());
      CHECK(x.shareable_kind() == DLB_SHAREABLE_MEMFD);
      p.client.send(x);
      Tensor got = p.server.receive();
      CHECK(got.shape() == std::vector<int64_t>{2, 3});
      CHECK(got.dtype() == DType::float32());
      CHECK(got.is_shareable());
      CHECK(got.shareable_kind() == DLB_SHAREABLE_MEMFD);
      CHECK((got.flags() & DLPACK_FLAG_BITMASK_IS_COPIED) == 0);
      got.view<float>()(1, 2) = 50;  // the same memory: the sender sees the write
      CHECK(x.cview<float>()(1, 2) == 50);
      x.view<float>()(0, 0) = -1;
      CHECK(got.cview<float>()(0, 0) == -1);

      // Memory that is not shareable: refused, or copied when asked.
      Tensor plain = Tensor::from_vector(std::vector<float>{7, 8});
      CHECK_FALSE(plain.is_shareable());
      CHECK(plain.shareable_kind() == DLB_SHAREABLE_NONE);
      CHECK_DLB_ERROR(p.client.send(plain), DLB_ERR_UNSUPPORTED,
                      "the tensor's memory is not shareable: allocate it as shareable memory, or "
                      "send a copy");
      p.client.send(plain, dlbridge::kSendCopy);
      Tensor copy = p.server.receive();
      CHECK((copy.flags() & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
      CHECK(copy.to_vector<float>() == std::vector<float>{7, 8});

      // READ_ONLY travels: the receiver gets no write access.
      p.server.send(x.share(DLPACK_FLAG_BITMASK_READ_ONLY));
      Tensor ro = p.client.receive();
      CHECK(ro.read_only());
      CHECK(ro.cview<float>()(1, 2) == 50);

      // To a child process: it writes through the tensor it received; the parent sees it.
      const pid_t pid = child([&] {
        try {
          Channel c = Channel::connect(folder.socket);
          Tensor t = c.receive();
          t.view<float>()(1, 1) = 42;
          c.send(t);  // done: the parent waits for this
          return 0;
        } catch (const dlbridge::Error& e) {
          std::fprintf(stderr, "child: %s: %s\n", e.status_name(), e.what());
          return 1;
        }
      });
      Channel to_child = p.listener.accept();
      CHECK(to_child.peer().pid == pid);
      to_child.send(x);
      Tensor back = to_child.receive();
      CHECK(wait_exit(pid) == 0);
      CHECK(x.cview<float>()(1, 1) == 42);
      CHECK(back.to_vector<float>() == std::vector<float>{-1, 1, 2, 3, 42, 50});
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("a channel's pool: allocate, send, and the slot comes back when the peer frees") {
    LiveCount live;
    Folder folder;
    {
      Pair p(folder);
      {
        Tensor t = p.client.allocate(DType::float32(), {2, 3});
        CHECK(t.shareable_kind() == DLB_SHAREABLE_MEMFD);
        t.view<float>()(1, 2) = 5;
        p.client.send(t);
        Tensor got = p.server.receive();
        CHECK(got.cview<float>()(1, 2) == 5);
        CHECK_FALSE(got.is_shareable());
        CHECK_DLB_ERROR(p.server.send(got), DLB_ERR_UNSUPPORTED,
                        "the tensor was lent by its sender's pool and goes back to it when "
                        "freed: it cannot be sent on; send a copy");
        CHECK(p.client.pool_stats().lent == 1);
      }
      const dlb_pool_stats stats = p.client.pool_stats();
      CHECK(stats.lent == 0);
      CHECK(stats.returned == 1);
      CHECK(stats.live == 0);
      CHECK(stats.segments == 1);
      CHECK_DLB_ERROR(p.client.allocate(DType::float32(), {2}, {1, 1}), DLB_ERR_INVALID_ARGUMENT,
                      DLB_STRIDES_LENGTH_MESSAGE);
      CHECK_DLB_ERROR(p.client.set_pool_limit(0), DLB_ERR_INVALID_ARGUMENT,
                      "a pool limit of 0 bytes leaves no room");
      CHECK_DLB_ERROR(p.client.allocate(DType::float32(), {2}, {}, 0, Device(kDLCUDA, 0)),
                      DLB_ERR_UNSUPPORTED,
                      "a channel's pool holds cpu memory, not cuda memory: allocate it with "
                      "dlb_tensor_allocate_shareable");
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("shutdown from another thread wakes a blocked receive and accept: CLOSED") {
    Folder folder;
    Pair p(folder);
    std::thread stopper([&] {
      std::this_thread::sleep_for(50ms);
      p.server.shutdown();
      p.listener.shutdown();
    });
    CHECK_DLB_ERROR(p.server.receive(), DLB_ERR_CLOSED, DLB_CHANNEL_CLOSED_MESSAGE);
    CHECK_DLB_ERROR(p.listener.accept(), DLB_ERR_CLOSED, DLB_CHANNEL_CLOSED_MESSAGE);
    stopper.join();
    CHECK_DLB_ERROR(p.server.send(shareable_iota({1})), DLB_ERR_CLOSED,
                    DLB_CHANNEL_CLOSED_MESSAGE);
    CHECK(p.server);  // shut down, not yet closed: the destructor frees it
  }

  TEST_CASE("the channel statuses: catchable by status, named by the core") {
    const int statuses[] = {DLB_ERR_NO_LISTENER, DLB_ERR_PERMISSION, DLB_ERR_PEER_CLOSED,
                            DLB_ERR_PROTOCOL,    DLB_ERR_TIMEOUT,    DLB_ERR_LIMIT};
    const char* names[] = {"DLB_ERR_NO_LISTENER", "DLB_ERR_PERMISSION", "DLB_ERR_PEER_CLOSED",
                           "DLB_ERR_PROTOCOL",    "DLB_ERR_TIMEOUT",    "DLB_ERR_LIMIT"};
    for (int i = 0; i < 6; ++i) {
      CHECK(statuses[i] == 11 + i);
      CHECK(std::string(dlbridge::Error(statuses[i], "").status_name()) == names[i]);
    }
    Folder folder;
    int status = DLB_OK;
    try {
      Channel::connect(folder.dir + "/absent.sock");
    } catch (const dlbridge::Error& e) {
      status = e.status();
    }
    CHECK(status == DLB_ERR_NO_LISTENER);
  }

  TEST_CASE("two users (as root): refused at accept and at connect unless allowed, shared both ways") {
    if (geteuid() != 0) {
      MESSAGE("skipped: running a peer as another user needs root");
      return;
    }
    Folder folder;
    Listener listener = Listener::listen(folder.socket);
    // Past the first defence (a folder nobody else can enter), to reach the second: credentials.
    REQUIRE(chmod(folder.dir.c_str(), 0711) == 0);
    REQUIRE(chmod(folder.socket.c_str(), 0666) == 0);
    listener.set_timeout(10s);  // nothing here may hang
    // A child running as nobody that accepts this root listener, echoes one tensor, and exits
    // when the channel closes (0), or with what went wrong.
    auto connect_as_nobody = [&] {
      return child([&] {
        if (!become_nobody()) return 20;
        try {
          Channel c = Channel::connect_with(folder.socket, 0, 10s);
          Tensor t = c.receive();
          c.send(t);
          c.receive();
          return 21;
        } catch (const dlbridge::Error& e) {
          return e.status() == DLB_ERR_PEER_CLOSED ? 0 : 22;
        }
      });
    };
    pid_t pid = connect_as_nobody();
    CHECK_DLB_ERROR(listener.accept(), DLB_ERR_PERMISSION,
                    "the peer runs as uid 65534, which this channel does not accept (allow that "
                    "uid on the listener)");
    CHECK(wait_exit(pid) == 0);
    // The refused peer did not stop the listener: allow the uid and accept again.
    listener.allow_uid(kNobody);
    pid = connect_as_nobody();
    {
      Channel c = listener.accept();
      CHECK(c.peer().uid == kNobody);
      CHECK(c.peer().pid == pid);
      Tensor x = shareable_iota({4});
      c.send(x);
      Tensor echo = c.receive();
      echo.view<float>()(0) = 9;  // the same memory, through another user's process
      CHECK(x.to_vector<float>() == std::vector<float>{9, 1, 2, 3});
    }
    CHECK(wait_exit(pid) == 0);

    // The other way: a listener running as nobody, in a folder of its own; it allows root.
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    pid = child([&] {
      close(pipe_fds[0]);
      if (!become_nobody()) return 30;
      char dir[] = "/tmp/dlbridge-cpp-nobody-XXXXXX";
      if (mkdtemp(dir) == nullptr) return 31;
      const std::string path = std::string(dir) + "/s";
      int code = 0;
      try {
        Listener l = Listener::listen(path);
        l.allow_uid(0);
        l.set_timeout(10s);
        if (chmod(dir, 0711) != 0 || chmod(path.c_str(), 0666) != 0) return 32;
        const std::string line = path + "\n";
        if (write(pipe_fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
          return 33;
        }
        close(pipe_fds[1]);
        Tensor t = shareable_iota({4});
        // Two connections: the plain connect the other side refuses, then connect_with.
        for (int i = 0; i < 2; ++i) {
          Channel c = l.accept();
          try {
            c.send(t);
            c.receive();
          } catch (const dlbridge::Error& e) {
            if (e.status() != DLB_ERR_PEER_CLOSED) code = 34;
          }
        }
      } catch (const dlbridge::Error& e) {
        std::fprintf(stderr, "listener child: %s: %s\n", e.status_name(), e.what());
        code = 35;
      }
      rmdir(dir);
      return code;
    });
    close(pipe_fds[1]);
    std::string path;
    char ch;
    while (read(pipe_fds[0], &ch, 1) == 1 && ch != '\n') path += ch;
    close(pipe_fds[0]);
    REQUIRE_FALSE(path.empty());
    CHECK_DLB_ERROR(Channel::connect(path), DLB_ERR_PERMISSION,
                    "the listener runs as uid 65534, which this channel does not accept (name "
                    "that uid when connecting)");
    {
      Channel c = Channel::connect_with(path, kNobody, 10s);
      CHECK(c.peer().uid == kNobody);
      CHECK(c.receive().to_vector<float>() == std::vector<float>{0, 1, 2, 3});
    }
    CHECK(wait_exit(pid) == 0);
  }

  TEST_CASE("shareable CUDA memory and the CUDA send and wait: the core's refusals") {
    // What the core says here, without CUDA memory to send: the C++ layer says the same.
    const CResult avail = c_call([](dlb_error* e) { return dlb_cuda_is_available(e); });
    if (avail.status == DLB_OK) {
      MESSAGE("a CUDA device is present: the GPU cases are in suite ipc (ipc_cuda)");
    } else {
      CHECK_DLB_ERROR(Tensor::allocate_shareable(Device::cuda(0), DType::float32(), {4}),
                      avail.status, avail.message);
    }
    CHECK_DLB_ERROR(Tensor::allocate_shareable(Device::cuda_host(), DType::float32(), {4}),
                    DLB_ERR_UNSUPPORTED, "shareable memory on cuda_host is not supported");

    Folder folder;
    Pair p(folder);
    Tensor x = shareable_iota({4});
    const CResult send = c_call([&](dlb_error* e) {
      return dlb_channel_send_cuda(p.client.get(), x.get(), nullptr, 0, e);
    });
    if (send.status != DLB_ERR_UNSUPPORTED) {  // a library built with CUDA
      CHECK(send.status == DLB_ERR_INVALID_ARGUMENT);
      CHECK(send.message == "the cuda send takes cuda tensors, not cpu ones: send it without a stream");
    }
    CHECK_DLB_ERROR(p.client.send_cuda(x, nullptr), send.status, send.message);
    CHECK_DLB_ERROR(p.client.send_cuda(x, nullptr, dlbridge::kSendCopy), send.status,
                    send.message);

    p.client.send(x);
    Tensor got = p.server.receive();
    const CResult wait = c_call([&](dlb_error* e) { return dlb_cuda_wait_received(got.get(), 1, e); });
    if (wait.status != DLB_ERR_UNSUPPORTED) {
      CHECK(wait.status == DLB_ERR_INVALID_ARGUMENT);
      CHECK(wait.message == "the tensor is not cuda memory received from a channel");
    }
    CHECK_DLB_ERROR(got.cuda_wait_received(), wait.status, wait.message);
    CHECK_DLB_ERROR(got.cuda_wait_received(1), wait.status, wait.message);
    CHECK_DLB_ERROR(Tensor().cuda_wait_received(), DLB_ERR_CLOSED, DLB_CLOSED_MESSAGE);
  }
}
