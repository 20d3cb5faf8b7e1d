package dlbridge_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
)

// leakCheck makes the test fail unless every tensor the core made during it is freed by the
// end (after giving finalizers a chance, for tests that leave tensors to them).
func leakCheck(t testing.TB) {
	t.Helper()
	start := dlbridge.LiveCount()
	t.Cleanup(func() {
		if !waitLive(start) {
			t.Errorf("LiveCount is %d after the test, %d before", dlbridge.LiveCount(), start)
		}
	})
}

// waitLive runs the garbage collector until LiveCount is want (finalizers free unclosed
// tensors), for at most ten seconds.
func waitLive(want int64) bool {
	deadline := time.Now().Add(10 * time.Second)
	for dlbridge.LiveCount() != want {
		if time.Now().After(deadline) {
			return false
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	return true
}

// wantError asserts the status and the exact message of err, and errors.Is with the sentinel.
func wantError(t testing.TB, err error, status dlbridge.Status, message string) {
	t.Helper()
	var e *dlbridge.Error
	if !errors.As(err, &e) {
		t.Fatalf("got error %v, want a *dlbridge.Error %v %q", err, status, message)
	}
	if e.Status != status || e.Message != message {
		t.Fatalf("got (%v, %q), want (%v, %q)", e.Status, e.Message, status, message)
	}
	if !errors.Is(err, &dlbridge.Error{Status: status}) {
		t.Fatalf("errors.Is(%v, sentinel of %v) is false", err, status)
	}
}

// get(f())(t) is f's value, or a fatal error.
func get[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func noErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustClose(t testing.TB, ts ...*dlbridge.Tensor) {
	t.Helper()
	for _, x := range ts {
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
