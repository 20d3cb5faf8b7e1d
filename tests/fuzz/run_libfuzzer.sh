#!/bin/sh
# run_libfuzzer.sh FUZZER SEED_CORPUS WORK_DIR SECONDS
#
# Runs a libFuzzer binary for SECONDS seconds. The checked-in seed corpus is copied into
# WORK_DIR/corpus (in the build directory) first, so the fuzzer only ever writes there; crash
# reproducers go to WORK_DIR/artifacts/. SECONDS = 0 only replays the corpus. A crash, a leak
# or a timeout fails the test.
set -eu

if [ "$#" -ne 4 ]; then
  echo "usage: $0 FUZZER SEED_CORPUS WORK_DIR SECONDS" >&2
  exit 2
fi
fuzzer=$1
seeds=$2
work=$3
seconds=$4

rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/artifacts"
if [ -d "$seeds" ]; then
  for f in "$seeds"/*; do
    if [ -f "$f" ]; then cp "$f" "$work/corpus/"; fi
  done
fi

if [ "$seconds" -gt 0 ]; then
  limit="-max_total_time=$seconds"
else
  limit="-runs=0"
fi

# libFuzzer exits with 77 on a crash by default, which meson reports as SKIP: use 1.
echo "fuzzing with $fuzzer for $seconds s over $work/corpus (seeds from $seeds)"
exec "$fuzzer" "$limit" -error_exitcode=1 -timeout_exitcode=1 -timeout=25 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus"
