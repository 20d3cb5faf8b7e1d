package dlbridge_test

import (
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

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

// The channel statuses are the header's, with the core's names, each with a sentinel that
// errors.Is matches for every error of that status (and no other); NoTimeout and UIDSelf are the
// header's DLB_TIMEOUT_NONE and DLB_UID_SELF.
func TestChannelStatusesAreTheHeaders(t *testing.T) {
	statuses := []struct {
		status   dlbridge.Status
		header   int
		name     string
		sentinel error
	}{
		{dlbridge.StatusNoListener, capi.DLB_ERR_NO_LISTENER, "DLB_ERR_NO_LISTENER", dlbridge.ErrNoListener},
		{dlbridge.StatusPermission, capi.DLB_ERR_PERMISSION, "DLB_ERR_PERMISSION", dlbridge.ErrPermission},
		{dlbridge.StatusPeerClosed, capi.DLB_ERR_PEER_CLOSED, "DLB_ERR_PEER_CLOSED", dlbridge.ErrPeerClosed},
		{dlbridge.StatusProtocol, capi.DLB_ERR_PROTOCOL, "DLB_ERR_PROTOCOL", dlbridge.ErrProtocol},
		{dlbridge.StatusTimeout, capi.DLB_ERR_TIMEOUT, "DLB_ERR_TIMEOUT", dlbridge.ErrTimeout},
		{dlbridge.StatusLimit, capi.DLB_ERR_LIMIT, "DLB_ERR_LIMIT", dlbridge.ErrLimit},
	}
	for i, s := range statuses {
		if int(s.status) != s.header || s.status.String() != s.name {
			t.Errorf("status %d %q, the header says %d %q", s.status, s.status, s.header, s.name)
		}
		err := error(&dlbridge.Error{Status: s.status, Message: "a message"})
		for j, other := range statuses {
			if errors.Is(err, other.sentinel) != (i == j) {
				t.Errorf("errors.Is(%v, sentinel of %v) is %v", err, other.status, i != j)
			}
		}
		if errors.Is(err, dlbridge.ErrDevice) || errors.Is(err, dlbridge.ErrClosed) {
			t.Errorf("%v matches a sentinel of another status", err)
		}
		var timeout interface{ Timeout() bool }
		if !errors.As(err, &timeout) || timeout.Timeout() != (s.status == dlbridge.StatusTimeout) {
			t.Errorf("%v: Timeout() is wrong", err)
		}
	}
	if dlbridge.NoTimeout != time.Duration(capi.DLB_TIMEOUT_NONE) || uint(dlbridge.UIDSelf) != capi.DLB_UID_SELF {
		t.Errorf("NoTimeout %d, UIDSelf %d: the header says %d, %d", dlbridge.NoTimeout, dlbridge.UIDSelf,
			capi.DLB_TIMEOUT_NONE, capi.DLB_UID_SELF)
	}
}

// The tensor rows of docs/architecture.md's vocabulary table: one name per concept in every
// language. Each name the Go column gives is a method of *Tensor, so a rename in the code or in
// the table fails here (the Java and C# vocabulary tests read the same rows).
var tensorVocabularyRows = []string{
	"a tensor's element count",
	"read-only (the READ_ONLY flag)",
	"C-contiguous (row-major, no gaps)",
	"F-contiguous (column-major, no gaps)",
	"host-readable (the CPU can read the memory in place)",
	"the only holder of its memory (no live view or share)",
	"a read-only share of the same memory",
	"a copy queued on a stream",
}

const architecturePage = "../../docs/architecture.md"

// vocabularyColumn returns, for each row of the "One vocabulary" table of docs/architecture.md,
// the cell of the given language's column, keyed by the row's concept.
func vocabularyColumn(t *testing.T, language string) map[string]string {
	t.Helper()
	text, err := os.ReadFile(architecturePage)
	if err != nil {
		t.Fatal(err)
	}
	section := string(text)
	start := strings.Index(section, "## One vocabulary")
	if start < 0 {
		t.Fatalf("%s has no section \"One vocabulary\"", architecturePage)
	}
	section = section[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	column := -1
	cells := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		row := strings.Split(strings.Trim(line, "|"), "|")
		for i := range row {
			row[i] = strings.TrimSpace(row[i])
		}
		if column < 0 {
			for i, name := range row {
				if name == language {
					column = i
				}
			}
			if column < 0 {
				t.Fatalf("the vocabulary table has no %s column: %q", language, line)
			}
			continue
		}
		if column < len(row) {
			cells[row[0]] = row[column]
		}
	}
	return cells
}

// The identifiers a cell names: the leading identifier of each `code span`.
var vocabularyName = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_]*)")

func TestTensorVocabularyIsTheTables(t *testing.T) {
	cells := vocabularyColumn(t, "Go")
	tensor := reflect.TypeOf((*dlbridge.Tensor)(nil))
	for _, concept := range tensorVocabularyRows {
		cell, ok := cells[concept]
		if !ok {
			t.Errorf("the vocabulary table has no row %q", concept)
			continue
		}
		names := vocabularyName.FindAllStringSubmatch(cell, -1)
		if len(names) == 0 {
			t.Errorf("row %q names nothing for Go: %q", concept, cell)
		}
		for _, name := range names {
			if _, ok := tensor.MethodByName(name[1]); !ok {
				t.Errorf("row %q: *Tensor has no method %s", concept, name[1])
			}
		}
	}
}
