package dlbridge_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
		"the tensor's memory is not shareable: allocate it as shareable memory, or send a copy")
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

// A tensor lent by the dialed end's pool is filled, sent, received, refused when sent on, and
// its slot comes back once the receiver closes it.
func TestPoolTensorIsFilledSentAndItsSlotComesBack(t *testing.T) {
	leakCheck(t)
	_, sender, receiver := connectedPair(t)
	stats := get(sender.PoolStats())(t)
	if stats.Segments != 0 || stats.Limit != dlbridge.PoolDefaultLimit {
		t.Fatalf("a new pool: %+v", stats)
	}
	x := get(sender.Allocate(dlbridge.Float32, 2, 3))(t)
	if !get(x.IsExclusive())(t) {
		t.Error("a pool tensor not sent yet is not exclusive")
	}
	noErr(t, dlbridge.CopyIn(x, []float32{1, 2, 3, 4, 5, 6}))
	noErr(t, sender.Send(x))
	got := get(receiver.Receive())(t)
	if vals := get(dlbridge.CopyOut[float32](got))(t); len(vals) != 6 || vals[0] != 1 || vals[5] != 6 {
		t.Fatalf("received %v", vals)
	}
	if get(got.IsShareable())(t) {
		t.Error("a tensor lent by the peer's pool is shareable")
	}
	wantError(t, receiver.Send(got), dlbridge.StatusUnsupported,
		"the tensor was lent by its sender's pool and goes back to it when freed: it cannot be sent on; send a copy")
	if lent := get(sender.PoolStats())(t).Lent; lent != 1 {
		t.Errorf("lent %d while the receiver holds the tensor, want 1", lent)
	}
	mustClose(t, got, x)
	stats = get(sender.PoolStats())(t)
	if stats.Lent != 0 || stats.Returned != 1 || stats.Live != 0 || stats.Segments != 1 {
		t.Errorf("after both closed: %+v, want lent 0, returned 1, live 0, segments 1", stats)
	}
	switch stats.HugePages {
	case dlbridge.HugePagesNone, dlbridge.HugePagesTransparent, dlbridge.HugePagesHugeTLB:
	default:
		t.Errorf("huge pages %d is none of the HugePages constants", stats.HugePages)
	}
	wantError(t, sender.SetPoolLimit(0), dlbridge.StatusInvalidArgument, "a pool limit of 0 bytes leaves no room")
	noErr(t, sender.SetPoolLimit(1<<20))
	_, err := sender.Allocate(dlbridge.Uint8, 4)
	wantError(t, err, dlbridge.StatusLimit, "a tensor of 4 bytes needs a pool segment of 2097152 bytes, "+
		"more than the channel's pool limit of 1048576 bytes (dlb_channel_set_pool_limit)")
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
		"the cuda send takes cuda tensors, not cpu ones: send it without a stream")
	wantError(t, waitErr, dlbridge.StatusInvalidArgument,
		"the tensor is not cuda memory received from a channel")
}

// Nothing listening at a path: no socket file there, or one nobody accepts on.
func TestDialNoListener(t *testing.T) {
	dir := t.TempDir()
	absent := filepath.Join(dir, "absent.sock")
	_, err := dlbridge.Dial(absent)
	wantError(t, err, dlbridge.StatusNoListener, "nothing listens at '"+absent+"' (No such file or directory)")
	if !errors.Is(err, dlbridge.ErrNoListener) || errors.Is(err, dlbridge.ErrPermission) {
		t.Errorf("errors.Is: %v", err)
	}
	dead := filepath.Join(dir, "dead.sock")
	ul := get(net.ListenUnix("unix", &net.UnixAddr{Name: dead, Net: "unix"}))(t)
	ul.SetUnlinkOnClose(false)
	noErr(t, ul.Close())
	_, err = dlbridge.DialWith(dead, dlbridge.UIDSelf, time.Second)
	wantError(t, err, dlbridge.StatusNoListener, "nothing listens at '"+dead+"' (Connection refused)")
}

// A socket's folder must be one only its user can enter.
func TestListenRefusesAnOpenFolder(t *testing.T) {
	dir := t.TempDir()
	noErr(t, os.Chmod(dir, 0o755))
	_, err := dlbridge.Listen(filepath.Join(dir, "s"))
	wantError(t, err, dlbridge.StatusPermission, "folder '"+dir+"' can be entered by other users (mode 0755): "+
		"a channel's socket must live in a folder only its user can enter (mode 0700)")
}

// A peer that closes: PEER_CLOSED, between tensors and in the middle of one.
func TestPeerClosed(t *testing.T) {
	_, dialed, accepted := connectedPair(t)
	noErr(t, dialed.Close())
	_, err := accepted.Receive()
	wantError(t, err, dlbridge.StatusPeerClosed, "the peer closed the channel")
	if !errors.Is(err, dlbridge.ErrPeerClosed) {
		t.Errorf("errors.Is(%v, ErrPeerClosed) is false", err)
	}

	l, path := listener(t)
	raw := dialRaw(t, path)
	c := get(l.Accept())(t)
	defer c.Close()
	get(raw.Write(make([]byte, 16)))(t) // the first 16 bytes of a descriptor
	noErr(t, raw.Close())
	_, err = c.Receive()
	var e *dlbridge.Error
	if !errors.As(err, &e) || e.Status != dlbridge.StatusPeerClosed ||
		!strings.HasPrefix(e.Message, "the peer closed the channel after 16 of the ") {
		t.Fatalf("a peer gone in the middle of a descriptor: %v", err)
	}
}

// listener listens at a socket in a fresh folder (closed when the test ends) and returns its path.
func listener(t *testing.T) (*dlbridge.Listener, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sock", "channel.sock")
	l := get(dlbridge.Listen(path))(t)
	t.Cleanup(func() { l.Close() })
	return l, path
}

// dialRaw connects to a listener with a plain Unix socket: a peer that says what the test wants.
func dialRaw(t *testing.T, path string) *net.UnixConn {
	t.Helper()
	raw := get(net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"}))(t)
	t.Cleanup(func() { raw.Close() })
	return raw
}

// Time limits: on Receive before anything arrived (the channel stays usable), in the middle of
// a descriptor (the channel loses its place: PROTOCOL afterwards), on Accept, and from DialWith.
func TestTimeouts(t *testing.T) {
	l, path := listener(t)
	raw := dialRaw(t, path)
	c := get(l.Accept())(t)
	defer c.Close()
	const timedOut = "receiving on the channel: the time limit ran out"

	noErr(t, c.SetTimeout(0)) // do not wait
	_, err := c.Receive()
	wantError(t, err, dlbridge.StatusTimeout, timedOut)
	noErr(t, c.SetTimeout(100*time.Millisecond))
	start := time.Now()
	_, err = c.Receive()
	wantError(t, err, dlbridge.StatusTimeout, timedOut)
	if elapsed := time.Since(start); elapsed < 100*time.Millisecond || elapsed > 5*time.Second {
		t.Errorf("a 100 ms limit ran out after %v", elapsed)
	}
	if !errors.Is(err, dlbridge.ErrTimeout) || !os.IsTimeout(err) {
		t.Errorf("errors.Is(ErrTimeout), os.IsTimeout: %v", err)
	}

	// Half a frame, then nothing: the limit runs out in the middle of a tensor.
	get(raw.Write(make([]byte, 16)))(t)
	_, err = c.Receive()
	wantError(t, err, dlbridge.StatusTimeout, timedOut)
	const lost = "the channel lost its place in the stream when a time limit ran out in the middle of a tensor: close it"
	_, err = c.Receive()
	wantError(t, err, dlbridge.StatusProtocol, lost)
	x := get(dlbridge.AllocateShareable(dlbridge.CPU, dlbridge.Float32, 4))(t)
	defer x.Close()
	wantError(t, c.Send(x), dlbridge.StatusProtocol, lost)

	// A listener's limit applies to Accept, which leaves the listener usable.
	noErr(t, l.SetTimeout(50*time.Millisecond))
	_, err = l.Accept()
	wantError(t, err, dlbridge.StatusTimeout, "waiting for a connection: the time limit ran out")
	noErr(t, l.SetTimeout(dlbridge.NoTimeout))
	dialed := get(dlbridge.DialWith(path, dlbridge.UIDSelf, 100*time.Millisecond))(t)
	defer dialed.Close()
	accepted := get(l.Accept())(t)
	defer accepted.Close()
	// DialWith's limit stays the channel's.
	_, err = dialed.Receive()
	wantError(t, err, dlbridge.StatusTimeout, timedOut)
	noErr(t, accepted.Send(x))
	got := get(dialed.Receive())(t)
	noErr(t, got.Close())

	wantError(t, c.SetTimeout(-5*time.Nanosecond), dlbridge.StatusInvalidArgument,
		"timeout -5 ns is negative: a time limit is 0 ns or more, or none")
	noErr(t, c.SetTimeout(dlbridge.NoTimeout))
	noErr(t, l.Close())
	wantError(t, l.SetTimeout(time.Second), dlbridge.StatusClosed, "the channel is closed")
}

// serve is the server loop of docs/go.md: it skips a peer that is refused or misbehaves and
// keeps serving until it has received `want` tensors; it returns their first elements and the
// errors it skipped.
func serve(l *dlbridge.Listener, want int) (firsts []float32, skipped []error, err error) {
	skip := func(err error) bool {
		return errors.Is(err, dlbridge.ErrPermission) || errors.Is(err, dlbridge.ErrPeerClosed) ||
			errors.Is(err, dlbridge.ErrProtocol) || errors.Is(err, dlbridge.ErrTimeout)
	}
	for len(firsts) < want {
		c, err := l.Accept()
		if skip(err) {
			skipped = append(skipped, err)
			continue
		}
		if err != nil {
			return firsts, skipped, err
		}
		x, err := c.Receive()
		c.Close()
		if skip(err) {
			skipped = append(skipped, err)
			continue
		}
		if err != nil {
			return firsts, skipped, err
		}
		first, err := dlbridge.At[float32](x, 0)
		x.Close()
		if err != nil {
			return firsts, skipped, err
		}
		firsts = append(firsts, first)
	}
	return firsts, skipped, nil
}

// A server loop skips peers that time out or go away and serves the one after them.
func TestServerLoopSkipsMisbehavingPeers(t *testing.T) {
	leakCheck(t)
	l, path := listener(t)
	noErr(t, l.SetTimeout(200*time.Millisecond)) // passes on to each accepted channel
	half := dialRaw(t, path)
	get(half.Write(make([]byte, 16)))(t)
	gone := dialRaw(t, path)
	noErr(t, gone.Close())
	good := get(dlbridge.Dial(path))(t)
	defer good.Close()
	x := get(dlbridge.AllocateShareable(dlbridge.CPU, dlbridge.Float32, 2))(t)
	defer x.Close()
	noErr(t, dlbridge.CopyIn(x, []float32{7, 8}))
	noErr(t, good.Send(x)) // waits in the socket until the server gets to it

	firsts, skipped, err := serve(l, 1)
	noErr(t, err)
	if len(firsts) != 1 || firsts[0] != 7 || len(skipped) != 2 ||
		!errors.Is(skipped[0], dlbridge.ErrTimeout) || !errors.Is(skipped[1], dlbridge.ErrPeerClosed) {
		t.Fatalf("served %v, skipped %v", firsts, skipped)
	}
}

// parityPeer starts tests/parity's peer program (DLBRIDGE_PARITY_PEER) with args, as root, and
// returns it with its stdout; the test waits for it with reapPeer.
func parityPeer(t *testing.T, args ...string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a peer as another user")
	}
	program := os.Getenv("DLBRIDGE_PARITY_PEER")
	if program == "" {
		t.Skip("DLBRIDGE_PARITY_PEER (tests/parity's parity_peer, set by meson test) is not set")
	}
	cmd := exec.Command(program, args...)
	cmd.Stderr = os.Stderr
	out := get(cmd.StdoutPipe())(t)
	noErr(t, cmd.Start())
	return cmd, bufio.NewReader(out)
}

// reapPeer waits for the peer's exit (killing it after ten seconds) and returns its exit error.
func reapPeer(cmd *exec.Cmd) error {
	kill := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
	defer kill.Stop()
	return cmd.Wait()
}

// sharedFolder listens at DIR/s under /tmp (t.TempDir's parent is closed to other users) and
// widens the folder (0711) and the socket (0666) so that another user can reach it.
func sharedFolder(t *testing.T) (*dlbridge.Listener, string) {
	t.Helper()
	dir := get(os.MkdirTemp("/tmp", "dlbridge-go-test-"))(t)
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s")
	l := get(dlbridge.Listen(path))(t)
	t.Cleanup(func() { l.Close() })
	noErr(t, os.Chmod(dir, 0o711))
	noErr(t, os.Chmod(path, 0o666))
	noErr(t, l.SetTimeout(10*time.Second)) // a peer that never comes fails the test
	return l, path
}

// Two users, the listener's side: a peer of uid 65534 is refused until allowed (the listener
// serves on), then shares a tensor both ways.
func TestTwoUsersListenerAllowsUID(t *testing.T) {
	leakCheck(t)
	l, path := sharedFolder(t)
	peer, _ := parityPeer(t, "connect-as", "65534", "0", path)
	_, err := l.Accept()
	wantError(t, err, dlbridge.StatusPermission,
		"the peer runs as uid 65534, which this channel does not accept (allow that uid on the listener)")
	if reapPeer(peer) == nil {
		t.Error("the refused peer exited 0")
	}

	noErr(t, l.AllowUID(65534))
	peer, _ = parityPeer(t, "connect-as", "65534", "0", path)
	c := get(l.Accept())(t)
	defer c.Close()
	if _, uid, err := c.Peer(); err != nil || uid != 65534 {
		t.Fatalf("peer uid %d %v", uid, err)
	}
	x := get(dlbridge.AllocateShareable(dlbridge.CPU, dlbridge.Float32, 4))(t)
	defer x.Close()
	noErr(t, dlbridge.CopyIn(x, []float32{0, 1, 2, 3}))
	noErr(t, c.Send(x))
	back := get(c.Receive())(t)
	defer back.Close()
	if v := get(dlbridge.CopyOut[float32](back))(t); len(v) != 4 || v[3] != 3 {
		t.Fatalf("the echo: %v", v)
	}
	noErr(t, c.Close()) // the peer waits for this end to close
	noErr(t, reapPeer(peer))
}

// Two users, the dialer's side: a listener of uid 65534 is refused by Dial and accepted when
// DialWith names its uid.
func TestTwoUsersDialWithNamesListener(t *testing.T) {
	leakCheck(t)
	peerPath := func(out *bufio.Reader) string {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("the peer printed no socket path: %v", err)
		}
		return strings.TrimSuffix(line, "\n")
	}
	peer, out := parityPeer(t, "listen-as", "65534", "0")
	_, err := dlbridge.Dial(peerPath(out))
	wantError(t, err, dlbridge.StatusPermission,
		"the listener runs as uid 65534, which this channel does not accept (name that uid when connecting)")
	reapPeer(peer) // it served a peer that went away: its exit status is its own business

	peer, out = parityPeer(t, "listen-as", "65534", "0")
	c := get(dlbridge.DialWith(peerPath(out), 65534, 10*time.Second))(t)
	defer c.Close()
	if _, uid, err := c.Peer(); err != nil || uid != 65534 {
		t.Fatalf("peer uid %d %v", uid, err)
	}
	x := get(c.Receive())(t)
	defer x.Close()
	if v := get(dlbridge.CopyOut[float32](x))(t); len(v) != 4 || v[0] != 0 || v[3] != 3 {
		t.Fatalf("received %v", v)
	}
	noErr(t, c.Close())
	noErr(t, reapPeer(peer))
}
