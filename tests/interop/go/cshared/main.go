// Command cshared is the Go agent of the interop matrix as a native library: built with
// `go build -buildmode=c-shared`, it exports interop_agent_get (interop_agent.h) for any host
// that dlopens it (the C, Rust and Java hosts). Its entry points are package agent's.
package main

import "C"

import (
	"unsafe"

	"github.com/dlbridge/dlbridge/tests/interop/go/agent"
)

// interop_agent_get returns the Go agent's table (a const interop_agent*).
//
//export interop_agent_get
func interop_agent_get() unsafe.Pointer { return agent.Table() }

func main() {}
