package dlbridge_test

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
	"github.com/dlbridge/dlbridge/bindings/go/internal/ctest"
)

// roundTrip: a slice into a tensor, read back aliased and copied, exported and imported in both
// structs, with the dtype and shape intact.
func roundTrip[T dlbridge.Element](t *testing.T, data []T) {
	t.Helper()
	x := get(dlbridge.FromSlice(data, 2, int64(len(data)/2)))(t)
	want := dlbridge.DTypeOf[T]()
	if got := get(x.DType())(t); got != want {
		t.Fatalf("dtype %v, want %v", got, want)
	}
	if got := get(x.Shape())(t); !reflect.DeepEqual(got, []int64{2, int64(len(data) / 2)}) {
		t.Fatalf("shape %v", got)
	}
	if got := get(dlbridge.Data[T](x))(t); !reflect.DeepEqual(got, data) {
		t.Fatalf("Data %v, want %v", got, data)
	}
	if got := get(dlbridge.CopyOut[T](x))(t); !reflect.DeepEqual(got, data) {
		t.Fatalf("CopyOut %v, want %v", got, data)
	}
	// versioned: out to a pointer, back in (a dlbridge tensor comes back as itself).
	p := get(x.ExportVersioned())(t)
	if !x.Closed() {
		t.Fatal("the exported tensor still reads as open")
	}
	y := get(dlbridge.ImportVersioned(p))(t)
	// legacy
	q := get(y.ExportLegacy())(t)
	z := get(dlbridge.ImportLegacy(q))(t)
	if got := get(dlbridge.CopyOut[T](z))(t); !reflect.DeepEqual(got, data) {
		t.Fatalf("after export/import %v, want %v", got, data)
	}
	if got := get(z.DType())(t); got != want {
		t.Fatalf("dtype after legacy round trip %v, want %v", got, want)
	}
	mustClose(t, z)
}

func TestRoundTripEveryDType(t *testing.T) {
	leakCheck(t)
	roundTrip(t, []int8{-128, -1, 0, 127})
	roundTrip(t, []int16{-32768, -1, 0, 32767})
	roundTrip(t, []int32{-1 << 31, -1, 0, 1<<31 - 1})
	roundTrip(t, []int64{-1 << 63, -1, 0, 1<<63 - 1})
	roundTrip(t, []uint8{0, 1, 200, 255})
	roundTrip(t, []uint16{0, 1, 60000, 65535})
	roundTrip(t, []uint32{0, 1, 1 << 31, 1<<32 - 1})
	roundTrip(t, []uint64{0, 1, 1 << 63, 1<<64 - 1})
	roundTrip(t, []float32{-1.5, 0, 3.25, 1e30})
	roundTrip(t, []float64{-1.5, 0, 3.25, 1e300})
	roundTrip(t, []complex64{1 + 2i, -3i, 0, 4})
	roundTrip(t, []complex128{1 + 2i, -3i, 0, 4})
	roundTrip(t, []bool{true, false, false, true})
}

func TestTypedShorthands(t *testing.T) {
	leakCheck(t)
	x := get(dlbridge.FromSlice([]float32{1, 2, 3}))(t)
	defer x.Close()
	s := get(x.Float32s())(t)
	s[1] = 20 // aliases the tensor
	if got := get(x.CopyFloat32s())(t); !reflect.DeepEqual(got, []float32{1, 20, 3}) {
		t.Fatalf("got %v", got)
	}
	b := get(x.Bytes())(t)
	if len(b) != 12 {
		t.Fatalf("%d bytes", len(b))
	}
	if n := get(x.ElementCount())(t); n != 3 {
		t.Fatalf("%d elements", n)
	}
	if n := get(x.ByteSize())(t); n != 12 {
		t.Fatalf("%d bytes", n)
	}
	// A 0-d tensor has one element.
	s0 := get(dlbridge.FromSlice([]int64{7}, []int64{}...))(t) // an empty shape: 0-d
	defer s0.Close()
	if nd := get(s0.NDim())(t); nd != 0 {
		t.Fatalf("ndim %d", nd)
	}
	sc := get(dlbridge.Allocate(dlbridge.CPU, dlbridge.Int64))(t)
	defer sc.Close()
	if nd, n := get(sc.NDim())(t), get(sc.ElementCount())(t); nd != 0 || n != 1 {
		t.Fatalf("scalar: ndim %d, %d elements", nd, n)
	}
}

func TestImportFromCProducer(t *testing.T) {
	leakCheck(t)
	before := ctest.DeleterCalls()
	x := get(dlbridge.ImportVersioned(ctest.MakeVersioned(4, 1, 3, 0)))(t)
	if got := get(x.CopyFloat32s())(t); !reflect.DeepEqual(got, []float32{0, 1, 2, 3}) {
		t.Fatalf("got %v", got)
	}
	if ctest.DeleterCalls() != before {
		t.Fatal("deleter ran before Close")
	}
	mustClose(t, x)
	mustClose(t, x) // idempotent
	if got := ctest.DeleterCalls() - before; got != 1 {
		t.Fatalf("versioned deleter ran %d times", got)
	}
	y := get(dlbridge.ImportLegacy(ctest.MakeLegacy(3)))(t)
	if f := get(y.Flags())(t); f != 0 {
		t.Fatalf("legacy import has flags %#x", f)
	}
	v := get(y.Slice(dlbridge.Range{Start: 1, Stop: dlbridge.SliceNone, Step: 1}))(t)
	mustClose(t, y)
	if got := ctest.DeleterCalls() - before; got != 1 {
		t.Fatalf("the legacy deleter ran while a view is alive (%d calls)", got)
	}
	if got := get(v.CopyFloat32s())(t); !reflect.DeepEqual(got, []float32{1, 2}) {
		t.Fatalf("got %v", got)
	}
	mustClose(t, v)
	if got := ctest.DeleterCalls() - before; got != 2 {
		t.Fatalf("deleters ran %d times, want 2", got)
	}
	// A READ_ONLY import: aliasing slices refused, copies allowed.
	ro := get(dlbridge.ImportVersioned(ctest.MakeVersioned(2, 1, 0, dlbridge.FlagReadOnly)))(t)
	defer ro.Close()
	_, err := ro.Float32s()
	wantError(t, err, dlbridge.StatusReadOnly, "the tensor is read-only")
	if got := get(ro.CopyFloat32s())(t); !reflect.DeepEqual(got, []float32{0, 1}) {
		t.Fatalf("got %v", got)
	}
}

func TestMajorVersion2CallsTheDeleterOnly(t *testing.T) {
	leakCheck(t)
	before := ctest.DeleterCalls()
	x, err := dlbridge.ImportVersioned(ctest.MakeVersioned(4, 2, 0, 0))
	if x != nil {
		t.Fatal("a tensor came back")
	}
	wantError(t, err, dlbridge.StatusUnsupportedVersion,
		"DLPack major version 2 is not supported (dlbridge accepts major version 1)")
	if !errors.Is(err, dlbridge.ErrUnsupportedVersion) {
		t.Fatal("errors.Is(err, ErrUnsupportedVersion) is false")
	}
	if got := ctest.DeleterCalls() - before; got != 1 {
		t.Fatalf("deleter ran %d times, want 1", got)
	}
	// A nil pointer: an error, nothing to free.
	_, err = dlbridge.ImportVersioned(nil)
	if !errors.Is(err, dlbridge.ErrInvalidArgument) {
		t.Fatalf("nil import: %v", err)
	}
}

func TestExportToCConsumerOnAnotherThread(t *testing.T) {
	leakCheck(t)
	// A wrapped C buffer whose release must run exactly once, on the consumer's thread.
	const n = 5
	buf := ctest.Malloc(n * 4)
	vals := unsafe.Slice((*float32)(buf), n)
	for i := range vals {
		vals[i] = float32(i + 1)
	}
	var released int32
	x := get(dlbridge.Wrap(buf, n*4, dlbridge.CPU, dlbridge.Float32, []int64{n}, nil, 0, 0, func() {
		atomic.AddInt32(&released, 1)
		ctest.Free(buf)
	}))(t)
	p := get(x.ExportVersioned())(t)
	if sum := ctest.ConsumeVersionedOnThread(p); sum != 15 {
		t.Fatalf("consumer summed %v", sum)
	}
	// The consumer's thread queued the release (a garbage collection may have run it since):
	// RunReleases runs what is queued.
	if got := atomic.LoadInt32(&released); got > 1 {
		t.Fatalf("release ran %d times", got)
	}
	dlbridge.RunReleases()
	if got := atomic.LoadInt32(&released); got != 1 {
		t.Fatalf("release ran %d times", got)
	}
	// Legacy, from a share: the share goes to the consumer, the original stays ours.
	y := get(dlbridge.FromSlice([]float32{1, 2, 3}))(t)
	s := get(y.Share())(t)
	q := get(s.ExportLegacy())(t)
	if sum := ctest.ConsumeLegacyOnThread(q); sum != 6 {
		t.Fatalf("consumer summed %v", sum)
	}
	if got := get(y.CopyFloat32s())(t); !reflect.DeepEqual(got, []float32{1, 2, 3}) {
		t.Fatalf("got %v", got)
	}
	mustClose(t, y)
}

func TestWrap(t *testing.T) {
	leakCheck(t)
	buf := ctest.Malloc(6 * 8)
	var released int32
	x := get(dlbridge.Wrap(buf, 6*8, dlbridge.CPU, dlbridge.Int64, []int64{2, 3}, nil, 0, 0, func() {
		atomic.AddInt32(&released, 1)
		ctest.Free(buf)
	}))(t)
	s := get(x.Int64s())(t)
	for i := range s {
		s[i] = int64(i * 10)
	}
	// Zero-copy: the C memory sees the writes.
	if c := unsafe.Slice((*int64)(buf), 6); c[5] != 50 {
		t.Fatalf("C memory holds %v", c)
	}
	tr := get(x.Transpose())(t)
	mustClose(t, x)
	if atomic.LoadInt32(&released) != 0 {
		t.Fatal("released while a view is alive")
	}
	c := get(tr.CopyTo(dlbridge.CPU))(t)
	if got := get(c.Int64s())(t); !reflect.DeepEqual(got, []int64{0, 30, 10, 40, 20, 50}) {
		t.Fatalf("transposed copy %v", got)
	}
	mustClose(t, tr, c)
	if got := atomic.LoadInt32(&released); got != 1 {
		t.Fatalf("release ran %d times", got)
	}
	// A refused wrap: release not called, the memory stays the caller's.
	called := false
	_, err := dlbridge.Wrap(buf, 6*8, dlbridge.CPU, dlbridge.Float32, []int64{-2}, nil, 0, 0, func() { called = true })
	wantError(t, err, dlbridge.StatusInvalidArgument, "shape[0] is -2; extents must not be negative")
	if called {
		t.Fatal("release called for a refused wrap")
	}
	// A buffer too small for the elements: refused by the core before anything is made.
	_, err = dlbridge.Wrap(buf, 5*4, dlbridge.CPU, dlbridge.Float32, []int64{2, 3}, nil, 0, 0, func() { called = true })
	wantError(t, err, dlbridge.StatusInvalidArgument, "the tensor's elements reach bytes [0, 24) of a buffer of 20 bytes")
	_, err = dlbridge.Wrap(buf, 6*8, dlbridge.CPU, dlbridge.Float32, []int64{2, 3}, nil, 28, 0, func() { called = true })
	wantError(t, err, dlbridge.StatusInvalidArgument, "the tensor's elements reach bytes [28, 52) of a buffer of 48 bytes")
	if called {
		t.Fatal("release called for a wrap beyond its buffer")
	}
	_, err = dlbridge.Wrap(nil, 0, dlbridge.CPU, dlbridge.Float32, []int64{2}, []int64{1, 1}, 0, 0, nil)
	wantError(t, err, dlbridge.StatusInvalidArgument, "strides must have one value per extent")
	// More dimensions than DLPack allows: the core's check and message.
	_, err = dlbridge.Wrap(buf, 6*8, dlbridge.CPU, dlbridge.Float32, make([]int64, dlbridge.MaxNDim+1), nil, 0, 0, nil)
	wantError(t, err, dlbridge.StatusInvalidArgument, "ndim 65 exceeds the maximum of 64")
	// The same through the SWIG wrapper's shape check (strided allocation takes that path).
	_, err = dlbridge.AllocateStrided(dlbridge.CPU, dlbridge.Float32, make([]int64, dlbridge.MaxNDim+1),
		make([]int64, dlbridge.MaxNDim+1), 0)
	wantError(t, err, dlbridge.StatusInvalidArgument, "ndim 65 exceeds the maximum of 64")
}

// Allocate and Wrap of every rank from 0 to 6, compact and strided: the tensors the core makes
// and its messages.
func TestShapesOnBothSidesOfTheByValueLimit(t *testing.T) {
	leakCheck(t)
	buf := ctest.Malloc(8 * 64)
	defer ctest.Free(buf)
	for ndim := 0; ndim <= 6; ndim++ {
		shape := make([]int64, ndim)
		for i := range shape {
			shape[i] = 2
		}
		compact := make([]int64, ndim)
		stride := int64(1)
		for i := ndim - 1; i >= 0; i-- {
			compact[i] = stride
			stride *= 2
		}
		reversed := make([]int64, ndim)
		for i := range reversed {
			reversed[i] = compact[ndim-1-i]
		}
		made := []*dlbridge.Tensor{
			get(dlbridge.Allocate(dlbridge.CPU, dlbridge.Float64, shape...))(t),
			get(dlbridge.AllocateStrided(dlbridge.CPU, dlbridge.Float64, shape, nil, dlbridge.FlagReadOnly))(t),
			get(dlbridge.Wrap(buf, 8*64, dlbridge.CPU, dlbridge.Float64, shape, nil, 0, 0, nil))(t),
		}
		for _, x := range made {
			if got := get(x.Shape())(t); !reflect.DeepEqual(got, shape) {
				t.Fatalf("ndim %d: shape %v", ndim, got)
			}
			if got := get(x.Strides())(t); !reflect.DeepEqual(got, compact) {
				t.Fatalf("ndim %d: strides %v, want %v", ndim, got, compact)
			}
		}
		if get(made[1].Flags())(t) != dlbridge.FlagReadOnly || get(made[0].Flags())(t) != 0 {
			t.Fatalf("ndim %d: flags %d %d", ndim, get(made[0].Flags())(t), get(made[1].Flags())(t))
		}
		strided := []*dlbridge.Tensor{
			get(dlbridge.AllocateStrided(dlbridge.CPU, dlbridge.Float64, shape, reversed, 0))(t),
			get(dlbridge.Wrap(buf, 8*64, dlbridge.CPU, dlbridge.Float64, shape, reversed, 0, 0, nil))(t),
		}
		for _, x := range strided {
			if got := get(x.Strides())(t); !reflect.DeepEqual(got, reversed) {
				t.Fatalf("ndim %d: strides %v, want %v", ndim, got, reversed)
			}
		}
		mustClose(t, append(made, strided...)...)
		if ndim == 0 {
			continue
		}
		shape[ndim-1] = -1
		want := fmt.Sprintf("shape[%d] is -1; extents must not be negative", ndim-1)
		_, err := dlbridge.Allocate(dlbridge.CPU, dlbridge.Float64, shape...)
		wantError(t, err, dlbridge.StatusInvalidArgument, want)
		_, err = dlbridge.Wrap(buf, 8*64, dlbridge.CPU, dlbridge.Float64, shape, nil, 0, 0, nil)
		wantError(t, err, dlbridge.StatusInvalidArgument, want)
		_, err = dlbridge.Wrap(buf, 8*64, dlbridge.CPU, dlbridge.Float64, shape, compact, 0, 0, nil)
		wantError(t, err, dlbridge.StatusInvalidArgument, want)
	}
}

func TestViewsOutliveTheirBase(t *testing.T) {
	leakCheck(t)
	base := get(dlbridge.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 2, 3))(t)
	row := get(base.Slice(dlbridge.Range{Start: 1, Stop: 2, Step: 1}))(t)
	col := get(base.Select(1, -1))(t)
	re := get(base.Reshape(3, -1))(t)
	pe := get(base.Permute(1, 0))(t)
	tr := get(base.Transpose())(t)
	sh := get(base.Share())(t)
	mustClose(t, base)
	if _, err := base.Shape(); err != dlbridge.ErrClosed {
		t.Fatalf("closed base: %v", err)
	}
	check := func(x *dlbridge.Tensor, shape []int64, want []float32) {
		t.Helper()
		if got := get(x.Shape())(t); !reflect.DeepEqual(got, shape) {
			t.Fatalf("shape %v, want %v", got, shape)
		}
		c := get(x.CopyTo(dlbridge.CPU))(t)
		defer c.Close()
		if got := get(c.Float32s())(t); !reflect.DeepEqual(got, want) {
			t.Fatalf("values %v, want %v", got, want)
		}
	}
	check(row, []int64{1, 3}, []float32{3, 4, 5})
	check(col, []int64{2}, []float32{2, 5})
	check(re, []int64{3, 2}, []float32{0, 1, 2, 3, 4, 5})
	check(pe, []int64{3, 2}, []float32{0, 3, 1, 4, 2, 5})
	check(tr, []int64{3, 2}, []float32{0, 3, 1, 4, 2, 5})
	check(sh, []int64{2, 3}, []float32{0, 1, 2, 3, 4, 5})
	if st := get(tr.Strides())(t); !reflect.DeepEqual(st, []int64{1, 3}) {
		t.Fatalf("strides %v", st)
	}
	if ok := get(tr.IsCContiguous())(t); ok {
		t.Fatal("a transpose reads as contiguous")
	}
	if !get(tr.IsFContiguous())(t) || !get(tr.IsHostReadable())(t) || !get(tr.IsAligned(4))(t) {
		t.Fatal("a transpose of a compact host tensor: F-contiguous, host-readable, aligned")
	}
	noErr(t, tr.Validate())
	// A transposed view is not contiguous: no aliasing slice, the core's refusal verbatim.
	_, err := tr.Float32s()
	wantError(t, err, dlbridge.StatusLayout, "the tensor is not C-contiguous: copy it to a contiguous tensor first")
	// copy into an existing tensor
	dst := get(dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, 3, 2))(t)
	noErr(t, tr.CopyInto(dst))
	noErr(t, dst.CopyInto(dst)) // into itself: overlapping memory, one lock
	if got := get(dst.Float32s())(t); !reflect.DeepEqual(got, []float32{0, 3, 1, 4, 2, 5}) {
		t.Fatalf("CopyInto %v", got)
	}
	mustClose(t, row, col, re, pe, tr, sh, dst)
}

func TestMisuse(t *testing.T) {
	leakCheck(t)
	x := get(dlbridge.FromSlice([]float32{1, 2, 3, 4}, 2, 2))(t)
	// wrong element type
	_, err := x.Int32s()
	wantError(t, err, dlbridge.StatusInvalidArgument, "the tensor holds float32 elements, not int32")
	_, err = dlbridge.CopyOut[float64](x)
	wantError(t, err, dlbridge.StatusInvalidArgument, "the tensor holds float32 elements, not float64")
	// bad shapes
	_, err = x.Reshape(3, 2)
	wantError(t, err, dlbridge.StatusInvalidArgument, "cannot reshape 4 elements into shape (3, 2)")
	_, err = dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, 2, -3)
	wantError(t, err, dlbridge.StatusInvalidArgument, "shape[1] is -3; extents must not be negative")
	_, err = dlbridge.FromSlice([]int32{1, 2, 3}, 2, 2)
	wantError(t, err, dlbridge.StatusInvalidArgument, "the buffer holds 12 bytes but the tensor's 4 int32 elements take 16")
	_, err = dlbridge.FromSlice([]int32{1}, 1<<62, 4)
	wantError(t, err, dlbridge.StatusOverflow, "element count of shape (4611686018427387904, 4) overflows 63 bits")
	_, err = x.Select(2, 0)
	wantError(t, err, dlbridge.StatusInvalidArgument, "axis 2 is out of range for a tensor with 2 dimensions")
	_, err = x.Slice(dlbridge.Range{Start: 0, Stop: 1, Step: 0})
	wantError(t, err, dlbridge.StatusInvalidArgument, "slice step is 0 in dimension 0")
	_, err = x.Permute(0)
	wantError(t, err, dlbridge.StatusInvalidArgument, "permute needs 2 axes, got 1")
	_, err = dlbridge.Allocate(dlbridge.CPU, dlbridge.DType{Code: 2, Bits: 7, Lanes: 1}, 2)
	wantError(t, err, dlbridge.StatusInvalidArgument, "dtype float with 7 bits is not a valid DLPack type")
	// READ_ONLY: no writable slice, no legacy export, no copy into it
	ro := get(x.ShareReadOnly())(t)
	_, err = ro.Float32s()
	wantError(t, err, dlbridge.StatusReadOnly, "the tensor is read-only")
	if !errors.Is(err, dlbridge.ErrReadOnly) {
		t.Fatal("errors.Is(err, ErrReadOnly) is false")
	}
	_, err = ro.Bytes()
	wantError(t, err, dlbridge.StatusReadOnly, "the tensor is read-only")
	_, err = ro.ExportLegacy()
	wantError(t, err, dlbridge.StatusReadOnly,
		"cannot export a read-only tensor as a legacy DLManagedTensor, which has no READ_ONLY flag")
	if ro.Closed() {
		t.Fatal("a refused legacy export closed the tensor")
	}
	err = x.CopyInto(ro)
	wantError(t, err, dlbridge.StatusReadOnly, "cannot copy into a read-only tensor")
	if got := get(ro.CopyFloat32s())(t); !reflect.DeepEqual(got, []float32{1, 2, 3, 4}) {
		t.Fatalf("got %v", got)
	}
	mustClose(t, ro)
	// use after close, double close
	mustClose(t, x)
	mustClose(t, x)
	for _, err := range []error{
		func() error { _, err := x.Float32s(); return err }(),
		func() error { _, err := x.Share(); return err }(),
		func() error { _, err := x.ExportVersioned(); return err }(),
		func() error { _, err := x.ExportLegacy(); return err }(),
		func() error { _, err := x.DType(); return err }(),
		func() error { _, err := x.IsReadOnly(); return err }(),
		func() error { _, err := x.ElementCount(); return err }(),
		func() error { _, err := x.Transpose(); return err }(),
		x.CopyInto(x),
	} {
		if err != dlbridge.ErrClosed || !errors.Is(err, &dlbridge.Error{Status: dlbridge.StatusClosed}) {
			t.Fatalf("use after close: %v", err)
		}
		wantError(t, err, dlbridge.StatusClosed, "the tensor is closed")
	}
}

func TestGoroutinesShareAndClose(t *testing.T) {
	leakCheck(t)
	const workers, perWorker = 64, 1563 // 100032 tensors, each shared once
	var wg sync.WaitGroup
	shares := make(chan *dlbridge.Tensor, 256)
	var closer sync.WaitGroup
	closer.Add(1)
	go func() { // shares are closed on another goroutine than the one that made them
		defer closer.Done()
		for s := range shares {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
	}()
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				x, err := dlbridge.FromSlice([]int32{int32(w), int32(i)})
				if err != nil {
					errs <- err
					return
				}
				s, err := x.Share()
				if err != nil {
					errs <- err
					return
				}
				if err := x.Close(); err != nil {
					errs <- err
					return
				}
				shares <- s
			}
		}(w)
	}
	wg.Wait()
	close(shares)
	closer.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestFinalizerFreesUnclosedTensors(t *testing.T) {
	leakCheck(t)
	start := dlbridge.LiveCount()
	var released int32
	func() {
		for i := 0; i < 1000; i++ {
			_ = get(dlbridge.Allocate(dlbridge.CPU, dlbridge.Float64, 8))(t)
		}
		buf := ctest.Malloc(16)
		_ = get(dlbridge.Wrap(buf, 16, dlbridge.CPU, dlbridge.Float64, []int64{2}, nil, 0, 0, func() {
			atomic.AddInt32(&released, 1)
			ctest.Free(buf)
		}))(t)
	}()
	if dlbridge.LiveCount() < start+1001 {
		t.Fatalf("LiveCount %d, want at least %d", dlbridge.LiveCount(), start+1001)
	}
	if !waitLive(start) {
		t.Fatalf("LiveCount %d after GC, want %d", dlbridge.LiveCount(), start)
	}
	if got := atomic.LoadInt32(&released); got != 1 {
		t.Fatalf("release ran %d times", got)
	}
}

func TestCloseRacingUse(t *testing.T) {
	leakCheck(t)
	for i := 0; i < 200; i++ {
		x := get(dlbridge.FromSlice([]float32{1, 2}))(t)
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if v, err := x.Share(); err == nil {
					v.Close()
				} else if err != dlbridge.ErrClosed {
					t.Error(err)
				}
				x.Close()
			}()
		}
		wg.Wait()
	}
}

// Nothing depends on the OS thread: a tensor made and failed on one locked thread is used,
// fails with its own exact error and is closed on another.
func TestNoThreadLocalState(t *testing.T) {
	leakCheck(t)
	made := make(chan *dlbridge.Tensor)
	errs := make(chan error, 2)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		x, err := dlbridge.FromSlice([]float32{1, 2})
		if err != nil {
			errs <- err
			made <- nil
			return
		}
		_, err = x.Reshape(3) // an error on this thread
		errs <- err
		made <- x
	}()
	x := <-made
	if x == nil {
		t.Fatal(<-errs)
	}
	wantError(t, <-errs, dlbridge.StatusInvalidArgument, "cannot reshape 2 elements into shape (3)")
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_, err := x.Select(0, 5) // another error, on another thread
		errs <- err
		x.Close()
	}()
	<-done
	wantError(t, <-errs, dlbridge.StatusInvalidArgument, "index 5 is out of range for axis 0 with extent 2")
}
