package dlbridge_test

import (
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
)

func iota32(t *testing.T, shape ...int64) *dlbridge.Tensor {
	t.Helper()
	x := get(dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, shape...))(t)
	v := make([]float32, get(x.ElementCount())(t))
	for i := range v {
		v[i] = float32(i)
	}
	noErr(t, dlbridge.CopyIn(x, v))
	return x
}

// CopyOut, CopyBytes and CopyIn take every layout: one core call each, C order.
func TestCopiesOfEveryLayout(t *testing.T) {
	leakCheck(t)
	x := iota32(t, 3, 4)
	tr := get(x.Transpose())(t)
	if got := get(tr.CopyFloat32s())(t); !reflect.DeepEqual(got, []float32{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}) {
		t.Fatalf("transposed copy %v", got)
	}
	rev := get(x.Slice(dlbridge.Range{Start: dlbridge.SliceNone, Stop: dlbridge.SliceNone, Step: -1},
		dlbridge.Range{Start: dlbridge.SliceNone, Stop: dlbridge.SliceNone, Step: 2}))(t)
	if got := get(dlbridge.CopyOut[float32](rev))(t); !reflect.DeepEqual(got, []float32{8, 10, 4, 6, 0, 2}) {
		t.Fatalf("negative strides %v", got)
	}
	// Raw bytes of any dtype and layout.
	b := get(rev.CopyBytes())(t)
	if len(b) != 24 || *(*float32)(unsafe.Pointer(&b[4])) != 10 {
		t.Fatalf("CopyBytes %v", b)
	}
	// In: C order into the transpose writes the base in transposed order.
	in := make([]float32, 12)
	for i := range in {
		in[i] = float32(100 + i)
	}
	noErr(t, dlbridge.CopyIn(tr, in))
	want := []float32{100, 103, 106, 109, 101, 104, 107, 110, 102, 105, 108, 111}
	if got := get(x.CopyFloat32s())(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("after CopyIn %v", got)
	}
	// The core's checks, verbatim: size, dtype, READ_ONLY.
	wantError(t, dlbridge.CopyIn(tr, make([]float32, 5)), dlbridge.StatusInvalidArgument,
		"the buffer holds 20 bytes but the tensor's 12 float32 elements take 48")
	wantError(t, dlbridge.CopyIn(tr, make([]int32, 12)), dlbridge.StatusInvalidArgument,
		"the tensor holds float32 elements, not int32")
	wantError(t, dlbridge.CopyIn(tr, []float32(nil)), dlbridge.StatusInvalidArgument,
		"the buffer holds 0 bytes but the tensor's 12 float32 elements take 48")
	ro := get(x.ShareReadOnly())(t)
	if !get(ro.IsReadOnly())(t) || get(x.IsReadOnly())(t) {
		t.Fatal("IsReadOnly: a read-only share is, its writable source is not")
	}
	wantError(t, dlbridge.CopyIn(ro, in), dlbridge.StatusReadOnly, "cannot copy into a read-only tensor")
	_, err := dlbridge.CopyOut[int64](tr)
	wantError(t, err, dlbridge.StatusInvalidArgument, "the tensor holds float32 elements, not int64")
	// Empty tensors copy nothing, in and out.
	empty := get(dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, 0, 3))(t)
	if got := get(empty.CopyFloat32s())(t); len(got) != 0 {
		t.Fatalf("empty %v", got)
	}
	noErr(t, dlbridge.CopyIn(empty, []float32{}))
	mustClose(t, x, tr, rev, ro, empty)
	_, err = dlbridge.CopyOut[float32](x)
	wantError(t, err, dlbridge.StatusClosed, "the tensor is closed")
	wantError(t, dlbridge.CopyIn(x, in), dlbridge.StatusClosed, "the tensor is closed")
}

// At and SetAt: any layout, negative indices, the core's messages.
func TestElementAccess(t *testing.T) {
	leakCheck(t)
	x := iota32(t, 2, 3)
	tr := get(x.Transpose())(t)
	if v := get(dlbridge.At[float32](x, 1, 2))(t); v != 5 {
		t.Fatalf("x[1,2] = %v", v)
	}
	if v := get(dlbridge.At[float32](tr, 2, 1))(t); v != 5 {
		t.Fatalf("transpose[2,1] = %v", v)
	}
	if v := get(dlbridge.At[float32](x, -1, -3))(t); v != 3 {
		t.Fatalf("x[-1,-3] = %v", v)
	}
	noErr(t, dlbridge.SetAt[float32](tr, 50, 0, 1))
	if v := get(dlbridge.At[float32](x, 1, 0))(t); v != 50 {
		t.Fatalf("after SetAt through the transpose: %v", v)
	}
	_, err := dlbridge.At[float32](x, 2, 0)
	wantError(t, err, dlbridge.StatusInvalidArgument, "index 2 is out of range for axis 0 with extent 2")
	_, err = dlbridge.At[int32](x, 0, 0)
	wantError(t, err, dlbridge.StatusInvalidArgument, "the tensor holds float32 elements, not int32")
	_, err = dlbridge.At[float32](x, 0)
	if err == nil {
		t.Fatal("one index for two dimensions was accepted")
	}
	ro := get(x.ShareReadOnly())(t)
	if v := get(dlbridge.At[float32](ro, 0, 1))(t); v != 1 {
		t.Fatalf("read-only read %v", v)
	}
	wantError(t, dlbridge.SetAt[float32](ro, 1, 0, 0), dlbridge.StatusReadOnly, "the tensor is read-only")
	scalar := get(dlbridge.FromSlice([]int64{7}, []int64{}...))(t)
	if v := get(dlbridge.At[int64](scalar))(t); v != 7 {
		t.Fatalf("0-d %v", v)
	}
	mustClose(t, x, tr, ro, scalar)
}

// The zero value Range{} is the whole dimension, step 1 (issue #24); a Range with Step 0 given
// otherwise is the core's error.
func TestZeroRangeIsTheWholeAxis(t *testing.T) {
	leakCheck(t)
	x := iota32(t, 3, 4)
	v := get(x.Slice(dlbridge.Range{}, dlbridge.Range{Start: 1, Stop: 3, Step: 1}))(t)
	if got := get(v.Shape())(t); !reflect.DeepEqual(got, []int64{3, 2}) {
		t.Fatalf("shape %v", got)
	}
	if got := get(v.CopyFloat32s())(t); !reflect.DeepEqual(got, []float32{1, 2, 5, 6, 9, 10}) {
		t.Fatalf("values %v", got)
	}
	all := get(x.Slice(dlbridge.All, dlbridge.Range{}))(t)
	if got := get(all.Strides())(t); !reflect.DeepEqual(got, []int64{4, 1}) {
		t.Fatalf("strides %v", got)
	}
	_, err := x.Slice(dlbridge.Range{Start: 0, Stop: 2})
	wantError(t, err, dlbridge.StatusInvalidArgument, "slice step is 0 in dimension 0")
	mustClose(t, x, v, all)
}

// Go's bool holds 0 or 1 only, DLPack's any byte: other bytes are refused, never handed to Go.
func TestBoolBytesThatAreNotGoBools(t *testing.T) {
	leakCheck(t)
	x := get(dlbridge.FromSlice([]bool{true, false, true}))(t)
	raw := get(x.Bytes())(t)
	raw[1] = 2
	_, err := x.Bools()
	wantError(t, err, dlbridge.StatusInvalidArgument, "the tensor holds bytes that are not valid bool")
	_, err = x.CopyBools()
	wantError(t, err, dlbridge.StatusInvalidArgument, "the tensor holds bytes that are not valid bool")
	_, err = dlbridge.At[bool](x, 1)
	wantError(t, err, dlbridge.StatusInvalidArgument, "the tensor holds bytes that are not valid bool")
	if v := get(dlbridge.At[bool](x, 2))(t); !v {
		t.Fatal("x[2] is false")
	}
	runtime.KeepAlive(x) // raw aliases x's memory until here
	mustClose(t, x)
}
