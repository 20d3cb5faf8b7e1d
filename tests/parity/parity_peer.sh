#!/bin/sh
# What DLBRIDGE_PARITY_PEER names: parity_peer, started without the LD_PRELOAD of its caller. The
# Java and C# hosts of the sanitizer pass preload the shared ASan runtime, and a program that
# carries its own (the peer, built with -fsanitize=address) aborts when a second one is loaded.
unset LD_PRELOAD
exec "$(dirname "$0")/parity_peer" "$@"
