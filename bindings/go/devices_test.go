package dlbridge_test

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
)

// openCLDevice is OpenCL device 0, or skips the test when there is none and none is required
// (DLB_REQUIRE_OPENCL=1, which CI sets, makes a missing device a failure).
func openCLDevice(t *testing.T) dlbridge.Device {
	t.Helper()
	n, err := dlbridge.OpenCLDeviceCount()
	if err != nil || n == 0 {
		if os.Getenv("DLB_REQUIRE_OPENCL") == "1" {
			t.Fatalf("DLB_REQUIRE_OPENCL=1 but no OpenCL device: %v", err)
		}
		t.Skipf("no OpenCL device: %v", err)
	}
	return dlbridge.OpenCL(0)
}

func TestOpenCLRuntimeQueries(t *testing.T) {
	dev := openCLDevice(t)
	noErr(t, dlbridge.OpenCLAvailable())
	count := get(dlbridge.OpenCLDeviceCount())(t)
	name := get(dlbridge.OpenCLDeviceName(0))(t)
	if !strings.Contains(name, " / ") {
		t.Errorf("device name %q", name)
	}
	objs := get(dlbridge.OpenCLDeviceObjects(0))(t)
	if objs.Platform == nil || objs.Device == nil || objs.Context == nil || objs.Queue == nil {
		t.Fatalf("objects %+v", objs)
	}
	if again := get(dlbridge.OpenCLDeviceObjects(0))(t); again.Queue != objs.Queue {
		t.Error("the library's queue changed")
	}
	if _, err := dlbridge.OpenCLDeviceName(int32(count)); err == nil {
		t.Error("a device past the count has a name")
	}
	noErr(t, dlbridge.Synchronize(dev, nil))
	noErr(t, dlbridge.Synchronize(dev, objs.Queue))
	noErr(t, dlbridge.OpenCLQueueHandshake(objs.Queue, objs.Queue))
}

func TestOpenCLCopies(t *testing.T) {
	dev := openCLDevice(t)
	leakCheck(t)
	values := []float32{0, 1.5, 3, 4.5, 6, 7.5}
	host := get(dlbridge.FromSlice(values, 2, 3))(t)
	onDev := get(host.CopyTo(dev))(t)
	if d := get(onDev.Device())(t); d != dev {
		t.Fatalf("device %v", d)
	}
	// An OpenCL buffer is not host memory: the core's refusal verbatim.
	_, err := onDev.Float32s()
	wantError(t, err, dlbridge.StatusUnsupported,
		"opencl:0 memory is not readable by the host: copy the tensor to the cpu first")
	back := get(onDev.CopyTo(dlbridge.CPU))(t)
	if got := get(back.Float32s())(t); !reflect.DeepEqual(got, values) {
		t.Fatalf("round trip %v", got)
	}
	// A view of a device tensor, copied asynchronously on the library's queue.
	queue := get(dlbridge.OpenCLDeviceObjects(0))(t).Queue
	view := get(onDev.Transpose())(t)
	async := get(view.CopyToAsync(dlbridge.CPU, queue))(t)
	noErr(t, dlbridge.Synchronize(dev, queue))
	if got := get(async.Float32s())(t); !reflect.DeepEqual(got, []float32{0, 4.5, 1.5, 6, 3, 7.5}) {
		t.Fatalf("async transposed copy %v", got)
	}
	dst := get(dlbridge.Allocate(dev, dlbridge.Float32, 2, 3))(t)
	noErr(t, host.CopyIntoAsync(dst, queue))
	noErr(t, dlbridge.Synchronize(dev, queue))
	check := get(dst.CopyTo(dlbridge.CPU))(t)
	if got := get(check.Float32s())(t); !reflect.DeepEqual(got, values) {
		t.Fatalf("CopyIntoAsync %v", got)
	}
	mustClose(t, host, onDev, back, view, async, dst, check)
}

// expectedCUDAError is the exact error every CUDA call gives here, or ok=false when CUDA is
// available (a machine with a driver and a GPU).
func expectedCUDAError(t *testing.T) (dlbridge.Status, string, bool) {
	got := dlbridge.CUDAAvailable()
	if got == nil {
		return 0, "", false
	}
	without := "dlbridge was built without CUDA support"
	switch os.Getenv("DLBRIDGE_BUILT_WITH_CUDA") {
	case "1":
		return dlbridge.StatusDeviceUnavailable, "no CUDA driver found", true
	case "0":
		return dlbridge.StatusUnsupported, without, true
	}
	if e, ok := got.(*dlbridge.Error); ok && e.Status == dlbridge.StatusUnsupported {
		return dlbridge.StatusUnsupported, without, true
	}
	return dlbridge.StatusDeviceUnavailable, "no CUDA driver found", true
}

func TestCUDA(t *testing.T) {
	leakCheck(t)
	status, message, unavailable := expectedCUDAError(t)
	if !unavailable {
		// A machine with a GPU: allocate, copy there and back, handshake on the default streams.
		if n := get(dlbridge.CUDADeviceCount())(t); n < 1 {
			t.Fatalf("%d CUDA devices", n)
		}
		host := get(dlbridge.FromSlice([]int32{1, 2, 3}))(t)
		dev := get(host.CopyTo(dlbridge.CUDA(0)))(t)
		p, _, err := dev.HostData(false)
		if err == nil || p != nil {
			t.Fatal("CUDA device memory handed to the host")
		}
		back := get(dev.CopyTo(dlbridge.CPU))(t)
		if got := get(back.Int32s())(t); !reflect.DeepEqual(got, []int32{1, 2, 3}) {
			t.Fatalf("round trip %v", got)
		}
		noErr(t, dlbridge.CUDAStreamHandshake(0, nil, dlbridge.CUDAStreamNone))
		noErr(t, dlbridge.Synchronize(dlbridge.CUDA(0), nil))
		mustClose(t, host, dev, back)
		return
	}
	_, err := dlbridge.CUDADeviceCount()
	wantError(t, err, status, message)
	wantError(t, dlbridge.CUDAAvailable(), status, message)
	x := 1
	_, err = dlbridge.CUDAPointerDevice(unsafe.Pointer(&x))
	wantError(t, err, status, message)
	wantError(t, dlbridge.CUDAStreamHandshake(0, nil, dlbridge.CUDAStreamNone), status, message)
	_, err = dlbridge.Allocate(dlbridge.CUDA(0), dlbridge.Float32, 4)
	if err == nil {
		t.Fatal("a CUDA tensor without CUDA")
	}
	host := get(dlbridge.FromSlice([]float32{1, 2}))(t)
	if _, err := host.CopyTo(dlbridge.CUDA(0)); err == nil {
		t.Fatal("a copy to CUDA without CUDA")
	}
	mustClose(t, host)
	if dlbridge.CUDAStreamNone != -1<<63 {
		t.Error("CUDAStreamNone")
	}
}
