#!/bin/sh
# Runs the Maven build of the Java binding for Meson (`meson test --suite java`).
# Usage: run_maven.sh <maven-goal> [mvn arguments...]
# The full Maven log is kept in $DLBRIDGE_JAVA_LOG; on success the output stops at Surefire's
# summary line ("Tests run: N, Failures: 0, ...") so that it is the last line of the test log.
set -u
log="${DLBRIDGE_JAVA_LOG:-maven.log}"
mkdir -p "$(dirname "$log")"
"${MVN:-mvn}" "$@" >"$log" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  cat "$log"
  exit "$rc"
fi
last=$(grep -n 'Tests run: [0-9]*, Failures: ' "$log" | tail -n 1 | cut -d: -f1)
if [ -z "$last" ]; then
  cat "$log"
  echo "no Surefire summary in the Maven output" >&2
  exit 1
fi
head -n "$last" "$log"
