//! Finds the dlbridge C library and tells cargo how to link it.
//!
//! **One install.** Everything (the library, what it needs besides, headers, version) comes from
//! one installation of dlbridge, identified by its pkg-config folder (`<libdir>/pkgconfig`, or
//! a Meson build's `meson-uninstalled/`). Which install, the first rule that applies:
//! 1. `DLBRIDGE_PC`: that install, named by its `dlbridge.pc` file or the folder holding it
//!    (a Meson build's `meson-uninstalled/`, with `dlbridge-uninstalled.pc`, works too).
//! 2. `DLBRIDGE_LIB_DIR`: the install whose library directory this is; the library is linked
//!    from exactly this directory and the `.pc` files beside it (`<dir>/pkgconfig/`, or
//!    `<dir>/../meson-uninstalled/` for a Meson build's `core/`) say what it needs besides.
//!    Without them, only `libdlbridge.so` can be linked (nothing says what the archive needs).
//! 3. Otherwise the `dlbridge.pc` that `pkg-config` finds first (`$PKG_CONFIG` if set;
//!    `PKG_CONFIG_PATH`, `PKG_CONFIG_LIBDIR` and `PKG_CONFIG_SYSROOT_DIR` are honoured).
//!
//! `DLBRIDGE_PC` and `DLBRIDGE_LIB_DIR` together are an error: one install is named, not two.
//!
//! **What that install has.** Static when `dlbridge-static.pc` is in the same folder and the
//! `libdlbridge.a` it names exists: the archive plus exactly what `pkg-config --libs
//! dlbridge-static` lists (the C++ runtime, and the CUDA Toolkit's static runtime when the
//! library was built with CUDA), so the program needs no `libdlbridge.so` at run time. Otherwise
//! shared (`dlbridge.pc`, `libdlbridge.so`). `DLBRIDGE_STATIC=0` insists on the shared library,
//! `DLBRIDGE_STATIC=1` on the archive; neither ever looks at another install.
//!
//! **Which one it used** is printed as build metadata (`cargo:pc=`, `cargo:static=`,
//! `cargo:found_by=`, visible with `cargo build -vv` and as `DEP_DLBRIDGE_*` to the build
//! scripts of direct dependents) and compiled into the crate as `LINKED_FROM` and
//! `LINKED_STATIC`.
//!
//! A dynamic link to a directory outside the loader's path adds an rpath to this package's own
//! targets (`cargo:rustc-link-arg` reaches no other package) and publishes the directory as
//! `DEP_DLBRIDGE_LIB_DIR`.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One installation of dlbridge: its pkg-config files, or a bare library directory.
struct Install {
    /// `dlbridge.pc` (or Meson's `dlbridge-uninstalled.pc`), when there is one.
    shared_pc: Option<PathBuf>,
    /// `dlbridge-static.pc` from the same folder, when there is one.
    static_pc: Option<PathBuf>,
    /// `DLBRIDGE_LIB_DIR`: link from this directory only (the `.pc` files' `-L` are dropped).
    lib_dir: Option<PathBuf>,
    /// How it was chosen, for messages and the build metadata.
    how: String,
}

/// What to tell cargo.
#[derive(Default)]
struct Link {
    search: Vec<PathBuf>,
    libs: Vec<String>,
    /// The directory holding the library that is linked.
    lib_dir: PathBuf,
    /// The `.pc` file the link came from ("" for a bare `DLBRIDGE_LIB_DIR`).
    pc: String,
    include_dirs: Vec<PathBuf>,
    version: Option<String>,
    static_link: bool,
}

fn env_var(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    env::var(name).ok().filter(|v| !v.is_empty())
}

/// Runs pkg-config on one `.pc` file or module.
fn pkg_config(args: &[&str]) -> Result<String, String> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let out = Command::new(&program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `{program}`: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            stderr.trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The install whose pkg-config folder is `dir`.
fn install_in(dir: &Path, lib_dir: Option<PathBuf>, how: String) -> Option<Install> {
    // pkg-config's own preference: a Meson build's `-uninstalled` file first.
    let pick = |base: &str| {
        [format!("{base}-uninstalled.pc"), format!("{base}.pc")]
            .into_iter()
            .map(|name| dir.join(name))
            .find(|p| p.is_file())
    };
    let shared_pc = pick("dlbridge")?;
    Some(Install {
        static_pc: pick("dlbridge-static"),
        shared_pc: Some(shared_pc),
        lib_dir,
        how,
    })
}

fn choose_install() -> Result<Install, String> {
    let named = env_var("DLBRIDGE_PC").map(PathBuf::from);
    let lib_dir = env_var("DLBRIDGE_LIB_DIR").map(PathBuf::from);
    match (named, lib_dir) {
        (Some(_), Some(_)) => Err("DLBRIDGE_PC and DLBRIDGE_LIB_DIR are both set: name one \
                                   install, not two"
            .to_string()),
        (Some(pc), None) => {
            let how = format!("DLBRIDGE_PC={}", pc.display());
            let dir = if pc.is_dir() {
                pc.clone()
            } else {
                pc.parent().unwrap_or(&pc).into()
            };
            install_in(&dir, None, how)
                .ok_or_else(|| format!("DLBRIDGE_PC={}: no dlbridge.pc there", pc.display()))
        }
        (None, Some(dir)) => {
            let how = format!("DLBRIDGE_LIB_DIR={}", dir.display());
            let pc_dirs = [dir.join("pkgconfig"), dir.join("../meson-uninstalled")];
            Ok(pc_dirs
                .iter()
                .find_map(|pc_dir| install_in(pc_dir, Some(dir.clone()), how.clone()))
                .unwrap_or(Install {
                    shared_pc: None,
                    static_pc: None,
                    lib_dir: Some(dir),
                    how,
                }))
        }
        (None, None) => {
            for name in [
                "PKG_CONFIG",
                "PKG_CONFIG_PATH",
                "PKG_CONFIG_LIBDIR",
                "PKG_CONFIG_SYSROOT_DIR",
            ] {
                println!("cargo:rerun-if-env-changed={name}");
            }
            let dir = pkg_config(&["--variable=pcfiledir", "dlbridge"])?;
            install_in(
                Path::new(&dir),
                None,
                "the first dlbridge.pc pkg-config finds".into(),
            )
            .ok_or_else(|| format!("pkg-config names {dir}, which holds no dlbridge.pc"))
        }
    }
}

/// Turns `pkg-config --libs` output into cargo directives.
fn add_flags(link: &mut Link, flags: &str, keep_search: bool) {
    let mut tokens = flags.split_whitespace();
    while let Some(token) = tokens.next() {
        let mut arg = |rest: &str| {
            if rest.is_empty() {
                tokens.next().unwrap_or_default().to_string()
            } else {
                rest.to_string()
            }
        };
        let lib = if let Some(dir) = token.strip_prefix("-L") {
            let dir = PathBuf::from(arg(dir));
            if keep_search && !link.search.contains(&dir) {
                link.search.push(dir);
            }
            continue;
        } else if let Some(file) = token.strip_prefix("-l:") {
            let kind = if file.ends_with(".a") {
                "static"
            } else {
                "dylib"
            };
            format!("{kind}:+verbatim={file}")
        } else if let Some(name) = token.strip_prefix("-l") {
            format!("dylib={}", arg(name))
        } else if token == "-pthread" {
            "dylib=pthread".to_string()
        } else if token.starts_with('/') && (token.ends_with(".a") || token.contains(".so")) {
            // An absolute library path (the CUDA static runtime): its folder plus its name.
            let path = Path::new(token);
            let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
            if !link.search.contains(&dir) {
                link.search.push(dir);
            }
            let file = path.file_name().unwrap_or_default().to_string_lossy();
            let kind = if token.ends_with(".a") {
                "static"
            } else {
                "dylib"
            };
            format!("{kind}:+verbatim={file}")
        } else {
            println!("cargo:warning=dlbridge-sys: ignoring linker flag `{token}`");
            continue;
        };
        if !link.libs.contains(&lib) {
            link.libs.push(lib);
        }
    }
}

/// Where the `.pc` file says its library is: its `-L` folders, `libdir` and `archivedir`.
fn lib_dirs_of(pc: &str) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = pkg_config(&["--libs-only-L", pc])
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|f| f.strip_prefix("-L"))
        .map(PathBuf::from)
        .collect();
    for var in ["--variable=archivedir", "--variable=libdir"] {
        if let Ok(dir) = pkg_config(&[var, pc]) {
            dirs.extend((!dir.is_empty()).then(|| PathBuf::from(dir)));
        }
    }
    dirs
}

/// The link of `install`'s static (`libdlbridge.a`) or shared (`libdlbridge.so`) library.
fn link_kind(install: &Install, static_link: bool) -> Result<Link, String> {
    let (file, pc) = if static_link {
        ("libdlbridge.a", install.static_pc.as_ref())
    } else {
        ("libdlbridge.so", install.shared_pc.as_ref())
    };
    let pc = pc.map(|p| p.to_string_lossy().into_owned());
    let candidates = match (&install.lib_dir, &pc) {
        (Some(dir), _) => vec![dir.clone()],
        (None, Some(pc)) => lib_dirs_of(pc),
        (None, None) => Vec::new(),
    };
    let Some(lib_dir) = candidates.into_iter().find(|d| d.join(file).exists()) else {
        let place = install.shared_pc.as_ref().or(install.lib_dir.as_ref());
        let place = place
            .map(|p| format!(" ({})", p.display()))
            .unwrap_or_default();
        return Err(format!("{}{place} has no {file}", install.how));
    };
    let mut link = Link {
        lib_dir: lib_dir.clone(),
        static_link,
        ..Link::default()
    };
    match &pc {
        Some(pc) => {
            link.pc = pc.clone();
            link.version = pkg_config(&["--modversion", pc]).ok();
            link.include_dirs = pkg_config(&["--cflags-only-I", pc])
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|f| f.strip_prefix("-I"))
                .map(PathBuf::from)
                .collect();
            link.search.push(lib_dir);
            add_flags(
                &mut link,
                &pkg_config(&["--libs", pc])?,
                install.lib_dir.is_none(),
            );
            println!("cargo:rerun-if-changed={pc}");
        }
        None if static_link => {
            return Err(format!(
                "{}: no dlbridge-static.pc beside it says what libdlbridge.a needs",
                install.how
            ));
        }
        None => {
            link.search.push(lib_dir);
            link.libs.push("dylib=dlbridge".to_string());
        }
    }
    println!(
        "cargo:rerun-if-changed={}",
        link.lib_dir.join(file).display()
    );
    Ok(link)
}

fn find() -> Result<(Link, String), String> {
    let install = choose_install()?;
    let link = match env_var("DLBRIDGE_STATIC").as_deref() {
        Some("0") => link_kind(&install, false)?,
        Some(_) => link_kind(&install, true)?,
        None if install.static_pc.is_some() => {
            link_kind(&install, true).or_else(|_| link_kind(&install, false))?
        }
        None => link_kind(&install, false)?,
    };
    Ok((link, install.how))
}

fn is_system_dir(dir: &Path) -> bool {
    ["/lib", "/lib64", "/usr/lib", "/usr/lib64"]
        .iter()
        .any(|s| dir == Path::new(s) || dir.parent() == Some(Path::new(s)))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // docs.rs builds the documentation without the C library: nothing to link.
    if env_var("DOCS_RS").is_some() {
        println!("cargo:rustc-env=DLBRIDGE_SYS_C_VERSION=unknown");
        println!("cargo:rustc-env=DLBRIDGE_SYS_LINKED_FROM=nothing (documentation build)");
        println!("cargo:rustc-env=DLBRIDGE_SYS_STATIC=0");
        return;
    }
    let (link, how) = find().unwrap_or_else(|why| {
        // A plain message and exit code 1: a panic would add a backtrace to read past.
        eprintln!(
            "\n\ndlbridge-sys: cannot link the dlbridge C library: {why}.\n\
             Install it as README.md's \"Install and link\" section says, so that `pkg-config \
             --variable=pcfiledir dlbridge` names its pkg-config folder (with another prefix, \
             put <libdir>/pkgconfig on PKG_CONFIG_PATH), or name one install with \
             DLBRIDGE_PC=<its dlbridge.pc, or a Meson build's meson-uninstalled folder>. \
             See docs/rust.md, \"Using the crate from your project\".\n\n"
        );
        std::process::exit(1)
    });

    for dir in &link.search {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in &link.libs {
        println!("cargo:rustc-link-lib={lib}");
    }
    // A shared library outside the loader's path: an rpath for this package's own tests.
    let rpath = if link.static_link || is_system_dir(&link.lib_dir) {
        String::new()
    } else {
        let dir = link
            .lib_dir
            .canonicalize()
            .unwrap_or_else(|_| link.lib_dir.clone());
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        dir.display().to_string()
    };

    // What was linked: build metadata (DEP_DLBRIDGE_* for direct dependents) and constants.
    let version = link.version.unwrap_or_else(|| "unknown".to_string());
    let kind = if link.static_link { "static" } else { "shared" };
    let from = if link.pc.is_empty() {
        link.lib_dir.display().to_string()
    } else {
        link.pc.clone()
    };
    println!("cargo:version={version}");
    println!("cargo:lib_dir={rpath}");
    println!(
        "cargo:include={}",
        env::join_paths(&link.include_dirs)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    println!("cargo:static={}", u8::from(link.static_link));
    println!("cargo:pc={}", link.pc);
    println!("cargo:found_by={how}");
    println!("cargo:rustc-env=DLBRIDGE_SYS_C_VERSION={version}");
    println!("cargo:rustc-env=DLBRIDGE_SYS_LINKED_FROM={from} ({kind}; {how})");
    println!(
        "cargo:rustc-env=DLBRIDGE_SYS_STATIC={}",
        u8::from(link.static_link)
    );

    // dlbridge-sys 0.x binds the ABI of dlbridge 0.x with the same minor version.
    let crate_version = env!("CARGO_PKG_VERSION");
    let series = |v: &str| v.split('.').take(2).collect::<Vec<_>>().join(".");
    if version != "unknown" && series(&version) != series(crate_version) {
        println!(
            "cargo:warning=dlbridge-sys {crate_version} was generated for dlbridge {}.x but \
             found dlbridge {version} ({from}); install the matching version or name it with \
             DLBRIDGE_PC",
            series(crate_version)
        );
    }
}
