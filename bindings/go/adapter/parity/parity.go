// Package parity is the Go program of the parity matrix (tests/parity/README.md), the subcommand
// `parity` of the Go adapter's program (../program): it reads tests/parity/parity_table.tsv from
// $DLBRIDGE_PARITY_TABLE and performs every row with the public API of package dlbridge,
// printing one line per row, ROW<TAB>STATUS<TAB>DETAIL, where STATUS is the core's status name and
// DETAIL the error's message verbatim, or the facts the table names for a row that succeeds. A
// row with steps is performed by one interpreter of the README's step language; the rows without
// (the races, CUDA and OpenCL, the channels, the live count) are written out here. The foreign
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

// Run reads the table, performs every row and prints its line; it returns the exit status.
func Run() int {
	path := os.Getenv("DLBRIDGE_PARITY_TABLE")
	if path == "" {
		fmt.Fprintln(os.Stderr, "parity: DLBRIDGE_PARITY_TABLE is not set: it names the parity table (run_parity.py sets it)")
		return 2
	}
	rows, err := readTable(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "parity:", err)
		return 2
	}
	liveAtStart := dlbridge.LiveCount()
	for _, r := range rows {
		switch {
		case r.id == "live_count_balance": // below, after every other row
		case r.steps != "":
			runSteps(r.id, strings.Split(r.steps, " ; "))
		case written[r.id] != nil:
			detail, err := written[r.id]()
			row(r.id, detail, err)
		default:
			fmt.Printf("%s\tNO_CODE\tthe row has no steps and no code in this program\n", r.id)
		}
	}
	row("live_count_balance", "live="+strconv.FormatInt(dlbridge.LiveCount()-liveAtStart, 10), nil)
	return 0
}

// tableRow is what the program needs of one row of the table.
type tableRow struct{ id, steps string }

// readTable reads the table's rows: '#' lines and empty lines are comments, the first other
// line names the columns, and a line may have fewer fields than the header (missing: empty).
func readTable(path string) ([]tableRow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var header []string
	var rowAt, stepsAt int
	var rows []tableRow
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if header == nil {
			header = fields
			rowAt, stepsAt = column(header, "row"), column(header, "steps")
			if rowAt < 0 || stepsAt < 0 {
				return nil, fmt.Errorf("%s: the header has no column row or no column steps", path)
			}
			continue
		}
		fields = append(fields, make([]string, len(header))...) // the missing fields are empty
		rows = append(rows, tableRow{id: fields[rowAt], steps: fields[stepsAt]})
	}
	return rows, nil
}

// column is the index of the header's column name, -1 when there is none.
func column(header []string, name string) int {
	for i, c := range header {
		if c == name {
			return i
		}
	}
	return -1
}

// skip is a row's reason to print SKIP instead of an outcome.
type skip string

func (s skip) Error() string { return string(s) }

// row prints one row: SKIP, the core's status and message of err, or DLB_OK and detail.
func row(id string, detail string, err error) {
	var reason skip
	var e *dlbridge.Error
	switch {
	case err == nil:
		fmt.Printf("%s\tDLB_OK\t%s\n", id, detail)
	case errors.As(err, &reason):
		fmt.Printf("%s\tSKIP\t%s\n", id, reason)
	case errors.As(err, &e):
		fmt.Printf("%s\t%s\t%s\n", id, e.Status, e.Message)
	default:
		fmt.Printf("%s\tNOT_A_DLBRIDGE_ERROR\t%v\n", id, err)
	}
}

// ---- the step interpreter (README.md, "Steps: most rows are data") ------------------------------

// state is what a row's steps made and found, for the steps after them and for report.
type state struct {
	made    []*dlbridge.Tensor // every tensor the row made, closed when it ends
	current *dlbridge.Tensor   // the tensor the next step uses
	buffer  unsafe.Pointer     // the buffer wrap gave
	deleted int64              // the foreign producer's deleter calls when the row began
	found   map[string]string  // facts steps found (values, count, names, ...), as report writes them
	detail  string             // what report wrote
}

// runSteps performs one row's steps and prints its line. A step the program cannot read (a
// mistake in the table) panics; its row prints BAD_STEP and the program goes on.
func runSteps(id string, steps []string) {
	s := &state{deleted: ctest.DeleterCalls(), found: map[string]string{}}
	defer func() {
		if r := recover(); r != nil {
			fmt.Printf("%s\tBAD_STEP\t%v\n", id, r)
		}
		for i := len(s.made) - 1; i >= 0; i-- {
			s.made[i].Close()
		}
	}()
	last := steps[len(steps)-1] + " "
	reportsDeleted := strings.HasPrefix(last, "report ") && strings.Contains(last, " deleted ")
	for _, step := range steps {
		fields := strings.Fields(step)
		err := s.do(fields[0], fields[1:])
		var e *dlbridge.Error
		if errors.As(err, &e) && reportsDeleted {
			// A refused import has called its deleter: the count follows the message.
			message := fmt.Sprintf("%s deleted=%d", e.Message, ctest.DeleterCalls()-s.deleted)
			err = &dlbridge.Error{Status: e.Status, Message: message}
		}
		if err != nil {
			row(id, "", err)
			return
		}
	}
	row(id, s.detail, nil)
}

// do performs one step, name with its arguments.
func (s *state) do(name string, args []string) error {
	switch name {
	case "allocate":
		dt, err := dlbridge.ParseDType(args[0])
		if err != nil {
			return err
		}
		strides, flags := []int64(nil), int64(0)
		if len(args) > 2 {
			strides = list(args[2])
		}
		if len(args) > 3 {
			flags = number(args[3])
		}
		return s.use(dlbridge.AllocateStrided(dlbridge.CPU, dt, list(args[1]), strides, uint64(flags)))
	case "wrap":
		// Go's own buffer for a zero-copy wrap is C memory: Go 1.19 cannot pin Go memory for C.
		n, shape := number(args[0]), list(args[1])
		buffer := ctest.Malloc(uint64(4 * n))
		copy(unsafe.Slice((*float32)(buffer), n), floats(0, n))
		t, err := dlbridge.Wrap(buffer, uint64(4*n), dlbridge.CPU, dlbridge.Float32, shape, nil, 0, 0,
			func() { ctest.Free(buffer) })
		if err != nil {
			ctest.Free(buffer) // refused: the memory stays the caller's
			return err
		}
		s.buffer = buffer
		return s.use(t, nil)
	case "iota":
		if err := s.use(dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, list(args[0])...)); err != nil {
			return err
		}
		n, err := s.current.ElementCount()
		if err != nil {
			return err
		}
		return dlbridge.CopyIn(s.current, floats(0, n))
	case "import":
		n := number(args[1])
		switch args[0] {
		case "versioned":
			major, minor := uint32(number(args[2])), uint32(number(args[3]))
			return s.use(dlbridge.ImportVersioned(ctest.MakeVersioned(n, major, minor, 0)))
		case "legacy":
			return s.use(dlbridge.ImportLegacy(ctest.MakeLegacy(n)))
		}
	case "share_read_only":
		return s.use(s.current.ShareReadOnly())
	case "export":
		// The export moves the tensor out; the row closes what it imports back.
		export, back := (*dlbridge.Tensor).ExportVersioned, dlbridge.ImportVersioned
		if args[0] == "legacy" {
			export, back = (*dlbridge.Tensor).ExportLegacy, dlbridge.ImportLegacy
		}
		p, err := export(s.current)
		if err != nil {
			return err
		}
		return s.use(back(p))
	case "slice":
		var ranges []dlbridge.Range
		for _, axis := range strings.Split(args[0], ",") {
			ranges = append(ranges, sliceRange(axis))
		}
		return s.use(s.current.Slice(ranges...))
	case "select":
		return s.use(s.current.Select(int(number(args[0])), number(args[1])))
	case "reshape":
		return s.use(s.current.Reshape(list(args[0])...))
	case "transpose":
		return s.use(s.current.Transpose())
	case "permute":
		var axes []int32
		for _, axis := range list(args[0]) {
			axes = append(axes, int32(axis))
		}
		return s.use(s.current.Permute(axes...))
	case "copy_out":
		switch args[0] {
		case "float32":
			return copyOut[float32](s)
		case "int32":
			return copyOut[int32](s)
		}
	case "copy_in":
		return dlbridge.CopyIn(s.current, floats(number(args[0]), number(args[1])))
	case "view":
		switch args[0] {
		case "float32":
			return view[float32](s, args[1:])
		case "int32":
			return view[int32](s, args[1:])
		}
	case "element":
		v, err := dlbridge.At[float32](s.current, list(args[0])...)
		s.found["value"] = strconv.FormatInt(int64(v), 10)
		return err
	case "close":
		return s.current.Close()
	case "base":
		s.current = s.made[0]
		return nil
	case "dtype":
		dt, err := dlbridge.ParseDType(args[0])
		s.found["code"] = strconv.Itoa(int(dt.Code))
		s.found["bits"] = strconv.Itoa(int(dt.Bits))
		s.found["lanes"] = strconv.Itoa(int(dt.Lanes))
		return err
	case "device":
		dev, err := dlbridge.ParseDevice(args[0])
		s.found["type"] = strconv.Itoa(int(dev.Type))
		s.found["id"] = strconv.Itoa(int(dev.ID))
		s.found["name"] = dev.String()
		return err
	case "status_names":
		var names []string
		for _, status := range list(args[0]) {
			names = append(names, dlbridge.Status(status).String())
		}
		s.found["names"] = strings.Join(names, ",")
		return nil
	case "report":
		var err error
		s.detail, err = s.report(args...)
		return err
	}
	panic(fmt.Sprintf("cannot perform step %s %s", name, strings.Join(args, " ")))
}

// use makes t, when it was made, a tensor of the row and the one the next step uses.
func (s *state) use(t *dlbridge.Tensor, err error) error {
	if err == nil {
		s.made = append(s.made, t)
		s.current = t
	}
	return err
}

// report writes the facts, in that order, as the README's list writes them.
func (s *state) report(facts ...string) (string, error) {
	written := make([]string, len(facts))
	for i, fact := range facts {
		value, err := s.fact(fact)
		if err != nil {
			return "", err
		}
		written[i] = fact + "=" + value
	}
	return strings.Join(written, " "), nil
}

// fact is one fact's value: of the current tensor, or what the steps before found.
func (s *state) fact(name string) (string, error) {
	switch name {
	case "shape":
		shape, err := s.current.Shape()
		return brackets(shape), err
	case "strides":
		strides, err := s.current.Strides()
		return brackets(strides), err
	case "dtype":
		dt, err := s.current.DType()
		return dt.String(), err
	case "device":
		dev, err := s.current.Device()
		return dev.String(), err
	case "flags":
		flags, err := s.current.Flags()
		return strconv.FormatUint(flags, 10), err
	case "same_memory":
		data, _, err := s.current.HostData(false)
		if data == s.buffer {
			return "1", err
		}
		return "0", err
	case "deleted":
		return strconv.FormatInt(ctest.DeleterCalls()-s.deleted, 10), nil
	}
	if value, ok := s.found[name]; ok {
		return value, nil
	}
	panic("no step found the fact " + name)
}

// copyOut is step copy_out with element type T: every element, any layout, in C order.
func copyOut[T float32 | int32](s *state) error {
	v, err := dlbridge.CopyOut[T](s.current)
	s.found["values"] = brackets(v)
	return err
}

// view is step view with element type T: a Go slice over the tensor's memory, and element I set
// to V through it when args are I and V.
func view[T float32 | int32](s *state, args []string) error {
	v, err := dlbridge.Data[T](s.current)
	if err != nil {
		return err
	}
	if len(args) == 2 {
		v[number(args[0])] = T(number(args[1]))
	}
	s.found["count"] = strconv.Itoa(len(v))
	return nil
}

// sliceRange is one axis of a slice SPEC, start:stop:step, an empty or missing part for none.
func sliceRange(spec string) dlbridge.Range {
	parts := append(strings.Split(spec, ":"), "", "")
	bounds := make([]int64, 3)
	for i := range bounds {
		bounds[i] = dlbridge.SliceNone
		if parts[i] != "" {
			bounds[i] = number(parts[i])
		}
	}
	return dlbridge.Range{Start: bounds[0], Stop: bounds[1], Step: bounds[2]}
}

// number is an integer argument; a malformed one is a mistake in the table.
func number(text string) int64 {
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// list is a LIST argument: integers separated by commas, V*N for N times V, '-' for none.
func list(text string) []int64 {
	var out []int64
	if text == "-" {
		return out
	}
	for _, item := range strings.Split(text, ",") {
		value, times, repeated := strings.Cut(item, "*")
		n := int64(1)
		if repeated {
			n = number(times)
		}
		for i := int64(0); i < n; i++ {
			out = append(out, number(value))
		}
	}
	return out
}

// floats is n float32 values from, from+1, ...
func floats(from, n int64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(from + int64(i))
	}
	return v
}

// brackets writes integers (or small whole floats) as the facts do: [2,3].
func brackets[T int64 | int32 | float32](v []T) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(int64(x), 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// ---- the rows without steps -----------------------------------------------------------------

// written performs each row that has no steps (live_count_balance is Run's own).
var written = map[string]func() (string, error){
	"close_during_call":  func() (string, error) { return raceCall((*dlbridge.Tensor).Close) },
	"export_during_call": func() (string, error) { return raceCall(exportAndBack) },
	"cuda_available":     func() (string, error) { return "", dlbridge.CUDAAvailable() },
	"cuda_allocate":      cudaAllocate,
	"opencl_available":   func() (string, error) { return "", dlbridge.OpenCLAvailable() },
	"channel_no_listener": func() (string, error) {
		c, err := dlbridge.Dial("dlbridge-parity-absent.sock")
		if err == nil {
			c.Close()
		}
		return "", err
	},
	"channel_permission":          channelPermission,
	"channel_peer_closed":         func() (string, error) { return receiveFrom("connect-close", peerLimit) },
	"channel_forged":              func() (string, error) { return receiveFrom("forge", peerLimit) },
	"channel_timeout":             func() (string, error) { return receiveFrom("half", 100*time.Millisecond) },
	"channel_refused_uid_accept":  asRoot(func() (string, error) { return otherUIDConnects(false) }),
	"channel_refused_uid_connect": asRoot(func() (string, error) { return connectToOtherUID(false) }),
	"channel_second_uid_accept":   asRoot(func() (string, error) { return otherUIDConnects(true) }),
	"channel_second_uid_connect":  asRoot(func() (string, error) { return connectToOtherUID(true) }),
}

// cudaAllocate allocates float32 [2] on cuda:0; its layout when it can.
func cudaAllocate() (string, error) {
	t, err := dlbridge.Allocate(dlbridge.CUDA(0), dlbridge.Float32, 2)
	if err != nil {
		return "", err
	}
	defer t.Close()
	return (&state{current: t}).report("shape", "strides")
}

// raceElements is the size of the race rows' foreign tensor: 64 MiB of float32, above glibc's
// largest mmap threshold, so the producer's deleter unmaps the memory and a copy still reading it
// faults. Every value 0 .. 2^24-1 is exact in float32.
const raceElements = 1 << 24

// raceTries bounds the tries of a race row until the racer began before the copy ended.
const raceTries = 20

// raceCall copies the foreign tensor out on another goroutine while racer runs on it here (rows
// close_during_call and export_during_call). A try in which the copy lost the race must have
// failed as a use after close (any other error is the row's outcome); tries are made until the
// racer began before the copy ended.
func raceCall(racer func(t *dlbridge.Tensor) error) (string, error) {
	outcome := ""
	for try := 1; try <= raceTries; try++ {
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
		if lost != nil && !errors.Is(lost, dlbridge.ErrClosed) { // ErrClosed: status and message
			return "", lost
		}
		overlapped := 0
		if lost == nil && raceStart.Before(copyEnd) {
			overlapped = 1
		}
		read := 0
		for i, v := range copied {
			if v == float32(i) {
				read++
			}
		}
		outcome = fmt.Sprintf("overlapped=%d read=%d deleted=%d", overlapped, read,
			ctest.DeleterCalls()-deleted)
		if overlapped == 1 {
			break
		}
	}
	return outcome, nil
}

// exportAndBack exports t (versioned), imports it back and closes it: export_during_call's racer.
func exportAndBack(t *dlbridge.Tensor) error {
	p, err := t.ExportVersioned()
	if err != nil {
		return err
	}
	back, err := dlbridge.ImportVersioned(p)
	if err != nil {
		return err
	}
	return back.Close()
}

// ---- the channel rows: the peer is $DLBRIDGE_PARITY_PEER (tests/parity/parity_peer.cc) ----------

// peerLimit bounds every wait of a channel row (accept, receive, the peer's exit): a row fails
// instead of hanging.
const peerLimit = 10 * time.Second

// asRoot is a row that runs a peer as another user, which needs root: SKIP otherwise.
func asRoot(body func() (string, error)) func() (string, error) {
	return func() (string, error) {
		if os.Geteuid() != 0 {
			return "", skip("needs root to run a peer as another user")
		}
		return body()
	}
}

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
	if err != nil {
		panic(err) // a fixture, which no row expects to fail
	}
	return dir, filepath.Join(dir, "s"), func() { os.RemoveAll(dir) }
}

// channelPermission listens in a new folder of mode 0755; the folder is written DIR in the
// error's message.
func channelPermission() (string, error) {
	dir, path, remove := channelFolder()
	defer remove()
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	l, err := dlbridge.Listen(path)
	if err == nil {
		l.Close()
	}
	var e *dlbridge.Error
	if errors.As(err, &e) {
		err = &dlbridge.Error{Status: e.Status, Message: strings.ReplaceAll(e.Message, dir, "DIR")}
	}
	return "", err
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
	remove()
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
	return "", t.Close()
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
	if err := dlbridge.CopyIn(t, floats(0, 4)); err != nil {
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
	v, err := dlbridge.CopyOut[float32](back)
	return "values=" + brackets(v), err
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
	v, err := dlbridge.CopyOut[float32](t)
	return "values=" + brackets(v), err
}
