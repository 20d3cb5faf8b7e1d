package dlbridge_test

import (
	"encoding/binary"
	"sync/atomic"
	"testing"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
	"github.com/dlbridge/dlbridge/bindings/go/internal/ctest"
)

// Device types the fuzzer may claim: the CPU, and types without a backend here (the OpenCL and
// CUDA backends would check a fake buffer through their runtimes).
var fuzzDeviceTypes = []int32{1, 1, 1, 5, 7, 12, 19, 21, 200, -1}

// FuzzImportWrap feeds arbitrary shapes, strides, dtypes, flags, versions and devices through
// ImportVersioned and Wrap (then views, shares and a legacy round trip of what was accepted),
// and checks ownership: every imported tensor's deleter runs exactly once, a wrapped buffer's
// release runs exactly once if and only if the wrap succeeded, and nothing stays alive.
func FuzzImportWrap(f *testing.F) {
	f.Add(uint8(1), uint8(3), uint8(0), uint8(0), []byte{2, 0, 3, 0}, uint8(0), uint8(2), uint8(32), uint16(1), uint16(0), uint8(0))
	f.Add(uint8(1), uint8(9), uint8(0), uint8(0), []byte{3, 2, 1}, uint8(1), uint8(0), uint8(8), uint16(1), uint16(4), uint8(1))
	f.Add(uint8(2), uint8(0), uint8(0), uint8(0), []byte{4}, uint8(0), uint8(2), uint8(32), uint16(1), uint16(0), uint8(0))
	f.Add(uint8(1), uint8(0), uint8(3), uint8(0), []byte{}, uint8(0), uint8(6), uint8(8), uint16(1), uint16(0), uint8(2))
	f.Add(uint8(1), uint8(3), uint8(0), uint8(255), []byte{0xff, 2}, uint8(2), uint8(17), uint8(4), uint16(2), uint16(1), uint8(4))
	f.Add(uint8(1), uint8(3), uint8(0), uint8(0), []byte{0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f}, uint8(1), uint8(1), uint8(64), uint16(0), uint16(0), uint8(8))
	f.Fuzz(func(t *testing.T, major, minor, devSel, devID uint8, dims []byte, mode, code, bits uint8,
		lanes uint16, byteOffset uint16, flags uint8) {
		start := dlbridge.LiveCount()
		deleted := ctest.DeleterCalls()
		r := ctest.Raw{
			Major: uint32(major % 3), Minor: uint32(minor),
			DeviceType: fuzzDeviceTypes[int(devSel)%len(fuzzDeviceTypes)], DeviceID: int32(int8(devID)),
			Code: code % 20, Bits: bits, Lanes: lanes,
			ByteOffset: uint64(byteOffset), Flags: uint64(flags & 0xf),
			HasData: mode&4 == 0, BufferBytes: 4096,
		}
		// Extents from single bytes (signed: negatives too), or from eight bytes (huge values).
		if mode&8 != 0 && len(dims) >= 8 {
			for i := 0; i+8 <= len(dims) && i < 64; i += 8 {
				r.Shape = append(r.Shape, int64(binary.LittleEndian.Uint64(dims[i:])))
			}
		} else {
			for i := 0; i < len(dims) && i < 70; i++ {
				r.Shape = append(r.Shape, int64(int8(dims[i])))
			}
		}
		if mode&1 != 0 {
			r.Strides = make([]int64, len(r.Shape))
			for i := range r.Strides {
				r.Strides[i] = int64(int8(dims[len(dims)-1-i])) // reversed bytes, any sign
			}
		}
		if mode&2 != 0 {
			r.Flags |= 1 << 5 // an unknown flag bit
		}

		x, err := dlbridge.ImportVersioned(ctest.MakeRaw(r))
		if err == nil {
			exercise(t, x)
		} else if _, ok := err.(*dlbridge.Error); !ok {
			t.Fatalf("import error of type %T", err)
		}
		if got := ctest.DeleterCalls() - deleted; got != 1 {
			t.Fatalf("deleter ran %d times (import error: %v)", got, err)
		}

		// The same fields through Wrap: a zero-copy tensor over C memory the release frees.
		buf := ctest.Malloc(4096)
		var released int32
		dt := dlbridge.DType{Code: dlbridge.DTypeCode(r.Code), Bits: r.Bits, Lanes: r.Lanes}
		dev := dlbridge.Device{Type: dlbridge.DeviceType(r.DeviceType), ID: r.DeviceID}
		data, size := buf, uint64(4096)
		if !r.HasData {
			data = nil
		}
		if mode&16 != 0 {
			size = uint64(byteOffset) % 4096 // often too small: the core's buffer check
		}
		w, err := dlbridge.Wrap(data, size, dev, dt, r.Shape, r.Strides, r.ByteOffset, r.Flags, func() {
			atomic.AddInt32(&released, 1)
		})
		if err == nil {
			exercise(t, w)
			if got := atomic.LoadInt32(&released); got != 1 {
				t.Fatalf("release ran %d times", got)
			}
		} else if got := atomic.LoadInt32(&released); got != 0 {
			t.Fatalf("release ran %d times for a refused wrap (%v)", got, err)
		}
		ctest.Free(buf)
		if got := dlbridge.LiveCount(); got != start {
			t.Fatalf("LiveCount %d, want %d", got, start)
		}
	})
}

// exercise reads an accepted tensor's metadata (never its data: the fuzzer's strides may reach
// past the buffer), makes views and a share, sends it through a legacy round trip, and closes all.
func exercise(t *testing.T, x *dlbridge.Tensor) {
	shape, err := x.Shape()
	if err != nil {
		t.Fatal(err)
	}
	strides, err := x.Strides()
	if err != nil || len(strides) != len(shape) {
		t.Fatalf("strides %v for shape %v: %v", strides, shape, err)
	}
	_, _ = x.ElementCount()
	_, _ = x.ByteSize()
	_, _ = x.IsCContiguous()
	if _, err := x.DType(); err != nil {
		t.Fatal(err)
	}
	var others []*dlbridge.Tensor
	if v, err := x.Transpose(); err == nil {
		others = append(others, v)
	}
	if v, err := x.Reshape(-1); err == nil {
		others = append(others, v)
	}
	if len(shape) > 0 {
		if v, err := x.Slice(dlbridge.Range{Start: 1, Stop: dlbridge.SliceNone, Step: 2}); err == nil {
			others = append(others, v)
		}
	}
	s, err := x.Share()
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.ExportLegacy(); err == nil {
		if back, err := dlbridge.ImportLegacy(p); err == nil {
			others = append(others, back)
		}
	} else {
		others = append(others, s)
	}
	others = append(others, x)
	for _, o := range others {
		if err := o.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
