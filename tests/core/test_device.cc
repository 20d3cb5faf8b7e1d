// Suite 'core', area 'device': device types and devices (names, formatting, parsing,
// host readability).
//
// Every error path asserts the exact status and the exact message. Every test case ends with
// dlb_tensor_live_count() back at its starting value and every counter exact.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "support.hpp"

namespace {

using test::format_device;
using test::fresh_error;
using test::kUntouched;
using test::msg;
using test::same_device;
using test::str;

}  // namespace

// ============================================================================================
// Devices
// ============================================================================================

namespace {

struct NamedDevice {
  int32_t type;
  const char* name;
};

// All 18 device types DLPack defines.
const NamedDevice kDeviceNames[] = {
    {kDLCPU, "cpu"},         {kDLCUDA, "cuda"},        {kDLCUDAHost, "cuda_host"},
    {kDLOpenCL, "opencl"},   {kDLVulkan, "vulkan"},    {kDLMetal, "metal"},
    {kDLVPI, "vpi"},         {kDLROCM, "rocm"},        {kDLROCMHost, "rocm_host"},
    {kDLExtDev, "ext_dev"},  {kDLCUDAManaged, "cuda_managed"}, {kDLOneAPI, "oneapi"},
    {kDLWebGPU, "webgpu"},   {kDLHexagon, "hexagon"},  {kDLMAIA, "maia"},
    {kDLTrn, "trn"},         {kDLTPU, "tpu"},          {kDLTPUHost, "tpu_host"},
};

const int32_t kUndefinedDeviceTypes[] = {0, 5, 6, 21, 22, 40, 255, 256, -1, INT32_MIN, INT32_MAX};

void check_device_parse(const char* text, DLDevice expected) {
  CAPTURE(str(text));
  DLDevice out{kDLVPI, 77};
  dlb_error error = fresh_error();
  const int status = dlb_device_parse(text, &out, &error);
  INFO(msg(error));
  CHECK(status == DLB_OK);
  CHECK(msg(error) == kUntouched);
  CHECK(same_device(out, expected));
}

void check_device_parse_error(const char* text, const std::string& expected_message) {
  CAPTURE(str(text));
  DLDevice out{kDLVPI, 77};
  dlb_error error = fresh_error();
  CHECK(dlb_device_parse(text, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == expected_message);
  CHECK(dlb_device_parse(text, &out, nullptr) == DLB_ERR_INVALID_ARGUMENT);
}

}  // namespace

TEST_CASE("dlb_device_type_name names the 18 DLPack device types and no others") {
  CHECK(sizeof(kDeviceNames) / sizeof(kDeviceNames[0]) == 18u);
  for (const NamedDevice& row : kDeviceNames) {
    CAPTURE(row.type);
    CHECK(str(dlb_device_type_name(row.type)) == row.name);
  }
  for (int32_t type : kUndefinedDeviceTypes) {
    CAPTURE(type);
    CHECK((dlb_device_type_name(type) == nullptr));
  }
}

TEST_CASE("dlb_device_type_is_known: the DLPack types, nothing else without a backend") {
  for (const NamedDevice& row : kDeviceNames) {
    CAPTURE(row.type);
    CHECK(dlb_device_type_is_known(row.type) == 1);
  }
  for (int32_t type : kUndefinedDeviceTypes) {
    CAPTURE(type);
    CHECK(dlb_device_type_is_known(type) == 0);
  }
}

TEST_CASE("dlb_device_is_host_readable: CPU, CUDA pinned, CUDA managed and ROCm pinned memory") {
  for (const NamedDevice& row : kDeviceNames) {
    const bool host = row.type == kDLCPU || row.type == kDLCUDAHost || row.type == kDLCUDAManaged ||
                      row.type == kDLROCMHost;
    for (int32_t id : {0, 1}) {
      CAPTURE(row.name);
      CAPTURE(id);
      CHECK(dlb_device_is_host_readable(DLDevice{static_cast<DLDeviceType>(row.type), id}) ==
            (host ? 1 : 0));
    }
  }
  for (int32_t type : kUndefinedDeviceTypes) {
    CAPTURE(type);
    CHECK(dlb_device_is_host_readable(DLDevice{static_cast<DLDeviceType>(type), 0}) == 0);
  }
}

TEST_CASE("dlb_device_format writes cpu, name:id and device_type_N:id") {
  CHECK(format_device(DLDevice{kDLCPU, 0}) == "cpu");
  CHECK(format_device(DLDevice{kDLCPU, 3}) == "cpu:3");  // not a valid tensor device, but named
  CHECK(format_device(DLDevice{kDLCUDA, 1}) == "cuda:1");
  CHECK(format_device(DLDevice{kDLCUDA, 0}) == "cuda:0");
  CHECK(format_device(DLDevice{kDLCUDAHost, 0}) == "cuda_host:0");
  CHECK(format_device(DLDevice{kDLOpenCL, 2}) == "opencl:2");
  CHECK(format_device(DLDevice{kDLExtDev, 0}) == "ext_dev:0");
  CHECK(format_device(DLDevice{kDLCUDAManaged, 0}) == "cuda_managed:0");
  CHECK(format_device(DLDevice{kDLTPUHost, 4}) == "tpu_host:4");
  CHECK(format_device(DLDevice{static_cast<DLDeviceType>(25), 0}) == "device_type_25:0");
  CHECK(format_device(DLDevice{static_cast<DLDeviceType>(0), 0}) == "device_type_0:0");
  CHECK(format_device(DLDevice{static_cast<DLDeviceType>(5), 1}) == "device_type_5:1");
  CHECK(format_device(DLDevice{kDLCUDA, INT32_MAX}) == "cuda:2147483647");
  CHECK(format_device(DLDevice{kDLCUDA, -1}) == "cuda:-1");
  // The longest text there is still fits in DLB_DEVICE_NAME_SIZE.
  const std::string longest = format_device(DLDevice{static_cast<DLDeviceType>(INT32_MIN), INT32_MIN});
  CHECK(longest == "device_type_-2147483648:-2147483648");
  CHECK(longest.size() < DLB_DEVICE_NAME_SIZE);
  for (const NamedDevice& row : kDeviceNames) {
    if (row.type == kDLCPU) continue;
    CAPTURE(row.name);
    CHECK(format_device(DLDevice{static_cast<DLDeviceType>(row.type), 7}) == std::string(row.name) + ":7");
  }
}

TEST_CASE("dlb_device_format reports a NULL or too-small buffer") {
  dlb_error error = fresh_error();
  CHECK(dlb_device_format(test::cpu(), nullptr, 16, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "buffer is NULL");
  CHECK(dlb_device_format(test::cpu(), nullptr, 16, nullptr) == DLB_ERR_INVALID_ARGUMENT);

  char buffer[DLB_DEVICE_NAME_SIZE];
  error = fresh_error();
  CHECK(dlb_device_format(test::cpu(), buffer, 3, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "buffer of 3 bytes is too small for device name 'cpu'");
  error = fresh_error();
  CHECK(dlb_device_format(DLDevice{kDLCUDA, 1}, buffer, 6, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "buffer of 6 bytes is too small for device name 'cuda:1'");
  error = fresh_error();
  CHECK(dlb_device_format(DLDevice{static_cast<DLDeviceType>(25), 0}, buffer, 0, &error) ==
        DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "buffer of 0 bytes is too small for device name 'device_type_25:0'");
  CHECK(dlb_device_format(DLDevice{kDLCUDA, 1}, buffer, 6, nullptr) == DLB_ERR_INVALID_ARGUMENT);

  // Exactly enough room.
  error = fresh_error();
  CHECK(dlb_device_format(test::cpu(), buffer, 4, &error) == DLB_OK);
  CHECK(std::string(buffer) == "cpu");
  CHECK(msg(error) == kUntouched);
  CHECK(dlb_device_format(DLDevice{kDLCUDA, 1}, buffer, 7, nullptr) == DLB_OK);
  CHECK(std::string(buffer) == "cuda:1");
}

TEST_CASE("dlb_device_parse parses names, ids and device_type_N") {
  check_device_parse("cpu", DLDevice{kDLCPU, 0});
  check_device_parse("cpu:0", DLDevice{kDLCPU, 0});
  check_device_parse("cuda", DLDevice{kDLCUDA, 0});
  check_device_parse("cuda:1", DLDevice{kDLCUDA, 1});
  check_device_parse("opencl:0", DLDevice{kDLOpenCL, 0});
  check_device_parse("ext_dev:3", DLDevice{kDLExtDev, 3});
  check_device_parse("cuda:2147483647", DLDevice{kDLCUDA, INT32_MAX});
  check_device_parse("device_type_25:2", DLDevice{static_cast<DLDeviceType>(25), 2});
  check_device_parse("device_type_25", DLDevice{static_cast<DLDeviceType>(25), 0});
  check_device_parse("device_type_2:5", DLDevice{kDLCUDA, 5});
  for (const NamedDevice& row : kDeviceNames) {
    check_device_parse(row.name, DLDevice{static_cast<DLDeviceType>(row.type), 0});
    check_device_parse((std::string(row.name) + ":12").c_str(),
                       DLDevice{static_cast<DLDeviceType>(row.type), 12});
  }
}

TEST_CASE("dlb_device_parse refuses unknown names and bad ids") {
  check_device_parse_error("gpu", "unknown device name 'gpu'");
  check_device_parse_error("gpu:1", "unknown device name 'gpu:1'");
  check_device_parse_error("", "unknown device name ''");
  check_device_parse_error("CUDA", "unknown device name 'CUDA'");
  check_device_parse_error("cuda1", "unknown device name 'cuda1'");
  check_device_parse_error(":1", "unknown device name ':1'");
  check_device_parse_error("device_type_", "unknown device name 'device_type_'");
  check_device_parse_error("device_type_x:1", "unknown device name 'device_type_x:1'");
  check_device_parse_error("device_type_99999999999", "unknown device name 'device_type_99999999999'");
  check_device_parse_error("cuda:", "device 'cuda:' has an invalid device id (0 to 2147483647)");
  check_device_parse_error("cuda:-1", "device 'cuda:-1' has an invalid device id (0 to 2147483647)");
  check_device_parse_error("cuda:99999999999",
                           "device 'cuda:99999999999' has an invalid device id (0 to 2147483647)");
  check_device_parse_error("cuda:2147483648",
                           "device 'cuda:2147483648' has an invalid device id (0 to 2147483647)");
  check_device_parse_error("cuda:1a", "device 'cuda:1a' has an invalid device id (0 to 2147483647)");
  check_device_parse_error("cuda:1:2", "device 'cuda:1:2' has an invalid device id (0 to 2147483647)");
  check_device_parse_error("cuda: 1", "device 'cuda: 1' has an invalid device id (0 to 2147483647)");
  const std::string long_text(80, 'z');
  check_device_parse_error(long_text.c_str(), "unknown device name '" + std::string(64, 'z') + "'");

  check_device_parse_error(nullptr, "device text is NULL");
  dlb_error error = fresh_error();
  CHECK(dlb_device_parse("cpu", nullptr, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "out is NULL");
  CHECK(dlb_device_parse("cpu", nullptr, nullptr) == DLB_ERR_INVALID_ARGUMENT);
}

TEST_CASE("dlb_device_format and dlb_device_parse round-trip") {
  std::vector<int32_t> types;
  for (const NamedDevice& row : kDeviceNames) types.push_back(row.type);
  types.push_back(25);
  types.push_back(40);
  types.push_back(255);
  for (int32_t type : types) {
    for (int32_t id : {0, 1, 7, INT32_MAX}) {
      const DLDevice device{static_cast<DLDeviceType>(type), id};
      const std::string text = format_device(device);
      CAPTURE(text);
      check_device_parse(text.c_str(), device);
    }
  }
}
