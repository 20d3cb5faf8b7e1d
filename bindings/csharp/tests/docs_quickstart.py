#!/usr/bin/env python3
"""Compiles and runs the quick start of docs/csharp.md (suite csharp): the first ```csharp block
after the heading "## Quick start", compiled with mcs against the built DLBridge.dll and run with
mono next to it; its output must equal the ```text block that follows it.

usage: docs_quickstart.py DOC MCS MONO BUILD_DIR"""
import os
import re
import subprocess
import sys
import tempfile

doc, mcs, mono, build = sys.argv[1:5]
text = open(doc, encoding="utf-8").read()
section = text[text.index("## Quick start"):]
code = re.search(r"```csharp\n(.*?)```", section, re.S)
expected = re.search(r"```text\n(.*?)```", section[code.end():], re.S)
failed = 0
with tempfile.TemporaryDirectory() as work:
    source = os.path.join(work, "Demo.cs")
    exe = os.path.join(work, "Demo.exe")
    with open(source, "w", encoding="utf-8") as f:
        f.write(code.group(1))
    compiled = subprocess.run([mcs, "-r:" + os.path.join(build, "DLBridge.dll"), "-out:" + exe, source],
                              capture_output=True, text=True)
    if compiled.returncode != 0:
        print("the quick start does not compile with mcs:\n" + compiled.stdout + compiled.stderr)
        failed = 1
    else:
        env = dict(os.environ, MONO_PATH=build)
        ran = subprocess.run([mono, exe], cwd=build, env=env, capture_output=True, text=True)
        if ran.returncode != 0 or ran.stdout != expected.group(1):
            print(f"the quick start exited with {ran.returncode} and printed:\n{ran.stdout}{ran.stderr}"
                  f"the docs show:\n{expected.group(1)}")
            failed = 1
        else:
            print(ran.stdout, end="")
print(f"{1 - failed} passed, {failed} failed")
sys.exit(failed)
