package conformance

// The interop matrix's producer: the exchange extension of the subject's table (table.go), which
// makes each case (a dlpc_exchange_case) with the Go binding's public API only. The matrix's
// consumer is the subject's own consume entry points (subject.go).

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../tests/interop
#include <stdlib.h>
#include "interop_runner.h"
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
// (the binding runs such a release at its next free, wrap or collection, or in RunReleases).
//
//export goExchangeReleases
func goExchangeReleases() C.int64_t {
	dlbridge.RunReleases()
	return C.int64_t(atomic.LoadInt64(&releases))
}

// makeBase wraps C memory (a Go slice cannot be kept by C) holding the case's base values, the
// runner's interop_base_value, with a release function that frees it and counts the release;
// r.base is its first element.
func makeBase[T float32 | float64 | int32 | int64 | uint8](c *C.dlpc_exchange_case,
	r *C.dlpc_exchange_report) (*dlbridge.Tensor, error) {
	shape := int64s(&c.base_shape[0], C.int32_t(c.base_ndim))
	n := int64(1)
	for _, extent := range shape {
		n *= extent
	}
	size := uint64(n) * uint64(unsafe.Sizeof(T(0)))
	mem := C.malloc(C.size_t(size + 1)) // + 1: never malloc(0)
	for i, values := 0, unsafe.Slice((*T)(mem), n); i < len(values); i++ {
		values[i] = T(C.interop_base_value(c.dtype_code, C.int64_t(i)))
	}
	r.base = C.uint64_t(uintptr(mem))
	t, err := dlbridge.Wrap(mem, size, dlbridge.CPU, dlbridge.DTypeOf[T](), shape, nil, 0, 0,
		func() {
			C.free(mem)
			atomic.AddInt64(&releases, 1)
		})
	if err != nil {
		C.free(mem) // on error the memory stays ours
	}
	return t, err
}

// makers makes the base of each dtype (code, bits) of the case table.
var makers = map[[2]C.int64_t]func(*C.dlpc_exchange_case, *C.dlpc_exchange_report) (
	*dlbridge.Tensor, error){
	{2, 32}: makeBase[float32], {2, 64}: makeBase[float64], {0, 32}: makeBase[int32],
	{0, 64}: makeBase[int64], {1, 8}: makeBase[uint8],
}

func produceTensor(c *C.dlpc_exchange_case, r *C.dlpc_exchange_report) (*dlbridge.Tensor, error) {
	newBase := makers[[2]C.int64_t{c.dtype_code, c.dtype_bits}]
	if newBase == nil {
		return nil, fmt.Errorf("dtype %d/%d is not in the case table", c.dtype_code, c.dtype_bits)
	}
	base, err := newBase(c, r)
	if err != nil || c.op == C.DLPC_EXCHANGE_OP_NONE {
		return base, err
	}
	defer base.Close() // the view keeps the memory alive on its own
	switch c.op {
	case C.DLPC_EXCHANGE_OP_TRANSPOSE:
		return base.Transpose()
	case C.DLPC_EXCHANGE_OP_SLICE:
		a := c.op_args
		return base.Slice(dlbridge.Range{Start: int64(a[0]), Stop: int64(a[1]), Step: int64(a[2])})
	case C.DLPC_EXCHANGE_OP_SELECT:
		return base.Select(int(c.op_args[0]), int64(c.op_args[1]))
	case C.DLPC_EXCHANGE_OP_READ_ONLY:
		return base.ShareReadOnly()
	case C.DLPC_EXCHANGE_OP_COPY:
		t, err := base.CopyTo(dlbridge.CPU)
		if err != nil {
			return nil, err
		}
		first, _, err := t.HostData(false) // a compact copy: its data is its first element
		r.base = C.uint64_t(uintptr(first))
		if err != nil {
			t.Close()
			return nil, err
		}
		return t, nil
	}
	return nil, fmt.Errorf("unknown op %d", c.op)
}

//export goExchangeProduce
func goExchangeProduce(c *C.dlpc_exchange_case, legacy C.int32_t,
	r *C.dlpc_exchange_report) unsafe.Pointer {
	*r = C.dlpc_exchange_report{}
	t, err := produceTensor(c, r)
	if err == nil {
		var exported unsafe.Pointer
		if exported, err = export(t, legacy != 0); err == nil {
			return exported
		}
	}
	r.status = C.int32_t(status(err))
	writeMessage(&r.message[0], C.size_t(len(r.message)), "produce: "+err.Error())
	return nil
}
