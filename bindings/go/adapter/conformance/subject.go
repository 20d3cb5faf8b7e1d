// Package conformance is the Go adapter's one table: the conformance kit's dlpc_subject
// (conformance/include/dlpack_conformance.h; table.go) with the interop matrix's exchange
// extension (exchange.go), which the c-shared library (../cshared) exports and the Go host
// (../host) runs in process. It uses the binding's public API only:
//
//   - producer: the kit's values, wrapped read-only without a copy, are copied (CopyInto) into a
//     tensor laid out as asked (AllocateStrided, or a view into a larger allocation for an
//     offset), made READ_ONLY (ShareReadOnly) or a copy (CopyTo), and exported;
//   - consumer: the import's accessors fill the report, and its values are copied into a tensor
//     wrapped over the kit's buffer; release closes it.
//
// It links libdlbridge.so, as the binding's users do (the C and Rust adapters embed a hidden
// copy of the core): its live count is that of every user of the library in the process.
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
	if buf != nil && size > 0 {
		out := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(size))
		out[copy(out[:size-1], text)] = 0
	}
}

// int64s copies n values of a kit array (nil when p is NULL).
func int64s(p *C.int64_t, n C.int32_t) []int64 {
	if p == nil {
		return nil
	}
	return append([]int64{}, unsafe.Slice((*int64)(unsafe.Pointer(p)), int(n))...)
}

// status is err's status, -1 for an error not of the binding.
func status(err error) dlbridge.Status {
	var e *dlbridge.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return -1
}

// export hands t out as a DLManagedTensorVersioned* or (legacy) a DLManagedTensor*, C memory the
// caller then owns; a refused export leaves t with us, and closes it.
func export(t *dlbridge.Tensor, legacy bool) (unsafe.Pointer, error) {
	export := t.ExportVersioned
	if legacy {
		export = t.ExportLegacy
	}
	exported, err := export()
	if err != nil {
		t.Close()
	}
	return exported, err
}

// ---- producer ----

// allocate returns a writable tensor of dt with the spec's shape, strides and offset: an
// allocation, or for an offset a view that far into a larger one.
func allocate(spec *C.dlpc_case_spec, dt dlbridge.DType, shape []int64, count int64,
	layout uint64) (*dlbridge.Tensor, error) {
	strides := int64s(spec.strides, spec.ndim)
	if spec.offset_elements <= 0 {
		return dlbridge.AllocateStrided(dlbridge.CPU, dt, shape, strides, layout)
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
	dt := dlbridge.DType{Code: dlbridge.DTypeCode(spec.dtype.code), Bits: uint8(spec.dtype.bits),
		Lanes: uint16(spec.dtype.lanes)}
	shape := int64s(spec.shape, spec.ndim)
	flags := uint64(spec.flags)
	layout := flags & dlbridge.FlagSubbyteTypePadded
	// The kit's values (C memory, compact), borrowed for this call: it owns nothing.
	values, err := dlbridge.Wrap(unsafe.Pointer(spec.values), uint64(spec.values_size),
		dlbridge.CPU, dt, shape, nil, 0, layout|dlbridge.FlagReadOnly, nil)
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
		result, err = made.CopyTo(dlbridge.CPU) // a copy: CopyTo marks it IS_COPIED
	default:
		return made, nil
	}
	made.Close()
	return result, err
}

//export dlpcGoProduce
func dlpcGoProduce(spec *C.dlpc_case_spec, legacy C.int, out *unsafe.Pointer, message *C.char,
	size C.size_t) C.int {
	rc := C.int(C.DLPC_ERROR)
	t, err := makeTensor(spec)
	if err == nil {
		if *out, err = export(t, legacy != 0); err == nil {
			return C.DLPC_OK
		}
		// READ_ONLY (and padded sub-byte) tensors cannot travel in the legacy struct.
		if st := status(err); st == dlbridge.StatusReadOnly || st == dlbridge.StatusUnsupported {
			rc = C.DLPC_REFUSED
		}
	} else if status(err) == dlbridge.StatusUnsupported {
		rc = C.DLPC_UNSUPPORTED
	}
	writeMessage(message, size, err.Error())
	return rc
}

// ---- consumer ----

// firstElement returns the address of element 0 as the binding shows it: the host data of the
// one-element view t[0:1, 0:1, ...], which is C-contiguous whatever t's strides are.
func firstElement(t *dlbridge.Tensor, ndim int) (unsafe.Pointer, error) {
	ranges := make([]dlbridge.Range, ndim)
	for d := range ranges {
		ranges[d] = dlbridge.Range{Start: 0, Stop: 1, Step: 1}
	}
	v, err := t.Slice(ranges...)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	p, _, err := v.HostData(false)
	return p, err
}

// readValues copies t's elements, compact and in C order in its storage format, into the kit's
// buffer (CopyInto a tensor wrapped over it, which the core refuses when it is too small), and
// returns the bytes written.
func readValues(t *dlbridge.Tensor, r *C.dlpc_consume_report, shape []int64,
	flags uint64) (uint64, error) {
	dt, err := t.DType()
	if err != nil {
		return 0, err
	}
	out, err := dlbridge.Wrap(r.values, uint64(r.values_capacity), dlbridge.CPU, dt, shape, nil, 0,
		flags&dlbridge.FlagSubbyteTypePadded, nil)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	if err := t.CopyInto(out); err != nil {
		return 0, err
	}
	return t.ByteSize()
}

// fillReport fills r from an imported tensor; DLPC_OK or the code to return.
func fillReport(t *dlbridge.Tensor, r *C.dlpc_consume_report) (C.int, error) {
	shape, err := t.Shape()
	if err != nil {
		return C.DLPC_ERROR, err
	}
	if len(shape) > C.DLPC_MAX_NDIM {
		return C.DLPC_UNSUPPORTED, fmt.Errorf("ndim %d is more than a report holds", len(shape))
	}
	strides, err := t.Strides() // always known: NULL strides were resolved on import
	if err != nil {
		return C.DLPC_ERROR, err
	}
	r.ndim, r.strides_known = C.int32_t(len(shape)), 1
	for d := range shape {
		r.shape[d], r.strides[d] = C.int64_t(shape[d]), C.int64_t(strides[d])
	}
	count, err := t.ElementCount()
	if err != nil {
		return C.DLPC_ERROR, err
	}
	r.first_element = nil
	if count > 0 {
		if r.first_element, err = firstElement(t, len(shape)); err != nil {
			return C.DLPC_ERROR, fmt.Errorf("first element: %w", err)
		}
	}
	flags, err := t.Flags()
	if err != nil {
		return C.DLPC_ERROR, err
	}
	r.writable = 1 // Bytes and Data hand out writable slices unless the tensor is READ_ONLY
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
func dlpcGoConsume(tensor unsafe.Pointer, legacy C.int, r *C.dlpc_consume_report,
	handle *C.uintptr_t) C.int {
	importTensor := dlbridge.ImportVersioned
	if legacy != 0 {
		importTensor = dlbridge.ImportLegacy
	}
	t, err := importTensor(tensor) // consumed in every case: a refusal ran the deleter once
	rc := C.int(C.DLPC_REFUSED)
	if err == nil {
		if rc, err = fillReport(t, r); rc == C.DLPC_OK {
			*handle = C.uintptr_t(cgo.NewHandle(t))
			return rc
		}
		t.Close() // runs the deleter, once
	}
	writeMessage(&r.message[0], C.size_t(len(r.message)), err.Error())
	return rc
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
