//! Tensors across processes without copying (see `docs/ipc.md`): shareable memory, and channels
//! over a Unix domain socket that pass it with its file descriptor. The same channels reach
//! other machines at a `tcp://` or `ucx://` address, made with [`ChannelOptions`] (see
//! [`Listener::bind_with_options`] and `docs/remote.md`).
//!
//! ```
//! use dlbridge::ipc::{Channel, Listener};
//! use dlbridge::{DType, Device, Tensor};
//!
//! let dir = std::env::temp_dir().join(format!("dlbridge-doc-{}", std::process::id()));
//! let path = dir.join("tensors.sock");
//! let listener = Listener::bind(&path)?;      // creates `dir` (mode 0700) and the socket (0600)
//! let to_peer = Channel::connect(&path)?;     // in the producer's process
//! let from_peer = listener.accept()?;         // in the consumer's process
//!
//! let mut t = Tensor::allocate_shareable(Device::CPU, DType::FLOAT32, &[2, 3])?;
//! t.copy_from_slice(&[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0])?;
//! to_peer.send(&t)?;
//! let got = from_peer.receive()?;             // the same memory, mapped again
//! assert_eq!(got.to_vec::<f32>()?, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
//! drop(listener);                              // removes the socket file
//! std::fs::remove_dir(&dir).ok();
//! # Ok::<(), dlbridge::Error>(())
//! ```

use crate::error::{ErrorBuf, Result};
use crate::tensor::{count_of, made_by};
use crate::{DType, Device, Error, Tensor};
use dlbridge_sys as ffi;
use std::cell::Cell;
use std::ffi::CString;
use std::marker::PhantomData;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::time::Duration;

mod remote;
pub use remote::{
    remote_available, ChannelOptions, DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_TENSOR_BYTES,
    MAX_KEY_BYTES, MIN_KEY_BYTES,
};

/// The most memory a channel's pool keeps unless [`Channel::set_pool_limit`] says otherwise.
pub const POOL_DEFAULT_LIMIT: u64 = ffi::DLB_POOL_DEFAULT_LIMIT as u64;

/// What [`PoolStats::huge_pages`] reports (`DLB_HUGE_PAGES_*`): integers, as the core's.
pub mod huge_pages {
    /// Small pages only (or no segment of 2 MiB yet).
    pub const NONE: i32 = dlbridge_sys::DLB_HUGE_PAGES_NONE as i32;
    /// Transparent huge pages were asked for.
    pub const TRANSPARENT: i32 = dlbridge_sys::DLB_HUGE_PAGES_TRANSPARENT as i32;
    /// Segments of reserved hugetlbfs pages.
    pub const HUGETLB: i32 = dlbridge_sys::DLB_HUGE_PAGES_HUGETLB as i32;
}

/// The state of a channel's pool ([`Channel::pool_stats`], `dlb_pool_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Segments the pool keeps.
    pub segments: u64,
    /// Their size in all, in bytes.
    pub bytes: u64,
    /// The most the pool may keep ([`Channel::set_pool_limit`]).
    pub limit: u64,
    /// Tensors of this process over the pool's slots.
    pub live: u64,
    /// Sends the peer has not given back yet.
    pub lent: u64,
    /// Sends the peer gave back since the channel opened.
    pub returned: u64,
    /// Sends the peer could not take (it ran out of file descriptors or mappings).
    pub lost: u64,
    /// What the large segments got: one of the [`huge_pages`] constants.
    pub huge_pages: i32,
}

impl Tensor {
    /// Allocates a compact, zero-filled tensor in memory another process can map
    /// (`dlb_tensor_allocate_shareable`): on [`Device::CPU`] a sealed memfd; on a CUDA device
    /// (a library built with CUDA) memory exported as a file descriptor, or, where the device
    /// cannot, through a CUDA IPC handle with a weaker lifetime rule (see
    /// [`shareable_kind`](Tensor::shareable_kind) and `docs/ipc.md`). Other devices are refused.
    pub fn allocate_shareable(device: Device, dtype: DType, shape: &[i64]) -> Result<Tensor> {
        // SAFETY: shape holds its length of values for the call; out/err valid for writes.
        made_by(|out, err| unsafe {
            ffi::dlb_tensor_allocate_shareable(
                device.into(),
                dtype.into(),
                count_of(shape.len()),
                shape.as_ptr(),
                ptr::null(),
                0,
                out,
                err,
            )
        })
    }

    /// True if the memory can be sent over a [`Channel`] without a copy: allocated with
    /// [`allocate_shareable`](Tensor::allocate_shareable), received from a channel, or a view or
    /// share of one of those.
    pub fn is_shareable(&self) -> bool {
        // SAFETY: a valid tensor.
        unsafe { ffi::dlb_tensor_is_shareable(self.raw()) != 0 }
    }

    /// Which kind of shareable memory this tensor is over (`dlb_tensor_shareable_kind`): one
    /// of the [`shareable`] constants. [`shareable::CUDA_IPC`] memory belongs to its sender's
    /// process: the sender must keep its tensor until every receiver has dropped its own.
    pub fn shareable_kind(&self) -> i32 {
        // SAFETY: a valid tensor.
        unsafe { ffi::dlb_tensor_shareable_kind(self.raw()) }
    }

    /// Makes the work queued afterwards on `consumer_stream` wait for the work its sender
    /// queued before [`Channel::send_cuda`] (`dlb_cuda_wait_received`), without blocking the
    /// host: the cross-process counterpart of
    /// [`cuda::stream_handshake`](crate::cuda::stream_handshake).
    /// `consumer_stream` follows its convention ([`cuda::STREAM_NONE`](crate::cuda::STREAM_NONE),
    /// 1, 2, -1, or a `cudaStream_t` of the tensor's device as an integer). The tensor must be
    /// CUDA memory received from a channel (or a view or share of one); without an event from
    /// the sender nothing is done.
    ///
    /// # Safety
    /// `consumer_stream`, when it is a stream handle, must be a live CUDA stream of the
    /// tensor's device.
    pub unsafe fn cuda_wait_received(&self, consumer_stream: i64) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: a valid tensor; the stream is the caller's promise.
        err.check(unsafe {
            ffi::dlb_cuda_wait_received(self.raw(), consumer_stream, err.as_mut_ptr())
        })
    }
}

/// The kinds of shareable memory, as [`Tensor::shareable_kind`] answers (`DLB_SHAREABLE_*`).
pub mod shareable {
    use dlbridge_sys as ffi;
    /// Not shareable.
    pub const NONE: i32 = ffi::DLB_SHAREABLE_NONE;
    /// Host memory in a sealed memfd.
    pub const MEMFD: i32 = ffi::DLB_SHAREABLE_MEMFD;
    /// CUDA memory exported as a POSIX file descriptor: lives while any process holds it.
    pub const CUDA_FD: i32 = ffi::DLB_SHAREABLE_CUDA_FD;
    /// CUDA memory shared by a CUDA IPC handle: the sender must outlive every receiver's use.
    pub const CUDA_IPC: i32 = ffi::DLB_SHAREABLE_CUDA_IPC;
}

/// A time limit as the C library takes it: nanoseconds, [`ffi::DLB_TIMEOUT_NONE`] for none.
/// A `Duration` beyond `i64::MAX` nanoseconds (about 292 years) is as good as none and is
/// passed as that many.
fn timeout_ns(timeout: Option<Duration>) -> i64 {
    match timeout {
        None => i64::from(ffi::DLB_TIMEOUT_NONE),
        Some(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
    }
}

fn c_path(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_encoded_bytes().to_vec()).map_err(|_| {
        Error::new(
            crate::status::INVALID_ARGUMENT,
            "the socket path contains a NUL byte",
        )
    })
}

/// The C channel, freed (`dlb_channel_close`) when its last owner lets go: the [`Listener`] or
/// [`Channel`] and every [`Shutdown`] made from it.
struct Raw(NonNull<ffi::dlb_channel>);

// SAFETY: a channel is a socket file descriptor and a small record the C library owns. Its
// functions may be called from any thread, one call at a time per channel; the one exception is
// dlb_channel_shutdown, which may run at any time on any thread until the close. `Raw` is only
// shared (Arc) between its owner, whose calls `&self`-methods on a !Sync type keep to one thread
// at a time, and Shutdown handles, which call dlb_channel_shutdown only; the close runs in Drop,
// when no other reference (so no call) is left.
unsafe impl Send for Raw {}
// SAFETY: see above: through a shared `Raw`, only dlb_channel_shutdown runs concurrently.
unsafe impl Sync for Raw {}

impl Raw {
    fn shutdown(&self) {
        // SAFETY: the record lives while `self` does; dlb_channel_shutdown may run concurrently
        // with any call on the channel, and a second call is a no-op.
        unsafe { ffi::dlb_channel_shutdown(self.0.as_ptr()) }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: the last reference: no call on the channel is in progress; its one close.
        unsafe { ffi::dlb_channel_close(self.0.as_ptr()) }
    }
}

/// What a [`Listener`] or [`Channel`] holds: its share of the C channel, whose calls run on one
/// thread at a time (not `Sync`). Dropped, it shuts the channel down at once (a listener stops
/// listening, a connection ends) even while a [`Shutdown`] handle keeps the record; the close
/// follows when the last reference goes.
struct Owner {
    raw: Arc<Raw>,
    _not_sync: PhantomData<Cell<()>>,
}

impl Owner {
    /// Makes a channel with `call` (a dlb_channel_* constructor) and owns it.
    fn made_by(
        call: impl FnOnce(*mut *mut ffi::dlb_channel, *mut ffi::dlb_error) -> ffi::dlb_status,
    ) -> Result<Owner> {
        let mut out = ptr::null_mut();
        let err = ErrorBuf::new();
        err.check(call(&mut out, err.as_mut_ptr()))?;
        // A successful call writes a non-NULL channel.
        let handle = NonNull::new(out)
            .ok_or_else(|| Error::new(crate::status::DEVICE, "no channel was made"))?;
        Ok(Owner {
            raw: Arc::new(Raw(handle)),
            _not_sync: PhantomData,
        })
    }

    fn ptr(&self) -> *mut ffi::dlb_channel {
        self.raw.0.as_ptr()
    }

    fn shutdown_handle(&self) -> Shutdown {
        Shutdown {
            raw: Arc::clone(&self.raw),
        }
    }

    fn allow_uid(&self, uid: u32) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: a valid channel.
        err.check(unsafe { ffi::dlb_channel_allow_uid(self.ptr(), uid, err.as_mut_ptr()) })
    }

    fn set_timeout(&self, timeout: Option<Duration>) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: a valid channel.
        err.check(unsafe {
            ffi::dlb_channel_set_timeout(self.ptr(), timeout_ns(timeout), err.as_mut_ptr())
        })
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.raw.shutdown();
    }
}

/// A listening socket; [`accept`](Listener::accept) gives one [`Channel`] per connection.
/// Dropping it stops listening, and closes the socket and removes its file once no
/// [`Shutdown`] handle of it is left either.
pub struct Listener {
    owner: Owner,
}

/// One end of a connection between two processes. Dropping it ends the connection (the peer's
/// calls fail as closed); tensors already received stay valid.
///
/// A channel is [`Send`], not [`Sync`]: its calls run on one thread at a time. To stop a call
/// blocked in another thread (a `receive` waiting for a peer that may never send), keep a
/// [`Shutdown`] handle from [`shutdown_handle`](Channel::shutdown_handle).
pub struct Channel {
    owner: Owner,
}

/// Shuts a [`Listener`] or [`Channel`] down from any thread (`dlb_channel_shutdown`): the call
/// blocked on it returns, and it and every later call fail with status
/// [`CLOSED`](crate::status::CLOSED) and the message "the channel is closed". Cheap to clone;
/// [`Send`] and [`Sync`]. It keeps the C channel's record alive, not the connection: shutting
/// down twice, or after the owner was dropped, does nothing.
#[derive(Clone)]
pub struct Shutdown {
    raw: Arc<Raw>,
}

impl Shutdown {
    /// Shuts the channel down; see [`Shutdown`].
    pub fn shutdown(&self) {
        self.raw.shutdown();
    }
}

impl std::fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shutdown").finish_non_exhaustive()
    }
}

impl Listener {
    fn ptr(&self) -> *mut ffi::dlb_channel {
        self.owner.ptr()
    }

    /// A handle that shuts this listener down from any thread: a blocked
    /// [`accept`](Listener::accept) then returns [`CLOSED`](crate::status::CLOSED).
    pub fn shutdown_handle(&self) -> Shutdown {
        self.owner.shutdown_handle()
    }

    /// Listens at `path` (`dlb_channel_listen`): the socket is created with mode 0600 in a
    /// folder only this user can enter (created with mode 0700 when missing; refused when
    /// others can enter it).
    pub fn bind(path: impl AsRef<Path>) -> Result<Listener> {
        let path = c_path(path.as_ref())?;
        // SAFETY: a NUL-terminated path for the call; out/err valid.
        Ok(Listener {
            owner: Owner::made_by(|out, err| unsafe {
                ffi::dlb_channel_listen(path.as_ptr(), out, err)
            })?,
        })
    }

    /// Waits for the next connection (`dlb_channel_accept`). A peer running as another user is
    /// refused with [`PERMISSION`](crate::status::PERMISSION) unless allowed with
    /// [`allow_uid`](Listener::allow_uid); its connection is closed and the listener stays
    /// usable, so a server loop skips it and accepts again. With a time limit
    /// ([`set_timeout`](Listener::set_timeout)), [`TIMEOUT`](crate::status::TIMEOUT) when no
    /// peer connects in time (the listener stays usable too).
    pub fn accept(&self) -> Result<Channel> {
        // SAFETY: a valid listener; out/err valid.
        Ok(Channel {
            owner: Owner::made_by(|out, err| unsafe {
                ffi::dlb_channel_accept(self.ptr(), out, err)
            })?,
        })
    }

    /// Accepts peers running as `uid` from now on (the caller's own uid always is). The socket
    /// is created mode 0600 in a folder of mode 0700: to let another user reach it, widen them
    /// after [`bind`](Listener::bind) (for example folder 0711, socket 0666); the kernel's
    /// record of each peer's uid still refuses every user not allowed.
    pub fn allow_uid(&self, uid: u32) -> Result<()> {
        self.owner.allow_uid(uid)
    }

    /// Sets the time limit of each later [`accept`](Listener::accept)
    /// (`dlb_channel_set_timeout`); every channel accepted from now on starts with it for its
    /// sends and receives. `None` (the default) waits as long as it takes; `Some(Duration::ZERO)`
    /// does not wait at all. A call that runs out of time fails with
    /// [`TIMEOUT`](crate::status::TIMEOUT).
    pub fn set_timeout(&self, timeout: Option<Duration>) -> Result<()> {
        self.owner.set_timeout(timeout)
    }
}

impl Channel {
    fn ptr(&self) -> *mut ffi::dlb_channel {
        self.owner.ptr()
    }

    /// A handle that shuts this channel down from any thread: a blocked
    /// [`receive`](Channel::receive) or [`send`](Channel::send) then returns
    /// [`CLOSED`](crate::status::CLOSED), as does every later call.
    pub fn shutdown_handle(&self) -> Shutdown {
        self.owner.shutdown_handle()
    }

    /// Connects to a listener at `path` (`dlb_channel_connect`), which must run as this user.
    /// Errors: [`NO_LISTENER`](crate::status::NO_LISTENER) when nothing listens there,
    /// [`PERMISSION`](crate::status::PERMISSION) for a socket or folder this user may not reach
    /// or a listener running as another user (see [`connect_with`](Channel::connect_with)).
    pub fn connect(path: impl AsRef<Path>) -> Result<Channel> {
        let path = c_path(path.as_ref())?;
        // SAFETY: a NUL-terminated path for the call; out/err valid.
        Ok(Channel {
            owner: Owner::made_by(|out, err| unsafe {
                ffi::dlb_channel_connect(path.as_ptr(), out, err)
            })?,
        })
    }

    /// [`connect`](Channel::connect) that also accepts a listener running as `listener_uid`
    /// (`None`: this user only), with a time limit for the connection
    /// (`dlb_channel_connect_with`; `None`: no limit) that the channel then keeps for its sends
    /// and receives ([`set_timeout`](Channel::set_timeout) changes it). A connection waits only
    /// while the listener's queue of peers not yet accepted is full. The listener's uid is the
    /// one the kernel recorded for the connection, so no process can claim another user's.
    /// Errors: as [`connect`](Channel::connect), and [`TIMEOUT`](crate::status::TIMEOUT).
    ///
    /// ```no_run
    /// use dlbridge::ipc::Channel;
    /// use std::time::Duration;
    /// // A listener run by the service user 998, which has allowed this process's uid.
    /// let channel = Channel::connect_with("/run/tensors/s.sock", Some(998),
    ///                                     Some(Duration::from_secs(5)))?;
    /// let t = channel.receive()?;    // TIMEOUT if nothing arrives within 5 s
    /// # drop(t);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn connect_with(
        path: impl AsRef<Path>,
        listener_uid: Option<u32>,
        timeout: Option<Duration>,
    ) -> Result<Channel> {
        let path = c_path(path.as_ref())?;
        let uid = listener_uid.unwrap_or(ffi::DLB_UID_SELF as u32);
        let timeout = timeout_ns(timeout);
        // SAFETY: a NUL-terminated path for the call; out/err valid.
        Ok(Channel {
            owner: Owner::made_by(|out, err| unsafe {
                ffi::dlb_channel_connect_with(path.as_ptr(), uid, timeout, out, err)
            })?,
        })
    }

    /// Sets the channel's time limit for each later [`send`](Channel::send) and
    /// [`receive`](Channel::receive) (`dlb_channel_set_timeout`): `None` (the default) waits as
    /// long as it takes, `Some(Duration::ZERO)` does not wait at all. A call that runs out of
    /// time fails with [`TIMEOUT`](crate::status::TIMEOUT). When nothing of a tensor had arrived
    /// or left, the channel stays usable; when the limit ran out in the middle of a tensor, the
    /// stream has lost its place and every later send and receive fails with
    /// [`PROTOCOL`](crate::status::PROTOCOL): drop the channel.
    pub fn set_timeout(&self, timeout: Option<Duration>) -> Result<()> {
        self.owner.set_timeout(timeout)
    }

    /// Sends `tensor` without copying (`dlb_channel_send`): its memory must be shareable.
    /// The peer sees later writes through it, and this process sees the peer's.
    pub fn send(&self, tensor: &Tensor) -> Result<()> {
        self.send_with(tensor, 0)
    }

    /// Sends `tensor`, copying it into new shareable memory first when it is not shareable
    /// (`DLB_SEND_COPY`): the peer's tensor then carries IS_COPIED and is its own.
    pub fn send_copy(&self, tensor: &Tensor) -> Result<()> {
        self.send_with(tensor, ffi::DLB_SEND_COPY as u32)
    }

    /// Sends `tensor` on a remote channel with its layout (`DLB_SEND_KEEP_LAYOUT`): a strided
    /// tensor's covering span travels and the peer's tensor has its strides, where
    /// [`send`](Channel::send) packs it and the peer's is compact. A local channel shares the
    /// memory, so its peer always sees the tensor's layout: there it is `send`.
    pub fn send_keeping_layout(&self, tensor: &Tensor) -> Result<()> {
        self.send_with(tensor, ffi::DLB_SEND_KEEP_LAYOUT as u32)
    }

    /// Sends `tensor` saying more tensors follow at once (`DLB_SEND_MORE`): a remote channel
    /// may hold its bytes and send them with the next ones as one batch, leaving with the next
    /// [`send`](Channel::send) without it, when a batch fills (about 64 KiB, or 1 MiB of
    /// tensors from 16 KiB), at the channel's next receive or when it is dropped. Send the last
    /// tensor of a stream with `send`. A local channel sends it at once and ignores the option.
    /// `tensor` is borrowed: its bytes are copied before this returns, so it may then be written
    /// or dropped.
    pub fn send_more(&self, tensor: &Tensor) -> Result<()> {
        self.send_with(tensor, ffi::DLB_SEND_MORE as u32)
    }

    /// Sends a CUDA `tensor` with stream order (`dlb_channel_send_cuda`): an interprocess event
    /// is recorded on `stream` after the work queued on it so far, and the receiver's
    /// [`Tensor::cuda_wait_received`] makes its stream wait for it. Keep `tensor` until the
    /// receiver has waited (the event belongs to its memory).
    ///
    /// # Safety
    /// `stream` must be null (the legacy default stream) or a live CUDA stream of the
    /// tensor's device.
    pub unsafe fn send_cuda(&self, tensor: &Tensor, stream: crate::Stream) -> Result<()> {
        // SAFETY: the stream is the caller's promise.
        unsafe { self.send_cuda_with(tensor, stream, 0) }
    }

    /// [`send_cuda`](Channel::send_cuda), first copying memory that is not shareable into
    /// shareable memory on its device, on `stream`, and waiting for the copy (`DLB_SEND_COPY`;
    /// no event then goes with it).
    ///
    /// # Safety
    /// As for [`send_cuda`](Channel::send_cuda).
    pub unsafe fn send_cuda_copy(&self, tensor: &Tensor, stream: crate::Stream) -> Result<()> {
        // SAFETY: the stream is the caller's promise.
        unsafe { self.send_cuda_with(tensor, stream, ffi::DLB_SEND_COPY as u32) }
    }

    unsafe fn send_cuda_with(
        &self,
        tensor: &Tensor,
        stream: crate::Stream,
        options: u32,
    ) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: a valid channel and tensor, borrowed for the call; the stream is the
        // caller's promise.
        err.check(unsafe {
            ffi::dlb_channel_send_cuda(
                self.ptr(),
                tensor.raw(),
                stream.as_raw(),
                options,
                err.as_mut_ptr(),
            )
        })
    }

    fn send_with(&self, tensor: &Tensor, options: u32) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: a valid channel and tensor, borrowed for the call.
        err.check(unsafe {
            ffi::dlb_channel_send(self.ptr(), tensor.raw(), options, err.as_mut_ptr())
        })
    }

    /// Lends a tensor of `dtype` and `shape` (compact, row-major, on the CPU) from this
    /// channel's pool (`dlb_channel_allocate`): the fast way to send a stream of tensors (see
    /// docs/ipc.md, "The pool"). Its memory is not zero-filled; it is exclusive until sent, so
    /// safe code fills it. Its slot goes back to the pool once this process and the peer have
    /// both dropped their tensors over it, also after the channel is gone. It goes out on this
    /// channel only. Errors: the layout's own; [`LIMIT`](crate::status::LIMIT) (larger than the
    /// pool's limit), [`TIMEOUT`](crate::status::TIMEOUT) (the pool stayed full),
    /// [`PEER_CLOSED`](crate::status::PEER_CLOSED).
    pub fn allocate(&self, dtype: DType, shape: &[i64]) -> Result<Tensor> {
        // SAFETY: a valid channel; shape holds its length of values for the call; on success
        // the caller owns the new tensor.
        made_by(|out, err| unsafe {
            ffi::dlb_channel_allocate(
                self.ptr(),
                Device::CPU.into(),
                dtype.into(),
                count_of(shape.len()),
                shape.as_ptr(),
                ptr::null(),
                0,
                out,
                err,
            )
        })
    }

    /// The most memory this channel's pool may keep, in bytes (`dlb_channel_set_pool_limit`;
    /// [`POOL_DEFAULT_LIMIT`] at first). Error: 0 ([`INVALID_ARGUMENT`](crate::status::INVALID_ARGUMENT)).
    pub fn set_pool_limit(&self, bytes: u64) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: a valid channel.
        err.check(unsafe { ffi::dlb_channel_set_pool_limit(self.ptr(), bytes, err.as_mut_ptr()) })
    }

    /// The state of this channel's pool, after taking back what the peer gave back
    /// (`dlb_channel_pool_stats`): [`PoolStats::lent`] is the peer's part, the delivery
    /// acknowledgement.
    pub fn pool_stats(&self) -> Result<PoolStats> {
        // SAFETY: dlb_pool_stats is plain integers, for which all zeros is a value.
        let mut out: ffi::dlb_pool_stats = unsafe { std::mem::zeroed() };
        let err = ErrorBuf::new();
        // SAFETY: a valid channel; out valid for writes.
        err.check(unsafe { ffi::dlb_channel_pool_stats(self.ptr(), &mut out, err.as_mut_ptr()) })?;
        Ok(PoolStats {
            segments: out.segments,
            bytes: out.bytes,
            limit: out.limit,
            live: out.live,
            lent: out.lent,
            returned: out.returned,
            lost: out.lost,
            huge_pages: out.huge_pages,
        })
    }

    /// Waits for the next tensor from the peer (`dlb_channel_receive`), checked before it is
    /// mapped. The received tensor is shareable, and exclusive only if it was copied for this
    /// exchange (IS_COPIED): the peer may write the same memory, so safe code reads it and
    /// writes it only through the `unsafe` `*_aliased` calls (a tensor sent READ_ONLY is never
    /// writable). Errors that are the peer's doing: [`PEER_CLOSED`](crate::status::PEER_CLOSED),
    /// [`PROTOCOL`](crate::status::PROTOCOL) (what arrived is not a valid tensor; the next
    /// receive reads the next one), [`PERMISSION`](crate::status::PERMISSION),
    /// [`TIMEOUT`](crate::status::TIMEOUT).
    pub fn receive(&self) -> Result<Tensor> {
        // SAFETY: a valid channel; on success the caller owns the new tensor.
        made_by(|out, err| unsafe { ffi::dlb_channel_receive(self.ptr(), out, err) })
    }

    /// The peer's process id and user id, as the kernel reported them at connection time.
    pub fn peer(&self) -> Result<(i32, u32)> {
        let (mut pid, mut uid) = (0i32, 0u32);
        let err = ErrorBuf::new();
        // SAFETY: a valid channel; out pointers valid.
        err.check(unsafe {
            ffi::dlb_channel_peer(self.ptr(), &mut pid, &mut uid, err.as_mut_ptr())
        })?;
        Ok((pid, uid))
    }

    /// Accepts a peer running as `uid` too, for the tensors received from now on. The peer of a
    /// connected channel was checked when it connected: to connect to a listener of another
    /// user, name it to [`connect_with`](Channel::connect_with).
    pub fn allow_uid(&self, uid: u32) -> Result<()> {
        self.owner.allow_uid(uid)
    }
}
