#!/bin/sh
# The packaging test: consumes the package the build made (`ninja -C build csharp-nupkg`,
# build/bindings/csharp/DLBridge.<version>.nupkg), exactly that file: nuget installs it from the
# build folder as a folder feed into a fresh folder (and the copy it keeps must be byte-identical);
# check_nupkg.py checks what it holds (the files, LICENSE, the nuspec's metadata, the XML docs);
# a consumer and the package README's program are built with mcs against the installed package's
# lib/ and run on Mono with the package's native library (from runtimes/linux-x64/native/) next
# to the exe: no LD_LIBRARY_PATH, nothing else from the source or build tree. With
# DLBRIDGE_DOTNET naming a `dotnet` host of a .NET Core runtime (see docs/csharp.md), the consumer
# also runs on CoreCLR, the package resolved by the host's own probing of the NuGet-cache layout
# (deps.json with runtime and native runtimeTargets).
# usage: package_test.sh SOURCE_DIR NUPKG NUGET MCS MONO VERSION
set -eu
src="$1" nupkg="$2" nuget="$3" mcs="$4" mono="$5" version="$6"
work=$(mktemp -d "${TMPDIR:-/tmp}/dlbridge-nupkg.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH MONO_PATH
export HOME="$work/home" # nuget's caches and config: none of the user's
mkdir -p "$HOME" "$work/packages" "$work/app" "$work/readme"
test "$(basename "$nupkg")" = "DLBridge.$version.nupkg"
test -f "$nupkg"

# 1. Install from the folder the build wrote the package into, and nowhere else.
"$nuget" install DLBridge -Version "$version" -Source "$(dirname "$nupkg")" -OutputDirectory "$work/packages" \
  -NonInteractive >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
pkg="$work/packages/DLBridge.$version"
cmp "$nupkg" "$pkg/DLBridge.$version.nupkg"
# (not `nuget help` for its version: without a terminal, NuGet 2.8.7's help never returns)
echo "nuget installed $nupkg ($(wc -c <"$nupkg") bytes)"

# 2. What it holds.
python3 "$src/tests/check_nupkg.py" contents "$nupkg" "$pkg" "$src/../../LICENSE" "$version"
build_root=$(cd "$(dirname "$nupkg")/../.." && pwd)
if ldd "$pkg/runtimes/linux-x64/native/libdlbridge_csharp.so" | grep -E "not found|libdlbridge\.so|$build_root"; then
  echo "the packaged native library depends on the build tree or on libdlbridge.so"
  exit 1
fi

# 3. Build the consumer against the package, copy the package's files next to it, run it.
cp "$src/tests/consumer/Consumer.cs" "$work/app/"
(cd "$work/app" && "$mcs" -nologo -r:"$pkg/lib/net45/DLBridge.dll" -out:Consumer.exe Consumer.cs)
cp "$pkg/lib/net45/DLBridge.dll" "$pkg/runtimes/linux-x64/native/libdlbridge_csharp.so" "$work/app/"
echo "mono: $("$mono" --version | head -n 1)"
(cd "$work/app" && "$mono" Consumer.exe)

# The package README's program, against the package, printing what the README says it prints.
python3 "$src/tests/check_nupkg.py" readme "$pkg/README.md" "$work/readme/Readme.cs" "$work/readme/expected.txt"
(cd "$work/readme" && "$mcs" -nologo -r:"$pkg/lib/net45/DLBridge.dll" -out:Readme.exe Readme.cs)
cp "$pkg/lib/net45/DLBridge.dll" "$pkg/runtimes/linux-x64/native/libdlbridge_csharp.so" "$work/readme/"
(cd "$work/readme" && "$mono" Readme.exe >actual.txt)
if ! diff -u "$work/readme/expected.txt" "$work/readme/actual.txt"; then
  echo "the package README's program does not print what the README says"
  exit 1
fi
echo "README.md's program prints what it says ($(wc -l <"$work/readme/expected.txt") lines)"

# 4. CoreCLR, when a runtime was given.
if [ -n "${DLBRIDGE_DOTNET:-}" ] && [ -x "$DLBRIDGE_DOTNET" ]; then
  mkdir -p "$work/core" "$work/probe/dlbridge"
  cp "$work/app/Consumer.exe" "$work/core/"
  # The NuGet-cache layout the host probes: <id lowercase>/<version>/...
  cp -r "$pkg" "$work/probe/dlbridge/$version"
  fx=$(sh "$src/dotnet_runtimeconfig.sh" "$DLBRIDGE_DOTNET" "$work/core/Consumer.runtimeconfig.json")
  cat >"$work/core/Consumer.deps.json" <<JSON
{ "runtimeTarget": { "name": ".NETCoreApp,Version=v2.0" },
  "targets": { ".NETCoreApp,Version=v2.0": {
    "Consumer/1.0.0": { "dependencies": { "DLBridge": "$version" }, "runtime": { "Consumer.exe": {} } },
    "DLBridge/$version": {
      "runtime": { "lib/net45/DLBridge.dll": {} },
      "runtimeTargets": { "runtimes/linux-x64/native/libdlbridge_csharp.so": { "rid": "linux-x64", "assetType": "native" } } } } },
  "libraries": {
    "Consumer/1.0.0": { "type": "project", "serviceable": false, "sha512": "" },
    "DLBridge/$version": { "type": "package", "serviceable": false, "sha512": "", "path": "dlbridge/$version" } } }
JSON
  echo "coreclr: Microsoft.NETCore.App $fx"
  (cd "$work/core" && COREHOST_TRACE=1 "$DLBRIDGE_DOTNET" exec --additionalprobingpath "$work/probe" \
     Consumer.exe 2>"$work/corehost.log")
  # The native library must come from the package, through the host's own probing.
  native_dir="$work/probe/dlbridge/$version/runtimes/linux-x64/native"
  if ! grep -F "$native_dir" "$work/corehost.log" | grep -qi "native"; then
    grep -i "native" "$work/corehost.log" | head -n 20
    echo "the host did not resolve the package's native library"
    exit 1
  fi
  echo "coreclr: libdlbridge_csharp.so resolved from the package's runtimes/linux-x64/native"
else
  echo "coreclr: skipped (set DLBRIDGE_DOTNET to a dotnet host to run the consumer on CoreCLR)"
fi
echo "1 passed, 0 failed"
