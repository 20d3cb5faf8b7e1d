// Remote channels through the C++ helpers (dlbridge/channel.hpp): a Listener at
// tcp://127.0.0.1:0 on one thread and a Channel connecting to it on another. Tensors come back
// as new IS_COPIED tensors; a wrong key is DLB_ERR_PERMISSION at both ends and a missing one
// DLB_ERR_INVALID_ARGUMENT, with the core's messages. Its own program (suites cpp and remote):
// main() skips the whole of it (77) with the core's reason when remote_available() is false.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#define DOCTEST_CONFIG_IMPLEMENT
#include "helpers.hpp"

using dlbridge::Channel;
using dlbridge::ChannelOptions;
using dlbridge::Device;
using dlbridge::DType;
using dlbridge::Listener;
using dlbridge::Tensor;
using namespace std::chrono_literals;

namespace {

const std::string kKey = "a key of thirty-two bytes, for tests";

ChannelOptions keyed(const std::string& key = kKey) {
  ChannelOptions options;
  options.set_key(key).set_timeout(30s);  // a broken peer fails the test instead of hanging it
  return options;
}

std::string address_of(const char* scheme, int32_t port) {
  return std::string(scheme) + "://127.0.0.1:" + std::to_string(port);
}

// Runs `body` on a thread of its own; join() rethrows what it threw, so that doctest's checks
// stay on the main thread.
class Side {
 public:
  template <class F>
  explicit Side(F body)
      : thread_([this, body]() mutable {
          try {
            body();
          } catch (...) {
            failure_ = std::current_exception();
          }
        }) {}
  ~Side() {
    if (thread_.joinable()) thread_.join();
  }
  void join() {
    thread_.join();
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  std::exception_ptr failure_;
  std::thread thread_;
};

// The listener's half of a round trip: accept, receive a float32 [2, 3], write 100 into its
// first element, send it back, and report what it saw.
struct Echo {
  bool remote = false;
  uint64_t flags = 0;
  std::vector<int64_t> shape;
  std::vector<float> values;
  int after_close = DLB_OK;  // the status of a receive once the peer closed
};

void round_trip(const char* scheme) {
  Listener listener = Listener::listen(std::string(scheme) + "://127.0.0.1:0", keyed());
  CHECK(listener.is_remote());
  const int32_t port = listener.port();
  REQUIRE(port > 0);
  Echo echo;
  Side server([&] {
    Channel channel = listener.accept();
    echo.remote = channel.is_remote();
    Tensor got = channel.receive();
    echo.flags = got.flags();
    echo.shape = got.shape();
    echo.values = got.to_vector<float>();
    got.view<float>()(0, 0) = 100;
    channel.send(got);
    try {
      channel.receive();
    } catch (const dlbridge::Error& error) {
      echo.after_close = error.status();
    }
  });
  std::vector<float> mine_after, theirs;
  uint64_t back_flags = 0;
  {
    Channel client = Channel::connect(address_of(scheme, port), keyed());
    CHECK(client.is_remote());
    CHECK(client.port() > 0);
    Tensor x = Tensor::allocate(Device::cpu(), DType::float32(), {2, 3});  // not shareable
    x.copy_from(std::vector<float>{0, 1, 2, 3, 4, 5});
    client.send(x);
    Tensor back = client.receive();
    back_flags = back.flags();
    theirs = back.to_vector<float>();
    mine_after = x.to_vector<float>();
  }
  server.join();
  CHECK(echo.remote);
  CHECK((echo.flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
  CHECK(echo.shape == std::vector<int64_t>{2, 3});
  CHECK(echo.values == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(dlb_status_name(echo.after_close) == std::string("DLB_ERR_PEER_CLOSED"));
  CHECK((back_flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
  CHECK(theirs == std::vector<float>{100, 1, 2, 3, 4, 5});
  CHECK(mine_after == std::vector<float>{0, 1, 2, 3, 4, 5});  // the bytes were copied
}

}  // namespace

TEST_SUITE("cpp.remote") {
  TEST_CASE("a tensor's round trip over tcp://127.0.0.1:0: new IS_COPIED tensors both ways") {
    round_trip("tcp");
  }

  TEST_CASE("the same over ucx://, UCX's own choice of transports") { round_trip("ucx"); }

  TEST_CASE("a wrong key: PERMISSION at both ends, and the listener keeps serving") {
    Listener listener = Listener::listen("tcp://127.0.0.1:0", keyed());
    const std::string address = address_of("tcp", listener.port());
    std::string refused;
    std::vector<int32_t> served;
    Side server([&] {
      try {
        listener.accept();
      } catch (const dlbridge::Error& error) {
        CHECK(error.status() == DLB_ERR_PERMISSION);
        refused = error.what();
      }
      Channel channel = listener.accept();  // the next peer has the key
      served = channel.receive().to_vector<int32_t>();
    });
    CHECK_DLB_ERROR(Channel::connect(address, keyed(std::string(32, 'w'))), DLB_ERR_PERMISSION,
                    "the listener at " + address + " refused this channel's key");
    Channel client = Channel::connect(address, keyed());
    client.send(Tensor::from_vector(std::vector<int32_t>{7, 8}));
    server.join();
    CHECK(served == std::vector<int32_t>{7, 8});
    // "refused the peer at tcp://127.0.0.1:PORT: ...", PORT the connecting side's.
    const std::string head = "refused the peer at tcp://127.0.0.1:";
    const std::string tail = ": it did not prove it holds the channel's key";
    REQUIRE(refused.size() > head.size() + tail.size());
    CHECK(refused.compare(0, head.size(), head) == 0);
    CHECK(refused.compare(refused.size() - tail.size(), tail.size(), tail) == 0);
    const std::string port = refused.substr(head.size(), refused.size() - head.size() - tail.size());
    CHECK(port.find_first_not_of("0123456789") == std::string::npos);
  }

  TEST_CASE("no key: INVALID_ARGUMENT to listen and to connect, with the core's message") {
    const std::string message =
        "a remote channel needs a key that its peers share (dlb_channel_options_set_key)";
    CHECK_DLB_ERROR(Listener::listen("tcp://127.0.0.1:0", ChannelOptions()),
                    DLB_ERR_INVALID_ARGUMENT, message);
    Listener listener = Listener::listen("tcp://127.0.0.1:0", keyed());
    CHECK_DLB_ERROR(Channel::connect(address_of("tcp", listener.port()), ChannelOptions()),
                    DLB_ERR_INVALID_ARGUMENT, message);
  }
}

// Runs the cases, or skips them all (77) with the core's reason when remote channels cannot be
// made in this process.
int main(int argc, char** argv) {
  try {
    dlbridge::require_remote();
  } catch (const dlbridge::Error& error) {
    std::printf("skipped: %s\n", error.what());
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
