#!/usr/bin/env bash
# Installs the Debian 12 packages dlbridge needs to build and test, skipping those already
# present. Usage: scripts/install-deps.sh [build|test]   (default: test, which is a superset)
set -euo pipefail

profile="${1:-test}"
build_packages=(g++ meson ninja-build pkg-config python3)
# bindgen + libclang-dev: CI regenerates the Rust bindings and diffs them against the committed
# ones. cargo and rustfmt come with the machine's Rust toolchain (rustup), not from Debian.
# swig, maven and the Maven plugins from Debian's repository: the Java binding builds offline.
# ocl-icd-opencl-dev (headers, ICD loader) + pocl-opencl-icd: the OpenCL backend builds against
# the headers and its suite runs for real on PoCL, an OpenCL implementation on the CPU. cmake:
# the consumers suite builds a find_package(dlbridge) project. python3-numpy, python3-torch: the
# frameworks suite exchanges tensors with NumPy and PyTorch through their DLPack entry points. The CUDA
# Toolkit (nvcc) is not in Debian's archive: the CUDA backend is built when nvcc is on PATH.
# golang-go (Go 1.19): the Go binding's suite (swig above regenerates its committed output).
# mono-devel (mcs), nunit-console + libnunit-cil-dev (NUnit 2.6) and nuget: the C# binding, its
# suite and its package test.
test_packages=(doctest-dev libdlpack-dev clang libclang-rt-14-dev valgrind binutils bindgen libclang-dev
  ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd
  swig default-jdk-headless maven junit5 libsurefire-java libmaven-clean-plugin-java
  libmaven-resources-plugin-java libmaven-compiler-plugin-java libmaven-jar-plugin-java
  libmaven-install-plugin-java libmaven-antrun-plugin-java libbuild-helper-maven-plugin-java
  cmake python3-numpy python3-torch golang-go
  mono-devel nunit-console libnunit-cil-dev nuget)

packages=("${build_packages[@]}")
if [[ "$profile" == "test" ]]; then
  packages+=("${test_packages[@]}")
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
