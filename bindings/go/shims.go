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
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// The hot path goes through the hand-written shims of shims.c rather than SWIG's wrappers: every
// argument by value (no Go pointer crosses, so nothing escapes to the heap and cgo checks no
// pointer), the result by value, and the core's message copied out only on failure.

// fromShim turns a shim's result into a Tensor the caller owns, or the core's error (freeing
// the C copy of its message).
func fromShim(r C.dlbx_go_result) (*Tensor, error) {
	if r.status != 0 {
		e := coreError(int32(r.status), C.GoString(r.message))
		C.free(unsafe.Pointer(r.message))
		return nil, e
	}
	return newTensor(int64(uintptr(unsafe.Pointer(r.tensor)))), nil
}

// dimsByValue copies shape and strides (nil: none) into the shims' by-value argument; ok is
// false when they do not fit it (too many dimensions, or strides not one per extent, which the
// calls with slices report).
func dimsByValue(shape, strides []int64) (dims C.dlbx_go_dims, hasStrides C.int, ok bool) {
	if len(shape) > C.DLBX_GO_DIMS_BY_VALUE || (strides != nil && len(strides) != len(shape)) {
		return dims, 0, false
	}
	for i, extent := range shape {
		dims.shape[i] = C.int64_t(extent)
	}
	if strides != nil {
		hasStrides = 1
		for i, stride := range strides {
			dims.strides[i] = C.int64_t(stride)
		}
	}
	return dims, hasStrides, true
}

// allocate is AllocateStrided.
func allocate(dev Device, dt DType, shape, strides []int64, flags uint64) (*Tensor, error) {
	if dims, hasStrides, ok := dimsByValue(shape, strides); ok {
		return fromShim(C.dlbx_go_allocate(C.int32_t(dev.Type), C.int32_t(dev.ID), C.uint8_t(dt.Code),
			C.uint8_t(dt.Bits), C.uint16_t(dt.Lanes), C.int32_t(len(shape)), dims, hasStrides, C.uint64_t(flags)))
	}
	// Copies (new variables, for escape analysis): the slices given to SWIG's wrapper escape to
	// the heap, and the caller's must not.
	shapeCopy := append([]int64{}, shape...)
	var stridesCopy []int64
	if strides != nil {
		stridesCopy = append([]int64{}, strides...)
	}
	return fromResult(capi.Dlb_tensor_allocate(dev.packed(), dt.packed(), shapeCopy, stridesCopy, flags))
}
