#!/usr/bin/env bash
# Installs what is missing, configures ./build and builds it: the one build folder that the
# README and every language's documentation use.
#
#   bash scripts/build.sh [build|test] [NINJA_TARGET... | --installed]
#
# build (default) installs what the library needs; test also what every test and binding
# needs (scripts/install-deps.sh). ./build is configured with Meson's defaults: every part whose
# toolchain is found. An existing ./build is reconfigured, so that toolchains installed since
# (say, by `bash scripts/build.sh test` after the demo) are found; options set on it stay.
# With targets, only those are built (the demo builds examples/demo); --installed builds only
# what `meson install` installs (the libraries: scripts/install.sh), and nothing else of the
# project, so the tests, bindings and benchmarks are built later, when asked for.
# Run as root, or as a user with sudo (only the package installation uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-build}"
shift || true
bash scripts/install-deps.sh "$profile"
if [[ -f build/build.ninja ]]; then
  meson setup --reconfigure build >/dev/null
else
  meson setup build >/dev/null
fi
if [[ "${1:-}" == "--installed" ]]; then
  # The targets Meson installs, as ninja names them (paths relative to ./build).
  mapfile -t targets < <(meson introspect build --targets | python3 -c '
import json, os, sys
for target in json.load(sys.stdin):
    if target.get("installed"):
        for name in target["filename"]:
            print(os.path.relpath(name, os.path.abspath("build")))')
  set -- "${targets[@]}"
fi
ninja -C build "$@"
