//! Finds the dlbridge C library and tells cargo how to link it.
//!
//! **Static by default.** `libdlbridge.a` is linked together with exactly what
//! `pkg-config --libs dlbridge-static` lists (the C++ runtime, `-lm -pthread -ldl`, and the CUDA
//! Toolkit's static runtime when the library was built with CUDA). A program that only depends
//! on `dlbridge` then runs with `cargo run`: there is no shared library for the loader to find.
//! `DLBRIDGE_STATIC=0` links `libdlbridge.so` instead; the loader must then find it (an
//! installed library after `ldconfig`, `LD_LIBRARY_PATH`, or an rpath of your own). With
//! `DLBRIDGE_STATIC` unset and no static library where one is looked for (an installation of
//! the shared library only), `libdlbridge.so` is linked; `DLBRIDGE_STATIC=1` insists on static.
//!
//! Search order (the first that applies wins):
//! 1. `DLBRIDGE_LIB_DIR`: a directory holding `libdlbridge.a` and/or `libdlbridge.so` (static
//!    when the archive is there, unless `DLBRIDGE_STATIC=0`). What the archive needs besides is
//!    read from a `dlbridge-static.pc` next to it (`<dir>/pkgconfig/`, or a Meson build's
//!    `meson-uninstalled/`), else assumed (C++ runtime, and the CUDA static runtime when the
//!    archive references it). The version comes from `DLBRIDGE_VERSION`, the
//!    `libdlbridge.so.X.Y.Z` file name, or `DLBRIDGE_INCLUDE_DIR/dlbridge/dlbridge_config.h`.
//! 2. `DLBRIDGE_BUILD_DIR`: a Meson build directory of this repository (through the `.pc` files
//!    in its `meson-uninstalled/`).
//! 3. `pkg-config dlbridge-static` (`dlbridge` with `DLBRIDGE_STATIC=0`): the installed library.
//!    The `pkg-config` command (or `$PKG_CONFIG`) is run directly, so `PKG_CONFIG_PATH`,
//!    `PKG_CONFIG_LIBDIR` and `PKG_CONFIG_SYSROOT_DIR` are honoured.
//! 4. The repository's own Meson build `build/`, only when cargo builds inside the repository
//!    (its target directory lies in the clone), never for a project elsewhere that uses the
//!    crate by path.
//!
//! Otherwise the build fails with a message naming the README's "Install and link" section.
//!
//! A dynamic link to a directory outside the loader's path adds an rpath to this package's own
//! targets (`cargo:rustc-link-arg` reaches no other package) and publishes the directory as
//! `DEP_DLBRIDGE_LIB_DIR`, visible only to the build scripts of direct dependents (the
//! `dlbridge` crate uses it for its own tests).

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What to tell cargo.
#[derive(Default)]
struct Link {
    /// `rustc-link-search=native=` directories, in order.
    search: Vec<PathBuf>,
    /// `rustc-link-lib=` values (`static:+verbatim=libdlbridge.a`, `dylib=stdc++`, ...), in order.
    libs: Vec<String>,
    /// Files whose change must rebuild (the archive, the `.pc` file).
    watch: Vec<PathBuf>,
    include_dirs: Vec<PathBuf>,
    version: Option<String>,
    static_link: bool,
    how: String,
}

impl Link {
    fn add_search(&mut self, dir: PathBuf) {
        if !self.search.contains(&dir) {
            self.search.push(dir);
        }
    }

    fn add_lib(&mut self, lib: String) {
        if !self.libs.contains(&lib) {
            self.libs.push(lib);
        }
    }

    /// A library named by file (`-l:libx.a`, `/abs/libx.a`): static for archives, else dylib.
    fn add_verbatim(&mut self, file: &str) {
        let kind = if file.ends_with(".a") {
            "static"
        } else {
            "dylib"
        };
        self.add_lib(format!("{kind}:+verbatim={file}"));
        if let Some(path) = self
            .search
            .iter()
            .map(|d| d.join(file))
            .find(|p| p.exists())
        {
            self.watch.push(path);
        }
    }

    /// Turns linker flags (pkg-config's `--libs` output) into cargo directives: `-L DIR`,
    /// `-lNAME`, `-l:FILE`, absolute library paths, `-pthread`. Anything else cannot travel to
    /// the final link of a dependent through cargo, so it is reported and skipped.
    fn add_flags(&mut self, flags: &str) {
        let mut tokens = flags.split_whitespace();
        while let Some(token) = tokens.next() {
            if let Some(dir) = token.strip_prefix("-L") {
                let dir = if dir.is_empty() {
                    tokens.next().unwrap_or_default()
                } else {
                    dir
                };
                self.add_search(PathBuf::from(dir));
            } else if let Some(file) = token.strip_prefix("-l:") {
                self.add_verbatim(file);
            } else if let Some(name) = token.strip_prefix("-l") {
                let name = if name.is_empty() {
                    tokens.next().unwrap_or_default()
                } else {
                    name
                };
                self.add_lib(format!("dylib={name}"));
            } else if token == "-pthread" {
                self.add_lib("dylib=pthread".to_string());
            } else if token.starts_with('/') && is_library_file(token) {
                let path = Path::new(token);
                if let (Some(dir), Some(file)) = (path.parent(), path.file_name()) {
                    self.add_search(dir.to_path_buf());
                    self.add_verbatim(&file.to_string_lossy());
                }
            } else {
                println!(
                    "cargo:warning=dlbridge-sys: ignoring linker flag `{token}` ({})",
                    self.how
                );
            }
        }
    }
}

fn is_library_file(path: &str) -> bool {
    path.ends_with(".a") || path.ends_with(".so") || path.contains(".so.")
}

fn env_var(name: &str) -> Option<OsString> {
    println!("cargo:rerun-if-env-changed={name}");
    env::var_os(name).filter(|v| !v.is_empty())
}

fn env_path(name: &str) -> Option<PathBuf> {
    env_var(name).map(PathBuf::from)
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

/// Runs pkg-config; `env` replaces variables for this run (`None` removes one).
fn pkg_config(args: &[&str], env: &[(&str, Option<&Path>)]) -> Result<String, String> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let mut cmd = Command::new(&program);
    cmd.args(args);
    for (name, value) in env {
        match value {
            Some(v) => cmd.env(name, v),
            None => cmd.env_remove(name),
        };
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run `{program}`: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            stderr.trim()
        ))
    }
}

/// The library through a pkg-config module: `dlbridge-static`, or `dlbridge` when dynamic.
fn from_pkg_config(
    static_link: bool,
    env: &[(&str, Option<&Path>)],
    how: String,
) -> Result<Link, String> {
    let module = if static_link {
        "dlbridge-static"
    } else {
        "dlbridge"
    };
    let version = pkg_config(&["--modversion", module], env)?;
    let mut link = Link {
        version: Some(version),
        static_link,
        how,
        ..Link::default()
    };
    link.add_flags(&pkg_config(&["--libs", module], env)?);
    link.include_dirs = pkg_config(&["--cflags-only-I", module], env)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|f| f.strip_prefix("-I"))
        .map(PathBuf::from)
        .collect();
    if let Ok(dir) = pkg_config(&["--variable=pcfiledir", module], env) {
        for name in [format!("{module}.pc"), format!("{module}-uninstalled.pc")] {
            let pc = Path::new(&dir).join(name);
            if pc.exists() {
                link.watch.push(pc);
            }
        }
    }
    if static_link && !link.libs.iter().any(|l| l.ends_with("=libdlbridge.a")) {
        return Err(format!("`{module}.pc` does not name libdlbridge.a"));
    }
    Ok(link)
}

/// 1. `DLBRIDGE_LIB_DIR` (+ `DLBRIDGE_STATIC`, `DLBRIDGE_INCLUDE_DIR`, `DLBRIDGE_VERSION`).
fn from_lib_dir(dir: PathBuf, static_choice: Option<bool>) -> Result<Link, String> {
    let archive = dir.join("libdlbridge.a");
    let static_link = static_choice.unwrap_or_else(|| archive.exists());
    let include = env_path("DLBRIDGE_INCLUDE_DIR");
    let version = env_var("DLBRIDGE_VERSION")
        .map(|v| v.to_string_lossy().into_owned())
        .or_else(|| version_from_soname(&dir))
        .or_else(|| {
            include
                .as_ref()
                .and_then(|i| version_from_config(&i.join("dlbridge/dlbridge_config.h")))
        });
    let mut link = Link {
        include_dirs: include.into_iter().collect(),
        version,
        static_link,
        how: format!("DLBRIDGE_LIB_DIR={}", dir.display()),
        ..Link::default()
    };
    link.add_search(dir.clone());
    if !static_link {
        link.add_lib("dylib=dlbridge".to_string());
        link.watch.push(dir.join("libdlbridge.so"));
        return Ok(link);
    }
    if !archive.exists() {
        return Err(format!(
            "DLBRIDGE_LIB_DIR={} holds no libdlbridge.a (set DLBRIDGE_STATIC=0 to link libdlbridge.so)",
            dir.display()
        ));
    }
    link.add_verbatim("libdlbridge.a");
    // What the archive needs besides: from the .pc file that came with it, without its -L
    // (an installed .pc may name a prefix the directory was moved from).
    let pc_files = [
        dir.join("pkgconfig/dlbridge-static.pc"),
        dir.join("../meson-uninstalled/dlbridge-static-uninstalled.pc"),
    ];
    let extras = pc_files.iter().filter(|pc| pc.exists()).find_map(|pc| {
        let pc_str = pc.to_string_lossy();
        let libs = pkg_config(&["--libs", &pc_str], &[("PKG_CONFIG_SYSROOT_DIR", None)]).ok()?;
        link.watch.push(pc.clone());
        Some(
            libs.split_whitespace()
                .filter(|f| !f.starts_with("-L") && *f != "-l:libdlbridge.a")
                .collect::<Vec<_>>()
                .join(" "),
        )
    });
    match extras {
        Some(flags) => link.add_flags(&flags),
        None => {
            // No .pc file: the C++ runtime, plus the CUDA Toolkit's static runtime when the
            // archive was compiled with CUDA (it then references the runtime's registration).
            link.add_flags("-lstdc++ -lm -pthread -ldl");
            let has_cuda = fs::read(&archive)
                .map(|bytes| bytes.windows(23).any(|w| w == b"__cudaRegisterFatBinary"))
                .unwrap_or(false);
            if has_cuda {
                let cuda = env_path("CUDA_PATH")
                    .or_else(|| env_path("CUDA_HOME"))
                    .unwrap_or_else(|| PathBuf::from("/usr/local/cuda"));
                let cudart = cuda.join("lib64/libcudart_static.a");
                link.add_flags(&format!("{} -ldl -lrt", cudart.display()));
            }
        }
    }
    Ok(link)
}

/// 2. and 4.: a Meson build directory of this repository, through its uninstalled .pc files.
fn from_build_dir(dir: &Path, static_link: bool, how: String) -> Result<Link, String> {
    let uninstalled = dir.join("meson-uninstalled");
    if !uninstalled.is_dir() {
        return Err(format!("{} is not a configured Meson build", dir.display()));
    }
    // Only this build's files: no installed dlbridge may answer instead.
    let env = [
        ("PKG_CONFIG_LIBDIR", Some(uninstalled.as_path())),
        ("PKG_CONFIG_PATH", None),
        ("PKG_CONFIG_SYSROOT_DIR", None),
    ];
    let mut link = from_pkg_config(static_link, &env, how)?;
    let core = dir.join("core");
    let lib = core.join(if static_link {
        "libdlbridge.a"
    } else {
        "libdlbridge.so"
    });
    if !lib.exists() {
        return Err(format!(
            "{} is not built yet (run ninja -C {})",
            lib.display(),
            dir.display()
        ));
    }
    link.watch.push(lib);
    if let Some(v) = version_from_config(&core.join("include/dlbridge/dlbridge_config.h")) {
        link.version = Some(v);
    }
    Ok(link)
}

/// The repository root, when this crate sits in a dlbridge clone and cargo builds inside it.
fn in_tree_root() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .canonicalize()
        .ok()?;
    if !root.join("core/include/dlbridge/dlbridge.h").exists() {
        return None;
    }
    let out = PathBuf::from(env::var_os("OUT_DIR")?).canonicalize().ok()?;
    out.starts_with(&root).then_some(root)
}

fn is_system_dir(dir: &Path) -> bool {
    ["/lib", "/lib64", "/usr/lib", "/usr/lib64"]
        .iter()
        .any(|s| dir == Path::new(s) || dir.parent() == Some(Path::new(s)))
}

/// Runs `attempt` for the kind of library asked for; with no choice made (`DLBRIDGE_STATIC`
/// unset), static first, then shared: an installation of the shared library only (Meson's
/// `-Ddefault_library=shared`, which installs no archive and no `dlbridge-static.pc`) is linked
/// dynamically without any variable. Both failures are reported when neither kind is there.
fn either_kind(
    static_choice: Option<bool>,
    attempt: impl Fn(bool) -> Result<Link, String>,
) -> Result<Link, String> {
    match static_choice {
        Some(static_link) => attempt(static_link),
        None => attempt(true).or_else(|static_error| {
            attempt(false).map_err(|shared_error| format!("{static_error}; {shared_error}"))
        }),
    }
}

fn find(static_choice: Option<bool>) -> Result<Link, String> {
    if let Some(dir) = env_path("DLBRIDGE_LIB_DIR") {
        return from_lib_dir(dir, static_choice);
    }
    if let Some(dir) = env_path("DLBRIDGE_BUILD_DIR") {
        return either_kind(static_choice, |static_link| {
            from_build_dir(
                &dir,
                static_link,
                format!("DLBRIDGE_BUILD_DIR={}", dir.display()),
            )
        });
    }
    for name in [
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
    ] {
        println!("cargo:rerun-if-env-changed={name}");
    }
    let mut tried = Vec::new();
    match either_kind(static_choice, |static_link| {
        from_pkg_config(static_link, &[], "pkg-config".to_string())
    }) {
        Ok(link) => return Ok(link),
        Err(e) => tried.push(e),
    }
    match in_tree_root() {
        Some(root) => {
            let build = root.join("build");
            match either_kind(static_choice, |static_link| {
                from_build_dir(
                    &build,
                    static_link,
                    format!("the in-tree build {}", build.display()),
                )
            }) {
                Ok(link) => return Ok(link),
                Err(e) => tried.push(e),
            }
        }
        None => tried.push("not built inside a dlbridge clone: no in-tree build".to_string()),
    }
    Err(tried.join("; "))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // docs.rs and `cargo doc` without the C library: nothing to link.
    if env_var("DOCS_RS").is_some() {
        return;
    }
    let static_choice = env_var("DLBRIDGE_STATIC").map(|v| v != "0");

    let link = find(static_choice).unwrap_or_else(|why| {
        // A plain message and exit code 1: a panic would add a backtrace to read past.
        eprintln!(
            "\n\ndlbridge-sys: cannot find the dlbridge C library ({why}).\n\
             Install it as README.md's \"Install and link\" section says (meson setup build-lib \
             -Dlibrary_only=true; ninja -C build-lib; sudo meson install -C build-lib; sudo \
             ldconfig), so that `pkg-config --libs dlbridge-static` works; with another prefix, \
             set PKG_CONFIG_PATH=<prefix>/lib/x86_64-linux-gnu/pkgconfig. Or point \
             DLBRIDGE_LIB_DIR at a directory with libdlbridge.a (DLBRIDGE_STATIC=0: \
             libdlbridge.so), or DLBRIDGE_BUILD_DIR at a Meson build of dlbridge. See \
             docs/rust.md, \"Using the crate from your project\".\n\n"
        );
        std::process::exit(1)
    });

    for dir in &link.search {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in &link.libs {
        println!("cargo:rustc-link-lib={lib}");
    }
    for file in &link.watch {
        if file.exists() {
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }

    // A shared library outside the loader's path: an rpath for this package's own tests.
    let rpath_dirs: Vec<String> = if link.static_link {
        Vec::new()
    } else {
        link.search
            .iter()
            .filter(|d| !is_system_dir(d))
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

    // Build metadata for the build scripts of direct dependents (DEP_DLBRIDGE_*).
    let version = link.version.unwrap_or_else(|| "unknown".to_string());
    println!("cargo:version={version}");
    println!("cargo:lib_dir={}", rpath_dirs.join(":"));
    println!(
        "cargo:include={}",
        env::join_paths(&link.include_dirs)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    println!("cargo:static={}", u8::from(link.static_link));
    println!("cargo:found_by={}", link.how);
    println!("cargo:rustc-env=DLBRIDGE_SYS_C_VERSION={version}");

    // dlbridge-sys 0.x binds the ABI of dlbridge 0.x with the same minor version.
    let crate_version = env!("CARGO_PKG_VERSION");
    let series = |v: &str| v.split('.').take(2).collect::<Vec<_>>().join(".");
    if version != "unknown" && series(&version) != series(crate_version) {
        println!(
            "cargo:warning=dlbridge-sys {crate_version} was generated for dlbridge {}.x but found \
             dlbridge {version} ({}); regenerate the bindings or point DLBRIDGE_LIB_DIR elsewhere",
            series(crate_version),
            link.how
        );
    }
}
