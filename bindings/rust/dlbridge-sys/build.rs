//! Finds the dlbridge C library and tells cargo how to link it.
//!
//! Search order (the first that applies wins):
//! 1. `DLBRIDGE_LIB_DIR`: a directory holding `libdlbridge.so` (or `libdlbridge.a` with
//!    `DLBRIDGE_STATIC=1`). The version comes from `DLBRIDGE_VERSION`, else from the
//!    `libdlbridge.so.X.Y.Z` file name, else from `DLBRIDGE_INCLUDE_DIR/dlbridge/dlbridge_config.h`.
//! 2. `DLBRIDGE_BUILD_DIR`: a Meson build directory of this repository (the library is in
//!    `core/`, the generated config header in `core/include/dlbridge/`).
//! 3. `pkg-config dlbridge` (the command, run directly; `PKG_CONFIG_PATH` is honoured, so
//!    `PKG_CONFIG_PATH=<builddir>/meson-uninstalled` finds an uninstalled build).
//! 4. The in-tree Meson build `../../../build` (the repository's `build/`).
//!
//! For a shared library in a non-system directory an rpath is added, so tests and examples run
//! without `LD_LIBRARY_PATH`. `cargo:rustc-link-arg` only reaches this package's own targets, so
//! the directory is also published as `DEP_DLBRIDGE_LIB_DIR` for dependents (the `dlbridge`
//! crate's build script turns it into an rpath for its tests, examples and binaries).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Found {
    lib_dirs: Vec<PathBuf>,
    include_dirs: Vec<PathBuf>,
    version: Option<String>,
    how: &'static str,
}

fn env_path(name: &str) -> Option<PathBuf> {
    println!("cargo:rerun-if-env-changed={name}");
    env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `DLB_VERSION_STRING "X.Y.Z"` from a generated dlbridge_config.h.
fn version_from_config(header: &Path) -> Option<String> {
    let text = fs::read_to_string(header).ok()?;
    println!("cargo:rerun-if-changed={}", header.display());
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("#define DLB_VERSION_STRING")?;
        Some(rest.trim().trim_matches('"').to_string())
    })
}

/// X.Y.Z from a `libdlbridge.so.X.Y.Z` file in `dir`.
fn version_from_soname(dir: &Path) -> Option<String> {
    let mut versions: Vec<String> = fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let v = name.strip_prefix("libdlbridge.so.")?;
            (v.split('.').count() == 3).then(|| v.to_string())
        })
        .collect();
    versions.sort();
    versions.pop()
}

fn from_lib_dir() -> Option<Found> {
    let dir = env_path("DLBRIDGE_LIB_DIR")?;
    let include = env_path("DLBRIDGE_INCLUDE_DIR");
    let version = env::var("DLBRIDGE_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| version_from_soname(&dir))
        .or_else(|| {
            include
                .as_ref()
                .and_then(|i| version_from_config(&i.join("dlbridge/dlbridge_config.h")))
        });
    Some(Found {
        lib_dirs: vec![dir],
        include_dirs: include.into_iter().collect(),
        version,
        how: "DLBRIDGE_LIB_DIR",
    })
}

fn from_build_dir(dir: PathBuf, how: &'static str) -> Option<Found> {
    let core = dir.join("core");
    if !core.join("libdlbridge.so").exists() && !core.join("libdlbridge.a").exists() {
        return None;
    }
    let generated_include = core.join("include");
    let source_include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../core/include");
    let version = version_from_config(&generated_include.join("dlbridge/dlbridge_config.h"))
        .or_else(|| version_from_soname(&core));
    Some(Found {
        lib_dirs: vec![core],
        include_dirs: vec![generated_include, source_include],
        version,
        how,
    })
}

fn pkg_config(args: &[&str]) -> Option<String> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let out = Command::new(program)
        .args(args)
        .arg("dlbridge")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn from_pkg_config(static_link: bool) -> Option<Found> {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    let version = pkg_config(&["--modversion"])?;
    let mut libs_args = vec!["--libs-only-L"];
    if static_link {
        libs_args.insert(0, "--static");
    }
    let lib_dirs = pkg_config(&libs_args)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|f| f.strip_prefix("-L"))
        .map(PathBuf::from)
        .collect();
    let include_dirs = pkg_config(&["--cflags-only-I"])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|f| f.strip_prefix("-I"))
        .map(PathBuf::from)
        .collect();
    Some(Found {
        lib_dirs,
        include_dirs,
        version: Some(version),
        how: "pkg-config",
    })
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // docs.rs and `cargo doc` without the C library: nothing to link.
    println!("cargo:rerun-if-env-changed=DOCS_RS");
    if env::var_os("DOCS_RS").is_some() {
        return;
    }
    let static_link = env_path("DLBRIDGE_STATIC").is_some_and(|v| v != Path::new("0"));
    let default_build = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../build");

    let found = from_lib_dir()
        .or_else(|| env_path("DLBRIDGE_BUILD_DIR").and_then(|d| from_build_dir(d, "DLBRIDGE_BUILD_DIR")))
        .or_else(|| from_pkg_config(static_link))
        .or_else(|| from_build_dir(default_build, "the in-tree build ../../../build"))
        .unwrap_or_else(|| {
            panic!(
                "dlbridge-sys: cannot find the dlbridge C library. Set DLBRIDGE_LIB_DIR (a directory \
                 with libdlbridge.so), DLBRIDGE_BUILD_DIR (a Meson build directory), or make \
                 `pkg-config dlbridge` work (PKG_CONFIG_PATH=<builddir>/meson-uninstalled for an \
                 uninstalled build)."
            )
        });

    for dir in &found.lib_dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    if static_link {
        println!("cargo:rustc-link-lib=static=dlbridge");
        // The core is C++ built without exceptions or RTTI, but still uses libstdc++.
        println!("cargo:rustc-link-lib=dylib=stdc++");
        println!("cargo:rustc-link-lib=dylib=pthread");
    } else {
        println!("cargo:rustc-link-lib=dylib=dlbridge");
    }
    for dir in &found.lib_dirs {
        let lib = dir.join(if static_link {
            "libdlbridge.a"
        } else {
            "libdlbridge.so"
        });
        if lib.exists() {
            println!("cargo:rerun-if-changed={}", lib.display());
        }
    }

    // An rpath for this package's own tests (the layout tests) when linking dynamically.
    let rpath_dirs: Vec<String> = if static_link {
        Vec::new()
    } else {
        found
            .lib_dirs
            .iter()
            .map(|d| {
                d.canonicalize()
                    .unwrap_or_else(|_| d.clone())
                    .display()
                    .to_string()
            })
            .collect()
    };
    for dir in &rpath_dirs {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }

    // Build metadata for dependents (DEP_DLBRIDGE_*).
    let version = found.version.unwrap_or_else(|| "unknown".to_string());
    println!("cargo:version={version}");
    println!("cargo:lib_dir={}", rpath_dirs.join(":"));
    println!(
        "cargo:include={}",
        env::join_paths(&found.include_dirs)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    println!("cargo:static={}", u8::from(static_link));
    println!("cargo:found_by={}", found.how);
    println!("cargo:rustc-env=DLBRIDGE_SYS_C_VERSION={version}");

    // dlbridge-sys 0.x binds the ABI of dlbridge 0.x with the same minor version.
    let crate_version = env!("CARGO_PKG_VERSION");
    let series = |v: &str| v.split('.').take(2).collect::<Vec<_>>().join(".");
    if version != "unknown" && series(&version) != series(crate_version) {
        println!(
            "cargo:warning=dlbridge-sys {crate_version} was generated for dlbridge {}.x but found \
             dlbridge {version} ({}); regenerate the bindings or point DLBRIDGE_LIB_DIR elsewhere",
            series(crate_version),
            found.how
        );
    }
}
