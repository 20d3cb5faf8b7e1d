#!/usr/bin/env bash
# The Go binding used from outside this repository, as a user does: the C library is installed
# (DESTDIR into a temporary folder), the module is copied to a folder of its own, and a separate
# module requires it through a `replace` directive and builds with plain `go build`, cgo finding
# the installed library through pkg-config. The only differences from a user's steps are the
# variables pointing pkg-config into the DESTDIR (PKG_CONFIG_SYSROOT_DIR/PKG_CONFIG_PATH) and
# LD_LIBRARY_PATH standing in for ldconfig. Usage: consumer.sh BUILD_DIR MODULE_DIR.
# Ends with "N passed, N failed".
set -uo pipefail
build=$(cd "$1" && pwd)
module=$(cd "$2" && pwd)
go=${GO:-go}
# A user's shell: none of the in-tree test's settings (GOPROXY=off stays: there is no network).
unset GOFLAGS LD_LIBRARY_PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/dlbridge-go-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
step() {
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
opt() {
  meson introspect "$build" --buildoptions |
    python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == sys.argv[1]))' "$1"
}
prefix=$(opt prefix)
libdir=$(opt libdir)
export PKG_CONFIG_SYSROOT_DIR="$destdir"
export PKG_CONFIG_PATH="$destdir$prefix/$libdir/pkgconfig"
installed_lib="$destdir$prefix/$libdir"

# The module, on its own (no repository around it): its Go and C sources and go.mod.
mkdir -p "$work/dlbridge-go"
(cd "$module" && tar cf - go.mod ./*.go ./*.c ./*.h internal) | (cd "$work/dlbridge-go" && tar xf -)
rm -f "$work/dlbridge-go"/*_test.go

app="$work/app"
mkdir -p "$app"
cp "$module/testdata/consumer/main.go" "$app/main.go"
cat >"$app/go.mod" <<MOD
module example.com/app

go 1.19

require github.com/dlbridge/dlbridge/bindings/go v0.0.0

replace github.com/dlbridge/dlbridge/bindings/go => $work/dlbridge-go
MOD

step "pkg-config finds the installed dlbridge" pkg-config --exists dlbridge
step "go build (plain, against the installed library)" sh -c "cd '$app' && '$go' build -o app ."
step "go vet of the consumer" sh -c "cd '$app' && '$go' vet ."
step "the program runs" sh -c "cd '$app' && LD_LIBRARY_PATH='$installed_lib' ./app > out.txt && cat out.txt &&
  grep -qx 'float32 \[3 2\] \[1 4 2 5 3 6\]' out.txt"
step "the program loads the installed libdlbridge.so.0" \
  sh -c "LD_LIBRARY_PATH='$installed_lib' ldd '$app/app' | grep -q '$installed_lib/libdlbridge.so.0'"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
