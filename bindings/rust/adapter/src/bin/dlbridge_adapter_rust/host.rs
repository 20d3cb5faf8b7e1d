//! The Rust host of the interop matrix (`interop-host [--self-test] ADAPTER.so...`): the Rust
//! adapter's table runs in this process, the other adapters are loaded from the libraries named,
//! and the C runner runs every ordered pair with Rust on one side.

use dlbridge_adapter_rust::contract::{interop_load_subject, interop_run_matrix};
use std::ffi::CString;

/// Runs the matrix over the adapters `args` names; returns the exit status.
pub fn run(args: &[String]) -> i32 {
    let mut subjects = vec![dlbridge_adapter_rust::dlpack_conformance_subject()];
    for arg in args.iter().filter(|a| *a != "--self-test") {
        let path = CString::new(arg.as_str()).expect("a path without NUL");
        // SAFETY: a NUL-terminated path; the runner dlopens it and returns its table or NULL.
        let subject = unsafe { interop_load_subject(path.as_ptr()) };
        if subject.is_null() {
            return 1;
        }
        subjects.push(subject);
    }
    let sabotage = args.iter().any(|a| a == "--self-test");
    let (count, rust) = (subjects.len() as i32, c"rust".as_ptr());
    // SAFETY: valid tables for the whole call; static NUL-terminated strings.
    let failed =
        unsafe { interop_run_matrix(subjects.as_ptr(), count, rust, rust, sabotage.into()) };
    i32::from(failed != 0)
}
