#!/bin/sh
# check_exports.sh NM LIBRARY
#
# Fails unless every dynamic symbol that LIBRARY defines starts with "dlb_": the shared library
# must export the C API and nothing else (no C++ runtime, no helpers, no DLPack names). The
# linker's own markers (_init, _fini, __bss_start, _edata, _end) are ignored.
set -u

if [ "$#" -ne 2 ]; then
  echo "usage: $0 NM LIBRARY" >&2
  exit 2
fi
nm_prog=$1
library=$2

if [ ! -f "$library" ]; then
  echo "no such library: $library" >&2
  exit 1
fi

symbols=$("$nm_prog" -D --defined-only "$library") || {
  echo "$nm_prog -D --defined-only $library failed" >&2
  exit 1
}

# Each line is "ADDRESS TYPE NAME" (NAME may carry "@VERSION" or "@@VERSION").
report=$(printf '%s\n' "$symbols" | awk '
  NF >= 2 {
    name = $NF
    type = $(NF - 1)
    sub(/@.*/, "", name)
    if (name == "_init" || name == "_fini" || name == "__bss_start" || name == "_edata" ||
        name == "_end") next
    if (name ~ /^dlb_/) { good++; print "ok   " type " " name; next }
    bad++
    print "BAD  " type " " name
  }
  END { printf "SUMMARY %d %d\n", good, bad }
')

printf '%s\n' "$report" | grep -v '^SUMMARY'
set -- $(printf '%s\n' "$report" | sed -n 's/^SUMMARY //p')
good=${1:-0}
bad=${2:-0}

echo "$library: $good exported dlb_ symbols, $bad other exported symbols"
if [ "$bad" -ne 0 ]; then
  echo "FAIL: the symbols marked BAD above are exported but do not start with dlb_" >&2
  exit 1
fi
if [ "$good" -eq 0 ]; then
  echo "FAIL: no dlb_ symbol is exported at all" >&2
  exit 1
fi
exit 0
