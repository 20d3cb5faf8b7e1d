package dlbridge_test

import (
	"strings"
	"testing"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
)

func TestDTypeNamesAndParsing(t *testing.T) {
	for _, c := range []struct {
		dt   dlbridge.DType
		name string
	}{
		{dlbridge.Float32, "float32"}, {dlbridge.Int8, "int8"}, {dlbridge.Uint64, "uint64"},
		{dlbridge.Bool, "bool"}, {dlbridge.Complex128, "complex128"}, {dlbridge.Bfloat16, "bfloat16"},
		{dlbridge.DType{Code: dlbridge.CodeFloat, Bits: 32, Lanes: 4}, "float32x4"},
	} {
		if got := c.dt.String(); got != c.name {
			t.Errorf("%+v.String() = %q, want %q", c.dt, got, c.name)
		}
		if got := get(dlbridge.ParseDType(c.name))(t); got != c.dt {
			t.Errorf("ParseDType(%q) = %+v, want %+v", c.name, got, c.dt)
		}
	}
	_, err := dlbridge.ParseDType("float7")
	wantError(t, err, dlbridge.StatusInvalidArgument, "dtype float with 7 bits is not a valid DLPack type")
	_, err = dlbridge.ParseDType("complex")
	wantError(t, err, dlbridge.StatusInvalidArgument, "unknown dtype name 'complex'")
	_, err = dlbridge.ParseDType("int8\x00x")
	wantError(t, err, dlbridge.StatusInvalidArgument, "\"int8\\x00x\" contains a NUL byte")
	// A code no constant names is kept as is (never an enum), and reported by the core.
	odd := dlbridge.DType{Code: 200, Bits: 8, Lanes: 1}
	wantError(t, odd.Validate(), dlbridge.StatusUnsupported, "dtype code 200 is not a known DLPack type code")
	if got := odd.String(); got != "dtype(code=200, bits=8, lanes=1)" {
		t.Errorf("String of an unknown code: %q", got)
	}
	if got := dlbridge.Float32.ElementBits(); got != 32 {
		t.Errorf("ElementBits %d", got)
	}
	int4x3 := get(dlbridge.ParseDType("int4x3"))(t)
	if !int4x3.IsSubbyte() || int4x3.ElementSize() != 2 || dlbridge.Complex64.ElementSize() != 8 {
		t.Errorf("int4x3: subbyte %v, size %d", int4x3.IsSubbyte(), int4x3.ElementSize())
	}
	if v := dlbridge.Version(); v == "" || strings.Count(v, ".") != 2 {
		t.Errorf("Version %q", v)
	}
}

func TestDeviceNamesAndParsing(t *testing.T) {
	for _, c := range []struct {
		dev  dlbridge.Device
		text string
	}{
		{dlbridge.CPU, "cpu"}, {dlbridge.CUDA(1), "cuda:1"}, {dlbridge.OpenCL(0), "opencl:0"},
		{dlbridge.CUDAHost, "cuda_host:0"}, {dlbridge.Device{Type: 25, ID: 3}, "device_type_25:3"},
	} {
		if got := c.dev.String(); got != c.text {
			t.Errorf("%+v.String() = %q, want %q", c.dev, got, c.text)
		}
		if got := get(dlbridge.ParseDevice(c.text))(t); got != c.dev {
			t.Errorf("ParseDevice(%q) = %+v, want %+v", c.text, got, c.dev)
		}
	}
	if !dlbridge.CPU.HostReadable() || dlbridge.CUDA(0).HostReadable() {
		t.Error("HostReadable")
	}
	if dlbridge.DeviceTypeName(dlbridge.DeviceTypeCUDA) != "cuda" || dlbridge.DeviceTypeName(5) != "" {
		t.Error("DeviceTypeName")
	}
	if !dlbridge.DeviceTypeKnown(dlbridge.DeviceTypeCUDA) || dlbridge.DeviceTypeKnown(200) {
		t.Error("DeviceTypeKnown")
	}
	if !dlbridge.BackendRegistered(dlbridge.DeviceTypeCPU) {
		t.Error("no CPU backend")
	}
	_, err := dlbridge.ParseDevice("gpu:0")
	wantError(t, err, dlbridge.StatusInvalidArgument, "unknown device name 'gpu:0'")
}

func TestStatusNames(t *testing.T) {
	if dlbridge.StatusReadOnly.String() != "DLB_ERR_READ_ONLY" || dlbridge.Status(99).String() != "DLB_ERR_UNKNOWN" {
		t.Error("status names")
	}
	e := &dlbridge.Error{Status: dlbridge.StatusLayout, Message: "m"}
	if e.Error() != "DLB_ERR_LAYOUT: m" {
		t.Errorf("Error() = %q", e.Error())
	}
}
