// Package host is the Go host of the interop matrix, the subcommand `interop-host` of the Go
// adapter's program (../program): the Go adapter's table (package conformance) runs in this
// process (a second Go runtime, a Go c-shared library, cannot be loaded into it), the other
// adapters are loaded from the libraries named on the command line, and the shared C runner
// (libinterop_runner.a, which the build names in CGO_LDFLAGS) runs every ordered pair with Go
// on one side. Usage: interop-host [--self-test] ADAPTER.so...
package host

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../tests/interop -I${SRCDIR}/../../../../conformance/include
#cgo CFLAGS: -I${SRCDIR}/../../../../core/include
#include <stdlib.h>
#include "interop_runner.h"
*/
import "C"

import (
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/adapter/conformance"
)

// Run runs the matrix over the adapters args names; it returns the exit status.
func Run(args []string) int {
	// The tables are C memory, so C may read this Go array of their addresses.
	subjects := []*C.dlpc_subject{(*C.dlpc_subject)(conformance.Table())}
	sabotage := C.int(0)
	for _, arg := range args {
		if arg == "--self-test" {
			sabotage = 1
			continue
		}
		path := C.CString(arg)
		subject := C.interop_load_subject(path)
		C.free(unsafe.Pointer(path))
		if subject == nil {
			return 1
		}
		subjects = append(subjects, subject)
	}
	name := C.CString("go")
	defer C.free(unsafe.Pointer(name))
	if C.interop_run_matrix(&subjects[0], C.int(len(subjects)), name, name, sabotage) != 0 {
		return 1
	}
	return 0
}
