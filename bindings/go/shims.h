/* shims.h - the hand-written C half of package dlbridge (cgo), beside SWIG's wrapper:
 *  - dlb_tensor_wrap with a release function that calls back into Go (it takes a C function
 *    pointer, which SWIG's Go module cannot produce; dlbridge.i leaves it to bindings);
 *  - the hot path (allocate, wrap) with every argument by value: no Go pointer crosses the
 *    call, so nothing escapes to the Go heap, cgo checks no pointer, and the core's error
 *    message is copied out only on failure. Each shim is one core call; no rule lives here. */
#ifndef DLBRIDGE_GO_SHIMS_H_
#define DLBRIDGE_GO_SHIMS_H_
#include <stdint.h>
#include "dlbridge/dlbridge.h"

/* A shim's result, returned by value (nothing for Go to allocate on success): the new tensor,
 * or a status and a malloc'd copy of the core's message that the caller frees (NULL when even
 * that copy could not be made). */
typedef struct dlbx_go_result {
  DLManagedTensorVersioned* tensor;
  dlb_status status;
  char* message;
} dlbx_go_result;

/* How many extents travel by value, as scalars (a struct by value costs Go store-forwarding
 * stalls copying it into the call). Strided tensors, and tensors of more dimensions, take the
 * calls with pointers (SWIG's dlb_tensor_allocate, dlbx_go_wrap). */
#define DLBX_GO_EXTENTS_BY_VALUE 4

/* dlb_tensor_allocate (see dlbridge.h) of a compact row-major tensor, over the fields of the
 * device and the dtype, and the first ndim of the extents e0..e3 (ndim <=
 * DLBX_GO_EXTENTS_BY_VALUE). Ownership: on success the caller owns r.tensor. */
dlbx_go_result dlbx_go_allocate(int32_t device_type, int32_t device_id, uint8_t code, uint8_t bits,
                                uint16_t lanes, int32_t ndim, int64_t e0, int64_t e1, int64_t e2,
                                int64_t e3, uint64_t flags);

/* dlb_tensor_wrap over the fields of a DLTensor. `data` is an address (never a Go pointer: Go
 * checks none). `handle` is a runtime/cgo.Handle of the Go release function, or 0 for none. On
 * success the caller owns r.tensor, the handle is kept in C memory and
 * dlbridgeGoRelease(handle) runs exactly once when the last reference is freed; on error
 * nothing is kept (the caller deletes the handle and still owns data). */
dlbx_go_result dlbx_go_wrap(uintptr_t data, int32_t device_type, int32_t device_id, int32_t ndim,
                            const int64_t* shape, const int64_t* strides, uint8_t code, uint8_t bits,
                            uint16_t lanes, uint64_t byte_offset, uint64_t flags, uintptr_t handle);

/* dlbx_go_wrap of a compact row-major tensor with the extents e0..e3 by value (ndim <=
 * DLBX_GO_EXTENTS_BY_VALUE). */
dlbx_go_result dlbx_go_wrap_compact(uintptr_t data, int32_t device_type, int32_t device_id,
                                    int32_t ndim, int64_t e0, int64_t e1, int64_t e2, int64_t e3,
                                    uint8_t code, uint8_t bits, uint16_t lanes,
                                    uint64_t byte_offset, uint64_t flags, uintptr_t handle);

/* The Go side (an //export function of package dlbridge). */
extern void dlbridgeGoRelease(uintptr_t handle);
#endif
