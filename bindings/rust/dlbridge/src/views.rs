//! Zero-copy views, shares, and copies between tensors.

use crate::error::{ErrorBuf, Result};
use crate::tensor::{count_of, made_by};
use crate::{flags, Device, Stream, Tensor};
use dlbridge_sys as ffi;
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo};

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

impl Tensor {
    /// Another reference to the same memory (`dlb_tensor_share`): a new, independent tensor
    /// that can be handed to another owner or thread. The memory goes when the last one does.
    pub fn share(&self) -> Result<Tensor> {
        // SAFETY: the C call only bumps the atomic reference count of `self`.
        made_by(|out, err| unsafe { ffi::dlb_tensor_share(self.raw(), 0, out, err) })
    }

    /// A read-only share (`dlb_tensor_share` with `DLPACK_FLAG_BITMASK_READ_ONLY`): another
    /// reference to the same memory, like [`share`](Tensor::share), whose flags carry
    /// [`flags::READ_ONLY`](crate::flags::READ_ONLY), for handing a tensor to a consumer that must only read it. Every
    /// write through the share is refused with `DLB_ERR_READ_ONLY` ("the tensor is read-only"),
    /// even through the `unsafe` `*_aliased` methods, and any DLPack consumer sees the flag.
    /// `self` keeps its flags; while the share lives, `self` is no longer exclusive, so safe
    /// code cannot write through it either ([`is_exclusive`](Tensor::is_exclusive)).
    ///
    /// ```
    /// use dlbridge::{status, Tensor};
    /// let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2])?;
    /// let mut ro = t.share_read_only()?;
    /// assert!(ro.is_read_only() && !t.is_read_only());
    /// assert_eq!(ro.as_slice::<f32>()?, &[1.0, 2.0]);                  // reading works
    /// let e = ro.as_mut_slice::<f32>().unwrap_err();
    /// assert_eq!(e.status(), status::READ_ONLY);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
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
        let n = count_of(slices.len());
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
        let n = count_of(shape.len());
        // SAFETY: shape holds n values for the call.
        made_by(|out, err| unsafe {
            ffi::dlb_tensor_reshape(self.raw(), n, shape.as_ptr(), out, err)
        })
    }

    /// A view with the dimensions reordered: dimension i of the view is dimension `axes[i]`.
    pub fn permute(&self, axes: &[i32]) -> Result<Tensor> {
        let n = count_of(axes.len());
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
        dst.check_exclusive_or_read_only("copy_into_aliased")?;
        // SAFETY: an exclusive destination borrowed mutably (or a READ_ONLY one, which the C
        // library refuses to write); the rest is the caller's promise.
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
}
