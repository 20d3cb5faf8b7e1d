#!/usr/bin/env bash
# Installs the Debian 12 packages dlbridge needs, skipping those already present.
#
#   scripts/install-deps.sh [build|test]         install (default: test, a superset of build)
#   scripts/install-deps.sh --list [build|test]  print the package names, one per line
#
# Every Debian package a build, a test or a documented install command uses is named below, in
# the list of the part that uses it, even where a new machine of this kind has it already (then it
# costs nothing). The test `install-lists` (suite `install`, tests/install/check_install_lists.py)
# fails when a build uses a package that no list here names. Toolchains that do not come from Debian
# are named in the README ("What a new machine must have") and are not installed here: Rust
# (rustup's cargo, rustc, rustfmt), the CUDA Toolkit (nvcc, optional) and Python 3.
set -euo pipefail

# Channels across machines (docs/remote.md): UCX's headers to build them (UCX itself and OpenSSL's
# libcrypto are loaded at run time), and ucx-utils for ucx_perftest, bench_remote's baseline.
remote_packages=(libucx-dev libssl3 ucx-utils)
# The library, the demo and the documented install commands.
build_packages=(g++ meson ninja-build pkg-config python3 "${remote_packages[@]}")

# Everything below is for `scripts/test.sh` (and the bindings' install commands).
# Core tests: doctest; libdlpack-dev is upstream's DLPack 0.6 header, against which suite abi
# checks the legacy ABI; cmake builds the find_package(dlbridge) consumer; binutils gives nm;
# libssl-dev lets suite remote's forging peer compute the key handshake itself; iproute2 (ip)
# makes the network namespaces of its test across a veth pair.
core_test_packages=(doctest-dev libdlpack-dev cmake binutils libssl-dev iproute2)
# The sanitizer, fuzzing, valgrind and TSan passes.
checker_packages=(clang libclang-rt-14-dev valgrind)
# OpenCL: the headers and ICD loader to build against, PoCL to run the suite on the CPU.
opencl_packages=(ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd)
# Rust: bindgen (with libclang, which it opens at run time) regenerates the committed -sys
# bindings for the check that diffs them. cargo and rustc come from rustup (see above).
rust_packages=(bindgen libclang-dev)
# Java: SWIG, a JDK, Maven, and every Maven plugin the builds resolve offline from Debian's
# /usr/share/maven-repo: the JUnit run (surefire, junit5), `ninja java-install` (-Pdist: source
# and javadoc jars) and the consumer project of suite consumers (`mvn exec:java`).
java_packages=(swig default-jdk-headless maven junit5 libsurefire-java
  libmaven-clean-plugin-java libmaven-resources-plugin-java libmaven-compiler-plugin-java
  libmaven-jar-plugin-java libmaven-install-plugin-java libmaven-antrun-plugin-java
  libbuild-helper-maven-plugin-java libmaven-source-plugin-java libmaven-javadoc-plugin-java
  libexec-maven-plugin-java)
# Go 1.19 (swig above regenerates its committed output).
go_packages=(golang-go)
# C#: mcs and mono, NUnit 2.6 and its console runner, nuget for the package test.
csharp_packages=(mono-devel nunit-console libnunit-cil-dev nuget)
# Suite frameworks and the conformance kit's Python subjects: NumPy and PyTorch for Debian's
# /usr/bin/python3 (their DLPack entry points).
frameworks_packages=(python3-numpy python3-torch)
# The benchmark charts of docs/benchmarks.md (bench/charts.py): matplotlib for Debian's
# /usr/bin/python3.
charts_packages=(python3-matplotlib)
# bench_ipc's comparison column: iceoryx 2.0.3, its daemon RouDi (iceoryx) and its C binding
# (headers and library, with the posh and hoofs headers they stand on). Without them bench_ipc
# still builds and says so in that column.
bench_packages=(iceoryx libiceoryx-binding-c-dev libiceoryx-posh-dev libiceoryx-hoofs-dev)

test_packages=("${core_test_packages[@]}" "${checker_packages[@]}" "${opencl_packages[@]}"
  "${rust_packages[@]}" "${java_packages[@]}" "${go_packages[@]}" "${csharp_packages[@]}"
  "${frameworks_packages[@]}" "${charts_packages[@]}" "${bench_packages[@]}")

list_only=0
if [[ "${1:-}" == "--list" ]]; then
  list_only=1
  shift
fi
profile="${1:-test}"
case "$profile" in
  build) packages=("${build_packages[@]}") ;;
  test) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "install-deps: unknown profile '$profile' (build or test)" >&2; exit 2 ;;
esac

if (( list_only )); then
  printf '%s\n' "${packages[@]}"
  exit 0
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
