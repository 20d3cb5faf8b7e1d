package dlbridge

import (
	"time"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// Channels across machines (docs/remote.md): the same Listener and Channel, made at a
// "tcp://HOST:PORT" or "ucx://HOST:PORT" address by ListenWithOptions and DialWithOptions with
// ChannelOptions that hold the key the peers share. The bytes travel: a received tensor is a new
// tensor of this process (FlagIsCopied), and any tensor may be sent. Every check and message is
// the core's (dlb_channel_options_*, dlb_channel_*_with_options).

// DefaultMaxTensorBytes is the most bytes one received tensor may have unless WithMaxTensorBytes
// says otherwise (1 GiB, the core's DLB_REMOTE_DEFAULT_MAX_TENSOR_BYTES).
var DefaultMaxTensorBytes = capi.DLB_REMOTE_DEFAULT_MAX_TENSOR_BYTES

// The limits of a remote channel's options, from the core's header.
const (
	// DefaultMaxInFlight is the most tensors a receiver holds received and not yet taken unless
	// WithMaxInFlight says otherwise.
	DefaultMaxInFlight = uint32(capi.DLB_REMOTE_DEFAULT_MAX_IN_FLIGHT)
	// MinKeyBytes is the shortest key, in bytes.
	MinKeyBytes = int(capi.DLB_REMOTE_MIN_KEY_BYTES)
	// MaxKeyBytes is the longest key, in bytes.
	MaxKeyBytes = int(capi.DLB_REMOTE_MAX_KEY_BYTES)
)

// ChannelOption is one setting of ListenWithOptions and DialWithOptions (WithKey,
// WithReceiveDevice, WithMaxTensorBytes, WithMaxInFlight, WithTimeout, WithListenerUID). The
// options are applied in order to the core's dlb_channel_options when the channel is made, and
// the core checks each: a value it refuses is that call's error (its status and message). A nil
// option is skipped.
type ChannelOption func(options int64) error

// WithKey is the shared secret that remote peers prove they hold (dlb_channel_options_set_key):
// MinKeyBytes to MaxKeyBytes bytes (else ErrInvalidArgument). A listener at a remote address
// needs one, and so does a channel that connects to it. The core copies the bytes while the
// channel is made and wipes its copy afterwards; key stays the caller's. Local channels ignore
// it.
func WithKey(key []byte) ChannelOption {
	return func(options int64) error {
		_, err := check(capi.Dlb_channel_options_set_key(options, key))
		return err
	}
}

// WithReceiveDevice is where a remote channel puts the tensors it receives
// (dlb_channel_options_set_receive_device): CPU (the default), pinned host memory
// (DeviceTypeCUDAHost), a CUDA device or CUDA managed memory; other devices are refused with
// ErrUnsupported. Whether this process reaches that memory is checked when the channel is made.
// Local channels ignore it.
func WithReceiveDevice(d Device) ChannelOption {
	return func(options int64) error {
		_, err := check(capi.Dlb_channel_options_set_receive_device(options, d.packed()))
		return err
	}
}

// WithMaxTensorBytes is the most bytes one tensor received on a remote channel may have (at
// least 1; DefaultMaxTensorBytes otherwise): a larger one is refused with ErrLimit before
// anything is allocated.
func WithMaxTensorBytes(bytes uint64) ChannelOption {
	return func(options int64) error {
		_, err := check(capi.Dlb_channel_options_set_max_tensor_bytes(options, bytes))
		return err
	}
}

// WithMaxInFlight is the most tensors a remote channel holds received and not yet taken by
// Receive (1 to 65536; DefaultMaxInFlight otherwise): the sender waits, within its time limit,
// for the receiver to take one.
func WithMaxInFlight(tensors uint32) ChannelOption {
	return func(options int64) error {
		_, err := check(capi.Dlb_channel_options_set_max_in_flight(options, uint(tensors)))
		return err
	}
}

// WithTimeout is the channel's time limit, for connecting and for every later call, as
// SetTimeout (NoTimeout, the default: none; 0: do not wait).
func WithTimeout(d time.Duration) ChannelOption {
	return func(options int64) error {
		_, err := check(capi.Dlb_channel_options_set_timeout(options, int64(d)))
		return err
	}
}

// WithListenerUID is the user a local listener may run as besides this process's (as
// DialWith's listenerUID; UIDSelf: this user only). Remote channels ignore it.
func WithListenerUID(uid uint32) ChannelOption {
	return func(options int64) error {
		_, err := check(capi.Dlb_channel_options_set_listener_uid(options, uint(uid)))
		return err
	}
}

// madeWith makes the core's options from opts, runs build with them (a dlb_channel_*_with_options
// call) and frees them: the channel keeps its own copy, and the core wipes the key of this one.
// It returns build's result as the SWIG layer gives it (check it), or the error of making the
// options.
func madeWith(opts []ChannelOption, build func(options int64) int64) (int64, error) {
	options, err := check(capi.Dlb_channel_options_create())
	if err != nil {
		return 0, err
	}
	defer capi.Dlb_channel_options_free(options)
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(options); err != nil {
			return 0, err
		}
	}
	return build(options), nil
}

// ListenWithOptions listens at address with opts (dlb_channel_listen_with_options): a Unix
// socket path (as Listen), or "tcp://HOST:PORT" (UCX over TCP) or "ucx://HOST:PORT" (the
// transports UCX picks), which binds exactly that host (port 0: one the system picks, which Port
// says) and needs WithKey (ErrInvalidArgument without one, or when the address is in use). Every
// channel it accepts takes its options. ErrUnsupported when RemoteAvailable says so.
// Ownership: the caller owns the Listener (Close it); on error nothing is left open.
func ListenWithOptions(address string, opts ...ChannelOption) (*Listener, error) {
	result, err := madeWith(opts, func(options int64) int64 {
		return capi.Dlb_channel_listen_with_options(address, options)
	})
	if err != nil {
		return nil, err
	}
	addr, err := check(result)
	if err != nil {
		return nil, err
	}
	return newListener(addr), nil
}

// DialWithOptions connects to the listener at address with opts
// (dlb_channel_connect_with_options): a Unix socket path (WithListenerUID and WithTimeout apply),
// or a "tcp://HOST:PORT" / "ucx://HOST:PORT" address, where opts must hold the listener's key
// (WithKey): the key handshake runs before it returns. Errors for a remote address:
// ErrInvalidArgument (no key), ErrNoListener, ErrPermission (the listener refused this key, or
// did not prove it holds it), ErrTimeout, ErrUnsupported when RemoteAvailable says so.
// Ownership: the caller owns the Channel (Close it); on error nothing is left open.
func DialWithOptions(address string, opts ...ChannelOption) (*Channel, error) {
	result, err := madeWith(opts, func(options int64) int64 {
		return capi.Dlb_channel_connect_with_options(address, options)
	})
	if err != nil {
		return nil, err
	}
	return channelOf(result)
}

// RemoteAvailable returns nil when this process can make remote channels: UCX (libucp.so.0) and
// libcrypto load (dlb_remote_available). Otherwise ErrUnsupported with the core's message, which
// names what is missing and the Debian packages that bring it. The first call loads them; later
// calls are cheap.
func RemoteAvailable() error {
	_, err := check(capi.Dlb_remote_available())
	return err
}

// isRemote and port read the channel's address under the handle (false and -1 once closed).
func (h *channelHandle) isRemote() bool {
	remote := false
	_ = h.use(func(addr int64) error {
		remote = capi.Dlb_channel_is_remote(addr) != 0
		return nil
	})
	return remote
}

func (h *channelHandle) port() int {
	port := -1
	_ = h.use(func(addr int64) error {
		port = capi.Dlb_channel_port(addr)
		return nil
	})
	return port
}

// IsRemote reports whether l listens at a "tcp://" or "ucx://" address (dlb_channel_is_remote);
// false once closed.
func (l *Listener) IsRemote() bool { return l.h.isRemote() }

// Port is the port a remote listener listens at (dlb_channel_port): the one the system picked
// when its address said port 0. -1 for a local listener or once closed.
func (l *Listener) Port() int { return l.h.port() }

// IsRemote reports whether c is a channel across machines (dlb_channel_is_remote): made at a
// "tcp://" or "ucx://" address, or accepted by a listener there. Its received tensors are new
// tensors of this process (FlagIsCopied), on the receive device of its options. False once
// closed.
func (c *Channel) IsRemote() bool { return c.h.isRemote() }

// Port is the port this end of a remote channel uses on this machine (dlb_channel_port); -1 for
// a local channel or once closed.
func (c *Channel) Port() int { return c.h.port() }
