//! The Rust adapter (see Cargo.toml): one table, the conformance kit's subject with the interop
//! matrix's exchange extension, over the `dlbridge` crate's public API.
#![allow(clippy::missing_safety_doc)]

pub mod conformance;
pub mod interop;

pub use conformance::{dlpack_conformance_subject, Subject};

use std::ffi::c_char;

/// Writes `text` into a C message buffer, cut to fit, NUL-terminated (both contracts report in
/// fixed C buffers).
pub(crate) fn write_message(buf: &mut [c_char], text: &str) {
    if buf.is_empty() {
        return;
    }
    let n = text.len().min(buf.len() - 1);
    for (dst, src) in buf.iter_mut().zip(&text.as_bytes()[..n]) {
        *dst = *src as c_char;
    }
    buf[n] = 0;
}
