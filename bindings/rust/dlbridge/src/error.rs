//! Errors: the C library's status code plus its message.

use dlbridge_sys as ffi;
use std::cell::UnsafeCell;
use std::ffi::CStr;
use std::fmt;
use std::mem::MaybeUninit;

/// The status codes of the C library (`DLB_OK`, `DLB_ERR_*`), as plain integers.
///
/// They are constants, not an enum, so a status added by a newer library is still representable.
pub mod status {
    use dlbridge_sys as ffi;
    /// Success.
    pub const OK: i32 = ffi::DLB_OK;
    /// A parameter or a tensor field is malformed.
    pub const INVALID_ARGUMENT: i32 = ffi::DLB_ERR_INVALID_ARGUMENT;
    /// A host or device allocation failed.
    pub const OUT_OF_MEMORY: i32 = ffi::DLB_ERR_OUT_OF_MEMORY;
    /// A versioned tensor's DLPack major version is not 1.
    pub const UNSUPPORTED_VERSION: i32 = ffi::DLB_ERR_UNSUPPORTED_VERSION;
    /// Well-formed but not handled: an unknown code or flag, a device without a backend, ...
    pub const UNSUPPORTED: i32 = ffi::DLB_ERR_UNSUPPORTED;
    /// A write into a READ_ONLY tensor, or an export that would drop that flag.
    pub const READ_ONLY: i32 = ffi::DLB_ERR_READ_ONLY;
    /// The memory layout does not allow the operation without a copy.
    pub const LAYOUT: i32 = ffi::DLB_ERR_LAYOUT;
    /// An element count or byte size does not fit in 64 bits.
    pub const OVERFLOW: i32 = ffi::DLB_ERR_OVERFLOW;
    /// A device runtime or a backend reported a failure.
    pub const DEVICE: i32 = ffi::DLB_ERR_DEVICE;
    /// The device's runtime or hardware is not available in this process.
    pub const DEVICE_UNAVAILABLE: i32 = ffi::DLB_ERR_DEVICE_UNAVAILABLE;
    /// An object was used after it was closed. Rust's ownership rules this out at compile
    /// time for [`Tensor`](crate::Tensor); other bindings report it with this status.
    pub const CLOSED: i32 = ffi::DLB_ERR_CLOSED;
    /// A channel's connect found nothing listening at the address (no socket file, or one
    /// that nobody accepts on).
    pub const NO_LISTENER: i32 = ffi::DLB_ERR_NO_LISTENER;
    /// Not permitted: the modes of a channel's folder or socket, another user's folder, or a
    /// peer (at accept) or listener (at connect) running as a user this channel does not accept.
    pub const PERMISSION: i32 = ffi::DLB_ERR_PERMISSION;
    /// The peer closed its end of the channel or went away, also in the middle of a tensor.
    pub const PEER_CLOSED: i32 = ffi::DLB_ERR_PEER_CLOSED;
    /// What the peer sent is not a valid tensor (a malformed, forged or truncated descriptor),
    /// or the channel lost its place in the stream when a time limit ran out mid-tensor.
    pub const PROTOCOL: i32 = ffi::DLB_ERR_PROTOCOL;
    /// A channel's time limit ([`Channel::set_timeout`](crate::ipc::Channel::set_timeout))
    /// ran out.
    pub const TIMEOUT: i32 = ffi::DLB_ERR_TIMEOUT;
    /// A limit of the process or the system: open file descriptors, mappings, descriptors in
    /// flight.
    pub const LIMIT: i32 = ffi::DLB_ERR_LIMIT;
}

/// An error reported by dlbridge (or by this binding's own checks): a status code from
/// [`status`] and a message that names the offending value.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    status: i32,
    message: String,
}

/// `std::result::Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error with the given status and message.
    pub fn new(status: i32, message: impl Into<String>) -> Error {
        Error {
            status,
            message: message.into(),
        }
    }

    /// The status code (one of [`status`]).
    pub fn status(&self) -> i32 {
        self.status
    }

    /// The status code's name, such as `"DLB_ERR_READ_ONLY"` (`"DLB_ERR_UNKNOWN"` if unknown).
    pub fn status_name(&self) -> &'static str {
        status_name(self.status)
    }

    /// The message, exactly as the C library wrote it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// The name of a status code (`dlb_status_name`).
pub fn status_name(status: i32) -> &'static str {
    // SAFETY: dlb_status_name returns a static NUL-terminated ASCII string for every input.
    unsafe { CStr::from_ptr(ffi::dlb_status_name(status)) }
        .to_str()
        .unwrap_or("DLB_ERR_UNKNOWN")
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status_name(), self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("status", &self.status_name())
            .field("message", &self.message)
            .finish()
    }
}

impl std::error::Error for Error {}

/// A C error buffer that is only read when a call failed. It is left uninitialised: zeroing
/// 512 bytes on every call would cost more than many of the calls themselves.
pub(crate) struct ErrorBuf(UnsafeCell<MaybeUninit<ffi::dlb_error>>);

impl ErrorBuf {
    #[inline(always)]
    pub(crate) fn new() -> ErrorBuf {
        let mut buf = MaybeUninit::<ffi::dlb_error>::uninit();
        // An empty message, so that reading it is defined even if a failing call wrote none.
        // SAFETY: writes the first byte of the message array inside the buffer.
        unsafe {
            std::ptr::addr_of_mut!((*buf.as_mut_ptr()).message)
                .cast::<std::os::raw::c_char>()
                .write(0)
        };
        ErrorBuf(UnsafeCell::new(buf))
    }

    #[inline(always)]
    pub(crate) fn as_mut_ptr(&self) -> *mut ffi::dlb_error {
        self.0.get().cast()
    }

    /// Ok for DLB_OK, otherwise the error with the message the C call wrote.
    #[inline(always)]
    pub(crate) fn check(&self, status: ffi::dlb_status) -> Result<()> {
        if status == ffi::DLB_OK {
            Ok(())
        } else {
            Err(self.error(status))
        }
    }

    #[cold]
    fn error(&self, status: ffi::dlb_status) -> Error {
        // SAFETY: the message starts NUL-terminated (new) and the C library only ever writes a
        // NUL-terminated message into it (dlbridge.h: "The message is always NUL-terminated").
        let message = unsafe {
            let buf = &*self.as_mut_ptr();
            CStr::from_ptr(buf.message.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        Error { status, message }
    }
}
