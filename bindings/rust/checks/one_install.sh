#!/usr/bin/env bash
# Suite rust, test rust-one-install: with two different installs of dlbridge on the machine,
# dlbridge-sys links everything from ONE of them (the first dlbridge.pc pkg-config finds, or the
# one DLBRIDGE_PC names), links what that install has, and says which it used.
#
# The build is installed (meson install --destdir, as tests/consumers does) and turned into
# three installs under the work folder, none in /usr/local:
#   full    libdlbridge.so + libdlbridge.a, dlbridge.pc + dlbridge-static.pc (prefix rewritten)
#   shared  the same without libdlbridge.a and dlbridge-static.pc, what -Ddefault_library=shared
#           installs (prefix rewritten)
#   stage   the DESTDIR tree itself, without the archive, used through PKG_CONFIG_SYSROOT_DIR
#           exactly as the consumers suite's shared-only pass does
# A consumer project (only the `dlbridge` path dependency, no variable of the crate's) prints
# dlbridge_sys::LINKED_FROM and LINKED_STATIC; each case checks them, the build script's own
# output (no directory of the other install in it), and what the program loads (ldd).
# Usage: one_install.sh BUILD_DIR SOURCE_DIR WORK_DIR   (cargo is $CARGO)
set -uo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
work=$3
cargo=${CARGO:-cargo}
# Everything but cargo's target folder is made anew (a second run rebuilds only what changed).
mkdir -p "$work"
rm -rf "$work/stage" "$work/full" "$work/shared" "$work/app"
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

option() {
  meson introspect "$build" --buildoptions |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]))' "$1"
}
prefix=$(option prefix)
libdir=$(option libdir)
stage="$work/stage"
if ! meson install -C "$build" --destdir "$stage" --no-rebuild >"$work/install.log" 2>&1; then
  cat "$work/install.log"
  echo "FAIL: meson install --destdir failed"
  exit 1
fi
if [[ ! -f "$stage$prefix/$libdir/libdlbridge.a" || ! -f "$stage$prefix/$libdir/libdlbridge.so.0" ]]; then
  echo "this build installs only one kind of library (default_library is not 'both'): two different installs need both"
  exit 77
fi

# make_install NAME KEEP_STATIC: a copy of the installed tree with its own prefix.
make_install() {
  local root="$work/$1"
  cp -a "$stage$prefix" "$root"
  if [[ $2 == no-static ]]; then
    rm -f "$root/$libdir/libdlbridge.a" "$root/$libdir/pkgconfig/dlbridge-static.pc"
  fi
  sed -i "s|^prefix=.*|prefix=$root|" "$root/$libdir/pkgconfig/"*.pc
}
make_install full static
make_install shared no-static
full_pc="$work/full/$libdir/pkgconfig"
shared_pc="$work/shared/$libdir/pkgconfig"
# The staged tree as the consumers suite's shared-only pass sees it.
rm -f "$stage$prefix/$libdir/libdlbridge.a" "$stage$prefix/$libdir/pkgconfig/dlbridge-static.pc"
stage_pc="$stage$prefix/$libdir/pkgconfig"

app="$work/app"
mkdir -p "$app/src"
printf '%s\n' '[package]' 'name = "two-installs"' 'version = "0.1.0"' 'edition = "2021"' '' \
  '[dependencies]' "dlbridge = { path = \"$source/bindings/rust/dlbridge\" }" '' '[workspace]' \
  >"$app/Cargo.toml"
cat >"$app/src/main.rs" <<'EOF'
fn main() {
    let t = dlbridge::Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    assert_eq!(t.transpose().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 3.0, 2.0, 4.0]);
    println!("linked from: {}", dlbridge::ffi::LINKED_FROM);
    println!("static: {}", dlbridge::ffi::LINKED_STATIC);
    println!("version: {}", dlbridge::version());
}
EOF
target="$work/target"
bin="$target/debug/two-installs"

# run_case NAME EXPECT_PC EXPECT_STATIC OTHER_INSTALL LIB_PATH [VAR=VALUE...]
#   builds and runs the app with only the given variables (no DLBRIDGE_* of the caller's), and
#   checks: it links through EXPECT_PC, static or not as expected, names nothing of
#   OTHER_INSTALL in the build script's output, and loads libdlbridge.so from LIB_PATH (shared)
#   or no libdlbridge at all (static).
run_case() {
  local name=$1 expect_pc=$2 expect_static=$3 other=$4 lib_path=$5
  shift 5
  echo "--- $name"
  local log="$work/case.log"
  if ! env -i PATH="$PATH" HOME="$HOME" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" \
       RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_TARGET_DIR="$target" CARGO_TERM_COLOR=never \
       LD_LIBRARY_PATH="$lib_path" "$@" \
       sh -c "cd '$app' && '$cargo' run --offline -q" >"$log" 2>&1; then
    cat "$log"
    fail "$name: cargo run failed"
    return
  fi
  cat "$log"
  grep -qF "linked from: $expect_pc " "$log" || fail "$name: not linked through $expect_pc"
  grep -qx "static: $expect_static" "$log" || fail "$name: static is not $expect_static"
  local output
  output=$(ls -t "$target"/debug/build/dlbridge-sys-*/output | head -n 1)
  if grep -F "$other" "$output"; then
    fail "$name: the build script used the other install, $other (above)"
  fi
  grep '^cargo:\(pc\|static\|found_by\)=' "$output" | sed 's/^/    build metadata: /'
  # (ldd's output is read whole: `ldd | grep -q` under pipefail fails when grep exits first.)
  local loads
  loads=$(LD_LIBRARY_PATH="$lib_path" ldd "$bin")
  if [[ $expect_static == true ]]; then
    grep libdlbridge <<<"$loads" && fail "$name: a static link loads libdlbridge.so"
  else
    grep -qF "$lib_path/libdlbridge.so.0" <<<"$loads" ||
      fail "$name: the program does not load $lib_path/libdlbridge.so.0"
  fi
}

# 1. The issue's case: a shared-only install first on PKG_CONFIG_PATH, a full one after it.
run_case "shared-only install first, full install second: shared, from the first" \
  "$shared_pc/dlbridge.pc" false "$work/full" "$work/shared/$libdir" \
  PKG_CONFIG_PATH="$shared_pc:$full_pc"
# 2. The other order: everything from the full install, statically.
run_case "full install first, shared-only second: static, from the first" \
  "$full_pc/dlbridge-static.pc" true "$work/shared" "" \
  PKG_CONFIG_PATH="$full_pc:$shared_pc"
# 3. The consumers suite's shared-only pass with a full install where the system's would be
#    (PKG_CONFIG_LIBDIR stands in for /usr/local's pkg-config folder): the DESTDIR install
#    through PKG_CONFIG_SYSROOT_DIR, no variable of the crate's.
run_case "DESTDIR shared-only install (sysroot) with a full install on the default path" \
  "$stage_pc/dlbridge.pc" false "$work/full" "$stage$prefix/$libdir" \
  PKG_CONFIG_SYSROOT_DIR="$stage" PKG_CONFIG_PATH="$stage_pc" PKG_CONFIG_LIBDIR="$full_pc"
# 4. DLBRIDGE_PC names the second install: it wins over the first pkg-config finds.
run_case "DLBRIDGE_PC names the second install" \
  "$shared_pc/dlbridge.pc" false "$work/full" "$work/shared/$libdir" \
  PKG_CONFIG_PATH="$full_pc:$shared_pc" DLBRIDGE_PC="$shared_pc"
# 5. DLBRIDGE_STATIC=0 on the full install: its own shared library, not the other's.
run_case "DLBRIDGE_STATIC=0 with the full install first" \
  "$full_pc/dlbridge.pc" false "$work/shared" "$work/full/$libdir" \
  PKG_CONFIG_PATH="$full_pc:$shared_pc" DLBRIDGE_STATIC=0

# 6. DLBRIDGE_STATIC=1 with the shared-only install first: an error naming that install, never
#    the archive of the second one.
echo "--- DLBRIDGE_STATIC=1 with the shared-only install first"
if env -i PATH="$PATH" HOME="$HOME" CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}" \
     RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" CARGO_TARGET_DIR="$target" CARGO_TERM_COLOR=never \
     PKG_CONFIG_PATH="$shared_pc:$full_pc" DLBRIDGE_STATIC=1 \
     sh -c "cd '$app' && '$cargo' build --offline -q" >"$work/case.log" 2>&1; then
  fail "DLBRIDGE_STATIC=1 linked although the first install has no archive"
elif grep -q "has no libdlbridge.a" "$work/case.log"; then
  grep "cannot link" "$work/case.log" | sed 's/^/    /'
else
  cat "$work/case.log"
  fail "DLBRIDGE_STATIC=1: not the expected error (the first install has no libdlbridge.a)"
fi

if (( failures )); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "every case linked one install, the expected one, and said which"
