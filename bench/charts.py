#!/usr/bin/python3
"""Draws the benchmark charts of docs/benchmarks.md from a bench run.

usage: /usr/bin/python3 bench/charts.py [--build build] [--out docs/images] [--quick]

Runs the bench programs of a build (bench/bench_core with and without --quick: two copy sizes;
bench/bench_ipc: 64 B to 256 MiB, or with --quick 64 B, 4 KiB and 1 MiB), parses the tables they
print, and writes with Debian's matplotlib (python3-matplotlib, for /usr/bin/python3):

  copy-bandwidth.png    copy kernels against memcpy, by layout and size (bench_core)
  channel-latency.png   a tensor between processes through a channel against iceoryx and a
                        socket copy, one-way by size (bench_ipc)
  binding-cycles.png    each binding's cycle against the same cycle in C: from the bench
                        tables recorded in docs/rust.md, go.md, java.md and csharp.md (the
                        binding benches take minutes each; this script does not run them)
  machine.txt           the machine, compiler and date of the run

The bench programs' own output is kept beside the charts (bench_core.txt, bench_core_quick.txt,
bench_ipc.txt), so every bar can be traced to a printed row. Takes about 2.5 minutes (5 s with
--quick) on a 2-core machine. Run it on an idle machine: the benches report ratios against
baselines measured in the same run, which carry over between machines; absolute times do not.
"""

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("charts: matplotlib is missing: run with Debian's /usr/bin/python3 and install "
             "python3-matplotlib (bash scripts/install-deps.sh installs it)")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def run(program, *args):
    if not os.access(program, os.X_OK):
        sys.exit(f"charts: {program} is not built: ninja -C BUILD {os.path.relpath(program)}")
    return subprocess.run([program, *args], check=True, capture_output=True, text=True).stdout


# bench_core: "<name>  <result> <ns|GB/s>  <baseline>  <base>  <ratio>  <allocs> ..."
CORE_ROW = re.compile(r"^(?P<name>\S.*?)\s+(?P<result>[\d.]+) (?P<unit>ns|GB/s)\s+"
                      r"(?P<baseline>\S.*?)\s+(?P<base>[\d.]+)\s+(?P<ratio>[\d.]+)\s")


def copy_rows(text):
    """[(layout and output size, kind, GB/s, memcpy GB/s)] from bench_core's copy rows."""
    out = []
    for line in text.splitlines():
        m = CORE_ROW.match(line)
        if not m or m["unit"] != "GB/s" or ":" not in m["name"]:
            continue
        layout, kind = m["name"].rsplit(": ", 1)
        size = m["baseline"].replace("memcpy ", "")
        layout = re.sub(r"\s+\d+ [KMG]iB$", "", layout.strip())  # "contiguous 64 MiB"
        kind = "into a new tensor" if "new tensor" in kind else "into a touched tensor"
        out.append((f"{layout}\n({size} out)", kind, float(m["result"]), float(m["base"])))
    return out


def chart_copies(runs, path):
    """runs: [(title, bench_core output)], one panel each."""
    fig, axes = plt.subplots(1, len(runs), figsize=(5.5 * len(runs), 4.4), sharey=True,
                             squeeze=False)
    for ax, (title, text) in zip(axes[0], runs):
        rows = {"": copy_rows(text)}
        size = ""
        layouts = list(dict.fromkeys(r[0] for r in rows[size]))
        kinds = ["into a touched tensor", "into a new tensor"]
        width = 0.38
        for k, kind in enumerate(kinds):
            xs, ys, labels = [], [], []
            for i, layout in enumerate(layouts):
                for r in rows[size]:
                    if r[0] == layout and r[1] == kind:
                        xs.append(i + (k - 0.5) * width)
                        ys.append(r[2] / r[3])
                        labels.append(f"{r[2]:.1f}")
            bars = ax.bar(xs, ys, width, label=kind)
            ax.bar_label(bars, labels=labels, fontsize=7, padding=2)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
        ax.set_xticks(range(len(layouts)), layouts, fontsize=8)
        ax.set_title(f"{title} (bar labels: GB/s)", fontsize=9)
    axes[0][0].set_ylabel("bandwidth / memcpy between touched buffers")
    axes[0][0].legend(fontsize=8, loc="upper right")
    fig.suptitle("CPU copy kernels against memcpy (bench_core; 1.0 = memcpy, dashed = target 0.5)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


SIZE_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
CHANNEL_ROWS = [("dlbridge fresh", "o", "dlbridge: allocate shareable, fill, send / receive, read, free"),
                ("dlbridge pooled", "v", "dlbridge: the same, allocated from the channel's pool"),
                ("dlbridge re-send", "^", "dlbridge: a share of one pre-allocated tensor, re-sent"),
                ("iceoryx", "D", "iceoryx: loan, fill, publish / take, read, release"),
                ("socket copy", "s", "the same bytes through a Unix socket")]


def channel_table(text):
    """{row label: [(bytes, one-way us)]} from bench_ipc's one-way table for two cpus, the
    sender writing every byte."""
    section, header, rows = False, None, {}
    for line in text.splitlines():
        if line.startswith("### "):
            section = line.startswith("### two cpus") and "every byte" in line
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not section or not line.startswith("|"):
            continue
        if cells[0] == "one-way us":
            header = [int(c.split()[0]) * SIZE_UNITS[c.split()[1]] for c in cells[1:]]
        elif header and cells[0].endswith("us"):
            break  # the next table of the section
        elif header and cells[0] in [row[0] for row in CHANNEL_ROWS]:
            rows[cells[0]] = [(size, float(value)) for size, value in zip(header, cells[1:])
                              if value not in ("-", "n/a")]
    return header or [], rows


def chart_channel(text, path):
    sizes, rows = channel_table(text)
    if not sizes:
        sys.exit("charts: bench_ipc printed no one-way table for two cpus and every byte")
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for label, marker, legend in CHANNEL_ROWS:
        points = rows.get(label, [])
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker=marker, label=legend)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [f"{s >> 30} GiB" if s >= 1 << 30 else f"{s >> 20} MiB" if s >= 1 << 20
                          else f"{s >> 10} KiB" if s >= 1 << 10 else f"{s} B" for s in sizes],
                  fontsize=8)
    ax.set_xlabel("tensor size (sender and receiver on two cpus, every byte written and read)")
    ax.set_ylabel("one-way microseconds (log)")
    ax.set_title("A tensor from one process to another (bench_ipc)", fontsize=10)
    ax.grid(True, which="major", linewidth=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown_table(page, header_start, column=None):
    """The rows (dicts by header) of the first table in docs/PAGE whose header starts so (and
    has the column)."""
    rows, inside = [], False
    for line in open(os.path.join(ROOT, "docs", page), encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not inside:
            inside = (line.startswith("|") and cells[0].startswith(header_start)
                      and (column is None or column in cells))
            header = cells
            continue
        if not line.startswith("|"):
            break
        if not all(c and set(c) <= set("-:") for c in cells):
            rows.append(dict(zip(header, cells)))
    return rows


def number(cell):
    m = re.match(r"\s*([\d.]+)", cell or "")
    return float(m[1]) if m else None


def binding_cycles():
    """[(binding, [(cycle, binding ns, C ns)])] from the bench tables of the docs."""
    out = []
    rust = markdown_table("rust.md", "cycle", "Rust ns")
    out.append(("Rust (docs/rust.md)",
                [(r["cycle"], number(r["Rust ns"]), number(r["C = floor ns"])) for r in rust]))
    go = markdown_table("go.md", "cycle")
    out.append(("Go (docs/go.md)",
                [(r["cycle"], number(r["Go ns now"]), number(r["C ns"])) for r in go]))
    java = markdown_table("java.md", "cycle")
    out.append(("Java (docs/java.md)",
                [(r["cycle"].replace("`", ""), number(r["Java ns/op"]), number(r["C ns/op"]))
                 for r in java if number(r["C ns/op"])]))
    runtime = ""
    cs = {}
    for r in markdown_table("csharp.md", "runtime"):
        runtime = r["runtime"] or runtime
        cs.setdefault(runtime.replace("`", ""), []).append(
            (r["cycle"], number(r["C#"]), number(r["C"])))
    for runtime, rows in cs.items():
        out.append((f"C# on {runtime} (docs/csharp.md)", rows))
    return [(name, [r for r in rows if r[1] and r[2]]) for name, rows in out if rows]


def chart_bindings(path):
    data = binding_cycles()
    fig, axes = plt.subplots(len(data), 1, figsize=(8, 1.1 + 0.42 * sum(len(r) for _, r in data)
                                                    + 0.5 * len(data)), squeeze=False)
    for ax, (name, rows) in zip(axes[:, 0], data):
        ys = range(len(rows))
        ax.barh([y + 0.2 for y in ys], [r[1] for r in rows], 0.4, label="binding")
        ax.barh([y - 0.2 for y in ys], [r[2] for r in rows], 0.4, label="the same cycle in C")
        for y, r in zip(ys, rows):
            ax.text(r[1], y + 0.2, f" {r[1]:.0f} ns ({r[1] / r[2]:.1f}x C)", va="center",
                    fontsize=7)
        ax.set_yticks(list(ys), [r[0] for r in rows], fontsize=7)
        ax.invert_yaxis()
        ax.set_title(name, fontsize=9, loc="left")
        ax.set_xlim(0, max(r[1] for r in rows) * 1.35)
        ax.tick_params(axis="x", labelsize=7)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("ns per cycle (best run)")
    fig.suptitle("Each binding's cycle against the same cycle in C", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def machine_line():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    distro = ""
    try:
        for line in open("/etc/os-release", encoding="utf-8"):
            if line.startswith("PRETTY_NAME="):
                distro = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    load = os.getloadavg()[0]
    return (f"{os.cpu_count()} cores, {cpu}, {distro}, kernel {platform.release()}, "
            f"load average {load:.1f} at the start, {datetime.date.today().isoformat()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "images"))
    parser.add_argument("--quick", action="store_true",
                        help="the benches' quick modes only (a smoke run, not for the docs)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    machine = machine_line()
    bench_core = os.path.join(args.build, "bench", "bench_core")
    bench_ipc = os.path.join(args.build, "bench", "bench_ipc")
    outputs = {"bench_core_quick.txt": run(bench_core, "--quick")}
    if not args.quick:
        outputs["bench_core.txt"] = run(bench_core)
    outputs["bench_ipc.txt"] = run(bench_ipc, *(["--quick"] if args.quick else []))
    for name, text in outputs.items():
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write(text)
    core_runs = [("bench_core --quick: 256x256 float32", outputs["bench_core_quick.txt"])] + (
        [("bench_core: 4096x4096 float32", outputs["bench_core.txt"])]
        if "bench_core.txt" in outputs else [])
    chart_copies(core_runs, os.path.join(args.out, "copy-bandwidth.png"))
    chart_channel(outputs["bench_ipc.txt"], os.path.join(args.out, "channel-latency.png"))
    chart_bindings(os.path.join(args.out, "binding-cycles.png"))
    with open(os.path.join(args.out, "machine.txt"), "w", encoding="utf-8") as f:
        f.write(machine + "\n")
    print(f"charts: wrote copy-bandwidth.png, channel-latency.png, binding-cycles.png and the "
          f"benches' output to {os.path.relpath(args.out)}; measured on {machine}")


if __name__ == "__main__":
    main()
