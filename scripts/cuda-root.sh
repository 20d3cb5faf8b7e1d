#!/bin/sh
# Prints the root of the CUDA Toolkit that Meson builds with: $CUDA_PATH or $CUDA_HOME when set,
# otherwise the toolkit of the nvcc on PATH (asked from nvcc itself, so wrapper scripts work).
root="${CUDA_PATH:-${CUDA_HOME:-}}"
if [ -z "$root" ]; then
  top=$(nvcc -v --dryrun -c -x cu /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n 1)
  [ -n "$top" ] && root="$top/.."
fi
[ -n "$root" ] && cd "$root" 2>/dev/null && pwd
