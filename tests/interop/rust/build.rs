//! The host program links the C runner of the matrix (interop_runner.c + interop_cases.c), which
//! Meson builds as a static library and names in INTEROP_RUNNER_LIB. Without it the host is a
//! stub that says so (the agent library needs nothing from here).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=INTEROP_RUNNER_LIB");
    println!("cargo::rustc-check-cfg=cfg(interop_runner)");
    if let Ok(lib) = std::env::var("INTEROP_RUNNER_LIB") {
        if !lib.is_empty() {
            println!("cargo:rerun-if-changed={lib}");
            println!("cargo:rustc-link-arg-bins={lib}");
            println!("cargo:rustc-link-arg-bins=-ldl");
            println!("cargo:rustc-cfg=interop_runner");
        }
    }
}
