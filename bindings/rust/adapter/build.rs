//! What Meson builds for the adapter, named in the environment:
//! - DLPC_CONTRACT_RS: the conformance contract's constants and the layout assertions of the
//!   hand-mirrored dlpc structs, printed by contract_layout.c (a Meson executable, compiled with
//!   the project's warnings): a mirror that drifts from dlpack_conformance.h fails this build.
//! - INTEROP_RUNNER_LIB: the interop matrix's C runner, linked into the host program.
use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DLPC_CONTRACT_RS");
    println!("cargo:rerun-if-env-changed=INTEROP_RUNNER_LIB");
    let contract = env::var("DLPC_CONTRACT_RS")
        .expect("DLPC_CONTRACT_RS: build the adapter through Meson (bindings/rust/adapter/meson.build)");
    println!("cargo:rerun-if-changed={contract}");
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    fs::copy(&contract, out.join("contract.rs")).expect("copy the contract");
    let runner = env::var("INTEROP_RUNNER_LIB")
        .expect("INTEROP_RUNNER_LIB: build the adapter through Meson");
    println!("cargo:rerun-if-changed={runner}");
    println!("cargo:rustc-link-arg-bins={runner}");
    println!("cargo:rustc-link-arg-bins=-ldl");
}
