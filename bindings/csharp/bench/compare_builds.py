#!/usr/bin/env python3
"""Before/after table of the C# bench: runs bench/run_bench.sh of two checkouts, each with its
own ./build, alternately ROUNDS times (Mono default, Mono preemptive and, with DLBRIDGE_DOTNET
set, CoreCLR), and prints per runtime and cycle the best C# time of each, the change, the C
cycle, the floor (from the best pieces over all runs) and each one's overhead above it.

usage: DLBRIDGE_DOTNET=/path/to/dotnet compare_builds.py ROUNDS BEFORE_CHECKOUT AFTER_CHECKOUT

Any checkout whose Bench.exe prints a row as `name C#ns Cns ...` and the pieces line works (the
table's format before this bench changed too). Best of many alternated runs, because the
machine is shared: the best run is the least disturbed, and alternating spreads the
disturbance over both."""
import collections
import os
import re
import subprocess
import sys

rounds = int(sys.argv[1])
builds = {"before": os.path.abspath(sys.argv[2]), "after": os.path.abspath(sys.argv[3])}
rows = {"wrap pinned array + dispose": (2, 1, 1), "allocate + dispose": (2, 1, 0),
        "wrap + export + import + dispose": (3, 2, 1), "wrap + export/import legacy + dispose": (4, 2, 1)}
cs = collections.defaultdict(list)
c = collections.defaultdict(list)
pieces = collections.defaultdict(list)
for r in range(rounds):
    for version, root in builds.items():
        out = subprocess.run(["sh", root + "/bindings/csharp/bench/run_bench.sh", root + "/build/bindings/csharp",
                              root + "/build/core", "mono"], capture_output=True, text=True, check=True).stdout
        runtime = None
        for line in out.splitlines():
            if line.startswith("== "):
                runtime = "mono" if "default" in line else "mono-preemptive" if "preemptive" in line else "coreclr"
            for row in rows:
                if line.startswith(row):
                    numbers = line[len(row):].split()
                    cs[(version, runtime, row)].append(float(numbers[0]))
                    c[(runtime, row)].append(float(numbers[1]))
            m = re.match(r"bare P/Invoke call ([\d.]+) ns; SafeHandle new \+ Dispose ([\d.]+) ns.*pin \+ free ([\d.]+) ns", line)
            if m:
                for name, value in zip(("bare", "sh", "pin"), m.groups()):
                    pieces[(runtime, name)].append(float(value))
    print(f"round {r + 1} of {rounds} done", file=sys.stderr, flush=True)
for runtime in ("mono", "mono-preemptive", "coreclr"):
    if not pieces[(runtime, "bare")]:
        continue
    bare, sh, pin = (min(pieces[(runtime, p)]) for p in ("bare", "sh", "pin"))
    print(f"\n{runtime}: bare P/Invoke {bare:.1f}, SafeHandle {sh:.1f}, pin {pin:.1f} ns "
          f"(best of {len(pieces[(runtime, 'bare')])} runs)")
    print(f"{'cycle':40} {'before':>7} {'after':>7} {'change':>7} {'C':>6} {'floor':>6} "
          f"{'before-floor':>12} {'after-floor':>11} {'target':>6}")
    for row, (calls, tensors, pins) in rows.items():
        floor = calls * bare + tensors * sh + pins * pin
        b, a, cc = min(cs[("before", runtime, row)]), min(cs[("after", runtime, row)]), min(c[(runtime, row)])
        print(f"{row:40} {b:7.1f} {a:7.1f} {100 * (a - b) / b:+6.1f}% {cc:6.1f} {floor:6.1f} "
              f"{b - floor:12.1f} {a - floor:11.1f} {'met' if a - floor <= cc else 'over':>6}")
