// Suite remote: channels across machines (core/src/ipc/remote.cc), run on one machine over UCX's
// TCP transport ("tcp://127.0.0.1") and its own choice of transports ("ucx://": TCP here too,
// since UCX 1.13 leaves shared memory out for endpoints that handle a peer's failure). Most
// cases put both ends in this process on two threads (each end has its own UCP context, as two
// processes would); the fault cases run the other end as a process
// (remote_sender) and kill it. A peer that forges what it sends is remote_raw_peer.hpp, on UCX
// directly. Exits 77 (skipped) with the reason when UCX or libcrypto is not installed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <dirent.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dlbridge/dlbridge.h"
#include "doctest/doctest.h"
#include "ipc/remote_internal.hpp"  // kMessageBytes
#include "ipc/wire.hpp"
#include "remote_raw_peer.hpp"

extern char** environ;

namespace {

const std::vector<unsigned char> kKey = {
    0x6b, 0x65, 0x79, 0x2d, 0x6f, 0x66, 0x2d, 0x74, 0x68, 0x65, 0x2d, 0x72, 0x65, 0x6d, 0x6f, 0x74,
    0x65, 0x2d, 0x73, 0x75, 0x69, 0x74, 0x65, 0x2d, 0x33, 0x32, 0x2d, 0x62, 0x79, 0x74, 0x65, 0x73};
const std::vector<unsigned char> kOtherKey(32, 0x42);

std::string hex(const std::vector<unsigned char>& bytes) {
  std::string out;
  char digits[3];
  for (unsigned char b : bytes) {
    std::snprintf(digits, sizeof digits, "%02x", b);
    out += digits;
  }
  return out;
}

// Every channel a test makes gives up on a wait after this long, so that a case whose peer
// failed ends with a failed check instead of holding the suite until Meson's time limit. A
// case that tests time limits sets its own.
constexpr int64_t kNoHangNs = 60 * 1000000000LL;

struct Options {
  dlb_channel_options* handle = nullptr;
  explicit Options(const std::vector<unsigned char>* key = &kKey) {
    dlb_error e;
    REQUIRE(dlb_channel_options_create(&handle, &e) == DLB_OK);
    REQUIRE(dlb_channel_options_set_timeout(handle, kNoHangNs, &e) == DLB_OK);
    if (key != nullptr) REQUIRE(dlb_channel_options_set_key(handle, key->data(), key->size(), &e) == DLB_OK);
  }
  ~Options() { dlb_channel_options_free(handle); }
  Options(const Options&) = delete;
  Options& operator=(const Options&) = delete;
};

struct Channel {
  dlb_channel* handle = nullptr;
  ~Channel() { dlb_channel_close(handle); }
};

struct Tensor {
  DLManagedTensorVersioned* handle = nullptr;
  ~Tensor() { dlb_tensor_free(handle); }
};

const DLDataType kF32{kDLFloat, 32, 1};
const DLDevice kCpu{kDLCPU, 0};

std::string address(const char* scheme, int port) {
  return std::string(scheme) + "://127.0.0.1:" + std::to_string(port);
}

// A listener at SCHEME://127.0.0.1:0 with `options`.
int listen(const char* scheme, const Options& options, Channel* out) {
  dlb_error e;
  const int status =
      dlb_channel_listen_with_options(address(scheme, 0).c_str(), options.handle, &out->handle, &e);
  if (status != DLB_OK) MESSAGE(e.message);
  return status;
}

// Two connected ends: `server` accepted on `listener`, `client` connected from another thread.
struct Pair {
  Channel listener, server, client;
  int accept_status = -1, connect_status = -1;
  dlb_error accept_error{}, connect_error{};
};

void connect_pair(const char* scheme, const Options& server_options,
                  const Options& client_options, Pair* pair) {
  REQUIRE(listen(scheme, server_options, &pair->listener) == DLB_OK);
  const int port = dlb_channel_port(pair->listener.handle);
  REQUIRE(port > 0);
  std::thread connector([&] {
    pair->connect_status = dlb_channel_connect_with_options(
        address(scheme, port).c_str(), client_options.handle, &pair->client.handle,
        &pair->connect_error);
  });
  pair->accept_status =
      dlb_channel_accept(pair->listener.handle, &pair->server.handle, &pair->accept_error);
  connector.join();
}

// The fixture of the cases that need two connected ends over tcp:// and nothing else.
struct TcpPair {
  Options options;
  Pair pair;
  TcpPair() {
    connect_pair("tcp", options, options, &pair);
    REQUIRE(pair.connect_status == DLB_OK);
  }
};

void fill(DLManagedTensorVersioned* t) {
  int64_t n = 0;
  dlb_error e;
  REQUIRE(dlb_tensor_element_count(&t->dl_tensor, &n, &e) == DLB_OK);
  auto* values = static_cast<float*>(t->dl_tensor.data);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 1000003);
}

bool holds_filled(const DLManagedTensorVersioned* t) {
  int64_t n = 0;
  dlb_error e;
  if (dlb_tensor_element_count(&t->dl_tensor, &n, &e) != DLB_OK) return false;
  const auto* values = static_cast<const float*>(t->dl_tensor.data);
  for (int64_t i = 0; i < n; ++i) {
    if (values[i] != static_cast<float>(i % 1000003)) return false;
  }
  return true;
}

// Sends `tensor` (with send `options`) on `from` from another thread while this one receives on
// `to`: a rendezvous send returns once the receiver took the bytes, which needs the receiver in
// a call.
int transfer(dlb_channel* from, const DLManagedTensorVersioned* tensor, dlb_channel* to,
             DLManagedTensorVersioned** out, dlb_error* receive_error, uint32_t options = 0) {
  int sent = -1;
  dlb_error send_error;
  std::thread sender([&] { sent = dlb_channel_send(from, tensor, options, &send_error); });
  const int received = dlb_channel_receive(to, out, receive_error);
  sender.join();
  if (sent != DLB_OK) MESSAGE(send_error.message);
  return sent != DLB_OK ? sent : received;
}

// What a forging peer starts from: a valid remote descriptor and extension frame of a compact
// float32 tensor of `shape`, the stream's tensor `sequence`.
struct Forged {
  dlb::ipc::Wire wire;
  dlb::ipc::RemoteExtension extension;
};
Forged forged_float32(std::initializer_list<int64_t> shape, uint32_t sequence) {
  Forged f{};
  std::memcpy(f.wire.magic, dlb::ipc::kWireMagic, 8);
  f.wire.major = dlb::ipc::kWireMajor;
  f.wire.minor = dlb::ipc::kWireMinor;
  f.wire.size = sizeof f.wire;
  f.wire.device_type = kDLCPU;
  f.wire.ndim = static_cast<int32_t>(shape.size());
  f.wire.code = kDLFloat;
  f.wire.bits = 32;
  f.wire.lanes = 1;
  f.wire.handle = dlb::ipc::kHandleRemote;
  int64_t count = 1;
  for (int32_t d = f.wire.ndim - 1; d >= 0; --d) {
    f.wire.shape[d] = shape.begin()[d];
    f.wire.strides[d] = count;
    count *= f.wire.shape[d];
  }
  f.wire.segment_size = static_cast<uint64_t>(count * 4);
  std::memcpy(f.extension.magic, dlb::ipc::kRemoteMagic, 8);
  f.extension.payload_bytes = static_cast<uint64_t>(count * 4);
  f.extension.sequence = sequence;
  return f;
}

// A float32 [n] tensor holding base, base + 1, ...
DLManagedTensorVersioned* counting(int64_t n, float base) {
  DLManagedTensorVersioned* t = nullptr;
  dlb_error e;
  REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &n, nullptr, 0, &t, &e) == DLB_OK);
  auto* values = static_cast<float*>(t->dl_tensor.data);
  for (int64_t i = 0; i < n; ++i) values[i] = base + static_cast<float>(i);
  return t;
}

bool counts(const DLManagedTensorVersioned* t, int64_t n, float base) {
  if (t->dl_tensor.ndim != 1 || t->dl_tensor.shape[0] != n) return false;
  if (t->flags != DLPACK_FLAG_BITMASK_IS_COPIED) return false;
  const auto* values = static_cast<const float*>(t->dl_tensor.data);
  for (int64_t i = 0; i < n; ++i) {
    if (values[i] != base + static_cast<float>(i)) return false;
  }
  return true;
}

// The receive on `server` of a stream the peer broke: DLB_ERR_PROTOCOL and no tensor, the message
// the peer's address and then `message`.
void expect_broken_stream(const Channel& server, const char* message) {
  Tensor refused;
  dlb_error e;
  CHECK(dlb_channel_receive(server.handle, &refused.handle, &e) == DLB_ERR_PROTOCOL);
  CHECK(refused.handle == nullptr);
  const std::string text(e.message);
  const size_t colon = text.find(": ");
  REQUIRE(colon != std::string::npos);
  CHECK(text.rfind("tcp://127.0.0.1:", 0) == 0);
  CHECK(text.substr(colon + 2) == message);
}

// `server`: the listener's end of a raw peer that proves kKey.
void accept_authenticated(const Channel& listener, raw::Peer& peer, Channel* server) {
  REQUIRE(peer.ok());
  std::thread authenticate([&] {
    if (peer.wait_hello()) peer.authenticate(kKey);
  });
  dlb_error e;
  const int accepted = dlb_channel_accept(listener.handle, &server->handle, &e);
  authenticate.join();
  if (accepted != DLB_OK) MESSAGE(e.message);
  REQUIRE(accepted == DLB_OK);
}

// A listener (that takes tensors of at most `max_tensor_bytes`, or the default), and its end
// (`server`) of a raw peer that proved kKey.
struct RawPeerEnds {
  Options options;
  Channel listener;
  std::unique_ptr<raw::Peer> raw_peer;
  Channel server;
  explicit RawPeerEnds(uint64_t max_tensor_bytes = 0) {
    dlb_error e;
    if (max_tensor_bytes != 0) {
      REQUIRE(dlb_channel_options_set_max_tensor_bytes(options.handle, max_tensor_bytes, &e) ==
              DLB_OK);
    }
    REQUIRE(listen("tcp", options, &listener) == DLB_OK);
    raw_peer = std::make_unique<raw::Peer>(dlb_channel_port(listener.handle));
    accept_authenticated(listener, *raw_peer, &server);
  }
};
struct RawPeerAt4096 : RawPeerEnds {
  RawPeerAt4096() : RawPeerEnds(4096) {}
};

int open_descriptors() {
  int count = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (readdir(dir) != nullptr) ++count;
  closedir(dir);
  return count;
}

}  // namespace

bool error_handlers_kept = true;
void on_error_signal(int) {}

TEST_SUITE("remote.options") {
  TEST_CASE("loading UCX leaves the process's handlers of SIGSEGV and SIGBUS in place") {
    CHECK(error_handlers_kept);
  }

  TEST_CASE("options refuse what no channel can use, with the core's messages") {
    Options options(nullptr);
    dlb_error e;
    const unsigned char short_key[8] = {};
    CHECK(dlb_channel_options_set_key(options.handle, short_key, sizeof short_key, &e) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) ==
          "a key of 8 bytes: a channel's key has 16 to 1024 bytes (random ones: 32 is plenty)");
    CHECK(dlb_channel_options_set_key(options.handle, nullptr, 32, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "key is NULL");
    CHECK(dlb_channel_options_set_max_tensor_bytes(options.handle, 0, &e) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "a maximum tensor size of 0 bytes: at least 1");
    CHECK(dlb_channel_options_set_max_in_flight(options.handle, 0, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "a maximum of 0 tensors in flight: 1 to 65536");
    CHECK(dlb_channel_options_set_timeout(options.handle, -5, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) ==
          "timeout -5 ns is negative: a time limit is 0 ns or more, or none");
    CHECK(dlb_channel_options_set_receive_device(options.handle, DLDevice{kDLOpenCL, 0}, &e) ==
          DLB_ERR_UNSUPPORTED);
    CHECK(std::string(e.message) ==
          "a remote channel receives into cpu, cuda_host, cuda or cuda_managed memory, not opencl");
    CHECK(dlb_channel_options_set_receive_device(options.handle, DLDevice{kDLCPU, 1}, &e) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(dlb_channel_options_set_key(nullptr, kKey.data(), kKey.size(), &e) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "options is NULL");
    dlb_channel_options_free(nullptr);
  }

  TEST_CASE("addresses and keys are checked before anything is made") {
    Options keyed;
    Options keyless(nullptr);
    dlb_channel* channel = reinterpret_cast<dlb_channel*>(1);
    dlb_error e;
    const struct {
      const char* address;
      int status;
      const char* message;
    } cases[] = {
        {"tcp://127.0.0.1", DLB_ERR_INVALID_ARGUMENT,
         "address 'tcp://127.0.0.1' is not SCHEME://HOST:PORT (a remote address names a host and "
         "a port)"},
        {"tcp://:5000", DLB_ERR_INVALID_ARGUMENT,
         "address 'tcp://:5000' names no host: a listener binds to the address it is given "
         "(write 0.0.0.0 for every interface)"},
        {"tcp://127.0.0.1:70000", DLB_ERR_INVALID_ARGUMENT,
         "address 'tcp://127.0.0.1:70000': port '70000' is not 0 to 65535"},
        {"ucx://[::1:80", DLB_ERR_INVALID_ARGUMENT,
         "address 'ucx://[::1:80': an IPv6 host is written [ADDRESS]:PORT"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.address);
      CHECK(dlb_channel_listen_with_options(c.address, keyed.handle, &channel, &e) == c.status);
      CHECK(channel == nullptr);
      CHECK(std::string(e.message) == c.message);
    }
    CHECK(dlb_channel_connect_with_options("tcp://127.0.0.1:0", keyed.handle, &channel, &e) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "address 'tcp://127.0.0.1:0': port '0' is not 1 to 65535");
    const char* no_key =
        "a remote channel needs a key that its peers share (dlb_channel_options_set_key)";
    CHECK(dlb_channel_listen_with_options("tcp://127.0.0.1:0", keyless.handle, &channel, &e) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == no_key);
    CHECK(dlb_channel_listen("tcp://127.0.0.1:0", &channel, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == no_key);
    CHECK(dlb_channel_connect("ucx://127.0.0.1:9", &channel, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == no_key);
  }

  TEST_CASE("a receive device UCX here cannot reach is refused when the channel is made") {
    Options options;
    dlb_error e;
    REQUIRE(dlb_channel_options_set_receive_device(options.handle, DLDevice{kDLCUDA, 0}, &e) ==
            DLB_OK);
    dlb_channel* channel = nullptr;
    const int status =
        dlb_channel_listen_with_options("tcp://127.0.0.1:0", options.handle, &channel, &e);
    if (status == DLB_OK) {  // a UCX with CUDA transports: nothing to refuse
      dlb_channel_close(channel);
      return;
    }
    CHECK(status == DLB_ERR_DEVICE_UNAVAILABLE);
    CHECK(std::string(e.message) ==
          "this channel receives into cuda memory, but UCX here cannot reach CUDA memory: its "
          "CUDA transports (a UCX built with CUDA, libucx-cuda) are not installed; receive into "
          "cpu or cuda_host memory instead");
  }

  TEST_CASE("nothing listening is DLB_ERR_NO_LISTENER") {
    Options options;
    Channel listener;
    REQUIRE(listen("tcp", options, &listener) == DLB_OK);
    const int port = dlb_channel_port(listener.handle);
    dlb_channel_close(listener.handle);
    listener.handle = nullptr;
    dlb_channel* channel = nullptr;
    dlb_error e;
    REQUIRE(dlb_channel_options_set_timeout(options.handle, 5000000000LL, &e) == DLB_OK);
    CHECK(dlb_channel_connect_with_options(address("tcp", port).c_str(), options.handle, &channel,
                                           &e) == DLB_ERR_NO_LISTENER);
    CHECK(channel == nullptr);
    CHECK(std::string(e.message).rfind("nothing listens at tcp://127.0.0.1:" + std::to_string(port), 0) == 0);
  }
}

TEST_SUITE("remote.tensors") {
  TEST_CASE("tensors travel as compact copies over TCP and over UCX's own transports") {
    for (const char* scheme : {"tcp", "ucx"}) {
      CAPTURE(scheme);
      Options options;
      Pair pair;
      connect_pair(scheme, options, options, &pair);
      REQUIRE(pair.accept_status == DLB_OK);
      REQUIRE(pair.connect_status == DLB_OK);
      CHECK(dlb_channel_is_remote(pair.server.handle) == 1);
      CHECK(dlb_channel_is_remote(pair.client.handle) == 1);
      CHECK(dlb_channel_port(pair.client.handle) > 0);
      dlb_error e;
      // Sizes across UCX's eager and rendezvous protocols, a scalar and an empty tensor.
      const std::vector<std::vector<int64_t>> shapes = {
          {2, 3}, {}, {0, 4}, {1000}, {256, 1024}, {4, 1 << 20}};
      for (const auto& shape : shapes) {
        Tensor sent, received;
        REQUIRE(dlb_tensor_allocate(kCpu, kF32, static_cast<int32_t>(shape.size()), shape.data(),
                                    nullptr, DLPACK_FLAG_BITMASK_READ_ONLY, &sent.handle,
                                    &e) == DLB_OK);
        fill(sent.handle);
        REQUIRE(transfer(pair.client.handle, sent.handle, pair.server.handle, &received.handle,
                         &e) == DLB_OK);
        const DLTensor& t = received.handle->dl_tensor;
        CHECK(t.ndim == static_cast<int32_t>(shape.size()));
        for (size_t d = 0; d < shape.size(); ++d) CHECK(t.shape[d] == shape[d]);
        CHECK(t.device.device_type == kDLCPU);
        CHECK(dlb_tensor_is_c_contiguous(&t) == 1);
        CHECK(received.handle->flags ==
              (DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED));
        CHECK(holds_filled(received.handle));
        CHECK(t.data != sent.handle->dl_tensor.data);
      }
      // Both ways on one channel, and a strided view arrives packed.
      Tensor matrix, transposed, back;
      const int64_t shape[2] = {3, 5};
      REQUIRE(dlb_tensor_allocate(kCpu, kF32, 2, shape, nullptr, 0, &matrix.handle, &e) == DLB_OK);
      fill(matrix.handle);
      REQUIRE(dlb_tensor_transpose(matrix.handle, &transposed.handle, &e) == DLB_OK);
      REQUIRE(transfer(pair.server.handle, transposed.handle, pair.client.handle, &back.handle,
                       &e) == DLB_OK);
      CHECK(back.handle->dl_tensor.shape[0] == 5);
      CHECK(back.handle->dl_tensor.shape[1] == 3);
      CHECK(dlb_tensor_is_c_contiguous(&back.handle->dl_tensor) == 1);
      const auto* values = static_cast<const float*>(back.handle->dl_tensor.data);
      for (int i = 0; i < 5; ++i) {
        for (int j = 0; j < 3; ++j) CHECK(values[i * 3 + j] == static_cast<float>(j * 5 + i));
      }
    }
  }

  // Strided tensors: packed by default, their covering span where that is smaller (a broadcast
  // view) or where the sender keeps the layout, on both sides of the eager/rendezvous boundary
  // and of the receive cache's smallest size; the receiver's elements always equal the sender's.
  TEST_CASE_FIXTURE(TcpPair, "a strided tensor arrives packed, or with its own layout where its "
                             "span travels: a broadcast view, or when the sender keeps it") {
    dlb_error e;
    auto matrix = [&](int64_t rows, int64_t cols, Tensor* out) {
      const int64_t shape[2] = {rows, cols};
      REQUIRE(dlb_tensor_allocate(kCpu, kF32, 2, shape, nullptr, 0, &out->handle, &e) == DLB_OK);
      fill(out->handle);
    };
    // The elements of a tensor of any layout, in C order.
    auto elements = [&](const DLManagedTensorVersioned* t) {
      Tensor packed;
      REQUIRE(dlb_tensor_copy(t, kCpu, &packed.handle, &e) == DLB_OK);
      int64_t n = 0;
      REQUIRE(dlb_tensor_element_count(&packed.handle->dl_tensor, &n, &e) == DLB_OK);
      const auto* v = static_cast<const float*>(packed.handle->dl_tensor.data);
      return std::vector<float>(v, v + n);
    };
    auto strides_of = [&](const DLManagedTensorVersioned* t) {
      std::vector<int64_t> strides(static_cast<size_t>(t->dl_tensor.ndim));
      REQUIRE(dlb_tensor_get_strides(&t->dl_tensor, DLB_MAX_NDIM, strides.data(), &e) == DLB_OK);
      return strides;
    };
    auto send = [&](const DLManagedTensorVersioned* t, uint32_t options, Tensor* received) {
      REQUIRE(transfer(pair.client.handle, t, pair.server.handle, &received->handle, &e,
                       options) == DLB_OK);
      CHECK(received->handle->flags == DLPACK_FLAG_BITMASK_IS_COPIED);
      CHECK(elements(received->handle) == elements(t));
    };
    for (const int64_t rows : {3, 256}) {  // 60 bytes (eager) and 1 MiB (rendezvous, cached)
      CAPTURE(rows);
      const int64_t cols = rows == 3 ? 5 : 1024;
      Tensor base, transposed, reversed, columns;
      matrix(rows, cols, &base);
      REQUIRE(dlb_tensor_transpose(base.handle, &transposed.handle, &e) == DLB_OK);
      const dlb_slice backwards[1] = {{DLB_SLICE_NONE, DLB_SLICE_NONE, -1}};
      REQUIRE(dlb_tensor_slice(base.handle, 1, backwards, &reversed.handle, &e) == DLB_OK);
      const dlb_slice first_cols[2] = {{0, rows, 1}, {0, cols - 2, 1}};
      REQUIRE(dlb_tensor_slice(base.handle, 2, first_cols, &columns.handle, &e) == DLB_OK);
      for (const DLManagedTensorVersioned* t :
           {transposed.handle, reversed.handle, columns.handle}) {
        Tensor packed, kept;
        send(t, 0, &packed);
        CHECK(dlb_tensor_is_c_contiguous(&packed.handle->dl_tensor) == 1);
        send(t, DLB_SEND_KEEP_LAYOUT, &kept);
        CHECK(strides_of(kept.handle) == strides_of(t));
      }
    }
    // A broadcast view (stride 0): 16 bytes travel for a tensor of 64 KiB, and it keeps its layout.
    std::vector<float> row = {1, 2, 3, 4};
    DLTensor view{};
    const int64_t shape[2] = {4096, 4};
    const int64_t strides[2] = {0, 1};
    view.data = row.data();
    view.device = kCpu;
    view.ndim = 2;
    view.dtype = kF32;
    view.shape = const_cast<int64_t*>(shape);
    view.strides = const_cast<int64_t*>(strides);
    Tensor broadcast, received;
    REQUIRE(dlb_tensor_wrap(&view, 0, nullptr, nullptr, &broadcast.handle, &e) == DLB_OK);
    send(broadcast.handle, 0, &received);
    CHECK(strides_of(received.handle) == std::vector<int64_t>{0, 1});
  }

  TEST_CASE_FIXTURE(TcpPair, "a received tensor outlives its channel, and the peer's close ends "
                             "the stream after what it sent") {
    dlb_error e;
    Tensor sent;
    const int64_t n = 100000;
    REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &n, nullptr, 0, &sent.handle, &e) == DLB_OK);
    fill(sent.handle);
    int sends_ok = 0;
    std::thread sender([&] {
      dlb_error se;
      for (int i = 0; i < 3; ++i) sends_ok += dlb_channel_send(pair.client.handle, sent.handle, 0, &se) == DLB_OK;
      dlb_channel_close(pair.client.handle);
      pair.client.handle = nullptr;
    });
    std::vector<DLManagedTensorVersioned*> kept;
    for (int i = 0; i < 3; ++i) {
      DLManagedTensorVersioned* t = nullptr;
      REQUIRE(dlb_channel_receive(pair.server.handle, &t, &e) == DLB_OK);
      kept.push_back(t);
    }
    sender.join();
    CHECK(sends_ok == 3);
    DLManagedTensorVersioned* none = nullptr;
    CHECK(dlb_channel_receive(pair.server.handle, &none, &e) == DLB_ERR_PEER_CLOSED);
    CHECK(none == nullptr);
    CHECK(std::string(e.message).rfind("waiting for a tensor: the peer at tcp://127.0.0.1:", 0) == 0);
    dlb_channel_close(pair.server.handle);
    pair.server.handle = nullptr;
    for (auto* t : kept) {
      CHECK(holds_filled(t));
      dlb_tensor_free(t);
    }
  }

  TEST_CASE_FIXTURE(TcpPair, "a large received tensor's memory serves the next one once freed, "
                             "and outlives the channel") {
    dlb_error e;
    Tensor sent;
    const int64_t n = 1 << 20;  // 4 MiB: over the cache's threshold
    REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &n, nullptr, 0, &sent.handle, &e) == DLB_OK);
    fill(sent.handle);
    Tensor first, second, third;
    REQUIRE(transfer(pair.client.handle, sent.handle, pair.server.handle, &first.handle, &e) ==
            DLB_OK);
    void* const memory = first.handle->dl_tensor.data;
    dlb_tensor_free(first.handle);
    first.handle = nullptr;
    REQUIRE(transfer(pair.client.handle, sent.handle, pair.server.handle, &second.handle, &e) ==
            DLB_OK);
    CHECK(second.handle->dl_tensor.data == memory);
    CHECK(holds_filled(second.handle));
    // Held while the next arrives: that one gets memory of its own.
    REQUIRE(transfer(pair.client.handle, sent.handle, pair.server.handle, &third.handle, &e) ==
            DLB_OK);
    CHECK(third.handle->dl_tensor.data != memory);
    dlb_channel_close(pair.server.handle);
    pair.server.handle = nullptr;
    CHECK(holds_filled(second.handle));
    CHECK(holds_filled(third.handle));
  }

  TEST_CASE_FIXTURE(TcpPair, "a stream that moves on to larger tensors keeps their memory: a "
                             "full cache frees its oldest buffer") {
    dlb_error e;
    Tensor small, large;
    const int64_t small_n = 16 << 10, large_n = 1 << 20;  // 64 KiB, 4 MiB
    REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &small_n, nullptr, 0, &small.handle, &e) == DLB_OK);
    REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &large_n, nullptr, 0, &large.handle, &e) == DLB_OK);
    fill(small.handle);
    fill(large.handle);
    // Four small tensors held at once, then freed: the cache is full of their memory.
    Tensor held[4];
    for (Tensor& t : held) {
      REQUIRE(transfer(pair.client.handle, small.handle, pair.server.handle, &t.handle, &e) ==
              DLB_OK);
    }
    for (Tensor& t : held) {
      dlb_tensor_free(t.handle);
      t.handle = nullptr;
    }
    Tensor first, second;
    REQUIRE(transfer(pair.client.handle, large.handle, pair.server.handle, &first.handle, &e) ==
            DLB_OK);
    void* const memory = first.handle->dl_tensor.data;
    dlb_tensor_free(first.handle);
    first.handle = nullptr;
    // Had the large buffer been freed, this allocation of its size would likely take its place.
    Tensor bystander;
    REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &large_n, nullptr, 0, &bystander.handle, &e) ==
            DLB_OK);
    REQUIRE(transfer(pair.client.handle, large.handle, pair.server.handle, &second.handle, &e) ==
            DLB_OK);
    CHECK(second.handle->dl_tensor.data == memory);
    CHECK(holds_filled(second.handle));
  }

  TEST_CASE_FIXTURE(TcpPair, "what does not apply to a remote channel says so") {
    dlb_error e;
    CHECK(dlb_channel_allow_uid(pair.server.handle, 1234, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) ==
          "a remote channel authenticates its peers by key, not by user id");
    int32_t pid = 7;
    CHECK(dlb_channel_peer(pair.server.handle, &pid, nullptr, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) ==
          "a remote channel's peer has no process or user id on this machine");
    CHECK(pid == 0);
    Tensor t;
    const int64_t n = 4;
    REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &n, nullptr, 0, &t.handle, &e) == DLB_OK);
    CHECK(dlb_channel_send_cuda(pair.client.handle, t.handle, nullptr, 0, &e) == DLB_ERR_UNSUPPORTED);
    CHECK(std::string(e.message) ==
          "stream order does not cross machines: finish the stream's work on the tensor, then "
          "send it with dlb_channel_send");
    // The pool lends ordinary tensors, which need no pool to travel.
    Tensor lent, received;
    REQUIRE(dlb_channel_allocate(pair.client.handle, kCpu, kF32, 1, &n, nullptr, 0, &lent.handle,
                                 &e) == DLB_OK);
    fill(lent.handle);
    REQUIRE(dlb_channel_send(pair.client.handle, lent.handle, 0, &e) == DLB_OK);
    REQUIRE(dlb_channel_receive(pair.server.handle, &received.handle, &e) == DLB_OK);
    CHECK(holds_filled(received.handle));
    dlb_pool_stats stats;
    REQUIRE(dlb_channel_pool_stats(pair.client.handle, &stats, &e) == DLB_OK);
    CHECK(stats.segments == 0);
    CHECK(dlb_channel_is_remote(pair.listener.handle) == 1);
    CHECK(dlb_channel_is_remote(nullptr) == 0);
    CHECK(dlb_channel_port(nullptr) == -1);
  }
}

TEST_SUITE("remote.keys") {
  TEST_CASE("a peer with another key is refused at both ends, and the listener keeps serving") {
    Options right;
    Options wrong(&kOtherKey);
    Pair pair;
    connect_pair("tcp", right, wrong, &pair);
    CHECK(pair.accept_status == DLB_ERR_PERMISSION);
    CHECK(pair.server.handle == nullptr);
    CHECK(std::string(pair.accept_error.message)
              .rfind("refused the peer at tcp://127.0.0.1:", 0) == 0);
    CHECK(std::string(pair.accept_error.message).find(": it did not prove it holds the channel's key") !=
          std::string::npos);
    CHECK(pair.connect_status == DLB_ERR_PERMISSION);
    CHECK(pair.client.handle == nullptr);
    CHECK(std::string(pair.connect_error.message) ==
          "the listener at tcp://127.0.0.1:" + std::to_string(dlb_channel_port(pair.listener.handle)) +
              " refused this channel's key");
    // The same listener accepts the right key next.
    const int port = dlb_channel_port(pair.listener.handle);
    Channel client, server;
    int connected = -1;
    dlb_error ce, e;
    std::thread connector([&] {
      connected = dlb_channel_connect_with_options(address("tcp", port).c_str(), right.handle,
                                                   &client.handle, &ce);
    });
    CHECK(dlb_channel_accept(pair.listener.handle, &server.handle, &e) == DLB_OK);
    connector.join();
    CHECK(connected == DLB_OK);
  }

  TEST_CASE("a key and the same key with zero bytes after it do not prove each other") {
    std::vector<unsigned char> padded = kKey;
    padded.push_back(0);
    Options right;
    Options longer(&padded);
    Pair pair;
    connect_pair("tcp", right, longer, &pair);
    CHECK(pair.accept_status == DLB_ERR_PERMISSION);
    CHECK(pair.connect_status == DLB_ERR_PERMISSION);
  }

  TEST_CASE("a listener may send the moment it accepted: the tensor waits for the key's check") {
    Options options;
    Channel listener;
    REQUIRE(listen("tcp", options, &listener) == DLB_OK);
    const int port = dlb_channel_port(listener.handle);
    for (int round = 0; round < 10; ++round) {
      CAPTURE(round);
      Channel server, client;
      int received = -1;
      bool filled = false;
      dlb_error ce, e;
      std::thread connector([&] {
        if (dlb_channel_connect_with_options(address("tcp", port).c_str(), options.handle,
                                             &client.handle, &ce) != DLB_OK) {
          return;
        }
        DLManagedTensorVersioned* t = nullptr;
        received = dlb_channel_receive(client.handle, &t, &ce);
        if (received == DLB_OK) filled = holds_filled(t);
        dlb_tensor_free(t);
      });
      REQUIRE(dlb_channel_accept(listener.handle, &server.handle, &e) == DLB_OK);
      Tensor t;
      const int64_t n = 64;
      REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &n, nullptr, 0, &t.handle, &e) == DLB_OK);
      fill(t.handle);
      CHECK(dlb_channel_send(server.handle, t.handle, 0, &e) == DLB_OK);
      connector.join();
      CHECK(received == DLB_OK);
      if (received != DLB_OK) MESSAGE(ce.message);
      CHECK(filled);
    }
  }

  TEST_CASE("a listener of another remote version is refused when the channel connects") {
    for (const uint32_t major : {1u, 3u}) {
      CAPTURE(major);
      raw::Listener listener(major);
      REQUIRE(listener.ok());
      Options options;
      Channel client;
      dlb_error e;
      int status = -1;
      const std::string to = address("tcp", listener.port());
      std::thread connector([&] {
        status = dlb_channel_connect_with_options(to.c_str(), options.handle, &client.handle, &e);
      });
      const bool greeted = listener.greet();
      connector.join();
      CHECK(greeted);
      CHECK(status == DLB_ERR_UNSUPPORTED_VERSION);
      CHECK(client.handle == nullptr);
      CHECK(std::string(e.message) == "the listener at " + to + " speaks remote handshake "
                                      "version " + std::to_string(major) +
                                      "; this library speaks 2");
    }
  }

  TEST_CASE("a peer that sends a tensor before the key is refused, nothing allocated for it") {
    Options options;
    Channel listener;
    REQUIRE(listen("tcp", options, &listener) == DLB_OK);
    raw::Peer peer(dlb_channel_port(listener.handle));
    REQUIRE(peer.ok());
    std::thread intruder([&] {
      if (!peer.wait_hello()) return;
      dlb::ipc::Wire forged[2] = {};
      std::vector<char> bytes(1 << 20);
      peer.send(raw::kAmTensor, forged, sizeof forged, bytes.data(), bytes.size());
    });
    Channel server;
    dlb_error e;
    CHECK(dlb_channel_accept(listener.handle, &server.handle, &e) == DLB_ERR_PERMISSION);
    intruder.join();
    CHECK(server.handle == nullptr);
    CHECK(std::string(e.message).find(": the peer sent a tensor before it proved it holds the "
                                      "channel's key") != std::string::npos);
  }

  TEST_CASE("a peer that proves a wrong key, or says nothing, does not hold a server loop") {
    Options options;
    Channel listener;
    REQUIRE(listen("tcp", options, &listener) == DLB_OK);
    {
      raw::Peer peer(dlb_channel_port(listener.handle));
      std::thread intruder([&] {
        if (peer.wait_hello()) peer.authenticate(kOtherKey);
        peer.progress_until([&] { return peer.refused() || peer.gone(); });
      });
      Channel server;
      dlb_error e;
      CHECK(dlb_channel_accept(listener.handle, &server.handle, &e) == DLB_ERR_PERMISSION);
      intruder.join();
      CHECK(peer.refused());
    }
    {
      raw::Peer silent(dlb_channel_port(listener.handle));
      std::atomic<bool> stop{false};
      std::thread idler([&] { silent.progress_until([&] { return stop.load(); }, 10000); });
      dlb_error e;
      REQUIRE(dlb_channel_set_timeout(listener.handle, 300000000, &e) == DLB_OK);
      Channel server;
      CHECK(dlb_channel_accept(listener.handle, &server.handle, &e) == DLB_ERR_TIMEOUT);
      CHECK(std::string(e.message) ==
            "waiting for a peer to prove it holds the key: the time limit ran out");
      stop = true;
      idler.join();
    }
  }
}

TEST_SUITE("remote.forgery") {
  // A raw peer that holds the key, then sends forged descriptors: each is refused with its
  // status and message at the receiver's receive, nothing is allocated for it, and the next
  // tensor still arrives.
  TEST_CASE_FIXTURE(RawPeerAt4096,
                    "forged and truncated descriptors are refused, and the stream stays in step") {
    raw::Peer& peer = *raw_peer;
    dlb_error e;
    CHECK(peer.hello().max_tensor_bytes == 4096);

    uint32_t sequence = 0;
    auto valid = [&](int64_t rows, int64_t cols) {
      return forged_float32({rows, cols}, sequence++);
    };
    std::vector<float> data(2048);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i);
    const struct {
      const char* name;
      Forged forged;
      size_t header;  // bytes of the forged header sent (0: as packed)
      size_t patch_at;      // a 32-bit field of the packed header to overwrite (0: none)
      uint32_t patch_value;
      size_t bytes;   // payload bytes sent
      int status;
      const char* message;
    } cases[] = {
        {"a bad magic",
         [&] { Forged f = valid(2, 3); f.wire.magic[0] = 'X'; return f; }(), 0, 0, 0, 24,
         DLB_ERR_PROTOCOL, "not a dlbridge tensor descriptor (bad magic)"},
        {"another kind of memory",
         [&] { Forged f = valid(2, 3); f.wire.handle = dlb::ipc::kHandleMemfd; return f; }(),
         0, 0, 0, 24, DLB_ERR_PROTOCOL,
         "received a descriptor of memory kind 0 on a remote channel, which carries the bytes "
         "themselves"},
        {"a negative extent",
         [&] { Forged f = valid(2, 3); f.wire.shape[0] = -2; return f; }(), 0, 0, 0, 24,
         DLB_ERR_PROTOCOL, "shape[0] is -2; extents must not be negative"},
        {"fewer bytes than the layout",
         valid(2, 3), 0, 0, 0, 20, DLB_ERR_PROTOCOL,
         "the descriptor's (2, 3) float32 tensor takes 24 bytes, but what came with it is 20"},
        {"an extension that disagrees with the layout",
         [&] { Forged f = valid(2, 3); f.extension.payload_bytes = 28; return f; }(),
         0, 0, 0, 24, DLB_ERR_PROTOCOL,
         "the descriptor's (2, 3) float32 tensor takes 24 bytes, but its extension frame says 28"},
        {"a header longer than its rank's",
         valid(2, 3), dlb::ipc::remote_header_size(2) + 8, 0, 0, 24, DLB_ERR_PROTOCOL,
         "a remote descriptor of a rank-2 tensor takes 136 bytes (96 of them its descriptor); "
         "this one came in 144, and says 96"},
        {"a size field that disagrees with the rank",
         valid(2, 3), 0, offsetof(dlb::ipc::Wire, size), 1088, 24, DLB_ERR_PROTOCOL,
         "a remote descriptor of a rank-2 tensor takes 136 bytes (96 of them its descriptor); "
         "this one came in 136, and says 1088"},
        {"a rank over the maximum",
         valid(2, 3), 200, offsetof(dlb::ipc::Wire, ndim), 65, 24,
         DLB_ERR_PROTOCOL, "ndim 65 exceeds the maximum of 64"},
        {"another major version",
         [&] { Forged f = valid(2, 3); f.wire.major = 2; f.wire.minor = 0; return f; }(), 0, 0,
         0, 24, DLB_ERR_UNSUPPORTED_VERSION,
         "tensor descriptor version 2.0 is not supported (dlbridge reads version 1)"},
        {"strides that reach past the bytes that came",
         [&] { Forged f = valid(2, 3); f.wire.strides[0] = 4; return f; }(), 0, 0, 0, 24,
         DLB_ERR_PROTOCOL,
         "the descriptor's (2, 3) float32 tensor takes 28 bytes, but its extension frame says 24"},
        {"a first element that is not the lowest byte",
         [&] { Forged f = valid(2, 3); f.wire.byte_offset = 8; return f; }(), 0, 0, 0, 24,
         DLB_ERR_PROTOCOL,
         "the descriptor's elements begin at byte 8 of the bytes that come with it, not at byte "
         "0 (its byte offset is 8)"},
        {"negative strides that reach before the bytes",
         [&] { Forged f = valid(2, 3); f.wire.strides[0] = -3; return f; }(), 0, 0, 0, 24,
         DLB_ERR_PROTOCOL,
         "the descriptor's elements begin at byte -12 of the bytes that come with it, not at "
         "byte 0 (its byte offset is 0)"},
        // Last: the message checked after the loop.
        {"more than the receiver takes",
         valid(32, 64), 0, 0, 0, 8192, DLB_ERR_LIMIT, nullptr},
    };
    for (const auto& c : cases) {
      CAPTURE(c.name);
      // A refused rendezvous ends the raw peer's send with an error: only the receive counts.
      bool sent = false;
      unsigned char header[dlb::ipc::kMaxRemoteHeaderBytes + 8] = {};
      const size_t packed = dlb::ipc::pack_remote(c.forged.wire, c.forged.extension, header);
      const size_t header_size = c.header == 0 ? packed : c.header;
      if (c.patch_at != 0) std::memcpy(header + c.patch_at, &c.patch_value, 4);
      std::thread forger(
          [&] { sent = peer.send(raw::kAmTensor, header, header_size, data.data(), c.bytes); });
      Tensor refused;
      CHECK(dlb_channel_receive(server.handle, &refused.handle, &e) == c.status);
      forger.join();
      CHECK((sent || c.status == DLB_ERR_LIMIT));
      CHECK(refused.handle == nullptr);
      if (c.message != nullptr) CHECK(std::string(e.message) == c.message);
    }
    CHECK(std::string(e.message).rfind("refused a tensor of 8192 bytes from tcp://127.0.0.1:", 0) == 0);
    CHECK(std::string(e.message).find(": this channel takes at most 4096 bytes "
                                      "(dlb_channel_options_set_max_tensor_bytes)") !=
          std::string::npos);
    // A truncated descriptor: too short to say its place in the stream.
    Forged truncated = valid(2, 3);
    --sequence;
    unsigned char header[dlb::ipc::kMaxRemoteHeaderBytes];
    dlb::ipc::pack_remote(truncated.wire, truncated.extension, header);
    REQUIRE(peer.send(raw::kAmTensor, header, 40, data.data(), 24));
    Tensor refused;
    CHECK(dlb_channel_receive(server.handle, &refused.handle, &e) == DLB_ERR_PROTOCOL);
    CHECK(std::string(e.message) ==
          "a tensor descriptor of 40 bytes, shorter than its fixed 64 bytes");
    // The stream is in step: the next tensor arrives.
    Forged good = valid(2, 3);
    const size_t good_size = dlb::ipc::pack_remote(good.wire, good.extension, header);
    REQUIRE(peer.send(raw::kAmTensor, header, good_size, data.data(), 24));
    Tensor received;
    REQUIRE(dlb_channel_receive(server.handle, &received.handle, &e) == DLB_OK);
    CHECK(static_cast<const float*>(received.handle->dl_tensor.data)[5] == 5.0f);
  }
}

TEST_SUITE("remote.flow") {
  TEST_CASE("a sender waits while the receiver holds its maximum, within its time limit") {
    Options server_options, client_options;
    dlb_error e;
    REQUIRE(dlb_channel_options_set_max_in_flight(server_options.handle, 2, &e) == DLB_OK);
    REQUIRE(dlb_channel_options_set_timeout(client_options.handle, 200000000, &e) == DLB_OK);
    Pair pair;
    connect_pair("tcp", server_options, client_options, &pair);
    REQUIRE(pair.connect_status == DLB_OK);
    Tensor t;
    const int64_t n = 16;
    REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &n, nullptr, 0, &t.handle, &e) == DLB_OK);
    fill(t.handle);
    REQUIRE(dlb_channel_send(pair.client.handle, t.handle, 0, &e) == DLB_OK);
    REQUIRE(dlb_channel_send(pair.client.handle, t.handle, 0, &e) == DLB_OK);
    CHECK(dlb_channel_send(pair.client.handle, t.handle, 0, &e) == DLB_ERR_TIMEOUT);
    CHECK(std::string(e.message) ==
          "waiting for the peer to take its tensors: the time limit ran out");
    for (int i = 0; i < 2; ++i) {
      Tensor received;
      REQUIRE(dlb_channel_receive(pair.server.handle, &received.handle, &e) == DLB_OK);
      CHECK(holds_filled(received.handle));
    }
    // The receiver gave credit: the channel goes on.
    REQUIRE(dlb_channel_send(pair.client.handle, t.handle, 0, &e) == DLB_OK);
    Tensor received;
    REQUIRE(dlb_channel_receive(pair.server.handle, &received.handle, &e) == DLB_OK);
  }

  TEST_CASE("a tensor over the peer's maximum is refused before anything is sent") {
    Options server_options, client_options;
    dlb_error e;
    REQUIRE(dlb_channel_options_set_max_tensor_bytes(server_options.handle, 1000, &e) == DLB_OK);
    Pair pair;
    connect_pair("tcp", server_options, client_options, &pair);
    REQUIRE(pair.connect_status == DLB_OK);
    Tensor t;
    const int64_t n = 251;
    REQUIRE(dlb_tensor_allocate(kCpu, kF32, 1, &n, nullptr, 0, &t.handle, &e) == DLB_OK);
    CHECK(dlb_channel_send(pair.client.handle, t.handle, 0, &e) == DLB_ERR_LIMIT);
    CHECK(std::string(e.message).rfind(
              "the tensor's 1004 bytes exceed the 1000 bytes the peer at tcp://127.0.0.1:", 0) == 0);
    CHECK(std::string(e.message).find(" takes (its receive limit)") != std::string::npos);
  }

  TEST_CASE_FIXTURE(TcpPair, "time limits and shutdown end a wait, and the channel stays usable "
                             "after a limit") {
    dlb_error e;
    REQUIRE(dlb_channel_set_timeout(pair.server.handle, 0, &e) == DLB_OK);
    Tensor none;
    CHECK(dlb_channel_receive(pair.server.handle, &none.handle, &e) == DLB_ERR_TIMEOUT);
    CHECK(std::string(e.message) == "waiting for a tensor: the time limit ran out");
    REQUIRE(dlb_channel_set_timeout(pair.server.handle, DLB_TIMEOUT_NONE, &e) == DLB_OK);
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      dlb_channel_shutdown(pair.server.handle);
    });
    CHECK(dlb_channel_receive(pair.server.handle, &none.handle, &e) == DLB_ERR_CLOSED);
    CHECK(std::string(e.message) == DLB_CHANNEL_CLOSED_MESSAGE);
    stopper.join();
    std::thread listener_stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      dlb_channel_shutdown(pair.listener.handle);
    });
    Channel never;
    CHECK(dlb_channel_accept(pair.listener.handle, &never.handle, &e) == DLB_ERR_CLOSED);
    listener_stopper.join();
  }
}

// DLB_SEND_MORE: tensors held and sent as batches (core/src/ipc/remote.cc, hold and send_held),
// and what a receiver does with a batch a peer forged (take_batch).
TEST_SUITE("remote.batch") {
  // A TCP pair whose receiving (server) end allows `window` tensors in flight.
  void connect_with_window(uint32_t window, Pair* pair) {
    Options server_options, client_options;
    dlb_error e;
    REQUIRE(dlb_channel_options_set_max_in_flight(server_options.handle, window, &e) == DLB_OK);
    connect_pair("tcp", server_options, client_options, pair);
    REQUIRE(pair->connect_status == DLB_OK);
  }

  TEST_CASE_FIXTURE(TcpPair, "held tensors wait for the send that ends them, then arrive in "
                             "order, whole") {
    dlb_error e;
    REQUIRE(dlb_channel_set_timeout(pair.server.handle, 200000000, &e) == DLB_OK);
    // Sizes from empty to almost 16 KiB (so that the batches go eagerly: see batch_capacity in
    // remote.cc), so that the last ones fill a batch and send it.
    const std::vector<int64_t> sizes = {3, 0, 1, 100, 1000, 7, 3900, 5, 3800, 3900, 3800, 2};
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      Tensor t;
      t.handle = counting(sizes[i], static_cast<float>(1000 * i));
      REQUIRE(dlb_channel_send(pair.client.handle, t.handle, DLB_SEND_MORE, &e) == DLB_OK);
      if (i == 2) {
        // Three small tensors are held: the receiver has nothing yet.
        Tensor none;
        CHECK(dlb_channel_receive(pair.server.handle, &none.handle, &e) == DLB_ERR_TIMEOUT);
        CHECK(none.handle == nullptr);
        REQUIRE(dlb_channel_set_timeout(pair.server.handle, kNoHangNs, &e) == DLB_OK);
      }
    }
    Tensor last;
    last.handle = counting(sizes.back(), 1000.0f * static_cast<float>(sizes.size() - 1));
    REQUIRE(dlb_channel_send(pair.client.handle, last.handle, 0, &e) == DLB_OK);
    for (size_t i = 0; i < sizes.size(); ++i) {
      CAPTURE(i);
      Tensor received;
      REQUIRE(dlb_channel_receive(pair.server.handle, &received.handle, &e) == DLB_OK);
      CHECK(counts(received.handle, sizes[i], static_cast<float>(1000 * i)));
    }
  }

  TEST_CASE("a stream held in batches runs past the receiver's window without waiting for "
            "a send that ends it") {
    Pair pair;
    connect_with_window(4, &pair);
    dlb_error e;
    constexpr int kCount = 40;
    int sent_ok = 0;
    std::thread sender([&] {
      dlb_error se;
      for (int i = 0; i < kCount; ++i) {
        Tensor t;
        t.handle = counting(i + 1, static_cast<float>(i));
        const uint32_t more = i + 1 < kCount ? DLB_SEND_MORE : 0;
        sent_ok += dlb_channel_send(pair.client.handle, t.handle, more, &se) == DLB_OK;
      }
    });
    for (int i = 0; i < kCount; ++i) {
      CAPTURE(i);
      Tensor received;
      REQUIRE(dlb_channel_receive(pair.server.handle, &received.handle, &e) == DLB_OK);
      CHECK(counts(received.handle, i + 1, static_cast<float>(i)));
    }
    sender.join();
    CHECK(sent_ok == kCount);
  }

  // Tensors of 16 KiB and more go in batches of up to 1 MiB, by rendezvous, one filling while
  // the one before it travels. Every tensor arrives whole and in order, past a window of 4 and
  // the default's 64, and a stream's last send returns only when the peer has every batch.
  TEST_CASE("large held tensors travel in rendezvous batches, whole and in order") {
    for (uint32_t window : {4u, 64u}) {
      CAPTURE(window);
      Pair pair;
      connect_with_window(window, &pair);
      dlb_error e;
      // 16 KiB to 200 KiB and back, and a small one between that joins whatever batch is held.
      const std::vector<int64_t> sizes = {4096, 8192, 50000, 3, 16384, 51200, 4096, 20000,
                                          4100, 0,    30000, 6000, 51200, 4096, 9000, 4096};
      int sent_ok = 0;
      std::atomic<bool> last_sent{false};
      std::thread sender([&] {
        dlb_error se;
        for (int round = 0; round < 4; ++round) {
          for (size_t i = 0; i < sizes.size(); ++i) {
            Tensor t;
            t.handle = counting(sizes[i], static_cast<float>(100 * i + round));
            const bool last = round == 3 && i + 1 == sizes.size();
            sent_ok += dlb_channel_send(pair.client.handle, t.handle, last ? 0 : DLB_SEND_MORE,
                                        &se) == DLB_OK;
          }
        }
        last_sent = true;
      });
      for (int round = 0; round < 4; ++round) {
        for (size_t i = 0; i < sizes.size(); ++i) {
          CAPTURE(round);
          CAPTURE(i);
          Tensor received;
          REQUIRE(dlb_channel_receive(pair.server.handle, &received.handle, &e) == DLB_OK);
          CHECK(counts(received.handle, sizes[i], static_cast<float>(100 * i + round)));
        }
      }
      sender.join();
      CHECK(last_sent);
      CHECK(sent_ok == static_cast<int>(4 * sizes.size()));
    }
  }

  TEST_CASE_FIXTURE(TcpPair, "held tensors go before a tensor too large to hold, at a receive "
                             "and at a close") {
    dlb_error e;
    // Before a tensor sent alone (by rendezvous): the receiver takes the held one first.
    Tensor small, large;
    small.handle = counting(10, 0.0f);
    large.handle = counting(1 << 20, 0.0f);
    int large_sent = -1;
    std::thread sender([&] {
      dlb_error se;
      REQUIRE(dlb_channel_send(pair.client.handle, small.handle, DLB_SEND_MORE, &se) == DLB_OK);
      large_sent = dlb_channel_send(pair.client.handle, large.handle, DLB_SEND_MORE, &se);
    });
    Tensor first, second;
    REQUIRE(dlb_channel_receive(pair.server.handle, &first.handle, &e) == DLB_OK);
    REQUIRE(dlb_channel_receive(pair.server.handle, &second.handle, &e) == DLB_OK);
    sender.join();
    CHECK(large_sent == DLB_OK);
    CHECK(counts(first.handle, 10, 0.0f));
    CHECK(counts(second.handle, 1 << 20, 0.0f));

    // At a receive: the client holds one, then waits for the server's, which answers it.
    Tensor question, answer, got_question, got_answer;
    question.handle = counting(5, 50.0f);
    answer.handle = counting(6, 60.0f);
    REQUIRE(dlb_channel_send(pair.client.handle, question.handle, DLB_SEND_MORE, &e) == DLB_OK);
    std::thread server([&] {
      dlb_error se;
      REQUIRE(dlb_channel_receive(pair.server.handle, &got_question.handle, &se) == DLB_OK);
      REQUIRE(dlb_channel_send(pair.server.handle, answer.handle, 0, &se) == DLB_OK);
    });
    REQUIRE(dlb_channel_receive(pair.client.handle, &got_answer.handle, &e) == DLB_OK);
    server.join();
    CHECK(counts(got_question.handle, 5, 50.0f));
    CHECK(counts(got_answer.handle, 6, 60.0f));

    // At a close: what was held arrives, then the stream ends. Small tensors leave without the
    // receiver's part (it receives only after the close).
    for (int i = 0; i < 3; ++i) {
      Tensor t;
      t.handle = counting(i + 2, static_cast<float>(i));
      REQUIRE(dlb_channel_send(pair.client.handle, t.handle, DLB_SEND_MORE, &e) == DLB_OK);
    }
    dlb_channel_close(pair.client.handle);
    pair.client.handle = nullptr;
    for (int i = 0; i < 3; ++i) {
      Tensor received;
      REQUIRE(dlb_channel_receive(pair.server.handle, &received.handle, &e) == DLB_OK);
      CHECK(counts(received.handle, i + 2, static_cast<float>(i)));
    }
    Tensor none;
    CHECK(dlb_channel_receive(pair.server.handle, &none.handle, &e) == DLB_ERR_PEER_CLOSED);
  }

  TEST_CASE_FIXTURE(TcpPair, "a close sends held tensors of 200 KiB to a peer that is "
                             "receiving") {
    // Two batches: the first goes by rendezvous when the third tensor does not fit it; the
    // close sends the second eagerly and flushes both.
    const int64_t sizes[] = {2, 50000, 50000, 50000, 50000, 50000, 50000, 3};
    constexpr int kCount = 8;
    std::thread closer([&] {
      dlb_error se;
      for (int i = 0; i < kCount; ++i) {
        Tensor t;
        t.handle = counting(sizes[i], static_cast<float>(i));
        REQUIRE(dlb_channel_send(pair.client.handle, t.handle, DLB_SEND_MORE, &se) == DLB_OK);
      }
      dlb_channel_close(pair.client.handle);
      pair.client.handle = nullptr;
    });
    dlb_error e;
    for (int i = 0; i < kCount; ++i) {
      CAPTURE(i);
      Tensor received;
      REQUIRE(dlb_channel_receive(pair.server.handle, &received.handle, &e) == DLB_OK);
      CHECK(counts(received.handle, sizes[i], static_cast<float>(i)));
    }
    closer.join();
    Tensor none;
    CHECK(dlb_channel_receive(pair.server.handle, &none.handle, &e) == DLB_ERR_PEER_CLOSED);
  }

  TEST_CASE("a local channel takes DLB_SEND_MORE and sends at once; unknown options are "
            "refused") {
    char path[] = "/tmp/dlb-remote-batch-XXXXXX";
    REQUIRE(mkdtemp(path) != nullptr);
    const std::string socket = std::string(path) + "/s";
    dlb_error e;
    Channel listener, server, client;
    REQUIRE(dlb_channel_listen(socket.c_str(), &listener.handle, &e) == DLB_OK);
    std::thread connector([&] {
      dlb_error ce;
      REQUIRE(dlb_channel_connect(socket.c_str(), &client.handle, &ce) == DLB_OK);
    });
    REQUIRE(dlb_channel_accept(listener.handle, &server.handle, &e) == DLB_OK);
    connector.join();
    Tensor sent, received;
    sent.handle = counting(4, 1.0f);
    REQUIRE(dlb_channel_send(client.handle, sent.handle, DLB_SEND_MORE | DLB_SEND_COPY, &e) ==
            DLB_OK);
    REQUIRE(dlb_channel_receive(server.handle, &received.handle, &e) == DLB_OK);
    CHECK(static_cast<const float*>(received.handle->dl_tensor.data)[3] == 4.0f);
    CHECK(dlb_channel_send(client.handle, sent.handle, 8, &e) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.message) == "unknown send options 0x8");
    dlb_channel_close(listener.handle);
    listener.handle = nullptr;
    rmdir(path);
  }

  TEST_CASE("forged batches are refused after the tensors before the fault") {
    Options options;
    Channel listener;
    REQUIRE(listen("tcp", options, &listener) == DLB_OK);
    dlb_error e;
    struct Case {
      const char* name;
      std::vector<unsigned char> header;
      std::vector<unsigned char> data;
      int good;  // tensors delivered before the refusal
      const char* message;
    };
    // A valid record: a float32 [n] tensor counting from 0, the stream's tensor `sequence`.
    auto record = [](int64_t n, uint32_t sequence) {
      const Forged f = forged_float32({n}, sequence);
      unsigned char header[dlb::ipc::kMaxRemoteHeaderBytes];
      const size_t size = dlb::ipc::pack_remote(f.wire, f.extension, header);
      const dlb::ipc::BatchRecord frame{static_cast<uint32_t>(size), 0,
                                        static_cast<uint64_t>(n * 4)};
      std::vector<unsigned char> out(sizeof frame + size + static_cast<size_t>(n * 4));
      std::memcpy(out.data(), &frame, sizeof frame);
      std::memcpy(out.data() + sizeof frame, header, size);
      for (int64_t i = 0; i < n; ++i) {
        const float v = static_cast<float>(i);
        std::memcpy(out.data() + sizeof frame + size + 4 * i, &v, 4);
      }
      return out;
    };
    auto batch_header = [](uint32_t count, char first = 'd') {
      dlb::ipc::BatchHeader h{};
      std::memcpy(h.magic, dlb::ipc::kBatchMagic, 8);
      h.magic[0] = first;
      h.count = count;
      std::vector<unsigned char> out(sizeof h);
      std::memcpy(out.data(), &h, sizeof h);
      return out;
    };
    auto join = [](std::vector<unsigned char> a, const std::vector<unsigned char>& b) {
      a.insert(a.end(), b.begin(), b.end());
      return a;
    };
    const std::vector<unsigned char> one = record(3, 0), two = record(5, 1);
    std::vector<unsigned char> oversized = record(2, 1);
    const uint32_t huge_header = 5000;
    std::memcpy(oversized.data(), &huge_header, 4);
    std::vector<unsigned char> overlong = record(2, 1);
    const uint64_t too_many = 1000;
    std::memcpy(overlong.data() + 8, &too_many, 8);
    const Case cases[] = {
        {"a header of another size", std::vector<unsigned char>(12, 0), one, 0,
         "a batch of tensors with a header of 12 bytes (a batch's header has 16)"},
        {"a bad magic", batch_header(1, 'X'), one, 0,
         "a batch of tensors with a malformed header (magic, 1 records, reserved 0)"},
        {"no records", batch_header(0), {}, 0,
         "a batch of tensors with a malformed header (magic, 0 records, reserved 0)"},
        {"more records than came", batch_header(3), join(one, two), 2,
         "a batch of tensors ends inside record 2: 0 bytes left of its 16-byte frame"},
        {"bytes after the last record", batch_header(1), join(one, {1, 2, 3}), 1,
         "a batch of 1 tensors has 3 bytes after its last record"},
        {"a header no tensor has", batch_header(2), join(one, oversized), 1,
         "record 1 of a batch of tensors says a header of 5000 bytes (reserved 0); a tensor's "
         "header takes 64 to 1128"},
        {"a payload past the end", batch_header(2), join(one, overlong), 1,
         "record 1 of a batch of tensors says 120 header bytes and 1000 payload bytes, but 128 "
         "are left"},
    };
    // Each case from a new raw peer: the good tensors arrive, then the refusal and its message.
    // The peer sends beside the receive: a rendezvous send ends only when the receiver has taken
    // the bytes (then it succeeds) or refused them (then it fails).
    auto check = [&](const Case& c, uint32_t flags) {
      CAPTURE(c.name);
      raw::Peer peer(dlb_channel_port(listener.handle));
      Channel server;
      accept_authenticated(listener, peer, &server);
      bool sent = false;
      std::thread sender([&] {
        sent = peer.send(raw::kAmBatch, c.header.data(), c.header.size(), c.data.data(),
                         c.data.size(), flags);
      });
      for (int i = 0; i < c.good; ++i) {
        Tensor received;
        REQUIRE(dlb_channel_receive(server.handle, &received.handle, &e) == DLB_OK);
        CHECK(counts(received.handle, i == 0 ? 3 : 5, 0.0f));
      }
      if (c.message != nullptr) expect_broken_stream(server, c.message);
      sender.join();
      CHECK(sent == (flags != UCP_AM_SEND_FLAG_RNDV || c.message == nullptr));
    };
    for (const Case& c : cases) check(c, 0);

    // By rendezvous: a good batch arrives; one over 1 MiB, or with more records than the window
    // has room for, is refused before its buffer is made.
    std::vector<unsigned char> large = record(3, 0);
    large.resize((1u << 20) + 16);
    const Case rendezvous_cases[] = {
        {"a good batch", batch_header(2), join(one, two), 2, nullptr},
        {"over 1 MiB", batch_header(1), large, 0,
         "a batch of 1048592 bytes is over the 1048576 bytes a batch may hold"},
        {"more records than the window", batch_header(65), join(one, two), 0,
         "the peer sent more than the 64 tensors in flight this channel allows"},
    };
    for (const Case& c : rendezvous_cases) check(c, UCP_AM_SEND_FLAG_RNDV);
  }
}

TEST_SUITE("remote.parts") {
  // A lone tensor whose header and bytes are more than one transport segment travels as its
  // message and Part messages (wire.hpp, PartHeader); the receiver joins them.

  // The remote header of a float32 [n] tensor, the stream's tensor `sequence`, that says its
  // bytes follow in parts (`in_parts`).
  std::vector<unsigned char> head_of(int64_t n, uint32_t sequence, uint32_t in_parts = 1) {
    Forged f = forged_float32({n}, sequence);
    f.extension.in_parts = in_parts;
    std::vector<unsigned char> out(dlb::ipc::kMaxRemoteHeaderBytes);
    out.resize(dlb::ipc::pack_remote(f.wire, f.extension, out.data()));
    return out;
  }

  std::vector<unsigned char> part_of(uint32_t sequence, uint64_t offset) {
    dlb::ipc::PartHeader part{};
    std::memcpy(part.magic, dlb::ipc::kPartMagic, 8);
    part.sequence = sequence;
    part.offset = offset;
    std::vector<unsigned char> out(sizeof part);
    std::memcpy(out.data(), &part, sizeof part);
    return out;
  }

  // What a raw peer sends: a message's id, header, `bytes` bytes from `offset` of a float32
  // tensor counting from 0 (or `data`, where it is given), and UCX's send flags.
  struct Message {
    unsigned id;
    std::vector<unsigned char> header;
    size_t offset;
    size_t bytes;
    uint32_t flags;
    std::vector<unsigned char> data = {};
  };

  const std::vector<float>& counting_floats() {
    static const std::vector<float> values = [] {
      std::vector<float> v(4096);
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
      return v;
    }();
    return values;
  }

  void send_all(raw::Peer& peer, const std::vector<Message>& messages) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(counting_floats().data());
    for (const Message& m : messages) {
      // A refused rendezvous fails at the peer: the receive says why.
      if (m.data.empty()) {
        peer.send(m.id, m.header.data(), m.header.size(), bytes + m.offset, m.bytes, m.flags);
      } else {
        peer.send(m.id, m.header.data(), m.header.size(), m.data.data(), m.data.size(), m.flags);
      }
    }
  }

  TEST_CASE_FIXTURE(TcpPair, "a lone tensor over one segment arrives whole and in order with "
                             "the tensors around it") {
    // 64 KiB and 65000 bytes go in two pieces, 64000 bytes and 4 bytes in one, 100 KiB in two,
    // 256 KiB (kLoneEagerMaxBytes) in five; 4 bytes more go by rendezvous.
    const int64_t sizes[] = {16384, 16250, 16000, 1, 25600, 65536, 65537, 16384};
    dlb_error e;
    for (size_t i = 0; i < std::size(sizes); ++i) {
      CAPTURE(sizes[i]);
      Tensor sent, received;
      sent.handle = counting(sizes[i], static_cast<float>(1000 * i));
      REQUIRE(transfer(pair.client.handle, sent.handle, pair.server.handle, &received.handle,
                       &e) == DLB_OK);
      CHECK(counts(received.handle, sizes[i], static_cast<float>(1000 * i)));
    }
    // An odd number of bytes: pieces of 32768 and 32767.
    const int64_t n = 65535;
    Tensor bytes, received;
    REQUIRE(dlb_tensor_allocate(kCpu, DLDataType{kDLUInt, 8, 1}, 1, &n, nullptr, 0,
                                &bytes.handle, &e) == DLB_OK);
    auto* out = static_cast<unsigned char*>(bytes.handle->dl_tensor.data);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<unsigned char>(i * 7 + i / 256);
    REQUIRE(transfer(pair.client.handle, bytes.handle, pair.server.handle, &received.handle, &e) ==
            DLB_OK);
    REQUIRE(received.handle->dl_tensor.shape[0] == n);
    CHECK(std::memcmp(received.handle->dl_tensor.data, out, static_cast<size_t>(n)) == 0);
  }

  TEST_CASE_FIXTURE(RawPeerEnds, "the sender splits such a tensor into a message and parts "
                                 "that fit a segment each") {
    raw::Peer& peer = *raw_peer;
    dlb_error e;
    Tensor large, below, largest;
    large.handle = counting(16384, 0.0f);
    below.handle = counting(16000, 0.0f);
    largest.handle = counting(65536, 0.0f);  // 256 KiB, the most that goes eagerly
    REQUIRE(dlb_channel_send(server.handle, large.handle, 0, &e) == DLB_OK);
    REQUIRE(dlb_channel_send(server.handle, below.handle, 0, &e) == DLB_OK);
    REQUIRE(dlb_channel_send(server.handle, largest.handle, 0, &e) == DLB_OK);
    REQUIRE(peer.progress_until([&] { return peer.arrivals().size() >= 8; }));
    const std::vector<raw::Arrival>& got = peer.arrivals();
    REQUIRE(got.size() == 8);
    const size_t header = dlb::ipc::remote_header_size(1);
    auto extension_of = [&](const raw::Arrival& a) {
      dlb::ipc::RemoteExtension x{};
      REQUIRE(a.header.size() == header);
      std::memcpy(&x, a.header.data() + dlb::ipc::remote_wire_size(1),
                  dlb::ipc::kRemoteExtensionBytes);
      return x;
    };
    // 64 KiB: its message with the first half, a part with the second.
    CHECK(got[0].id == raw::kAmTensor);
    const dlb::ipc::RemoteExtension first = extension_of(got[0]);
    CHECK(first.in_parts == 1);
    CHECK(first.payload_bytes == 65536);
    CHECK(got[0].data->size() == 32768);
    CHECK(got[1].id == raw::kAmPart);
    dlb::ipc::PartHeader part{};
    REQUIRE(got[1].header.size() == sizeof part);
    std::memcpy(&part, got[1].header.data(), sizeof part);
    CHECK(std::memcmp(part.magic, dlb::ipc::kPartMagic, 8) == 0);
    CHECK(part.sequence == 0);
    CHECK(part.offset == 32768);
    CHECK(got[1].data->size() == 32768);
    for (size_t i = 0; i < 2; ++i) {
      CHECK(!got[i].rendezvous);
      CHECK(got[i].header.size() + got[i].data->size() <= dlb::ipc::kMessageBytes);
    }
    // 64000 bytes fit one message with their header.
    CHECK(got[2].id == raw::kAmTensor);
    CHECK(extension_of(got[2]).in_parts == 0);
    CHECK(got[2].data->size() == 64000);
    CHECK(std::memcmp(got[0].data->data(), large.handle->dl_tensor.data, 32768) == 0);
    CHECK(std::memcmp(got[1].data->data(),
                      static_cast<const char*>(large.handle->dl_tensor.data) + 32768,
                      32768) == 0);
    // 256 KiB: five pieces of about equal size (52429 bytes, the last 52428), eagerly, in order.
    CHECK(got[3].id == raw::kAmTensor);
    const dlb::ipc::RemoteExtension fifth = extension_of(got[3]);
    CHECK(fifth.in_parts == 1);
    CHECK(fifth.payload_bytes == 262144);
    const auto* bytes = static_cast<const unsigned char*>(largest.handle->dl_tensor.data);
    uint64_t offset = 0;
    for (size_t i = 3; i < 8; ++i) {
      CAPTURE(i);
      CHECK(!got[i].rendezvous);
      CHECK(got[i].header.size() + got[i].data->size() <= dlb::ipc::kMessageBytes);
      CHECK(got[i].data->size() == (i < 7 ? 52429u : 52428u));
      if (i > 3) {
        CHECK(got[i].id == raw::kAmPart);
        REQUIRE(got[i].header.size() == sizeof part);
        std::memcpy(&part, got[i].header.data(), sizeof part);
        CHECK(part.sequence == 2);
        CHECK(part.offset == offset);
      }
      CHECK(std::memcmp(got[i].data->data(), bytes + offset, got[i].data->size()) == 0);
      offset += got[i].data->size();
    }
    CHECK(offset == 262144);
  }

  TEST_CASE_FIXTURE(RawPeerEnds, "a tensor with a long header goes in one piece more where "
                                 "its first would not fit a segment") {
    // 64 dimensions make a header of 1128 bytes. 128400 bytes with it fit two messages by
    // their sum, but the first, the header and half the bytes (64200), would not fit one.
    raw::Peer& peer = *raw_peer;
    dlb_error e;
    std::vector<int64_t> shape(DLB_MAX_NDIM, 1);
    shape[0] = 128400;
    Tensor wide;
    REQUIRE(dlb_tensor_allocate(kCpu, DLDataType{kDLUInt, 8, 1}, DLB_MAX_NDIM, shape.data(),
                                nullptr, 0, &wide.handle, &e) == DLB_OK);
    auto* bytes = static_cast<unsigned char*>(wide.handle->dl_tensor.data);
    for (size_t i = 0; i < 128400; ++i) bytes[i] = static_cast<unsigned char>(i * 13 + i / 251);
    REQUIRE(dlb_channel_send(server.handle, wide.handle, 0, &e) == DLB_OK);
    REQUIRE(peer.progress_until([&] { return peer.arrivals().size() >= 3; }));
    const std::vector<raw::Arrival>& got = peer.arrivals();
    REQUIRE(got.size() == 3);
    CHECK(got[0].header.size() == dlb::ipc::kMaxRemoteHeaderBytes);
    uint64_t offset = 0;
    for (size_t i = 0; i < 3; ++i) {
      CAPTURE(i);
      CHECK(got[i].id == (i == 0 ? raw::kAmTensor : raw::kAmPart));
      CHECK(!got[i].rendezvous);
      CHECK(got[i].header.size() + got[i].data->size() <= dlb::ipc::kMessageBytes);
      CHECK(got[i].data->size() == 42800);
      CHECK(std::memcmp(got[i].data->data(), bytes + offset, got[i].data->size()) == 0);
      offset += got[i].data->size();
    }
  }

  TEST_CASE_FIXTURE(RawPeerEnds,
                    "a tensor sent by rendezvous sends its first bytes in parts beside it") {
    raw::Peer& peer = *raw_peer;
    dlb_error e;
    Tensor large;
    large.handle = counting(262144, 0.0f);  // 1 MiB
    int sent = -1;
    // The send ends when the peer has the rendezvous's bytes.
    std::thread sender([&] { sent = dlb_channel_send(server.handle, large.handle, 0, &e); });
    const bool whole = peer.progress_until(
        [&] { return peer.arrivals().size() >= 3 && peer.arrivals_whole(); });
    sender.join();
    REQUIRE(whole);
    CHECK(sent == DLB_OK);
    const std::vector<raw::Arrival>& got = peer.arrivals();
    REQUIRE(got.size() == 3);
    // The rendezvous first (the receiver makes the tensor from its header), with the bytes
    // after the lead; then the lead in two parts of equal size.
    const uint64_t lead = dlb::ipc::kLeadBytes;
    CHECK(got[0].id == raw::kAmTensor);
    CHECK(got[0].rendezvous);
    dlb::ipc::RemoteExtension x{};
    REQUIRE(got[0].header.size() == dlb::ipc::remote_header_size(1));
    std::memcpy(&x, got[0].header.data() + dlb::ipc::remote_wire_size(1),
                dlb::ipc::kRemoteExtensionBytes);
    CHECK(x.in_parts == 1);
    CHECK(x.payload_bytes == 1048576);
    CHECK(got[0].data->size() == 1048576 - lead);
    const auto* bytes = static_cast<const unsigned char*>(large.handle->dl_tensor.data);
    CHECK(std::memcmp(got[0].data->data(), bytes + lead, 1048576 - lead) == 0);
    for (size_t i = 1; i < 3; ++i) {
      CAPTURE(i);
      CHECK(got[i].id == raw::kAmPart);
      CHECK(!got[i].rendezvous);
      dlb::ipc::PartHeader part{};
      REQUIRE(got[i].header.size() == sizeof part);
      std::memcpy(&part, got[i].header.data(), sizeof part);
      CHECK(part.sequence == 0);
      CHECK(part.offset == (i - 1) * lead / 2);
      CHECK(got[i].data->size() == lead / 2);
      CHECK(got[i].header.size() + got[i].data->size() <= dlb::ipc::kMessageBytes);
      CHECK(std::memcmp(got[i].data->data(), bytes + part.offset, lead / 2) == 0);
    }
  }

  TEST_CASE("forged parts end the stream with a message that names the fault") {
    Options options;
    Channel listener;
    REQUIRE(listen("tcp", options, &listener) == DLB_OK);
    dlb_error e;
    const uint32_t eager = UCP_AM_SEND_FLAG_EAGER;
    // Tensor 0, a float32 [256], with its first 100 bytes: the rest is owed in parts.
    const Message begun{raw::kAmTensor, head_of(256, 0), 0, 100, eager};
    struct Case {
      const char* name;
      std::vector<Message> messages;
      int good;  // tensors delivered before the fault (float32 [256], then [8])
      const char* message;
    };
    const Case cases[] = {
        {"a tensor in three pieces, then one whole",
         {begun,
          {raw::kAmPart, part_of(0, 100), 100, 400, eager},
          {raw::kAmPart, part_of(0, 500), 500, 524, eager},
          {raw::kAmTensor, head_of(8, 1, 0), 0, 32, eager}},
         2, nullptr},
        {"a part that no tensor awaits", {{raw::kAmPart, part_of(0, 0), 0, 16, eager}}, 0,
         "the peer sent a part of tensor 0, but no tensor awaits parts"},
        {"a part at another offset",
         {begun,
          {raw::kAmPart, part_of(0, 200), 200, 824, eager}},
         0,
         "the peer sent 824 bytes at byte 200 of tensor 0, where tensor 0 awaits its bytes from "
         "byte 100 to 1024"},
        {"a part of another tensor",
         {begun,
          {raw::kAmPart, part_of(1, 100), 100, 924, eager}},
         0,
         "the peer sent 924 bytes at byte 100 of tensor 1, where tensor 0 awaits its bytes from "
         "byte 100 to 1024"},
        {"a part past the tensor's bytes",
         {begun,
          {raw::kAmPart, part_of(0, 100), 100, 1000, eager}},
         0,
         "the peer sent 1000 bytes at byte 100 of tensor 0, where tensor 0 awaits its bytes from "
         "byte 100 to 1024"},
        {"an empty part",
         {begun,
          {raw::kAmPart, part_of(0, 100), 100, 0, eager}},
         0,
         "the peer sent 0 bytes at byte 100 of tensor 0, where tensor 0 awaits its bytes from "
         "byte 100 to 1024"},
        {"a part's header cut short",
         {begun,
          {raw::kAmPart, [] { auto h = part_of(0, 100); h.resize(8); return h; }(), 100, 924,
           eager}},
         0, "the peer sent a part of a tensor with a malformed header (8 bytes)"},
        {"another tensor before the parts",
         {begun,
          {raw::kAmTensor, head_of(8, 1, 0), 0, 32, eager}},
         0, "the peer sent another message before the parts of the tensor it had begun"},
        {"a part by rendezvous",
         {begun,
          {raw::kAmPart, part_of(0, 100), 100, 924, UCP_AM_SEND_FLAG_RNDV}},
         0, "the peer sent a part of a tensor by rendezvous; parts come eagerly"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.name);
      raw::Peer peer(dlb_channel_port(listener.handle));
      Channel server;
      accept_authenticated(listener, peer, &server);
      // Beside the receive: a rendezvous part ends only when the receiver refused it.
      std::thread sender([&] { send_all(peer, c.messages); });
      for (int i = 0; i < c.good; ++i) {
        Tensor received;
        REQUIRE(dlb_channel_receive(server.handle, &received.handle, &e) == DLB_OK);
        CHECK(counts(received.handle, i == 0 ? 256 : 8, 0.0f));
      }
      if (c.message != nullptr) expect_broken_stream(server, c.message);
      sender.join();
    }
  }

  TEST_CASE_FIXTURE(RawPeerAt4096,
                    "a refused tensor's parts are dropped, and the stream stays in step") {
    raw::Peer& peer = *raw_peer;
    dlb_error e;
    const uint32_t eager = UCP_AM_SEND_FLAG_EAGER;
    // A batch of one float32 [256] record, the stream's tensor 3, that says parts follow.
    std::vector<unsigned char> batch_header(sizeof(dlb::ipc::BatchHeader));
    dlb::ipc::BatchHeader h{};
    std::memcpy(h.magic, dlb::ipc::kBatchMagic, 8);
    h.count = 1;
    std::memcpy(batch_header.data(), &h, sizeof h);
    const std::vector<unsigned char> record_head = head_of(256, 3);
    const dlb::ipc::BatchRecord frame{static_cast<uint32_t>(record_head.size()), 0, 1024};
    std::vector<unsigned char> record(sizeof frame);
    std::memcpy(record.data(), &frame, sizeof frame);
    record.insert(record.end(), record_head.begin(), record_head.end());
    const auto* floats = reinterpret_cast<const unsigned char*>(counting_floats().data());
    record.insert(record.end(), floats, floats + 1024);
    const struct {
      const char* name;
      std::vector<Message> messages;
      int status;
      const char* message;  // after "tcp://127.0.0.1:PORT: " for a limit
    } steps[] = {
        {"all of its bytes with the message that says parts follow",
         {{raw::kAmTensor, head_of(256, 0), 0, 1024, eager}}, DLB_ERR_PROTOCOL,
         "a tensor of 1024 bytes says some of its bytes come in parts, but 1024 came with it"},
        {"a parts field of 2",
         {{raw::kAmTensor, head_of(256, 1, 2), 0, 1024, eager}}, DLB_ERR_PROTOCOL,
         "the descriptor's extension frame says 2 where 0 or 1 (its bytes follow in parts) "
         "belongs"},
        {"over the receiver's limit, in parts",
         {{raw::kAmTensor, head_of(2048, 2), 0, 100, eager},
          {raw::kAmPart, part_of(2, 100), 100, 4000, eager},
          {raw::kAmPart, part_of(2, 4100), 4100, 4092, eager}},
         DLB_ERR_LIMIT, nullptr},
        {"a batch's tensor that says parts follow",
         {{raw::kAmBatch, batch_header, 0, 0, eager, record}}, DLB_ERR_PROTOCOL,
         "a tensor in a batch says some of its bytes come in parts; a batch's tensors come "
         "whole"},
        {"a rendezvous with all its bytes that says parts follow",
         {{raw::kAmTensor, head_of(256, 4), 0, 1024, UCP_AM_SEND_FLAG_RNDV}}, DLB_ERR_PROTOCOL,
         "a tensor of 1024 bytes says some of its bytes come in parts, but 1024 came with it"},
        {"a good tensor in parts",
         {{raw::kAmTensor, head_of(256, 5), 0, 512, eager},
          {raw::kAmPart, part_of(5, 512), 512, 512, eager}},
         DLB_OK, nullptr},
        {"a good rendezvous with its first bytes in a part",
         {{raw::kAmTensor, head_of(256, 6), 512, 512, UCP_AM_SEND_FLAG_RNDV},
          {raw::kAmPart, part_of(6, 0), 0, 512, eager}},
         DLB_OK, nullptr},
    };
    for (const auto& step : steps) {
      CAPTURE(step.name);
      std::thread sender([&] { send_all(peer, step.messages); });
      Tensor received;
      CHECK(dlb_channel_receive(server.handle, &received.handle, &e) == step.status);
      sender.join();
      if (step.status == DLB_OK) {
        CHECK(counts(received.handle, 256, 0.0f));
      } else {
        CHECK(received.handle == nullptr);
      }
      if (step.message != nullptr) CHECK(std::string(e.message) == step.message);
      if (step.status == DLB_ERR_LIMIT) {
        CHECK(std::string(e.message).rfind("refused a tensor of 8192 bytes from tcp://", 0) == 0);
      }
    }
  }

  TEST_CASE("a peer gone in the middle of a tensor's parts: the receive says so, nothing "
            "stays") {
    Options options;
    Channel listener;
    REQUIRE(listen("tcp", options, &listener) == DLB_OK);
    const int64_t live_before = dlb_tensor_live_count();
    dlb_error e;
    {
      Channel server;
      {
        raw::Peer peer(dlb_channel_port(listener.handle));
        accept_authenticated(listener, peer, &server);
        send_all(peer, {{raw::kAmTensor, head_of(256, 0), 0, 100, UCP_AM_SEND_FLAG_EAGER}});
      }  // the peer's end closes here
      Tensor received;
      CHECK(dlb_channel_receive(server.handle, &received.handle, &e) == DLB_ERR_PEER_CLOSED);
      CHECK(received.handle == nullptr);
    }
    CHECK(dlb_tensor_live_count() == live_before);
  }
}

TEST_SUITE("remote.faults") {
  // The sender is another process, killed while it sends 64 MiB tensors: the receive that was
  // taking one either has all of it or fails with DLB_ERR_PEER_CLOSED; nothing is left open, and
  // the listener serves the next peer.
  TEST_CASE("a peer killed mid-transfer leaks nothing and the listener keeps serving") {
    const char* sender = std::getenv("DLBRIDGE_REMOTE_SENDER");
    REQUIRE(sender != nullptr);
    Options options;
    dlb_error e;
    REQUIRE(dlb_channel_options_set_max_tensor_bytes(options.handle, 1ull << 30, &e) == DLB_OK);
    const int descriptors_before = open_descriptors();
    Channel listener;
    REQUIRE(listen("tcp", options, &listener) == DLB_OK);
    const std::string to = address("tcp", dlb_channel_port(listener.handle));
    const std::string key = hex(kKey);
    for (int round = 0; round < 2; ++round) {
      CAPTURE(round);
      const char* argv[] = {sender, to.c_str(), key.c_str(), "67108864", "1000", nullptr};
      pid_t child = -1;
      REQUIRE(posix_spawn(&child, sender, nullptr, nullptr, const_cast<char**>(argv), environ) == 0);
      Channel server;
      REQUIRE(dlb_channel_accept(listener.handle, &server.handle, &e) == DLB_OK);
      Tensor first;
      REQUIRE(dlb_channel_receive(server.handle, &first.handle, &e) == DLB_OK);
      CHECK(holds_filled(first.handle));
      // Killed while the next tensors travel.
      std::thread killer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        kill(child, SIGKILL);
      });
      int status = DLB_OK;
      for (int i = 0; i < 1000 && status == DLB_OK; ++i) {
        Tensor next;
        status = dlb_channel_receive(server.handle, &next.handle, &e);
        if (status == DLB_OK) CHECK(holds_filled(next.handle));
      }
      killer.join();
      int exit_status = 0;
      waitpid(child, &exit_status, 0);
      CHECK(status == DLB_ERR_PEER_CLOSED);
    }
    dlb_channel_close(listener.handle);
    listener.handle = nullptr;
    CHECK(open_descriptors() == descriptors_before);
  }
}

int main(int argc, char** argv) {
  // The first remote call loads UCX, which installs its own handlers of the error signals: the
  // library must give the process's back (a JVM dies without its SIGSEGV handler).
  struct sigaction mine {};
  mine.sa_handler = on_error_signal;
  for (int s : {SIGSEGV, SIGBUS}) sigaction(s, &mine, nullptr);
  dlb_error error;
  const int available = dlb_remote_available(&error);
  for (int s : {SIGSEGV, SIGBUS}) {
    struct sigaction now {};
    sigaction(s, nullptr, &now);
    error_handlers_kept = error_handlers_kept && now.sa_handler == on_error_signal;
  }
  if (available != DLB_OK) {
    std::printf("skipped: %s\n", error.message);
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
