#!/bin/sh
# The pom passes its own validation and carries a published artifact's metadata.
#   1. `mvn validate` (with -Pdist too, so the profile's plugins are checked) succeeds with no
#      warning: a model problem (a plugin without a version, a duplicate declaration, ...) fails.
#   2. tests/PomCheck.java (a single-file Java program) finds name, description, url, licenses,
#      developers and scm complete.
#   3. Both are real: `mvn validate` warns on a copy with a plugin's version removed, and
#      PomCheck fails on a copy without <scm> and <description>, naming both.
# Usage: pom_check.sh WORKDIR JAVA MVN [mvn arguments, including -f POM...]
set -u
work=$1 java=$2 mvn=$3
shift 3
rm -rf "$work" && mkdir -p "$work" || exit 1
pom=
prev=
for a in "$@"; do
  [ "$prev" = "-f" ] && pom=$a
  prev=$a
done
[ -n "$pom" ] && [ -f "$pom" ] || { echo "pom_check.sh: no -f POM among the arguments" >&2; exit 1; }
here=$(dirname "$0")
fail=0

for profiles in "" "-Pdist"; do
  # shellcheck disable=SC2086
  "$mvn" "$@" $profiles -Ddlbridge.build.dir="$work/target" validate >"$work/validate.log" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ] || grep -q '^\[WARNING\]\|^\[ERROR\]' "$work/validate.log"; then
    cat "$work/validate.log"
    echo "mvn $profiles validate: FAILED (exit $rc, or warnings above)"
    fail=1
  else
    echo "mvn $profiles validate: ok, no warnings"
  fi
done

# The validation is real: a copy whose install plugin lost its <version> gets Maven's warning
# (validate resolves no path, so the copy may live in WORKDIR; the same arguments, its pom for -f).
perl -0pe 's{(<artifactId>maven-install-plugin</artifactId>\s*)<version>[^<]*</version>}{$1}' \
  "$pom" >"$work/unpinned-pom.xml" || exit 1
for a in "$@"; do
  if [ "$a" = "$pom" ]; then set -- "$@" "$work/unpinned-pom.xml"; else set -- "$@" "$a"; fi
  shift
done
"$mvn" "$@" -Ddlbridge.build.dir="$work/target" validate >"$work/unpinned.log" 2>&1
if grep -q "^\[WARNING\] 'build.plugins.plugin.version' for org.apache.maven.plugins:maven-install-plugin is missing" \
    "$work/unpinned.log"; then
  echo "mvn validate on a pom with an unpinned plugin: warns as it should"
else
  cat "$work/unpinned.log"
  echo "mvn validate on a pom with an unpinned plugin: FAILED (no warning about the missing version)"
  fail=1
fi

"$java" "$here/PomCheck.java" "$pom" || fail=1

# The same check on a copy without <scm> and <description> must fail and name both.
perl -0pe 's{<scm>.*?</scm>}{}s; s{<description>.*?</description>}{}s' "$pom" >"$work/broken-pom.xml" || exit 1
out=$("$java" "$here/PomCheck.java" "$work/broken-pom.xml")
rc=$?
if [ "$rc" -eq 0 ] || ! echo "$out" | grep -qx 'missing: description' ||
   ! echo "$out" | grep -qx 'missing: scm/url'; then
  echo "$out"
  echo "PomCheck on a pom without scm and description: FAILED (exit $rc; expected 1 and both named)"
  fail=1
else
  echo "PomCheck on a pom without scm and description: fails as it should:"
  echo "$out"
fi
if [ "$fail" -ne 0 ]; then
  echo "pom check: FAILED"
  exit 1
fi
echo "pom check: ok"
