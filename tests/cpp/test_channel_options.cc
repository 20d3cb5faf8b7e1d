// dlbridge::ChannelOptions (dlbridge/channel.hpp): a move-only owner of dlb_channel_options whose
// setters report the core's statuses and messages, local channels made with options, and
// is_remote()/port()/remote_available() answering as the C calls do. Needs no UCX: remote
// channels themselves are test_remote.cc's.
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "helpers.hpp"

using dlbridge::Channel;
using dlbridge::ChannelOptions;
using dlbridge::Device;
using dlbridge::DType;
using dlbridge::Listener;
using dlbridge::Tensor;
using namespace std::chrono_literals;

namespace {

static_assert(!std::is_copy_constructible<ChannelOptions>::value, "ChannelOptions is move-only");
static_assert(!std::is_copy_assignable<ChannelOptions>::value, "ChannelOptions is move-only");
static_assert(std::is_nothrow_move_constructible<ChannelOptions>::value, "");
static_assert(std::is_nothrow_move_assignable<ChannelOptions>::value, "");

// What the C setter says for these arguments, to hold the C++ layer to the core's words.
template <class F>
CResult c_options_call(F&& f) {
  dlb_channel_options* options = nullptr;
  dlb_error error{};
  REQUIRE(dlb_channel_options_create(&options, &error) == DLB_OK);
  const CResult result = c_call([&](dlb_error* e) { return f(options, e); });
  dlb_channel_options_free(options);
  return result;
}

}  // namespace

TEST_SUITE("cpp.channel_options") {
  TEST_CASE("the key: 16 to 1024 bytes from any contiguous byte container, else the core's error") {
    ChannelOptions options;
    CHECK(static_cast<bool>(options));
    const std::vector<uint8_t> short_key(15, 7);
    const CResult c_short = c_options_call([&](dlb_channel_options* o, dlb_error* e) {
      return dlb_channel_options_set_key(o, short_key.data(), short_key.size(), e);
    });
    CHECK(c_short.status == DLB_ERR_INVALID_ARGUMENT);
    CHECK(c_short.message ==
          "a key of 15 bytes: a channel's key has 16 to 1024 bytes (random ones: 32 is plenty)");
    CHECK_DLB_ERROR(options.set_key(short_key), c_short.status, c_short.message);
    CHECK_DLB_ERROR(options.set_key(std::vector<uint8_t>(1025, 1)), DLB_ERR_INVALID_ARGUMENT,
                    "a key of 1025 bytes: a channel's key has 16 to 1024 bytes (random ones: 32 "
                    "is plenty)");
    CHECK_DLB_ERROR(options.set_key(nullptr, 32), DLB_ERR_INVALID_ARGUMENT, "key is NULL");

    // Each container's bytes, all of them: the setter returns the options for chaining.
    const std::array<std::byte, 16> bytes{};
    const unsigned char raw[32] = {1, 2, 3};
    CHECK(&options.set_key(std::vector<uint8_t>(16, 3)) == &options);
    CHECK(&options.set_key(bytes) == &options);
    CHECK(&options.set_key(std::string(1024, 'k')) == &options);
    CHECK(&options.set_key(raw) == &options);
    CHECK(&options.set_key(raw, 16) == &options);
  }

  TEST_CASE("receive device, limits, time limit and listener uid: checked by the core, chained") {
    ChannelOptions options;
    CHECK(&options.set_receive_device(Device::cpu())
               .set_max_tensor_bytes(1)
               .set_max_in_flight(65536)
               .set_timeout(5s)
               .set_timeout(std::nullopt)
               .set_listener_uid(dlbridge::kUidSelf) == &options);
    CHECK_DLB_ERROR(options.set_receive_device(Device::opencl()), DLB_ERR_UNSUPPORTED,
                    "a remote channel receives into cpu, cuda_host, cuda or cuda_managed memory, "
                    "not opencl");
    const CResult c_cpu1 = c_options_call([](dlb_channel_options* o, dlb_error* e) {
      return dlb_channel_options_set_receive_device(o, DLDevice{kDLCPU, 1}, e);
    });
    CHECK(c_cpu1.status != DLB_OK);
    CHECK_DLB_ERROR(options.set_receive_device(Device(kDLCPU, 1)), c_cpu1.status, c_cpu1.message);
    CHECK_DLB_ERROR(options.set_max_tensor_bytes(0), DLB_ERR_INVALID_ARGUMENT,
                    "a maximum tensor size of 0 bytes: at least 1");
    CHECK_DLB_ERROR(options.set_max_in_flight(0), DLB_ERR_INVALID_ARGUMENT,
                    "a maximum of 0 tensors in flight: 1 to 65536");
    CHECK_DLB_ERROR(options.set_max_in_flight(65537), DLB_ERR_INVALID_ARGUMENT,
                    "a maximum of 65537 tensors in flight: 1 to 65536");
    CHECK_DLB_ERROR(options.set_timeout(-5ns), DLB_ERR_INVALID_ARGUMENT,
                    "timeout -5 ns is negative: a time limit is 0 ns or more, or none");
    options.set_timeout(-1ns);  // the core's "no limit"
  }

  TEST_CASE("a moved-from ChannelOptions is empty: its setters get the core's NULL error") {
    ChannelOptions first;
    ChannelOptions second(std::move(first));
    CHECK_FALSE(static_cast<bool>(first));  // NOLINT(bugprone-use-after-move): what is tested
    CHECK(first.get() == nullptr);
    CHECK(second.get() != nullptr);
    CHECK_DLB_ERROR(first.set_max_in_flight(1), DLB_ERR_INVALID_ARGUMENT, "options is NULL");
    CHECK_DLB_ERROR(first.set_key(std::string(32, 'k')), DLB_ERR_INVALID_ARGUMENT,
                    "options is NULL");
    ChannelOptions third;
    third = std::move(second);
    CHECK(third.get() != nullptr);
    CHECK(second.get() == nullptr);  // NOLINT(bugprone-use-after-move)
  }

  TEST_CASE("a local channel made with options: not remote, no port, the options' time limit") {
    char folder[] = "/tmp/dlbridge-cpp-options-XXXXXX";
    REQUIRE(mkdtemp(folder) != nullptr);
    const std::string path = std::string(folder) + "/s";
    {
      ChannelOptions options;
      options.set_timeout(20ms).set_key(std::string(32, 'k'));  // a local channel ignores the key
      Listener listener = Listener::listen(path, options);
      Channel client = Channel::connect(path, options);
      Channel server = listener.accept();
      CHECK_FALSE(listener.is_remote());
      CHECK_FALSE(client.is_remote());
      CHECK(listener.port() == -1);
      CHECK(server.port() == -1);
      // The options' limit is the channel's: a receive with nothing sent runs out of time.
      const CResult c_timeout = c_call([&](dlb_error* e) {
        DLManagedTensorVersioned* out = nullptr;
        return dlb_channel_receive(client.get(), &out, e);
      });
      CHECK(c_timeout.status == DLB_ERR_TIMEOUT);
      Tensor x = Tensor::allocate_shareable(Device::cpu(), DType::float32(), {3});
      x.copy_from(std::vector<float>{1, 2, 3});
      server.send(x);
      CHECK(client.receive().to_vector<float>() == std::vector<float>{1, 2, 3});
    }
    CHECK(rmdir(folder) == 0);  // the listener removed its socket file
    CHECK_FALSE(Channel().is_remote());
    CHECK(Listener().port() == -1);
  }

  TEST_CASE("remote_available() and require_remote() answer as dlb_remote_available") {
    const CResult c = c_call([](dlb_error* e) { return dlb_remote_available(e); });
    CHECK(dlbridge::remote_available() == (c.status == DLB_OK));
    if (c.status == DLB_OK) {
      dlbridge::require_remote();
    } else {
      CHECK(c.status == DLB_ERR_UNSUPPORTED);
      CHECK_DLB_ERROR(dlbridge::require_remote(), c.status, c.message);
    }
  }
}
