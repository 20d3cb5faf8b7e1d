package dlbridge

import (
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// Wrap makes a tensor over memory the caller owns, zero-copy: size bytes at data (C memory, or
// a device handle such as a cl_mem; never Go memory, which C may not keep) described by dev, dt,
// shape, strides (in elements; nil for compact row-major, else one per extent), byteOffset and
// DLPack flags. The core refuses, before anything is made, a tensor whose elements reach beyond
// the size bytes (StatusInvalidArgument, "the tensor's elements reach bytes [0, 24) of a buffer
// of 20 bytes"), and any other malformed description, with its own message.
//
// Ownership: on success the tensor owns the memory, and release (when not nil) is called exactly
// once, after the last reference (the tensor, its views and shares, a consumer it was exported
// to) is released. When that last release happens in this package (a Close, a finalizer) the
// release function runs there, before Close returns. When it happens on another thread (a C
// consumer calling the deleter on a thread of its own), the shared release engine queues it
// and it runs at this package's next Close, Wrap or garbage collection, or in RunReleases,
// on that goroutine: release must not panic, and should not block. On error release is not
// called and the caller still owns the memory.
func Wrap(data unsafe.Pointer, size uint64, dev Device, dt DType, shape, strides []int64,
	byteOffset, flags uint64, release func()) (*Tensor, error) {
	drainReleases() // memory other threads released meanwhile goes before more is wrapped
	var token int64
	if release != nil {
		token = releases.add(release)
	}
	var result int64
	if e, ok := extentsByValue(shape); ok && strides == nil {
		result = capi.Dlbx_tensor_wrap_compact(int64(uintptr(data)), size, len(shape), e[0], e[1], e[2], e[3],
			dev.packed(), dt.packed(), byteOffset, flags, token)
	} else {
		result = capi.Dlbx_tensor_wrap(int64(uintptr(data)), size, shapeArg(copyOf(shape)), copyOf(strides),
			dev.packed(), dt.packed(), byteOffset, flags, token)
	}
	t, err := fromResult(result)
	if err != nil && token != 0 {
		releases.take(token) // refused: the release is not called, the memory stays the caller's
	}
	return t, err
}
