// Command cshared is the Go adapter as a native library: built with
// `go build -buildmode=c-shared`, it exports the adapter's one table,
// dlpack_conformance_subject (conformance/include/dlpack_conformance.h): the conformance kit's
// Go subject and, through its exchange extension, the interop matrix's Go side for the C, Rust,
// Java and C# hosts. The table is package conformance's.
package main

import "C"

import (
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/adapter/conformance"
)

// dlpack_conformance_subject returns the Go adapter's table (a const dlpc_subject*).
//
//export dlpack_conformance_subject
func dlpack_conformance_subject() unsafe.Pointer { return conformance.Table() }

func main() {}
