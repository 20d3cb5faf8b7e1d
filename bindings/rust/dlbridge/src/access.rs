//! Element access on the host: slices over contiguous memory, copies of any layout to and from
//! Rust data.

use crate::error::{status, Error, ErrorBuf, Result};
use crate::{Element, Tensor};
use dlbridge_sys as ffi;
use std::ffi::c_void;
use std::mem::{align_of, size_of};
use std::ptr::{self, NonNull};

impl Tensor {
    /// The host address and element count of a C-contiguous, host-readable tensor of `T`'s
    /// dtype, aligned for `T`, whose bytes are valid `T`s: the checks before a slice is handed
    /// out. The dtype, readability, layout (and READ_ONLY when `writable`) are the C library's
    /// one rule for typed access (`dlb_tensor_host_elements`, with its messages); the alignment
    /// of `T` and the validity of its bytes are Rust's own.
    fn host_elements<T: Element>(&self, writable: bool) -> Result<(*mut T, usize)> {
        let access = if writable {
            ffi::DLB_ACCESS_WRITE as u32
        } else {
            ffi::DLB_ACCESS_READ as u32
        };
        let (mut data, mut count) = (ptr::null_mut(), 0i64);
        let err = ErrorBuf::new();
        // SAFETY: a valid tensor; out pointers and error buffer valid for writes.
        err.check(unsafe {
            ffi::dlb_tensor_host_elements(
                self.raw(),
                T::DTYPE.into(),
                access,
                &mut data,
                &mut count,
                err.as_mut_ptr(),
            )
        })?;
        let n = count as usize;
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
        // SAFETY: dlb_tensor_host_elements vouches for n readable elements of T's dtype
        // (size_of::<T>() bytes each, the `Element` promise) at `data`, which live as long as
        // self.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), n * size_of::<T>()) };
        check_valid::<T>(bytes)?;
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

    /// The elements as a mutable slice. First the checks of [`as_slice`](Tensor::as_slice) and
    /// `DLB_ERR_READ_ONLY` for a READ_ONLY tensor (the C library's, with the messages every
    /// language gives: "the tensor is read-only"); then Rust's own aliasing rule:
    /// `DLB_ERR_INVALID_ARGUMENT` while other tensors, or another process, may access the memory
    /// ([`is_exclusive`](Tensor::is_exclusive) is false: a view, a share, an import, shareable
    /// memory sent or received on a channel; see
    /// [`as_mut_slice_aliased`](Tensor::as_mut_slice_aliased)).
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T]> {
        let (data, n) = self.host_elements::<T>(true)?;
        self.check_exclusive("as_mut_slice_aliased")?;
        // SAFETY: n valid, aligned, writable elements of T at data (host_elements refused
        // READ_ONLY); the only holder of the memory, and &mut self excludes every other borrow
        // of this handle, so no holder can appear while the slice lives (see is_exclusive).
        Ok(unsafe { std::slice::from_raw_parts_mut(data, n) })
    }

    /// Rust's rule for a safe write: the tensor is the only holder of its memory. The refusal
    /// names the `unsafe` call that writes anyway, and says when the other holder may be
    /// another process (shareable memory), where Rust and the other languages differ.
    pub(crate) fn check_exclusive(&self, aliased_call: &str) -> Result<()> {
        if self.is_exclusive() {
            return Ok(());
        }
        let message = if self.is_shareable() {
            format!(
                "Rust's aliasing rule refuses a safe write into memory another process may write \
                 (shareable memory sent or received on a channel, or a view or share of it): \
                 copy it (copy_to) or use the unsafe {aliased_call}"
            )
        } else {
            format!(
                "tensor memory is shared with other tensors (a view, a share or an import); \
                 copy it (copy_to) or use the unsafe {aliased_call}"
            )
        };
        Err(Error::new(status::INVALID_ARGUMENT, message))
    }

    /// `check_exclusive` for a write the C library makes itself
    /// (a copy into the tensor): a READ_ONLY tensor goes to the C library, which refuses it with
    /// its own message before it writes anything, the same in every language.
    pub(crate) fn check_exclusive_or_read_only(&self, aliased_call: &str) -> Result<()> {
        if self.is_read_only() {
            return Ok(());
        }
        self.check_exclusive(aliased_call)
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

    /// The element at `index` (one index per dimension, none for a 0-d tensor; negative ones
    /// count from the end), any layout, READ_ONLY tensors too: one C library call
    /// (`dlb_tensor_typed_element`), with its errors and messages, as in every language: another
    /// dtype than `T`'s, memory the host cannot read, an index count other than the number of
    /// dimensions, an index out of range ("index 2 is out of range for axis 0 with extent 2");
    /// and for `bool`, a byte other than 0 and 1.
    ///
    /// ```
    /// let t = dlbridge::Tensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3])?;
    /// assert_eq!(t.transpose()?.get::<i32>(&[2, 1])?, 6);
    /// assert_eq!(t.get::<i32>(&[-1, 0])?, 4);
    /// assert!(t.get::<i32>(&[2, 0]).is_err());
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn get<T: Element>(&self, index: &[i64]) -> Result<T> {
        let mut data = ptr::null_mut();
        let err = ErrorBuf::new();
        // SAFETY: a valid tensor; `index` holds index.len() values; out pointer and error buffer
        // valid for writes.
        err.check(unsafe {
            ffi::dlb_tensor_typed_element(
                self.raw(),
                T::DTYPE.into(),
                ffi::DLB_ACCESS_READ as u32,
                index.len() as i32,
                index.as_ptr(),
                &mut data,
                err.as_mut_ptr(),
            )
        })?;
        // SAFETY: the C library vouches for one readable element of T's dtype (size_of::<T>()
        // bytes, the `Element` promise) at `data`, alive as long as self; it may be unaligned.
        let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size_of::<T>()) };
        check_valid::<T>(bytes)?;
        // SAFETY: size_of::<T>() valid bytes of a T (checked above), read without alignment.
        Ok(unsafe { ptr::read_unaligned(data.cast::<T>()) })
    }

    /// The elements in C order as a new `Vec`, whatever the strides and the device (one copy,
    /// `dlb_tensor_copy_to_host`). Errors: another dtype than `T`'s (the C library's message),
    /// a device without a backend, and for `bool`, bytes other than 0 and 1.
    ///
    /// ```
    /// let t = dlbridge::Tensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3])?;
    /// assert_eq!(t.transpose()?.to_vec::<i32>()?, vec![1, 4, 2, 5, 3, 6]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        let n = self.numel();
        let mut out = Vec::<T>::with_capacity(n);
        let err = ErrorBuf::new();
        // SAFETY: `out` has room for n elements of T, size_of::<T>() bytes each; the C library
        // writes exactly the tensor's n elements (it checks the byte count and the dtype).
        err.check(unsafe {
            ffi::dlb_tensor_copy_to_host(
                self.raw(),
                T::DTYPE.into(),
                out.as_mut_ptr().cast::<c_void>(),
                (n * size_of::<T>()) as u64,
                err.as_mut_ptr(),
            )
        })?;
        // SAFETY: n elements' bytes were written above.
        let bytes =
            unsafe { std::slice::from_raw_parts(out.as_ptr().cast::<u8>(), n * size_of::<T>()) };
        check_valid::<T>(bytes)?;
        // SAFETY: n initialised elements, each a valid T (checked above).
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// Copies `data` (C order) into the tensor, whatever its strides and device
    /// (`dlb_tensor_copy_from_host`): exactly [`numel`](Tensor::numel) elements of the tensor's
    /// dtype into a tensor that is not READ_ONLY, each checked by the C library with its
    /// message ("cannot copy into a read-only tensor"). Like
    /// [`as_mut_slice`](Tensor::as_mut_slice), refused while the memory is shared with other
    /// tensors or another process (see
    /// [`copy_from_slice_aliased`](Tensor::copy_from_slice_aliased)).
    ///
    /// ```
    /// let mut t = dlbridge::Tensor::zeros::<f32>(&[2, 2])?;
    /// t.copy_from_slice(&[1.0f32, 2.0, 3.0, 4.0])?;
    /// assert_eq!(t.as_slice::<f32>()?, &[1.0, 2.0, 3.0, 4.0]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn copy_from_slice<T: Element>(&mut self, data: &[T]) -> Result<()> {
        self.check_exclusive_or_read_only("copy_from_slice_aliased")?;
        // SAFETY: the only holder of the memory, borrowed mutably; or READ_ONLY memory, which
        // the C library refuses to write.
        unsafe { self.copy_from_slice_aliased(data) }
    }

    /// [`copy_from_slice`](Tensor::copy_from_slice) into memory other tensors share (a view or a
    /// share), without the exclusivity check.
    ///
    /// # Safety
    /// While the call runs, no other tensor over the same memory is read or written, on any
    /// thread.
    pub unsafe fn copy_from_slice_aliased<T: Element>(&mut self, data: &[T]) -> Result<()> {
        let err = ErrorBuf::new();
        // SAFETY: `data` holds data.len() elements of T for the call; the C library reads
        // exactly that many bytes (or refuses the count) and copies overlapping memory as if
        // through a temporary; the caller vouches for access to the destination.
        err.check(unsafe {
            ffi::dlb_tensor_copy_from_host(
                self.raw(),
                T::DTYPE.into(),
                data.as_ptr().cast::<c_void>(),
                std::mem::size_of_val(data) as u64,
                err.as_mut_ptr(),
            )
        })
    }
}

/// Rust's own rule for handing out `T`s: their bytes must be valid values of `T` (for `bool`,
/// 0 or 1).
fn check_valid<T: Element>(bytes: &[u8]) -> Result<()> {
    if T::valid_bytes(bytes) {
        return Ok(());
    }
    Err(Error::new(
        status::INVALID_ARGUMENT,
        format!(
            "tensor holds bytes that are not valid {}",
            std::any::type_name::<T>()
        ),
    ))
}
