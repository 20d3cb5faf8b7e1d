/*
 * dlbridge/device.hpp - devices: dlbridge::Device, a value type over DLDevice that stays open
 * to device types this library does not name.
 * Part of dlbridge/dlbridge.hpp, which includes it; including this header alone works too.
 */
#ifndef DLBRIDGE_DEVICE_HPP_
#define DLBRIDGE_DEVICE_HPP_

#include <cstdint>
#include <ostream>
#include <string>

#include "dlbridge/dlbridge.h"
#include "dlbridge/error.hpp"

namespace dlbridge {

/* ========================================================================================== */
/* Devices                                                                                    */
/* ========================================================================================== */

/* A device: a value type over DLDevice. `type` is a plain int32_t, so device types this library
 * does not name (a newer producer's, or a plug-in's) stay representable. Nothing allocates
 * except name(). */
struct Device {
  /* DLDeviceType value (kDLCPU, kDLCUDA, ...) or any other type. */
  int32_t type = kDLCPU;
  /* The ordinal of the device of that type (0 for CPU, pinned and managed memory). */
  int32_t id = 0;

  /* The CPU. */
  constexpr Device() noexcept = default;
  /* A device from its type and ordinal. */
  constexpr Device(int32_t type_, int32_t id_) noexcept : type(type_), id(id_) {}
  /* Implicit conversion from the C struct. */
  constexpr Device(DLDevice device) noexcept  // NOLINT(google-explicit-constructor)
      : type(static_cast<int32_t>(device.device_type)), id(device.device_id) {}

  /* The C struct. */
  constexpr DLDevice dl() const noexcept {
    return DLDevice{static_cast<DLDeviceType>(type), id};
  }

  /* Factories for the common devices: the CPU, and device `id_` of a device type. */
  static constexpr Device cpu() noexcept { return Device(kDLCPU, 0); }
  static constexpr Device cuda(int32_t id_ = 0) noexcept { return Device(kDLCUDA, id_); }
  /* CUDA pinned host memory (host-readable). */
  static constexpr Device cuda_host() noexcept { return Device(kDLCUDAHost, 0); }
  /* CUDA managed (unified) memory (host-readable). */
  static constexpr Device cuda_managed() noexcept { return Device(kDLCUDAManaged, 0); }
  static constexpr Device opencl(int32_t id_ = 0) noexcept { return Device(kDLOpenCL, id_); }
  static constexpr Device vulkan(int32_t id_ = 0) noexcept { return Device(kDLVulkan, id_); }
  static constexpr Device metal(int32_t id_ = 0) noexcept { return Device(kDLMetal, id_); }
  static constexpr Device rocm(int32_t id_ = 0) noexcept { return Device(kDLROCM, id_); }
  /* ROCm pinned host memory (host-readable). */
  static constexpr Device rocm_host() noexcept { return Device(kDLROCMHost, 0); }
  static constexpr Device oneapi(int32_t id_ = 0) noexcept { return Device(kDLOneAPI, id_); }
  /* Implementation-defined devices (plug-in backends). */
  static constexpr Device ext_dev(int32_t id_ = 0) noexcept { return Device(kDLExtDev, id_); }

  /* Parses "cpu", "cuda:1", "opencl" (id 0), ... (dlb_device_parse). Throws Error with the
   * core's message for text that is not a device. */
  static Device parse(const std::string& text) {
    DLDevice out{kDLCPU, 0};
    dlb_error error{};
    detail::check(dlb_device_parse(text.c_str(), &out, &error), error);
    return Device(out);
  }

  /* "cpu", "cuda:1", or "device_type_25:0" for a type without a name (dlb_device_format). */
  std::string name() const {
    char buffer[DLB_DEVICE_NAME_SIZE];
    dlb_error error{};
    detail::check(dlb_device_format(dl(), buffer, sizeof(buffer), &error), error);
    return buffer;
  }

  /* True if the host CPU can read this device's memory (CPU, CUDA pinned/managed, ROCm
   * pinned). */
  bool host_readable() const noexcept { return dlb_device_is_host_readable(dl()) != 0; }

  /* True if imports accept this device type (DLPack defines it or a backend serves it). */
  bool known() const noexcept { return dlb_device_type_is_known(type) != 0; }

  /* Field-wise comparison. */
  friend constexpr bool operator==(Device a, Device b) noexcept {
    return a.type == b.type && a.id == b.id;
  }
  friend constexpr bool operator!=(Device a, Device b) noexcept { return !(a == b); }

  /* Writes name(). */
  friend std::ostream& operator<<(std::ostream& os, Device device) { return os << device.name(); }
};

}  // namespace dlbridge

#endif  // DLBRIDGE_DEVICE_HPP_
