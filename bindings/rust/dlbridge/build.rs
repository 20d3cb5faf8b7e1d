//! `dlbridge-sys` finds the C library (statically linked by default: nothing to do here). When it
//! links `libdlbridge.so` from a directory outside the loader's path (`DLBRIDGE_STATIC=0`, as the
//! Meson suite does), its `cargo:rustc-link-arg` rpath only reaches that package's own targets.
//! This script turns the directory it publishes (`DEP_DLBRIDGE_LIB_DIR`, visible to direct
//! dependents of `dlbridge-sys` only) into an rpath for this package's own tests, examples and
//! doc-tests. It cannot reach the binaries of a project that depends on `dlbridge`.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DEP_DLBRIDGE_LIB_DIR");
    if let Ok(dirs) = std::env::var("DEP_DLBRIDGE_LIB_DIR") {
        for dir in dirs.split(':').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
    if let Ok(version) = std::env::var("DEP_DLBRIDGE_VERSION") {
        println!("cargo:rustc-env=DLBRIDGE_C_VERSION={version}");
    }
}
