#!/bin/sh
# A C peer that a managed runtime starts, started without the runtime's LD_PRELOAD: Meson copies
# this script beside the peer under the peer's name with ".sh" (parity_peer.sh, ipc_peer.sh), and
# it runs the program of its own name without ".sh". The Java and C# hosts of the sanitizer pass
# preload the shared ASan runtime, and a program that carries its own (a peer built with
# -fsanitize=address) aborts when a second one is loaded.
unset LD_PRELOAD
exec "${0%.sh}" "$@"
