//! The interop matrix's C runner (INTEROP_RUNNER_LIB, built by Meson) is linked into the host
//! program.
fn main() {
    println!("cargo:rerun-if-env-changed=INTEROP_RUNNER_LIB");
    let runner = std::env::var("INTEROP_RUNNER_LIB")
        .expect("INTEROP_RUNNER_LIB: build the adapter through Meson (meson.build)");
    println!("cargo:rerun-if-changed={runner}");
    println!("cargo:rustc-link-arg-bins={runner}");
    println!("cargo:rustc-link-arg-bins=-ldl");
}
