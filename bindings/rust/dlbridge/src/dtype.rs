//! Element types (`DLDataType`) and devices (`DLDevice`) as small `Copy` structs over the integer
//! codes. Never enums: a newer producer may send a code this crate has not heard of.

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

/// DLPack device types (`DLDevice::device_type`), as `i32` constants.
pub mod device_type {
    use dlbridge_sys as ffi;
    /// Host memory.
    pub const CPU: i32 = ffi::kDLCPU as i32;
    /// CUDA device memory.
    pub const CUDA: i32 = ffi::kDLCUDA as i32;
    /// CUDA pinned host memory.
    pub const CUDA_HOST: i32 = ffi::kDLCUDAHost as i32;
    /// OpenCL buffer (`data` is a `cl_mem`).
    pub const OPENCL: i32 = ffi::kDLOpenCL as i32;
    /// Vulkan buffer.
    pub const VULKAN: i32 = ffi::kDLVulkan as i32;
    /// Metal buffer.
    pub const METAL: i32 = ffi::kDLMetal as i32;
    /// Verilog simulator buffer.
    pub const VPI: i32 = ffi::kDLVPI as i32;
    /// ROCm device memory.
    pub const ROCM: i32 = ffi::kDLROCM as i32;
    /// ROCm pinned host memory.
    pub const ROCM_HOST: i32 = ffi::kDLROCMHost as i32;
    /// Implementation-defined device.
    pub const EXT_DEV: i32 = ffi::kDLExtDev as i32;
    /// CUDA managed memory.
    pub const CUDA_MANAGED: i32 = ffi::kDLCUDAManaged as i32;
    /// oneAPI unified shared memory.
    pub const ONE_API: i32 = ffi::kDLOneAPI as i32;
    /// WebGPU buffer.
    pub const WEBGPU: i32 = ffi::kDLWebGPU as i32;
    /// Hexagon DSP.
    pub const HEXAGON: i32 = ffi::kDLHexagon as i32;
    /// Microsoft MAIA.
    pub const MAIA: i32 = ffi::kDLMAIA as i32;
    /// AWS Trainium.
    pub const TRN: i32 = ffi::kDLTrn as i32;
    /// Google TPU (after DLPack 1.3).
    pub const TPU: i32 = ffi::kDLTPU as i32;
    /// TPU host memory (after DLPack 1.3).
    pub const TPU_HOST: i32 = ffi::kDLTPUHost as i32;
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
fn format_with(
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

/// A device: its type ([`device_type`]) and the ordinal of the device of that type.
///
/// ```
/// use dlbridge::Device;
/// assert_eq!(Device::parse("cuda:1")?, Device::cuda(1));
/// assert_eq!(Device::CPU.to_string(), "cpu");
/// assert!(Device::CPU.is_host_readable());
/// # Ok::<(), dlbridge::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    /// The device type ([`device_type`]); any `i32`, including values newer than this crate.
    pub device_type: i32,
    /// The ordinal of the device (0 for the CPU, pinned and managed memory).
    pub device_id: i32,
}

impl Device {
    /// The host CPU.
    pub const CPU: Device = Device::new(device_type::CPU, 0);

    /// A device from its type and ordinal.
    pub const fn new(device_type: i32, device_id: i32) -> Device {
        Device {
            device_type,
            device_id,
        }
    }

    /// CUDA device `id`.
    pub const fn cuda(id: i32) -> Device {
        Device::new(device_type::CUDA, id)
    }

    /// OpenCL device `id`.
    pub const fn opencl(id: i32) -> Device {
        Device::new(device_type::OPENCL, id)
    }

    /// Parses "cpu", "cuda:1", "opencl" (id 0) or "device_type_N:ID" (`dlb_device_parse`).
    pub fn parse(text: &str) -> Result<Device> {
        let c = CString::new(text).map_err(|_| {
            crate::Error::new(
                crate::status::INVALID_ARGUMENT,
                "device text contains a NUL byte",
            )
        })?;
        let mut out = ffi::DLDevice {
            device_type: 0,
            device_id: 0,
        };
        let err = ErrorBuf::new();
        // SAFETY: `c` is NUL-terminated; `out`/`err` valid for writes.
        err.check(unsafe { ffi::dlb_device_parse(c.as_ptr(), &mut out, err.as_mut_ptr()) })?;
        Ok(out.into())
    }

    /// True if the host CPU can read this device's memory (CPU, CUDA pinned/managed, ROCm pinned).
    pub fn is_host_readable(self) -> bool {
        // SAFETY: plain value in.
        unsafe { ffi::dlb_device_is_host_readable(self.into()) != 0 }
    }

    /// The device type's name ("cuda_host"), or `None` for a type DLPack does not define.
    pub fn type_name(self) -> Option<&'static str> {
        // SAFETY: returns NULL or a static NUL-terminated string.
        let p = unsafe { ffi::dlb_device_type_name(self.device_type) };
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("?"))
    }
}

impl From<ffi::DLDevice> for Device {
    fn from(d: ffi::DLDevice) -> Device {
        Device {
            device_type: d.device_type as i32,
            device_id: d.device_id,
        }
    }
}

impl From<Device> for ffi::DLDevice {
    fn from(d: Device) -> ffi::DLDevice {
        ffi::DLDevice {
            device_type: d.device_type as ffi::DLDeviceType,
            device_id: d.device_id,
        }
    }
}

/// "cpu", "cuda:1", or "device_type_25:0" for a type without a name (`dlb_device_format`).
impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: the closure passes the buffer and its length straight to the C formatter.
        if let Some(name) = format_with(|buf, len, err| unsafe {
            ffi::dlb_device_format((*self).into(), buf, len, err)
        }) {
            f.write_str(&name)
        } else {
            write!(f, "device_type_{}:{}", self.device_type, self.device_id)
        }
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({self})")
    }
}
