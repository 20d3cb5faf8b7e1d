#!/bin/sh
# The Java binding's documentation check: Maven's javadoc plugin with the pom's configuration
# (every doclint group on, "missing" included, and warnings fail the run), so a public or
# protected item of the jar without a doc comment, or a method without its @param/@return tags,
# fails. The same configuration makes the javadoc jar of `ninja -C build java-install`.
#
# Usage (bindings/java/meson.build registers both in suite java):
#   javadoc_check.sh check   WORKDIR MVN [mvn arguments...]
#       runs `mvn javadoc:javadoc` on the binding's sources; exits with Maven's status.
#   javadoc_check.sh catches-missing WORKDIR MVN [mvn arguments...]
#       copies the pom and src/main/java into WORKDIR, deletes the doc comment of
#       DLBridge.version() there and runs the same check on the copy: passes only when that run
#       fails and names the uncommented method ("DLBridge.java:LINE: warning: no comment").
# The mvn arguments must include -f pointing at the binding's pom.xml.
set -u
mode=$1 work=$2 mvn=$3
shift 3
rm -rf "$work" && mkdir -p "$work" || exit 1

# The pom named by -f in the arguments.
pom=
prev=
for a in "$@"; do
  [ "$prev" = "-f" ] && pom=$a
  prev=$a
done
[ -n "$pom" ] && [ -f "$pom" ] || { echo "javadoc_check.sh: no -f POM among the arguments" >&2; exit 1; }

case "$mode" in
check)
  "$mvn" "$@" -Ddlbridge.build.dir="$work/target" javadoc:javadoc >"$work/maven.log" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ]; then
    cat "$work/maven.log"
    echo "javadoc check: FAILED (Maven exited with $rc; the warnings above name each item)"
    exit "$rc"
  fi
  echo "javadoc check: every public and protected item of org.dlbridge is documented (doclint all)"
  ;;
catches-missing)
  copy=$work/copy
  mkdir -p "$copy/src/main" &&
    cp "$pom" "$copy/pom.xml" &&
    cp -R "$(dirname "$pom")/src/main/java" "$copy/src/main/java" || exit 1
  file=$copy/src/main/java/org/dlbridge/DLBridge.java
  # Delete the /** ... */ block right above `public static String version()`.
  perl -0pi -e 's{[ \t]*/\*\*(?:(?!\*/).)*\*/[ \t]*\n([ \t]*public static String version\(\))}{$1}s' "$file" ||
    exit 1
  if grep -B1 'public static String version()' "$file" | grep -q '\*/'; then
    echo "catches-missing: the comment of DLBridge.version() was not removed" >&2
    exit 1
  fi
  line=$(grep -n 'public static String version()' "$file" | cut -d: -f1)
  # The same arguments, with the copy's pom in place of the original.
  for a in "$@"; do
    if [ "$a" = "$pom" ]; then
      set -- "$@" "$copy/pom.xml"
    else
      set -- "$@" "$a"
    fi
    shift
  done
  "$mvn" "$@" -Ddlbridge.build.dir="$work/target" javadoc:javadoc >"$work/maven.log" 2>&1
  rc=$?
  expected="DLBridge.java:$line: warning: no comment"
  if [ "$rc" -eq 0 ]; then
    cat "$work/maven.log"
    echo "catches-missing: FAILED: the javadoc check passed with DLBridge.version() undocumented"
    exit 1
  fi
  if ! grep -q "$expected" "$work/maven.log"; then
    cat "$work/maven.log"
    echo "catches-missing: FAILED: Maven failed ($rc) without the diagnostic '$expected'"
    exit 1
  fi
  grep "$expected" "$work/maven.log"
  echo "catches-missing: without its comment DLBridge.version() fails the check (Maven exit $rc)"
  ;;
*)
  echo "usage: javadoc_check.sh check|catches-missing WORKDIR MVN [mvn arguments...]" >&2
  exit 2
  ;;
esac
