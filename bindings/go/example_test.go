package dlbridge_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
)

// Godoc examples, run by `go test` (their output is checked): the first steps of docs/go.md.

func ExampleFromSlice() {
	x, err := dlbridge.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 2, 3)
	if err != nil {
		panic(err)
	}
	defer x.Close()
	shape, _ := x.Shape()
	dt, _ := x.DType()
	fmt.Println(shape, dt)
	// Output: [2 3] float32
}

func ExampleCopyOut() {
	x, _ := dlbridge.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 2, 3)
	defer x.Close()
	// A transposed view: strided, still the same memory. CopyOut reads any layout.
	xt, err := x.Transpose()
	if err != nil {
		panic(err)
	}
	defer xt.Close()
	values, err := dlbridge.CopyOut[float32](xt)
	fmt.Println(values, err)
	// Output: [0 3 1 4 2 5] <nil>
}

func ExampleTensor_Slice() {
	x, _ := dlbridge.FromSlice([]int32{0, 1, 2, 3, 4, 5}, 2, 3)
	defer x.Close()
	// Range{} is the whole axis; any other Range is taken as written, step included.
	col, err := x.Slice(dlbridge.Range{}, dlbridge.Range{Start: 1, Stop: 2, Step: 1})
	if err != nil {
		panic(err)
	}
	defer col.Close()
	values, _ := dlbridge.CopyOut[int32](col)
	fmt.Println(values)
	// Output: [1 4]
}

func ExampleTensor_ExportVersioned() {
	x, _ := dlbridge.FromSlice([]float64{1.5, 2.5}, 2)
	// The pointer is a DLManagedTensorVersioned* for a C consumer, which now owns it; here it
	// comes straight back.
	p, err := x.ExportVersioned()
	if err != nil {
		panic(err)
	}
	y, err := dlbridge.ImportVersioned(p)
	if err != nil {
		panic(err)
	}
	defer y.Close()
	v, _ := dlbridge.At[float64](y, 1)
	fmt.Println(v, x.Closed())
	// Output: 2.5 true
}

func ExampleError() {
	x, _ := dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, 2, 3)
	x.Close()
	_, err := x.Shape()
	var e *dlbridge.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, "|", e.Message, "|", errors.Is(err, dlbridge.ErrClosed))
	}
	// Output: DLB_ERR_CLOSED | the tensor is closed | true
}

func ExampleListen() {
	dir, _ := os.MkdirTemp("", "dlbridge-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tensors.sock")
	l, err := dlbridge.Listen(path)
	if err != nil {
		panic(err)
	}
	defer l.Close()
	producer, _ := dlbridge.Dial(path) // usually in another process
	defer producer.Close()
	consumer, _ := l.Accept()
	defer consumer.Close()

	x, _ := dlbridge.AllocateShareable(dlbridge.CPU, dlbridge.Int32, 3)
	defer x.Close()
	dlbridge.CopyIn(x, []int32{7, 8, 9})
	producer.Send(x)
	got, err := consumer.Receive()
	if err != nil {
		panic(err)
	}
	defer got.Close()
	values, _ := dlbridge.CopyOut[int32](got)
	fmt.Println(values)
	// Output: [7 8 9]
}

func ExampleAllocateStrided() {
	// A 2x3 tensor in column-major (Fortran) order, flagged READ_ONLY: every write through the
	// package is refused with the core's status and message, and the flag travels with an
	// export to a consumer.
	x, err := dlbridge.AllocateStrided(dlbridge.CPU, dlbridge.Float32, []int64{2, 3}, []int64{1, 2},
		dlbridge.FlagReadOnly)
	if err != nil {
		panic(err)
	}
	defer x.Close()
	strides, _ := x.Strides()
	flags, _ := x.Flags()
	fortran, _ := x.IsFContiguous()
	fmt.Println(strides, flags&dlbridge.FlagReadOnly != 0, fortran)
	err = dlbridge.SetAt[float32](x, 1, 0, 0)
	fmt.Println(errors.Is(err, dlbridge.ErrReadOnly), err)
	// Output:
	// [1 2] true true
	// true DLB_ERR_READ_ONLY: the tensor is read-only
}

func ExampleTensor_ShareReadOnly() {
	x, _ := dlbridge.FromSlice([]int32{1, 2, 3}, 3)
	defer x.Close()
	// The same memory, READ_ONLY: for code that must not write. x stays writable.
	ro, err := x.ShareReadOnly()
	if err != nil {
		panic(err)
	}
	defer ro.Close()
	err = dlbridge.SetAt[int32](ro, 9, 0)
	fmt.Println(errors.Is(err, dlbridge.ErrReadOnly))
	_ = dlbridge.SetAt[int32](x, 9, 0) // the owner writes; the share sees it
	v, _ := dlbridge.At[int32](ro, 0)
	fmt.Println(v)
	// Output:
	// true
	// 9
}

func ExampleVersion() {
	// The version of the C library this program loaded: three numbers, "MAJOR.MINOR.PATCH".
	var major, minor, patch int
	n, err := fmt.Sscanf(dlbridge.Version(), "%d.%d.%d", &major, &minor, &patch)
	fmt.Println(n, err)
	// Output: 3 <nil>
}
