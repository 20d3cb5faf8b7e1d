package dlbridge

import (
	"runtime"
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// Element is a Go type with a DLPack dtype of the same size and bit layout.
type Element interface {
	int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 |
		float32 | float64 | complex64 | complex128 | bool
}

// DTypeOf returns the dtype of the Go element type T.
func DTypeOf[T Element]() DType {
	var zero T
	switch any(zero).(type) {
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case uint8:
		return Uint8
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case float32:
		return Float32
	case float64:
		return Float64
	case complex64:
		return Complex64
	case complex128:
		return Complex128
	default:
		return Bool
	}
}

// FromSlice copies data into a new CPU tensor of T's dtype with the given shape (a 1-D tensor of
// len(data) elements when no shape is given). It copies because Go 1.19 cannot pin Go memory for
// C to keep. Errors are the core's: a malformed shape, or data whose length is not the shape's
// element count. Ownership: the caller owns the new tensor.
func FromSlice[T Element](data []T, shape ...int64) (*Tensor, error) {
	if shape == nil {
		shape = []int64{int64(len(data))}
	}
	t, err := Allocate(CPU, DTypeOf[T](), shape...)
	if err != nil {
		return nil, err
	}
	if err := CopyIn(t, data); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Memory of Go's that C reads or writes during a call (CopyOut's and CopyIn's slices) crosses
// SWIG's interface as an address, an integer cgo cannot see. So that the address is never one
// on a goroutine's stack (which moves when it grows), addressOf makes the slice escape to the
// heap, as cgo does for every pointer argument; the garbage collector never moves heap memory,
// and runtime.KeepAlive after the call keeps it from being freed during it.
var (
	escapeAlwaysFalse bool
	escapeSink        any
)

// addressOf is the address of s's first element, 0 for an empty slice (see above).
func addressOf[T any](s []T) int64 {
	if escapeAlwaysFalse {
		escapeSink = s
	}
	if len(s) == 0 {
		return 0
	}
	return int64(uintptr(unsafe.Pointer(&s[0])))
}

// byteLen is the size of s in bytes.
func byteLen[T any](s []T) uint64 {
	var zero T
	return uint64(len(s)) * uint64(unsafe.Sizeof(zero))
}

// copyToHost is dlb_tensor_copy_to_host of the live tensor addr into out, whose elements are of
// dtype dt (DType{}: raw bytes).
func copyToHost[T any](addr int64, dt DType, out []T) error {
	_, err := check(capi.Dlb_tensor_copy_to_host(addr, dt.packed(), addressOf(out), byteLen(out)))
	runtime.KeepAlive(out)
	return err
}

// hostElements is dlb_tensor_host_elements of the live tensor addr as T (the core's checks of
// the dtype, the device, READ_ONLY for DLB_ACCESS_WRITE in access, and the layout unless
// DLB_ACCESS_ANY_LAYOUT): the first element and the count.
func hostElements[T Element](addr int64, access uint) (unsafe.Pointer, int, error) {
	out := make([]int64, 2)
	if _, err := check(capi.Dlb_tensor_host_elements(addr, DTypeOf[T]().packed(), access, out[0:1], out[1:2])); err != nil {
		return nil, 0, err
	}
	if out[1] == 0 {
		return nil, 0, nil
	}
	p := addrToPtr(out[0])
	if err := checkGoElement[T](p); err != nil {
		return nil, 0, err
	}
	return p, int(out[1]), nil
}

// checkGoElement makes the checks of Go's own type rules that no other language has, for an
// element of T at p: Go needs T's alignment (the race detector's pointer checks and some
// platforms fault without it), which DLPack does not promise. The core cannot know about them.
func checkGoElement[T Element](p unsafe.Pointer) error {
	var zero T
	if uintptr(p)%unsafe.Alignof(zero) != 0 {
		return errorf(StatusLayout, "the first element is not aligned to %d bytes, as Go's %T needs",
			unsafe.Alignof(zero), zero)
	}
	return nil
}

// checkBools refuses bool elements that are neither 0 nor 1: Go's bool may hold nothing else,
// while DLPack's bool is any byte.
func checkBools[T Element](values []T) error {
	var zero T
	if _, isBool := any(zero).(bool); !isBool || len(values) == 0 {
		return nil
	}
	for _, b := range unsafe.Slice((*byte)(unsafe.Pointer(&values[0])), len(values)) {
		if b > 1 {
			return errorf(StatusInvalidArgument, "the tensor holds bytes that are not valid bool")
		}
	}
	return nil
}

// Data returns the elements of t as a slice of T that aliases the tensor's memory, in C order,
// without copying: the core's typed host access (dlb_tensor_host_elements), with its checks and
// messages: another dtype than T's (StatusInvalidArgument), memory the host cannot read
// (StatusUnsupported), a READ_ONLY tensor (StatusReadOnly: a Go slice can always be written; use
// CopyOut), a layout that is not C-contiguous (StatusLayout: use CopyOut, or CopyTo first).
//
// The slice is C memory that the Go garbage collector does not know: it stays valid until t and
// every other reference to the same memory (views, shares, a consumer it was exported to) are
// closed, and it does not keep t reachable. When t is not used after the last use of the slice,
// its finalizer may run and free the memory while the slice is still in use: put
// runtime.KeepAlive(t) after that last use (or Close t there, which also keeps it reachable
// until then).
func Data[T Element](t *Tensor) ([]T, error) {
	var out []T
	err := t.use(func(addr int64) error {
		p, n, err := hostElements[T](addr, capi.DLB_ACCESS_WRITE)
		if err == nil && n > 0 {
			out = unsafe.Slice((*T)(p), n)
			err = checkBools(out)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []T{}
	}
	return out, nil
}

// CopyOut returns a copy of the elements of t in C order, whatever its strides (transposed,
// sliced with negative steps, broadcast) and its device (a device tensor is copied through its
// backend), READ_ONLY tensors too: one core call, dlb_tensor_copy_to_host, whose checks and
// messages are the only ones (another dtype than T's is StatusInvalidArgument, "the tensor holds
// float32 elements, not int32").
func CopyOut[T Element](t *Tensor) ([]T, error) {
	var out []T
	err := t.use(func(addr int64) error {
		count := make([]int64, 1)
		if _, err := check(capi.Dlb_tensor_element_count(addr, count)); err != nil {
			return err
		}
		out = make([]T, count[0])
		if err := copyToHost(addr, DTypeOf[T](), out); err != nil {
			return err
		}
		return checkBools(out)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CopyIn copies values, in C order, into the elements of t, whatever its strides and device:
// one core call, dlb_tensor_copy_from_host. values must hold exactly t's element count of T's
// dtype (the core refuses another size, "the buffer holds 20 bytes but the tensor's 12 float32
// elements take 48", another dtype, and a READ_ONLY tensor, each with its message). values stays
// the caller's; nothing keeps it after the call.
func CopyIn[T Element](t *Tensor, values []T) error {
	return t.use(func(addr int64) error {
		_, err := check(capi.Dlb_tensor_copy_from_host(addr, DTypeOf[T]().packed(), addressOf(values), byteLen(values)))
		runtime.KeepAlive(values)
		return err
	})
}

// elementAt is the host address of one element of the live tensor addr as T, in one core call
// (dlb_tensor_typed_element: the dtype, the device, READ_ONLY when writing, then the index: one
// per dimension, negative ones counting from the end).
func elementAt[T Element](addr int64, access uint, index []int64) (unsafe.Pointer, error) {
	if index == nil {
		index = []int64{}
	}
	out := make([]int64, 1)
	if _, err := check(capi.Dlb_tensor_typed_element(addr, DTypeOf[T]().packed(), access, index, out)); err != nil {
		return nil, err
	}
	p := addrToPtr(out[0])
	return p, checkGoElement[T](p)
}

// At returns the element of t at index (one index per dimension, none for a 0-d tensor;
// negative ones count from the end), any layout, READ_ONLY tensors too. Errors are the core's:
// another dtype than T's, memory the host cannot read, an index count other than the number
// of dimensions, an index out of range ("index 2 is out of range for axis 0 with extent 2").
func At[T Element](t *Tensor, index ...int64) (T, error) {
	var v T
	err := t.use(func(addr int64) error {
		p, err := elementAt[T](addr, capi.DLB_ACCESS_READ, index)
		if err == nil {
			values := unsafe.Slice((*T)(p), 1)
			if err = checkBools(values); err == nil {
				v = values[0]
			}
		}
		return err
	})
	return v, err
}

// SetAt writes value into the element of t at index (as At; StatusReadOnly for a READ_ONLY
// tensor).
func SetAt[T Element](t *Tensor, value T, index ...int64) error {
	return t.use(func(addr int64) error {
		p, err := elementAt[T](addr, capi.DLB_ACCESS_WRITE, index)
		if err == nil {
			*(*T)(p) = value
		}
		return err
	})
}
