// Command cshared is the Go adapter as a native library: built with
// `go build -buildmode=c-shared`, it exports both entry points of the project's cross-language
// checks for any host that dlopens it:
//
//   - interop_agent_get (tests/interop/interop_agent.h): the interop matrix's Go agent, for the C,
//     Rust, Java and C# hosts;
//   - dlpack_conformance_subject (conformance/include/dlpack_conformance.h): the conformance
//     kit's Go subject.
//
// The entry points are packages interop's and conformance's.
package main

import "C"

import (
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/adapter/conformance"
	"github.com/dlbridge/dlbridge/bindings/go/adapter/interop"
)

// interop_agent_get returns the Go agent's table (a const interop_agent*).
//
//export interop_agent_get
func interop_agent_get() unsafe.Pointer { return interop.Table() }

// dlpack_conformance_subject returns the Go subject's table (a const dlpc_subject*).
//
//export dlpack_conformance_subject
func dlpack_conformance_subject() unsafe.Pointer { return conformance.Table() }

func main() {}
