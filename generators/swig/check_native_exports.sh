#!/bin/sh
# check_native_exports.sh NM LIBRARY PREFIX...
#
# Fails unless every dynamic symbol that LIBRARY (a binding's native library: the JNI or P/Invoke
# library) defines starts with one of the PREFIXes. The core's prefix dlb_ is the core's alone:
# a binding's own C names start with the shared native layer's dlbx_, and the core linked in
# statically stays hidden. The linker's own markers (_init, _fini, __bss_start, _edata, _end) are
# ignored. Prints each symbol, then "N passed, N failed".
set -u

if [ "$#" -lt 3 ]; then
  echo "usage: $0 NM LIBRARY PREFIX..." >&2
  exit 2
fi
nm_prog=$1
library=$2
shift 2

symbols=$("$nm_prog" -D --defined-only "$library") || {
  echo "$nm_prog -D --defined-only $library failed" >&2
  exit 1
}

# Each line is "ADDRESS TYPE NAME" (NAME may carry "@VERSION").
printf '%s\n' "$symbols" | awk -v prefixes="$*" '
  BEGIN { n = split(prefixes, prefix, " ") }
  NF >= 2 {
    name = $NF
    sub(/@.*/, "", name)
    if (name == "_init" || name == "_fini" || name == "__bss_start" || name == "_edata" ||
        name == "_end") next
    ok = 0
    for (i = 1; i <= n; i++) if (index(name, prefix[i]) == 1) ok = 1
    if (ok) { good++; print "ok   " name } else { bad++; print "BAD  " name }
  }
  END {
    if (good == 0) { print "no symbol with a prefix of: " prefixes; bad++ }
    else if (bad > 0) print "the symbols marked BAD start with none of: " prefixes
    printf "%d passed, %d failed\n", good, bad
    exit bad > 0
  }
'
