#!/usr/bin/env python3
"""Suite ipc across languages: every language's peer consumes what every language's peer
produces, through a channel between two processes (README.md, "The peer protocol"); with
--remote, suite remote's pairs over tcp:// (README.md, "The remote peer protocol").

usage: run_languages.py NAME=COMMAND [NAME=COMMAND ...]
       run_languages.py --remote [--probe COMMAND] [--ucx NAME]... NAME=COMMAND [...]

COMMAND is run with the shell, followed by `consume PATH` or `produce PATH`. For each ordered
pair (producer, consumer), same language included, the consumer is started first and must
print `ready` once it listens; then the producer runs; both must exit 0 having printed
`produce ok` and `consume ok`. Prints one line per pair and last `N passed, N failed`.

With --remote: the consumer runs `remote-consume KEYHEX` (a fresh random key per pair) and
prints `ready PORT`; the producer runs `remote-produce tcp://127.0.0.1:PORT KEYHEX`. Each
language named by --ucx also runs its pair with itself over ucx:// (`remote-consume KEYHEX ucx`,
UCX's own choice of transports: shared memory here). --probe COMMAND exits 77 with the reason
when this machine cannot make remote channels: the run is then skipped (77)."""

import os
import shlex
import signal
import shutil
import subprocess
import sys
import tempfile
import threading

READY_SECONDS = 120  # a runtime starting (a JVM, mono) on a loaded CI machine
PAIR_SECONDS = 180
# How long a remote consumer may take to finish once its producer failed (it may be waiting in
# accept for a producer that never connected).
GRACE_SECONDS = 15


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


def kill_group(process):
    """Kills a process started with start_new_session and everything it started: the shell's
    children (a JVM, mono) would otherwise keep the pipes open."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_group(command, seconds):
    """Runs command with the shell in a session of its own: (exit status, stdout, stderr), or
    None when it ran past `seconds` (it is then killed with what it started)."""
    process = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        kill_group(process)
        process.communicate()
        return None
    return process.returncode, out, err


def remote_exchange(producer, consumer, peers, scheme):
    key = os.urandom(32).hex()
    consume_args = f"remote-consume {key}" + ("" if scheme == "tcp" else f" {scheme}")
    consume = subprocess.Popen(f"{peers[consumer]} {consume_args}", shell=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        ready = read_line_with_timeout(consume.stdout, READY_SECONDS)
        words = (ready or "").split()
        if len(words) != 2 or words[0] != "ready" or not words[1].isdigit():
            kill_group(consume)
            out, err = consume.communicate()
            return f"the consumer did not print 'ready PORT' (got {ready!r}): {out}{err}"
        address = f"{scheme}://127.0.0.1:{words[1]}"
        produce = run_group(f"{peers[producer]} remote-produce {address} {key}", PAIR_SECONDS)
        if produce is None:
            return "the producer did not finish"
        produced, produce_out, produce_err = produce
        try:
            out, err = consume.communicate(
                timeout=PAIR_SECONDS if produced == 0 else GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            kill_group(consume)
            out, err = consume.communicate()
            err += "\n(the consumer did not finish: killed)"
    finally:
        if consume.poll() is None:
            kill_group(consume)
            consume.communicate()
    problems = []
    if produced != 0 or "produce ok" not in produce_out.splitlines():
        problems.append(f"producer exit {produced}: " + (produce_out + produce_err).strip())
    if consume.returncode != 0 or "consume ok" not in out.splitlines():
        problems.append(f"consumer exit {consume.returncode}: " + (out + err).strip())
    return "; ".join(problems)


def main():
    args = sys.argv[1:]
    remote = probe = None
    ucx = []
    peers = {}
    while args:
        arg = args.pop(0)
        if arg == "--remote":
            remote = True
        elif arg in ("--probe", "--ucx") and args:
            if arg == "--probe":
                probe = args.pop(0)
            else:
                ucx.append(args.pop(0))
        else:
            name, _, command = arg.partition("=")
            if not command:
                sys.exit(f"not NAME=COMMAND: {arg}")
            peers[name] = command
    if not peers:
        sys.exit(__doc__)
    pairs = [(producer, consumer, "tcp") for producer in peers for consumer in peers]
    if remote:
        if probe:
            answer = subprocess.run(probe, shell=True, capture_output=True, text=True)
            if answer.returncode == 77:
                print("skipped: " + (answer.stdout + answer.stderr).strip())
                return 77
            if answer.returncode != 0:
                print(f"the probe failed (exit {answer.returncode}): "
                      + (answer.stdout + answer.stderr).strip())
                return 1
        pairs += [(name, name, "ucx") for name in ucx if name in peers]
    passed = failed = 0
    for producer, consumer, scheme in pairs:
        if remote:
            problem = remote_exchange(producer, consumer, peers, scheme)
        else:
            problem = exchange(producer, consumer, peers)
        where = f" ({scheme}://)" if remote else ""
        if problem:
            failed += 1
            print(f"FAIL {producer} -> {consumer}{where}: {problem}")
        else:
            passed += 1
            print(f"ok   {producer} -> {consumer}{where}")
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
