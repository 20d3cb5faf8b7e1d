/* wrap.h - the hand-written C side of dlbridge.Wrap: dlb_tensor_wrap with a release function
 * that calls back into Go (dlb_tensor_wrap takes a C function pointer, which SWIG's Go module
 * cannot produce; dlbridge.i leaves it to bindings). */
#ifndef DLBRIDGE_GO_WRAP_H_
#define DLBRIDGE_GO_WRAP_H_
#include <stdint.h>
#include "dlbridge/dlbridge.h"

/* The result of dlbx_go_wrap, returned by value (nothing for Go to allocate on success): the
 * new tensor, or a status and a malloc'd copy of the core's message that the caller frees. */
typedef struct dlbx_go_wrap_result {
  DLManagedTensorVersioned* tensor;
  dlb_status status;
  char* message;
} dlbx_go_wrap_result;

/* dlb_tensor_wrap over the fields of a DLTensor. `handle` is a runtime/cgo.Handle of the Go
 * release function, or 0 for none. On success the handle is kept in C memory and
 * dlbridgeGoRelease(handle) runs exactly once when the last reference is freed; on error
 * nothing is kept (the caller deletes the handle). */
dlbx_go_wrap_result dlbx_go_wrap(void* data, int32_t device_type, int32_t device_id, int32_t ndim,
                                 const int64_t* shape, const int64_t* strides, uint8_t code,
                                 uint8_t bits, uint16_t lanes, uint64_t byte_offset, uint64_t flags,
                                 uintptr_t handle);

/* The Go side (an //export function of package dlbridge). */
extern void dlbridgeGoRelease(uintptr_t handle);
#endif
