package dlbridge_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
)

// The finalizers of Listener and Channel: one nobody closed is closed once it is unreachable,
// one that was closed is not closed again.

// listenAndDrop listens at path and drops the listener unclosed: only its finalizer can close it.
func listenAndDrop(t *testing.T, path string) {
	if _, err := dlbridge.Listen(path); err != nil {
		t.Fatal(err)
	}
}

// listenCloseAndDrop listens at path, closes the listener and drops it.
func listenCloseAndDrop(t *testing.T, path string) {
	l, err := dlbridge.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// dialAndDrop connects to path and drops the channel unclosed.
func dialAndDrop(t *testing.T, path string) {
	if _, err := dlbridge.Dial(path); err != nil {
		t.Fatal(err)
	}
}

// goneAfterGC collects garbage every 10 ms, at most 500 times, until path is gone.
func goneAfterGC(path string) bool {
	for i := 0; i < 500; i++ {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return true
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	_, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist)
}

func TestListenerNobodyClosedIsClosedByItsFinalizerAndAClosedOneNotAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sock")
	reused := filepath.Join(dir, "reused.sock")
	dropped := filepath.Join(dir, "dropped.sock")
	// The closed listener's C channel is freed, and the next one at its path may get its very
	// address: a second close of the first would take the second's socket file with it.
	listenCloseAndDrop(t, reused)
	live, err := dlbridge.Listen(reused)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	listenAndDrop(t, dropped)
	if _, err := os.Stat(dropped); err != nil {
		t.Fatal(err)
	}
	if !goneAfterGC(dropped) {
		t.Fatal("the dropped listener's socket file is still there (dlb_channel_close removes it)")
	}
	// The collections that found the dropped listener found the closed one too.
	if _, err := os.Stat(reused); err != nil {
		t.Fatalf("the live listener's socket file: %v", err)
	}
	client, err := dlbridge.Dial(reused)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := live.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if pid, _, err := server.Peer(); err != nil || int(pid) != os.Getpid() {
		t.Fatalf("Peer() = %d, %v; want %d", pid, err, os.Getpid())
	}
}

func TestChannelNobodyClosedIsClosedByItsFinalizer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sock", "channel.sock")
	l, err := dlbridge.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dialAndDrop(t, path)
	server, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if err := server.SetTimeout(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for i := 0; i < 500; i++ {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
				runtime.GC()
			}
		}
	}()
	got, err := server.Receive()
	if err == nil {
		got.Close()
		t.Fatal("Receive returned a tensor; want the peer closed")
	}
	if !errors.Is(err, dlbridge.ErrPeerClosed) {
		t.Fatalf("Receive: %v; want ErrPeerClosed", err)
	}
}
