//! `dlbridge-sys` finds the C library; its `cargo:rustc-link-arg` rpath only reaches that
//! package's own targets. This script turns the directory it publishes (`DEP_DLBRIDGE_LIB_DIR`)
//! into an rpath for this package's tests, examples and binaries, so they run without
//! `LD_LIBRARY_PATH`.
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
