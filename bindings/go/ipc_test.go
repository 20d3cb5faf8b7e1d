package dlbridge_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
)

// The producer's side of TestTensorsCrossProcesses: this test binary run a second time with
// DLBRIDGE_IPC_SOCKET naming the channel (as a test of its own it does nothing).
func TestIPCProducer(t *testing.T) {
	path := os.Getenv("DLBRIDGE_IPC_SOCKET")
	if path == "" {
		t.Skip("the producer side of TestTensorsCrossProcesses")
	}
	c, err := dlbridge.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	x, err := dlbridge.AllocateShareable(dlbridge.CPU, dlbridge.Float32, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := dlbridge.CopyIn(x, []float32{0, 1, 2, 3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(x); err != nil {
		t.Fatal(err)
	}
	// The consumer writes element 0 and sends the tensor back: the same memory.
	back, err := c.Receive()
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	vals, err := dlbridge.CopyOut[float32](x)
	if err != nil || vals[0] != 100 {
		t.Fatalf("the consumer's write is not in the producer's tensor: %v %v", vals, err)
	}
}

func TestTensorsCrossProcesses(t *testing.T) {
	leakCheck(t)
	dir := filepath.Join(t.TempDir(), "sock")
	path := filepath.Join(dir, "channel.sock")
	l, err := dlbridge.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	producer := exec.Command(os.Args[0], "-test.run=^TestIPCProducer$", "-test.count=1")
	producer.Env = append(os.Environ(), "DLBRIDGE_IPC_SOCKET="+path)
	producer.Stdout, producer.Stderr = os.Stdout, os.Stderr
	if err := producer.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pid, uid, err := c.Peer()
	if err != nil || int(pid) != producer.Process.Pid || uid != uint32(os.Geteuid()) {
		t.Fatalf("peer %d %d %v, want %d %d", pid, uid, err, producer.Process.Pid, os.Geteuid())
	}
	x, err := c.Receive()
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if shareable, _ := x.IsShareable(); !shareable {
		t.Error("a received tensor is shareable")
	}
	vals, err := dlbridge.CopyOut[float32](x)
	if err != nil || len(vals) != 6 || vals[5] != 5 {
		t.Fatalf("received %v, %v", vals, err)
	}
	if err := dlbridge.SetAt[float32](x, 100, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(x); err != nil {
		t.Fatal(err)
	}
	if err := producer.Wait(); err != nil {
		t.Fatalf("the producer failed: %v", err)
	}

	// Memory that is not shareable is refused with the core's message, or copied when asked.
	plain, err := dlbridge.FromSlice([]int32{7, 8}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	wantError(t, c.Send(plain), dlbridge.StatusUnsupported,
		"the tensor's memory is not shareable: allocate it with dlb_tensor_allocate_shareable, or send with DLB_SEND_COPY")
	c.Close()
	wantError(t, c.Send(plain), dlbridge.StatusClosed, "the channel is closed")
	if err := c.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// connectedPair listens on a socket in a fresh folder, dials it and accepts: the listener, the
// dialing end and the accepted end, each closed when the test ends (a second Close does nothing).
func connectedPair(t *testing.T) (l *dlbridge.Listener, dialed, accepted *dlbridge.Channel) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sock", "channel.sock")
	l = get(dlbridge.Listen(path))(t)
	t.Cleanup(func() { l.Close() })
	dialed = get(dlbridge.Dial(path))(t)
	t.Cleanup(func() { dialed.Close() })
	accepted = get(l.Accept())(t)
	t.Cleanup(func() { accepted.Close() })
	return l, dialed, accepted
}

// Close from another goroutine wakes a Receive and an Accept that are blocked: both return
// ErrChannelClosed, and the handles are freed once they have returned.
func TestCloseWakesBlockedCalls(t *testing.T) {
	l, _, server := connectedPair(t)
	received, accepted := make(chan error), make(chan error)
	go func() {
		_, err := server.Receive()
		received <- err
	}()
	go func() {
		_, err := l.Accept()
		accepted <- err
	}()
	time.Sleep(50 * time.Millisecond) // both block (nothing is sent, nobody dials); late is fine too
	server.Close()
	l.Close()
	for _, err := range []error{<-received, <-accepted} {
		if !errors.Is(err, dlbridge.ErrChannelClosed) {
			t.Errorf("a blocked call after Close: %v, want %v", err, dlbridge.ErrChannelClosed)
		}
	}
	wantError(t, l.AllowUID(1), dlbridge.StatusClosed, "the channel is closed")
}

// The CUDA half of channels where it runs without a GPU: the kinds of shareable memory, and the
// refusals of the CUDA calls for host tensors (or, built without CUDA, their UNSUPPORTED). The
// GPU cases are the core's suite ipc (tests/ipc/test_ipc_cuda.cc).
func TestCUDASendAndWaitRefuseHostTensors(t *testing.T) {
	leakCheck(t)
	_, sender, receiver := connectedPair(t)
	host := get(dlbridge.AllocateShareable(dlbridge.CPU, dlbridge.Float32, 4))(t)
	defer host.Close()
	if kind := get(host.ShareableKind())(t); kind != dlbridge.ShareableMemfd {
		t.Fatalf("kind %d, want ShareableMemfd", kind)
	}
	plain := get(dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, 2))(t)
	defer plain.Close()
	if kind := get(plain.ShareableKind())(t); kind != dlbridge.ShareableNone {
		t.Fatalf("kind %d, want ShareableNone", kind)
	}
	sendErr := sender.SendCUDA(host, nil)
	noErr(t, sender.Send(host))
	got := get(receiver.Receive())(t)
	defer got.Close()
	waitErr := got.CUDAWaitReceived(1) // the legacy default stream
	if status, _, unavailable := expectedCUDAError(t); unavailable && status == dlbridge.StatusUnsupported {
		wantError(t, sendErr, dlbridge.StatusUnsupported, "dlbridge was built without CUDA support")
		wantError(t, waitErr, dlbridge.StatusUnsupported, "dlbridge was built without CUDA support")
		return
	}
	wantError(t, sendErr, dlbridge.StatusInvalidArgument,
		"dlb_channel_send_cuda sends cuda tensors, not cpu ones: use dlb_channel_send")
	wantError(t, waitErr, dlbridge.StatusInvalidArgument,
		"the tensor is not cuda memory received from a channel")
}
