//! Devices, streams and the CUDA and OpenCL runtimes.
//!
//! Streams are the device runtime's own queue handles (a `cudaStream_t`, a `cl_command_queue`,
//! whatever a plug-in backend defines), carried as an opaque [`Stream`]. The library cannot
//! check a handle, nor know when the work queued on it has finished, so every function that
//! passes a stream to a runtime is `unsafe` and says what the caller keeps valid. A guard that
//! synchronised on drop would not make them safe: `std::mem::forget` skips drops, and callers
//! often synchronise by other means (an event, the consumer's stream, the DLPack handshake).

use crate::dtype::format_with;
use crate::error::{ErrorBuf, Result};
use dlbridge_sys as ffi;
use std::ffi::{c_void, CStr, CString};
use std::fmt;
use std::os::raw::c_char;
use std::ptr;

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

/// A device runtime's stream or queue handle, opaque to this crate: a `cudaStream_t` for CUDA
/// (the legacy and per-thread default streams included), a `cl_command_queue` for OpenCL.
/// [`Stream::NULL`] means "no stream": the operation completes before the call returns (the
/// legacy default stream for a CUDA handshake).
///
/// Making one is safe; the `unsafe` functions that take one state what it must be.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(transparent)]
pub struct Stream(*mut c_void);

// SAFETY: a Stream is a handle value that this crate never dereferences; CUDA streams and
// OpenCL command queues may be used from any thread (both runtimes are thread-safe), and the
// functions that hand it to a runtime are unsafe with the caller vouching for its validity.
unsafe impl Send for Stream {}
// SAFETY: as Send: no state is reachable through `&Stream` but the handle value.
unsafe impl Sync for Stream {}

impl Stream {
    /// No stream: synchronous operations.
    pub const NULL: Stream = Stream(ptr::null_mut());

    /// A stream from the runtime's handle (`cudaStream_t`, `cl_command_queue`).
    pub const fn from_raw(handle: *mut c_void) -> Stream {
        Stream(handle)
    }

    /// The runtime's handle.
    pub const fn as_raw(self) -> *mut c_void {
        self.0
    }

    /// True for [`Stream::NULL`].
    pub fn is_null(self) -> bool {
        self.0.is_null()
    }
}

impl Default for Stream {
    fn default() -> Stream {
        Stream::NULL
    }
}

impl Device {
    /// Waits on the host until all work queued on this device is done
    /// (`dlb_device_synchronize` with no stream). A no-op for the CPU. Errors: no backend for
    /// the device type (`DLB_ERR_UNSUPPORTED`), the runtime's failure (`DLB_ERR_DEVICE`).
    pub fn synchronize(self) -> Result<()> {
        // SAFETY: a NULL stream is always valid.
        unsafe { self.synchronize_stream(Stream::NULL) }
    }

    /// Waits on the host until the work queued on `stream` is done (`dlb_device_synchronize`).
    ///
    /// # Safety
    /// `stream` is [`Stream::NULL`] or a live stream / command queue of this device's runtime.
    pub unsafe fn synchronize_stream(self, stream: Stream) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: the stream is the caller's promise; err is valid for writes.
        err.check(unsafe {
            ffi::dlb_device_synchronize(self.into(), stream.as_raw(), err.as_mut_ptr())
        })
    }
}

/// Runs a `dlb_*_count` function.
fn count_with(
    call: unsafe extern "C" fn(*mut i32, *mut ffi::dlb_error) -> ffi::dlb_status,
) -> Result<i32> {
    let mut count = 0;
    let err = ErrorBuf::new();
    // SAFETY: out pointer and error buffer valid for writes.
    err.check(unsafe { call(&mut count, err.as_mut_ptr()) })?;
    Ok(count)
}

/// CUDA: availability, devices, pointers and the DLPack stream handshake.
///
/// A library built with CUDA finds the driver at first use: without one these functions fail
/// with `DLB_ERR_DEVICE_UNAVAILABLE` ("no CUDA driver found", "no CUDA device"); a library
/// built without CUDA fails them with `DLB_ERR_UNSUPPORTED`. CUDA tensors are made with
/// [`Tensor::allocate`](crate::Tensor::allocate) on [`Device::cuda`] and copied with
/// [`Tensor::copy_to`](crate::Tensor::copy_to) and its relatives.
pub mod cuda {
    use super::*;

    /// `consumer_stream` "not given" (Python's `None`): the legacy default stream.
    pub const STREAM_NONE: i64 = ffi::DLB_CUDA_STREAM_NONE;
    /// `consumer_stream` 1: the legacy default stream.
    pub const STREAM_LEGACY: i64 = 1;
    /// `consumer_stream` 2: the per-thread default stream.
    pub const STREAM_PER_THREAD: i64 = 2;
    /// `consumer_stream` -1: the consumer asks for no synchronisation.
    pub const STREAM_NO_SYNC: i64 = -1;

    /// `Ok(())` when CUDA work can run here (built with CUDA, a driver, at least one device);
    /// otherwise the reason (`dlb_cuda_is_available`).
    pub fn is_available() -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: err is valid for writes.
        err.check(unsafe { ffi::dlb_cuda_is_available(err.as_mut_ptr()) })
    }

    /// The number of CUDA devices visible to this process (`dlb_cuda_device_count`).
    pub fn device_count() -> Result<i32> {
        count_with(ffi::dlb_cuda_device_count)
    }

    /// The device `pointer` lives on (`dlb_cuda_pointer_device`): [`Device::cuda`] for device
    /// memory, `cuda_host:0` for pinned memory, `cuda_managed:0` for managed memory and
    /// [`Device::CPU`] for memory CUDA does not know (NULL included). The pointer is only
    /// looked up, never read.
    // The pointer is an address to look up, never dereferenced (cudaPointerGetAttributes):
    // any value, dangling or NULL included, is safe to pass.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn pointer_device(pointer: *const c_void) -> Result<Device> {
        let mut out = ffi::DLDevice {
            device_type: 0,
            device_id: 0,
        };
        let err = ErrorBuf::new();
        // SAFETY: the runtime only looks the address up; out/err valid for writes.
        err.check(unsafe { ffi::dlb_cuda_pointer_device(pointer, &mut out, err.as_mut_ptr()) })?;
        Ok(out.into())
    }

    /// The DLPack stream handshake, done by a producer for a consumer
    /// (`dlb_cuda_stream_handshake`): makes the work queued so far on `producer` (a stream of
    /// device `device_id`; [`Stream::NULL`] is the legacy default stream) visible to work the
    /// consumer queues on `consumer_stream` afterwards, without blocking the host.
    /// `consumer_stream` follows DLPack: [`STREAM_NONE`] or [`STREAM_LEGACY`],
    /// [`STREAM_PER_THREAD`], [`STREAM_NO_SYNC`] (nothing is done), or a `cudaStream_t` as an
    /// integer; 0 and other negative values are refused (`DLB_ERR_INVALID_ARGUMENT`).
    ///
    /// # Safety
    /// `producer` is NULL or a live stream of device `device_id`, and a `consumer_stream` that
    /// is not one of the constants is a live `cudaStream_t` of the same device.
    pub unsafe fn stream_handshake(
        device_id: i32,
        producer: Stream,
        consumer_stream: i64,
    ) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: the streams are the caller's promise; err is valid for writes.
        err.check(unsafe {
            ffi::dlb_cuda_stream_handshake(
                device_id,
                producer.as_raw(),
                consumer_stream,
                err.as_mut_ptr(),
            )
        })
    }
}

/// OpenCL: availability, devices, the library's own objects and the queue handshake.
///
/// The library opens the OpenCL ICD loader at run time; without a loader or a platform these
/// functions fail with `DLB_ERR_DEVICE_UNAVAILABLE`, and with `DLB_ERR_UNSUPPORTED` in a library
/// built without OpenCL. Device ids number the devices of all platforms in order. An OpenCL
/// tensor's data is a `cl_mem`: copy it to the CPU ([`Tensor::copy_to`](crate::Tensor::copy_to))
/// to read it.
pub mod opencl {
    use super::*;

    /// The OpenCL objects behind one device, owned by the library and alive until the process
    /// ends (retain them with `clRetain*` to outlive a backend replacement).
    #[derive(Clone, Copy, Debug)]
    pub struct DeviceObjects {
        /// The `cl_platform_id`.
        pub platform: *mut c_void,
        /// The `cl_device_id`.
        pub device: *mut c_void,
        /// The `cl_context` the library allocates this device's tensors in.
        pub context: *mut c_void,
        /// The library's in-order `cl_command_queue` for the device, usable as the stream of
        /// the async copies.
        pub queue: Stream,
    }

    /// `Ok(())` when an OpenCL platform with at least one device was found; otherwise the reason
    /// (`dlb_opencl_is_available`).
    pub fn is_available() -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: err is valid for writes.
        err.check(unsafe { ffi::dlb_opencl_is_available(err.as_mut_ptr()) })
    }

    /// The number of OpenCL devices over all platforms (`dlb_opencl_device_count`).
    pub fn device_count() -> Result<i32> {
        count_with(ffi::dlb_opencl_device_count)
    }

    /// "platform name / device name" of device `id` (`dlb_opencl_device_name`).
    pub fn device_name(id: i32) -> Result<String> {
        // OpenCL names are short; 1 KiB leaves room for any platform and device name pair.
        let mut buf = vec![0 as c_char; 1024];
        let err = ErrorBuf::new();
        // SAFETY: the buffer has the length passed; err is valid for writes.
        err.check(unsafe {
            ffi::dlb_opencl_device_name(id, buf.as_mut_ptr(), buf.len() as u64, err.as_mut_ptr())
        })?;
        // SAFETY: on success the buffer holds a NUL-terminated string.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// The OpenCL objects behind device `id` (`dlb_opencl_device_objects`).
    pub fn device_objects(id: i32) -> Result<DeviceObjects> {
        let mut o = DeviceObjects {
            platform: ptr::null_mut(),
            device: ptr::null_mut(),
            context: ptr::null_mut(),
            queue: Stream::NULL,
        };
        let mut queue = ptr::null_mut();
        let err = ErrorBuf::new();
        // SAFETY: every out pointer and the error buffer are valid for writes.
        err.check(unsafe {
            ffi::dlb_opencl_device_objects(
                id,
                &mut o.platform,
                &mut o.device,
                &mut o.context,
                &mut queue,
                err.as_mut_ptr(),
            )
        })?;
        o.queue = Stream::from_raw(queue);
        Ok(o)
    }

    /// Makes the commands queued so far on `producer` complete before any command queued on
    /// `consumer` afterwards starts, without blocking the host (`dlb_opencl_queue_handshake`).
    /// Nothing is done when both are the same queue.
    ///
    /// # Safety
    /// Both are live `cl_command_queue`s of the same `cl_context`.
    pub unsafe fn queue_handshake(producer: Stream, consumer: Stream) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: the queues are the caller's promise; err is valid for writes.
        err.check(unsafe {
            ffi::dlb_opencl_queue_handshake(producer.as_raw(), consumer.as_raw(), err.as_mut_ptr())
        })
    }
}
