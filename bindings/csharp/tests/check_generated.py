#!/usr/bin/env python3
"""Checks SWIG's generated C# for what typemaps_csharp.i promises (suite csharp):

- every method of the module class (DLBridgeNative) calls DLBridge.NativeLibrary.Check() before
  it calls into the native library, so a missing library is one clear exception;
- neither generated class runs native code in a type initializer: no static fields with
  initializers, no static constructor with a body (SWIG's empty one in the imclass is fine), no
  SWIG exception or string helper;
- every constant is a C# `const` (a `switch` can use it).

usage: check_generated.py DLBridgeNative.cs DLBridgeNativePINVOKE.cs
Prints what it found and "N passed, N failed" last."""
import re
import sys

module = open(sys.argv[1], encoding="utf-8").read()
imclass = open(sys.argv[2], encoding="utf-8").read()
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAILED " + what)


methods = re.findall(r"\n  public static [^\n=]*?(\w+)\([^)]*\) \{\n(.*?)\n  \}\n", module, re.S)
check(len(methods) > 50, f"the module has {len(methods)} methods, expected the whole C API")
for name, body in methods:
    gate = body.find("global::DLBridge.NativeLibrary.Check();")
    call = body.find("DLBridgeNativePINVOKE.")
    check(gate >= 0 and gate < call, f"{name} calls the native library without the gate first")
check(not re.search(r"static readonly|static DLBridgeNative\s*\(", module),
      "the module class has a type initializer")
constants = re.findall(r"\n  public const \w+ (\w+) = ", module)
check(len(constants) > 60, f"{len(constants)} constants, expected every DLPack and DLB_ constant")
check(not re.search(r"\n  public static \w+ \w+ \{", module), "a constant is a property, not a const")
check(not re.search(r"static [^\n(]*=", imclass), "the imclass has a static field initializer")
check(not re.search(r"SWIGExceptionHelper|SWIGStringHelper", imclass),
      "SWIG's exception or string helper is generated")
check(re.search(r"static DLBridgeNativePINVOKE\(\) \{\s*\}", imclass) is not None,
      "the imclass's static constructor is not SWIG's empty one")
print(f"{len(methods)} gated methods, {len(constants)} constants")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
