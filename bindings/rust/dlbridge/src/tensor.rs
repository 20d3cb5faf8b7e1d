//! The owning tensor handle and its queries. Making tensors is in `create.rs`, element access
//! in `access.rs`, views and copies in `views.rs`, the exchange with other DLPack code in
//! `exchange.rs`.

use crate::error::{ErrorBuf, Result};
use crate::{DType, Device};
use dlbridge_sys as ffi;
use std::ffi::c_void;
use std::fmt;
use std::ptr::{self, NonNull};

/// DLPack flag bits (`DLManagedTensorVersioned::flags`).
pub mod flags {
    use dlbridge_sys as ffi;
    /// The consumer must not write through the tensor.
    pub const READ_ONLY: u64 = ffi::DLPACK_FLAG_BITMASK_READ_ONLY;
    /// The producer made a copy for this exchange: the consumer is the only owner.
    pub const IS_COPIED: u64 = ffi::DLPACK_FLAG_BITMASK_IS_COPIED;
    /// Sub-byte elements are padded to a byte each instead of packed.
    pub const IS_SUBBYTE_TYPE_PADDED: u64 = ffi::DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
}

/// An owned DLPack tensor: a `DLManagedTensorVersioned` made (or imported) by dlbridge.
///
/// Dropping it calls the tensor's deleter exactly once. Views ([`slice`](Tensor::slice),
/// [`select`](Tensor::select), [`reshape`](Tensor::reshape), [`permute`](Tensor::permute),
/// [`transpose`](Tensor::transpose)) and [`share`](Tensor::share) return new `Tensor`s that keep
/// the memory alive on their own, through the C library's reference count: they may outlive the
/// tensor they came from and be dropped in any order, on any thread.
///
/// Writing through safe code ([`as_mut_slice`](Tensor::as_mut_slice),
/// [`copy_into`](Tensor::copy_into)) needs `&mut` access to the tensor *and* memory this handle
/// holds alone (see [`is_exclusive`](Tensor::is_exclusive)): while a view or share exists, every
/// tensor over that memory is read-only to safe code, so `&[T]` slices can never observe a
/// concurrent write. The `unsafe` `*_aliased` variants lift that rule for callers who order
/// their accesses themselves.
pub struct Tensor {
    /// The handle, never NULL. Sharing is not tracked here: the C library's reference count
    /// answers [`is_exclusive`](Tensor::is_exclusive).
    handle: NonNull<ffi::DLManagedTensorVersioned>,
}

// SAFETY (Send): a Tensor owns its handle outright, and the C library lets every function,
// the deleter included, run on any thread (dlbridge.h: "every function may be called from any
// thread"; DLPack rule 3: "a deleter may run on any thread"). The memory owners it may release
// are thread-agnostic: Vec/Box memory of `Element` types (which are `Send`), release closures
// required to be `Send`, and foreign deleters, which DLPack requires to run on any thread.
unsafe impl Send for Tensor {}
// SAFETY (Sync): through `&Tensor` only immutable state is read (the managed struct, its shape
// and strides never change after creation) and the C calls that take `&self` (views, share,
// copy, is_exclusive) only touch the reference count, which is atomic. Element data is written only through
// `&mut self` on exclusive memory, or through `unsafe` methods whose callers promise no
// concurrent access, so shared `&[T]` slices never race with writes.
unsafe impl Sync for Tensor {}

/// A count of values as the C API's `int32_t`: one that does not fit is clamped to `i32::MAX`,
/// which every C function refuses with its own message ("ndim ... exceeds the maximum of 64")
/// before it reads the array.
#[inline(always)]
pub(crate) fn count_of(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// Runs a C call that writes a new tensor into `out` and the reason into `err`: on success the
/// caller owns `*out` (the rule of every dlbridge function that returns a tensor). Views and
/// shares made this way hold a reference in the C library's count, so neither they nor their
/// source are exclusive while both live.
#[inline(always)]
pub(crate) fn made_by(
    call: impl FnOnce(*mut *mut ffi::DLManagedTensorVersioned, *mut ffi::dlb_error) -> ffi::dlb_status,
) -> Result<Tensor> {
    let mut out = ptr::null_mut();
    let err = ErrorBuf::new();
    err.check(call(&mut out, err.as_mut_ptr()))?;
    // SAFETY: success: we own `out`, a non-NULL dlbridge tensor.
    Ok(unsafe { Tensor::from_dlbridge(out) })
}

impl Tensor {
    /// Takes a handle made by dlbridge. Caller: `raw` is a non-NULL dlbridge tensor it owns.
    #[inline(always)]
    pub(crate) unsafe fn from_dlbridge(raw: *mut ffi::DLManagedTensorVersioned) -> Tensor {
        debug_assert!(!raw.is_null());
        Tensor {
            // SAFETY: the caller passes the non-NULL `out` of a successful C call.
            handle: unsafe { NonNull::new_unchecked(raw) },
        }
    }

    /// The managed struct's address.
    #[inline(always)]
    pub(crate) fn raw(&self) -> *mut ffi::DLManagedTensorVersioned {
        self.handle.as_ptr()
    }

    #[inline(always)]
    fn managed(&self) -> &ffi::DLManagedTensorVersioned {
        // SAFETY: the handle is valid while self lives, and its struct is never modified.
        unsafe { &*self.raw() }
    }

    /// The underlying `DLTensor` (borrowed).
    #[inline]
    pub fn dl_tensor(&self) -> &ffi::DLTensor {
        &self.managed().dl_tensor
    }

    /// The underlying managed struct, still owned by `self` (for C calls that borrow it).
    #[inline]
    pub fn as_ptr(&self) -> *const ffi::DLManagedTensorVersioned {
        self.raw()
    }

    /// The extents.
    #[inline]
    pub fn shape(&self) -> &[i64] {
        let t = self.dl_tensor();
        // SAFETY: see dims().
        unsafe { dims(t.shape, t.ndim) }
    }

    /// The strides in elements (always present on dlbridge tensors).
    #[inline]
    pub fn strides(&self) -> &[i64] {
        let t = self.dl_tensor();
        // SAFETY: see dims().
        unsafe { dims(t.strides, t.ndim) }
    }

    /// The number of dimensions.
    #[inline]
    pub fn ndim(&self) -> usize {
        self.dl_tensor().ndim as usize
    }

    /// The number of elements (1 for a scalar, 0 if any extent is 0).
    pub fn numel(&self) -> usize {
        let mut n = 0i64;
        // SAFETY: a valid tensor; out pointer valid; a NULL error buffer is allowed. A dlbridge
        // tensor's shape was validated when it was made: the count cannot fail, and it fits in
        // 63 bits, hence in usize on every 64-bit target.
        unsafe { ffi::dlb_tensor_element_count(self.dl_tensor(), &mut n, ptr::null_mut()) };
        n as usize
    }

    /// The element type.
    #[inline]
    pub fn dtype(&self) -> DType {
        self.dl_tensor().dtype.into()
    }

    /// The device.
    #[inline]
    pub fn device(&self) -> Device {
        self.dl_tensor().device.into()
    }

    /// The DLPack flags ([`flags`]).
    #[inline]
    pub fn flags(&self) -> u64 {
        self.managed().flags
    }

    /// True if the tensor carries READ_ONLY.
    #[inline]
    pub fn is_read_only(&self) -> bool {
        self.flags() & flags::READ_ONLY != 0
    }

    /// True if the producer copied the data for this tensor (IS_COPIED).
    #[inline]
    pub fn is_copied(&self) -> bool {
        self.flags() & flags::IS_COPIED != 0
    }

    /// True while this tensor is the only holder of its memory (`dlb_tensor_is_exclusive`, from
    /// the C library's reference count): allocations, `from_*`, copies, `wrap_raw` and IS_COPIED
    /// imports, of which no view or share is alive now. Views, shares, imports the producer may
    /// still alias and legacy imports are never exclusive. It turns true again once every view
    /// and share of the tensor has been dropped.
    ///
    /// Why a `true` answer may be trusted for as long as `&mut self` is held: only a holder of
    /// the memory can add a holder (share, view, export), and there is no other holder while
    /// this reads true; `self` cannot make one while it is mutably borrowed. So the answer
    /// cannot turn false while a `&mut [T]` from [`as_mut_slice`](Tensor::as_mut_slice) lives.
    /// The C library reads the count with acquire ordering and frees references with release
    /// ordering, so writes made through a view on another thread before it was dropped happen
    /// before the writes made here.
    #[inline]
    pub fn is_exclusive(&self) -> bool {
        // SAFETY: a valid dlbridge tensor; reads its reference count.
        unsafe { ffi::dlb_tensor_is_exclusive(self.raw()) != 0 }
    }

    /// The data pointer (or handle) as the producer gave it; the first element is at
    /// `data_ptr() + byte_offset()`.
    #[inline]
    pub fn data_ptr(&self) -> *mut c_void {
        self.dl_tensor().data
    }

    /// Bytes from `data_ptr()` to the first element.
    #[inline]
    pub fn byte_offset(&self) -> u64 {
        self.dl_tensor().byte_offset
    }

    /// Bytes the elements take stored compactly (`dlb_tensor_byte_size`, packed-aware).
    pub fn byte_size(&self) -> Result<usize> {
        let mut out = 0u64;
        let err = ErrorBuf::new();
        // SAFETY: borrowed tensor, valid out pointers.
        err.check(unsafe {
            ffi::dlb_tensor_byte_size(self.dl_tensor(), self.flags(), &mut out, err.as_mut_ptr())
        })?;
        // Validation bounds every byte size below 2^60: it fits in usize on 64-bit targets.
        Ok(out as usize)
    }

    /// True if the elements are laid out in C order without gaps.
    pub fn is_c_contiguous(&self) -> bool {
        // SAFETY: borrowed, valid tensor.
        unsafe { ffi::dlb_tensor_is_c_contiguous(self.dl_tensor()) != 0 }
    }

    /// True if the elements are laid out in Fortran order without gaps.
    pub fn is_f_contiguous(&self) -> bool {
        // SAFETY: borrowed, valid tensor.
        unsafe { ffi::dlb_tensor_is_f_contiguous(self.dl_tensor()) != 0 }
    }

    /// True if the host CPU can read the memory.
    pub fn is_host_readable(&self) -> bool {
        // SAFETY: borrowed, valid tensor.
        unsafe { ffi::dlb_tensor_is_host_readable(self.dl_tensor()) != 0 }
    }
}

/// The shape or strides array of a dlbridge tensor as a slice. The C library guarantees
/// non-NULL arrays of ndim values when ndim > 0 (dlbridge.h, "Tensor lifecycle"), owned by the
/// tensor and immutable while it lives; for ndim 0 the pointer may be NULL, which a slice may
/// not hold.
#[inline(always)]
pub(crate) unsafe fn dims<'a>(p: *const i64, ndim: i32) -> &'a [i64] {
    if ndim <= 0 {
        return &[];
    }
    // SAFETY: the caller's tensor; the guarantee above.
    unsafe { std::slice::from_raw_parts(p, ndim as usize) }
}

impl Drop for Tensor {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we own the handle; this is the one release (into_raw/into_raw_legacy forget self).
        unsafe { ffi::dlb_tensor_free(self.raw()) }
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &self.dtype())
            .field("device", &self.device())
            .field("shape", &self.shape())
            .field("strides", &self.strides())
            .field("flags", &self.flags())
            .finish()
    }
}
