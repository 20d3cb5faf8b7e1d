package dlbridge

import (
	"fmt"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// Status is a dlbridge status code (dlb_status). It is an integer, not a closed set: a newer
// library may report a code this package has no constant for.
type Status int32

// The status codes of dlbridge.h, taken from SWIG's output of the header: constants, so that a
// switch on err.(*Error).Status compiles.
const (
	StatusOK                 Status = Status(capi.DLB_OK)
	StatusInvalidArgument    Status = Status(capi.DLB_ERR_INVALID_ARGUMENT)
	StatusOutOfMemory        Status = Status(capi.DLB_ERR_OUT_OF_MEMORY)
	StatusUnsupportedVersion Status = Status(capi.DLB_ERR_UNSUPPORTED_VERSION)
	StatusUnsupported        Status = Status(capi.DLB_ERR_UNSUPPORTED)
	StatusReadOnly           Status = Status(capi.DLB_ERR_READ_ONLY)
	StatusLayout             Status = Status(capi.DLB_ERR_LAYOUT)
	StatusOverflow           Status = Status(capi.DLB_ERR_OVERFLOW)
	StatusDevice             Status = Status(capi.DLB_ERR_DEVICE)
	StatusDeviceUnavailable  Status = Status(capi.DLB_ERR_DEVICE_UNAVAILABLE)
	// StatusClosed is the status of ErrClosed: a Tensor used after Close (or after an export
	// moved it out). The core never returns it; every binding reports it the same way.
	StatusClosed Status = Status(capi.DLB_ERR_CLOSED)

	// The statuses of a Listener or Channel (docs/ipc.md), one per cause a program can act on.
	StatusNoListener Status = Status(capi.DLB_ERR_NO_LISTENER) // nothing listens at the path (Dial)
	StatusPermission Status = Status(capi.DLB_ERR_PERMISSION)  // modes, another user's folder, a refused uid
	StatusPeerClosed Status = Status(capi.DLB_ERR_PEER_CLOSED) // the peer closed or vanished, also mid-tensor
	StatusProtocol   Status = Status(capi.DLB_ERR_PROTOCOL)    // what the peer sent is not a valid tensor
	StatusTimeout    Status = Status(capi.DLB_ERR_TIMEOUT)     // the channel's time limit ran out
	StatusLimit      Status = Status(capi.DLB_ERR_LIMIT)       // a process or system limit (fds, mappings)
)

// String returns the core's name of the status ("DLB_ERR_READ_ONLY"), or "DLB_ERR_UNKNOWN".
func (s Status) String() string { return capi.Dlb_status_name(int(s)) }

// Error is a failure: the core's status and message, verbatim, for everything the core checks;
// ErrClosed (DLB_ERR_CLOSED with the core's DLB_CLOSED_MESSAGE); and a few refusals of Go's own
// type rules that no core call can make (a NUL inside a Go string, a misaligned element, a bool
// byte other than 0 and 1).
type Error struct {
	Status  Status // the core's status (StatusReadOnly, ...), for a switch
	Message string // the core's message, verbatim ("ndim -1 is negative")
}

// Error returns "DLB_ERR_NAME: message".
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Status.String()
	}
	return e.Status.String() + ": " + e.Message
}

// Is reports whether target is the sentinel of e's status (ErrReadOnly, ...), so that
// errors.Is(err, dlbridge.ErrReadOnly) holds for every READ_ONLY failure, or an error with the
// same status and message (ErrChannelClosed, whichever side of the core reported it).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status && (t.Message == "" || t.Message == e.Message)
}

// Timeout reports whether the error is a channel's time limit running out (StatusTimeout), the
// method net.Error and os.IsTimeout look for.
func (e *Error) Timeout() bool { return e.Status == StatusTimeout }

// Sentinels for errors.Is, one per status. They carry no message.
var (
	ErrInvalidArgument    = &Error{Status: StatusInvalidArgument}
	ErrOutOfMemory        = &Error{Status: StatusOutOfMemory}
	ErrUnsupportedVersion = &Error{Status: StatusUnsupportedVersion}
	ErrUnsupported        = &Error{Status: StatusUnsupported}
	ErrReadOnly           = &Error{Status: StatusReadOnly}
	ErrLayout             = &Error{Status: StatusLayout}
	ErrOverflow           = &Error{Status: StatusOverflow}
	ErrDevice             = &Error{Status: StatusDevice}
	ErrDeviceUnavailable  = &Error{Status: StatusDeviceUnavailable}
	ErrNoListener         = &Error{Status: StatusNoListener}
	ErrPermission         = &Error{Status: StatusPermission}
	ErrPeerClosed         = &Error{Status: StatusPeerClosed}
	ErrProtocol           = &Error{Status: StatusProtocol}
	ErrTimeout            = &Error{Status: StatusTimeout}
	ErrLimit              = &Error{Status: StatusLimit}
)

// ErrClosed is returned by every method of a Tensor after Close or an export (the same value
// each time, so err == ErrClosed works, and so does errors.Is). Its status is StatusClosed and
// its message the core's DLB_CLOSED_MESSAGE, as in every binding.
var ErrClosed = &Error{Status: StatusClosed, Message: capi.DLB_CLOSED_MESSAGE}

// check turns a wrapper's result into Go values: the one place where a status becomes an error.
// A negative result is the address of an error record written by the SWIG wrapper (see
// generators/swig/typemaps_go.i), read and freed here; otherwise the result is 0 or the address
// of the tensor the call made.
func check(result int64) (int64, error) {
	if result >= 0 { // small enough to be inlined into every call: the common case costs a compare
		return result, nil
	}
	return 0, recordError(result)
}

// recordError reads and frees the error record behind a negative result.
func recordError(result int64) error {
	e := &Error{Status: Status(capi.Dlbx_go_error_status(result)), Message: capi.Dlbx_go_error_message(result)}
	capi.Dlbx_go_error_free(result)
	return e
}

// errorf is an error of this package's own: the few checks of Go's types that the core cannot
// make (see elements.go), never one of the core's.
func errorf(status Status, format string, args ...any) error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}
