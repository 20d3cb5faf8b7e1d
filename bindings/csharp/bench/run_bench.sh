#!/bin/sh
# Runs DLBridge.Bench.exe on Mono with its default thread suspension and with
# MONO_THREADS_SUSPEND=preemptive, then, when DLBRIDGE_DOTNET names a `dotnet` host of a .NET
# Core runtime (docs/csharp.md), on CoreCLR: the exe, DLBridge.dll and the two native libraries
# copied into a scratch folder with a runtimeconfig.json for the host's shared framework.
# usage: run_bench.sh CSHARP_BUILD_DIR CORE_BUILD_DIR MONO
set -eu
build="$1" core="$2" mono="$3"
dir=$(cd "$(dirname "$0")/.." && pwd)

echo "== mono, default thread suspension"
(cd "$build" && env -u MONO_THREADS_SUSPEND "$mono" DLBridge.Bench.exe)
echo "== mono, MONO_THREADS_SUSPEND=preemptive"
(cd "$build" && MONO_THREADS_SUSPEND=preemptive "$mono" DLBridge.Bench.exe)

if [ -n "${DLBRIDGE_DOTNET:-}" ] && [ -x "$DLBRIDGE_DOTNET" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/dlbridge-bench.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  cp "$build/DLBridge.Bench.exe" "$build/DLBridge.dll" "$build/libdlbridge_csharp.so" \
     "$build/libdlbridge_cs_bench_helpers.so" "$work/"
  fx=$(sh "$dir/dotnet_runtimeconfig.sh" "$DLBRIDGE_DOTNET" "$work/DLBridge.Bench.runtimeconfig.json")
  echo "== coreclr, Microsoft.NETCore.App $fx"
  # The native libraries from the folder (and the core's shared library in -Ddefault_library=shared
  # builds, whose build-tree rpath the copies lose).
  (cd "$work" && LD_LIBRARY_PATH="$work:$core${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
     "$DLBRIDGE_DOTNET" exec DLBridge.Bench.exe)
else
  echo "== coreclr: skipped (set DLBRIDGE_DOTNET to a dotnet host to run the bench on CoreCLR too)"
fi
