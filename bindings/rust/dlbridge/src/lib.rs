//! Safe DLPack tensors for Rust, on top of [dlbridge](https://github.com/dlbridge/dlbridge), the
//! reference C library for the DLPack tensor-exchange ABI.
//!
//! A [`Tensor`] owns one `DLManagedTensorVersioned` and calls its deleter exactly once when
//! dropped. Tensors can be made from Rust data (copied, or taken over without copying), viewed
//! (slice, select, reshape, permute, transpose) without copying, shared between threads and
//! exchanged with any C library that speaks DLPack, in both directions, with the versioned
//! (DLPack 1.x) or the legacy (0.x) struct.
//!
//! # Quick start
//!
//! ```
//! use dlbridge::{DType, Device, Slice, Tensor};
//!
//! // Take a Vec over without copying: its buffer becomes the tensor's memory.
//! let t = Tensor::from_vec(vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3])?;
//! assert_eq!(t.dtype(), DType::FLOAT32);
//! assert_eq!(t.device(), Device::CPU);
//! assert_eq!(t.strides(), &[3, 1]);
//!
//! // Zero-copy views are tensors too; they keep the memory alive on their own.
//! let col = t.slice(&[Slice::full(), (1..2).into()])?;  // t[:, 1:2]
//! let tt = t.transpose()?;
//! drop(t);                                               // the views still work
//! assert_eq!(col.to_vec::<f32>()?, vec![1.0, 4.0]);
//! assert_eq!(tt.shape(), &[3, 2]);
//! assert!(tt.as_slice::<f32>().is_err());                // not C-contiguous: no slice
//! assert_eq!(tt.copy_to(Device::CPU)?.as_slice::<f32>()?, &[0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
//!
//! // Fresh tensors are writable through safe code.
//! let mut z = Tensor::zeros::<i32>(&[4])?;
//! z.as_mut_slice::<i32>()?.copy_from_slice(&[1, 2, 3, 4]);
//! # Ok::<(), dlbridge::Error>(())
//! ```
//!
//! # Ownership rules
//!
//! - Every [`Tensor`] owns its handle; dropping it releases it exactly once, on whatever thread
//!   drops it. `Tensor` is `Send` and `Sync`.
//! - [`Tensor::from_vec`] and [`Tensor::from_boxed_slice`] move the buffer into the tensor
//!   without copying; it is dropped (by the thread that frees the last reference, even a C
//!   consumer's thread) exactly once. If the call fails, the vector is dropped before it returns.
//! - Views and [`Tensor::share`] return independent tensors over the same memory: the C library
//!   counts references, and the memory goes when the last of them is dropped, in any order.
//! - Safe code writes only through `&mut Tensor` whose memory no other tensor can see
//!   ([`Tensor::is_exclusive`], the C library's reference count): fresh allocations, `from_*`,
//!   copies, IS_COPIED imports. While a view or share exists, the memory is read-only to safe
//!   code; the `unsafe` `*_aliased` methods write anyway when you order accesses yourself.
//!   READ_ONLY tensors are never written.
//! - [`Tensor::into_raw`] gives the handle away; [`Tensor::from_raw`] takes one from any
//!   producer and consumes it **even when it fails** (the producer's deleter has then run
//!   exactly once, as DLPack requires).
//! - DLPack codes are integers with named constants ([`dtype_code`], [`device_type`],
//!   [`flags`], [`status`]), never enums: a newer producer's codes stay representable.
//!
//! # Exchanging tensors with C
//!
//! ```
//! use dlbridge::{ffi, Tensor};
//!
//! // Export: hand the pointer to any DLPack consumer, which calls its deleter exactly once.
//! let raw: *mut ffi::DLManagedTensorVersioned = Tensor::from_vec(vec![1u8, 2, 3], &[3])?.into_raw();
//! // ... a C consumer reads it, then on any thread:
//! unsafe { ((*raw).deleter.unwrap())(raw) };
//!
//! // Import: take a tensor a C producer made (here dlbridge itself, through the raw API).
//! let mut made = std::ptr::null_mut();
//! let shape = [2i64, 2];
//! let dtype = ffi::DLDataType { code: ffi::kDLFloat as u8, bits: 64, lanes: 1 };
//! let cpu = ffi::DLDevice { device_type: ffi::kDLCPU, device_id: 0 };
//! let status = unsafe {
//!     ffi::dlb_tensor_allocate(cpu, dtype, 2, shape.as_ptr(), std::ptr::null(), 0, &mut made,
//!                              std::ptr::null_mut())
//! };
//! assert_eq!(status, ffi::DLB_OK);
//! let t = unsafe { Tensor::from_raw(made) }?;   // consumed, even if it had failed
//! assert_eq!(t.shape(), &[2, 2]);
//!
//! // Consumers that only speak DLPack 0.x get the legacy struct.
//! let legacy: *mut ffi::DLManagedTensor = t.into_raw_legacy()?;
//! unsafe { ffi::dlb_tensor_free_legacy(legacy) };
//! # Ok::<(), dlbridge::Error>(())
//! ```
//!
//! # Devices and streams
//!
//! Tensors live on any device with a backend ([`Tensor::allocate`]); copies move them
//! ([`Tensor::copy_to`], [`Tensor::copy_into`]), synchronously or queued on a [`Stream`] (the
//! `unsafe` `*_async` forms: the caller keeps both tensors alive and untouched until the stream is
//! synchronised). [`cuda`] and [`opencl`] query the runtimes.
//!
//! ```
//! use dlbridge::{opencl, Device, Tensor};
//!
//! if opencl::device_count().is_ok_and(|n| n > 0) {
//!     let host = Tensor::from_slice(&[1i32, 2, 3], &[3])?;
//!     let on_gpu = host.copy_to(Device::opencl(0))?;          // a cl_mem
//!     assert!(on_gpu.as_slice::<i32>().is_err());              // not host memory
//!     assert_eq!(on_gpu.to_vec::<i32>()?, vec![1, 2, 3]);      // copied back
//! }
//! if let Err(e) = dlbridge::cuda::is_available() {
//!     println!("no CUDA here: {e}");
//! }
//! # Ok::<(), dlbridge::Error>(())
//! ```
//!
//! Errors carry the C library's status and message verbatim:
//!
//! ```
//! let t = dlbridge::Tensor::zeros::<f32>(&[2, 3])?;
//! let e = t.reshape(&[4, 2]).unwrap_err();
//! assert_eq!(e.status(), dlbridge::status::INVALID_ARGUMENT);
//! println!("{e}");  // DLB_ERR_INVALID_ARGUMENT: <the C library's message>
//! # Ok::<(), dlbridge::Error>(())
//! ```
#![deny(missing_docs)]
#![warn(unsafe_op_in_unsafe_fn)]

mod access;
mod create;
mod device;
mod dtype;
mod element;
mod error;
mod exchange;
pub mod ipc;
mod tensor;
mod views;

/// The raw C API (`dlbridge-sys`), for calls this crate does not wrap.
pub use dlbridge_sys as ffi;

// The README's example is a doc-test too (compiled only by `cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use create::RawParts;
pub use device::{cuda, device_type, opencl, Device, Stream};
pub use dtype::{dtype_code, DType};
pub use element::{Bf16, Element, F16};
pub use error::{status, status_name, Error, Result};
pub use exchange::ExportError;
pub use tensor::{flags, Tensor};
pub use views::Slice;

/// The number of dlbridge tensors alive in this process (`dlb_tensor_live_count`), across all
/// threads and languages: for leak checks.
pub fn live_count() -> i64 {
    // SAFETY: no arguments; reads an atomic counter.
    unsafe { ffi::dlb_tensor_live_count() }
}

/// The version of the C library loaded at run time ("0.2.0").
pub fn version() -> &'static str {
    // SAFETY: returns a static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(ffi::dlb_version_string()) }
        .to_str()
        .unwrap_or("?")
}

/// The DLPack version stamped on the tensors this library produces, and the newest one whose
/// every code and flag it understands, as `(major, minor)` pairs.
pub fn dlpack_versions() -> ((u32, u32), (u32, u32)) {
    let mut produced = ffi::DLPackVersion { major: 0, minor: 0 };
    let mut accepted = ffi::DLPackVersion { major: 0, minor: 0 };
    // SAFETY: valid out pointers; NULL is allowed for the library version.
    unsafe { ffi::dlb_get_version(std::ptr::null_mut(), &mut produced, &mut accepted) };
    (
        (produced.major, produced.minor),
        (accepted.major, accepted.minor),
    )
}
