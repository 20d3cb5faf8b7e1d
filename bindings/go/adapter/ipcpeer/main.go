// Command ipcpeer is the Go peer of suite ipc's exchange across languages
// (tests/ipc/README.md, "The peer protocol"): `ipc_peer_go consume PATH` or
// `ipc_peer_go produce PATH`, with the binding's public API alone.
package main

import (
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

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "consume" && os.Args[1] != "produce") {
		fmt.Fprintln(os.Stderr, "usage: ipc_peer_go consume|produce PATH")
		os.Exit(2)
	}
	run := produce
	if os.Args[1] == "consume" {
		run = consume
	}
	if err := run(os.Args[2]); err != nil {
		fmt.Fprintf(os.Stderr, "go %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
