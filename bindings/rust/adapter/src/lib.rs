//! The Rust adapter (see Cargo.toml): one table, the conformance kit's subject with the interop
//! matrix's exchange extension, over the `dlbridge` crate's public API.
#![allow(clippy::missing_safety_doc)]

pub mod conformance;
mod interop;

pub use conformance::dlpack_conformance_subject;

/// The C contract, as bindgen reads it at build time (meson.build): dlpack_conformance.h and the
/// interop runner's functions (tests/interop/interop_runner.h), so that no mirror can drift.
#[allow(non_camel_case_types)]
pub mod contract {
    use dlbridge::ffi::{DLDataType, DLManagedTensor, DLManagedTensorVersioned};
    include!(env!("DLPC_CONTRACT_RS"));
}
