//! Element types (`DLDataType`) as a small `Copy` struct over the integer codes. Never an enum: a
//! newer producer may send a code this crate has not heard of. (Devices are in `device.rs`.)

use crate::error::{ErrorBuf, Result};
use dlbridge_sys as ffi;
use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::c_char;

/// DLPack data type codes (`DLDataType::code`), as `u8` constants.
pub mod dtype_code {
    use dlbridge_sys as ffi;
    /// Signed integer.
    pub const INT: u8 = ffi::kDLInt as u8;
    /// Unsigned integer.
    pub const UINT: u8 = ffi::kDLUInt as u8;
    /// IEEE 754 binary float.
    pub const FLOAT: u8 = ffi::kDLFloat as u8;
    /// Opaque handle.
    pub const OPAQUE_HANDLE: u8 = ffi::kDLOpaqueHandle as u8;
    /// bfloat16.
    pub const BFLOAT: u8 = ffi::kDLBfloat as u8;
    /// Complex (real part first; `bits` counts both parts).
    pub const COMPLEX: u8 = ffi::kDLComplex as u8;
    /// Boolean, one byte per element.
    pub const BOOL: u8 = ffi::kDLBool as u8;
    /// float8 e3m4.
    pub const FLOAT8_E3M4: u8 = ffi::kDLFloat8_e3m4 as u8;
    /// float8 e4m3.
    pub const FLOAT8_E4M3: u8 = ffi::kDLFloat8_e4m3 as u8;
    /// float8 e4m3b11fnuz.
    pub const FLOAT8_E4M3B11FNUZ: u8 = ffi::kDLFloat8_e4m3b11fnuz as u8;
    /// float8 e4m3fn.
    pub const FLOAT8_E4M3FN: u8 = ffi::kDLFloat8_e4m3fn as u8;
    /// float8 e4m3fnuz.
    pub const FLOAT8_E4M3FNUZ: u8 = ffi::kDLFloat8_e4m3fnuz as u8;
    /// float8 e5m2.
    pub const FLOAT8_E5M2: u8 = ffi::kDLFloat8_e5m2 as u8;
    /// float8 e5m2fnuz.
    pub const FLOAT8_E5M2FNUZ: u8 = ffi::kDLFloat8_e5m2fnuz as u8;
    /// float8 e8m0fnu.
    pub const FLOAT8_E8M0FNU: u8 = ffi::kDLFloat8_e8m0fnu as u8;
    /// float6 e2m3fn.
    pub const FLOAT6_E2M3FN: u8 = ffi::kDLFloat6_e2m3fn as u8;
    /// float6 e3m2fn.
    pub const FLOAT6_E3M2FN: u8 = ffi::kDLFloat6_e3m2fn as u8;
    /// float4 e2m1fn.
    pub const FLOAT4_E2M1FN: u8 = ffi::kDLFloat4_e2m1fn as u8;
    /// Complex of two bfloat16 parts (after DLPack 1.3).
    pub const BCOMPLEX: u8 = ffi::kDLBcomplex as u8;
}

/// An element type: `lanes` values of `bits` bits each, of kind `code` (see [`dtype_code`]).
///
/// ```
/// use dlbridge::DType;
/// assert_eq!(DType::parse("float32x4")?, DType::new(dlbridge::dtype_code::FLOAT, 32, 4));
/// assert_eq!(DType::BFLOAT16.to_string(), "bfloat16");
/// # Ok::<(), dlbridge::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DType {
    /// The kind of number ([`dtype_code`]).
    pub code: u8,
    /// Bits of one lane.
    pub bits: u8,
    /// Lanes per element (1 for scalars).
    pub lanes: u16,
}

impl DType {
    /// A dtype from its three fields (not validated).
    pub const fn new(code: u8, bits: u8, lanes: u16) -> DType {
        DType { code, bits, lanes }
    }
    /// int8.
    pub const INT8: DType = DType::new(dtype_code::INT, 8, 1);
    /// int16.
    pub const INT16: DType = DType::new(dtype_code::INT, 16, 1);
    /// int32.
    pub const INT32: DType = DType::new(dtype_code::INT, 32, 1);
    /// int64.
    pub const INT64: DType = DType::new(dtype_code::INT, 64, 1);
    /// uint8.
    pub const UINT8: DType = DType::new(dtype_code::UINT, 8, 1);
    /// uint16.
    pub const UINT16: DType = DType::new(dtype_code::UINT, 16, 1);
    /// uint32.
    pub const UINT32: DType = DType::new(dtype_code::UINT, 32, 1);
    /// uint64.
    pub const UINT64: DType = DType::new(dtype_code::UINT, 64, 1);
    /// float16.
    pub const FLOAT16: DType = DType::new(dtype_code::FLOAT, 16, 1);
    /// float32.
    pub const FLOAT32: DType = DType::new(dtype_code::FLOAT, 32, 1);
    /// float64.
    pub const FLOAT64: DType = DType::new(dtype_code::FLOAT, 64, 1);
    /// bfloat16.
    pub const BFLOAT16: DType = DType::new(dtype_code::BFLOAT, 16, 1);
    /// bool (one byte per element).
    pub const BOOL: DType = DType::new(dtype_code::BOOL, 8, 1);
    /// complex64 (two float32).
    pub const COMPLEX64: DType = DType::new(dtype_code::COMPLEX, 64, 1);
    /// complex128 (two float64).
    pub const COMPLEX128: DType = DType::new(dtype_code::COMPLEX, 128, 1);

    /// Parses a name such as `float32`, `bfloat16`, `float8_e4m3fn`, `int4` or `float32x4`
    /// (`dlb_dtype_parse`).
    pub fn parse(name: &str) -> Result<DType> {
        let c = CString::new(name).map_err(|_| {
            crate::Error::new(
                crate::status::INVALID_ARGUMENT,
                "dtype name contains a NUL byte",
            )
        })?;
        let mut out = ffi::DLDataType {
            code: 0,
            bits: 0,
            lanes: 0,
        };
        let err = ErrorBuf::new();
        // SAFETY: `c` is NUL-terminated and outlives the call; `out`/`err` are valid for writes.
        err.check(unsafe { ffi::dlb_dtype_parse(c.as_ptr(), &mut out, err.as_mut_ptr()) })?;
        Ok(out.into())
    }

    /// Checks the dtype: known code, legal bits for it, lanes >= 1 (`dlb_dtype_validate`).
    pub fn validate(self) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: plain value in, error buffer valid for writes.
        err.check(unsafe { ffi::dlb_dtype_validate(self.into(), err.as_mut_ptr()) })
    }

    /// Bits of one element (`bits * lanes`; `dlb_dtype_element_bits`).
    pub fn element_bits(self) -> u32 {
        // SAFETY: plain value in.
        unsafe { ffi::dlb_dtype_element_bits(self.into()) }
    }

    /// Bytes one element occupies on its own: `ceil(bits * lanes / 8)` (`dlb_dtype_element_size`).
    pub fn element_size(self) -> u64 {
        // SAFETY: plain value in.
        unsafe { ffi::dlb_dtype_element_size(self.into()) }
    }

    /// The base name of the code ("float", "float8_e4m3fn"), or `None` for an unknown code.
    pub fn code_name(self) -> Option<&'static str> {
        // SAFETY: returns NULL or a static NUL-terminated string.
        let p = unsafe { ffi::dlb_dtype_code_name(i32::from(self.code)) };
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("?"))
    }
}

impl From<ffi::DLDataType> for DType {
    fn from(d: ffi::DLDataType) -> DType {
        DType {
            code: d.code,
            bits: d.bits,
            lanes: d.lanes,
        }
    }
}

impl From<DType> for ffi::DLDataType {
    fn from(d: DType) -> ffi::DLDataType {
        ffi::DLDataType {
            code: d.code,
            bits: d.bits,
            lanes: d.lanes,
        }
    }
}

/// Runs one of the C `dlb_*_format` functions into a stack buffer large enough for any name
/// they write (DLB_DTYPE_NAME_SIZE and DLB_DEVICE_NAME_SIZE are both below 64); `None` when the
/// C call refuses the value.
pub(crate) fn format_with(
    call: impl FnOnce(*mut c_char, u64, *mut ffi::dlb_error) -> ffi::dlb_status,
) -> Option<String> {
    const _: () = assert!(ffi::DLB_DTYPE_NAME_SIZE <= 64 && ffi::DLB_DEVICE_NAME_SIZE <= 64);
    let mut buf = [0 as c_char; 64];
    let err = ErrorBuf::new();
    if call(buf.as_mut_ptr(), buf.len() as u64, err.as_mut_ptr()) != ffi::DLB_OK {
        return None;
    }
    // SAFETY: on success the buffer holds a NUL-terminated string.
    Some(
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// The dtype's name as `dlb_dtype_format` writes it ("float32", "int4", "float32x4"); a dtype
/// that is not valid DLPack prints as `dtype(code=C, bits=B, lanes=L)`.
impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: the closure passes the buffer and its length straight to the C formatter.
        if let Some(name) = format_with(|buf, len, err| unsafe {
            ffi::dlb_dtype_format((*self).into(), buf, len, err)
        }) {
            f.write_str(&name)
        } else {
            write!(
                f,
                "dtype(code={}, bits={}, lanes={})",
                self.code, self.bits, self.lanes
            )
        }
    }
}

impl fmt::Debug for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DType({self})")
    }
}
