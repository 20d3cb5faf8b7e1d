#!/usr/bin/env bash
# Installs what is missing, builds dlbridge (release) in ./build and runs the demo program.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh build examples/demo
./build/examples/demo
