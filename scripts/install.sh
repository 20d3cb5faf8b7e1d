#!/usr/bin/env bash
# Builds the C library in ./build and installs it (shared and static libraries, headers,
# pkg-config files, CMake package, the license) under /usr/local, then refreshes the loader's
# cache.
#
#   bash scripts/install.sh            # as root, or as a user with sudo
#
# The build folder is scripts/build.sh's ./build, the one build folder every language's
# documentation uses, configured as usual (every part whose toolchain is found), but only what
# `meson install` installs is built: the library's own steps, not the tests, benchmarks,
# examples or bindings (`ninja -C build` builds those later, `ninja -C build java-install`, the
# C# package and the Go and Rust steps work from the same folder). Only the package
# installation, `meson install` and `ldconfig` run as root; the build itself runs as the
# calling user.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install: run as root or install sudo" >&2; exit 1; }
  as_root=(sudo)
fi

bash scripts/build.sh build --installed
# --no-rebuild: the build above ran as the user; nothing is rebuilt (or written) as root.
"${as_root[@]}" meson install -C build --no-rebuild
# Meson 1.0 does not refresh the loader's cache itself.
"${as_root[@]}" ldconfig
echo "install: done; pkg-config finds dlbridge $(pkg-config --modversion dlbridge)"
