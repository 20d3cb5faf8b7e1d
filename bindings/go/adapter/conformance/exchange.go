package conformance

// The interop matrix's producer: the exchange extension of the subject's table (table.go), which
// makes each case (a dlpc_exchange_case) with the Go binding's public API only. The matrix's
// consumer is the subject's own consume entry points (subject.go).

/*
#include <stdlib.h>
#include "dlpack_conformance.h"
*/
import "C"

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go"
)

// releases counts the base buffers the producer's release function has freed.
var releases int64

// goExchangeReleases counts the releases after running those that a consumer's thread queued
// (the binding runs a release on another thread at its next free, wrap or collection, or when
// asked: dlbridge.RunReleases).
//
//export goExchangeReleases
func goExchangeReleases() C.int64_t {
	dlbridge.RunReleases()
	return C.int64_t(atomic.LoadInt64(&releases))
}

// baseValue mirrors interop_base_value (tests/interop/interop_cases.c).
func baseValue(code int64, i int64) float64 {
	switch code {
	case 1:
		return float64(i*3 + 1)
	case 2:
		return float64(i*3-4) / 2.0
	}
	return float64(i*3 - 4)
}

// number is the element types of the case table.
type number interface {
	float32 | float64 | int32 | int64 | uint8
}

// makeBase wraps C memory holding the case's base values (a Go slice cannot be kept by C) with
// a release function that frees it and counts the release.
func makeBase[T number](c *C.dlpc_exchange_case) (*dlbridge.Tensor, error) {
	shape := make([]int64, int(c.base_ndim))
	n := int64(1)
	for d := range shape {
		shape[d] = int64(c.base_shape[d])
		n *= shape[d]
	}
	var zero T
	size := C.size_t(n) * C.size_t(unsafe.Sizeof(zero))
	if size == 0 {
		size = 1
	}
	mem := C.malloc(size)
	if n > 0 {
		values := unsafe.Slice((*T)(mem), n)
		for i := range values {
			values[i] = T(baseValue(int64(c.dtype_code), int64(i)))
		}
	}
	t, err := dlbridge.Wrap(mem, uint64(size), dlbridge.CPU, dlbridge.DTypeOf[T](), shape, nil, 0, 0, func() {
		C.free(mem)
		atomic.AddInt64(&releases, 1)
	})
	if err != nil {
		C.free(mem) // on error the memory stays ours
		return nil, err
	}
	return t, nil
}

func produceTensor(c *C.dlpc_exchange_case, r *C.dlpc_exchange_report) (*dlbridge.Tensor, error) {
	var base *dlbridge.Tensor
	var err error
	switch {
	case c.dtype_code == 2 && c.dtype_bits == 32:
		base, err = makeBase[float32](c)
	case c.dtype_code == 2 && c.dtype_bits == 64:
		base, err = makeBase[float64](c)
	case c.dtype_code == 0 && c.dtype_bits == 32:
		base, err = makeBase[int32](c)
	case c.dtype_code == 0 && c.dtype_bits == 64:
		base, err = makeBase[int64](c)
	case c.dtype_code == 1 && c.dtype_bits == 8:
		base, err = makeBase[uint8](c)
	default:
		return nil, fmt.Errorf("dtype %d/%d not in the agent", c.dtype_code, c.dtype_bits)
	}
	if err != nil {
		return nil, err
	}
	addr, err := firstElement(base, int(c.base_ndim))
	if err != nil {
		base.Close()
		return nil, err
	}
	r.base = C.uint64_t(uintptr(addr))
	var t *dlbridge.Tensor
	switch c.op {
	case C.DLPC_EXCHANGE_OP_NONE:
		return base, nil
	case C.DLPC_EXCHANGE_OP_TRANSPOSE:
		t, err = base.Transpose()
	case C.DLPC_EXCHANGE_OP_SLICE:
		t, err = base.Slice(dlbridge.Range{Start: int64(c.op_args[0]), Stop: int64(c.op_args[1]), Step: int64(c.op_args[2])})
	case C.DLPC_EXCHANGE_OP_SELECT:
		t, err = base.Select(int(c.op_args[0]), int64(c.op_args[1]))
	case C.DLPC_EXCHANGE_OP_READ_ONLY:
		t, err = base.ShareReadOnly()
	case C.DLPC_EXCHANGE_OP_COPY:
		t, err = base.CopyTo(dlbridge.CPU)
		if err == nil {
			if addr, err = firstElement(t, int(c.base_ndim)); err == nil {
				r.base = C.uint64_t(uintptr(addr))
			} else {
				t.Close()
			}
		}
	default:
		err = fmt.Errorf("unknown op %d", c.op)
	}
	base.Close() // the view keeps the memory alive on its own
	if err != nil {
		return nil, err
	}
	return t, nil
}

//export goExchangeProduce
func goExchangeProduce(c *C.dlpc_exchange_case, legacy C.int32_t, r *C.dlpc_exchange_report) unsafe.Pointer {
	*r = C.dlpc_exchange_report{}
	t, err := produceTensor(c, r)
	if err == nil {
		var out unsafe.Pointer
		if legacy != 0 {
			out, err = t.ExportLegacy()
		} else {
			out, err = t.ExportVersioned()
		}
		if err == nil {
			return out
		}
		t.Close() // a refused export leaves the tensor with us
	}
	st := int32(status(err))
	if st == 0 {
		st = -1
	}
	r.status = C.int32_t(st)
	writeMessage(&r.message[0], C.size_t(len(r.message)), fmt.Sprintf("produce: %v", err))
	return nil
}
