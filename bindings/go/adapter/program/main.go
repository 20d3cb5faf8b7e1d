// Command program is the Go adapter's one program (dlbridge_adapter_go), beside its library
// (../cshared): each cross-language check that needs a Go process is one of its subcommands.
//
//	dlbridge_adapter_go interop-host [--self-test] ADAPTER.so...  the interop matrix's Go host
//	dlbridge_adapter_go parity [--steps STEPS]  the parity rows, or one row (a channel's peer)
package main

import (
	"fmt"
	"os"

	"github.com/dlbridge/dlbridge/bindings/go/adapter/host"
	"github.com/dlbridge/dlbridge/bindings/go/adapter/parity"
)

func main() {
	if len(os.Args) >= 2 {
		switch os.Args[1] {
		case "interop-host":
			os.Exit(host.Run(os.Args[2:]))
		case "parity":
			os.Exit(parity.Run(os.Args[2:]))
		}
	}
	fmt.Fprintln(os.Stderr, "usage: dlbridge_adapter_go interop-host [--self-test] ADAPTER.so...\n"+
		"       dlbridge_adapter_go parity [--steps STEPS]")
	os.Exit(2)
}
