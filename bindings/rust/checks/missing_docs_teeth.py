#!/usr/bin/env python3
"""Suite rust, test rust-missing-docs-teeth: `#![deny(missing_docs)]` really holds in both crates.

In a copy of bindings/rust (both crates, the workspace manifest), `cargo check` must
  - pass as copied (the control: the copy itself is sound), and
  - fail with `missing documentation for ...` naming the item, once for each case below, where
    the doc comment of one public item is removed from the copy:
      dlbridge      `Tensor::share_read_only` (src/views.rs)
      dlbridge      `live_count` (src/lib.rs, the crate root)
      dlbridge-sys  `LINKED_FROM` (src/lib.rs, hand-written beside the generated bindings)

Usage: missing_docs_teeth.py SOURCE_DIR WORK_DIR   (cargo is $CARGO; DLBRIDGE_PC etc. from the
environment, as for the crates' own tests). The copy's target directory stays in WORK_DIR, so a
second run only rebuilds what changed; each case changes one file and puts it back.
"""
import os
import re
import shutil
import subprocess
import sys

CASES = [
    # (crate, file, the line that declares the item, the name in rustc's message)
    ("dlbridge", "src/views.rs", "pub fn share_read_only(", "method"),
    ("dlbridge", "src/lib.rs", "pub fn live_count(", "function"),
    ("dlbridge-sys", "src/lib.rs", "pub const LINKED_FROM:", "constant"),
]


def strip_doc(path, declaration):
    """Removes the `///` doc comment of the item declared on the line containing `declaration`.

    Returns the number of comment lines removed (0 if the declaration or its comment is missing).
    """
    lines = open(path).read().split("\n")
    at = next((i for i, line in enumerate(lines) if declaration in line), None)
    if at is None:
        return 0
    start = at
    # Walk up over attributes and the doc comment (a doc example's lines start with `///` too).
    while start > 0 and re.match(r"\s*(///|#\[)", lines[start - 1]):
        start -= 1
    doc = [i for i in range(start, at) if lines[i].lstrip().startswith("///")]
    kept = [line for i, line in enumerate(lines) if i not in doc]
    open(path, "w").write("\n".join(kept))
    return len(doc)


def cargo_check(copy, crate, env):
    cargo = os.environ.get("CARGO", "cargo")
    return subprocess.run(
        [cargo, "check", "--offline", "--manifest-path", os.path.join(copy, "Cargo.toml"), "-p", crate,
         "--lib"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def fresh_copy(source, copy):
    rust = os.path.join(source, "bindings", "rust")
    if os.path.exists(copy):
        shutil.rmtree(copy)
    os.makedirs(copy)
    for name in ("Cargo.toml", "Cargo.lock"):
        shutil.copy(os.path.join(rust, name), copy)
    for crate in ("dlbridge-sys", "dlbridge"):
        # Modification times are kept, so cargo rebuilds only what a case changes.
        shutil.copytree(os.path.join(rust, crate), os.path.join(copy, crate), symlinks=False)


def main():
    source, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    copy = os.path.join(work, "crates")
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(work, "target"), CARGO_TERM_COLOR="never")
    failures = 0

    fresh_copy(source, copy)
    for crate in ("dlbridge-sys", "dlbridge"):
        r = cargo_check(copy, crate, env)
        if r.returncode != 0:
            print(r.stdout)
            print(f"FAIL: the unmodified copy of {crate} does not pass cargo check")
            failures += 1
        else:
            print(f"ok: the unmodified copy of {crate} passes cargo check")

    for crate, rel, declaration, kind in CASES:
        path = os.path.join(copy, crate, rel)
        original = open(path).read()
        removed = strip_doc(path, declaration)
        if removed == 0:
            print(f"FAIL: {crate}/{rel}: no documented `{declaration}` to remove a comment from")
            failures += 1
            continue
        r = cargo_check(copy, crate, env)
        expected = f"missing documentation for a {kind}"
        if r.returncode != 0 and expected in r.stdout and "missing_docs" in r.stdout:
            print(f"ok: without its {removed}-line doc comment, `{declaration}` in {crate}/{rel} "
                  f"fails cargo check ({expected})")
        else:
            print(r.stdout)
            print(f"FAIL: {crate}/{rel} with the doc comment of `{declaration}` removed: cargo check "
                  f"exited {r.returncode}, expected a failure with `{expected}`")
            failures += 1
        # Back as copied (written anew, so cargo sees the change on the next check).
        open(path, "w").write(original)

    shutil.rmtree(copy, ignore_errors=True)
    if failures:
        print(f"{failures} check(s) failed")
        return 1
    print("#![deny(missing_docs)] holds in both crates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
