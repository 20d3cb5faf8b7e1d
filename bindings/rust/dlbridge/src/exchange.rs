//! Exchange with other DLPack code: export (`into_raw`, `into_raw_legacy`) and import
//! (`from_raw`, `from_raw_legacy`).

use crate::error::{Error, ErrorBuf, Result};
use crate::tensor::made_by;
use crate::Tensor;
use dlbridge_sys as ffi;
use std::fmt;
use std::mem::ManuallyDrop;
use std::ptr;

impl Tensor {
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
