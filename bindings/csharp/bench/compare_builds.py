#!/usr/bin/env python3
"""Best-of-many table of the C# bench, of one checkout or of two side by side (before/after):
runs bench/run_bench.sh of each checkout (each with its own ./build) alternately ROUNDS times
(Mono default, Mono preemptive and, with DLBRIDGE_DOTNET set, CoreCLR) and prints per runtime
and cycle the best C# time of each, the change, the C cycle, the floor and each one's overhead
above the floor.

usage: [DLBRIDGE_DOTNET=/path/to/dotnet] compare_builds.py ROUNDS [BEFORE_CHECKOUT] AFTER_CHECKOUT

The floor column comes from the runs whose Bench.exe measures it per row (the floor made of the
generated layer's bare calls, bench/Bench.cs); a checkout with the older bench (a floor summed
from pieces) still gives its C# column. Best of many alternated runs, because the machine is
shared: the best run is the least disturbed, and alternating spreads the disturbance over all."""
import collections
import os
import subprocess
import sys

rounds = int(sys.argv[1])
checkouts = [os.path.abspath(p) for p in sys.argv[2:]]
builds = dict(zip(["before", "after"] if len(checkouts) == 2 else ["after"], checkouts))
rows = ["wrap pinned array + dispose", "allocate + dispose", "wrap + export + import + dispose",
        "wrap + export/import legacy + dispose"]
cs = collections.defaultdict(list)
c = collections.defaultdict(list)
floor = collections.defaultdict(list)
for r in range(rounds):
    for version, root in builds.items():
        out = subprocess.run(
            ["sh", root + "/bindings/csharp/bench/run_bench.sh", root + "/build/bindings/csharp",
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
                    if "." in numbers[2]:  # the per-row floor (the older bench printed a call count here)
                        floor[(runtime, row)].append(float(numbers[2]))
    print(f"round {r + 1} of {rounds} done", file=sys.stderr, flush=True)
for runtime in ("mono", "mono-preemptive", "coreclr"):
    if not c[(runtime, rows[0])]:
        continue
    print(f"\n{runtime} (best of {len(c[(runtime, rows[0])])} runs)")
    print(f"{'cycle':40} " + " ".join(f"{v:>7}" for v in builds) + f" {'change':>7} {'C':>6} {'floor':>6} "
          + " ".join(f"{v + '-floor':>12}" for v in builds) + f" {'target':>6}")
    for row in rows:
        best = {v: min(cs[(v, runtime, row)]) for v in builds}
        cc, fl = min(c[(runtime, row)]), min(floor[(runtime, row)])
        change = f"{100 * (best['after'] - best['before']) / best['before']:+6.1f}%" if "before" in best else "      -"
        print(f"{row:40} " + " ".join(f"{best[v]:7.1f}" for v in builds) + f" {change:>7} {cc:6.1f} {fl:6.1f} "
              + " ".join(f"{best[v] - fl:12.1f}" for v in builds)
              + f" {'met' if best['after'] - fl <= cc else 'over':>6}")
