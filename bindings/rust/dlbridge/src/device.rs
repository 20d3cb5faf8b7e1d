//! Devices, streams and the CUDA and OpenCL runtimes.
//!
//! Streams are the device runtime's own queue handles (a `cudaStream_t`, a `cl_command_queue`,
//! whatever a plug-in backend defines), carried as an opaque [`Stream`]. The library cannot
//! check a handle, nor know when the work queued on it has finished, so every function that
//! passes a stream to a runtime is `unsafe` and says what the caller keeps valid. A guard that
//! synchronised on drop would not make them safe: `std::mem::forget` skips drops, and callers
//! often synchronise by other means (an event, the consumer's stream, the DLPack handshake).

use crate::error::{ErrorBuf, Result};
use crate::Device;
use dlbridge_sys as ffi;
use std::ffi::{c_void, CStr};
use std::os::raw::c_char;
use std::ptr;

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
