// Package parity is the Go program of the parity matrix (tests/parity/README.md), the subcommand
// `parity` of the Go adapter's program (../program): every row of
// tests/parity/parity_table.tsv performed with the public API of package dlbridge, printing one
// line per row, ROW<TAB>STATUS<TAB>DETAIL, where STATUS is the core's status name and DETAIL the
// error's message verbatim, or the facts the table names for a row that succeeds. The foreign
// producer is the one every binding's tests share (tests/foreign, through internal/ctest).
// Suite `parity` runs it beside the other languages.
package parity

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
	"github.com/dlbridge/dlbridge/bindings/go/internal/ctest"
)

// row prints one row: the core's status and message of err, or DLB_OK and detail.
func row(id string, detail string, err error) {
	if err == nil {
		fmt.Printf("%s\tDLB_OK\t%s\n", id, detail)
		return
	}
	var e *dlbridge.Error
	if !errors.As(err, &e) {
		fmt.Printf("%s\tNOT_A_DLBRIDGE_ERROR\t%v\n", id, err)
		return
	}
	fmt.Printf("%s\t%s\t%s\n", id, e.Status, e.Message)
}

// run runs one row's body and prints its outcome.
func run(id string, body func() (string, error)) {
	detail, err := body()
	row(id, detail, err)
}

func list(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// facts joins a row's facts with one space, as the table writes them.
func facts(f ...string) string { return strings.Join(f, " ") }

func layout(t *dlbridge.Tensor) (string, error) {
	shape, err := t.Shape()
	if err != nil {
		return "", err
	}
	strides, err := t.Strides()
	if err != nil {
		return "", err
	}
	return facts("shape="+list(shape), "strides="+list(strides)), nil
}

func floatList(v []float32) string {
	whole := make([]int64, len(v))
	for i, x := range v {
		whole[i] = int64(x)
	}
	return list(whole)
}

// values is every element of t (any layout) in C order.
func values(t *dlbridge.Tensor) (string, error) {
	v, err := dlbridge.CopyOut[float32](t)
	if err != nil {
		return "", err
	}
	return "values=" + floatList(v), nil
}

// layoutAndValues is layout and values of a tensor the row closes.
func layoutAndValues(t *dlbridge.Tensor, err error) (string, error) {
	if err != nil {
		return "", err
	}
	defer t.Close()
	l, err := layout(t)
	if err != nil {
		return "", err
	}
	v, err := values(t)
	return facts(l, v), err
}

// layoutOf is the layout of a tensor the row closes.
func layoutOf(t *dlbridge.Tensor, err error) (string, error) {
	if err != nil {
		return "", err
	}
	defer t.Close()
	return layout(t)
}

// raceElements is the size of the race rows' foreign tensor: 64 MiB of float32, above glibc's
// largest mmap threshold, so the producer's deleter unmaps the memory and a copy still reading it
// faults. Every value 0 .. 2^24-1 is exact in float32.
const raceElements = 1 << 24

// raceTries bounds the tries of a race row until the racer began before the copy ended.
const raceTries = 20

// closedMessage is the message of a use after close, as this binding gives it (use_after_close).
func closedMessage() string {
	t := iota(1)
	t.Close()
	_, err := t.Shape()
	var e *dlbridge.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "no error after close"
}

// raceCall copies the foreign tensor out on another goroutine while racer runs on it here (rows
// close_during_call and export_during_call). A try in which the copy lost the race must have
// failed StatusClosed with the message of a use after close (any other error is the row's
// outcome); tries are made until the racer began before the copy ended.
func raceCall(racer func(t *dlbridge.Tensor) error) (string, error) {
	closed := closedMessage()
	outcome := ""
	for attempt := 1; attempt <= raceTries; attempt++ {
		deleted := ctest.DeleterCalls()
		t, err := dlbridge.ImportVersioned(ctest.MakeVersioned(raceElements, 1, 3, 0))
		if err != nil {
			return "", err
		}
		copying := make(chan struct{})
		done := make(chan struct{})
		var copied []float32
		var lost error
		var copyEnd time.Time
		go func() {
			close(copying)
			copied, lost = dlbridge.CopyOut[float32](t)
			copyEnd = time.Now()
			close(done)
		}()
		<-copying
		raceStart := time.Now()
		raceErr := racer(t)
		<-done
		t.Close()
		if raceErr != nil {
			return "", raceErr
		}
		if lost != nil {
			var e *dlbridge.Error
			if !errors.As(lost, &e) || e.Status != dlbridge.StatusClosed || e.Message != closed {
				return "", lost
			}
		}
		overlapped := lost == nil && raceStart.Before(copyEnd)
		read := 0
		for i, v := range copied {
			if v == float32(i) {
				read++
			}
		}
		flag := 0
		if overlapped {
			flag = 1
		}
		outcome = fmt.Sprintf("overlapped=%d read=%d deleted=%d", flag, read,
			ctest.DeleterCalls()-deleted)
		if overlapped {
			break
		}
	}
	return outcome, nil
}

// iota is a float32 tensor of shape holding 0, 1, 2, ... in C order.
func iota(shape ...int64) *dlbridge.Tensor {
	t, err := dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, shape...)
	must(err)
	n, err := t.ElementCount()
	must(err)
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	must(dlbridge.CopyIn(t, v))
	return t
}

// must stops the program on a failure outside the rows (a fixture), which no row expects.
func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "parity: a fixture failed:", err)
		os.Exit(1)
	}
}

// closing closes ts when the row ends.
func closing(ts ...*dlbridge.Tensor) func() {
	return func() {
		for _, t := range ts {
			t.Close()
		}
	}
}

// Run performs every row and prints its line; it returns the exit status.
func Run() int {
	liveAtStart := dlbridge.LiveCount()

	run("create", func() (string, error) {
		t, err := dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, 2, 3)
		if err != nil {
			return "", err
		}
		defer t.Close()
		l, err := layout(t)
		if err != nil {
			return "", err
		}
		dt, err := t.DType()
		if err != nil {
			return "", err
		}
		dev, err := t.Device()
		return facts(l, "dtype="+dt.String(), "device="+dev.String()), err
	})
	run("create_negative_extent", func() (string, error) {
		return layoutOf(dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, 2, -3))
	})
	run("create_ndim_65", func() (string, error) {
		shape := make([]int64, 65)
		for i := range shape {
			shape[i] = 1
		}
		return layoutOf(dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, shape...))
	})
	run("create_strides_length", func() (string, error) {
		return layoutOf(dlbridge.AllocateStrided(dlbridge.CPU, dlbridge.Float32, []int64{2, 3}, []int64{1}, 0))
	})
	run("create_is_copied", func() (string, error) {
		return layoutOf(dlbridge.AllocateStrided(dlbridge.CPU, dlbridge.Float32, []int64{2, 3}, nil,
			dlbridge.FlagIsCopied))
	})

	// Go's own buffer for a zero-copy wrap is C memory: Go 1.19 cannot pin Go memory for C to keep.
	run("wrap", func() (string, error) {
		buffer := ctest.Malloc(6 * 4)
		floats := unsafe.Slice((*float32)(buffer), 6)
		for i := range floats {
			floats[i] = float32(i)
		}
		t, err := dlbridge.Wrap(buffer, 6*4, dlbridge.CPU, dlbridge.Float32, []int64{2, 3}, nil, 0, 0,
			func() { ctest.Free(buffer) })
		if err != nil {
			ctest.Free(buffer)
			return "", err
		}
		defer t.Close()
		lv, err := layoutAndValues(t.Share())
		if err != nil {
			return "", err
		}
		data, _, err := t.HostData(false)
		same := 0
		if data == buffer {
			same = 1
		}
		return facts(lv, "same_memory="+strconv.Itoa(same)), err
	})
	run("wrap_beyond_buffer", func() (string, error) {
		buffer := ctest.Malloc(5 * 4)
		defer ctest.Free(buffer) // refused: the memory stays the caller's
		return layoutOf(dlbridge.Wrap(buffer, 5*4, dlbridge.CPU, dlbridge.Float32, []int64{2, 3}, nil, 0, 0, nil))
	})
	run("wrap_ndim_5", func() (string, error) {
		buffer := ctest.Malloc(6 * 4)
		copy(unsafe.Slice((*float32)(buffer), 6), []float32{0, 1, 2, 3, 4, 5})
		t, err := dlbridge.Wrap(buffer, 6*4, dlbridge.CPU, dlbridge.Float32, []int64{1, 1, 1, 2, 3}, nil, 0, 0,
			func() { ctest.Free(buffer) })
		if err != nil {
			ctest.Free(buffer)
			return "", err
		}
		defer t.Close()
		return layoutAndValues(t, nil)
	})
	run("wrap_ndim_65", func() (string, error) {
		buffer := ctest.Malloc(4)
		defer ctest.Free(buffer) // refused: the memory stays the caller's
		shape := make([]int64, 65)
		for i := range shape {
			shape[i] = 1
		}
		return layoutOf(dlbridge.Wrap(buffer, 4, dlbridge.CPU, dlbridge.Float32, shape, nil, 0, 0, nil))
	})

	importRow := func(id string, importer func() (*dlbridge.Tensor, error)) {
		run(id, func() (string, error) {
			deleted := ctest.DeleterCalls()
			t, err := importer()
			if err != nil {
				return "", err
			}
			v, err := values(t)
			t.Close()
			return facts(v, "deleted="+strconv.FormatInt(ctest.DeleterCalls()-deleted, 10)), err
		})
	}
	importRow("import_versioned", func() (*dlbridge.Tensor, error) {
		return dlbridge.ImportVersioned(ctest.MakeVersioned(4, 1, 3, 0))
	})
	importRow("import_legacy", func() (*dlbridge.Tensor, error) {
		return dlbridge.ImportLegacy(ctest.MakeLegacy(4))
	})
	{
		// The refused tensor's deleter has run: the detail follows the message on this row.
		deleted := ctest.DeleterCalls()
		t, err := dlbridge.ImportVersioned(ctest.MakeVersioned(4, 2, 0, 0))
		if err == nil {
			t.Close()
			row("import_major_2", "", nil)
		} else {
			var e *dlbridge.Error
			errors.As(err, &e)
			fmt.Printf("import_major_2\t%s\t%s deleted=%d\n", e.Status, e.Message, ctest.DeleterCalls()-deleted)
		}
	}
	run("export_import_legacy", func() (string, error) {
		t := iota(2, 3)
		p, err := t.ExportLegacy()
		if err != nil {
			t.Close()
			return "", err
		}
		return layoutAndValues(dlbridge.ImportLegacy(p))
	})
	run("export_import_versioned", func() (string, error) {
		p, err := iota(2, 3).ExportVersioned()
		if err != nil {
			return "", err
		}
		back, err := dlbridge.ImportVersioned(p)
		if err != nil {
			return "", err
		}
		defer back.Close()
		lv, err := layoutAndValues(back.Share())
		if err != nil {
			return "", err
		}
		flags, err := back.Flags()
		return facts(lv, "flags="+strconv.FormatUint(flags, 10)), err
	})
	run("export_legacy_read_only", func() (string, error) {
		t := iota(2, 3)
		ro, err := t.ShareReadOnly()
		defer closing(t, ro)()
		if err != nil {
			return "", err
		}
		_, err = ro.ExportLegacy()
		return "", err
	})
	run("export_versioned_read_only", func() (string, error) {
		t := iota(2, 3)
		defer t.Close()
		ro, err := t.ShareReadOnly()
		if err != nil {
			return "", err
		}
		p, err := ro.ExportVersioned()
		if err != nil {
			return "", err
		}
		back, err := dlbridge.ImportVersioned(p)
		if err != nil {
			return "", err
		}
		defer back.Close()
		flags, err := back.Flags()
		return "flags=" + strconv.FormatUint(flags, 10), err
	})

	none := dlbridge.SliceNone
	view := func(id string, base *dlbridge.Tensor, op func(t *dlbridge.Tensor) (*dlbridge.Tensor, error),
		describe func(*dlbridge.Tensor, error) (string, error)) {
		run(id, func() (string, error) {
			defer base.Close()
			return describe(op(base))
		})
	}
	view("slice", iota(3, 4), func(t *dlbridge.Tensor) (*dlbridge.Tensor, error) {
		return t.Slice(dlbridge.Range{Start: 1, Stop: 3, Step: 1}, dlbridge.Range{Start: none, Stop: none, Step: 2})
	}, layoutAndValues)
	view("slice_step_zero", iota(3, 4), func(t *dlbridge.Tensor) (*dlbridge.Tensor, error) {
		return t.Slice(dlbridge.Range{Start: 0, Stop: 2, Step: 0})
	}, layoutOf)
	view("select", iota(3, 4), func(t *dlbridge.Tensor) (*dlbridge.Tensor, error) { return t.Select(1, -1) },
		layoutAndValues)
	view("select_out_of_range", iota(3, 4), func(t *dlbridge.Tensor) (*dlbridge.Tensor, error) {
		return t.Select(0, 3)
	}, layoutOf)
	view("reshape", iota(3, 4), func(t *dlbridge.Tensor) (*dlbridge.Tensor, error) { return t.Reshape(2, -1) },
		layoutAndValues)
	view("reshape_non_contiguous", iota(3, 4), func(t *dlbridge.Tensor) (*dlbridge.Tensor, error) {
		tr, err := t.Transpose()
		if err != nil {
			return nil, err
		}
		defer tr.Close()
		return tr.Reshape(12)
	}, layoutOf)
	view("transpose", iota(3, 4), (*dlbridge.Tensor).Transpose, layoutAndValues)
	view("permute", iota(2, 3, 4), func(t *dlbridge.Tensor) (*dlbridge.Tensor, error) { return t.Permute(2, 0, 1) },
		layoutOf)
	view("permute_invalid", iota(2, 3, 4), func(t *dlbridge.Tensor) (*dlbridge.Tensor, error) {
		return t.Permute(0, 0, 1)
	}, layoutOf)

	// Copies out and in: one core call each, any layout.
	valuesOf := func(t *dlbridge.Tensor, err error) (string, error) {
		if err != nil {
			return "", err
		}
		defer t.Close()
		return values(t)
	}
	view("copy_out", iota(2, 3), func(t *dlbridge.Tensor) (*dlbridge.Tensor, error) { return t.Share() }, valuesOf)
	view("copy_out_transposed", iota(2, 3), (*dlbridge.Tensor).Transpose, valuesOf)
	run("copy_out_wrong_type", func() (string, error) {
		t := iota(2, 3)
		defer t.Close()
		_, err := dlbridge.CopyOut[int32](t)
		return "", err
	})
	view("copy_out_negative_strides", iota(3, 4), func(t *dlbridge.Tensor) (*dlbridge.Tensor, error) {
		return t.Slice(dlbridge.Range{Start: none, Stop: none, Step: -1}, dlbridge.Range{Start: none, Stop: none, Step: 2})
	}, valuesOf)
	run("copy_in_transposed", func() (string, error) {
		t := iota(3, 4)
		defer t.Close()
		tr, err := t.Transpose()
		if err != nil {
			return "", err
		}
		defer tr.Close()
		in := make([]float32, 12)
		for i := range in {
			in[i] = float32(100 + i)
		}
		if err := dlbridge.CopyIn(tr, in); err != nil {
			return "", err
		}
		return values(t)
	})
	run("copy_in_count_mismatch", func() (string, error) {
		t := iota(3, 4)
		defer t.Close()
		tr, err := t.Transpose()
		if err != nil {
			return "", err
		}
		defer tr.Close()
		return "", dlbridge.CopyIn(tr, make([]float32, 5))
	})

	// Typed host arrays: Go slices aliasing the tensor's memory.
	run("typed_view", func() (string, error) {
		t := iota(2, 3)
		defer t.Close()
		v, err := t.Float32s()
		if err != nil {
			return "", err
		}
		v[4] = 40
		all, err := values(t)
		return facts("count="+strconv.Itoa(len(v)), all), err
	})
	run("typed_view_wrong_type", func() (string, error) {
		t := iota(2, 3)
		defer t.Close()
		_, err := t.Int32s()
		return "", err
	})
	run("typed_view_transposed", func() (string, error) {
		t := iota(2, 3)
		tr, err := t.Transpose()
		defer closing(t, tr)()
		if err != nil {
			return "", err
		}
		_, err = tr.Float32s()
		return "", err
	})
	readOnly := func(id string, use func(ro *dlbridge.Tensor) error) {
		run(id, func() (string, error) {
			t := iota(2, 3)
			ro, err := t.ShareReadOnly()
			defer closing(t, ro)()
			if err != nil {
				return "", err
			}
			return "", use(ro)
		})
	}
	readOnly("write_read_only", func(ro *dlbridge.Tensor) error { _, err := ro.Float32s(); return err })
	readOnly("copy_into_read_only", func(ro *dlbridge.Tensor) error { return dlbridge.CopyIn(ro, make([]float32, 6)) })
	run("element_get", func() (string, error) {
		t := iota(2, 3)
		defer t.Close()
		v, err := dlbridge.At[float32](t, 1, 2)
		return "value=" + strconv.FormatInt(int64(v), 10), err
	})
	run("element_out_of_range", func() (string, error) {
		t := iota(2, 3)
		defer t.Close()
		_, err := dlbridge.At[float32](t, 2, 0)
		return "", err
	})

	run("use_after_close", func() (string, error) {
		t := iota(2, 3)
		t.Close()
		return layout(t)
	})
	run("double_close", func() (string, error) {
		t := iota(2, 3)
		if err := t.Close(); err != nil {
			return "", err
		}
		return "", t.Close()
	})

	run("close_during_call", func() (string, error) {
		return raceCall(func(t *dlbridge.Tensor) error { return t.Close() })
	})
	run("export_during_call", func() (string, error) {
		return raceCall(func(t *dlbridge.Tensor) error {
			p, err := t.ExportVersioned()
			if err != nil {
				return err
			}
			back, err := dlbridge.ImportVersioned(p)
			if err != nil {
				return err
			}
			return back.Close()
		})
	})

	run("cuda_available", func() (string, error) { return "", dlbridge.CUDAAvailable() })
	run("cuda_allocate", func() (string, error) {
		return layoutOf(dlbridge.Allocate(dlbridge.CUDA(0), dlbridge.Float32, 2))
	})
	run("opencl_available", func() (string, error) { return "", dlbridge.OpenCLAvailable() })
	run("dtype_parse_unknown", func() (string, error) {
		d, err := dlbridge.ParseDType("float33")
		return d.String(), err
	})
	run("dtype_parse", func() (string, error) {
		d, err := dlbridge.ParseDType("bfloat16x4")
		return fmt.Sprintf("code=%d bits=%d lanes=%d", d.Code, d.Bits, d.Lanes), err
	})
	run("device_unknown_type", func() (string, error) {
		d, err := dlbridge.ParseDevice("device_type_99:3")
		return fmt.Sprintf("type=%d id=%d name=%s", d.Type, d.ID, d), err
	})
	run("device_parse_unknown", func() (string, error) {
		d, err := dlbridge.ParseDevice("gpu:0")
		return d.String(), err
	})
	run("status_name", func() (string, error) {
		return facts("name="+dlbridge.StatusReadOnly.String(), "unknown="+dlbridge.Status(99).String()), nil
	})
	channelRows()

	run("live_count_balance", func() (string, error) {
		return "live=" + strconv.FormatInt(dlbridge.LiveCount()-liveAtStart, 10), nil
	})
	return 0
}

// ---- the channel rows: the peer is $DLBRIDGE_PARITY_PEER (tests/parity/parity_peer.cc) ----------

// peerLimit bounds every wait of a channel row (accept, receive, the peer's exit): a row fails
// instead of hanging.
const peerLimit = 10 * time.Second

// peer is a running parity_peer; out reads its stdout when asked for.
type peer struct {
	cmd *exec.Cmd
	out *bufio.Reader
}

// startPeer starts the peer with args; withStdout gives the row its stdout.
func startPeer(withStdout bool, args ...string) (*peer, error) {
	program := os.Getenv("DLBRIDGE_PARITY_PEER")
	if program == "" {
		return nil, errors.New("DLBRIDGE_PARITY_PEER is not set: the channel rows need the peer program")
	}
	p := &peer{cmd: exec.Command(program, args...)}
	p.cmd.Stderr = os.Stderr
	if withStdout {
		out, err := p.cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		p.out = bufio.NewReader(out)
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// reap waits for the peer to exit (every row ends its conversation first); one still running
// after peerLimit is killed.
func (p *peer) reap() {
	if p == nil {
		return
	}
	kill := time.AfterFunc(peerLimit, func() { p.cmd.Process.Kill() })
	p.cmd.Wait()
	kill.Stop()
}

// channelFolder makes a new folder of mode 0700 under /tmp, its socket path DIR/s, and a
// function that removes the folder.
func channelFolder() (dir, path string, remove func()) {
	dir, err := os.MkdirTemp("/tmp", "dlbridge-parity-go-")
	must(err)
	return dir, filepath.Join(dir, "s"), func() { os.RemoveAll(dir) }
}

// rowIn is row, with the row's folder written DIR in an error's message.
func rowIn(id string, err error, dir string) {
	var e *dlbridge.Error
	if errors.As(err, &e) && strings.Contains(e.Message, dir) {
		err = &dlbridge.Error{Status: e.Status, Message: strings.ReplaceAll(e.Message, dir, "DIR")}
	}
	row(id, "", err)
}

// acceptPeer listens at a new folder's socket, prepares the listener (allow, widen), starts the
// peer with args (PATH: the socket's path) and accepts it with a time limit. The caller closes
// the listener and the channel, reaps the peer, removes the folder.
func acceptPeer(prepare func(l *dlbridge.Listener, dir, path string) error, args ...string) (
	l *dlbridge.Listener, c *dlbridge.Channel, p *peer, remove func(), err error) {
	dir, path, remove := channelFolder()
	if l, err = dlbridge.Listen(path); err != nil {
		return nil, nil, nil, remove, err
	}
	if prepare != nil {
		if err = prepare(l, dir, path); err != nil {
			return l, nil, nil, remove, err
		}
	}
	for i, a := range args {
		if a == "PATH" {
			args[i] = path
		}
	}
	if p, err = startPeer(false, args...); err != nil {
		return l, nil, nil, remove, err
	}
	if err = l.SetTimeout(peerLimit); err != nil { // a peer that never came
		return l, nil, p, remove, err
	}
	c, err = l.Accept()
	return l, c, p, remove, err
}

// closeAll closes what a row opened, then reaps its peer and removes its folder.
func closeAll(c *dlbridge.Channel, l *dlbridge.Listener, p *peer, remove func()) {
	if c != nil {
		c.Close()
	}
	if l != nil {
		l.Close()
	}
	p.reap()
	if remove != nil {
		remove()
	}
}

// receiveFrom: listen, the peer in mode connects, accept, a time limit, receive.
func receiveFrom(mode string, limit time.Duration) (string, error) {
	l, c, p, remove, err := acceptPeer(nil, mode, "PATH")
	defer func() { closeAll(c, l, p, remove) }()
	if err != nil {
		return "", err
	}
	if err := c.SetTimeout(limit); err != nil {
		return "", err
	}
	t, err := c.Receive()
	if err != nil {
		return "", err
	}
	t.Close()
	return "", nil
}

// otherUIDConnects: we listen (allowing uid 65534 when allow), a peer of uid 65534 connects and
// echoes the float32 tensor 0, 1, 2, 3 we send; the values of the echo.
func otherUIDConnects(allow bool) (string, error) {
	widen := func(l *dlbridge.Listener, dir, path string) error {
		if allow {
			if err := l.AllowUID(65534); err != nil {
				return err
			}
		}
		if err := os.Chmod(dir, 0o711); err != nil {
			return err
		}
		return os.Chmod(path, 0o666)
	}
	l, c, p, remove, err := acceptPeer(widen, "connect-as", "65534", "0", "PATH")
	defer func() { closeAll(c, l, p, remove) }()
	if err != nil {
		return "", err
	}
	t, err := dlbridge.AllocateShareable(dlbridge.CPU, dlbridge.Float32, 4)
	if err != nil {
		return "", err
	}
	defer t.Close()
	if err := dlbridge.CopyIn(t, []float32{0, 1, 2, 3}); err != nil {
		return "", err
	}
	if err := c.SetTimeout(peerLimit); err != nil {
		return "", err
	}
	if err := c.Send(t); err != nil {
		return "", err
	}
	back, err := c.Receive()
	if err != nil {
		return "", err
	}
	defer back.Close()
	return values(back)
}

// connectToOtherUID: a peer of uid 65534 listens and prints its socket's path; we connect
// naming its uid (nameUID) or not, and receive its float32 tensor 0, 1, 2, 3; its values.
func connectToOtherUID(nameUID bool) (string, error) {
	p, err := startPeer(true, "listen-as", "65534", "0")
	defer p.reap()
	if err != nil {
		return "", err
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("the peer printed no socket path: %v", err)
	}
	uid := dlbridge.UIDSelf
	if nameUID {
		uid = 65534
	}
	c, err := dlbridge.DialWith(strings.TrimSuffix(line, "\n"), uid, peerLimit)
	if err != nil {
		return "", err
	}
	defer c.Close() // before the peer is reaped: it waits for this end to close
	t, err := c.Receive()
	if err != nil {
		return "", err
	}
	defer t.Close()
	return values(t)
}

func channelRows() {
	run("channel_no_listener", func() (string, error) {
		c, err := dlbridge.Dial("dlbridge-parity-absent.sock")
		if err == nil {
			c.Close()
		}
		return "", err
	})
	{
		dir, path, remove := channelFolder()
		must(os.Chmod(dir, 0o755))
		l, err := dlbridge.Listen(path)
		if err == nil {
			l.Close()
		}
		remove()
		rowIn("channel_permission", err, dir)
	}
	run("channel_peer_closed", func() (string, error) { return receiveFrom("connect-close", peerLimit) })
	run("channel_forged", func() (string, error) { return receiveFrom("forge", peerLimit) })
	run("channel_timeout", func() (string, error) { return receiveFrom("half", 100*time.Millisecond) })
	if os.Geteuid() != 0 {
		for _, id := range []string{"channel_refused_uid_accept", "channel_refused_uid_connect",
			"channel_second_uid_accept", "channel_second_uid_connect"} {
			fmt.Printf("%s\tSKIP\tneeds root to run a peer as another user\n", id)
		}
	} else {
		run("channel_refused_uid_accept", func() (string, error) { return otherUIDConnects(false) })
		run("channel_refused_uid_connect", func() (string, error) { return connectToOtherUID(false) })
		run("channel_second_uid_accept", func() (string, error) { return otherUIDConnects(true) })
		run("channel_second_uid_connect", func() (string, error) { return connectToOtherUID(true) })
	}
	run("status_names_channel", func() (string, error) {
		var names []string
		for _, s := range []dlbridge.Status{dlbridge.StatusNoListener, dlbridge.StatusPermission,
			dlbridge.StatusPeerClosed, dlbridge.StatusProtocol, dlbridge.StatusTimeout, dlbridge.StatusLimit} {
			names = append(names, s.String())
		}
		return "names=" + strings.Join(names, ","), nil
	})
}
