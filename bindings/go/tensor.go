package dlbridge

import (
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// DLPack's flags, from the C header.
var (
	FlagReadOnly          = capi.DLPACK_FLAG_BITMASK_READ_ONLY
	FlagIsCopied          = capi.DLPACK_FLAG_BITMASK_IS_COPIED
	FlagSubbyteTypePadded = capi.DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED
)

// MaxNDim is the most dimensions a tensor may have.
const MaxNDim = capi.DLB_MAX_NDIM

// derive makes a new tensor from this one with one core call (views, shares, copies).
func (t *Tensor) derive(f func(addr int64) int64) (*Tensor, error) {
	var out *Tensor
	err := t.use(func(addr int64) error {
		var err error
		out, err = fromResult(f(addr))
		return err
	})
	return out, err
}

// Allocate makes an uninitialised, compact row-major tensor on dev through its backend.
// Ownership: the caller owns the new tensor (Close it); on error nothing is allocated.
func Allocate(dev Device, dt DType, shape ...int64) (*Tensor, error) {
	return AllocateStrided(dev, dt, shape, nil, 0)
}

// AllocateStrided is Allocate with explicit strides (in elements; nil for compact row-major,
// else one per extent, negative and zero included) and DLPack flags (READ_ONLY,
// IS_SUBBYTE_TYPE_PADDED). Ownership as Allocate.
func AllocateStrided(dev Device, dt DType, shape, strides []int64, flags uint64) (*Tensor, error) {
	if e, ok := extentsByValue(shape); ok && strides == nil {
		return fromResult(capi.Dlbx_tensor_allocate_compact(dev.packed(), dt.packed(), len(shape),
			e[0], e[1], e[2], e[3], flags))
	}
	return fromResult(capi.Dlb_tensor_allocate(dev.packed(), dt.packed(), shapeArg(copyOf(shape)),
		copyOf(strides), flags))
}

// The calls of compact tensors of up to four dimensions take the extents by value, as scalars
// (capi.Dlbx_tensor_allocate_compact and capi.Dlbx_tensor_wrap_compact, the shared fast path of
// generators/swig/dlbridge.i): a slice given to cgo escapes to the heap, and cgo checks the
// memory it points to; together they cost these calls about 80 ns. Every other tensor takes the
// general calls with slices.

// extentsByValue returns shape's extents, zero past its end; ok is false when shape has more
// than capi.DLBX_EXTENTS_BY_VALUE of them.
func extentsByValue(shape []int64) (e [4]int64, ok bool) {
	if len(shape) > len(e) {
		return e, false
	}
	copy(e[:], shape)
	return e, true
}

// Four extents by value, as generators/swig/dlbridge.i says (a compile error when it changes).
var _ [capi.DLBX_EXTENTS_BY_VALUE - 4]struct{}
var _ [4 - capi.DLBX_EXTENTS_BY_VALUE]struct{}

// copyOf is a copy of s (nil for nil) for the general calls: what is given to a cgo call escapes
// to the heap, and the caller's own slices (a variadic shape on its stack) must not, or every
// call would pay for it, the by-value ones too.
func copyOf(s []int64) []int64 {
	if s == nil {
		return nil
	}
	return append(make([]int64, 0, len(s)), s...)
}

// shapeArg makes a nil shape (a 0-d tensor) an empty, non-nil slice: the wrapper reads a nil
// slice as a null array.
func shapeArg(shape []int64) []int64 {
	if shape == nil {
		return []int64{}
	}
	return shape
}

// LiveCount is the number of tensors made by the core that are not freed yet, in the whole
// process (for leak checks).
func LiveCount() int64 { return capi.Dlb_tensor_live_count() }

// NDim returns the number of dimensions.
func (t *Tensor) NDim() (int, error) {
	var n int
	err := t.use(func(addr int64) error { n = capi.Dlbx_tensor_ndim(addr); return nil })
	return n, err
}

// Shape returns a copy of the extents.
func (t *Tensor) Shape() ([]int64, error) {
	var out []int64
	err := t.use(func(addr int64) error {
		out = make([]int64, capi.Dlbx_tensor_ndim(addr))
		_, err := check(capi.Dlb_tensor_get_shape(addr, out))
		return err
	})
	return out, err
}

// Strides returns a copy of the strides, in elements.
func (t *Tensor) Strides() ([]int64, error) {
	var out []int64
	err := t.use(func(addr int64) error {
		out = make([]int64, capi.Dlbx_tensor_ndim(addr))
		_, err := check(capi.Dlb_tensor_get_strides(addr, out))
		return err
	})
	return out, err
}

// DType returns the element type.
func (t *Tensor) DType() (DType, error) {
	var d DType
	err := t.use(func(addr int64) error { d = dtypeFromPacked(capi.Dlbx_tensor_dtype(addr)); return nil })
	return d, err
}

// Device returns the device the memory is on.
func (t *Tensor) Device() (Device, error) {
	var d Device
	err := t.use(func(addr int64) error { d = deviceFromPacked(capi.Dlbx_tensor_device(addr)); return nil })
	return d, err
}

// Flags returns the DLPack flags (FlagReadOnly, ...).
func (t *Tensor) Flags() (uint64, error) {
	var f uint64
	err := t.use(func(addr int64) error { f = capi.Dlb_tensor_flags(addr); return nil })
	return f, err
}

// IsReadOnly reports whether the tensor carries FlagReadOnly (dlb_tensor_is_read_only): writes
// through it are refused.
func (t *Tensor) IsReadOnly() (bool, error) {
	var b bool
	err := t.use(func(addr int64) error { b = capi.Dlb_tensor_is_read_only(addr) != 0; return nil })
	return b, err
}

// ElementCount returns the number of elements (1 for a 0-d tensor).
func (t *Tensor) ElementCount() (int64, error) {
	out := make([]int64, 1)
	err := t.use(func(addr int64) error {
		_, err := check(capi.Dlb_tensor_element_count(addr, out))
		return err
	})
	return out[0], err
}

// ByteSize returns the bytes the elements take stored compactly (packed-aware).
func (t *Tensor) ByteSize() (uint64, error) {
	out := make([]int64, 1)
	err := t.use(func(addr int64) error {
		_, err := check(capi.Dlb_tensor_byte_size(addr, capi.Dlb_tensor_flags(addr), out))
		return err
	})
	return uint64(out[0]), err
}

// IsCContiguous reports whether the elements are laid out in C order without gaps.
func (t *Tensor) IsCContiguous() (bool, error) {
	var b bool
	err := t.use(func(addr int64) error { b = capi.Dlb_tensor_is_c_contiguous(addr) != 0; return nil })
	return b, err
}

// IsExclusive reports whether this tensor is the only holder of its memory (no live view or share).
func (t *Tensor) IsExclusive() (bool, error) {
	var b bool
	err := t.use(func(addr int64) error { b = capi.Dlb_tensor_is_exclusive(addr) != 0; return nil })
	return b, err
}

// HostData returns the host address and byte size of a C-contiguous tensor whose memory the
// host can read (the core's check: StatusUnsupported for device memory, StatusLayout when not
// contiguous, StatusReadOnly when writable is asked of a READ_ONLY tensor). The address is
// valid until the tensor and every other reference to its memory are closed (keep t reachable
// meanwhile: see Data).
func (t *Tensor) HostData(writable bool) (unsafe.Pointer, uint64, error) {
	data, size := make([]int64, 1), make([]int64, 1)
	w := 0
	if writable {
		w = 1
	}
	err := t.use(func(addr int64) error {
		_, err := check(capi.Dlb_tensor_host_data(addr, w, data, size))
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return addrToPtr(data[0]), uint64(size[0]), nil
}

// Bytes returns the tensor's bytes, aliasing its memory (writable: refused for READ_ONLY).
func (t *Tensor) Bytes() ([]byte, error) {
	p, n, err := t.HostData(true)
	if err != nil || n == 0 {
		return []byte{}, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// CopyBytes returns a copy of the tensor's bytes in C order (the compact layout), whatever its
// strides and device (READ_ONLY tensors too): one core call, dlb_tensor_copy_to_host with no
// dtype asked.
func (t *Tensor) CopyBytes() ([]byte, error) {
	var out []byte
	err := t.use(func(addr int64) error {
		size := make([]int64, 1)
		if _, err := check(capi.Dlb_tensor_byte_size(addr, capi.Dlb_tensor_flags(addr), size)); err != nil {
			return err
		}
		out = make([]byte, size[0])
		return copyToHost(addr, DType{}, out)
	})
	return out, err
}

// SliceNone marks an omitted bound in a Range, like Python's None.
var SliceNone = capi.DLB_SLICE_NONE

// Range is one dimension of a slice with Python semantics: negative bounds count from the end,
// bounds are clamped, Step may be negative; SliceNone for an omitted bound (as Python's None).
// The zero value Range{} is the whole dimension with step 1, as All is. Any other Range is
// taken as written: Range{Start: 0, Stop: 2} has Step 0, which the core refuses ("slice step is
// 0 in dimension 0").
type Range struct {
	Start, Stop, Step int64 // start:stop:step, as Python writes it
}

// All is the whole dimension (so is the zero value Range{}).
var All = Range{SliceNone, SliceNone, SliceNone}

// Slice returns a view of the first len(ranges) dimensions. Ownership for every view: the
// receiver stays the caller's; the view is a new tensor the caller closes; it keeps the memory
// alive on its own, so the receiver may be closed first. On error nothing is allocated.
func (t *Tensor) Slice(ranges ...Range) (*Tensor, error) {
	triples := make([]int64, 0, 3*len(ranges))
	for _, r := range ranges {
		if r == (Range{}) {
			r = All
		}
		triples = append(triples, r.Start, r.Stop, r.Step)
	}
	return t.derive(func(addr int64) int64 { return capi.Dlb_tensor_slice(addr, triples) })
}

// Select returns the view x[..., index, ...] along axis, which drops that dimension.
// Ownership as Slice.
func (t *Tensor) Select(axis int, index int64) (*Tensor, error) {
	return t.derive(func(addr int64) int64 { return capi.Dlb_tensor_select(addr, axis, index) })
}

// Reshape returns a view with a new shape of the same element count (one extent may be -1);
// StatusLayout when the strides cannot express it (CopyTo first). Ownership as Slice.
func (t *Tensor) Reshape(shape ...int64) (*Tensor, error) {
	s := shapeArg(shape)
	return t.derive(func(addr int64) int64 { return capi.Dlb_tensor_reshape(addr, s) })
}

// Permute returns a view whose dimension i is dimension axes[i] of t. Ownership as Slice.
func (t *Tensor) Permute(axes ...int32) (*Tensor, error) {
	if axes == nil {
		axes = []int32{}
	}
	return t.derive(func(addr int64) int64 { return capi.Dlb_tensor_permute(addr, axes) })
}

// Transpose returns a view with the dimensions in reverse order. Ownership as Slice.
func (t *Tensor) Transpose() (*Tensor, error) {
	return t.derive(capi.Dlb_tensor_transpose)
}

// Share returns another reference to the same memory: a new tensor the caller closes, which
// keeps the memory alive on its own (t stays the caller's). On error nothing is allocated.
func (t *Tensor) Share() (*Tensor, error) {
	return t.derive(func(addr int64) int64 { return capi.Dlb_tensor_share(addr, 0) })
}

// ShareReadOnly returns another reference to the same memory that carries READ_ONLY (to hand
// out a read-only alias). Ownership as Share.
func (t *Tensor) ShareReadOnly() (*Tensor, error) {
	return t.derive(func(addr int64) int64 { return capi.Dlb_tensor_share(addr, FlagReadOnly) })
}

// CopyTo copies the tensor into a new compact tensor on dev (which carries IS_COPIED and is
// writable). Ownership: t is borrowed; the caller owns the copy.
func (t *Tensor) CopyTo(dev Device) (*Tensor, error) {
	return t.derive(func(addr int64) int64 { return capi.Dlb_tensor_copy(addr, dev.packed()) })
}

// CopyToAsync is CopyTo queued on stream (a cudaStream_t or cl_command_queue of the device
// that is not the host; nil makes it synchronous). Keep t open and read the copy only after the
// stream is synchronised (Synchronize). Ownership as CopyTo.
func (t *Tensor) CopyToAsync(dev Device, stream unsafe.Pointer) (*Tensor, error) {
	s := int64(uintptr(stream))
	return t.derive(func(addr int64) int64 { return capi.Dlb_tensor_copy_async(addr, dev.packed(), s) })
}

// CopyInto copies t's elements into dst (same shape and dtype, any strides and devices).
// Both stay the caller's.
func (t *Tensor) CopyInto(dst *Tensor) error {
	return t.CopyIntoAsync(dst, nil)
}

// CopyIntoAsync is CopyInto queued on stream (nil: synchronous); both must stay open until the
// stream has finished.
func (t *Tensor) CopyIntoAsync(dst *Tensor, stream unsafe.Pointer) error {
	s := int64(uintptr(stream))
	copyInto := func(src, d int64) error {
		var r int64
		if stream == nil {
			r = capi.Dlb_tensor_copy_into(src, d)
		} else {
			r = capi.Dlb_tensor_copy_into_async(src, d, s)
		}
		_, err := check(r)
		return err
	}
	// Each tensor counts the call in (the same one twice when dst == t): an export of either
	// waits for it, a Close leaves the release to it.
	return t.use(func(src int64) error {
		return dst.use(func(d int64) error { return copyInto(src, d) })
	})
}

// IsFContiguous reports whether the elements are laid out in Fortran (column-major) order.
func (t *Tensor) IsFContiguous() (bool, error) {
	var b bool
	err := t.use(func(addr int64) error { b = capi.Dlb_tensor_is_f_contiguous(addr) != 0; return nil })
	return b, err
}

// IsAligned reports whether the first element is aligned to alignment bytes (a power of two).
func (t *Tensor) IsAligned(alignment uint64) (bool, error) {
	var b bool
	err := t.use(func(addr int64) error { b = capi.Dlb_tensor_is_aligned(addr, alignment) != 0; return nil })
	return b, err
}

// IsHostReadable reports whether the host CPU can read the tensor's memory.
func (t *Tensor) IsHostReadable() (bool, error) {
	var b bool
	err := t.use(func(addr int64) error { b = capi.Dlb_tensor_is_host_readable(addr) != 0; return nil })
	return b, err
}

// Validate checks the tensor the way imports do (the core's dlb_tensor_validate).
func (t *Tensor) Validate() error {
	return t.use(func(addr int64) error {
		_, err := check(capi.Dlb_tensor_validate(addr, capi.Dlb_tensor_flags(addr)))
		return err
	})
}

// Version is the dlbridge C library's version ("0.2.0").
func Version() string { return capi.Dlb_version_string() }
