#!/usr/bin/env python3
"""A remote channel across a network link: two network namespaces joined by a veth pair.

    run_netns.py NETNS_PEER

The listener (netns_peer serve) runs in one namespace, the senders in the other, over tcp://
(UCX's TCP transport on the veth, not lo). In order, against one listener:
  1. the peer protocol (netns_peer produce / consume) succeeds at both ends;
  2. a sender with another key is refused DLB_ERR_PERMISSION at both ends;
  3. a sender streams large tensors; once the listener has received some, the veth pair is
     deleted under the transfer: the listener's receive must fail DLB_ERR_PEER_CLOSED or
     DLB_ERR_TIMEOUT within its time limit (never hang);
  4. a new veth pair with the same addresses: the same listener accepts a new sender, and the
     peer protocol succeeds again.
Needs root (ip netns add); otherwise, or where remote channels are unavailable, exits 77 with the
reason. Everything it creates (namespaces, links, processes) is removed, also on failure.
"""
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time

SKIP = 77
TIME_LIMIT_MS = 5000       # the channels' time limit (dlb_channel_options_set_timeout)
STEP_SECONDS = 60          # the most any one step may take before the test gives up
STREAM_BYTES = 128 << 20   # each streamed tensor: long enough on the wire to be cut inside

KEY = "7a" * 32
OTHER_KEY = "5c" * 32


def ip(*args, check=True):
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {result.stderr.strip()}")
    return result


class Lines:
    """A child's stdout, line by line, with a deadline on each wait."""

    def __init__(self, process, name):
        self.process = process
        self.name = name
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, prefix, seconds=STEP_SECONDS):
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self.name}: no line '{prefix}...' in {seconds} s; "
                                     f"it printed {self.seen}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"{self.name} ended (status {self.process.wait()}) before "
                                     f"a line '{prefix}...'; it printed {self.seen}")
            self.seen.append(line)
            if line.startswith(prefix):
                return line


class Network:
    """Two namespaces, a veth pair between them, a /30 chosen from this run's pid."""

    def __init__(self):
        tag = os.getpid()
        self.listener_ns = f"dlb-l{tag}"
        self.sender_ns = f"dlb-s{tag}"
        self.listener_link = f"dlbl{tag}"[:15]
        self.sender_link = f"dlbs{tag}"[:15]
        base = 4 * (tag % (1 << 14))  # a /30 inside 10.200.0.0/16
        self.listener_ip = f"10.200.{base >> 8}.{(base & 255) + 1}"
        self.sender_ip = f"10.200.{base >> 8}.{(base & 255) + 2}"
        self.made = []  # namespaces this run made, deleted in cleanup

    def add_namespaces(self):
        for ns in (self.listener_ns, self.sender_ns):
            ip("netns", "add", ns)
            self.made.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")

    def link(self):
        """Joins the namespaces with a new veth pair (the sender's end is made in its own
        namespace, so nothing is ever created in the caller's)."""
        ip("-n", self.sender_ns, "link", "add", self.sender_link, "type", "veth", "peer", "name",
           self.listener_link, "netns", self.listener_ns)
        ip("-n", self.listener_ns, "addr", "add", f"{self.listener_ip}/30", "dev",
           self.listener_link)
        ip("-n", self.sender_ns, "addr", "add", f"{self.sender_ip}/30", "dev", self.sender_link)
        ip("-n", self.listener_ns, "link", "set", self.listener_link, "up")
        ip("-n", self.sender_ns, "link", "set", self.sender_link, "up")
        # A veth pair reports its carrier a moment after both ends are up; a connect before then
        # finds no route (UCX: Destination is unreachable).
        end = time.monotonic() + 10
        while not all("state UP" in ip("-n", ns, "link", "show", "dev", dev).stdout
                      for ns, dev in ((self.listener_ns, self.listener_link),
                                      (self.sender_ns, self.sender_link))):
            if time.monotonic() > end:
                raise RuntimeError("the veth pair did not come up in 10 s")
            time.sleep(0.05)

    def cut(self):
        """Deletes the veth pair: packets stop, and no FIN or RST ever reaches the listener."""
        ip("-n", self.sender_ns, "link", "del", self.sender_link)

    def cleanup(self):
        for ns in reversed(self.made):
            ip("netns", "del", ns, check=False)
        self.made = []


def run_in(ns, argv, stdout=subprocess.PIPE):
    return subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=stdout,
                            stderr=subprocess.PIPE, text=True)


def finish(process, name, seconds=STEP_SECONDS):
    try:
        out, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"{name} did not finish in {seconds} s: {out}{err}")
    return process.returncode, out, err


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    peer = sys.argv[1]
    if os.geteuid() != 0:
        print("skipped: network namespaces need root (ip netns add)")
        return SKIP
    if shutil.which("ip") is None:
        print("skipped: no ip command (iproute2) to make network namespaces")
        return SKIP
    probe = subprocess.run([peer, "available"], capture_output=True, text=True)
    if probe.returncode == SKIP:
        print(f"skipped: {probe.stdout.strip()}")
        return SKIP
    if probe.returncode != 0:
        print(f"netns_peer available failed: {probe.stdout}{probe.stderr}")
        return 1

    net = Network()
    children = []

    def stop_children():
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()

    def on_signal(signum, _frame):
        stop_children()
        net.cleanup()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        try:
            net.add_namespaces()
        except RuntimeError as e:
            print(f"skipped: {e}")
            return SKIP
        net.link()

        listener = run_in(net.listener_ns,
                          [peer, "serve", f"tcp://{net.listener_ip}:0", KEY, str(TIME_LIMIT_MS),
                           "consume", "refuse", "cut", "consume"])
        children.append(listener)
        served = Lines(listener, "the listener")
        port = served.wait_for("ready ").split()[1]
        address = f"tcp://{net.listener_ip}:{port}"
        print(f"listener in {net.listener_ns} at {address}; senders in {net.sender_ns} "
              f"({net.sender_ip})")

        def produce(step):
            sender = run_in(net.sender_ns, [peer, "produce", address, KEY, str(TIME_LIMIT_MS)])
            children.append(sender)
            status, out, err = finish(sender, "the producer")
            assert status == 0 and "produce ok" in out, f"{step}: the producer: {out}{err}"
            served.wait_for("consume ok")
            print(f"{step}: produce ok, consume ok")

        produce("1. the peer protocol over the veth")

        refused = run_in(net.sender_ns, [peer, "refused", address, OTHER_KEY, str(TIME_LIMIT_MS)])
        children.append(refused)
        status, out, err = finish(refused, "the sender with another key")
        assert status == 0 and "refused ok" in out, f"another key: {out}{err}"
        served.wait_for("refuse ok")
        print("2. another key: refused DLB_ERR_PERMISSION at both ends")

        streamer = run_in(net.sender_ns,
                          [peer, "stream", address, KEY, str(TIME_LIMIT_MS), str(STREAM_BYTES)],
                          stdout=subprocess.DEVNULL)  # it fails once cut, as it should
        children.append(streamer)
        served.wait_for("accepted")
        served.wait_for("got 1")
        net.cut()
        cut_at = time.monotonic()
        line = served.wait_for("cut ok", seconds=TIME_LIMIT_MS / 1000 + 30)
        took = time.monotonic() - cut_at
        print(f"3. link deleted mid-stream: the listener's receive failed after {took:.1f} s "
              f"({line[len('cut ok '):]})")
        streamer.kill()
        streamer.wait()

        net.link()
        produce("4. a new link, the same listener")
        served.wait_for("serve ok")
        try:
            status = listener.wait(timeout=STEP_SECONDS)
        except subprocess.TimeoutExpired:
            raise AssertionError("the listener did not exit after its last step")
        assert status == 0, f"the listener exited {status}: {listener.stderr.read()}"
        print("netns ok")
        return 0
    except AssertionError as e:
        print(f"FAILED: {e}")
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
            err = child.stderr.read() if not child.stderr.closed else ""
            if err:
                print(f"stderr of netns_peer {child.args[5]}: {err}")
        return 1
    finally:
        stop_children()
        net.cleanup()


if __name__ == "__main__":
    sys.exit(main())
