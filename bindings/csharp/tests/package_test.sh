#!/bin/sh
# The packaging test: packs DLBridge.nupkg from what Meson built, puts it in a local folder feed,
# installs it from that feed into a fresh folder with nuget, builds a consumer with mcs against
# the installed package's lib/ and runs it on Mono with the package's native library (from
# runtimes/linux-x64/native/) next to the exe: no LD_LIBRARY_PATH, nothing from the source or
# build tree. With DLBRIDGE_DOTNET naming a `dotnet` host of a .NET Core runtime (see
# docs/csharp.md), the same consumer also runs on CoreCLR, the package resolved by the host's
# own probing of the NuGet-cache layout (deps.json with runtime and native runtimeTargets).
# usage: package_test.sh SOURCE_DIR BUILD_DIR NUGET MCS MONO
set -eu
src="$1" build="$2" nuget="$3" mcs="$4" mono="$5"
version=$(sed -n "s/^  version: '\([^']*\)'.*/\1/p" "$src/../../meson.build" | head -n 1)
work=$(mktemp -d "${TMPDIR:-/tmp}/dlbridge-nupkg.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset LD_LIBRARY_PATH MONO_PATH
export HOME="$work/home" # nuget's caches and config: none of the user's
mkdir -p "$HOME" "$work/stage" "$work/feed" "$work/packages" "$work/app"

# 1. Pack from a staging folder (nuget 2.8.7: relative src paths, existing output folder).
cp "$build/DLBridge.dll" "$build/DLBridge.xml" "$build/libdlbridge_csharp.so" "$src/DLBridge.nuspec" "$work/stage/"
(cd "$work/stage" && "$nuget" pack DLBridge.nuspec -BasePath . -Properties "version=$version" \
   -OutputDirectory "$work/feed" -NonInteractive) >"$work/pack.log" 2>&1 || { cat "$work/pack.log"; exit 1; }
nupkg="$work/feed/DLBridge.$version.nupkg"
test -f "$nupkg"
echo "packed $(basename "$nupkg"):"
python3 -c "import sys, zipfile; [print('  ' + n) for n in sorted(zipfile.ZipFile(sys.argv[1]).namelist()) if not n.startswith(('_rels', 'package/', '[Content'))]" "$nupkg"

# 2. Install from the local feed only.
"$nuget" install DLBridge -Version "$version" -Source "$work/feed" -OutputDirectory "$work/packages" \
  -NonInteractive >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
pkg="$work/packages/DLBridge.$version"
test -f "$pkg/lib/net45/DLBridge.dll"
test -f "$pkg/runtimes/linux-x64/native/libdlbridge_csharp.so"
if ldd "$pkg/runtimes/linux-x64/native/libdlbridge_csharp.so" | grep -E "not found|$build"; then
  echo "the packaged native library depends on the build tree"
  exit 1
fi

# 3. Build the consumer against the package, copy the package's files next to it, run it.
cp "$src/tests/consumer/Consumer.cs" "$work/app/"
(cd "$work/app" && "$mcs" -nologo -r:"$pkg/lib/net45/DLBridge.dll" -out:Consumer.exe Consumer.cs)
cp "$pkg/lib/net45/DLBridge.dll" "$pkg/runtimes/linux-x64/native/libdlbridge_csharp.so" "$work/app/"
echo "mono: $("$mono" --version | head -n 1)"
(cd "$work/app" && "$mono" Consumer.exe)

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
