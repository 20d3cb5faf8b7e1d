package dlbridge

/*
#cgo pkg-config: dlbridge
#include <stdint.h>
#include <stdlib.h>
#include "dlbridge/dlbridge.h"
#include "shims.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// Wrap makes a tensor over memory the caller owns, zero-copy: data (C memory, or a device
// handle such as a cl_mem; never Go memory, which C may not keep) described by dev, dt, shape,
// strides (in elements; nil for compact row-major), byteOffset and DLPack flags.
// Ownership: on success the tensor owns the memory, and release (when not nil) is called exactly
// once when the last reference (the tensor, its views and shares, a consumer it was exported
// to) is released, on whichever thread that happens: it must not block for long or panic. On
// error release is not called and the caller still owns the memory.
func Wrap(data unsafe.Pointer, dev Device, dt DType, shape, strides []int64, byteOffset, flags uint64,
	release func()) (*Tensor, error) {
	// C reads ndim strides through the pointer: a shorter slice must not get there. (The
	// number of dimensions is the core's to check, with its own message.)
	if strides != nil && len(strides) != len(shape) {
		return nil, coreError(int32(StatusInvalidArgument), capi.DLB_STRIDES_LENGTH_MESSAGE)
	}
	var handle cgo.Handle
	if release != nil {
		handle = cgo.NewHandle(release)
	}
	var r C.dlbx_go_result
	if e0, e1, e2, e3, ok := extentsByValue(shape); ok && strides == nil {
		r = C.dlbx_go_wrap_compact(C.uintptr_t(uintptr(data)), C.int32_t(dev.Type), C.int32_t(dev.ID),
			ndimArg(shape), e0, e1, e2, e3, C.uint8_t(dt.Code), C.uint8_t(dt.Bits),
			C.uint16_t(dt.Lanes), C.uint64_t(byteOffset), C.uint64_t(flags), C.uintptr_t(handle))
	} else {
		// Copies (new variables, for escape analysis): Go memory given to C escapes to the heap,
		// and the caller's slices must not. Here len(shape) > 0 or strides are given (and then
		// one per extent); a 0-d tensor passes neither array.
		var shapePtr, stridesPtr *C.int64_t
		if len(shape) > 0 {
			shapeCopy := append([]int64{}, shape...)
			shapePtr = (*C.int64_t)(unsafe.Pointer(&shapeCopy[0]))
			if strides != nil {
				stridesCopy := append([]int64{}, strides...)
				stridesPtr = (*C.int64_t)(unsafe.Pointer(&stridesCopy[0]))
			}
		}
		r = C.dlbx_go_wrap(C.uintptr_t(uintptr(data)), C.int32_t(dev.Type), C.int32_t(dev.ID), ndimArg(shape),
			shapePtr, stridesPtr, C.uint8_t(dt.Code), C.uint8_t(dt.Bits),
			C.uint16_t(dt.Lanes), C.uint64_t(byteOffset), C.uint64_t(flags), C.uintptr_t(handle))
	}
	if r.status != 0 && release != nil {
		handle.Delete()
	}
	return fromShim(r)
}

// dlbridgeGoRelease runs a wrapped memory's release function (called by dlbx_go_release in
// shims.c, on any thread, exactly once per Wrap).
//
//export dlbridgeGoRelease
func dlbridgeGoRelease(h C.uintptr_t) {
	handle := cgo.Handle(h)
	release := handle.Value().(func())
	handle.Delete()
	release()
}
