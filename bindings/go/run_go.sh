#!/bin/sh
# One step of the Go suite, run by Meson from bindings/go/meson.build (which sets GO, GOFMT,
# GOCACHE, GOPATH, PKG_CONFIG_PATH and LD_LIBRARY_PATH). Its last line is one CI recognises:
# go test's own "ok" line, or "N passed, N failed" for the steps that are not go test.
#   run_go.sh vet | gofmt | test | race | fuzz SECONDS | bench | doccheck
set -u
cd "$(dirname "$0")"
go=${GO:-go}
gofmt=${GOFMT:-gofmt}
case "${1:-}" in
  vet)
    # SWIG's generated runtime (internal/capi) converts uintptr to unsafe.Pointer for the strings
    # it returns; every other check runs on it, and every check on the hand-written packages.
    if "$go" vet . ./internal/ctest && "$go" vet -unsafeptr=false ./internal/capi; then
      echo "1 passed, 0 failed"
    else
      echo "0 passed, 1 failed"; exit 1
    fi ;;
  gofmt)
    out=$("$gofmt" -l .)
    if [ -z "$out" ]; then
      echo "1 passed, 0 failed"
    else
      echo "not gofmt-formatted:"; echo "$out"; echo "0 passed, 1 failed"; exit 1
    fi ;;
  test) exec "$go" test -count=1 . ;;
  race) exec "$go" test -race -count=1 . ;;
  fuzz)
    # Bounded fuzzing of import and wrap; the seed corpus also runs in every plain go test.
    exec "$go" test -count=1 -run '^$' -fuzz '^FuzzImportWrap$' -fuzztime "${2:-20}s" . ;;
  bench) exec "$go" test -count=1 -run '^$' -bench . -benchtime 200000x . ;;
  # The documentation check and its teeth alone (doccheck_test.go; suite doccheck).
  doccheck) exec "$go" test -count=1 -run '^TestDocCheck' -v . ;;
  *) echo "usage: $0 vet|gofmt|test|race|fuzz SECONDS|bench|doccheck" >&2; exit 2 ;;
esac
