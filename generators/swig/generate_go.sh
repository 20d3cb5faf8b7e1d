#!/bin/sh
# Regenerates the Go package bindings/go/internal/capi (SWIG's Go and C output for the shared
# interface generators/swig/dlbridge.i) with `swig -go -cgo -intgosize 64`. The output is
# committed so that Go users build with `go build` alone; CI runs this script with --check, which
# regenerates into a temporary folder and fails (exit 1) when anything differs (its last line is
# then "N passed, N failed").
#
#   generators/swig/generate_go.sh           # rewrite bindings/go/internal/capi
#   generators/swig/generate_go.sh --check   # compare only
#
# Needs: swig (4.x) and gofmt (the Go file is formatted with it). No Meson build is needed.
# Environment: SWIG, GOFMT override the tools used.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/bindings/go/internal/capi"
swig=${SWIG:-swig}
gofmt=${GOFMT:-gofmt}

mode=write
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

command -v "$swig" >/dev/null 2>&1 || { echo "error: swig not found (apt-get install swig)" >&2; exit 2; }
command -v "$gofmt" >/dev/null 2>&1 || { echo "error: gofmt not found (apt-get install golang-go)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# Relative paths: SWIG writes the input's path into the output, which must not depend on where
# the checkout lives.
cd "$root"
"$swig" -go -cgo -intgosize 64 -package capi \
  -Igenerators/swig -Igenerators/swig/native -Icore/include \
  -outdir "$tmp" -o "$tmp/dlbridge_wrap.c" generators/swig/dlbridge_go.i
# SWIG's Go module leaves $null (dlbridge.i's "return value after DLB_THROW_STATUS") as is; in
# a Go wrapper that value is _swig_go_result, which DLB_THROW_STATUS has just set.
sed 's/\$null/_swig_go_result/g' "$tmp/dlbridge_wrap.c" > "$tmp/wrap.c"
mv "$tmp/wrap.c" "$tmp/dlbridge_wrap.c"
if grep -n '\$' "$tmp/dlbridge_wrap.c" "$tmp/dlbridge.go"; then
  echo "error: an unexpanded SWIG variable is left in the output" >&2
  exit 1
fi
"$gofmt" -w "$tmp/dlbridge.go"
# The shared native layer the wrapper includes and calls: cgo compiles the package's own C files
# only, and a Go user has no generators/ folder, so the module carries a copy.
cp generators/swig/native/dlbx_pack.h generators/swig/native/dlbx_release.h \
  generators/swig/native/dlbx_release.c "$tmp/"

if [ "$mode" = check ]; then
  status=0
  for f in dlbridge.go dlbridge_wrap.c dlbx_pack.h dlbx_release.h dlbx_release.c; do
    if ! [ -f "$out/$f" ]; then
      echo "error: $out/$f does not exist; run $0" >&2
      status=1
    elif ! diff -u "$out/$f" "$tmp/$f"; then
      echo "error: $out/$f differs from what $0 generates; run it and commit the result" >&2
      status=1
    fi
  done
  # The last line is one CI recognises.
  if [ $status -eq 0 ]; then
    echo "bindings/go/internal/capi is up to date"
    echo "1 passed, 0 failed"
  else
    echo "0 passed, 1 failed"
  fi
  exit $status
fi

mkdir -p "$out"
cp "$tmp/dlbridge.go" "$tmp/dlbridge_wrap.c" "$tmp/dlbx_pack.h" "$tmp/dlbx_release.h" \
  "$tmp/dlbx_release.c" "$out/"
echo "wrote $out: dlbridge.go, dlbridge_wrap.c and the shared native layer"
