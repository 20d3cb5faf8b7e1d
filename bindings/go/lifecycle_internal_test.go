package dlbridge

// White-box tests of the handle's state word (a Tensor's, a Listener's): a call is held "in
// flight" with enter/leave, so that what Close and the exports do meanwhile is certain rather
// than left to timing.

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func allocateForTest(t *testing.T) *Tensor {
	t.Helper()
	x, err := Allocate(CPU, Float32, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func wantLive(t *testing.T, want int64) {
	t.Helper()
	if got := LiveCount(); got != want {
		t.Fatalf("LiveCount %d, want %d", got, want)
	}
}

func TestCloseDuringACallReleasesWhenTheCallEnds(t *testing.T) {
	start := LiveCount()
	x := allocateForTest(t)
	if !x.enter() {
		t.Fatal("enter refused on an open tensor")
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if !x.Closed() {
		t.Fatal("Closed() is false after Close")
	}
	wantLive(t, start+1) // the call in flight still uses it
	if _, err := x.Shape(); err != ErrClosed {
		t.Fatalf("a call after Close: %v, want ErrClosed", err)
	}
	if err := x.Close(); err != nil { // idempotent, and frees nothing early
		t.Fatal(err)
	}
	wantLive(t, start+1)
	x.leave() // the last call out releases
	wantLive(t, start)
	if x.addr != 0 {
		t.Fatal("the address was not moved out")
	}
}

func TestExportWaitsForCallsInFlight(t *testing.T) {
	start := LiveCount()
	x := allocateForTest(t)
	x.enter()
	exported := make(chan uintptr)
	go func() {
		p, err := x.ExportVersioned()
		if err != nil {
			t.Error(err)
		}
		exported <- uintptr(p)
	}()
	select {
	case <-exported:
		t.Fatal("the export handed the tensor over while a call was using it")
	case <-time.After(50 * time.Millisecond):
	}
	x.leave()
	p := <-exported
	if p == 0 || !x.Closed() {
		t.Fatalf("export gave %#x, Closed() = %v", p, x.Closed())
	}
	wantLive(t, start+1) // moved out, not freed: the consumer owns it
	FreeVersioned(addrToPtr(int64(p)))
	wantLive(t, start)
}

func TestRefusedLegacyExportLeavesTheTensorOpen(t *testing.T) {
	start := LiveCount()
	x, err := AllocateStrided(CPU, Float32, []int64{2}, nil, FlagReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.ExportLegacy(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("legacy export of a READ_ONLY tensor: %v", err)
	}
	if x.Closed() || x.state.Load() != 0 {
		t.Fatalf("after a refused export: Closed() = %v, state %#x", x.Closed(), x.state.Load())
	}
	if _, err := x.Shape(); err != nil {
		t.Fatal(err)
	}
	x.Close()
	wantLive(t, start)
}

// Calls, Close and exports from many goroutines at once: each tensor ends with exactly one
// owner (freed once by Close or the last call, or moved to exactly one exporter), and every
// call either ran on a live tensor or got ErrClosed.
func TestCallsCloseAndExportsRace(t *testing.T) {
	start := LiveCount()
	for i := 0; i < 300; i++ {
		x := allocateForTest(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var moved []uintptr
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				switch g {
				case 0:
					x.Close()
				case 1, 2:
					if p, err := x.ExportVersioned(); err == nil {
						mu.Lock()
						moved = append(moved, uintptr(p))
						mu.Unlock()
					} else if err != ErrClosed {
						t.Error(err)
					}
				default:
					for k := 0; k < 20; k++ {
						if s, err := x.Shape(); err == nil && (len(s) != 2 || s[0] != 2 || s[1] != 3) {
							t.Errorf("shape %v", s)
						} else if err != nil && err != ErrClosed {
							t.Error(err)
						}
					}
				}
			}(g)
		}
		wg.Wait()
		if len(moved) > 1 {
			t.Fatalf("%d exporters got the same tensor", len(moved))
		}
		for _, p := range moved {
			FreeVersioned(addrToPtr(int64(p)))
		}
		if !x.Closed() || x.state.Load()&callsMask != 0 {
			t.Fatalf("state %#x at the end", x.state.Load())
		}
		wantLive(t, start)
	}
}

// The channel side of the same handle: a Close that comes while a call is counted in shuts the
// listener down but leaves the address to the call, whose leave frees it (and removes the
// socket file).
func TestListenerCloseDuringACallFreesWhenTheCallEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sock", "channel.sock") // Listen makes the folder 0700
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if !l.h.enter() {
		t.Fatal("enter refused on an open listener")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.h.addr == 0 {
		t.Fatal("the listener was freed under a call in flight")
	}
	if err := l.SetTimeout(0); err != ErrChannelClosed {
		t.Fatalf("a call after Close: %v, want ErrChannelClosed", err)
	}
	l.h.leave()
	if l.h.addr != 0 || l.h.state.Load() != stateClosing|stateReleased {
		t.Fatalf("after the last call: address %#x, state %#x", l.h.addr, l.h.state.Load())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the socket file is still there after the free: %v", err)
	}
}
