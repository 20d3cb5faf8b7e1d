#!/usr/bin/env python3
"""One version everywhere: checks, and sets, the version every dlbridge package carries.

usage:
  check_versions.py [--source DIR] [--library-version-program PROGRAM]   check (exit 1 on a mismatch)
  check_versions.py [--source DIR] --set X.Y.Z                           write X.Y.Z everywhere
  check_versions.py [--source DIR] --teeth [--library-version-program PROGRAM]

The version is meson.build's `version:`. Every package states it (CHANGELOG.md says the rule):

  meson.build                            project(..., version: 'X.Y.Z')
  built library                          dlb_version_string() (the output of PROGRAM, a program
                                         that prints it: tests/release/print_version)
  bindings/java/pom.xml                  the project's <version>
  bindings/csharp/DLBridge.nuspec        <version>: X.Y.Z, or $version$ filled in when packing
                                         (then the packing step passes meson.build's version)
  bindings/rust/Cargo.toml               [workspace.package] version (both crates inherit it)
  bindings/rust/dlbridge-sys/Cargo.toml  version.workspace = true, or version = "X.Y.Z"
  bindings/rust/dlbridge/Cargo.toml      the same, and its dlbridge-sys dependency pinned "=X.Y.Z"
  bindings/rust/Cargo.lock               the versions of dlbridge and dlbridge-sys
  bindings/go (func Version)             its doc comment's ("X.Y.Z"), or a Version constant
  CHANGELOG.md                           a "## X.Y.Z" section

Each line of output is "ok|MISMATCH  FILE  WHAT: FOUND"; the last line is "N passed, N failed".
--set rewrites those files (not the built library: rebuild after) and then checks.
--teeth proves the check can fail: for each file above, a copy of the tree's version files with
that one file changed to another version must fail naming that file (and a library that prints
another version must fail too); passes only when every such run fails.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

VERSION = r"[0-9]+\.[0-9]+\.[0-9]+"


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def write(root, rel, text):
    with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
        f.write(text)


def go_version_file(root):
    """The Go file that declares Version (a constant or the function), relative to root."""
    folder = os.path.join(root, "bindings", "go")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".go") and not name.endswith("_test.go"):
            text = read(folder, name)
            if re.search(r"^(func Version\(\)|const Version\b|\tVersion\s*=)", text, re.M):
                return os.path.join("bindings", "go", name)
    return None


# Each source: (file, what, pattern). The pattern's group 1 is the version; it must match once.
SOURCES = [
    ("meson.build", "project version", r"^project\([^)]*?\bversion:\s*'([^']*)'"),
    ("bindings/java/pom.xml", "project <version>",
     # The project's own version: the first <version> after </parent> or, without a parent,
     # the first after <artifactId>dlbridge</artifactId> at the top level.
     r"<artifactId>dlbridge</artifactId>\s*<version>([^<]*)</version>"),
    ("bindings/csharp/DLBridge.nuspec", "<metadata><version>", r"<version>([^<]*)</version>"),
    ("bindings/rust/Cargo.toml", "[workspace.package] version",
     r"^\[workspace\.package\][^\[]*?^version\s*=\s*\"([^\"]*)\""),
    ("bindings/rust/dlbridge-sys/Cargo.toml", "[package] version",
     r"^\[package\][^\[]*?^version(?:\.workspace\s*=\s*(true)|\s*=\s*\"([^\"]*)\")"),
    ("bindings/rust/dlbridge/Cargo.toml", "[package] version",
     r"^\[package\][^\[]*?^version(?:\.workspace\s*=\s*(true)|\s*=\s*\"([^\"]*)\")"),
    ("bindings/rust/dlbridge/Cargo.toml", "dependency dlbridge-sys",
     r"^dlbridge-sys\s*=\s*\{[^}]*\bversion\s*=\s*\"=?([^\"]*)\""),
    ("bindings/rust/Cargo.lock", "package dlbridge",
     r"^name = \"dlbridge\"\nversion = \"([^\"]*)\""),
    ("bindings/rust/Cargo.lock", "package dlbridge-sys",
     r"^name = \"dlbridge-sys\"\nversion = \"([^\"]*)\""),
    ("CHANGELOG.md", "newest section", r"^## \[?(" + VERSION + r")\]?"),
]
GO_PATTERNS = [r"^// Version is [^\n]*\(\"(" + VERSION + r")\"\)[^\n]*\n(?://[^\n]*\n)*func Version\(\)",
               r"^const Version\s*=\s*\"([^\"]*)\"",
               r"^\tVersion\s*=\s*\"([^\"]*)\""]


def found_versions(root):
    """[(file, what, found)] for every source; found is None where the pattern does not match."""
    out = []
    for rel, what, pattern in SOURCES:
        if not os.path.exists(os.path.join(root, rel)):
            out.append((rel, what, None))
            continue
        m = re.search(pattern, read(root, rel), re.M | re.S)
        value = None
        if m:
            groups = [g for g in m.groups() if g is not None]
            value = groups[0] if groups else None
            if value == "true":
                value = "workspace"
        out.append((rel, what, value))
    go = go_version_file(root)
    value = None
    if go:
        text = read(root, go)
        for pattern in GO_PATTERNS:
            m = re.search(pattern, text, re.M)
            if m:
                value = m.group(1)
                break
    out.append((go or "bindings/go/*.go", "Version", value))
    return out


def check(root, library_version, quiet=False):
    """Returns the list of files that disagree (empty: one version everywhere)."""
    found = found_versions(root)
    version = found[0][2]
    bad = []
    lines = []
    for rel, what, value in found:
        ok = value == version
        if rel.endswith("Cargo.toml") and what == "[package] version" and value == "workspace":
            ok = True  # inherits bindings/rust/Cargo.toml's, checked on its own line
        if rel.endswith(".nuspec") and value == "$version$":
            ok = True  # filled in from meson.build by the packing step
        lines.append(("ok      " if ok else "MISMATCH") + f"  {rel}  {what}: {value}")
        if not ok:
            bad.append(rel)
    if library_version is not None:
        ok = library_version == version
        lines.append(("ok      " if ok else "MISMATCH") +
                     f"  built library  dlb_version_string(): {library_version}")
        if not ok:
            bad.append("built library")
    if not quiet:
        print(f"version (meson.build): {version}")
        for line in lines:
            print(line)
        print(f"{len(lines) - len(bad)} passed, {len(bad)} failed")
    return bad


def set_version(root, new):
    """Writes `new` into every source (the built library follows at the next build)."""
    if not re.fullmatch(VERSION, new):
        sys.exit(f"check_versions: '{new}' is not X.Y.Z")
    for rel, what, pattern in sources(root):
        if rel is None or rel == "CHANGELOG.md" or not os.path.exists(os.path.join(root, rel)):
            continue
        text = read(root, rel)
        span = literal_span(text, pattern)
        if span:
            print(f"set {rel} ({what}): {text[span[0]:span[1]]} -> {new}")
            write(root, rel, text[:span[0]] + new + text[span[1]:])
    if not re.search(r"^## \[?" + re.escape(new), read(root, "CHANGELOG.md"), re.M):
        print(f"CHANGELOG.md: add a '## {new}' section above the others (what changed)")


def sources(root):
    """[(file, what, pattern)]: SOURCES and the Go file's patterns."""
    return SOURCES + [(go_version_file(root), "Version", p) for p in GO_PATTERNS]


def literal_span(text, pattern):
    """(start, end) of the first group of the pattern's match that is a literal version."""
    m = re.search(pattern, text, re.M | re.S)
    if m:
        for i in range(1, (m.lastindex or 0) + 1):
            if m.group(i) is not None and m.group(i) not in ("true", "$version$"):
                return m.start(i), m.end(i)
    return None


def library_version_of(program):
    return subprocess.run([program], check=True, capture_output=True, text=True).stdout.strip()


def teeth(root, library_version):
    """Each source changed alone to another version must fail naming it."""
    other = "97.98.99"
    files = sorted({rel for rel, _, _ in found_versions(root) if "*" not in rel})
    passed = failed = 0
    for target in files:
        with tempfile.TemporaryDirectory(prefix="dlb-versions-") as tmp:
            for rel in files:
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)) or tmp, exist_ok=True)
                shutil.copy(os.path.join(root, rel), os.path.join(tmp, rel))
            text = read(tmp, target)
            if target.endswith(".nuspec") and "$version$" in text:
                text = text.replace("$version$", other, 1)  # a literal that differs
            else:
                # The first literal version any of the file's patterns finds.
                span = next((s for s in (literal_span(text, p) for rel, _, p in sources(tmp)
                                         if rel == target) if s), None)
                if span:
                    text = text[:span[0]] + other + text[span[1]:]
                else:  # a crate that inherits the workspace's version states its own
                    text = text.replace("version.workspace = true", f'version = "{other}"', 1)
            write(tmp, target, text)
            bad = check(tmp, library_version, quiet=True)
            # Changing meson.build makes everything else disagree with it: then every other
            # file is named; otherwise exactly the changed one.
            ok = bad == [target] if target != "meson.build" else len(bad) >= len(files) - 1
            print(("ok  " if ok else "FAIL") + f"  {target} changed alone to {other}: the check "
                  + (f"fails naming {', '.join(sorted(set(bad)))}" if bad else "passes"))
            passed += ok
            failed += not ok
    if library_version is not None:
        bad = check(root, other, quiet=True)
        ok = bad == ["built library"]
        print(("ok  " if ok else "FAIL") + f"  a library that says {other}: the check "
              + (f"fails naming {', '.join(bad)}" if bad else "passes"))
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return failed == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--library-version-program")
    parser.add_argument("--set", metavar="X.Y.Z")
    parser.add_argument("--teeth", action="store_true")
    args = parser.parse_args()
    root = os.path.abspath(args.source)
    if args.set:
        set_version(root, args.set)
    library_version = (library_version_of(args.library_version_program)
                       if args.library_version_program else None)
    if args.teeth:
        sys.exit(0 if teeth(root, library_version) else 1)
    sys.exit(1 if check(root, library_version) else 0)


if __name__ == "__main__":
    main()
