// A program outside the dlbridge tree that uses the Go binding the way a user does: its go.mod
// requires the module and (for this test) replaces it with a local copy; `go build` finds the
// installed C library through pkg-config. Run by tests/consumers/run_consumers.sh.
package main

import (
	"errors"
	"fmt"
	"os"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
)

func run() error {
	x, err := dlbridge.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if err != nil {
		return err
	}
	defer x.Close()
	tr, err := x.Transpose()
	if err != nil {
		return err
	}
	c, err := tr.CopyTo(dlbridge.CPU)
	tr.Close()
	if err != nil {
		return err
	}
	p, err := c.ExportVersioned()
	if err != nil {
		return err
	}
	back, err := dlbridge.ImportVersioned(p)
	if err != nil {
		return err
	}
	defer back.Close()
	values, err := back.Float32s()
	if err != nil {
		return err
	}
	shape, _ := back.Shape()
	dt, _ := back.DType()
	fmt.Printf("%v %v %v\n", dt, shape, values)
	if _, err := x.Int32s(); !errors.Is(err, dlbridge.ErrInvalidArgument) {
		return fmt.Errorf("wrong element type accepted: %v", err)
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if n := dlbridge.LiveCount(); n != 0 {
		fmt.Fprintf(os.Stderr, "%d tensors left\n", n)
		os.Exit(1)
	}
}
