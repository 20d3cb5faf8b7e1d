package dlbridge_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
)

// Remote channels (ListenWithOptions, DialWithOptions, the ChannelOption settings): the options'
// checks are the core's, with its messages; over tcp://127.0.0.1:0, with the listener in one
// goroutine and the connecting side in another, tensors come back as new IS_COPIED tensors, a
// wrong key is ErrPermission at both ends and a missing one ErrInvalidArgument. The remote tests
// skip with the core's reason where RemoteAvailable says remote channels cannot be made.

var remoteKey = []byte("a key of thirty-two bytes, for tests")

// keyed is a remote channel's options: the key, and a limit so that a broken peer fails the test
// instead of hanging it.
func keyed(key []byte) []dlbridge.ChannelOption {
	return []dlbridge.ChannelOption{dlbridge.WithKey(key), dlbridge.WithTimeout(30 * time.Second)}
}

func skipUnlessRemote(t *testing.T) {
	t.Helper()
	if err := dlbridge.RemoteAvailable(); err != nil {
		var e *dlbridge.Error
		if !errors.As(err, &e) || e.Status != dlbridge.StatusUnsupported {
			t.Fatalf("RemoteAvailable: %v", err)
		}
		t.Skip(e.Message)
	}
}

func TestChannelOptionsAreCheckedByTheCore(t *testing.T) {
	// A folder the listen makes (mode 0700): t.TempDir's can be entered by others.
	path := filepath.Join(t.TempDir(), "channel", "s.sock")
	listen := func(opts ...dlbridge.ChannelOption) error {
		l, err := dlbridge.ListenWithOptions(path, opts...)
		if err == nil {
			l.Close()
		}
		return err
	}
	wantError(t, listen(dlbridge.WithKey(make([]byte, 15))), dlbridge.StatusInvalidArgument,
		"a key of 15 bytes: a channel's key has 16 to 1024 bytes (random ones: 32 is plenty)")
	wantError(t, listen(dlbridge.WithKey(make([]byte, 1025))), dlbridge.StatusInvalidArgument,
		"a key of 1025 bytes: a channel's key has 16 to 1024 bytes (random ones: 32 is plenty)")
	wantError(t, listen(dlbridge.WithKey([]byte{})), dlbridge.StatusInvalidArgument,
		"a key of 0 bytes: a channel's key has 16 to 1024 bytes (random ones: 32 is plenty)")
	wantError(t, listen(dlbridge.WithKey(nil)), dlbridge.StatusInvalidArgument, "key is NULL")
	wantError(t, listen(dlbridge.WithReceiveDevice(dlbridge.Device{Type: dlbridge.DeviceTypeOpenCL})),
		dlbridge.StatusUnsupported,
		"a remote channel receives into cpu, cuda_host, cuda or cuda_managed memory, not opencl")
	wantError(t, listen(dlbridge.WithMaxTensorBytes(0)), dlbridge.StatusInvalidArgument,
		"a maximum tensor size of 0 bytes: at least 1")
	wantError(t, listen(dlbridge.WithMaxInFlight(65537)), dlbridge.StatusInvalidArgument,
		"a maximum of 65537 tensors in flight: 1 to 65536")
	wantError(t, listen(dlbridge.WithTimeout(-5)), dlbridge.StatusInvalidArgument,
		"timeout -5 ns is negative: a time limit is 0 ns or more, or none")
	// The first refused option is the error; the ones before it were applied.
	wantError(t, listen(dlbridge.WithKey(remoteKey), dlbridge.WithMaxInFlight(0)),
		dlbridge.StatusInvalidArgument, "a maximum of 0 tensors in flight: 1 to 65536")
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused listen left %s: %v", path, err)
	}
	// Every setting at its bounds is accepted, nil options are skipped, and a local listener
	// made with them is an ordinary one.
	noErr(t, listen(dlbridge.WithKey(make([]byte, dlbridge.MinKeyBytes)),
		dlbridge.WithKey(make([]byte, dlbridge.MaxKeyBytes)), nil,
		dlbridge.WithReceiveDevice(dlbridge.CPU),
		dlbridge.WithReceiveDevice(dlbridge.Device{Type: dlbridge.DeviceTypeCUDAHost}),
		dlbridge.WithMaxTensorBytes(1), dlbridge.WithMaxInFlight(65536),
		dlbridge.WithTimeout(0), dlbridge.WithTimeout(dlbridge.NoTimeout),
		dlbridge.WithListenerUID(dlbridge.UIDSelf)))
	if dlbridge.MinKeyBytes != 16 || dlbridge.MaxKeyBytes != 1024 ||
		dlbridge.DefaultMaxTensorBytes != 1<<30 || dlbridge.DefaultMaxInFlight != 64 {
		t.Fatalf("limits %d %d %d %d", dlbridge.MinKeyBytes, dlbridge.MaxKeyBytes,
			dlbridge.DefaultMaxTensorBytes, dlbridge.DefaultMaxInFlight)
	}
}

func TestALocalChannelMadeWithOptionsIsNotRemote(t *testing.T) {
	leakCheck(t)
	path := filepath.Join(t.TempDir(), "channel", "s.sock")
	l := get(dlbridge.ListenWithOptions(path, keyed(remoteKey)...))(t) // the key is ignored
	defer l.Close()
	c := get(dlbridge.DialWithOptions(path, dlbridge.WithTimeout(5*time.Second)))(t)
	defer c.Close()
	s := get(l.Accept())(t)
	defer s.Close()
	if l.IsRemote() || c.IsRemote() || s.IsRemote() || l.Port() != -1 || c.Port() != -1 {
		t.Fatalf("a local channel: remote %v %v %v, ports %d %d", l.IsRemote(), c.IsRemote(),
			s.IsRemote(), l.Port(), c.Port())
	}
	x := get(dlbridge.AllocateShareable(dlbridge.CPU, dlbridge.Int32, 2))(t)
	defer mustClose(t, x)
	noErr(t, dlbridge.CopyIn(x, []int32{4, 5}))
	noErr(t, c.Send(x))
	got := get(s.Receive())(t)
	defer mustClose(t, got)
	if v := get(dlbridge.CopyOut[int32](got))(t); !reflect.DeepEqual(v, []int32{4, 5}) {
		t.Fatalf("received %v", v)
	}
	l.Close()
	if l.IsRemote() || l.Port() != -1 {
		t.Fatal("a closed listener answers IsRemote false and Port -1")
	}
}

// acceptAndServe accepts one channel on l in a goroutine and runs serve on it, closing the
// channel after; the channel returned gives Accept's error or serve's, once the channel is closed.
func acceptAndServe(l *dlbridge.Listener, serve func(c *dlbridge.Channel) error) <-chan error {
	served := make(chan error, 1)
	go func() {
		served <- func() error {
			c, err := l.Accept()
			if err != nil {
				return err
			}
			defer c.Close()
			return serve(c)
		}()
	}()
	return served
}

// remoteRoundTrip sends a float32 [2, 3] from a dialing goroutine to a listening one, which writes 100
// into element [0, 0] and sends it back.
func remoteRoundTrip(t *testing.T, scheme string) {
	skipUnlessRemote(t)
	leakCheck(t)
	l := get(dlbridge.ListenWithOptions(scheme+"://127.0.0.1:0", keyed(remoteKey)...))(t)
	defer l.Close()
	if !l.IsRemote() || l.Port() <= 0 {
		t.Fatalf("a remote listener: remote %v, port %d", l.IsRemote(), l.Port())
	}
	served := acceptAndServe(l, func(c *dlbridge.Channel) error {
		got, err := c.Receive()
		if err != nil {
			return err
		}
		defer got.Close()
		flags, _ := got.Flags()
		shape, _ := got.Shape()
		values, _ := dlbridge.CopyOut[float32](got)
		if !c.IsRemote() || flags&dlbridge.FlagIsCopied == 0 || !reflect.DeepEqual(shape, []int64{2, 3}) ||
			!reflect.DeepEqual(values, []float32{0, 1, 2, 3, 4, 5}) {
			return fmt.Errorf("received: remote %v, flags %#x, shape %v, values %v",
				c.IsRemote(), flags, shape, values)
		}
		if err := dlbridge.SetAt[float32](got, 100, 0, 0); err != nil {
			return err
		}
		if err := c.Send(got); err != nil {
			return err
		}
		var e *dlbridge.Error
		if _, err := c.Receive(); !errors.As(err, &e) || e.Status != dlbridge.StatusPeerClosed {
			return fmt.Errorf("after the peer closed: %v", err)
		}
		return nil
	})
	c := get(dlbridge.DialWithOptions(fmt.Sprintf("%s://127.0.0.1:%d", scheme, l.Port()),
		keyed(remoteKey)...))(t)
	if !c.IsRemote() || c.Port() <= 0 {
		t.Fatalf("a remote channel: remote %v, port %d", c.IsRemote(), c.Port())
	}
	x := get(dlbridge.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 2, 3))(t) // not shareable memory
	defer mustClose(t, x)
	noErr(t, c.Send(x))
	back := get(c.Receive())(t)
	defer mustClose(t, back)
	flags := get(back.Flags())(t)
	if v := get(dlbridge.CopyOut[float32](back))(t); !reflect.DeepEqual(v, []float32{100, 1, 2, 3, 4, 5}) ||
		flags&dlbridge.FlagIsCopied == 0 {
		t.Fatalf("back: %v, flags %#x", v, flags)
	}
	if v := get(dlbridge.At[float32](x, 0, 0))(t); v != 0 {
		t.Fatalf("the sender's tensor changed: %v (the bytes were to be copied)", v)
	}
	c.Close()
	noErr(t, <-served)
}

func TestARemoteRoundTripOverTCP(t *testing.T) { remoteRoundTrip(t, "tcp") }

func TestARemoteRoundTripOverUCX(t *testing.T) { remoteRoundTrip(t, "ucx") }

func TestAWrongKeyIsRefusedAtBothEnds(t *testing.T) {
	skipUnlessRemote(t)
	leakCheck(t)
	l := get(dlbridge.ListenWithOptions("tcp://127.0.0.1:0", keyed(remoteKey)...))(t)
	defer l.Close()
	address := fmt.Sprintf("tcp://127.0.0.1:%d", l.Port())
	type outcome struct {
		refused error
		served  []int32
		err     error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		_, o.refused = l.Accept()
		// The next peer has the key: the listener keeps serving.
		c, err := l.Accept()
		if err != nil {
			o.err = err
			done <- o
			return
		}
		defer c.Close()
		got, err := c.Receive()
		if err == nil {
			o.served, o.err = dlbridge.CopyOut[int32](got)
			got.Close()
		} else {
			o.err = err
		}
		done <- o
	}()
	_, err := dlbridge.DialWithOptions(address, keyed([]byte(strings.Repeat("w", 32)))...)
	wantError(t, err, dlbridge.StatusPermission, "the listener at "+address+" refused this channel's key")
	c := get(dlbridge.DialWithOptions(address, keyed(remoteKey)...))(t)
	defer c.Close()
	x := get(dlbridge.FromSlice([]int32{7, 8}, 2))(t)
	defer mustClose(t, x)
	noErr(t, c.Send(x))
	o := <-done
	noErr(t, o.err)
	if !reflect.DeepEqual(o.served, []int32{7, 8}) {
		t.Fatalf("served %v", o.served)
	}
	// "refused the peer at tcp://127.0.0.1:PORT: ...", PORT the dialing side's.
	var e *dlbridge.Error
	if !errors.As(o.refused, &e) || e.Status != dlbridge.StatusPermission {
		t.Fatalf("accept of a wrong key: %v", o.refused)
	}
	const head, tail = "refused the peer at tcp://127.0.0.1:", ": it did not prove it holds the channel's key"
	ok := strings.HasPrefix(e.Message, head) && strings.HasSuffix(e.Message, tail) &&
		len(e.Message) > len(head)+len(tail)
	port := strings.TrimSuffix(strings.TrimPrefix(e.Message, head), tail)
	if _, err := strconv.ParseUint(port, 10, 16); !ok || err != nil {
		t.Fatalf("accept of a wrong key: %q", e.Message)
	}
}

// A transposed tensor arrives compact from Send and with its own strides from
// SendKeepingLayout.
func TestARemoteSendKeepsTheLayoutWhenAsked(t *testing.T) {
	skipUnlessRemote(t)
	leakCheck(t)
	l := get(dlbridge.ListenWithOptions("tcp://127.0.0.1:0", keyed(remoteKey)...))(t)
	defer l.Close()
	type got struct {
		strides [][]int64
		values  [][]float32
		err     error
	}
	done := make(chan got, 1)
	go func() {
		var g got
		defer func() { done <- g }()
		c, err := l.Accept()
		if g.err = err; err != nil {
			return
		}
		defer c.Close()
		for i := 0; i < 2; i++ {
			r, err := c.Receive()
			if g.err = err; err != nil {
				return
			}
			strides, _ := r.Strides()
			values, _ := dlbridge.CopyOut[float32](r)
			g.strides = append(g.strides, strides)
			g.values = append(g.values, values)
			r.Close()
		}
	}()
	c := get(dlbridge.DialWithOptions(fmt.Sprintf("tcp://127.0.0.1:%d", l.Port()),
		keyed(remoteKey)...))(t)
	defer c.Close()
	x := get(dlbridge.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 2, 3))(t)
	defer mustClose(t, x)
	xt := get(x.Transpose())(t)
	defer mustClose(t, xt)
	noErr(t, c.Send(xt))
	noErr(t, c.SendKeepingLayout(xt))
	g := <-done
	noErr(t, g.err)
	want := []float32{0, 3, 1, 4, 2, 5}
	if !reflect.DeepEqual(g.strides, [][]int64{{2, 1}, {1, 3}}) ||
		!reflect.DeepEqual(g.values, [][]float32{want, want}) {
		t.Fatalf("received strides %v, values %v", g.strides, g.values)
	}
}

// A stream of small tensors sent with SendMore, the last with Send, arrives whole and in order;
// each tensor's bytes were copied when SendMore returned (the sender overwrites and closes it).
func TestARemoteStreamSentWithSendMoreArrives(t *testing.T) {
	skipUnlessRemote(t)
	leakCheck(t)
	const n = 20
	l := get(dlbridge.ListenWithOptions("tcp://127.0.0.1:0", keyed(remoteKey)...))(t)
	defer l.Close()
	sent := make(chan struct{})
	served := acceptAndServe(l, func(c *dlbridge.Channel) error {
		<-sent // every receive after every send
		for i := 0; i < n; i++ {
			r, err := c.Receive()
			if err != nil {
				return fmt.Errorf("tensor %d: %w", i, err)
			}
			flags, _ := r.Flags()
			shape, _ := r.Shape()
			values, _ := dlbridge.CopyOut[float32](r)
			r.Close()
			want := make([]float32, i+1)
			for j := range want {
				want[j] = float32(i*100 + j)
			}
			if flags&dlbridge.FlagIsCopied == 0 || !reflect.DeepEqual(shape, []int64{int64(i + 1)}) ||
				!reflect.DeepEqual(values, want) {
				return fmt.Errorf("tensor %d: flags %#x, shape %v, values %v", i, flags, shape, values)
			}
		}
		return nil
	})
	c := get(dlbridge.DialWithOptions(fmt.Sprintf("tcp://127.0.0.1:%d", l.Port()),
		keyed(remoteKey)...))(t)
	defer c.Close()
	for i := 0; i < n; i++ {
		values := make([]float32, i+1)
		for j := range values {
			values[j] = float32(i*100 + j)
		}
		x := get(dlbridge.FromSlice(values, int64(i+1)))(t)
		if i < n-1 {
			noErr(t, c.SendMore(x))
		} else {
			noErr(t, c.Send(x))
		}
		noErr(t, dlbridge.SetAt[float32](x, -1, 0)) // the sent bytes were copied
		mustClose(t, x)
	}
	close(sent)
	noErr(t, <-served)
}

func TestNoKeyIsInvalidToListenAndToDial(t *testing.T) {
	skipUnlessRemote(t)
	const message = "a remote channel needs a key that its peers share (dlb_channel_options_set_key)"
	_, err := dlbridge.ListenWithOptions("tcp://127.0.0.1:0")
	wantError(t, err, dlbridge.StatusInvalidArgument, message)
	l := get(dlbridge.ListenWithOptions("tcp://127.0.0.1:0", keyed(remoteKey)...))(t)
	defer l.Close()
	_, err = dlbridge.DialWithOptions(fmt.Sprintf("tcp://127.0.0.1:%d", l.Port()))
	wantError(t, err, dlbridge.StatusInvalidArgument, message)
}

func TestRemoteAvailableIsTheCoresAnswer(t *testing.T) {
	// Without UCX every remote call says the same as RemoteAvailable.
	err := dlbridge.RemoteAvailable()
	if err == nil {
		return
	}
	var e *dlbridge.Error
	if !errors.As(err, &e) || e.Status != dlbridge.StatusUnsupported || e.Message == "" {
		t.Fatalf("RemoteAvailable: %v", err)
	}
	_, err = dlbridge.ListenWithOptions("tcp://127.0.0.1:0", keyed(remoteKey)...)
	wantError(t, err, e.Status, e.Message)
}
