#!/bin/sh
# Writes the runtimeconfig.json that lets `dotnet exec` run an mcs-built exe on the shared
# framework of the given dotnet host (the first Microsoft.NETCore.App version it holds), with
# invariant globalization (no libicu needed). Shared by tests/package_test.sh and bench/run_bench.sh.
# usage: dotnet_runtimeconfig.sh DOTNET_HOST OUTPUT_JSON
set -eu
fx=$(ls "$(dirname "$1")/shared/Microsoft.NETCore.App" | head -n 1)
cat >"$2" <<JSON
{ "runtimeOptions": { "framework": { "name": "Microsoft.NETCore.App", "version": "$fx" },
  "configProperties": { "System.Globalization.Invariant": true } } }
JSON
echo "$fx"
