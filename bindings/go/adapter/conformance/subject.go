// Package conformance is the Go adapter's one table: Table returns the dlpc_subject table
// (conformance/include/dlpack_conformance.h; defined in table.go) that the adapter's c-shared
// library (../cshared) exports as dlpack_conformance_subject() for the kit's runner and the
// interop matrix's hosts to dlopen, and that the Go host (../host) runs in process; its exchange
// extension is the matrix's producer (exchange.go). Its producer and consumer use the binding's public API only:
//
//   - producer: the kit's values are wrapped read-only without a copy (Wrap) and copied with
//     CopyInto into a tensor laid out as asked (AllocateStrided with the strides, or a Slice +
//     Reshape view into a larger allocation for an offset), made read-only with ShareReadOnly
//     or a copy with CopyTo, and handed out with ExportVersioned / ExportLegacy;
//   - consumer: ImportVersioned / ImportLegacy; the report comes from the tensor's accessors,
//     the values through CopyInto a tensor wrapped over the kit's buffer; release closes it.
//
// Unlike the C and Rust adapters, which embed a hidden static copy of the core, it links
// libdlbridge.so (through the binding's pkg-config), as the binding's users do: its live count
// is that library's, the count of every user of libdlbridge.so in the process.
package conformance

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../conformance/include -I${SRCDIR}/../../../../core/include
#include <stdint.h>
#include "dlpack_conformance.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go"
)

// writeMessage copies text into a C buffer of size bytes, cut to fit, NUL-terminated.
func writeMessage(buf *C.char, size C.size_t, text string) {
	if buf == nil || size == 0 {
		return
	}
	out := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(size))
	n := copy(out[:len(out)-1], text)
	out[n] = 0
}

// int64s copies n values of a kit array (nil when p is NULL).
func int64s(p *C.int64_t, n C.int32_t) []int64 {
	if p == nil {
		return nil
	}
	return append([]int64{}, unsafe.Slice((*int64)(unsafe.Pointer(p)), int(n))...)
}

func status(err error) dlbridge.Status {
	var e *dlbridge.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return -1
}

// ---- producer ----

// allocate returns a writable tensor of dt with the spec's shape, strides and offset: an
// allocation, or for an offset a view that far into a larger one.
func allocate(spec *C.dlpc_case_spec, dt dlbridge.DType, shape []int64, count int64, layout uint64) (*dlbridge.Tensor, error) {
	if spec.offset_elements <= 0 {
		return dlbridge.AllocateStrided(dlbridge.CPU, dt, shape, int64s(spec.strides, spec.ndim), layout)
	}
	offset := int64(spec.offset_elements)
	base, err := dlbridge.AllocateStrided(dlbridge.CPU, dt, []int64{offset + count}, nil, layout)
	if err != nil {
		return nil, err
	}
	tail, err := base.Slice(dlbridge.Range{Start: offset, Stop: dlbridge.SliceNone, Step: 1})
	base.Close() // the view keeps the memory alive on its own
	if err != nil {
		return nil, err
	}
	defer tail.Close()
	return tail.Reshape(shape...)
}

// makeTensor returns the tensor spec describes, holding its values, with its flags.
func makeTensor(spec *C.dlpc_case_spec) (*dlbridge.Tensor, error) {
	dt := dlbridge.DType{Code: dlbridge.DTypeCode(spec.dtype.code), Bits: uint8(spec.dtype.bits), Lanes: uint16(spec.dtype.lanes)}
	shape := int64s(spec.shape, spec.ndim)
	flags := uint64(spec.flags)
	layout := flags & dlbridge.FlagSubbyteTypePadded
	// The kit's values (C memory, compact, C order), borrowed for this call without a copy:
	// READ_ONLY, closed before returning, no release function (it owns nothing).
	values, err := dlbridge.Wrap(unsafe.Pointer(spec.values), uint64(spec.values_size), dlbridge.CPU, dt, shape, nil, 0,
		layout|dlbridge.FlagReadOnly, nil)
	if err != nil {
		return nil, err
	}
	defer values.Close()
	count, err := values.ElementCount()
	if err != nil {
		return nil, err
	}
	made, err := allocate(spec, dt, shape, count, layout)
	if err != nil {
		return nil, err
	}
	if err := values.CopyInto(made); err != nil {
		made.Close()
		return nil, err
	}
	var result *dlbridge.Tensor
	switch {
	case flags&dlbridge.FlagReadOnly != 0:
		result, err = made.ShareReadOnly()
	case flags&dlbridge.FlagIsCopied != 0:
		// An export that is a copy: CopyTo marks it IS_COPIED.
		result, err = made.CopyTo(dlbridge.CPU)
	default:
		return made, nil
	}
	made.Close()
	return result, err
}

//export dlpcGoProduce
func dlpcGoProduce(spec *C.dlpc_case_spec, legacy C.int, out *unsafe.Pointer, message *C.char, size C.size_t) C.int {
	t, err := makeTensor(spec)
	if err != nil {
		writeMessage(message, size, err.Error())
		if status(err) == dlbridge.StatusUnsupported {
			return C.DLPC_UNSUPPORTED
		}
		return C.DLPC_ERROR
	}
	export := t.ExportVersioned
	if legacy != 0 {
		export = t.ExportLegacy
	}
	exported, err := export()
	if err != nil {
		t.Close() // a refused export leaves the tensor with us
		writeMessage(message, size, err.Error())
		// READ_ONLY (and padded sub-byte) tensors cannot travel in the legacy struct.
		if st := status(err); st == dlbridge.StatusReadOnly || st == dlbridge.StatusUnsupported {
			return C.DLPC_REFUSED
		}
		return C.DLPC_ERROR
	}
	*out = exported // C memory the kit now owns
	return C.DLPC_OK
}

// ---- consumer ----

// firstElement returns the address of element 0 as the binding shows it: the host data of the
// one-element view t[0:1, 0:1, ...], which is C-contiguous whatever t's strides are.
func firstElement(t *dlbridge.Tensor, ndim int) (unsafe.Pointer, error) {
	v := t
	if ndim > 0 {
		ranges := make([]dlbridge.Range, ndim)
		for d := range ranges {
			ranges[d] = dlbridge.Range{Start: 0, Stop: 1, Step: 1}
		}
		var err error
		if v, err = t.Slice(ranges...); err != nil {
			return nil, err
		}
		defer v.Close()
	}
	p, _, err := v.HostData(false)
	return p, err
}

// readValues copies t's elements, compact and in C order in its storage format, into the kit's
// buffer through the binding's strided copy (CopyInto a tensor wrapped over the buffer), and
// returns the bytes written.
func readValues(t *dlbridge.Tensor, r *C.dlpc_consume_report, shape []int64, flags uint64) (uint64, error) {
	bytes, err := t.ByteSize()
	if err != nil {
		return 0, err
	}
	if bytes > uint64(r.values_capacity) {
		return 0, fmt.Errorf("%d bytes of values, the kit's buffer holds %d", bytes, uint64(r.values_capacity))
	}
	dt, err := t.DType()
	if err != nil {
		return 0, err
	}
	// The kit's buffer (C memory) for this call; closed before returning, it owns nothing.
	out, err := dlbridge.Wrap(r.values, uint64(r.values_capacity), dlbridge.CPU, dt, shape, nil, 0,
		flags&dlbridge.FlagSubbyteTypePadded, nil)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	return bytes, t.CopyInto(out)
}

// fillReport fills r from an imported tensor; 0 or the DLPC_ code to return.
func fillReport(t *dlbridge.Tensor, r *C.dlpc_consume_report) (C.int, error) {
	shape, err := t.Shape()
	if err != nil {
		return C.DLPC_ERROR, err
	}
	if len(shape) > C.DLPC_MAX_NDIM {
		return C.DLPC_UNSUPPORTED, fmt.Errorf("ndim %d is more than a report holds", len(shape))
	}
	// The binding's strides are always known: NULL strides were resolved on import.
	strides, err := t.Strides()
	if err != nil {
		return C.DLPC_ERROR, err
	}
	r.ndim = C.int32_t(len(shape))
	for d := range shape {
		r.shape[d], r.strides[d] = C.int64_t(shape[d]), C.int64_t(strides[d])
	}
	r.strides_known = 1
	count, err := t.ElementCount()
	if err != nil {
		return C.DLPC_ERROR, err
	}
	r.first_element = nil
	if count > 0 {
		first, err := firstElement(t, len(shape))
		if err != nil {
			return C.DLPC_ERROR, fmt.Errorf("first element: %w", err)
		}
		r.first_element = first
	}
	flags, err := t.Flags()
	if err != nil {
		return C.DLPC_ERROR, err
	}
	// Bytes and Data hand out writable slices unless the tensor is READ_ONLY.
	r.writable = 1
	if flags&dlbridge.FlagReadOnly != 0 {
		r.writable = 0
	}
	size, err := readValues(t, r, shape, flags)
	if err != nil {
		return C.DLPC_ERROR, fmt.Errorf("reading the values back: %w", err)
	}
	r.values_size = C.uint64_t(size)
	return C.DLPC_OK, nil
}

//export dlpcGoConsume
func dlpcGoConsume(tensor unsafe.Pointer, legacy C.int, r *C.dlpc_consume_report, handle *C.uintptr_t) C.int {
	importTensor := dlbridge.ImportVersioned
	if legacy != 0 {
		importTensor = dlbridge.ImportLegacy
	}
	t, err := importTensor(tensor)
	if err != nil {
		// Consumed in every case: the deleter has run once.
		writeMessage(&r.message[0], C.size_t(len(r.message)), err.Error())
		return C.DLPC_REFUSED
	}
	rc, err := fillReport(t, r)
	if rc != C.DLPC_OK {
		t.Close() // runs the deleter, once
		writeMessage(&r.message[0], C.size_t(len(r.message)), err.Error())
		return rc
	}
	*handle = C.uintptr_t(cgo.NewHandle(t))
	return C.DLPC_OK
}

//export dlpcGoRelease
func dlpcGoRelease(h C.uintptr_t) {
	handle := cgo.Handle(h)
	t := handle.Value().(*dlbridge.Tensor)
	handle.Delete()
	t.Close()
}

//export dlpcGoLiveCount
func dlpcGoLiveCount() C.int64_t { return C.int64_t(dlbridge.LiveCount()) }
