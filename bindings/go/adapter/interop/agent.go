// Package interop is the Go adapter's interop agent (tests/interop/README.md): its produce and
// consume entry points make, export, import and check DLPack tensors with the public API of the
// Go binding (package dlbridge) only. The C side of the contract (interop_agent.h) is the table
// in table.go; Table returns it. The agent runs in a Go host (../host) directly and in any
// native host through the adapter's c-shared library (../cshared).
//
// Unlike the C and Rust agents, which embed a hidden static copy of the core, the Go binding
// links libdlbridge.so dynamically (through pkg-config), as its users do: the live count this
// agent reports is that shared library's, the count of every user of libdlbridge.so in the
// process.
package interop

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../tests/interop
#include <stdlib.h>
#include "interop_agent.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go"
)

// releases counts the base buffers the producer's release function has freed.
var releases int64

//export goInteropLiveCount
func goInteropLiveCount() C.int64_t { return C.int64_t(dlbridge.LiveCount()) }

// goInteropReleases counts the releases after running those that a consumer's thread queued
// (the binding runs a release on another thread at its next free, wrap or collection, or when
// asked: dlbridge.RunReleases).
//
//export goInteropReleases
func goInteropReleases() C.int64_t {
	dlbridge.RunReleases()
	return C.int64_t(atomic.LoadInt64(&releases))
}

// The three value rules of interop_cases.c, mirrored (the case table itself comes from the host).

func baseValue(code int64, i int64) float64 {
	switch code {
	case 1:
		return float64(i*3 + 1)
	case 2:
		return float64(i*3-4) / 2.0
	}
	return float64(i*3 - 4)
}

func elementCount(c *C.interop_case) int64 {
	n := int64(1)
	for d := 0; d < int(c.ndim); d++ {
		n *= int64(c.shape[d])
	}
	return n
}

func expectedValue(c *C.interop_case, k int64) float64 {
	pos := int64(c.first)
	for d := int(c.ndim) - 1; d >= 0; d-- {
		pos += (k % int64(c.shape[d])) * int64(c.strides[d])
		k /= int64(c.shape[d])
	}
	return baseValue(int64(c.dtype_code), pos)
}

// number is the element types of the case table.
type number interface {
	float32 | float64 | int32 | int64 | uint8
}

// status is the dlbridge status of err (-1 for a failed check that is not the core's).
func status(err error) int32 {
	var e *dlbridge.Error
	if errors.As(err, &e) {
		return int32(e.Status)
	}
	return -1
}

func fail(r *C.interop_report, st int32, format string, args ...any) int32 {
	msg := fmt.Sprintf(format, args...)
	if len(msg) > C.INTEROP_MESSAGE_SIZE-1 {
		msg = msg[:C.INTEROP_MESSAGE_SIZE-1]
	}
	for i := range r.message {
		r.message[i] = 0
	}
	for i := 0; i < len(msg); i++ {
		r.message[i] = C.char(msg[i])
	}
	if st == 0 {
		st = -1
	}
	r.status = C.int32_t(st)
	return st
}

func reset(r *C.interop_report) {
	*r = C.interop_report{}
	r.write_refused = -1
}

// firstElement returns the tensor's first element as the binding shows it: the host address
// of a C-contiguous tensor, else that of the 0-d view of element 0 (Select along axis 0 until
// no axis is left). Every view made here is closed before returning.
func firstElement(t *dlbridge.Tensor) (uint64, error) {
	v := t
	defer func() {
		if v != t {
			v.Close()
		}
	}()
	for {
		contiguous, err := v.IsCContiguous()
		if err != nil {
			return 0, err
		}
		if contiguous {
			p, _, err := v.HostData(false)
			return uint64(uintptr(p)), err
		}
		next, err := v.Select(0, 0)
		if err != nil {
			return 0, err
		}
		if v != t {
			v.Close()
		}
		v = next
	}
}

// element returns the 0-d view of t at multi-index idx (the caller closes it).
func element(t *dlbridge.Tensor, idx []int64) (*dlbridge.Tensor, error) {
	v := t
	for _, i := range idx {
		next, err := v.Select(0, i)
		if v != t {
			v.Close()
		}
		if err != nil {
			return nil, err
		}
		v = next
	}
	if v == t {
		return t.Share()
	}
	return v, nil
}

// ---- produce ----

// makeBase wraps C memory holding the case's base values (a Go slice cannot be kept by C) with
// a release function that frees it and counts the release.
func makeBase[T number](c *C.interop_case) (*dlbridge.Tensor, error) {
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

func produceTensor(c *C.interop_case, r *C.interop_report) (*dlbridge.Tensor, error) {
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
	addr, err := firstElement(base)
	if err != nil {
		base.Close()
		return nil, err
	}
	r.base = C.uint64_t(addr)
	var t *dlbridge.Tensor
	switch c.op {
	case C.INTEROP_OP_NONE:
		return base, nil
	case C.INTEROP_OP_TRANSPOSE:
		t, err = base.Transpose()
	case C.INTEROP_OP_SLICE:
		t, err = base.Slice(dlbridge.Range{Start: int64(c.op_args[0]), Stop: int64(c.op_args[1]), Step: int64(c.op_args[2])})
	case C.INTEROP_OP_SELECT:
		t, err = base.Select(int(c.op_args[0]), int64(c.op_args[1]))
	case C.INTEROP_OP_READ_ONLY:
		t, err = base.ShareReadOnly()
	case C.INTEROP_OP_COPY:
		t, err = base.CopyTo(dlbridge.CPU)
		if err == nil {
			if addr, err = firstElement(t); err == nil {
				r.base = C.uint64_t(addr)
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

//export goInteropProduce
func goInteropProduce(c *C.interop_case, legacy C.int32_t, r *C.interop_report) unsafe.Pointer {
	reset(r)
	t, err := produceTensor(c, r)
	if err != nil {
		fail(r, status(err), "produce: %v", err)
		return nil
	}
	first, err := firstElement(t)
	if err != nil {
		t.Close()
		fail(r, status(err), "first element: %v", err)
		return nil
	}
	var out unsafe.Pointer
	if legacy != 0 {
		out, err = t.ExportLegacy()
	} else {
		out, err = t.ExportVersioned()
	}
	if err != nil {
		t.Close() // a refused export leaves the tensor with us
		fail(r, status(err), "export: %v", err)
		return nil
	}
	r.data = C.uint64_t(first)
	return out
}

// ---- consume ----

// values reads the elements of t in C order: the tensor's own memory, through the typed copy
// of a C-contiguous tensor (CopyOut) or element by element through 0-d views otherwise.
func values[T number](t *dlbridge.Tensor, shape []int64) ([]float64, error) {
	contiguous, err := t.IsCContiguous()
	if err != nil {
		return nil, err
	}
	var out []float64
	if contiguous {
		vs, err := dlbridge.CopyOut[T](t)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			out = append(out, float64(v))
		}
		return out, nil
	}
	n := int64(1)
	for _, e := range shape {
		n *= e
	}
	idx := make([]int64, len(shape))
	for k := int64(0); k < n; k++ {
		rest := k
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d] = rest % shape[d]
			rest /= shape[d]
		}
		v, err := element(t, idx)
		if err != nil {
			return nil, err
		}
		vs, err := dlbridge.CopyOut[T](v)
		v.Close()
		if err != nil {
			return nil, err
		}
		if len(vs) != 1 {
			return nil, fmt.Errorf("the 0-d view of element %d holds %d elements", k, len(vs))
		}
		out = append(out, float64(vs[0]))
	}
	return out, nil
}

// writeRefused tries to take a writable typed slice of the first element (the binding's one
// way to write); 1 when refused with StatusReadOnly.
func writeRefused[T number](t *dlbridge.Tensor, ndim int) C.int32_t {
	v, err := element(t, make([]int64, ndim))
	if err != nil {
		return 0
	}
	defer v.Close()
	if _, err := dlbridge.Data[T](v); errors.Is(err, dlbridge.ErrReadOnly) {
		return 1
	}
	return 0
}

func checkTyped[T number](t *dlbridge.Tensor, c *C.interop_case, shape []int64, r *C.interop_report) error {
	vs, err := values[T](t, shape)
	if err != nil {
		return fmt.Errorf("values: %w", err)
	}
	if int64(len(vs)) != elementCount(c) {
		return fmt.Errorf("values: %d elements, expected %d", len(vs), elementCount(c))
	}
	sum := 0.0
	for k, v := range vs {
		if want := expectedValue(c, int64(k)); v != want {
			return fmt.Errorf("values: element %d is %v, expected %v", k, v, want)
		}
		sum += v * float64(k+1)
	}
	r.checksum = C.double(sum)
	if uint64(c.flags)&dlbridge.FlagReadOnly != 0 {
		r.write_refused = writeRefused[T](t, len(shape))
	}
	return nil
}

func check(t *dlbridge.Tensor, c *C.interop_case, legacy bool, r *C.interop_report) error {
	first, err := firstElement(t)
	if err != nil {
		return fmt.Errorf("first element: %w", err)
	}
	r.data = C.uint64_t(first)
	shape, err := t.Shape()
	if err != nil {
		return err
	}
	strides, err := t.Strides()
	if err != nil {
		return err
	}
	nd := int(c.ndim)
	ok := len(shape) == nd && len(strides) == nd
	for d := 0; ok && d < nd; d++ {
		ok = shape[d] == int64(c.shape[d]) && strides[d] == int64(c.strides[d])
	}
	if !ok {
		want := make([]int64, 2*nd)
		for d := 0; d < nd; d++ {
			want[d], want[nd+d] = int64(c.shape[d]), int64(c.strides[d])
		}
		return fmt.Errorf("layout: shape %v strides %v, expected %v and %v", shape, strides, want[:nd], want[nd:])
	}
	dt, err := t.DType()
	if err != nil {
		return err
	}
	if dt != (dlbridge.DType{Code: dlbridge.DTypeCode(c.dtype_code), Bits: uint8(c.dtype_bits), Lanes: 1}) {
		return fmt.Errorf("dtype %v", dt)
	}
	dev, err := t.Device()
	if err != nil {
		return err
	}
	if dev != dlbridge.CPU {
		return fmt.Errorf("device %v", dev)
	}
	flags, err := t.Flags()
	if err != nil {
		return err
	}
	wantFlags := uint64(c.flags)
	if legacy {
		wantFlags = 0
	}
	if flags != wantFlags {
		return fmt.Errorf("flags %d, expected %d", flags, wantFlags)
	}
	if wantFlags&dlbridge.FlagIsCopied != 0 {
		if exclusive, err := t.IsExclusive(); err != nil || !exclusive {
			return fmt.Errorf("IS_COPIED: the import is not exclusive to its consumer")
		}
	}
	switch {
	case c.dtype_code == 2 && c.dtype_bits == 32:
		return checkTyped[float32](t, c, shape, r)
	case c.dtype_code == 2 && c.dtype_bits == 64:
		return checkTyped[float64](t, c, shape, r)
	case c.dtype_code == 0 && c.dtype_bits == 32:
		return checkTyped[int32](t, c, shape, r)
	case c.dtype_code == 0 && c.dtype_bits == 64:
		return checkTyped[int64](t, c, shape, r)
	case c.dtype_code == 1 && c.dtype_bits == 8:
		return checkTyped[uint8](t, c, shape, r)
	}
	return fmt.Errorf("dtype %v not in the agent", dt)
}

//export goInteropConsume
func goInteropConsume(tensor unsafe.Pointer, c *C.interop_case, legacy C.int32_t, onThread C.int32_t,
	r *C.interop_report) C.int32_t {
	reset(r)
	var t *dlbridge.Tensor
	var err error
	if legacy != 0 {
		t, err = dlbridge.ImportLegacy(tensor)
	} else {
		t, err = dlbridge.ImportVersioned(tensor)
	}
	if err != nil { // consumed in every case: the deleter has run
		return C.int32_t(fail(r, status(err), "import: %v", err))
	}
	checked := check(t, c, legacy != 0, r)
	if onThread != 0 {
		// A goroutine locked to an OS thread of its own: a C caller's thread is held by the
		// callback goroutine that runs this function, so the free runs on another thread.
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			t.Close()
			close(done)
		}()
		<-done
	} else {
		t.Close()
	}
	if checked != nil {
		return C.int32_t(fail(r, status(checked), "%v", checked))
	}
	return 0
}
