/* dlbx_pack.h - how DLDevice and DLDataType cross into a language as one integer each, for the
 * SWIG bindings (dlbridge.i's typemaps) and any C that talks to them. Defined once here.
 *  - DLDevice: a 64-bit integer, device_type << 32 | device_id (both as unsigned 32 bits).
 *  - DLDataType: a 32-bit integer, code | bits << 8 | lanes << 16.
 * The codes are never enums: a newer producer may send a value no constant names, and it
 * round-trips unchanged. All zeros is the "any dtype" of the core's copy functions. */
#ifndef DLBRIDGE_SWIG_DLBX_PACK_H_
#define DLBRIDGE_SWIG_DLBX_PACK_H_

#include <stdint.h>

#include "dlpack/dlpack.h"

static inline int64_t dlbx_pack_device(DLDevice device) {
  return (int64_t)(((uint64_t)(uint32_t)device.device_type << 32) | (uint32_t)device.device_id);
}

static inline DLDevice dlbx_unpack_device(int64_t packed) {
  DLDevice device;
  device.device_type = (DLDeviceType)(int32_t)((uint64_t)packed >> 32);
  device.device_id = (int32_t)(uint32_t)((uint64_t)packed & 0xffffffffu);
  return device;
}

static inline int32_t dlbx_pack_dtype(DLDataType dtype) {
  return (int32_t)((uint32_t)dtype.code | ((uint32_t)dtype.bits << 8) |
                   ((uint32_t)dtype.lanes << 16));
}

static inline DLDataType dlbx_unpack_dtype(int32_t packed) {
  DLDataType dtype;
  dtype.code = (uint8_t)(packed & 0xff);
  dtype.bits = (uint8_t)((packed >> 8) & 0xff);
  dtype.lanes = (uint16_t)(((uint32_t)packed >> 16) & 0xffff);
  return dtype;
}

#endif /* DLBRIDGE_SWIG_DLBX_PACK_H_ */
