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
	"math"
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

// ndimArg is a shape's length as C's int32_t ndim: clamped rather than wrapped, so that an
// absurdly long slice still reaches the core's "exceeds the maximum" check instead of reading
// as a small ndim.
func ndimArg(shape []int64) C.int32_t {
	if len(shape) > math.MaxInt32 {
		return math.MaxInt32
	}
	return C.int32_t(len(shape))
}

// The shims take exactly four extents (a compile error here when shims.h changes that).
var (
	_ [C.DLBX_GO_EXTENTS_BY_VALUE - 4]struct{}
	_ [4 - C.DLBX_GO_EXTENTS_BY_VALUE]struct{}
)

// extentsByValue returns shape's extents, zero past its end, for the shims that take them by
// value (DLBX_GO_EXTENTS_BY_VALUE of them, as scalars: an array would be copied through memory);
// ok is false when shape has more.
func extentsByValue(shape []int64) (e0, e1, e2, e3 C.int64_t, ok bool) {
	if len(shape) > 4 {
		return 0, 0, 0, 0, false
	}
	extent := func(i int) C.int64_t {
		if i < len(shape) {
			return C.int64_t(shape[i])
		}
		return 0
	}
	return extent(0), extent(1), extent(2), extent(3), true
}

// allocate is AllocateStrided.
func allocate(dev Device, dt DType, shape, strides []int64, flags uint64) (*Tensor, error) {
	if e0, e1, e2, e3, ok := extentsByValue(shape); ok && strides == nil {
		return fromShim(C.dlbx_go_allocate(C.int32_t(dev.Type), C.int32_t(dev.ID), C.uint8_t(dt.Code),
			C.uint8_t(dt.Bits), C.uint16_t(dt.Lanes), ndimArg(shape), e0, e1, e2, e3,
			C.uint64_t(flags)))
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
