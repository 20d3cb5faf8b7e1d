package dlbridge_test

import (
	"errors"
	"testing"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// Statuses are constants a switch can name; ErrClosed is StatusClosed with the core's message.
func TestStatusesAndErrClosed(t *testing.T) {
	leakCheck(t)
	x := get(dlbridge.FromSlice([]float32{1, 2}))(t)
	_, err := x.Int32s()
	var e *dlbridge.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v", err)
	}
	switch e.Status {
	case dlbridge.StatusInvalidArgument:
	case dlbridge.StatusClosed, dlbridge.StatusReadOnly:
		t.Fatalf("status %v", e.Status)
	default:
		t.Fatalf("status %v", e.Status)
	}
	mustClose(t, x)
	_, err = x.Shape()
	wantError(t, err, dlbridge.StatusClosed, capi.DLB_CLOSED_MESSAGE)
	if err != dlbridge.ErrClosed || !errors.Is(err, dlbridge.ErrClosed) || errors.Is(err, dlbridge.ErrInvalidArgument) {
		t.Fatalf("ErrClosed: %v", err)
	}
	if int(dlbridge.StatusClosed) != capi.DLB_ERR_CLOSED || dlbridge.StatusClosed.String() != "DLB_ERR_CLOSED" {
		t.Errorf("StatusClosed %d %v", dlbridge.StatusClosed, dlbridge.StatusClosed)
	}
	if err := x.Close(); err != nil { // a second Close does nothing
		t.Fatal(err)
	}
}
