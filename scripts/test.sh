#!/usr/bin/env bash
# Installs what is missing, then builds and runs every test of dlbridge in four passes:
#   1. gcc, release, -Werror: every suite (core, cpp, abi, fuzz corpus replay, examples, bench
#      smoke, cuda: planning emulated on the host, the no-driver behaviour, the GPU tests (skipped
#      without a GPU); opencl on PoCL; rust: cargo tests, doc-tests and the bindings check; java:
#      the JNI library's native test (suite jni), then jar + JUnit; go: the native test of the
#      Go binding's C half (suite gonative), vet, gofmt, go test, -race, bounded fuzz, the
#      generated-output check and an out-of-tree consumer)
#   2. clang with AddressSanitizer + UndefinedBehaviorSanitizer, -Werror: every C/C++ suite, with
#      the libFuzzer targets fuzzing for DLB_FUZZ_SECONDS (default 60) seconds each, the JNI
#      library (SWIG's dlbridge_java_wrap.c + the shared release engine) through its native test
#      (bindings/java/tests/test_jni_native.c), the Go binding's C half (internal/capi's
#      dlbridge_wrap.c + dlbx_release.c) through its native test
#      (bindings/go/tests/test_go_native.c, suite gonative), and the JUnit suite in a
#      JVM with the ASan runtime preloaded (the Rust crates link the library from outside the
#      sanitizer runtime, so they run in pass 1 only); the interop matrix without its Rust agent
#   3. valgrind (memcheck, leaks are errors) over the gcc build's core, cpp, examples, cuda,
#      opencl, jni, gonative, interop-native (the C host over the C and Rust agents) and
#      conformance (the C core and Rust binding subjects) suites (a JVM under valgrind is
#      impractical: suite jni drives the JNI library without one; nor Python, the Go runtime or
#      Mono: the conformance kit's NumPy/PyTorch, Go, Java and C# subjects (suites
#      conformance-python, conformance-vm) run in pass 1 only, Java in 2 as well)
#   4. clang with ThreadSanitizer: the core, cpp, jni, gonative, interop-native and conformance
#      suites (built without the device backends)
#   5. gcc, -Werror, -Ddefault_library=shared (a distribution's kind of build: no archive is
#      installed): every suite of the core (the tests of its internals link the uninstalled
#      archive of the shared library's own objects) and the consumer steps for what it installs
#      (C and C++ shared, Rust with no variable, Go); the bindings' own suites run in pass 1
#   C#: suite csharp-native (the P/Invoke library without Mono) in passes 2-4; NUnit also in 2 (ASan preloaded).
# Ends with one line "N passed, N failed, N skipped" counting Meson tests over all passes, and
# exits non-zero if any test failed or a pass ran no test.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
bash scripts/install-deps.sh test || exit 1

fuzz_seconds="${DLB_FUZZ_SECONDS:-60}"
# PoCL is always installed here: an OpenCL suite that finds no device is a failure, not a skip.
export DLB_REQUIRE_OPENCL="${DLB_REQUIRE_OPENCL:-1}"
jobs="$(nproc)"
results="$root/build-test-results"
rm -rf "$results"
mkdir -p "$results"
status=0

# setup DIR [meson options...]: configures DIR once; later runs reuse it.
setup() {
  local dir="$1"
  shift
  if [[ -f "$dir/build.ninja" ]]; then
    meson configure "$dir" "$@" >/dev/null || return 1
  else
    meson setup "$dir" "$@" >"$results/$(basename "$dir")-setup.log" 2>&1 || {
      cat "$results/$(basename "$dir")-setup.log"
      return 1
    }
  fi
}

# run_pass NAME DIR [meson test options...]: runs the tests and keeps the JSON log.
run_pass() {
  local name="$1" dir="$2"
  shift 2
  echo "=== pass: $name"
  # Meson names the log after the wrapper (testlog-valgrind.json): take the one this run wrote.
  rm -f "$dir"/meson-logs/testlog*.json
  if ! meson test -C "$dir" --print-errorlogs --num-processes "$jobs" "$@"; then
    status=1
  fi
  local log
  log=$(ls -t "$dir"/meson-logs/testlog*.json 2>/dev/null | head -n 1)
  if [[ -n "$log" ]]; then
    cp "$log" "$results/$name.json"
  else
    echo "pass $name wrote no test log" >&2
    status=1
  fi
}

build() {
  local dir="$1"
  ninja -C "$dir" || { echo "build of $dir failed" >&2; return 1; }
}

# 1. gcc release build, warnings are errors.
if setup build-test -Dwerror=true && build build-test; then
  run_pass gcc build-test
else
  status=1
fi

# 2. clang + ASan + UBSan (+ libFuzzer), warnings are errors.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
if CC=clang CXX=clang++ setup build-asan -Dwerror=true -Db_sanitize=address,undefined \
     -Db_lundef=false -Dfuzz_seconds="$fuzz_seconds" -Dbenchmarks=disabled -Drust=disabled &&
   build build-asan; then
  run_pass asan-ubsan build-asan
else
  status=1
fi

# 3. valgrind over the release build: any error or leak fails the test. Suite remote's scripts
# (Python drivers of other processes) are left out; its C tests run.
if [[ -f build-test/build.ninja ]]; then
  # PoCL (the OpenCL on the CPU) and its LLVM leak and trip valgrind in their own code: their
  # reports are suppressed by object name, nothing in dlbridge is.
  # --fair-sched=yes: valgrind runs one thread at a time, and its default lock lets a thread that
  # polls (a UCX worker, a channel's spin before it sleeps) take the lock back at once, on a
  # two-core machine for seconds on end, while a thread back from poll() waits for it. The remote
  # suite's peers then miss each other's time limits (seen: a handshake starved for 10 s, and the
  # listener waiting on for a next peer). The fair lock hands it over in turn.
  run_pass valgrind build-test --suite core --suite cpp --suite examples --suite cuda --suite opencl --suite jni \
    --suite gonative --suite interop-native --suite csharp-native --suite swig-native --suite ipc \
    --suite remote --no-suite remote-scripts --suite conformance --no-suite conformance-python --no-suite conformance-vm \
    --timeout-multiplier 10 \
    --wrap="valgrind --fair-sched=yes --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible --suppressions=$root/tests/opencl/pocl-valgrind.supp --suppressions=$root/tests/remote/ucx-valgrind.supp"
fi

# 4. ThreadSanitizer over the suites that share tensors between threads.
if CC=clang CXX=clang++ setup build-tsan -Db_sanitize=thread -Db_lundef=false -Dcuda=disabled \
     -Dopencl=disabled -Dbenchmarks=disabled -Dexamples=disabled -Drust=disabled &&
   build build-tsan; then
  # No JVM runs under TSan (the Maven test is not registered there): suite jni covers the JNI
  # library, including a release on a thread the JVM never saw.
  run_pass tsan build-tsan --suite core --suite cpp --suite jni --suite gonative --suite interop-native --suite csharp-native --suite swig-native --suite ipc --suite remote --no-suite remote-scripts \
    --suite conformance
else
  status=1
fi

# 5. The shared-library-only build (the bindings are covered by pass 1).
if setup build-shared -Dwerror=true -Ddefault_library=shared -Djava=disabled -Dcsharp=disabled \
     -Dgo=disabled -Drust=disabled && build build-shared; then
  run_pass shared build-shared
else
  status=1
fi

python3 - "$results" <<'PY' || status=1
import json, pathlib, re, sys
results = pathlib.Path(sys.argv[1])
failure_line = re.compile(r"ERROR|FAIL|CRASH|panicked|Exception|Assertion|==[0-9]+== [A-Z][a-z]+ |lost in loss record")
totals = {"passed": 0, "failed": 0, "skipped": 0}
empty = []
for log in sorted(results.glob("*.json")):
    count = 0
    for line in log.read_text().splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        count += 1
        result = entry["result"]
        if result in ("OK", "EXPECTEDFAIL"):
            totals["passed"] += 1
        elif result == "SKIP":
            totals["skipped"] += 1
        else:
            totals["failed"] += 1
            print(f"FAILED in pass {log.stem}: {entry['name']} ({result})")
            # What it printed, here too: CI's report keeps only the end of the run. Its first
            # lines that say what failed (a test killed for time says which case it was in,
            # then valgrind may print pages of leak records), then its last lines.
            printed = (entry.get("stdout") or "") + "\n" + (entry.get("stderr") or "")
            lines = [text for text in printed.splitlines() if text.strip()]
            failures = [text for text in lines if failure_line.search(text)][:8]
            for text in failures + ["..."] + lines[-6:]:
                print(f"  | {text[:200]}")
    print(f"pass {log.stem}: {count} tests")
    if count == 0:
        empty.append(log.stem)
for name in empty:
    print(f"pass {name} ran no test")
    totals["failed"] += 1
if not list(results.glob("*.json")):
    totals["failed"] += 1
print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
sys.exit(1 if totals["failed"] else 0)
PY
summary_status=$?
[[ $status -eq 0 && $summary_status -eq 0 ]]
