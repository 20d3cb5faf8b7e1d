// Package host is the Go host of the interop matrix, the subcommand `interop-host` of the Go
// adapter's program (../program): the Go adapter's table (package
// conformance) runs in this process, the other adapters are loaded from the native libraries
// named on the command line (the C adapter, the Rust cdylib, ...), and the shared C runner runs
// every ordered pair with Go on one side. The runner is the library Meson builds
// (libinterop_runner.a), which the build names in CGO_LDFLAGS. Usage: interop-host [--self-test]
// ADAPTER.so...
//
// A Go c-shared library cannot be loaded here (a second Go runtime in one process is not
// supported): Go's side is the table linked into this program.
package host

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../tests/interop -I${SRCDIR}/../../../../conformance/include -I${SRCDIR}/../../../../core/include
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "interop_runner.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/adapter/conformance"
)

// Run runs the matrix over the adapters args names; it returns the exit status.
func Run(args []string) int {
	agents := []*C.dlpc_subject{(*C.dlpc_subject)(conformance.Table())}
	sabotage := C.int(0)
	for _, arg := range args {
		if arg == "--self-test" {
			sabotage = 1
			continue
		}
		path := C.CString(arg)
		a := C.interop_load_subject(path)
		C.free(unsafe.Pointer(path))
		if a == nil {
			return 1
		}
		agents = append(agents, a)
	}
	const maxAgents = 16
	if len(agents) > maxAgents {
		fmt.Fprintln(os.Stderr, "too many adapters")
		return 2
	}
	// The tables are static C memory, so a C array of their addresses holds no Go pointer.
	table := (*[maxAgents]*C.dlpc_subject)(C.malloc(C.size_t(maxAgents) * C.size_t(unsafe.Sizeof(agents[0]))))
	copy(table[:], agents)
	name := C.CString("go")
	failed := C.interop_run_matrix(&table[0], C.int(len(agents)), name, name, sabotage)
	C.free(unsafe.Pointer(name))
	C.free(unsafe.Pointer(table))
	if failed != 0 {
		return 1
	}
	return 0
}
