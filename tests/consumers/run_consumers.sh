#!/usr/bin/env bash
# Builds and runs projects outside the dlbridge tree against the INSTALLED library, the way the
# README's "Install and link" section tells a user to:
#   C   shared and static, through pkg-config (dlbridge.pc, dlbridge-static.pc)
#   C++ through CMake's find_package(dlbridge), shared and static targets
#   Rust  a new cargo project that only adds the `dlbridge` path dependency: `cargo run`
#         (static, no variables; dynamic when only the shared library is installed) and
#         `DLBRIDGE_STATIC=0 cargo run` (dynamic); skipped without cargo
#   Java  `ninja -C BUILD java-install` into a fresh local repository, then a separate Maven
#         project depending on org.dlbridge:dlbridge: `java -cp` and `mvn exec:java`, each of
#         which must exit within 2 s of main returning; skipped when the build has no Java
#   Go    the module copied to a folder of its own; a separate module requires it through a
#         `replace` directive and builds with plain `go build`, cgo finding the installed library
#         through pkg-config; skipped without go
# Usage: run_consumers.sh BUILD_DIR SOURCE_DIR
# The build is installed with DESTDIR into a temporary folder instead of /usr/local; the only
# differences from a user's steps are the variables that point the tools into that folder
# (PKG_CONFIG_SYSROOT_DIR/PKG_CONFIG_PATH, CMAKE_PREFIX_PATH) and LD_LIBRARY_PATH standing in
# for the ldconfig a system install runs. Ends with "N passed, N failed".
set -uo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/dlbridge-consumers.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

step() {  # step NAME COMMAND...: runs one consumer step, counting it
  local name="$1"
  shift
  if "$@" >"$work/step.log" 2>&1; then
    echo "ok     $name"
    passed=$((passed + 1))
  else
    echo "FAILED $name"
    sed 's/^/    /' "$work/step.log"
    failed=$((failed + 1))
  fi
}

destdir="$work/root"
if ! meson install -C "$build" --destdir "$destdir" --no-rebuild >"$work/install.log" 2>&1; then
  cat "$work/install.log"
  echo "0 passed, 1 failed"
  exit 1
fi
prefix=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')
libdir=$(meson introspect "$build" --buildoptions |
  python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
export PKG_CONFIG_SYSROOT_DIR="$destdir"
export PKG_CONFIG_PATH="$destdir$prefix/$libdir/pkgconfig"
installed_lib="$destdir$prefix/$libdir"
# -Ddefault_library=shared or =static installs one kind of library: the other kind's steps are
# skipped, with the reason.
have_shared=0 have_static=0
[[ -f "$installed_lib/libdlbridge.so.0" ]] && have_shared=1
[[ -f "$PKG_CONFIG_PATH/dlbridge-static.pc" ]] && have_static=1
skip() {  # skip NAME REASON
  echo "skip   $1 ($2)"
}
no_shared="this build installs no shared library (-Ddefault_library=static)"
no_static="this build installs no static library (-Ddefault_library=shared)"

# C, shared: the README's command, then the program runs from the installed library.
cp "$source/examples/quickstart.c" "$work/quickstart.c"
if (( have_shared )); then
  step "c shared (pkg-config dlbridge)" \
    sh -c "cd '$work' && cc quickstart.c -o quickstart_shared \$(pkg-config --cflags --libs dlbridge) \
           && LD_LIBRARY_PATH='$installed_lib' ./quickstart_shared"
  step "c shared program needs only libdlbridge.so.0 and system libraries" \
    sh -c "LD_LIBRARY_PATH='$installed_lib' ldd '$work/quickstart_shared' | grep -q '$installed_lib/libdlbridge.so.0'"
else
  skip "c shared" "$no_shared"
fi

# C, static: nothing but what dlbridge-static.pc says, and no libdlbridge.so at run time.
if (( have_static )); then
  step "c static (pkg-config dlbridge-static)" \
    sh -c "cd '$work' && cc quickstart.c -o quickstart_static \$(pkg-config --cflags --libs dlbridge-static) \
           && ./quickstart_static && ! ldd ./quickstart_static | grep -q libdlbridge"
else
  skip "c static" "$no_static"
fi

# C++ through CMake: find_package(dlbridge) and the two imported targets.
cp -r "$source/tests/consumers/cmake" "$work/cmake"
cp "$source/examples/quickstart.cpp" "$source/examples/quickstart.c" "$work/cmake/"
step "c++ cmake configure (find_package(dlbridge))" \
  cmake -S "$work/cmake" -B "$work/cmake/build" -DCMAKE_PREFIX_PATH="$destdir$prefix" \
    -DCMAKE_BUILD_TYPE=Release
step "c++ cmake build" cmake --build "$work/cmake/build"
if (( have_shared )); then
  step "c++ shared (dlbridge::dlbridge)" \
    env LD_LIBRARY_PATH="$installed_lib" "$work/cmake/build/quickstart_shared"
else
  skip "c++ shared (dlbridge::dlbridge)" "$no_shared"
fi
if (( have_static )); then
  step "c++ static (dlbridge::dlbridge_static)" "$work/cmake/build/quickstart_static"
  step "c static through cmake (dlbridge::dlbridge_static)" "$work/cmake/build/quickstart_c_static"
else
  skip "c++ and c static through cmake (dlbridge::dlbridge_static)" "$no_static"
fi

# Rust: a fresh cargo project whose only addition is the dependency line. dlbridge-sys finds the
# installed library through `pkg-config dlbridge-static` and links it statically, so `cargo run`
# needs no variable. Offline (path dependencies only), CARGO_TARGET_DIR inside $work; CARGO_HOME
# stays the user's: an offline build of path dependencies downloads nothing and only takes a
# lock file there, and the rustup toolchain found through it keeps working.
cargo_cmd=${CARGO:-cargo}
if command -v "$cargo_cmd" >/dev/null 2>&1; then
  rust_app="$work/rust-app"
  mkdir -p "$rust_app/src"
  printf '%s\n' '[package]' 'name = "dlbridge-consumer"' 'version = "0.1.0"' 'edition = "2021"' '' \
    '[dependencies]' "dlbridge = { path = \"$source/bindings/rust/dlbridge\" }" >"$rust_app/Cargo.toml"
  cp "$source/tests/consumers/rust/main.rs" "$rust_app/src/main.rs"
  rust_bin="$work/rust-target/debug/dlbridge-consumer"
  # A user's shell has none of the crate's override variables.
  rust_env="env -u DLBRIDGE_PC -u DLBRIDGE_LIB_DIR -u DLBRIDGE_STATIC \
            CARGO_TARGET_DIR='$work/rust-target' CARGO_TERM_COLOR=never"
  if (( have_static )); then
    step "rust static (cargo run, no variables)" \
      sh -c "cd '$rust_app' && $rust_env '$cargo_cmd' run --offline"
    step "rust static program needs no libdlbridge.so" \
      sh -c "! ldd '$rust_bin' | grep -q libdlbridge"
  elif (( have_shared )); then
    # No archive installed: with no variable, dlbridge-sys links the shared library.
    step "rust, shared-only install (cargo run, no variables)" \
      sh -c "cd '$rust_app' && $rust_env LD_LIBRARY_PATH='$installed_lib' '$cargo_cmd' run --offline"
    step "rust program without variables loads the installed libdlbridge.so.0" \
      sh -c "LD_LIBRARY_PATH='$installed_lib' ldd '$rust_bin' | grep -q '$installed_lib/libdlbridge.so.0'"
  else
    skip "rust static" "$no_static"
  fi
  if (( have_shared )); then
    step "rust dynamic (DLBRIDGE_STATIC=0 cargo run)" \
      sh -c "cd '$rust_app' && $rust_env DLBRIDGE_STATIC=0 LD_LIBRARY_PATH='$installed_lib' \
             '$cargo_cmd' run --offline"
    step "rust dynamic program loads the installed libdlbridge.so.0" \
      sh -c "LD_LIBRARY_PATH='$installed_lib' ldd '$rust_bin' | grep -q '$installed_lib/libdlbridge.so.0'"
  else
    skip "rust dynamic" "$no_shared"
  fi
else
  echo "skip   rust (no cargo on PATH: install Rust to run the Rust consumer steps)"
fi

# Java: the documented install into a local repository (in the build directory instead of
# ~/.m2), then a user's Maven project that depends on the artifact. Maven stays offline against
# Debian's repository through the settings file docs/java.md gives a user on such a machine.
if [[ -f "$build/bindings/java/libdlbridge_jni.so" ]] && command -v mvn >/dev/null 2>&1; then
  # The local repository stays in the build directory after the run: suite install's check
  # maps every artifact in it to the Debian package it came from.
  m2="$build/tests/consumers/m2"
  rm -rf "$m2"
  # The settings file a user writes from docs/java.md ("Without Maven Central"): the block after
  # the consumer-settings marker, exactly as printed there, not the binding's own settings.
  settings="$work/settings.xml"
  sed -n '/<!-- consumer-settings/,/^ *```$/p' "$source/docs/java.md" |
    sed -e '1,2d' -e '$d' -e 's/^   //' >"$settings"
  java_app="$work/java-app"
  cp -r "$source/tests/consumers/java" "$java_app"
  mvn_user="mvn -s '$settings' -B --no-transfer-progress -Dmaven.repo.local='$m2'"
  step "java install (ninja java-install: jar, sources, javadoc)" \
    sh -c "MAVEN_OPTS='-Dmaven.repo.local=$m2' ninja -C '$build' java-install \
           && ls '$m2/org/dlbridge/dlbridge/0.2.0/dlbridge-0.2.0.jar' \
                 '$m2/org/dlbridge/dlbridge/0.2.0/dlbridge-0.2.0-sources.jar' \
                 '$m2/org/dlbridge/dlbridge/0.2.0/dlbridge-0.2.0-javadoc.jar'"
  # Without a single warning: a settings file naming a profile the project lacks, or an
  # unpinned plugin, makes Maven warn.
  step "java consumer builds against org.dlbridge:dlbridge (no Maven warning)" \
    sh -c "cd '$java_app' && $mvn_user package >'$work/mvn-package.log' 2>&1; rc=\$?; \
           cat '$work/mvn-package.log'; [ \$rc -eq 0 ] && ! grep -q WARNING '$work/mvn-package.log'"
  # run_java NAME COMMAND: runs a consumer, which prints "main returns at <ms>"; the JVM must be
  # gone within 2 s of that (no lingering cleaner thread, no exit hook waiting).
  run_java() {
    local out="$work/java-run.log"
    sh -c "cd '$java_app' && $1" >"$out" 2>&1 || { cat "$out"; return 1; }
    local ended returned
    ended=$(date +%s%3N)
    cat "$out"
    grep -q 'column 2: 2.0, 50.0' "$out" && grep -q 'live tensors: 0' "$out" || return 1
    returned=$(sed -n 's/.*main returns at \([0-9]*\).*/\1/p' "$out")
    [[ -n "$returned" ]] || return 1
    echo "exited $((ended - returned)) ms after main returned"
    (( ended - returned <= 2000 ))
  }
  jar="$m2/org/dlbridge/dlbridge/0.2.0/dlbridge-0.2.0.jar"
  step "java consumer runs with java -cp (exits within 2 s)" \
    run_java "java -cp '$jar:target/classes' example.Main"
  step "java consumer runs with mvn exec:java (exits within 2 s)" \
    run_java "$mvn_user -q exec:java"
  step "java leaves no extracted library in the temporary folder" \
    sh -c "mkdir '$work/jtmp' && cd '$java_app' \
           && java -Djava.io.tmpdir='$work/jtmp' -cp '$jar:target/classes' example.Main \
           && [ -z \"\$(ls -A '$work/jtmp')\" ]"
else
  echo "skip   java (this build has no Java binding: install swig, a JDK and maven)"
fi

# Go: a user's shell has none of the in-tree tests' settings (GOPROXY=off stays: no network).
go_cmd=${GO:-go}
if [[ -d "$source/bindings/go" ]] && command -v "$go_cmd" >/dev/null 2>&1 &&
   [[ -f "$installed_lib/libdlbridge.so.0" ]]; then
  go_module="$work/dlbridge-go"
  mkdir -p "$go_module"
  # The module's files: go.mod, the package's Go files and internal/ (SWIG's output with its C).
  (cd "$source/bindings/go" && tar cf - go.mod ./*.go internal) | (cd "$go_module" && tar xf -)
  rm -f "$go_module"/*_test.go
  go_app="$work/go-app"
  mkdir -p "$go_app"
  cp "$source/bindings/go/testdata/consumer/main.go" "$go_app/main.go"
  printf '%s\n' 'module example.com/app' '' 'go 1.19' '' \
    'require github.com/dlbridge/dlbridge/bindings/go v0.0.0' '' \
    "replace github.com/dlbridge/dlbridge/bindings/go => $go_module" >"$go_app/go.mod"
  go_env="env -u GOFLAGS -u LD_LIBRARY_PATH GOCACHE='${GOCACHE:-$work/go-cache}' GOPATH='$work/gopath' GOPROXY=off"
  step "go build (plain, against the installed library)" \
    sh -c "cd '$go_app' && $go_env '$go_cmd' build -o app ."
  step "go vet of the consumer" sh -c "cd '$go_app' && $go_env '$go_cmd' vet ."
  step "go program runs" \
    sh -c "cd '$go_app' && LD_LIBRARY_PATH='$installed_lib' ./app > out.txt && cat out.txt &&
           grep -qx 'float32 \\[3 2\\] \\[1 4 2 5 3 6\\]' out.txt"
  step "go program loads the installed libdlbridge.so.0" \
    sh -c "LD_LIBRARY_PATH='$installed_lib' ldd '$go_app/app' | grep -q '$installed_lib/libdlbridge.so.0'"
else
  echo "skip   go (no go on PATH, or no shared library in this build)"
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
