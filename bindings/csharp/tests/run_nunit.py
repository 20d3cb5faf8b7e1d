#!/usr/bin/env python3
"""Runs the NUnit 2.6 suite of the C# binding and prints its own closing line.

usage: run_nunit.py NUNIT_CONSOLE MONO TESTS_DLL BUILD_DIR

nunit-console runs in BUILD_DIR (where DLBridge.dll, libdlbridge_csharp.so and the test helper
library lie side by side, as in the package), without shadow copies (which would separate the
assemblies from the native libraries), writing TestResult.xml there. NUnit's own summary is not
a line CI recognises: this script parses the XML and prints "N passed, N failed" last, and exits
non-zero when a test failed or none ran.
"""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

nunit, mono, tests_dll, build_dir = sys.argv[1:5]
result_xml = os.path.join(build_dir, "TestResult.xml")
if os.path.exists(result_xml):
    os.remove(result_xml)
env = dict(os.environ)
env["MONO_PATH"] = build_dir
env["DLBRIDGE_CSHARP_BUILD_DIR"] = build_dir
env["DLBRIDGE_MONO"] = mono
# The vocabulary table VocabularyTest checks the binding's names against.
env["DLBRIDGE_ARCHITECTURE_DOC"] = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "architecture.md")
# -nothread: the tests run on the main thread; -domain=None: in the runner's own AppDomain
# (native libraries are found next to the assemblies, MONO_PATH above).
cmd = [nunit, "-nologo", "-noshadow", "-nothread", "-domain=None", "-labels",
       "-xml=" + result_xml, tests_dll]
proc = subprocess.run(cmd, cwd=build_dir, env=env)
passed = failed = 0
if os.path.exists(result_xml):
    root = ET.parse(result_xml).getroot()
    for case in root.iter("test-case"):
        if case.get("executed") != "True":
            continue
        if case.get("success") == "True":
            passed += 1
        else:
            failed += 1
            message = case.find("./failure/message")
            text = (message.text or "").strip() if message is not None else case.get("result")
            print(f"FAILED {case.get('name')}: {text}")
else:
    print(f"nunit-console wrote no {result_xml} (exit status {proc.returncode})")
    failed += 1
if passed + failed == 0:
    print("no test ran")
    failed = 1
if proc.returncode != 0 and failed == 0:
    print(f"nunit-console exited with status {proc.returncode}")
    failed = 1
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
