package dlbridge

import (
	"reflect"
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
// C to keep. Errors: a malformed shape (the core's message), a shape whose element count (the
// core's count) differs from len(data). Ownership: the caller owns the new tensor.
func FromSlice[T Element](data []T, shape ...int64) (*Tensor, error) {
	if shape == nil {
		shape = []int64{int64(len(data))}
	}
	count := make([]int64, 1)
	if _, err := check(capi.Dlb_shape_element_count(shape, count)); err != nil {
		return nil, err
	}
	if count[0] != int64(len(data)) {
		return nil, errorf(StatusInvalidArgument, "shape %v holds %d elements but the data has %d",
			shape, count[0], len(data))
	}
	t, err := Allocate(CPU, DTypeOf[T](), shape...)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		p, _, err := t.HostData(true)
		if err != nil {
			t.Close()
			return nil, err
		}
		copy(unsafe.Slice((*T)(p), len(data)), data)
	}
	return t, nil
}

// hostElements checks that t holds T's dtype in host-readable, C-contiguous memory and returns
// its first element and count.
// addr is a live tensor (the caller holds its lock).
func hostElements[T Element](addr int64, writable bool) (unsafe.Pointer, int, error) {
	want := DTypeOf[T]()
	dt := dtypeFromPacked(capi.Dlbx_tensor_dtype(addr))
	if dt != want {
		var zero T
		return nil, 0, errorf(StatusInvalidArgument, "tensor has dtype %v, not %v (%s)", dt, want,
			reflect.TypeOf(zero).String())
	}
	w := 0
	if writable {
		w = 1
	}
	data, size := make([]int64, 1), make([]int64, 1)
	if _, err := check(capi.Dlb_tensor_host_data(addr, w, data, size)); err != nil {
		return nil, 0, err
	}
	p := addrToPtr(data[0])
	var zero T
	n := int(uint64(size[0]) / uint64(unsafe.Sizeof(zero)))
	if n == 0 {
		return nil, 0, nil
	}
	if uintptr(p)%unsafe.Alignof(zero) != 0 {
		return nil, 0, errorf(StatusLayout, "first element is not aligned to %d bytes for %s",
			unsafe.Alignof(zero), reflect.TypeOf(zero).String())
	}
	if _, isBool := any(zero).(bool); isBool {
		for _, b := range unsafe.Slice((*byte)(p), n) {
			if b > 1 {
				return nil, 0, errorf(StatusInvalidArgument, "tensor holds bytes that are not valid bool")
			}
		}
	}
	return p, n, nil
}

// Data returns the elements of t as a slice of T that aliases the tensor's memory, in C order,
// without copying. The slice is valid until t and every other reference to its memory are
// closed; it does not keep t reachable, so keep t alive (runtime.KeepAlive) while using it, or
// t's finalizer may release the memory. Errors: another dtype than T's, memory the host cannot read (StatusUnsupported), a
// layout that is not C-contiguous (StatusLayout: CopyTo first), a READ_ONLY tensor
// (StatusReadOnly: a Go slice can always be written; use CopyOut).
func Data[T Element](t *Tensor) ([]T, error) {
	var out []T
	err := t.use(func(addr int64) error {
		p, n, err := hostElements[T](addr, true)
		if err == nil && n > 0 {
			out = unsafe.Slice((*T)(p), n)
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

// CopyOut returns a copy of the elements of t (READ_ONLY tensors too). Errors as Data, except
// READ_ONLY.
func CopyOut[T Element](t *Tensor) ([]T, error) {
	var out []T
	err := t.use(func(addr int64) error {
		p, n, err := hostElements[T](addr, false)
		if err != nil {
			return err
		}
		out = make([]T, n)
		if n > 0 {
			copy(out, unsafe.Slice((*T)(p), n))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
