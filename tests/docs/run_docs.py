#!/usr/bin/env python3
"""Suite docs: every fenced code block of README.md and docs/*.md in a language this suite
knows is compiled and run against the built library, or marked as a fragment.

usage: run_docs.py --source DIR --build DIR [--lang NAME ...] [--list | --teeth]

A block is the code between ```LANG and ```. What a reader does not see, HTML comments on the
line right above the fence, tells this runner what to do with it:

  <!-- docs: fragment -->          not a program: an excerpt, a declaration, a pattern
  <!-- docs: compile-only (why) -->  compiled, not run (it needs what this machine lacks)
  <!-- docs: output -->            above a ```text block: the exact output of the block before

Everything else is a program. C and C++ blocks with a main() are compiled as they are; without
one, their #include lines are kept at the top and the rest becomes the body of main(). A Rust
block without fn main() becomes the body of a main returning Result (lines starting with "# "
are hidden lines, as in rustdoc). Java, C# and Go blocks follow the same rule for their own
entry points. Programs are built against the library in BUILD and run; a block fails when it
does not compile, exits non-zero, or prints other than its output block.

Languages: c, cpp, rust, java, csharp, go; --lang limits the run to those given (the others'
blocks are counted as not checked here, and listed). --teeth checks the checker: in a copy of
the pages, the first program block of each language gets a line that cannot compile, and every
one of them must then fail. Ends with "N passed, N failed"."""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

LANGS = {"c": "c", "cpp": "cpp", "c++": "cpp", "rust": "rust", "java": "java",
         "csharp": "csharp", "cs": "csharp", "go": "go"}


class Block:
    def __init__(self, path, line, lang, code, marker):
        self.path, self.line, self.lang, self.code, self.marker = path, line, lang, code, marker
        self.output = None  # expected stdout, from a following output block

    def where(self):
        return f"{self.path}:{self.line}"


def marker_above(lines, i):
    """The docs: marker in the HTML comment on the line right above line i, if any."""
    if i == 0:
        return None
    m = re.match(r"^\s*<!--\s*docs:\s*(.*?)\s*-->\s*$", lines[i - 1])
    return m.group(1) if m else None


def read_blocks(source):
    files = [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))
    blocks = []
    for path in files:
        lines = open(path, encoding="utf-8").read().split("\n")
        rel = os.path.relpath(path, source)
        i = 0
        previous = None
        while i < len(lines):
            m = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
            if not m:
                i += 1
                continue
            indent, tag = m.group(1), m.group(2).lower()
            start = i
            j = i + 1
            while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
                j += 1
            body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
            code = "\n".join(body) + "\n"
            marker = marker_above(lines, start)
            if marker == "output" and previous is not None:
                previous.output = code
            elif tag in LANGS:
                block = Block(rel, start + 1, LANGS[tag], code, marker)
                blocks.append(block)
                previous = block
            i = j + 1
    return blocks


def run(command, cwd=None, env=None, timeout=600):
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def hoist(code, pattern):
    """Splits lines matching `pattern` (includes, imports) from the rest."""
    head, rest = [], []
    for line in code.split("\n"):
        (head if re.match(pattern, line) else rest).append(line)
    return "\n".join(head), "\n".join(rest)


class Runner:
    def __init__(self, args, work):
        self.source = os.path.realpath(args.source)
        self.build = os.path.realpath(args.build)
        self.work = work
        self.crate_root = os.environ.get("DLBRIDGE_DOCS_CRATE_ROOT", self.source)
        env = dict(os.environ)
        env["PKG_CONFIG_PATH"] = os.path.join(self.build, "meson-uninstalled")
        env["LD_LIBRARY_PATH"] = os.path.join(self.build, "core")
        self.env = env

    def pkg_config(self):
        r = run(["pkg-config", "--cflags", "--libs", "dlbridge"], env=self.env)
        if r.returncode != 0:
            raise RuntimeError("pkg-config dlbridge (uninstalled) failed: " + r.stderr)
        return r.stdout.split()

    def native(self, block, index, compiler, std, main_pattern, includes):
        code = block.code
        if not re.search(main_pattern, code):
            head, body = hoist(code, r"^\s*#\s*include")
            indented = "\n".join("  " + l if l else l for l in body.split("\n"))
            code = f"{includes}\n{head}\n\nint main(void) {{\n{indented}\n  return 0;\n}}\n"
            if block.lang == "cpp":
                code = code.replace("int main(void)", "int main()")
        suffix = ".c" if block.lang == "c" else ".cpp"
        src = os.path.join(self.work, f"block{index}{suffix}")
        exe = os.path.join(self.work, f"block{index}")
        open(src, "w").write(code)
        r = run([compiler, std, "-Wall", "-Wextra", "-Werror", "-o", exe, src] + self.pkg_config(),
                env=self.env)
        if r.returncode != 0:
            return False, "does not compile:\n" + r.stdout + r.stderr
        return self.execute(block, [exe])

    def execute(self, block, command, cwd=None, env=None):
        if block.marker and block.marker.startswith("compile-only"):
            return True, "compiled (" + block.marker + ")"
        r = run(command, cwd=cwd, env=env or self.env)
        if r.returncode != 0:
            return False, f"exited with {r.returncode}:\n" + r.stdout + r.stderr
        if block.output is not None and r.stdout.rstrip() != block.output.rstrip():
            return False, ("printed something else than its output block:\n--- expected\n"
                           + block.output + "--- got\n" + r.stdout)
        return True, "compiled, ran" + (", output matched" if block.output is not None else "")

    def c(self, block, index):
        return self.native(block, index, os.environ.get("CC", "cc"), "-std=c99", r"\bint\s+main\s*\(",
                           "#include <stdio.h>\n#include \"dlbridge/dlbridge.h\"")

    def cpp(self, block, index):
        return self.native(block, index, os.environ.get("CXX", "c++"), "-std=c++17",
                           r"\bint\s+main\s*\(",
                           "#include <iostream>\n#include \"dlbridge/dlbridge.hpp\"")

    def rust(self, block, index):
        lines = []
        for line in block.code.split("\n"):
            stripped = line.lstrip()
            if stripped.startswith("# ") or stripped == "#":
                lines.append(line.replace("# ", "", 1) if stripped != "#" else "")
            else:
                lines.append(line)
        code = "\n".join(lines)
        if not re.search(r"\bfn\s+main\s*\(", code):
            head, body = hoist(code, r"^\s*(use|extern crate)\b")
            code = (f"{head}\n\nfn main() -> Result<(), Box<dyn std::error::Error>> {{\n{body}\n"
                    "    #[allow(unreachable_code)]\n    Ok(())\n}\n")
        crate = os.path.join(self.work, f"rust{index}")
        os.makedirs(os.path.join(crate, "src"), exist_ok=True)
        open(os.path.join(crate, "Cargo.toml"), "w").write(
            '[package]\nname = "docs-block"\nversion = "0.1.0"\nedition = "2021"\n\n'
            "[dependencies]\n"
            f'dlbridge = {{ path = "{os.path.join(self.crate_root, "bindings", "rust", "dlbridge")}" }}\n'
            "\n[workspace]\n")
        open(os.path.join(crate, "src", "main.rs"), "w").write(code)
        env = dict(self.env)
        env.update({"DLBRIDGE_LIB_DIR": os.path.join(self.build, "core"),
                    "DLBRIDGE_INCLUDE_DIR": os.path.join(self.build, "core", "include"),
                    "DLBRIDGE_STATIC": "0", "CARGO_TARGET_DIR": os.path.join(self.build, "tests", "docs", "rust-target"),
                    "CARGO_TERM_COLOR": "never", "RUSTFLAGS": "-D warnings"})
        cargo = os.environ.get("CARGO", "cargo")
        r = run([cargo, "build", "--offline", "--quiet"], cwd=crate, env=env)
        if r.returncode != 0:
            return False, "does not compile:\n" + r.stdout + r.stderr
        exe = os.path.join(env["CARGO_TARGET_DIR"], "debug", "docs-block")
        return self.execute(block, [exe], env=env)


    # ---- managed languages: what the build made is passed by meson.build --------------------
    def java(self, block, index):
        code = block.code
        m = re.search(r"\bclass\s+(\w+)", code)
        if m and re.search(r"static\s+void\s+main\s*\(", code):
            name = m.group(1)
        else:
            head, body = hoist(code, r"^\s*import\s")
            name = "DocsSnippet"
            code = ("import org.dlbridge.*;\n" + head + f"\n\npublic class {name} {{\n"
                    "  public static void main(String[] args) throws Exception {\n" + body +
                    "\n  }\n}\n")
        folder = os.path.join(self.work, f"java{index}")
        os.makedirs(folder)
        src = os.path.join(folder, f"{name}.java")
        open(src, "w").write(code)
        classes = os.environ["DLBRIDGE_JAVA_CLASSES"]
        r = run([os.environ.get("JAVAC", "javac"), "-Xlint:all", "-Werror", "-d", folder, "-cp",
                 classes, src], env=self.env)
        if r.returncode != 0:
            return False, "does not compile:\n" + r.stdout + r.stderr
        return self.execute(block, [os.environ.get("JAVA", "java"),
                                    "-Ddlbridge.native.path=" + os.environ["DLBRIDGE_JAVA_NATIVE"],
                                    "-cp", folder + ":" + classes, name])

    def csharp(self, block, index):
        code = block.code
        if not re.search(r"static\s+(void|int)\s+Main\s*\(", code):
            head, body = hoist(code, r"^\s*using\s+[\w.]+\s*;")
            code = ("using System;\nusing DLBridge;\n" + head +
                    "\n\npublic static class DocsSnippet {\n  public static void Main() {\n" + body +
                    "\n  }\n}\n")
        folder = os.path.join(self.work, f"csharp{index}")
        os.makedirs(folder)
        src = os.path.join(folder, "Program.cs")
        open(src, "w").write(code)
        assembly = os.environ["DLBRIDGE_CSHARP_ASSEMBLY"]
        exe = os.path.join(folder, "Program.exe")
        r = run([os.environ.get("MCS", "mcs"), "-warnaserror+", "-r:" + assembly, "-out:" + exe, src],
                env=self.env)
        if r.returncode != 0:
            return False, "does not compile:\n" + r.stdout + r.stderr
        # As the docs tell a Mono user: the assembly and its native library next to the exe.
        shutil.copy(assembly, folder)
        shutil.copy(os.environ["DLBRIDGE_CSHARP_NATIVE"], folder)
        return self.execute(block, [os.environ.get("MONO", "mono"), exe], cwd=folder)

    def go(self, block, index):
        code = block.code
        defines_functions = re.search(r"^func\s+\w+", code, re.M) is not None
        if not re.search(r"^package\s+main", code, re.M):
            lines = code.split("\n")
            imports, body, in_block = [], [], False
            for line in lines:
                if in_block:
                    imports.append(line)
                    in_block = not line.strip().startswith(")")
                elif re.match(r"^\s*import\s*\($", line):
                    imports.append(line)
                    in_block = True
                elif re.match(r"^\s*import\s", line):
                    imports.append(line)
                else:
                    body.append(line)
            if defines_functions:
                # Declarations: compiled as they are; a `run() error` is called, others are
                # only compiled (a main that uses nothing).
                calls_run = re.search(r"^func\s+run\(\)\s+error", code, re.M) is not None
                main = ("func main() {\n\tif err := run(); err != nil {\n\t\tpanic(err)\n\t}\n}\n"
                        if calls_run else "func main() {}\n")
                code = ("package main\n\n" + "\n".join(imports) + "\n\n" + "\n".join(body) +
                        "\n\n" + main)
            else:
                code = ("package main\n\n" + "\n".join(imports) + "\n\nfunc main() {\n" +
                        "\n".join(body) + "\n}\n")
        folder = os.path.join(self.work, f"go{index}")
        os.makedirs(folder)
        open(os.path.join(folder, "main.go"), "w").write(code)
        open(os.path.join(folder, "go.mod"), "w").write(
            "module docsblock\n\ngo 1.19\n\nrequire github.com/dlbridge/dlbridge/bindings/go v0.0.0\n\n"
            f"replace github.com/dlbridge/dlbridge/bindings/go => {os.path.join(self.crate_root, 'bindings', 'go')}\n")
        env = dict(self.env)
        env.update({"GOFLAGS": "-mod=mod", "GOPROXY": "off", "CGO_ENABLED": "1",
                    "GOCACHE": os.path.join(self.build, "tests", "docs", "go-cache"),
                    "GOPATH": os.path.join(self.build, "tests", "docs", "gopath")})
        exe = os.path.join(folder, "block")
        r = run([os.environ.get("GO", "go"), "build", "-o", exe, "."], cwd=folder, env=env)
        if r.returncode != 0:
            return False, "does not compile:\n" + r.stdout + r.stderr
        return self.execute(block, [exe], env=env)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--lang", action="append", default=[])
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--teeth", action="store_true")
    args = parser.parse_args()
    if args.teeth:
        return teeth(args)
    blocks = read_blocks(args.source)
    if args.list:
        for b in blocks:
            print(f"{b.where()} {b.lang} {b.marker or ''}")
        return 0
    passed = failed = 0
    unchecked = []
    work = tempfile.mkdtemp(prefix="dlbridge-docs-")
    try:
        runner = Runner(args, work)
        for index, b in enumerate(blocks):
            if b.marker == "fragment":
                print(f"ok     {b.where()} {b.lang}: marked as a fragment")
                passed += 1
                continue
            if args.lang and b.lang not in args.lang:
                unchecked.append(b)
                continue
            ok, what = getattr(runner, b.lang)(b, index)
            if ok:
                passed += 1
                print(f"ok     {b.where()} {b.lang}: {what}")
            else:
                failed += 1
                print(f"FAILED {b.where()} {b.lang}: {what}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for b in unchecked:
        print(f"skip   {b.where()} {b.lang}: no {b.lang} toolchain in this build")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


BREAK = {"c": "this_does_not_compile;", "cpp": "this_does_not_compile;",
         "rust": "this_does_not_compile;", "java": "this_does_not_compile;",
         "csharp": "this_does_not_compile;", "go": "this_does_not_compile"}


def teeth(args):
    """Breaks the first program block of each language in a copy of the pages: all must fail."""
    langs = args.lang or sorted(set(LANGS.values()))
    scratch = tempfile.mkdtemp(prefix="dlbridge-docs-teeth-")
    try:
        shutil.copy(os.path.join(args.source, "README.md"), scratch)
        shutil.copytree(os.path.join(args.source, "docs"), os.path.join(scratch, "docs"))
        chosen = {}
        for b in read_blocks(scratch):
            if b.lang in langs and b.lang not in chosen and b.marker != "fragment":
                chosen[b.lang] = b
        # Insert from the bottom of each page up, so that the lines of the blocks above stay put;
        # a block's fence moves down by the insertions above it in the same page.
        broken = {}
        for b in sorted(chosen.values(), key=lambda b: (b.path, -b.line)):
            path = os.path.join(scratch, b.path)
            lines = open(path, encoding="utf-8").read().split("\n")
            lines.insert(b.line, BREAK[b.lang])  # after the fence: a statement no compiler takes
            open(path, "w", encoding="utf-8").write("\n".join(lines))
        for b in chosen.values():
            above = sum(1 for o in chosen.values() if o.path == b.path and o.line < b.line)
            broken[b.lang] = f"{b.path}:{b.line + above}"
        command = [sys.executable, os.path.abspath(__file__), "--source", scratch, "--build",
                   args.build] + [a for l in langs for a in ("--lang", l)]
        # The Rust crate and the built library are found through the real tree.
        env = dict(os.environ, DLBRIDGE_DOCS_CRATE_ROOT=os.path.realpath(args.source))
        out = subprocess.run(command, capture_output=True, text=True, env=env).stdout
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    passed = failed = 0
    for lang, where in sorted(broken.items()):
        if f"FAILED {where} {lang}: does not compile" in out:
            passed += 1
            print(f"ok     a broken {lang} block ({where}) fails the suite")
        else:
            failed += 1
            print(f"FAILED a broken {lang} block ({where}) did not fail the suite:\n{out}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not broken else 0


if __name__ == "__main__":
    sys.exit(main())
