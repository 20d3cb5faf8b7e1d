// Command host is the Go host of the interop matrix: the Go agent (package interop) runs in this
// process, the other agents are loaded from the native libraries named on the command line
// (the C agent, the Rust cdylib, ...), and the shared C runner runs every ordered pair with Go
// on one side. The runner is the library Meson builds (libinterop_runner.a), which the build
// names in CGO_LDFLAGS. Usage: host [--self-test] AGENT.so...
//
// A Go c-shared library cannot be loaded here (a second Go runtime in one process is not
// supported): Go's side is the agent linked into this program.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../tests/interop
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "interop_runner.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/adapter/interop"
)

func main() {
	agents := []*C.interop_agent{(*C.interop_agent)(interop.Table())}
	sabotage := C.int(0)
	for _, arg := range os.Args[1:] {
		if arg == "--self-test" {
			sabotage = 1
			continue
		}
		path := C.CString(arg)
		a := C.interop_load_agent(path)
		C.free(unsafe.Pointer(path))
		if a == nil {
			os.Exit(1)
		}
		agents = append(agents, a)
	}
	const maxAgents = 16
	if len(agents) > maxAgents {
		fmt.Fprintln(os.Stderr, "too many agents")
		os.Exit(2)
	}
	// The agent tables are static C memory, so a C array of their addresses holds no Go pointer.
	table := (*[maxAgents]*C.interop_agent)(C.malloc(C.size_t(maxAgents) * C.size_t(unsafe.Sizeof(agents[0]))))
	copy(table[:], agents)
	name := C.CString("go")
	failed := C.interop_run_matrix(&table[0], C.int(len(agents)), name, name, sabotage)
	C.free(unsafe.Pointer(name))
	C.free(unsafe.Pointer(table))
	if failed != 0 {
		os.Exit(1)
	}
}
