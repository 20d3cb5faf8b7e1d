/* wrap.c - see wrap.h. Compiled by cgo with package dlbridge, and by Meson (with a stand-in
 * for the Go callback) into tests/test_go_native for the sanitizer and valgrind passes. */
#include "wrap.h"

#include <stdlib.h>
#include <string.h>

/* The release function given to dlb_tensor_wrap: the Go handle lives in a malloc'd box (C
 * memory, never a Go pointer kept by C). */
static void dlbx_go_release(void* ctx) {
  uintptr_t handle = *(uintptr_t*)ctx;
  free(ctx);
  dlbridgeGoRelease(handle);
}

static dlbx_go_wrap_result failure(dlb_status status, const char* message) {
  dlbx_go_wrap_result r;
  size_t n = strlen(message) + 1;
  r.tensor = NULL;
  r.status = status;
  r.message = (char*)malloc(n);
  if (r.message != NULL) memcpy(r.message, message, n);
  return r;
}

dlbx_go_wrap_result dlbx_go_wrap(void* data, int32_t device_type, int32_t device_id, int32_t ndim,
                                 const int64_t* shape, const int64_t* strides, uint8_t code,
                                 uint8_t bits, uint16_t lanes, uint64_t byte_offset, uint64_t flags,
                                 uintptr_t handle) {
  DLTensor t;
  uintptr_t* box = NULL;
  dlb_error error;
  dlbx_go_wrap_result r;
  t.data = data;
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
    if (box == NULL) return failure(DLB_ERR_OUT_OF_MEMORY, "out of memory");
    *box = handle;
  }
  r.status = dlb_tensor_wrap(&t, flags, box != NULL ? dlbx_go_release : NULL, box, &r.tensor, &error);
  if (r.status != DLB_OK) {
    free(box);
    return failure(r.status, error.message);
  }
  r.message = NULL;
  return r;
}
