#!/usr/bin/env python3
"""Suite ipc across languages: every language's peer consumes what every language's peer
produces, through a channel between two processes (README.md, "The peer protocol").

usage: run_languages.py NAME=COMMAND [NAME=COMMAND ...]

COMMAND is run with the shell, followed by `consume PATH` or `produce PATH`. For each ordered
pair (producer, consumer), same language included, the consumer is started first and must
print `ready` once it listens; then the producer runs; both must exit 0 having printed
`produce ok` and `consume ok`. Prints one line per pair and last `N passed, N failed`."""

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading

READY_SECONDS = 120  # a runtime starting (a JVM, mono) on a loaded CI machine
PAIR_SECONDS = 180


def read_line_with_timeout(stream, seconds):
    line = []

    def read():
        line.append(stream.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(seconds)
    return line[0] if line else None


def exchange(producer, consumer, peers):
    folder = tempfile.mkdtemp(prefix="dlbridge-ipc-")  # mode 0700: the user's alone
    path = os.path.join(folder, "channel.sock")
    try:
        consume = subprocess.Popen(f"{peers[consumer]} consume {shlex.quote(path)}", shell=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            ready = read_line_with_timeout(consume.stdout, READY_SECONDS)
            if ready is None or ready.strip() != "ready":
                consume.kill()
                out, err = consume.communicate()
                return f"the consumer did not print 'ready' (got {ready!r}): {out}{err}"
            try:
                produce = subprocess.run(f"{peers[producer]} produce {shlex.quote(path)}",
                                         shell=True, capture_output=True, text=True,
                                         timeout=PAIR_SECONDS)
            except subprocess.TimeoutExpired:
                return "the producer did not finish"
            out, err = consume.communicate(timeout=PAIR_SECONDS)
        except subprocess.TimeoutExpired:
            consume.kill()
            consume.communicate()
            return "the consumer did not finish"
        problems = []
        if produce.returncode != 0 or "produce ok" not in produce.stdout.splitlines():
            problems.append(f"producer exit {produce.returncode}: "
                            + (produce.stdout + produce.stderr).strip())
        if consume.returncode != 0 or "consume ok" not in out.splitlines():
            problems.append(f"consumer exit {consume.returncode}: " + (out + err).strip())
        if os.path.exists(path):
            problems.append("the consumer left its socket file")
        return "; ".join(problems)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main():
    peers = {}
    for arg in sys.argv[1:]:
        name, _, command = arg.partition("=")
        if not command:
            sys.exit(f"not NAME=COMMAND: {arg}")
        peers[name] = command
    if not peers:
        sys.exit(__doc__)
    passed = failed = 0
    for producer in peers:
        for consumer in peers:
            problem = exchange(producer, consumer, peers)
            if problem:
                failed += 1
                print(f"FAIL {producer} -> {consumer}: {problem}")
            else:
                passed += 1
                print(f"ok   {producer} -> {consumer}")
            sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
