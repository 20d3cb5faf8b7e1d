//! Compiles and runs layout.c with the C compiler (`$CC`, else `cc`): it writes the contract's
//! constants and the layout assertions of the hand-mirrored dlpc structs into
//! `$OUT_DIR/contract.rs`, which lib.rs includes. A mirror that drifts from
//! dlpack_conformance.h then fails the build, not a conformance run.
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let here = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let include = here.join("../../include");
    let dlpack_include = here.join("../../../core/include");
    println!("cargo:rerun-if-changed=layout.c");
    println!(
        "cargo:rerun-if-changed={}",
        include.join("dlpack_conformance.h").display()
    );
    println!("cargo:rerun-if-env-changed=CC");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let program = out.join("layout");
    let status = Command::new(&cc)
        .arg("-I")
        .arg(&include)
        .arg("-I")
        .arg(&dlpack_include)
        .arg(here.join("layout.c"))
        .arg("-o")
        .arg(&program)
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(status.success(), "`{cc}` failed to compile layout.c");
    let printed = Command::new(&program)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    assert!(printed.status.success(), "{} failed", program.display());
    fs::write(out.join("contract.rs"), printed.stdout).expect("write contract.rs");
}
