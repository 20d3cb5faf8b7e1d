// Package parity is the Go program of the parity matrix (tests/parity/README.md), the subcommand
// `parity` of the Go adapter's program (../program): every row of the table
// ($DLBRIDGE_PARITY_TABLE) with the public API of package dlbridge, one line each,
// ROW<TAB>STATUS<TAB>DETAIL. A row with steps is performed by one interpreter of the README's
// steps (the channel rows' peer: $DLBRIDGE_PARITY_PEER); the rows without are written out here.
// The foreign producer is the one every binding's tests share (tests/foreign, internal/ctest).
// With --steps, one row of steps: suites ipc-languages' and remote's Go peer.
package parity

import (
	"bufio"
	"encoding/hex"
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

// Run reads the table, performs every row and prints its line; given `--steps STEPS` (args), it
// runs that one row, named steps, instead (a channel's peer: tests/ipc/README.md). It returns
// the exit status.
func Run(args []string) int {
	if len(args) == 2 && args[0] == "--steps" {
		runSteps("steps", strings.Split(args[1], " ; "))
		return 0
	}
	if len(args) != 0 {
		fmt.Fprintln(os.Stderr, "usage: parity [--steps STEPS]")
		return 2
	}
	rows, err := readTable(os.Getenv("DLBRIDGE_PARITY_TABLE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "parity: $DLBRIDGE_PARITY_TABLE (run_parity.py sets it):", err)
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
	var rows []tableRow
	column := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(column) == 0 {
			for i, name := range fields {
				column[name] = i
			}
			continue
		}
		fields = append(fields, make([]string, len(column))...)
		rows = append(rows, tableRow{id: fields[column["row"]], steps: fields[column["steps"]]})
	}
	for _, name := range []string{"row", "steps"} {
		if _, ok := column[name]; !ok {
			return nil, fmt.Errorf("%s: the header has no column %s", path, name)
		}
	}
	return rows, nil
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
	made     []*dlbridge.Tensor // every tensor the row made, closed when it ends
	current  *dlbridge.Tensor   // the tensor the next step uses
	buffer   unsafe.Pointer     // the buffer wrap gave
	deleted  int64              // the foreign producer's deleter calls when the row began
	found    map[string]string  // facts steps found (values, count, names, ...), as report writes them
	detail   string             // what report wrote
	dir      string             // the folder step's folder, removed when the row ends
	listener *dlbridge.Listener // the listen step's listener
	channel  *dlbridge.Channel  // the row's channel, which the channel steps use
	peer     *exec.Cmd          // the peer step's peer, waited for when the row ends
	peerOut  *bufio.Reader      // the peer's stdout, where connect_peer reads its socket's path
}

// runSteps performs one row's steps and prints its line. A step the program cannot read (a
// mistake in the table) panics; its row prints BAD_STEP and the program goes on.
func runSteps(id string, steps []string) {
	s := &state{deleted: ctest.DeleterCalls(), found: map[string]string{}}
	defer func() {
		if r := recover(); r != nil {
			fmt.Printf("%s\tBAD_STEP\t%v\n", id, r)
		}
		s.end()
	}()
	last := steps[len(steps)-1] + " "
	reportsDeleted := strings.HasPrefix(last, "report ") && strings.Contains(last, " deleted ")
	for _, step := range steps {
		fields := strings.Fields(step)
		if err := s.do(fields[0], fields[1:]); err != nil {
			row(id, "", s.printed(err, reportsDeleted))
			return
		}
	}
	row(id, s.detail, nil)
}

// printed is a failed step's error as the row's line prints it: the folder's path as DIR and,
// withDeleted, the deleter calls after the message (a refused import has called its deleter).
func (s *state) printed(err error, withDeleted bool) error {
	var e *dlbridge.Error
	if !errors.As(err, &e) {
		return err
	}
	message := e.Message
	if s.dir != "" {
		message = strings.ReplaceAll(message, s.dir, "DIR")
	}
	if withDeleted {
		message += fmt.Sprintf(" deleted=%d", ctest.DeleterCalls()-s.deleted)
	}
	return &dlbridge.Error{Status: e.Status, Message: message}
}

// end closes what the row opened: its tensors, its channel and listener; then it waits for its
// peer (killed when still running after peerLimit) and removes its folder.
func (s *state) end() {
	for i := len(s.made) - 1; i >= 0; i-- {
		s.made[i].Close()
	}
	if s.channel != nil {
		s.channel.Close()
	}
	if s.listener != nil {
		s.listener.Close()
	}
	if s.peer != nil {
		kill := time.AfterFunc(peerLimit, func() { s.peer.Process.Kill() })
		s.peer.Wait()
		kill.Stop()
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
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
		return s.fill(dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, list(args[0])...))
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
	case "print":
		facts, err := s.report(args...)
		if err == nil {
			fmt.Println(facts)
		}
		return err
	case "needs_root":
		if os.Geteuid() != 0 {
			return skip("needs root to run a peer as another user")
		}
		return nil
	case "folder":
		var err error
		if s.dir, err = os.MkdirTemp("/tmp", "dlbridge-parity-go-"); err != nil {
			return err
		}
		return os.Chmod(s.dir, mode(args[0]))
	case "listen":
		var err error
		s.listener, err = dlbridge.Listen(s.socket())
		return err
	case "folder_mode":
		return os.Chmod(s.dir, mode(args[0]))
	case "socket_mode":
		return os.Chmod(s.socket(), mode(args[0]))
	case "allow_uid":
		return s.listener.AllowUID(uint32(number(args[0])))
	case "peer":
		return s.startPeer(args)
	case "accept":
		limit := peerLimit // a peer that never came
		if len(args) > 0 {
			limit = time.Duration(number(args[0])) * time.Second
		}
		if err := s.listener.SetTimeout(limit); err != nil {
			return err
		}
		return s.open(s.listener.Accept())
	case "listen_at":
		var err error
		if s.listener, err = dlbridge.ListenWithOptions(args[0], key(args[1:])); err != nil {
			return err
		}
		if s.listener.IsRemote() {
			fmt.Println("ready", s.listener.Port())
		} else {
			fmt.Println("ready")
		}
		return nil
	case "connect":
		return s.open(dlbridge.DialWithOptions(args[0], key(args[1:])))
	case "connect_peer":
		line, err := s.peerOut.ReadString('\n')
		if err != nil {
			return fmt.Errorf("the peer printed no socket path: %v", err)
		}
		uid := dlbridge.UIDSelf
		if len(args) > 0 {
			uid = uint32(number(args[0]))
		}
		return s.open(dlbridge.DialWith(strings.TrimSuffix(line, "\n"), uid, peerLimit))
	case "timeout":
		return s.channel.SetTimeout(time.Duration(number(args[0])) * time.Millisecond)
	case "send":
		return s.channel.Send(s.current)
	case "send_copy":
		return s.channel.SendCopy(s.current)
	case "receive":
		return s.use(s.channel.Receive())
	case "shareable":
		return s.fill(dlbridge.AllocateShareable(dlbridge.CPU, dlbridge.Float32, list(args[0])...))
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

// fill is use, then fills the tensor with 0, 1, 2, ... in C order.
func (s *state) fill(t *dlbridge.Tensor, err error) error {
	if err := s.use(t, err); err != nil {
		return err
	}
	n, err := t.ElementCount()
	if err != nil {
		return err
	}
	return dlbridge.CopyIn(t, floats(0, n))
}

// open makes c, when it was made, the row's channel.
func (s *state) open(c *dlbridge.Channel, err error) error {
	if err == nil {
		s.channel = c
	}
	return err
}

// peerLimit bounds every wait for the peer (accept, connect_peer's connection, its exit): a row
// fails instead of hanging.
const peerLimit = 10 * time.Second

// startPeer starts the peer with args, PATH standing for the folder's socket; its stderr passes
// through, and its stdout is kept for connect_peer.
func (s *state) startPeer(args []string) error {
	program := os.Getenv("DLBRIDGE_PARITY_PEER")
	if program == "" {
		return errors.New("DLBRIDGE_PARITY_PEER is not set: the channel rows need the peer program")
	}
	for i, a := range args {
		if a == "PATH" {
			args[i] = s.socket()
		}
	}
	cmd := exec.Command(program, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.peer, s.peerOut = cmd, bufio.NewReader(out)
	return nil
}

// socket is the path of the folder's socket, DIR/s.
func (s *state) socket() string {
	return filepath.Join(s.dir, "s")
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

// number is an integer argument.
func number(text string) int64 { return integer(text, 10) }

// mode is an octal MODE argument.
func mode(text string) os.FileMode { return os.FileMode(integer(text, 8)) }

// integer parses number's and mode's arguments; a malformed one is a mistake in the table.
func integer(text string, base int) int64 {
	n, err := strconv.ParseInt(text, base, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// key is the option of an optional KEYHEX argument: WithKey, or nil (none) without one.
func key(args []string) dlbridge.ChannelOption {
	if len(args) == 0 {
		return nil
	}
	k, err := hex.DecodeString(args[0])
	if err != nil {
		panic(err)
	}
	return dlbridge.WithKey(k)
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

// exportAndBack is export_during_call's racer: step export versioned (its state closes what
// it imported back).
func exportAndBack(t *dlbridge.Tensor) error {
	s := &state{current: t}
	defer s.end()
	return s.do("export", []string{"versioned"})
}
