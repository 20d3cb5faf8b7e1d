//! Channels across machines (`docs/remote.md`): the same [`Listener`] and [`Channel`], made at a
//! `tcp://HOST:PORT` or `ucx://HOST:PORT` address with [`ChannelOptions`] that hold the key the
//! peers share. The bytes travel: a received tensor is a new tensor of this process
//! ([`Tensor::is_copied`](crate::Tensor::is_copied)), and any tensor may be sent.

use super::{c_path, timeout_ns, Channel, Listener, Owner};
use crate::error::{ErrorBuf, Result};
use crate::Device;
use dlbridge_sys as ffi;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::time::Duration;

/// The most bytes one received tensor may have unless [`ChannelOptions::max_tensor_bytes`] says
/// otherwise (1 GiB).
pub const DEFAULT_MAX_TENSOR_BYTES: u64 = ffi::DLB_REMOTE_DEFAULT_MAX_TENSOR_BYTES as u64;
/// The most tensors a receiver holds received and not yet taken, unless
/// [`ChannelOptions::max_in_flight`] says otherwise.
pub const DEFAULT_MAX_IN_FLIGHT: u32 = ffi::DLB_REMOTE_DEFAULT_MAX_IN_FLIGHT as u32;
/// The shortest key, in bytes.
pub const MIN_KEY_BYTES: usize = ffi::DLB_REMOTE_MIN_KEY_BYTES as usize;
/// The longest key, in bytes.
pub const MAX_KEY_BYTES: usize = ffi::DLB_REMOTE_MAX_KEY_BYTES as usize;

/// `Ok(())` when this process can make remote channels: UCX (`libucp.so.0`) and libcrypto load
/// (`dlb_remote_available`). Otherwise [`UNSUPPORTED`](crate::status::UNSUPPORTED) with the
/// core's message, which names what is missing and the Debian packages that bring it. The first
/// call loads them; later calls are cheap.
pub fn remote_available() -> Result<()> {
    let err = ErrorBuf::new();
    // SAFETY: err is valid for writes.
    err.check(unsafe { ffi::dlb_remote_available(err.as_mut_ptr()) })
}

/// What a channel is made with (`dlb_channel_options`), built by chaining its setters: for a
/// remote channel the key its peers share (required), the device received tensors go to, the
/// receive limits and a time limit; for a local one the time limit and the listener's user.
/// Each setter is checked by the core and fails with its status and message.
///
/// ```
/// use dlbridge::ipc::ChannelOptions;
/// use std::time::Duration;
/// let options = ChannelOptions::new()?
///     .key(b"thirty-two bytes of shared secret")?
///     .max_tensor_bytes(64 << 20)?
///     .timeout(Some(Duration::from_secs(30)))?;
/// # drop(options);
/// # Ok::<(), dlbridge::Error>(())
/// ```
///
/// Dropping the options frees them; the core wipes its copy of the key first. Channels copy
/// what they need, so the options may be dropped once the channel is made.
pub struct ChannelOptions {
    raw: NonNull<ffi::dlb_channel_options>,
}

// SAFETY: the options are a plain record the C library allocated, with no tie to a thread. The
// setters take `self` by value (one owner writes); listen and connect only read it.
unsafe impl Send for ChannelOptions {}
// SAFETY: through `&ChannelOptions` the record is only read (listen and connect copy it).
unsafe impl Sync for ChannelOptions {}

impl ChannelOptions {
    /// The defaults (`dlb_channel_options_create`): no key, [`Device::CPU`] as the receive
    /// device, [`DEFAULT_MAX_TENSOR_BYTES`], [`DEFAULT_MAX_IN_FLIGHT`], no time limit, the
    /// listener's user this process's own.
    pub fn new() -> Result<ChannelOptions> {
        let mut out = ptr::null_mut();
        let err = ErrorBuf::new();
        // SAFETY: out and err are valid for writes.
        err.check(unsafe { ffi::dlb_channel_options_create(&mut out, err.as_mut_ptr()) })?;
        let raw = NonNull::new(out).ok_or_else(|| {
            crate::Error::new(crate::status::OUT_OF_MEMORY, "no options were made")
        })?;
        Ok(ChannelOptions { raw })
    }

    /// Runs one setter, which the core checks.
    fn set(
        self,
        call: impl FnOnce(*mut ffi::dlb_channel_options, *mut ffi::dlb_error) -> ffi::dlb_status,
    ) -> Result<ChannelOptions> {
        let err = ErrorBuf::new();
        err.check(call(self.raw.as_ptr(), err.as_mut_ptr()))?;
        Ok(self)
    }

    /// The shared secret that remote peers prove they hold (`dlb_channel_options_set_key`):
    /// [`MIN_KEY_BYTES`] to [`MAX_KEY_BYTES`] bytes (else
    /// [`INVALID_ARGUMENT`](crate::status::INVALID_ARGUMENT)), copied. Local channels ignore it.
    pub fn key(self, key: &[u8]) -> Result<ChannelOptions> {
        // SAFETY: valid options; `key` holds its length of bytes for the call (the core copies
        // them).
        self.set(|options, err| unsafe {
            ffi::dlb_channel_options_set_key(options, key.as_ptr().cast(), key.len(), err)
        })
    }

    /// Where a remote channel puts the tensors it receives
    /// (`dlb_channel_options_set_receive_device`): [`Device::CPU`] (the default), pinned host
    /// memory ([`device_type::CUDA_HOST`](crate::device_type::CUDA_HOST)), a CUDA device or
    /// CUDA managed memory; other devices fail with
    /// [`UNSUPPORTED`](crate::status::UNSUPPORTED). Whether this process reaches that memory is
    /// checked when the channel is made. Local channels ignore it.
    pub fn receive_device(self, device: Device) -> Result<ChannelOptions> {
        // SAFETY: valid options.
        self.set(|options, err| unsafe {
            ffi::dlb_channel_options_set_receive_device(options, device.into(), err)
        })
    }

    /// The most bytes one tensor received on a remote channel may have (at least 1): a larger
    /// one is refused with [`LIMIT`](crate::status::LIMIT) before anything is allocated.
    pub fn max_tensor_bytes(self, bytes: u64) -> Result<ChannelOptions> {
        // SAFETY: valid options.
        self.set(|options, err| unsafe {
            ffi::dlb_channel_options_set_max_tensor_bytes(options, bytes, err)
        })
    }

    /// The most tensors a remote channel holds received and not yet taken by
    /// [`receive`](Channel::receive) (1 to 65536): the sender waits, within its time limit, for
    /// the receiver to take one.
    pub fn max_in_flight(self, tensors: u32) -> Result<ChannelOptions> {
        // SAFETY: valid options.
        self.set(|options, err| unsafe {
            ffi::dlb_channel_options_set_max_in_flight(options, tensors, err)
        })
    }

    /// The channel's time limit, for connecting and for every later call (as
    /// [`Channel::set_timeout`]): `None` for none, `Some(Duration::ZERO)` for "do not wait".
    pub fn timeout(self, timeout: Option<Duration>) -> Result<ChannelOptions> {
        let timeout = timeout_ns(timeout);
        // SAFETY: valid options.
        self.set(|options, err| unsafe {
            ffi::dlb_channel_options_set_timeout(options, timeout, err)
        })
    }

    /// The user a local listener may run as (as [`Channel::connect_with`]'s `listener_uid`;
    /// `None`: this user only). Remote channels ignore it.
    pub fn listener_uid(self, uid: Option<u32>) -> Result<ChannelOptions> {
        let uid = uid.unwrap_or(ffi::DLB_UID_SELF as u32);
        // SAFETY: valid options.
        self.set(|options, err| unsafe {
            ffi::dlb_channel_options_set_listener_uid(options, uid, err)
        })
    }

    fn ptr(&self) -> *const ffi::dlb_channel_options {
        self.raw.as_ptr()
    }
}

impl Drop for ChannelOptions {
    fn drop(&mut self) {
        // SAFETY: the options' one free; the core wipes the key first.
        unsafe { ffi::dlb_channel_options_free(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for ChannelOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("ChannelOptions").finish_non_exhaustive()
    }
}

impl Owner {
    fn is_remote(&self) -> bool {
        // SAFETY: a valid channel.
        unsafe { ffi::dlb_channel_is_remote(self.ptr()) != 0 }
    }

    fn port(&self) -> Option<u16> {
        // SAFETY: a valid channel.
        u16::try_from(unsafe { ffi::dlb_channel_port(self.ptr()) }).ok()
    }
}

impl Listener {
    /// Listens at `address` with `options` (`dlb_channel_listen_with_options`): a Unix socket
    /// path (as [`bind`](Listener::bind)), or `tcp://HOST:PORT` (UCX over TCP) or
    /// `ucx://HOST:PORT` (the transports UCX picks), which binds exactly that host (port 0: one
    /// the system picks, which [`port`](Listener::port) says) and needs a key in `options`
    /// ([`INVALID_ARGUMENT`](crate::status::INVALID_ARGUMENT) without one, or when the address
    /// is in use). Every channel it accepts takes its options.
    /// [`UNSUPPORTED`](crate::status::UNSUPPORTED) when [`remote_available`] is not `Ok`.
    pub fn bind_with_options(
        address: impl AsRef<Path>,
        options: &ChannelOptions,
    ) -> Result<Listener> {
        let address = c_path(address.as_ref())?;
        // SAFETY: a NUL-terminated address and valid options for the call; out/err valid.
        Ok(Listener {
            owner: Owner::made_by(|out, err| unsafe {
                ffi::dlb_channel_listen_with_options(address.as_ptr(), options.ptr(), out, err)
            })?,
        })
    }

    /// True for a listener at a `tcp://` or `ucx://` address (`dlb_channel_is_remote`).
    pub fn is_remote(&self) -> bool {
        self.owner.is_remote()
    }

    /// The port a remote listener listens at (`dlb_channel_port`): the one the system picked
    /// when its address said port 0. `None` for a local listener.
    pub fn port(&self) -> Option<u16> {
        self.owner.port()
    }
}

impl Channel {
    /// Connects to the listener at `address` with `options`
    /// (`dlb_channel_connect_with_options`): a Unix socket path (the options' listener uid and
    /// time limit apply), or a `tcp://HOST:PORT` / `ucx://HOST:PORT` address, where `options`
    /// must hold the listener's key: the key handshake runs before this returns. Errors for a
    /// remote address: [`INVALID_ARGUMENT`](crate::status::INVALID_ARGUMENT) (no key),
    /// [`NO_LISTENER`](crate::status::NO_LISTENER), [`PERMISSION`](crate::status::PERMISSION)
    /// (the listener refused this key, or did not prove it holds it),
    /// [`TIMEOUT`](crate::status::TIMEOUT), [`UNSUPPORTED`](crate::status::UNSUPPORTED) when
    /// [`remote_available`] is not `Ok`.
    pub fn connect_with_options(
        address: impl AsRef<Path>,
        options: &ChannelOptions,
    ) -> Result<Channel> {
        let address = c_path(address.as_ref())?;
        // SAFETY: a NUL-terminated address and valid options for the call; out/err valid.
        Ok(Channel {
            owner: Owner::made_by(|out, err| unsafe {
                ffi::dlb_channel_connect_with_options(address.as_ptr(), options.ptr(), out, err)
            })?,
        })
    }

    /// True for a channel across machines (`dlb_channel_is_remote`): made at a `tcp://` or
    /// `ucx://` address, or accepted by a listener there. Its received tensors are new tensors
    /// of this process (IS_COPIED, exclusive), on the options' receive device.
    pub fn is_remote(&self) -> bool {
        self.owner.is_remote()
    }

    /// The port this end of a remote channel uses on this machine (`dlb_channel_port`);
    /// `None` for a local channel.
    pub fn port(&self) -> Option<u16> {
        self.owner.port()
    }
}
