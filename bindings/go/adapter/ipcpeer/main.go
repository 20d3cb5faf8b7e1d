// Package ipcpeer is the Go peer of suite ipc's exchange across languages (tests/ipc/README.md,
// "The peer protocol"), the subcommand `ipc-peer` of the Go adapter's program (../program):
// `ipc-peer consume PATH` or `ipc-peer produce PATH`, and of suite remote's pairs
// (`ipc-peer remote-consume KEYHEX [SCHEME]`, `ipc-peer remote-produce ADDRESS KEYHEX`), with the
// binding's public API alone.
package ipcpeer

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"reflect"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
)

func expect(ok bool, what string) error {
	if !ok {
		return errors.New(what)
	}
	return nil
}

func consume(path string) error {
	l, err := dlbridge.Listen(path)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer l.Close()
	fmt.Println("ready")
	c, err := l.Accept()
	if err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	defer c.Close()
	pid, uid, err := c.Peer()
	if err != nil || pid <= 0 || uid != uint32(os.Geteuid()) {
		return fmt.Errorf("the peer's pid and uid: %d %d %v", pid, uid, err)
	}
	t, err := c.Receive()
	if err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	defer t.Close()
	shape, _ := t.Shape()
	dt, _ := t.DType()
	shareable, _ := t.IsShareable()
	values, err := dlbridge.CopyOut[float32](t)
	if err := expect(err == nil && dt == dlbridge.Float32 && reflect.DeepEqual(shape, []int64{2, 3}) &&
		shareable && reflect.DeepEqual(values, []float32{0, 1, 2, 3, 4, 5}),
		fmt.Sprintf("the first tensor: %v %v %v %v %v", dt, shape, shareable, values, err)); err != nil {
		return err
	}
	if err := dlbridge.SetAt[float32](t, 100, 0, 0); err != nil {
		return err
	}
	if err := c.Send(t); err != nil {
		return fmt.Errorf("send back: %w", err)
	}
	copied, err := c.Receive()
	if err != nil {
		return fmt.Errorf("receive the copy: %w", err)
	}
	defer copied.Close()
	pair, err := dlbridge.CopyOut[int32](copied)
	flags, _ := copied.Flags()
	if err := expect(err == nil && reflect.DeepEqual(pair, []int32{7, 8}) && flags&dlbridge.FlagIsCopied != 0,
		fmt.Sprintf("the copy: %v %#x %v", pair, flags, err)); err != nil {
		return err
	}
	_, err = c.Receive()
	var e *dlbridge.Error
	if !errors.As(err, &e) || e.Status != dlbridge.StatusPeerClosed || e.Message != "the peer closed the channel" {
		return fmt.Errorf("after the peer closed: %v", err)
	}
	fmt.Println("consume ok")
	return nil
}

func produce(path string) error {
	c, err := dlbridge.Dial(path)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	x, err := dlbridge.AllocateShareable(dlbridge.CPU, dlbridge.Float32, 2, 3)
	if err != nil {
		return err
	}
	defer x.Close()
	if err := dlbridge.CopyIn(x, []float32{0, 1, 2, 3, 4, 5}); err != nil {
		return err
	}
	if err := c.Send(x); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	back, err := c.Receive()
	if err != nil {
		return fmt.Errorf("receive back: %w", err)
	}
	defer back.Close()
	mine, err1 := dlbridge.At[float32](x, 0, 0)
	theirs, err2 := dlbridge.At[float32](back, 0, 0)
	if err := expect(err1 == nil && err2 == nil && mine == 100 && theirs == 100,
		"the consumer's write is not in our tensor"); err != nil {
		return err
	}
	plain, err := dlbridge.FromSlice([]int32{7, 8}, 2)
	if err != nil {
		return err
	}
	defer plain.Close()
	if err := c.SendCopy(plain); err != nil {
		return fmt.Errorf("send a copy: %w", err)
	}
	c.Close()
	fmt.Println("produce ok")
	return nil
}

// isCopiedTensor reports whether t is a dt tensor of shape on the CPU with IS_COPIED set.
func isCopiedTensor(t *dlbridge.Tensor, dt dlbridge.DType, shape []int64) bool {
	got, err1 := t.Shape()
	gotDT, err2 := t.DType()
	device, err3 := t.Device()
	flags, err4 := t.Flags()
	return err1 == nil && err2 == nil && err3 == nil && err4 == nil && gotDT == dt &&
		reflect.DeepEqual(got, shape) && device == dlbridge.CPU && flags&dlbridge.FlagIsCopied != 0
}

func remoteConsume(keyHex, scheme string) error {
	key, err := hex.DecodeString(keyHex)
	if err != nil {
		return fmt.Errorf("KEYHEX: %w", err)
	}
	l, err := dlbridge.ListenWithOptions(scheme+"://127.0.0.1:0", dlbridge.WithKey(key))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer l.Close()
	fmt.Printf("ready %d\n", l.Port())
	c, err := l.Accept()
	if err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	defer c.Close()
	if !c.IsRemote() {
		return errors.New("the accepted channel is not remote")
	}
	first, err := c.Receive()
	if err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	defer first.Close()
	values, err := dlbridge.CopyOut[float32](first)
	if !isCopiedTensor(first, dlbridge.Float32, []int64{2, 3}) || err != nil ||
		!reflect.DeepEqual(values, []float32{0, 1, 2, 3, 4, 5}) {
		return fmt.Errorf("the first tensor is not a float32 [2, 3] of 0..5 with IS_COPIED: %v %v", values, err)
	}
	if err := dlbridge.SetAt[float32](first, 100, 0, 0); err != nil {
		return err
	}
	if err := c.Send(first); err != nil {
		return fmt.Errorf("send back: %w", err)
	}
	second, err := c.Receive()
	if err != nil {
		return fmt.Errorf("receive the second tensor: %w", err)
	}
	defer second.Close()
	grid, err := dlbridge.CopyOut[int32](second)
	if !isCopiedTensor(second, dlbridge.Int32, []int64{7, 8}) || err != nil || len(grid) != 56 {
		return fmt.Errorf("the second tensor is not an int32 [7, 8] with IS_COPIED: %v", err)
	}
	for k, v := range grid {
		if v != int32(8*(k/8)+k%8) {
			return fmt.Errorf("the second tensor does not hold 8 * i + j: %v", grid)
		}
	}
	var e *dlbridge.Error
	if _, err := c.Receive(); !errors.As(err, &e) || e.Status != dlbridge.StatusPeerClosed {
		return fmt.Errorf("receiving after the peer closed did not give PEER_CLOSED: %v", err)
	}
	fmt.Println("consume ok")
	return nil
}

func remoteProduce(address, keyHex string) error {
	key, err := hex.DecodeString(keyHex)
	if err != nil {
		return fmt.Errorf("KEYHEX: %w", err)
	}
	c, err := dlbridge.DialWithOptions(address, dlbridge.WithKey(key))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	x, err := dlbridge.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 2, 3)
	if err != nil {
		return err
	}
	defer x.Close()
	if err := c.Send(x); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	back, err := c.Receive()
	if err != nil {
		return fmt.Errorf("receive back: %w", err)
	}
	defer back.Close()
	mine, err1 := dlbridge.At[float32](x, 0, 0)
	theirs, err2 := dlbridge.At[float32](back, 0, 0)
	if err1 != nil || err2 != nil || theirs != 100 || mine != 0 {
		return errors.New("element [0, 0] is not 100 in the tensor received and 0 in our own")
	}
	values := make([]int32, 56)
	for k := range values {
		values[k] = int32(8*(k/8) + k%8)
	}
	grid, err := dlbridge.FromSlice(values, 7, 8)
	if err != nil {
		return err
	}
	defer grid.Close()
	if err := c.Send(grid); err != nil {
		return fmt.Errorf("send the second tensor: %w", err)
	}
	c.Close()
	fmt.Println("produce ok")
	return nil
}

// Run performs the peer's part named by args (the words after `ipc-peer`); it returns the exit
// status.
func Run(args []string) int {
	var run func() error
	switch {
	case len(args) == 2 && args[0] == "consume":
		run = func() error { return consume(args[1]) }
	case len(args) == 2 && args[0] == "produce":
		run = func() error { return produce(args[1]) }
	case (len(args) == 2 || len(args) == 3) && args[0] == "remote-consume":
		scheme := "tcp"
		if len(args) == 3 {
			scheme = args[2]
		}
		run = func() error { return remoteConsume(args[1], scheme) }
	case len(args) == 3 && args[0] == "remote-produce":
		run = func() error { return remoteProduce(args[1], args[2]) }
	default:
		fmt.Fprintln(os.Stderr, "usage: dlbridge_adapter_go ipc-peer consume|produce PATH\n"+
			"       dlbridge_adapter_go ipc-peer remote-consume KEYHEX [SCHEME]\n"+
			"       dlbridge_adapter_go ipc-peer remote-produce ADDRESS KEYHEX")
		return 2
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "go %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
