#!/usr/bin/env python3
"""Suite ipc across languages: every language's peer consumes what every language's peer
produces, through a channel between two processes (README.md, "The peer protocol"); with
--remote, suite remote's pairs over tcp:// (README.md, "The remote peer protocol").

usage: run_languages.py [--steps] NAME=COMMAND [[--steps] NAME=COMMAND ...]
       run_languages.py --remote [--probe COMMAND] [--ucx NAME]... [--steps] NAME=COMMAND [...]

A peer is one of two kinds. COMMAND alone is a peer written in code (C's ipc_peer): it is run
with the shell followed by `consume PATH` or `produce PATH` and must exit 0 having printed
`consume ok` or `produce ok`. `--steps NAME=COMMAND` is a language's parity program, which runs
one row of steps (tests/parity/README.md, "Steps") given after `--steps`: this script holds each
role's steps and checks every line the program prints. For each ordered pair (producer,
consumer), same language included, the consumer is started first and must print `ready` once it
listens; then the producer runs. Prints one line per pair and last `N passed, N failed`.

With --remote: the consumer runs `remote-consume KEYHEX` (a fresh random key per pair) and
prints `ready PORT`; the producer runs `remote-produce tcp://127.0.0.1:PORT KEYHEX`. Each
language named by --ucx also runs its pair with itself over ucx:// (`remote-consume KEYHEX ucx`,
UCX's own choice of transports). --probe COMMAND exits 77 with the reason when this machine
cannot make remote channels: the run is then skipped (77)."""

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
# How long a consumer may take to finish once its producer failed (it may be waiting in accept
# for a producer that never connected).
GRACE_SECONDS = 15


def listing(values):
    return "[" + ",".join(str(v) for v in values) + "]"


# The roles as step rows (README.md, "The peer protocol"): the steps, then the lines the row must
# print after `ready` (a consumer's first line), its own line last (`steps<TAB>STATUS<TAB>detail`;
# None as the detail: any message). One list for every language that runs steps.
SECOND = "shape=[7,8] flags=2 values=" + listing(range(56))


def consume_role(address, key, remote):
    listen = f"listen_at {address}" + (f" {key}" if key else "")
    # The producer may be a runtime starting on a loaded machine: accept waits as long as `ready`.
    steps = (f"{listen} ; accept {READY_SECONDS} ; receive ; copy_out float32 ; "
             "print dtype shape flags values ; view float32 0 100 ; send ; receive ; "
             "copy_out float32 ; print shape flags values ; receive")
    first = "dtype=float32 shape=[2,3] flags=" + ("2" if remote else "0") + " values=[0,1,2,3,4,5]"
    closed = None if remote else "the peer closed the channel"
    return steps, [first, SECOND, ("DLB_ERR_PEER_CLOSED", closed)]


def produce_role(address, key, remote):
    connect = f"connect {address}" + (f" {key}" if key else "")
    if remote:  # ordinary memory, copied across: our own element stays 0
        return (f"{connect} ; iota 2,3 ; send ; receive ; element 0,0 ; print value ; base ; "
                "element 0,0 ; print value ; iota 7,8 ; send",
                ["value=100", "value=0", ("DLB_OK", "")])
    # shareable memory, shared: the consumer's write is in our own tensor
    return (f"{connect} ; shareable 2,3 ; send ; receive ; element 0,0 ; print value ; base ; "
            "element 0,0 ; print value ; iota 7,8 ; send_copy",
            ["value=100", "value=100", ("DLB_OK", "")])


class Peer:
    """One language's peer: a command and whether it runs steps."""

    def __init__(self, command, steps):
        self.command, self.steps = command, steps

    def role(self, name, address, key, remote):
        """(command line, check) for a role at address (the consumer's: where it listens), with
        key when remote: check(stdout after the ready line) is '' when the role did its part,
        else what went wrong."""
        if not self.steps:  # C's words: README.md, "The remote peer protocol"
            scheme = address.partition("://")[0]
            args = {("consume", False): [address], ("produce", False): [address],
                    ("consume", True): [key] + ([scheme] if scheme != "tcp" else []),
                    ("produce", True): [address, key]}[(name, remote)]
            word = ("remote-" if remote else "") + name
            command = " ".join([self.command, word] + [shlex.quote(a) for a in args])
            return command, lambda out: "" if f"{name} ok" in out.splitlines() else \
                f"no '{name} ok'"
        steps, expected = (consume_role if name == "consume" else produce_role)(
            address, key, remote)
        return f"{self.command} --steps {shlex.quote(steps)}", lambda out: compare(out, expected)


def compare(out, expected):
    lines = out.splitlines()
    if len(lines) != len(expected):
        return f"printed {len(lines)} lines where {len(expected)} were expected"
    for line, want in zip(lines, expected):
        if isinstance(want, tuple):
            fields = line.split("\t")
            status, detail = want
            if len(fields) != 3 or fields[1] != status or (detail is not None
                                                            and fields[2] != detail):
                return f"the row's line is {line!r}, not {status} {detail or ''}".rstrip()
        elif line != want:
            return f"printed {line!r} where {want!r} was expected"
    return ""


def read_line_with_timeout(stream, seconds):
    line = []

    def read():
        line.append(stream.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(seconds)
    return line[0] if line else None


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


def exchange(producer, consumer, scheme):
    """One pair: '' when both did their part, else what went wrong. scheme is None for a local
    channel (a socket in a fresh folder), else the remote scheme."""
    remote = scheme is not None
    key = os.urandom(32).hex() if remote else None
    folder = None if remote else tempfile.mkdtemp(prefix="dlbridge-ipc-")  # mode 0700
    path = None if remote else os.path.join(folder, "channel.sock")
    listen_at = f"{scheme}://127.0.0.1:0" if remote else path
    command, consumed = consumer.role("consume", listen_at, key, remote)
    consume = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        ready = read_line_with_timeout(consume.stdout, READY_SECONDS)
        words = (ready or "").split()
        if remote and (len(words) != 2 or words[0] != "ready" or not words[1].isdigit()) or \
                not remote and words != ["ready"]:
            kill_group(consume)
            out, err = consume.communicate()
            want = "ready PORT" if remote else "ready"
            return f"the consumer did not print '{want}' (got {ready!r}): {out}{err}"
        address = f"{scheme}://127.0.0.1:{words[1]}" if remote else path
        command, produced = producer.role("produce", address, key, remote)
        produce = run_group(command, PAIR_SECONDS)
        if produce is None:
            return "the producer did not finish"
        status, produce_out, produce_err = produce
        try:
            out, err = consume.communicate(timeout=PAIR_SECONDS if status == 0 else GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            kill_group(consume)
            out, err = consume.communicate()
            err += "\n(the consumer did not finish: killed)"
    finally:
        if consume.poll() is None:
            kill_group(consume)
            consume.communicate()
        if folder:
            left = os.path.exists(path)
            shutil.rmtree(folder, ignore_errors=True)
    problems = []
    problem = produced(produce_out)
    if status != 0 or problem:
        problems.append(f"producer exit {status}, {problem}: "
                        + (produce_out + produce_err).strip())
    problem = consumed(out)
    if consume.returncode != 0 or problem:
        problems.append(f"consumer exit {consume.returncode}, {problem}: " + (out + err).strip())
    if folder and left:
        problems.append("the consumer left its socket file")
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
        elif arg in ("--probe", "--ucx", "--steps") and args:
            if arg == "--probe":
                probe = args.pop(0)
            elif arg == "--ucx":
                ucx.append(args.pop(0))
            else:
                name, _, command = args.pop(0).partition("=")
                peers[name] = Peer(command, True)
        else:
            name, _, command = arg.partition("=")
            if not command:
                sys.exit(f"not NAME=COMMAND: {arg}")
            peers[name] = Peer(command, False)
    if not peers or any(not peer.command for peer in peers.values()):
        sys.exit(__doc__)
    scheme = "tcp" if remote else None
    pairs = [(producer, consumer, scheme) for producer in peers for consumer in peers]
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
        problem = exchange(peers[producer], peers[consumer], scheme)
        where = f" ({scheme}://)" if scheme else ""
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
