//! The Rust host of the interop matrix (`interop-host [--self-test] ADAPTER.so...`): the Rust
//! adapter's table runs in this process (the crate's own `dlpack_conformance_subject`), the other
//! adapters are loaded from the libraries named, and the C runner runs every ordered pair with
//! Rust on one side.

/// Runs the matrix over the adapters `args` names; returns the exit status.
pub fn run(args: &[String]) -> i32 {
    use dlbridge_adapter_rust::{dlpack_conformance_subject, Subject};
    use std::ffi::{c_char, c_int, CString};

    extern "C" {
        fn interop_load_subject(path: *const c_char) -> *const Subject;
        fn interop_run_matrix(
            subjects: *const *const Subject,
            count: c_int,
            host: *const c_char,
            must_include: *const c_char,
            sabotage: c_int,
        ) -> c_int;
    }

    let mut subjects = vec![dlpack_conformance_subject()];
    let mut sabotage = 0;
    for arg in args {
        if arg == "--self-test" {
            sabotage = 1;
            continue;
        }
        let path = CString::new(arg.as_str()).expect("a path without NUL");
        // SAFETY: a NUL-terminated path; the runner dlopens it and returns its table or NULL.
        let subject = unsafe { interop_load_subject(path.as_ptr()) };
        if subject.is_null() {
            return 1;
        }
        subjects.push(subject);
    }
    // SAFETY: valid tables for the whole call; static NUL-terminated strings.
    let failed = unsafe {
        interop_run_matrix(
            subjects.as_ptr(),
            subjects.len() as c_int,
            c"rust".as_ptr(),
            c"rust".as_ptr(),
            sabotage,
        )
    };
    if failed == 0 {
        0
    } else {
        1
    }
}
