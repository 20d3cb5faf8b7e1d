//! The owning tensor handle.

use crate::error::{status, Error, ErrorBuf, Result};
use crate::{DType, Device, Element, Stream};
use dlbridge_sys as ffi;
use std::ffi::{c_void, CStr};
use std::fmt;
use std::mem::{align_of, size_of, ManuallyDrop};
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo};
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

/// One dimension of [`Tensor::slice`], with Python semantics: negative bounds count from the end,
/// out-of-range bounds are clamped, `None` bounds mean "from the start / to the end" in the
/// direction of `step`, and `step` may be negative but not 0.
///
/// Ranges convert into it: `1..3`, `2..`, `..4`, `..`, `0..=2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// First index (`None`: from the beginning in the direction of `step`).
    pub start: Option<i64>,
    /// One past the last index (`None`: to the end).
    pub stop: Option<i64>,
    /// Step (not 0).
    pub step: i64,
}

impl Slice {
    /// `start:stop:step`.
    pub const fn new(start: Option<i64>, stop: Option<i64>, step: i64) -> Slice {
        Slice { start, stop, step }
    }
    /// The whole dimension (`:`).
    pub const fn full() -> Slice {
        Slice::new(None, None, 1)
    }
    /// The whole dimension with a step (`::step`; `::-1` reverses).
    pub const fn step(step: i64) -> Slice {
        Slice::new(None, None, step)
    }
    /// `start:stop`.
    pub const fn range(start: i64, stop: i64) -> Slice {
        Slice::new(Some(start), Some(stop), 1)
    }
    fn to_ffi(self) -> ffi::dlb_slice {
        ffi::dlb_slice {
            start: self.start.unwrap_or(ffi::DLB_SLICE_NONE),
            stop: self.stop.unwrap_or(ffi::DLB_SLICE_NONE),
            step: self.step,
        }
    }
}

impl From<Range<i64>> for Slice {
    fn from(r: Range<i64>) -> Slice {
        Slice::range(r.start, r.end)
    }
}
impl From<RangeInclusive<i64>> for Slice {
    fn from(r: RangeInclusive<i64>) -> Slice {
        let stop = if *r.end() == -1 {
            None
        } else {
            Some(*r.end() + 1)
        };
        Slice::new(Some(*r.start()), stop, 1)
    }
}
impl From<RangeFrom<i64>> for Slice {
    fn from(r: RangeFrom<i64>) -> Slice {
        Slice::new(Some(r.start), None, 1)
    }
}
impl From<RangeTo<i64>> for Slice {
    fn from(r: RangeTo<i64>) -> Slice {
        Slice::new(None, Some(r.end), 1)
    }
}
impl From<RangeFull> for Slice {
    fn from(_: RangeFull) -> Slice {
        Slice::full()
    }
}

/// A description of memory for [`Tensor::wrap_raw`].
#[derive(Clone, Copy, Debug)]
pub struct RawParts<'a> {
    /// The data pointer (or opaque handle, for devices such as OpenCL).
    pub data: *mut c_void,
    /// Where the memory lives.
    pub device: Device,
    /// The element type.
    pub dtype: DType,
    /// The extents (copied by the call).
    pub shape: &'a [i64],
    /// Strides in elements (copied), or `None` for compact row-major.
    pub strides: Option<&'a [i64]>,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
    /// DLPack flags to carry ([`flags`]).
    pub flags: u64,
}

impl<'a> RawParts<'a> {
    /// Compact row-major memory at `data`, no offset, no flags.
    pub fn new(data: *mut c_void, device: Device, dtype: DType, shape: &'a [i64]) -> RawParts<'a> {
        RawParts {
            data,
            device,
            dtype,
            shape,
            strides: None,
            byte_offset: 0,
            flags: 0,
        }
    }
}

fn ndim_of(len: usize) -> Result<i32> {
    i32::try_from(len)
        .map_err(|_| Error::new(status::INVALID_ARGUMENT, format!("ndim {len} is too large")))
}

/// Refuses strides that are not one per extent before C reads `shape.len()` of them through a
/// pointer, with the C library's message for it (`DLB_STRIDES_LENGTH_MESSAGE`).
fn check_strides_length(shape: &[i64], strides: Option<&[i64]>) -> Result<()> {
    match strides {
        Some(s) if s.len() != shape.len() => {
            let message = CStr::from_bytes_with_nul(ffi::DLB_STRIDES_LENGTH_MESSAGE)
                .map(|m| m.to_string_lossy().into_owned())
                .unwrap_or_default();
            Err(Error::new(status::INVALID_ARGUMENT, message))
        }
        _ => Ok(()),
    }
}

/// The element count of a shape by the C library's rule (`dlb_shape_element_count`), so that a
/// Rust container's length can be compared before its memory is handed over.
#[inline]
fn element_count(shape: &[i64]) -> Result<usize> {
    let ndim = ndim_of(shape.len())?;
    let mut n = 0i64;
    let err = ErrorBuf::new();
    // SAFETY: shape holds ndim values for the call; out/err valid for writes.
    err.check(unsafe {
        ffi::dlb_shape_element_count(ndim, shape.as_ptr(), &mut n, err.as_mut_ptr())
    })?;
    // The count fits in 63 bits, hence in usize on every 64-bit target.
    usize::try_from(n)
        .map_err(|_| Error::new(status::OVERFLOW, "the element count does not fit in usize"))
}

/// Release callback for memory owned by a boxed Rust value (a `Vec<T>` or a closure): drops it.
/// Runs exactly once, on whichever thread frees the last reference. Rust aborts instead of
/// unwinding out of an `extern "C"` function, so nothing can unwind into C.
unsafe extern "C" fn drop_boxed<B>(ctx: *mut c_void) {
    // SAFETY: ctx came from Box::<B>::into_raw in Tensor::wrap_owned and the C library calls
    // this exactly once.
    drop(unsafe { Box::from_raw(ctx.cast::<B>()) });
}

unsafe extern "C" fn call_boxed<F: FnOnce()>(ctx: *mut c_void) {
    // SAFETY: as drop_boxed; the closure is called once and then dropped.
    let f = unsafe { Box::from_raw(ctx.cast::<F>()) };
    f();
}

/// Runs a C call that writes a new tensor into `out` and the reason into `err`: on success the
/// caller owns `*out` (the rule of every dlbridge function that returns a tensor). Views and
/// shares made this way hold a reference in the C library's count, so neither they nor their
/// source are exclusive while both live.
#[inline(always)]
fn made_by(
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
    unsafe fn from_dlbridge(raw: *mut ffi::DLManagedTensorVersioned) -> Tensor {
        debug_assert!(!raw.is_null());
        Tensor {
            // SAFETY: the caller passes the non-NULL `out` of a successful C call.
            handle: unsafe { NonNull::new_unchecked(raw) },
        }
    }

    /// The managed struct's address.
    #[inline(always)]
    fn raw(&self) -> *mut ffi::DLManagedTensorVersioned {
        self.handle.as_ptr()
    }

    /// Allocates `shape` elements of `T` on the CPU. Rust cannot hand out uninitialised memory
    /// to safe code, so unlike `numpy.empty` the memory is zero-filled: this is
    /// [`zeros`](Tensor::zeros).
    pub fn empty<T: Element>(shape: &[i64]) -> Result<Tensor> {
        Tensor::zeros::<T>(shape)
    }

    /// Allocates `shape` elements of `T` on the CPU, filled with zero bytes.
    ///
    /// ```
    /// let t = dlbridge::Tensor::zeros::<f64>(&[2, 2])?;
    /// assert_eq!(t.as_slice::<f64>()?, &[0.0; 4]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn zeros<T: Element>(shape: &[i64]) -> Result<Tensor> {
        // Not `allocate`: knowing T, the byte count is the core's element count times
        // size_of::<T>() (the `Element` promise), one cheap call where dlb_tensor_host_data's
        // full check costs about 9 ns more per allocation (the bench's `zeros + drop` row).
        let t = Tensor::allocate_uninit(Device::CPU, T::DTYPE, shape, None, 0)?;
        let n = t.numel();
        // SAFETY: a fresh compact CPU allocation of n elements of T (size_of::<T>() bytes each)
        // from the first element; nobody else sees it yet.
        unsafe {
            ptr::write_bytes(
                t.data_ptr().cast::<u8>().add(t.byte_offset() as usize),
                0,
                n * size_of::<T>(),
            )
        };
        Ok(t)
    }

    /// Allocates a compact row-major tensor on `device` through its backend
    /// (`dlb_tensor_allocate`). CPU data is 256-byte aligned. Host-readable memory is
    /// zero-filled (safe code may read it); on other devices the contents are unspecified.
    pub fn allocate(device: Device, dtype: DType, shape: &[i64]) -> Result<Tensor> {
        Tensor::allocate_with(device, dtype, shape, None, 0)
    }

    /// Allocates a tensor with explicit `strides` (in elements; `None`: row-major; negative and
    /// zero strides allowed) and `flags` (READ_ONLY and/or IS_SUBBYTE_TYPE_PADDED). Host-readable
    /// memory is zero-filled, as with [`allocate`](Tensor::allocate).
    pub fn allocate_with(
        device: Device,
        dtype: DType,
        shape: &[i64],
        strides: Option<&[i64]>,
        flags: u64,
    ) -> Result<Tensor> {
        let t = Tensor::allocate_uninit(device, dtype, shape, strides, flags)?;
        let (mut data, mut size) = (ptr::null_mut(), 0u64);
        // Compact tensors: one call gives the host address and byte size (packed-aware); it
        // fails (without a message: NULL error) only for memory the host cannot read.
        // SAFETY: borrowed valid tensor; out pointers valid; a NULL error buffer is allowed.
        if strides.is_none()
            && unsafe {
                ffi::dlb_tensor_host_data(t.raw(), 0, &mut data, &mut size, ptr::null_mut())
            } == ffi::DLB_OK
        {
            // SAFETY: a fresh compact allocation of `size` bytes at `data`; nobody else sees it.
            unsafe { ptr::write_bytes(data.cast::<u8>(), 0, size as usize) };
        } else if t.is_host_readable() {
            let (mut begin, mut size) = (0i64, 0i64);
            let err = ErrorBuf::new();
            // SAFETY: borrowed valid tensor; out pointers valid.
            err.check(unsafe {
                ffi::dlb_tensor_byte_span(
                    t.dl_tensor(),
                    t.flags(),
                    &mut begin,
                    &mut size,
                    err.as_mut_ptr(),
                )
            })?;
            if size > 0 {
                // SAFETY: the allocation covers exactly the span the elements touch, starting
                // `begin` bytes from data; nobody else has seen this memory yet.
                unsafe {
                    ptr::write_bytes(
                        t.data_ptr().cast::<u8>().offset(begin as isize),
                        0,
                        size as usize,
                    )
                };
            }
        }
        Ok(t)
    }

    fn allocate_uninit(
        device: Device,
        dtype: DType,
        shape: &[i64],
        strides: Option<&[i64]>,
        flags: u64,
    ) -> Result<Tensor> {
        let ndim = ndim_of(shape.len())?;
        check_strides_length(shape, strides)?;
        // SAFETY: shape/strides hold ndim values and outlive the call; out/err valid for writes.
        made_by(|out, err| unsafe {
            ffi::dlb_tensor_allocate(
                device.into(),
                dtype.into(),
                ndim,
                shape.as_ptr(),
                strides.map_or(ptr::null(), |s| s.as_ptr()),
                flags,
                out,
                err,
            )
        })
    }

    /// Copies `data` into a new CPU tensor of the given shape.
    ///
    /// ```
    /// let t = dlbridge::Tensor::from_slice(&[1i32, 2, 3, 4, 5, 6], &[2, 3])?;
    /// assert_eq!(t.shape(), &[2, 3]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn from_slice<T: Element>(data: &[T], shape: &[i64]) -> Result<Tensor> {
        check_len(data.len(), shape)?;
        let t = Tensor::allocate_uninit(Device::CPU, T::DTYPE, shape, None, 0)?;
        // SAFETY: a fresh compact CPU allocation (byte_offset 0) of exactly data.len()
        // elements of T, 256-byte aligned; it does not overlap `data`.
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), t.data_ptr().cast::<T>(), data.len()) };
        Ok(t)
    }

    /// Takes ownership of a `Vec` **without copying**: the tensor's memory is the vector's
    /// buffer, released (by dropping the vector) exactly once when the last tensor over it is
    /// freed, on whichever thread that happens, including a foreign consumer's thread after
    /// [`into_raw`](Tensor::into_raw). On error the vector is dropped here, once.
    ///
    /// ```
    /// let t = dlbridge::Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(t.as_slice::<f32>()?, &[1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn from_vec<T: Element>(mut data: Vec<T>, shape: &[i64]) -> Result<Tensor> {
        check_len(data.len(), shape)?;
        let ptr = data.as_mut_ptr().cast::<c_void>();
        let parts = RawParts::new(ptr, Device::CPU, T::DTYPE, shape);
        // SAFETY: the buffer holds exactly the elements `parts` describes; the Vec owns it and
        // moves into the tensor (its heap buffer does not move when the Vec is boxed).
        unsafe { Tensor::wrap_owned(&parts, Box::new(data)) }
    }

    /// Takes ownership of a boxed slice without copying (see [`from_vec`](Tensor::from_vec)).
    pub fn from_boxed_slice<T: Element>(data: Box<[T]>, shape: &[i64]) -> Result<Tensor> {
        // Vec::from(Box<[T]>) reuses the allocation (capacity == length): no copy.
        Tensor::from_vec(Vec::from(data), shape)
    }

    /// Wraps `parts`, handing `owner` to the tensor: dropped exactly once when the last reference
    /// goes, or right here if the wrap fails (the C library does not call release on error).
    unsafe fn wrap_owned<B: Send + 'static>(parts: &RawParts<'_>, owner: Box<B>) -> Result<Tensor> {
        let ctx = Box::into_raw(owner).cast::<c_void>();
        // SAFETY: forwarded from the caller; drop_boxed::<B> matches ctx's type.
        let result = unsafe { Tensor::wrap_ffi(parts, Some(drop_boxed::<B>), ctx) };
        if result.is_err() {
            // SAFETY: the wrap failed, so release was not and will not be called: we still own it.
            drop(unsafe { Box::from_raw(ctx.cast::<B>()) });
        }
        result
    }

    unsafe fn wrap_ffi(
        parts: &RawParts<'_>,
        release: ffi::dlb_release_fn,
        ctx: *mut c_void,
    ) -> Result<Tensor> {
        let ndim = ndim_of(parts.shape.len())?;
        check_strides_length(parts.shape, parts.strides)?;
        let desc = ffi::DLTensor {
            data: parts.data,
            device: parts.device.into(),
            ndim,
            dtype: parts.dtype.into(),
            // The C library copies shape and strides and never writes through them.
            shape: parts.shape.as_ptr().cast_mut(),
            strides: parts
                .strides
                .map_or(ptr::null_mut(), |s| s.as_ptr().cast_mut()),
            byte_offset: parts.byte_offset,
        };
        // SAFETY: desc is a valid DLTensor for the call; the caller vouches for the memory (and
        // for its exclusivity: the core counts a wrap as the only holder).
        made_by(|out, err| unsafe {
            ffi::dlb_tensor_wrap(&desc, parts.flags, release, ctx, out, err)
        })
    }

    /// Wraps memory owned elsewhere without copying (`dlb_tensor_wrap`). `release` runs exactly
    /// once when the last tensor over the memory is freed, on whichever thread that happens; if
    /// the wrap fails it is dropped without being called and the caller still owns the memory.
    ///
    /// # Safety
    /// - `parts` must describe memory that is valid for every element it names (data +
    ///   byte_offset + strides) on `parts.device`, and stays valid until `release` runs.
    /// - Until then nobody else may access that memory, except by reading it while no tensor
    ///   over it is written (safe code writes only through exclusive tensors; this one counts as
    ///   exclusive). For read-only memory, pass [`flags::READ_ONLY`].
    /// - For host memory read through [`as_slice`](Tensor::as_slice), the bytes must be
    ///   initialised.
    pub unsafe fn wrap_raw<F>(parts: &RawParts<'_>, release: F) -> Result<Tensor>
    where
        F: FnOnce() + Send + 'static,
    {
        let ctx = Box::into_raw(Box::new(release)).cast::<c_void>();
        // SAFETY: forwarded; call_boxed::<F> matches ctx's type.
        let result = unsafe { Tensor::wrap_ffi(parts, Some(call_boxed::<F>), ctx) };
        if result.is_err() {
            // SAFETY: not called on error; drop the closure without calling it.
            drop(unsafe { Box::from_raw(ctx.cast::<F>()) });
        }
        result
    }

    // ------------------------------------------------------------------------------------
    // Queries
    // ------------------------------------------------------------------------------------

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
        // A dlbridge tensor's shape was validated when it was made: the count cannot fail.
        element_count(self.shape()).unwrap_or(0)
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
        usize::try_from(out)
            .map_err(|_| Error::new(status::OVERFLOW, "byte size does not fit in usize"))
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

    /// The host address and element count of a C-contiguous, host-readable tensor of `T`'s
    /// dtype, aligned for `T`, whose bytes are valid `T`s: the checks before a slice is handed
    /// out. Readability, layout, byte size (and READ_ONLY when `writable`) are the C library's
    /// one rule for them (`dlb_tensor_host_data`); the dtype and alignment of `T` and the
    /// validity of its bytes are Rust's own.
    fn host_elements<T: Element>(&self, writable: bool) -> Result<(*mut T, usize)> {
        let dtype = self.dtype();
        if dtype != T::DTYPE {
            return Err(Error::new(
                status::INVALID_ARGUMENT,
                format!(
                    "tensor has dtype {dtype}, not {} ({})",
                    T::DTYPE,
                    std::any::type_name::<T>()
                ),
            ));
        }
        let (mut data, mut size) = (ptr::null_mut(), 0u64);
        let err = ErrorBuf::new();
        // SAFETY: a valid tensor; out pointers and error buffer valid for writes.
        err.check(unsafe {
            ffi::dlb_tensor_host_data(
                self.raw(),
                i32::from(writable),
                &mut data,
                &mut size,
                err.as_mut_ptr(),
            )
        })?;
        // `Element` promises size_of::<T>() bytes per element of T::DTYPE, a whole-byte type.
        let n = size as usize / size_of::<T>();
        if n == 0 {
            return Ok((NonNull::dangling().as_ptr(), 0));
        }
        if data as usize % align_of::<T>() != 0 {
            return Err(Error::new(
                status::LAYOUT,
                format!(
                    "first element is not aligned to {} bytes for {}",
                    align_of::<T>(),
                    std::any::type_name::<T>()
                ),
            ));
        }
        // SAFETY: dlb_tensor_host_data vouches for `size` readable bytes at `data`, which live
        // as long as self.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) };
        if !T::valid_bytes(bytes) {
            return Err(Error::new(
                status::INVALID_ARGUMENT,
                format!(
                    "tensor holds bytes that are not valid {}",
                    std::any::type_name::<T>()
                ),
            ));
        }
        Ok((data.cast::<T>(), n))
    }

    /// The elements as a slice, in C order. Errors: another dtype than `T`'s, memory the host
    /// cannot read (`DLB_ERR_UNSUPPORTED`), a non-C-contiguous layout (`DLB_ERR_LAYOUT`: use
    /// [`copy_to`](Tensor::copy_to) first), a misaligned first element, and for `bool`, bytes
    /// other than 0 and 1.
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        let (data, n) = self.host_elements::<T>(false)?;
        // SAFETY: n valid, aligned elements of T at data (host_elements); the memory lives as
        // long as self; safe code cannot write it while this borrow of self lasts (writes need
        // &mut access to an exclusive tensor, and this tensor is borrowed).
        Ok(unsafe { std::slice::from_raw_parts(data, n) })
    }

    /// The elements as a mutable slice. Besides the checks of [`as_slice`](Tensor::as_slice),
    /// refused with `DLB_ERR_INVALID_ARGUMENT` while the memory is shared with other tensors
    /// ([`is_exclusive`](Tensor::is_exclusive) is false; see
    /// [`as_mut_slice_aliased`](Tensor::as_mut_slice_aliased)) and with `DLB_ERR_READ_ONLY` for
    /// a READ_ONLY tensor.
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T]> {
        if !self.is_exclusive() {
            return Err(Error::new(
                status::INVALID_ARGUMENT,
                "tensor memory is shared with other tensors (a view, a share or an import); \
                 copy it (copy_to) or use the unsafe as_mut_slice_aliased",
            ));
        }
        // SAFETY: the only holder of the memory, and &mut self excludes every other borrow of
        // this handle, so no holder can appear while the slice lives (see is_exclusive).
        unsafe { self.as_mut_slice_aliased() }
    }

    /// [`as_mut_slice`](Tensor::as_mut_slice) without the exclusivity check: for writing through
    /// a view or share.
    ///
    /// # Safety
    /// While the returned slice lives, no other tensor (view, share, foreign holder) over the
    /// same memory may be read or written, on any thread.
    pub unsafe fn as_mut_slice_aliased<T: Element>(&mut self) -> Result<&mut [T]> {
        let (data, n) = self.host_elements::<T>(true)?;
        // SAFETY: as as_slice, plus writable memory (host_elements refused READ_ONLY) and the
        // caller's (or as_mut_slice's) guarantee that nothing else accesses it.
        Ok(unsafe { std::slice::from_raw_parts_mut(data, n) })
    }

    /// The elements in C order as a new `Vec`, whatever the strides (copies through
    /// [`copy_to`](Tensor::copy_to) when the layout is not contiguous).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        match self.as_slice::<T>() {
            // Not C-contiguous, or not host memory: the C library's refusal says to copy.
            Err(e) if e.status() == status::LAYOUT || e.status() == status::UNSUPPORTED => self
                .copy_to(Device::CPU)?
                .as_slice::<T>()
                .map(<[T]>::to_vec),
            slice => slice.map(<[T]>::to_vec),
        }
    }

    // ------------------------------------------------------------------------------------
    // Views, shares and copies
    // ------------------------------------------------------------------------------------

    /// Another reference to the same memory (`dlb_tensor_share`): a new, independent tensor
    /// that can be handed to another owner or thread. The memory goes when the last one does.
    pub fn share(&self) -> Result<Tensor> {
        // SAFETY: the C call only bumps the atomic reference count of `self`.
        made_by(|out, err| unsafe { ffi::dlb_tensor_share(self.raw(), 0, out, err) })
    }

    /// A read-only share: the new tensor carries READ_ONLY, `self` is unchanged.
    pub fn share_read_only(&self) -> Result<Tensor> {
        // SAFETY: as share().
        made_by(|out, err| unsafe { ffi::dlb_tensor_share(self.raw(), flags::READ_ONLY, out, err) })
    }

    /// A view of the first `slices.len()` dimensions sliced with Python semantics
    /// (`dlb_tensor_slice`); later dimensions are taken whole.
    ///
    /// ```
    /// use dlbridge::{Slice, Tensor};
    /// let t = Tensor::from_vec((0..12).collect::<Vec<i64>>(), &[3, 4])?;
    /// let v = t.slice(&[(1..3).into(), Slice::step(-2)])?;   // t[1:3, ::-2]
    /// assert_eq!(v.shape(), &[2, 2]);
    /// assert_eq!(v.to_vec::<i64>()?, vec![7, 5, 11, 9]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn slice(&self, slices: &[Slice]) -> Result<Tensor> {
        let n = ndim_of(slices.len())?;
        let raw: Vec<ffi::dlb_slice> = slices.iter().map(|s| s.to_ffi()).collect();
        // SAFETY: `raw` holds n slices for the call; self only gains a reference.
        made_by(|out, err| unsafe { ffi::dlb_tensor_slice(self.raw(), n, raw.as_ptr(), out, err) })
    }

    /// Selects `index` along `axis`, removing that dimension (negative values count from the end).
    pub fn select(&self, axis: i32, index: i64) -> Result<Tensor> {
        // SAFETY: self only gains a reference.
        made_by(|out, err| unsafe { ffi::dlb_tensor_select(self.raw(), axis, index, out, err) })
    }

    /// A view with a new shape of the same element count (one extent may be -1). Refused with
    /// `DLB_ERR_LAYOUT` when the strides cannot express it: copy first.
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let n = ndim_of(shape.len())?;
        // SAFETY: shape holds n values for the call.
        made_by(|out, err| unsafe {
            ffi::dlb_tensor_reshape(self.raw(), n, shape.as_ptr(), out, err)
        })
    }

    /// A view with the dimensions reordered: dimension i of the view is dimension `axes[i]`.
    pub fn permute(&self, axes: &[i32]) -> Result<Tensor> {
        let n = ndim_of(axes.len())?;
        // SAFETY: axes holds n values for the call.
        made_by(|out, err| unsafe {
            ffi::dlb_tensor_permute(self.raw(), n, axes.as_ptr(), out, err)
        })
    }

    /// A view with the dimensions in reverse order (the matrix transpose for 2-D).
    pub fn transpose(&self) -> Result<Tensor> {
        // SAFETY: self only gains a reference.
        made_by(|out, err| unsafe { ffi::dlb_tensor_transpose(self.raw(), out, err) })
    }

    /// Copies the elements into a new compact row-major tensor on `device` (`dlb_tensor_copy`),
    /// from and to any device with a backend or host-readable memory. The copy is writable,
    /// exclusive and carries IS_COPIED.
    pub fn copy_to(&self, device: Device) -> Result<Tensor> {
        // SAFETY: a NULL stream makes the copy complete when the call returns.
        unsafe { self.copy_to_async(device, Stream::NULL) }
    }

    /// [`copy_to`](Tensor::copy_to) queued on `stream` (`dlb_tensor_copy_async`) of the device
    /// that is not the host (of the destination when both are devices); it returns once the
    /// copy is queued. Work the library stages through host memory completes before it
    /// returns. [`Stream::NULL`] makes it synchronous.
    ///
    /// # Safety
    /// - `stream` is [`Stream::NULL`] or a live stream (CUDA) / command queue (OpenCL, on the
    ///   tensor's context) of that device's runtime.
    /// - Until the stream has been synchronised ([`Device::synchronize_stream`], or the
    ///   runtime's own wait), `self` (or another holder of its memory) stays alive and nobody
    ///   writes its memory, and the returned tensor's memory is neither read nor written, nor is
    ///   it dropped.
    pub unsafe fn copy_to_async(&self, device: Device, stream: Stream) -> Result<Tensor> {
        // SAFETY: src is borrowed; out/err valid for writes; the stream is the caller's promise.
        made_by(|out, err| unsafe {
            ffi::dlb_tensor_copy_async(self.raw(), device.into(), stream.as_raw(), out, err)
        })
    }

    /// Copies the elements of `self` into `dst`, which has the same shape and dtype (any
    /// strides, any devices; `dlb_tensor_copy_into`); overlapping memory is handled as if `self`
    /// were copied to a temporary first. Refused for a READ_ONLY `dst` (`DLB_ERR_READ_ONLY`)
    /// and, like [`as_mut_slice`](Tensor::as_mut_slice), while `dst`'s memory is shared with
    /// other tensors (see [`copy_into_aliased`](Tensor::copy_into_aliased)).
    pub fn copy_into(&self, dst: &mut Tensor) -> Result<()> {
        // SAFETY: a NULL stream makes the copy complete when the call returns.
        unsafe { self.copy_into_async(dst, Stream::NULL) }
    }

    /// [`copy_into`](Tensor::copy_into) queued on `stream` (`dlb_tensor_copy_into_async`), with
    /// the same exclusivity and READ_ONLY checks. [`Stream::NULL`] makes it synchronous.
    ///
    /// # Safety
    /// As [`copy_to_async`](Tensor::copy_to_async): a valid `stream`, and until it has been
    /// synchronised both tensors (or other holders of their memory) stay alive, nobody writes
    /// `self`'s memory, and nobody reads or writes `dst`'s.
    pub unsafe fn copy_into_async(&self, dst: &mut Tensor, stream: Stream) -> Result<()> {
        if !dst.is_exclusive() {
            return Err(Error::new(
                status::INVALID_ARGUMENT,
                "destination memory is shared with other tensors (a view, a share or an \
                 import); use the unsafe copy_into_aliased",
            ));
        }
        // SAFETY: an exclusive destination borrowed mutably; the rest is the caller's promise.
        unsafe { self.copy_into_aliased(dst, stream) }
    }

    /// [`copy_into_async`](Tensor::copy_into_async) into memory that other tensors share (e.g.
    /// a slice view), without the exclusivity check. Overlap between `self` and `dst` is
    /// handled by the C library.
    ///
    /// # Safety
    /// As [`copy_into_async`](Tensor::copy_into_async) (with [`Stream::NULL`]: for the duration
    /// of the call), and no other tensor over `dst`'s memory is read or written meanwhile, on
    /// any thread.
    pub unsafe fn copy_into_aliased(&self, dst: &mut Tensor, stream: Stream) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: both tensors are valid; the caller vouches for the stream and for access.
        err.check(unsafe {
            ffi::dlb_tensor_copy_into_async(
                self.raw(),
                dst.raw(),
                stream.as_raw(),
                err.as_mut_ptr(),
            )
        })
    }

    // ------------------------------------------------------------------------------------
    // Exchange with C
    // ------------------------------------------------------------------------------------

    /// Gives up ownership: the returned `DLManagedTensorVersioned` can be handed to any DLPack
    /// consumer, which must call its `deleter` exactly once (from any thread) or pass it to
    /// [`from_raw`](Tensor::from_raw).
    #[inline]
    pub fn into_raw(self) -> *mut ffi::DLManagedTensorVersioned {
        ManuallyDrop::new(self).raw()
    }

    /// Exports as a legacy `DLManagedTensor` for consumers of DLPack < 1.0
    /// (`dlb_tensor_export_legacy`); the consumer calls its deleter exactly once. Refused for
    /// READ_ONLY tensors (the legacy struct cannot say so) and padded sub-byte data.
    ///
    /// A refused export gives the tensor back, open and usable, inside the [`ExportError`]
    /// ([`ExportError::into_tensor`]): as in the C library, a failed export leaves the tensor
    /// with its owner. `?` into a [`dlbridge::Error`](Error) drops (frees) it.
    pub fn into_raw_legacy(self) -> std::result::Result<*mut ffi::DLManagedTensor, ExportError> {
        let mut out = ptr::null_mut();
        let err = ErrorBuf::new();
        // SAFETY: on success src moves into *out (we must not free it); on error we still own
        // it and hand it back in the ExportError.
        match err
            .check(unsafe { ffi::dlb_tensor_export_legacy(self.raw(), &mut out, err.as_mut_ptr()) })
        {
            Ok(()) => {
                std::mem::forget(self);
                Ok(out)
            }
            Err(error) => Err(ExportError {
                error,
                tensor: self,
            }),
        }
    }

    /// Takes ownership of a versioned tensor from any DLPack producer (`dlb_tensor_import`):
    /// checks the major version first, then validates every field. The tensor is consumed in
    /// every case: on error its deleter has already been called exactly once.
    ///
    /// A tensor that comes back from [`into_raw`](Tensor::into_raw) is returned as is, and is
    /// exclusive if it was. A foreign producer's tensor is exclusive (writable by safe code)
    /// only if the producer set IS_COPIED.
    ///
    /// # Safety
    /// `raw` must be NULL (an error) or point to a valid `DLManagedTensorVersioned` the caller
    /// owns and does not use again; its deleter may be called from any thread. While the
    /// returned tensor (or any view or share of it) lives, the memory it describes must stay
    /// valid, host memory read through it must be initialised, and nobody else may write it
    /// (unless the caller only uses the `unsafe` `*_aliased` accessors and orders accesses).
    pub unsafe fn from_raw(raw: *mut ffi::DLManagedTensorVersioned) -> Result<Tensor> {
        // SAFETY: forwarded from the caller; the C library consumes `raw` in every case.
        made_by(|out, err| unsafe { ffi::dlb_tensor_import(raw, out, err) })
    }

    /// Takes ownership of a legacy `DLManagedTensor` (`dlb_tensor_import_legacy`); consumed in
    /// every case, like [`from_raw`](Tensor::from_raw). The result carries no flags and is never
    /// exclusive.
    ///
    /// # Safety
    /// As [`from_raw`](Tensor::from_raw), for a `DLManagedTensor`.
    pub unsafe fn from_raw_legacy(raw: *mut ffi::DLManagedTensor) -> Result<Tensor> {
        // SAFETY: forwarded; consumed in every case.
        made_by(|out, err| unsafe { ffi::dlb_tensor_import_legacy(raw, out, err) })
    }
}

/// A refused export ([`Tensor::into_raw_legacy`]): the error, and the tensor, still owned by the
/// caller and usable, as the C library leaves it on error. Get it back with
/// [`into_tensor`](ExportError::into_tensor) or [`into_parts`](ExportError::into_parts);
/// dropping the `ExportError` (or converting it into an [`Error`] with `?`) frees it, once.
pub struct ExportError {
    error: Error,
    tensor: Tensor,
}

impl ExportError {
    /// Why the export was refused.
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The tensor that was not exported, still open.
    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    /// Gives the tensor back (the error is dropped).
    pub fn into_tensor(self) -> Tensor {
        self.tensor
    }

    /// The error and the tensor.
    pub fn into_parts(self) -> (Error, Tensor) {
        (self.error, self.tensor)
    }
}

impl From<ExportError> for Error {
    /// Keeps the error; the tensor is dropped (freed).
    fn from(e: ExportError) -> Error {
        e.error
    }
}

impl fmt::Debug for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExportError")
            .field("error", &self.error)
            .field("tensor", &self.tensor)
            .finish()
    }
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl std::error::Error for ExportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// The shape or strides array of a dlbridge tensor as a slice. The C library guarantees
/// non-NULL arrays of ndim values when ndim > 0 (dlbridge.h, "Tensor lifecycle"), owned by the
/// tensor and immutable while it lives; for ndim 0 the pointer may be NULL, which a slice may
/// not hold.
#[inline(always)]
unsafe fn dims<'a>(p: *const i64, ndim: i32) -> &'a [i64] {
    if ndim <= 0 {
        return &[];
    }
    // SAFETY: the caller's tensor; the guarantee above.
    unsafe { std::slice::from_raw_parts(p, ndim as usize) }
}

fn check_len(len: usize, shape: &[i64]) -> Result<()> {
    let n = element_count(shape)?;
    if n != len {
        return Err(Error::new(
            status::INVALID_ARGUMENT,
            format!("shape {shape:?} holds {n} elements but the data has {len}"),
        ));
    }
    Ok(())
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
