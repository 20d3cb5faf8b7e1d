#!/usr/bin/env bash
# Installs what is missing, builds dlbridge (release) in ./build and runs the demo program.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh build
if [[ ! -f build/build.ninja ]]; then
  meson setup build -Dtests=disabled
fi
ninja -C build
./build/examples/demo
