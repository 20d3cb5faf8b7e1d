package dlbridge_test

import (
	"testing"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// Every device type and dtype code of DLPack's header is a typed constant with the header's value
// (read from C through SWIG's output), and an unknown value passes through.
func TestDLPackCodesAreTheHeaders(t *testing.T) {
	devices := []struct {
		constant dlbridge.DeviceType
		header   int
		name     string
	}{
		{dlbridge.DeviceTypeCPU, capi.KDLCPU, "cpu"}, {dlbridge.DeviceTypeCUDA, capi.KDLCUDA, "cuda"},
		{dlbridge.DeviceTypeCUDAHost, capi.KDLCUDAHost, "cuda_host"},
		{dlbridge.DeviceTypeOpenCL, capi.KDLOpenCL, "opencl"}, {dlbridge.DeviceTypeVulkan, capi.KDLVulkan, ""},
		{dlbridge.DeviceTypeMetal, capi.KDLMetal, ""}, {dlbridge.DeviceTypeVPI, capi.KDLVPI, ""},
		{dlbridge.DeviceTypeROCM, capi.KDLROCM, ""}, {dlbridge.DeviceTypeROCMHost, capi.KDLROCMHost, ""},
		{dlbridge.DeviceTypeExtDev, capi.KDLExtDev, "ext_dev"},
		{dlbridge.DeviceTypeCUDAManaged, capi.KDLCUDAManaged, "cuda_managed"},
		{dlbridge.DeviceTypeOneAPI, capi.KDLOneAPI, ""}, {dlbridge.DeviceTypeWebGPU, capi.KDLWebGPU, ""},
		{dlbridge.DeviceTypeHexagon, capi.KDLHexagon, ""}, {dlbridge.DeviceTypeMAIA, capi.KDLMAIA, ""},
		{dlbridge.DeviceTypeTrn, capi.KDLTrn, ""}, {dlbridge.DeviceTypeTPU, capi.KDLTPU, ""},
		{dlbridge.DeviceTypeTPUHost, capi.KDLTPUHost, ""},
	}
	for _, d := range devices {
		if int(d.constant) != d.header {
			t.Errorf("device type constant %d, the header says %d", d.constant, d.header)
		}
		if !dlbridge.DeviceTypeKnown(d.constant) {
			t.Errorf("device type %d is not known to the core", d.constant)
		}
		if name := d.constant.String(); name != dlbridge.DeviceTypeName(d.constant) || name == "" ||
			(d.name != "" && name != d.name) {
			t.Errorf("device type %d: String() %q, DeviceTypeName %q", d.constant, name,
				dlbridge.DeviceTypeName(d.constant))
		}
	}
	if got := dlbridge.DeviceType(99).String(); got != "device_type_99" {
		t.Errorf("an unknown device type: %q", got)
	}
	codes := []struct {
		constant dlbridge.DTypeCode
		header   int
	}{
		{dlbridge.CodeInt, capi.KDLInt}, {dlbridge.CodeUInt, capi.KDLUInt}, {dlbridge.CodeFloat, capi.KDLFloat},
		{dlbridge.CodeOpaqueHandle, capi.KDLOpaqueHandle}, {dlbridge.CodeBfloat, capi.KDLBfloat},
		{dlbridge.CodeComplex, capi.KDLComplex}, {dlbridge.CodeBool, capi.KDLBool},
		{dlbridge.CodeFloat8E3M4, capi.KDLFloat8_e3m4}, {dlbridge.CodeFloat8E4M3, capi.KDLFloat8_e4m3},
		{dlbridge.CodeFloat8E4M3B11FNUZ, capi.KDLFloat8_e4m3b11fnuz},
		{dlbridge.CodeFloat8E4M3FN, capi.KDLFloat8_e4m3fn}, {dlbridge.CodeFloat8E4M3FNUZ, capi.KDLFloat8_e4m3fnuz},
		{dlbridge.CodeFloat8E5M2, capi.KDLFloat8_e5m2}, {dlbridge.CodeFloat8E5M2FNUZ, capi.KDLFloat8_e5m2fnuz},
		{dlbridge.CodeFloat8E8M0FNU, capi.KDLFloat8_e8m0fnu}, {dlbridge.CodeFloat6E2M3FN, capi.KDLFloat6_e2m3fn},
		{dlbridge.CodeFloat6E3M2FN, capi.KDLFloat6_e3m2fn}, {dlbridge.CodeFloat4E2M1FN, capi.KDLFloat4_e2m1fn},
		{dlbridge.CodeBcomplex, capi.KDLBcomplex},
	}
	for _, c := range codes {
		if int(c.constant) != c.header {
			t.Errorf("dtype code constant %d, the header says %d", c.constant, c.header)
		}
		if c.constant.String() != capi.Dlb_dtype_code_name(c.header) || c.constant.String() == "" {
			t.Errorf("dtype code %d: String() %q", c.constant, c.constant.String())
		}
	}
	if dlbridge.CodeFloat8E4M3FN.String() != "float8_e4m3fn" || dlbridge.DTypeCode(77).String() != "code_77" {
		t.Errorf("code names: %q, %q", dlbridge.CodeFloat8E4M3FN.String(), dlbridge.DTypeCode(77).String())
	}
	// A device type no constant names round-trips through the core unchanged.
	d := get(dlbridge.ParseDevice("device_type_99:3"))(t)
	if d != (dlbridge.Device{Type: 99, ID: 3}) || d.String() != "device_type_99:3" {
		t.Errorf("device %+v %q", d, d)
	}
}
