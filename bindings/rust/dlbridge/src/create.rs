//! Making tensors: allocation, copies of Rust data, and wrapping memory without copying.

use crate::error::{status, Error, ErrorBuf, Result};
use crate::tensor::{count_of, made_by};
use crate::{DType, Device, Element, Tensor};
use dlbridge_sys as ffi;
use std::ffi::{c_void, CStr};
use std::mem::size_of;
use std::ptr;

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
    /// DLPack flags to carry ([`flags`](crate::flags)).
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

impl Tensor {
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

    pub(crate) fn allocate_uninit(
        device: Device,
        dtype: DType,
        shape: &[i64],
        strides: Option<&[i64]>,
        flags: u64,
    ) -> Result<Tensor> {
        let ndim = count_of(shape.len());
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
        let mut t = Tensor::allocate_uninit(Device::CPU, T::DTYPE, shape, None, 0)?;
        // A fresh allocation is exclusive: the copy (and its check that `data` holds exactly
        // the tensor's elements, with the C library's message) is the core's.
        t.copy_from_slice(data)?;
        Ok(t)
    }

    /// Takes ownership of a `Vec` **without copying**: the tensor's memory is the vector's
    /// buffer, released (by dropping the vector) exactly once when the last tensor over it is
    /// freed, on whichever thread that happens, including a foreign consumer's thread after
    /// [`into_raw`](Tensor::into_raw). The shape must not reach beyond the vector's elements
    /// (`dlb_tensor_wrap_buffer`'s check and message). On error the vector is dropped here, once.
    ///
    /// ```
    /// let t = dlbridge::Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
    /// assert_eq!(t.as_slice::<f32>()?, &[1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn from_vec<T: Element>(mut data: Vec<T>, shape: &[i64]) -> Result<Tensor> {
        let ptr = data.as_mut_ptr().cast::<c_void>();
        let bytes = (data.len() * size_of::<T>()) as u64;
        let parts = RawParts::new(ptr, Device::CPU, T::DTYPE, shape);
        // SAFETY: the C library checks that `parts` stays inside the vector's `bytes`; the Vec
        // owns them and moves into the tensor (its heap buffer does not move when it is boxed).
        unsafe { Tensor::wrap_owned(&parts, bytes, Box::new(data)) }
    }

    /// Takes ownership of a boxed slice without copying (see [`from_vec`](Tensor::from_vec)).
    pub fn from_boxed_slice<T: Element>(data: Box<[T]>, shape: &[i64]) -> Result<Tensor> {
        // Vec::from(Box<[T]>) reuses the allocation (capacity == length): no copy.
        Tensor::from_vec(Vec::from(data), shape)
    }

    /// Wraps `parts`, handing `owner` to the tensor: dropped exactly once when the last reference
    /// goes, or right here if the wrap fails (the C library does not call release on error).
    unsafe fn wrap_owned<B: Send + 'static>(
        parts: &RawParts<'_>,
        buffer_size: u64,
        owner: Box<B>,
    ) -> Result<Tensor> {
        let ctx = Box::into_raw(owner).cast::<c_void>();
        // SAFETY: forwarded from the caller; drop_boxed::<B> matches ctx's type.
        let result =
            unsafe { Tensor::wrap_ffi(parts, Some(buffer_size), Some(drop_boxed::<B>), ctx) };
        if result.is_err() {
            // SAFETY: the wrap failed, so release was not and will not be called: we still own it.
            drop(unsafe { Box::from_raw(ctx.cast::<B>()) });
        }
        result
    }

    /// `dlb_tensor_wrap_buffer` when the extent of the memory is known (`buffer_size`), else
    /// `dlb_tensor_wrap` (the caller vouches for it).
    unsafe fn wrap_ffi(
        parts: &RawParts<'_>,
        buffer_size: Option<u64>,
        release: ffi::dlb_release_fn,
        ctx: *mut c_void,
    ) -> Result<Tensor> {
        let ndim = count_of(parts.shape.len());
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
            match buffer_size {
                Some(size) => {
                    ffi::dlb_tensor_wrap_buffer(&desc, size, parts.flags, release, ctx, out, err)
                }
                None => ffi::dlb_tensor_wrap(&desc, parts.flags, release, ctx, out, err),
            }
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
    ///   exclusive). For read-only memory, pass [`flags::READ_ONLY`](crate::flags::READ_ONLY).
    /// - For host memory read through [`as_slice`](Tensor::as_slice), the bytes must be
    ///   initialised.
    pub unsafe fn wrap_raw<F>(parts: &RawParts<'_>, release: F) -> Result<Tensor>
    where
        F: FnOnce() + Send + 'static,
    {
        let ctx = Box::into_raw(Box::new(release)).cast::<c_void>();
        // SAFETY: forwarded; call_boxed::<F> matches ctx's type.
        let result = unsafe { Tensor::wrap_ffi(parts, None, Some(call_boxed::<F>), ctx) };
        if result.is_err() {
            // SAFETY: not called on error; drop the closure without calling it.
            drop(unsafe { Box::from_raw(ctx.cast::<F>()) });
        }
        result
    }
}
