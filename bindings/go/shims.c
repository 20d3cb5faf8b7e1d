/* shims.c - see shims.h. Compiled by cgo with package dlbridge, and by Meson (with a stand-in
 * for the Go callback) into tests/test_go_native for the sanitizer and valgrind passes. */
#include "shims.h"

#include <stdlib.h>
#include <string.h>

/* The release function given to dlb_tensor_wrap: the Go handle lives in a malloc'd box (C
 * memory, never a Go pointer kept by C). */
static void dlbx_go_release(void* ctx) {
  uintptr_t handle = *(uintptr_t*)ctx;
  free(ctx);
  dlbridgeGoRelease(handle);
}

/* The result of one core call: the tensor, or the status with a copy of the core's message
 * (the message is copied only here, on failure). */
static dlbx_go_result result(dlb_status status, DLManagedTensorVersioned* tensor,
                             const char* message) {
  dlbx_go_result r;
  r.tensor = status == DLB_OK ? tensor : NULL;
  r.status = status;
  r.message = NULL;
  if (status != DLB_OK) {
    size_t n = strlen(message) + 1;
    r.message = (char*)malloc(n);
    if (r.message != NULL) memcpy(r.message, message, n);
  }
  return r;
}

dlbx_go_result dlbx_go_allocate(int32_t device_type, int32_t device_id, uint8_t code, uint8_t bits,
                                uint16_t lanes, int32_t ndim, int64_t e0, int64_t e1, int64_t e2,
                                int64_t e3, uint64_t flags) {
  const int64_t shape[DLBX_GO_EXTENTS_BY_VALUE] = {e0, e1, e2, e3};
  DLDevice device;
  DLDataType dtype;
  DLManagedTensorVersioned* tensor = NULL;
  dlb_error error;
  dlb_status status;
  device.device_type = (DLDeviceType)device_type;
  device.device_id = device_id;
  dtype.code = code;
  dtype.bits = bits;
  dtype.lanes = lanes;
  status = dlb_tensor_allocate(device, dtype, ndim, shape, NULL, flags, &tensor, &error);
  return result(status, tensor, error.message);
}

dlbx_go_result dlbx_go_wrap(uintptr_t data, int32_t device_type, int32_t device_id, int32_t ndim,
                            const int64_t* shape, const int64_t* strides, uint8_t code, uint8_t bits,
                            uint16_t lanes, uint64_t byte_offset, uint64_t flags, uintptr_t handle) {
  DLTensor t;
  uintptr_t* box = NULL;
  DLManagedTensorVersioned* tensor = NULL;
  dlb_error error;
  dlb_status status;
  t.data = (void*)data;
  t.device.device_type = (DLDeviceType)device_type;
  t.device.device_id = device_id;
  t.ndim = ndim;
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = lanes;
  t.shape = (int64_t*)shape;
  t.strides = (int64_t*)strides;
  t.byte_offset = byte_offset;
  if (handle != 0) {
    box = (uintptr_t*)malloc(sizeof *box);
    if (box == NULL) return result(DLB_ERR_OUT_OF_MEMORY, NULL, "out of memory");
    *box = handle;
  }
  status = dlb_tensor_wrap(&t, flags, box != NULL ? dlbx_go_release : NULL, box, &tensor, &error);
  if (status != DLB_OK) free(box);
  return result(status, tensor, error.message);
}

dlbx_go_result dlbx_go_wrap_compact(uintptr_t data, int32_t device_type, int32_t device_id,
                                    int32_t ndim, int64_t e0, int64_t e1, int64_t e2, int64_t e3,
                                    uint8_t code, uint8_t bits, uint16_t lanes,
                                    uint64_t byte_offset, uint64_t flags, uintptr_t handle) {
  const int64_t shape[DLBX_GO_EXTENTS_BY_VALUE] = {e0, e1, e2, e3};
  return dlbx_go_wrap(data, device_type, device_id, ndim, shape, NULL, code, bits, lanes,
                      byte_offset, flags, handle);
}
