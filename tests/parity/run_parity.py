#!/usr/bin/env python3
"""Runs every language's parity program and compares each row with the table (README.md).

usage: run_parity.py TABLE NAME=COMMAND [NAME=COMMAND ...]

COMMAND is run with the shell, with the table's path in DLBRIDGE_PARITY_TABLE; it prints
ROW<TAB>STATUS<TAB>DETAIL lines. Language `c` is the
reference for the rows whose expected status is `=c`. Prints one line per row with each
language's outcome, the differences, and last `N passed, N failed` (one check per row and
language, plus one per program that must run cleanly)."""

import os
import subprocess
import sys


def read_table(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        header = None
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if header is None:
                header = fields
                continue
            entry = dict(zip(header, fields + [""] * (len(header) - len(fields))))
            entry["may_skip"] = {s for s in entry["may_skip"].split(",") if s}
            rows.append(entry)
    return rows


def run(name, command, table):
    # A program that runs the rows' steps reads them from the table (README.md, "Steps").
    env = dict(os.environ, DLBRIDGE_PARITY_TABLE=os.path.abspath(table))
    result = subprocess.run(command, shell=True, capture_output=True, text=True, env=env)
    outcomes = {}
    problems = []
    for line in result.stdout.splitlines():
        fields = line.split("\t")
        if len(fields) != 3:
            continue  # a program's own chatter (a runtime's banner) is not a row
        row, status, detail = fields
        if row in outcomes:
            problems.append(f"{name}: row {row} printed twice")
        outcomes[row] = (status, detail)
    if result.returncode != 0:
        problems.append(f"{name}: the program exited with {result.returncode}\n"
                        + result.stdout[-2000:] + result.stderr[-4000:])
    return outcomes, problems


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    rows = read_table(sys.argv[1])
    languages = []
    for spec in sys.argv[2:]:
        name, _, command = spec.partition("=")
        languages.append((name, command))

    results = {}
    passed = failed = 0
    for name, command in languages:
        outcomes, problems = run(name, command, sys.argv[1])
        results[name] = outcomes
        if problems:
            failed += 1
            for p in problems:
                print("FAILED " + p)
        else:
            passed += 1
        extra = set(outcomes) - {r["row"] for r in rows}
        for row in sorted(extra):
            failed += 1
            print(f"FAILED {name}: row {row} is not in the table")

    reference = results.get("c", {})
    width = max(len(r["row"]) for r in rows)
    print(f"{'row':<{width}}  " + "  ".join(f"{n:<6}" for n, _ in languages))
    differences = []
    for r in rows:
        cells = []
        for name, _ in languages:
            got = results[name].get(r["row"])
            expected = (r["status"], r["detail"])
            if r["status"] == "=c":
                expected = reference.get(r["row"], ("<no C result>", ""))
            if got is None:
                verdict = "MISSING"
                differences.append(f"{r['row']} [{name}]: no line printed")
            elif got[0] == "SKIP":
                if name in r["may_skip"] or "*" in r["may_skip"]:
                    verdict = "skip"
                else:
                    verdict = "FAIL"
                    differences.append(f"{r['row']} [{name}]: skipped ({got[1]}), which the table "
                                       "does not allow for this language")
            elif got == expected:
                verdict = "ok"
            else:
                verdict = "FAIL"
                differences.append(f"{r['row']} [{name}]: expected {expected[0]} '{expected[1]}', "
                                   f"got {got[0]} '{got[1]}'")
            if verdict in ("ok", "skip"):
                passed += 1
            else:
                failed += 1
            cells.append(f"{verdict:<6}")
        print(f"{r['row']:<{width}}  " + "  ".join(cells))
    for d in differences:
        print("FAILED " + d)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
