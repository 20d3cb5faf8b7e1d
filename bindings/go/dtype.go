package dlbridge

import "github.com/dlbridge/dlbridge/bindings/go/internal/capi"

// DTypeCode is a DLPack type code (DLDataTypeCode, stored in DLDataType.code): an integer, not a
// closed set. A tensor from a newer producer may carry a code this package has no constant for;
// it is kept as is.
type DTypeCode uint8

// Every type code of DLPack's header (dlpack.h), with DLPack's values (a test compares each with
// the header's through SWIG's output). Bcomplex is post-1.3.
const (
	CodeInt               DTypeCode = 0
	CodeUInt              DTypeCode = 1
	CodeFloat             DTypeCode = 2
	CodeOpaqueHandle      DTypeCode = 3
	CodeBfloat            DTypeCode = 4
	CodeComplex           DTypeCode = 5
	CodeBool              DTypeCode = 6
	CodeFloat8E3M4        DTypeCode = 7
	CodeFloat8E4M3        DTypeCode = 8
	CodeFloat8E4M3B11FNUZ DTypeCode = 9
	CodeFloat8E4M3FN      DTypeCode = 10
	CodeFloat8E4M3FNUZ    DTypeCode = 11
	CodeFloat8E5M2        DTypeCode = 12
	CodeFloat8E5M2FNUZ    DTypeCode = 13
	CodeFloat8E8M0FNU     DTypeCode = 14
	CodeFloat6E2M3FN      DTypeCode = 15
	CodeFloat6E3M2FN      DTypeCode = 16
	CodeFloat4E2M1FN      DTypeCode = 17
	CodeBcomplex          DTypeCode = 18
)

// String returns the core's base name of the code ("float", "float8_e4m3fn"), or "code_N" for
// one the core has no name for.
func (c DTypeCode) String() string {
	if name := capi.Dlb_dtype_code_name(int(c)); name != "" {
		return name
	}
	return "code_" + itoa(int64(c))
}

// DType is a DLPack data type (DLDataType): a type code, the bits of one lane and the number of
// lanes.
type DType struct {
	Code  DTypeCode // the type code (CodeInt, CodeFloat, ...), any value
	Bits  uint8     // the bits of one lane
	Lanes uint16    // the number of lanes: 1 for scalars, 4 for float32x4
}

// The scalar dtypes Go has element types for, and a few others.
var (
	Int8       = DType{CodeInt, 8, 1}
	Int16      = DType{CodeInt, 16, 1}
	Int32      = DType{CodeInt, 32, 1}
	Int64      = DType{CodeInt, 64, 1}
	Uint8      = DType{CodeUInt, 8, 1}
	Uint16     = DType{CodeUInt, 16, 1}
	Uint32     = DType{CodeUInt, 32, 1}
	Uint64     = DType{CodeUInt, 64, 1}
	Float16    = DType{CodeFloat, 16, 1}
	Float32    = DType{CodeFloat, 32, 1}
	Float64    = DType{CodeFloat, 64, 1}
	Bfloat16   = DType{CodeBfloat, 16, 1}
	Complex64  = DType{CodeComplex, 64, 1}
	Complex128 = DType{CodeComplex, 128, 1}
	Bool       = DType{CodeBool, 8, 1}
)

// packed is the DLDataType as the SWIG layer carries it: code | bits << 8 | lanes << 16.
func (d DType) packed() int { return int(d.Code) | int(d.Bits)<<8 | int(d.Lanes)<<16 }

func dtypeFromPacked(p int) DType {
	return DType{Code: DTypeCode(p), Bits: uint8(p >> 8), Lanes: uint16(p >> 16)}
}

// Validate reports the core's error for a dtype that is not valid DLPack (unknown code, illegal
// bits, zero lanes).
func (d DType) Validate() error {
	_, err := check(capi.Dlb_dtype_validate(d.packed()))
	return err
}

// Format returns the core's name of the dtype ("float32", "float8_e4m3fn", "int4x2"), or the
// core's error for an invalid one.
func (d DType) Format() (string, error) {
	buf := make([]byte, capi.DLB_DTYPE_NAME_SIZE)
	if _, err := check(capi.Dlb_dtype_format(d.packed(), buf)); err != nil {
		return "", err
	}
	return cString(buf), nil
}

// String returns Format's name, or "dtype(code=C, bits=B, lanes=L)" for an invalid dtype.
func (d DType) String() string {
	if s, err := d.Format(); err == nil {
		return s
	}
	return "dtype(code=" + itoa(int64(d.Code)) + ", bits=" + itoa(int64(d.Bits)) +
		", lanes=" + itoa(int64(d.Lanes)) + ")"
}

// ElementBits is bits * lanes.
func (d DType) ElementBits() uint32 { return uint32(capi.Dlb_dtype_element_bits(d.packed())) }

// ParseDType parses a dtype name with the core's parser ("float32", "bool", "bfloat16x4").
func ParseDType(name string) (DType, error) {
	if err := checkText(name); err != nil {
		return DType{}, err
	}
	out := make([]int32, 1)
	if _, err := check(capi.Dlb_dtype_parse(name, out)); err != nil {
		return DType{}, err
	}
	return dtypeFromPacked(int(out[0])), nil
}

// ElementSize is the bytes one element occupies on its own: ceil(bits * lanes / 8).
func (d DType) ElementSize() uint64 { return capi.Dlb_dtype_element_size(d.packed()) }

// IsSubbyte reports whether a lane is narrower than a byte (packed unless the tensor carries
// FlagSubbyteTypePadded).
func (d DType) IsSubbyte() bool { return capi.Dlb_dtype_is_subbyte(d.packed()) != 0 }
