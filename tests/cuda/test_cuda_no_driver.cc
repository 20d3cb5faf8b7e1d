// Suite 'cuda', the machine without an NVIDIA driver: the library (built with CUDA) loads, does
// all CPU work, and answers every CUDA request with the exact status and message. Skipped (77)
// where a driver is installed: test_cuda covers that machine.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <string>
#include <vector>

#include "dlbridge/dlbridge.h"

namespace {

constexpr DLDataType kF32{kDLFloat, 32, 1};
const std::string kNoDriver = "no CUDA driver found";

std::string message(const dlb_error& error) { return error.message; }

dlb_error fresh() {
  dlb_error error;
  std::memset(error.message, 'x', sizeof(error.message) - 1);
  error.message[sizeof(error.message) - 1] = '\0';
  return error;
}

struct Released {
  int calls = 0;
};
void count_release(void* ctx) { static_cast<Released*>(ctx)->calls++; }

}  // namespace

TEST_CASE("the CUDA backends are registered without touching the driver") {
  CHECK(dlb_backend_is_registered(kDLCUDA) == 1);
  CHECK(dlb_backend_is_registered(kDLCUDAHost) == 1);
  CHECK(dlb_backend_is_registered(kDLCUDAManaged) == 1);
}

TEST_CASE("queries report the missing driver") {
  dlb_error error = fresh();
  CHECK(dlb_cuda_is_available(&error) == DLB_ERR_DEVICE_UNAVAILABLE);
  CHECK(message(error) == kNoDriver);
  CHECK(dlb_cuda_is_available(nullptr) == DLB_ERR_DEVICE_UNAVAILABLE);

  int32_t count = 99;
  error = fresh();
  CHECK(dlb_cuda_device_count(&count, &error) == DLB_ERR_DEVICE_UNAVAILABLE);
  CHECK(count == 0);
  CHECK(message(error) == kNoDriver);
  error = fresh();
  CHECK(dlb_cuda_device_count(nullptr, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(message(error) == "count is NULL");

  int local = 0;
  DLDevice device{kDLCUDA, 7};
  error = fresh();
  CHECK(dlb_cuda_pointer_device(&local, &device, &error) == DLB_ERR_DEVICE_UNAVAILABLE);
  CHECK(message(error) == kNoDriver);
  // Cleared on error, like every output: not {kDLCPU, 0}, which would claim an answer.
  CHECK(device.device_type == 0);
  CHECK(device.device_id == 0);
  error = fresh();
  CHECK(dlb_cuda_pointer_device(&local, nullptr, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(message(error) == "out is NULL");
}

TEST_CASE("allocations on every CUDA device type fail cleanly") {
  const int64_t shape[] = {4, 4};
  for (DLDevice device : {DLDevice{kDLCUDA, 0}, DLDevice{kDLCUDA, 3}, DLDevice{kDLCUDAHost, 0},
                          DLDevice{kDLCUDAManaged, 0}}) {
    CAPTURE(device.device_type);
    DLManagedTensorVersioned* out = reinterpret_cast<DLManagedTensorVersioned*>(0x1);
    dlb_error error = fresh();
    const int64_t live = dlb_tensor_live_count();
    CHECK(dlb_tensor_allocate(device, kF32, 2, shape, nullptr, 0, &out, &error) == DLB_ERR_DEVICE_UNAVAILABLE);
    CHECK(message(error) == kNoDriver);
    CHECK((out == nullptr));
    CHECK(dlb_tensor_live_count() == live);
  }
}

TEST_CASE("copies to and from CUDA fail cleanly, CPU work goes on") {
  const int64_t shape[] = {3, 5};
  DLManagedTensorVersioned* cpu = nullptr;
  REQUIRE(dlb_tensor_allocate(DLDevice{kDLCPU, 0}, kF32, 2, shape, nullptr, 0, &cpu, nullptr) == DLB_OK);
  float* values = static_cast<float*>(cpu->dl_tensor.data);
  for (int i = 0; i < 15; ++i) values[i] = static_cast<float>(i);

  DLManagedTensorVersioned* out = nullptr;
  dlb_error error = fresh();
  CHECK(dlb_tensor_copy(cpu, DLDevice{kDLCUDA, 0}, &out, &error) == DLB_ERR_DEVICE_UNAVAILABLE);
  CHECK(message(error) == kNoDriver);
  CHECK((out == nullptr));
  error = fresh();
  CHECK(dlb_tensor_copy_async(cpu, DLDevice{kDLCUDAHost, 0}, nullptr, &out, &error) ==
        DLB_ERR_DEVICE_UNAVAILABLE);
  CHECK(message(error) == kNoDriver);

  // A CUDA tensor from a foreign producer is accepted (without a driver its pointer cannot be
  // checked, and nothing here can read it); copying it out reports the missing driver.
  std::vector<float> fake(15);
  DLTensor desc{fake.data(), DLDevice{kDLCUDA, 0}, 2, kF32, const_cast<int64_t*>(shape), nullptr, 0};
  Released released;
  DLManagedTensorVersioned* wrapped = nullptr;
  REQUIRE(dlb_tensor_wrap(&desc, 0, count_release, &released, &wrapped, nullptr) == DLB_OK);
  error = fresh();
  CHECK(dlb_tensor_copy(wrapped, DLDevice{kDLCPU, 0}, &out, &error) == DLB_ERR_DEVICE_UNAVAILABLE);
  CHECK(message(error) == kNoDriver);
  error = fresh();
  CHECK(dlb_tensor_copy_into(wrapped, cpu, &error) == DLB_ERR_DEVICE_UNAVAILABLE);
  CHECK(message(error) == kNoDriver);
  // Views of it work: they are metadata only.
  DLManagedTensorVersioned* view = nullptr;
  CHECK(dlb_tensor_transpose(wrapped, &view, nullptr) == DLB_OK);
  dlb_tensor_free(view);
  dlb_tensor_free(wrapped);
  CHECK(released.calls == 1);

  error = fresh();
  CHECK(dlb_device_synchronize(DLDevice{kDLCUDA, 0}, nullptr, &error) == DLB_ERR_DEVICE_UNAVAILABLE);
  CHECK(message(error) == kNoDriver);

  // CPU copies are unaffected.
  DLManagedTensorVersioned* transposed = nullptr;
  REQUIRE(dlb_tensor_transpose(cpu, &transposed, nullptr) == DLB_OK);
  REQUIRE(dlb_tensor_copy(transposed, DLDevice{kDLCPU, 0}, &out, nullptr) == DLB_OK);
  const float* copied = static_cast<const float*>(out->dl_tensor.data);
  CHECK(copied[1] == 5.0f);
  CHECK(copied[5] == 11.0f);
  dlb_tensor_free(out);
  dlb_tensor_free(transposed);
  dlb_tensor_free(cpu);
}

TEST_CASE("the stream handshake checks its arguments before it needs the driver") {
  dlb_error error = fresh();
  CHECK(dlb_cuda_stream_handshake(0, nullptr, 0, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(message(error) ==
        "consumer stream 0 is ambiguous and not allowed for CUDA: pass 1 for the legacy default "
        "stream or 2 for the per-thread default stream");
  error = fresh();
  CHECK(dlb_cuda_stream_handshake(0, nullptr, -5, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(message(error) == "consumer stream -5 is not a valid CUDA stream");
  error = fresh();
  CHECK(dlb_cuda_stream_handshake(-1, nullptr, 1, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(message(error) == "device_id -1 is negative");
  // -1: the consumer wants no synchronisation; nothing to do, driver or not.
  CHECK(dlb_cuda_stream_handshake(0, nullptr, -1, nullptr) == DLB_OK);
  for (int64_t stream : {int64_t{DLB_CUDA_STREAM_NONE}, int64_t{1}, int64_t{2}, int64_t{0x7f0012345678}}) {
    CAPTURE(stream);
    error = fresh();
    CHECK(dlb_cuda_stream_handshake(0, nullptr, stream, &error) == DLB_ERR_DEVICE_UNAVAILABLE);
    CHECK(message(error) == kNoDriver);
  }
}

int main(int argc, char** argv) {
  // The premise of this program: no driver can be loaded here.
  if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
    std::printf("an NVIDIA driver is installed: the no-driver tests do not apply (skipped)\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
