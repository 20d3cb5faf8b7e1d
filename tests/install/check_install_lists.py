#!/usr/bin/env python3
"""Checks that a build uses no Debian package the install lists do not name.

usage: check_install_lists.py --source DIR --build DIR [--maven-repo DIR ...] [--drop PACKAGE ...]

A fresh machine has only what scripts/install-deps.sh installs (and what it pulls in), plus the
toolchains the README names as preinstalled. This check looks at what a build really used and
maps each file to the Debian package that owns it (dpkg's own file lists):

  - every program Meson found (meson-log.txt: "Program X found: YES (PATH)"), its compilers,
    and the programs the test scripts run from PATH (SCRIPT_PROGRAMS below);
  - every header the build compiled against (ninja's dependency log);
  - every shared library the built programs and libraries load (ldd);
  - every Maven artifact the Java builds resolved: the files of each local repository given
    with --maven-repo, mapped to Debian's /usr/share/maven-repo;
  - the Python modules the frameworks suite imports, for Debian's /usr/bin/python3;
  - what is opened at run time: the OpenCL ICD loader and PoCL's ICD file.

Each owning package must be named by a list in install-deps.sh, be installed by one that is
(Depends and Pre-Depends, as apt-get --no-install-recommends installs them), or be part of every
Debian system (Essential or Priority: required). A file no package owns must lie in a toolchain
the README names as preinstalled (TOOLCHAINS below). Anything else fails, naming the package.

--drop removes a package from the lists as if a line of install-deps.sh had been deleted.
--teeth PACKAGE ... runs the check once per package with that package dropped, and passes only
when every run fails naming it (test install-lists-teeth: proof that the check can fail).
Ends with the line "N passed, N failed" (one check per used package or toolchain; with --teeth,
one per package)."""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

# Programs the scripts and tests run by name, not through Meson's find_program: resolved on
# PATH; one that is absent is not used (its part is skipped) and is not checked here.
SCRIPT_PROGRAMS = [
    "cc", "c++", "gcc", "g++", "clang", "clang++", "meson", "ninja", "pkg-config", "cmake",
    "swig", "java", "javac", "jar", "javadoc", "mvn", "mcs", "mono", "nunit-console", "nuget",
    "go", "gofmt", "cargo", "rustc", "rustfmt", "bindgen", "valgrind", "nvcc", "nm", "ldd",
    "python3",
]

# Python modules of Debian's python3 that suite frameworks and the conformance kit import.
PYTHON = "/usr/bin/python3"
PYTHON_MODULES = ["numpy", "torch", "matplotlib"]

# Files opened at run time (dlopen, the ICD registry), checked when present.
RUNTIME_FILE_PATTERNS = [
    "/usr/lib/x86_64-linux-gnu/libOpenCL.so.1",
    "/etc/OpenCL/vendors/*.icd",
]

# Toolchains that do not come from Debian and that the README names as preinstalled
# ("What a new machine must have"): name, folders (after resolving symbolic links).
HOME = os.path.expanduser("~")
TOOLCHAINS = [
    ("Rust (rustup)", [os.path.join(HOME, ".cargo"), os.path.join(HOME, ".rustup")]),
    ("CUDA Toolkit", ["/usr/local/cuda", "/usr/local/bin/nvcc"]),
    ("Python 3 (pyenv)", [os.path.join(HOME, ".pyenv")]),
]

MAVEN_REPO = "/usr/share/maven-repo"
# Maven's own bookkeeping in a local repository, not artifacts.
MAVEN_BOOKKEEPING = re.compile(
    r"(_remote\.repositories|.*\.lastUpdated|maven-metadata.*\.xml(\.sha1|\.md5)?|"
    r"resolver-status\.properties)$")


def read_install_lists(source, dropped):
    script = os.path.join(source, "scripts", "install-deps.sh")
    out = subprocess.run(["bash", script, "--list", "test"], check=True, capture_output=True,
                         text=True).stdout
    return {p for p in out.split() if p not in dropped}


def installed_packages():
    """{name: (provides, depends clauses, essential)} of every installed package."""
    fmt = "${Package}\\t${Status}\\t${Provides}\\t${Depends}\\t${Pre-Depends}\\t${Essential}\\t${Priority}\\n"
    out = subprocess.run(["dpkg-query", "-W", "-f=" + fmt], check=True, capture_output=True,
                         text=True).stdout
    packages = {}
    for line in out.splitlines():
        name, status, provides, depends, predepends, essential, priority = line.split("\t")
        if not status.endswith("installed") or "not-installed" in status:
            continue
        clauses = []
        for field in (depends, predepends):
            for clause in field.split(","):
                alternatives = [re.split(r"[\s(:]", a.strip())[0] for a in clause.split("|")]
                alternatives = [a for a in alternatives if a]
                if alternatives:
                    clauses.append(alternatives)
        provided = [re.split(r"[\s(]", p.strip())[0] for p in provides.split(",") if p.strip()]
        packages[name] = (provided, clauses, essential == "yes" or priority == "required")
    return packages


def closure(listed, packages):
    """Every installed package that installing `listed` brings in (with their dependencies)."""
    providers = {}
    for name, (provided, _, _) in packages.items():
        for virtual in provided:
            providers.setdefault(virtual, []).append(name)
    seen = set()
    todo = [p for p in listed if p in packages]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for alternatives in packages[name][1]:
            for alternative in alternatives:
                for candidate in [alternative] + providers.get(alternative, []):
                    if candidate in packages and candidate not in seen:
                        todo.append(candidate)
    return seen


def file_owners():
    """{path: package} from dpkg's file lists."""
    owners = {}
    for listing in glob.glob("/var/lib/dpkg/info/*.list"):
        package = os.path.basename(listing)[:-len(".list")].split(":")[0]
        with open(listing, encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.rstrip("\n")
                if path and path != "/.":
                    owners.setdefault(path, package)
    return owners


def candidate_paths(path):
    """The path, each hop of its symbolic links, and its real path, with /usr-merge twins."""
    seen = []
    current = path
    for _ in range(40):
        if current not in seen:
            seen.append(current)
        if not os.path.islink(current):
            break
        target = os.readlink(current)
        current = os.path.normpath(os.path.join(os.path.dirname(current), target))
    real = os.path.realpath(path)
    if real not in seen:
        seen.append(real)
    twins = []
    for p in seen:
        for a, b in (("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/"), ("/usr/lib/", "/lib/"),
                     ("/usr/lib64/", "/lib64/")):
            if p.startswith(a):
                twins.append(b + p[len(a):])
            elif p.startswith(b):
                twins.append(a + p[len(b):])
    return seen + twins


def owner_of(path, owners):
    for candidate in candidate_paths(path):
        if candidate in owners:
            return owners[candidate]
    return None


def toolchain_of(path):
    paths = [os.path.realpath(path), os.path.abspath(path)]
    for name, roots in TOOLCHAINS:
        for root in roots:
            real_root = os.path.realpath(root)
            for p in paths:
                if p == root or p.startswith(root.rstrip("/") + "/") or \
                   p == real_root or p.startswith(real_root.rstrip("/") + "/"):
                    return name
    return None


def meson_programs(build):
    log = os.path.join(build, "meson-logs", "meson-log.txt")
    found = []
    with open(log, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"Program (.+?) found: YES \((.+)\)", line)
            if m:
                found.append((m.group(1), m.group(2).split()[0]))
                continue
            m = re.match(r"(?:C|C\+\+|Cuda|Java|Rust|C#) (?:compiler|linker) for the host machine: (\S+)", line)
            if m:
                found.append((m.group(1), m.group(1)))
    resolved = []
    for name, path in found:
        if not os.path.isabs(path):
            path = shutil.which(path) or path
        resolved.append((name, path))
    return resolved


def ninja_headers(build):
    out = subprocess.run(["ninja", "-C", build, "-t", "deps"], check=True, capture_output=True,
                         text=True).stdout
    headers = set()
    for line in out.splitlines():
        if line.startswith("    "):
            path = line.strip()
            if os.path.isabs(path):
                headers.add(os.path.normpath(path))
    return headers


def built_elf_files(build):
    elves = []
    for root, dirs, files in os.walk(build):
        dirs[:] = [d for d in dirs if d not in ("m2", "target", "go-cache", "meson-private")]
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.access(path, os.X_OK) and not name.endswith(".so"):
                continue
            try:
                with open(path, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        elves.append(path)
            except OSError:
                pass
    return elves


def loaded_libraries(elves):
    libraries = set()
    for elf in elves:
        result = subprocess.run(["ldd", elf], capture_output=True, text=True)
        for line in result.stdout.splitlines():
            m = re.search(r"=>\s+(/\S+)", line) or re.match(r"\s*(/\S+)\s+\(", line)
            if m:
                libraries.add(m.group(1))
    return libraries


def maven_artifacts(repos):
    artifacts = []
    for repo in repos:
        for root, _, files in os.walk(repo):
            for name in files:
                if MAVEN_BOOKKEEPING.match(name):
                    continue
                relative = os.path.relpath(os.path.join(root, name), repo)
                artifacts.append(relative)
    return artifacts


def python_module_files():
    files = []
    if not os.path.exists(PYTHON):
        return files
    for module in PYTHON_MODULES:
        result = subprocess.run([PYTHON, "-c", f"import {module}; print({module}.__file__)"],
                                capture_output=True, text=True)
        if result.returncode == 0 and result.stdout.strip():
            files.append((f"python module {module}", result.stdout.strip()))
    return files


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--maven-repo", action="append", default=[])
    parser.add_argument("--drop", action="append", default=[])
    parser.add_argument("--teeth", nargs="+", default=[])
    args = parser.parse_args()
    if args.teeth:
        return teeth(args)
    source = os.path.realpath(args.source)
    build = os.path.realpath(args.build)

    packages = installed_packages()
    listed = read_install_lists(source, set(args.drop))
    problems = []
    for package in sorted(listed):
        if package not in packages:
            problems.append(f"{package} is listed but not installed: run scripts/install-deps.sh")
    allowed = closure(listed, packages)
    base = {name for name, (_, _, essential) in packages.items() if essential}
    allowed |= closure(base, packages)
    owners = file_owners()

    # (what, path): everything the build used.
    used = []
    for name, path in meson_programs(build):
        used.append((f"program {name} (Meson)", path))
    for name in SCRIPT_PROGRAMS:
        path = shutil.which(name)
        if path:
            used.append((f"program {name} (PATH)", path))
    for header in sorted(ninja_headers(build)):
        used.append(("header", header))
    for library in sorted(loaded_libraries(built_elf_files(build))):
        used.append(("loaded library", library))
    used += python_module_files()
    for pattern in RUNTIME_FILE_PATTERNS:
        for path in sorted(glob.glob(pattern)):
            used.append(("opened at run time", path))
    for repo in args.maven_repo:
        if not os.path.isdir(repo):
            problems.append(f"no Maven local repository at {repo}: the Java suites must run before "
                            "this check (meson test runs it last)")
    maven_count = 0
    for relative in maven_artifacts([r for r in args.maven_repo if os.path.isdir(r)]):
        if relative.startswith("org/dlbridge/"):
            continue  # the project's own artifact, installed by java-install
        maven_count += 1
        used.append((f"Maven artifact {relative}", os.path.join(MAVEN_REPO, relative)))

    inside = (source + "/", build + "/")
    checked = {}  # package or toolchain -> first use
    for what, path in used:
        if not os.path.isabs(path):
            continue
        real = os.path.realpath(path)
        if path.startswith(inside) or real.startswith(inside) or path.startswith("/tmp/"):
            continue
        if what.startswith("Maven artifact") and not os.path.lexists(path):
            problems.append(f"{what} is not in Debian's {MAVEN_REPO}: it came from elsewhere, so a "
                            "fresh machine cannot resolve it")
            continue
        package = owner_of(path, owners)
        if package is None:
            toolchain = toolchain_of(path)
            if toolchain is None:
                problems.append(f"{what} at {path} belongs to no Debian package and to no "
                                "toolchain the README names as preinstalled")
            else:
                checked.setdefault(toolchain, (what, path))
            continue
        if package not in allowed:
            problems.append(f"{package} is used ({what}: {path}) but no list in "
                            "scripts/install-deps.sh names it or a package that depends on it")
            allowed.add(package)  # report each package once
            continue
        checked.setdefault(package, (what, path))

    print(f"install-lists: {len(listed)} packages listed, {len(allowed)} installed with them; "
          f"{len(used)} files used ({maven_count} Maven artifacts) from {len(checked)} packages "
          "and toolchains")
    for problem in problems:
        print("install-lists: FAILED: " + problem)
    print(f"{len(checked)} passed, {len(problems)} failed")
    return 1 if problems else 0


def teeth(args):
    """Runs the check with each package of --teeth dropped: each run must fail, naming it."""
    passed = failed = 0
    base = [sys.executable, os.path.abspath(__file__), "--source", args.source, "--build",
            args.build] + [a for repo in args.maven_repo for a in ("--maven-repo", repo)]
    for package in args.teeth:
        result = subprocess.run(base + ["--drop", package], capture_output=True, text=True)
        named = f"FAILED: {package} is used" in result.stdout
        if result.returncode == 1 and named:
            passed += 1
            print(f"ok     without {package} in the lists the check fails, naming it")
        else:
            failed += 1
            print(f"FAILED without {package} in the lists the check did not fail naming it "
                  f"(exit {result.returncode}):")
            print(result.stdout + result.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
