package dlbridge

import (
	"runtime"
	"time"
	"unsafe"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// Tensors across processes without copying (docs/ipc.md): shareable memory, and channels over a
// Unix domain socket that pass it with its file descriptor. Every check and message is the
// core's (dlb_channel_*); this file maps them onto Go's net-like shapes.

// AllocateShareable allocates a compact, zero-filled tensor in memory another process can map
// (dlb_tensor_allocate_shareable): on CPU a sealed memfd; on a CUDA device (a library built with
// CUDA) memory exported as a file descriptor or, where the device cannot, through a CUDA IPC
// handle with a weaker lifetime rule (see ShareableKind and docs/ipc.md). Other devices are
// refused.
// Ownership: the caller owns the new tensor (Close it); on error nothing is allocated.
func AllocateShareable(dev Device, dt DType, shape ...int64) (*Tensor, error) {
	return fromResult(capi.Dlb_tensor_allocate_shareable(dev.packed(), dt.packed(),
		shapeArg(copyOf(shape)), nil, 0))
}

// IsShareable reports whether the tensor's memory can be sent on a Channel without a copy:
// allocated with AllocateShareable, received from a channel, or a view or share of one of those.
func (t *Tensor) IsShareable() (bool, error) {
	var shareable bool
	err := t.use(func(addr int64) error {
		shareable = capi.Dlb_tensor_is_shareable(addr) != 0
		return nil
	})
	return shareable, err
}

// The kinds of shareable memory, as ShareableKind reports them (DLB_SHAREABLE_*).
const (
	ShareableNone    = capi.DLB_SHAREABLE_NONE     // not shareable
	ShareableMemfd   = capi.DLB_SHAREABLE_MEMFD    // host memory in a sealed memfd
	ShareableCUDAFD  = capi.DLB_SHAREABLE_CUDA_FD  // CUDA memory as a file descriptor: lives while any process holds it
	ShareableCUDAIPC = capi.DLB_SHAREABLE_CUDA_IPC // CUDA IPC handle: the sender must outlive every receiver's use
)

// ShareableKind reports which kind of shareable memory the tensor is over (one of the Shareable*
// constants; dlb_tensor_shareable_kind).
func (t *Tensor) ShareableKind() (int, error) {
	var kind int
	err := t.use(func(addr int64) error {
		kind = capi.Dlb_tensor_shareable_kind(addr)
		return nil
	})
	return kind, err
}

// CUDAWaitReceived makes the work queued afterwards on consumerStream wait for the work the
// sender queued before SendCUDA (dlb_cuda_wait_received), without blocking the host: the
// cross-process counterpart of CUDAStreamHandshake, with its stream convention (CUDAStreamNone,
// 1, 2, -1, or a cudaStream_t of the tensor's device). t must be CUDA memory received from a
// channel, or a view or share of one; without an event from the sender nothing is done.
func (t *Tensor) CUDAWaitReceived(consumerStream int64) error {
	return t.use(func(addr int64) error {
		_, err := check(capi.Dlb_cuda_wait_received(addr, consumerStream))
		return err
	})
}

// channelHandle is a listener's or a channel's C handle: a handle (handle.go) with channel set.
// Close may come from any goroutine while another is blocked in Accept or Receive: it shuts the
// channel down (dlb_channel_shutdown wakes the blocked call, which then fails with
// ErrChannelClosed) and the handle is freed when the last call in progress returns, never under
// one.
type channelHandle struct{ handle }

// ErrChannelClosed is the error of a Listener or Channel used after Close (StatusClosed).
var ErrChannelClosed = &Error{Status: StatusClosed, Message: capi.DLB_CHANNEL_CLOSED_MESSAGE}

// Listener accepts connections from other processes on a Unix domain socket (dlb_channel_listen):
// the socket is created with mode 0600 in a folder only this user can enter (a folder others can
// enter, or another user's, is refused with ErrPermission). To serve another user, allow its uid
// (AllowUID) and widen the modes after Listen (for example folder 0711, socket 0666): the
// kernel's peer credentials still refuse every uid not allowed. Close removes the socket file.
// Safe for one goroutine at a time; Close from any goroutine, also one blocked in Accept (which
// then returns ErrChannelClosed).
type Listener struct{ h channelHandle }

// Channel is one end of a connection between two processes. Close it when done; tensors
// received stay valid. Send and Receive may not run concurrently on one Channel; Close may, from
// any goroutine: a blocked Receive then returns ErrChannelClosed.
type Channel struct{ h channelHandle }

// Listen listens at path (see Listener).
func Listen(path string) (*Listener, error) {
	addr, err := check(capi.Dlb_channel_listen(path))
	if err != nil {
		return nil, err
	}
	return newListener(addr), nil
}

// newListener owns addr for a new Listener, which a finalizer closes if nobody does. The
// finalizer is on the Listener, never run under a call: every call holds &l.h, a pointer into
// the Listener that keeps it reachable until the call returns. After Close it finds the handle
// closing and does nothing.
func newListener(addr int64) *Listener {
	l := &Listener{channelHandle{handle{channel: true, addr: addr}}}
	runtime.SetFinalizer(l, func(l *Listener) { l.h.close() })
	return l
}

// newChannel owns addr for a new Channel, closed by a finalizer as newListener's listener is.
func newChannel(addr int64) *Channel {
	c := &Channel{channelHandle{handle{channel: true, addr: addr}}}
	runtime.SetFinalizer(c, func(c *Channel) { c.h.close() })
	return c
}

// Accept waits for the next connection. A peer running as another user is refused with
// ErrPermission unless allowed with AllowUID; its connection is closed and the listener stays
// usable: call Accept again. With a time limit (SetTimeout), ErrTimeout when nobody connects in
// time (the listener stays usable). The new channel takes the listener's allowed uids and limit.
func (l *Listener) Accept() (*Channel, error) {
	var c *Channel
	err := l.h.use(func(addr int64) (err error) {
		c, err = channelOf(capi.Dlb_channel_accept(addr))
		return err
	})
	return c, err
}

// AllowUID accepts peers running as uid from now on (the caller's own uid always is).
func (l *Listener) AllowUID(uid uint32) error { return l.h.allowUID(uid) }

func (h *channelHandle) allowUID(uid uint32) error {
	return h.use(func(addr int64) error {
		_, err := check(capi.Dlb_channel_allow_uid(addr, uint(uid)))
		return err
	})
}

// Close stops listening and removes the socket file; a second Close does nothing.
func (l *Listener) Close() error {
	l.h.close()
	return nil
}

// Dial connects to a Listener at path; its process must run as this user (ErrPermission
// otherwise, before anything is sent or received). Nothing listening there: ErrNoListener.
func Dial(path string) (*Channel, error) {
	return channelOf(capi.Dlb_channel_connect(path))
}

// NoTimeout is the time limit of "no limit" (DLB_TIMEOUT_NONE, the default of every channel),
// for SetTimeout and DialWith. A limit of 0 means: do not wait. Other negative durations are
// refused (ErrInvalidArgument).
const NoTimeout time.Duration = -1

// UIDSelf is DialWith's listenerUID when the listener must run as this process's user, as with
// Dial (DLB_UID_SELF).
const UIDSelf uint32 = 0xFFFFFFFF

// DialWith is Dial accepting a listener that runs as listenerUID too (UIDSelf: this user only),
// with a time limit for the connection (NoTimeout: none) that the channel keeps for its Send and
// Receive calls (SetTimeout changes it). A connection waits only while the listener's queue of
// unaccepted peers is full. The listener's uid is the one the kernel recorded for the socket,
// so no listener can claim another user (dlb_channel_connect_with).
func DialWith(path string, listenerUID uint32, timeout time.Duration) (*Channel, error) {
	return channelOf(capi.Dlb_channel_connect_with(path, uint(listenerUID), int64(timeout)))
}

func channelOf(result int64) (*Channel, error) {
	addr, err := check(result)
	if err != nil {
		return nil, err
	}
	return newChannel(addr), nil
}

func (h *channelHandle) setTimeout(d time.Duration) error {
	return h.use(func(addr int64) error {
		_, err := check(capi.Dlb_channel_set_timeout(addr, int64(d)))
		return err
	})
}

// SetTimeout sets the limit of each later Accept (NoTimeout, the default: none; 0: do not
// wait); it passes on to the channels accepted afterwards. An Accept that runs out of time
// returns ErrTimeout and the listener stays usable.
func (l *Listener) SetTimeout(d time.Duration) error { return l.h.setTimeout(d) }

// SetTimeout sets the limit of each later Send and Receive (NoTimeout, the default: none; 0: do
// not wait). A call that runs out of time returns ErrTimeout. When nothing of a tensor had
// arrived or left, the channel stays usable; when the limit ran out in the middle of a tensor,
// the channel has lost its place in the stream and every later Send and Receive returns
// ErrProtocol: close it.
func (c *Channel) SetTimeout(d time.Duration) error { return c.h.setTimeout(d) }

// SendCUDA sends a CUDA tensor with stream order (dlb_channel_send_cuda): an interprocess event
// is recorded on stream (a cudaStream_t of t's device; nil: the legacy default stream) after the
// work queued on it so far, and the receiver's CUDAWaitReceived makes its stream wait for it.
// Keep t until the receiver has waited: the event belongs to its memory.
func (c *Channel) SendCUDA(t *Tensor, stream unsafe.Pointer) error { return c.sendCUDA(t, stream, 0) }

// SendCUDACopy is SendCUDA, first copying memory that is not shareable into shareable memory on
// its device, on stream, and waiting for the copy (DLB_SEND_COPY; no event then goes with it).
func (c *Channel) SendCUDACopy(t *Tensor, stream unsafe.Pointer) error {
	return c.sendCUDA(t, stream, uint(capi.DLB_SEND_COPY))
}

func (c *Channel) sendCUDA(t *Tensor, stream unsafe.Pointer, options uint) error {
	return c.h.use(func(addr int64) error {
		return t.use(func(tensor int64) error {
			_, err := check(capi.Dlb_channel_send_cuda(addr, tensor, int64(uintptr(stream)), options))
			return err
		})
	})
}

func (c *Channel) send(t *Tensor, options uint) error {
	return c.h.use(func(addr int64) error {
		return t.use(func(tensor int64) error {
			_, err := check(capi.Dlb_channel_send(addr, tensor, options))
			return err
		})
	})
}

// Send sends t without copying: its memory must be shareable. The peer sees writes made
// through t afterwards, and t sees the peer's. t stays the caller's.
func (c *Channel) Send(t *Tensor) error { return c.send(t, 0) }

// SendCopy sends t, first copying it into new shareable memory when it is not shareable
// (DLB_SEND_COPY): the peer's tensor then carries IS_COPIED and is its own.
func (c *Channel) SendCopy(t *Tensor) error { return c.send(t, uint(capi.DLB_SEND_COPY)) }

// SendKeepingLayout sends t on a remote channel with its layout (DLB_SEND_KEEP_LAYOUT): a
// strided tensor's covering span travels and the peer's tensor has t's strides, where Send packs
// it and the peer's is compact. A local channel shares the memory, so its peer always sees t's
// layout: there it is Send.
func (c *Channel) SendKeepingLayout(t *Tensor) error {
	return c.send(t, uint(capi.DLB_SEND_KEEP_LAYOUT))
}

// SendMore sends t as one of a stream that goes on at once (DLB_SEND_MORE): a remote channel may
// hold its bytes and send them with the next ones as one batch, which leave with the next plain
// Send (send a stream's last tensor with Send), when a batch fills, at the channel's next Receive
// or at its Close. A local channel ignores it: there it is Send. t is borrowed: a remote channel
// has copied its bytes when SendMore returns, so t may then be changed or closed.
func (c *Channel) SendMore(t *Tensor) error { return c.send(t, uint(capi.DLB_SEND_MORE)) }

// Receive waits for the next tensor from the peer; everything that arrives is checked before it
// is mapped. The caller owns the tensor (Close it).
func (c *Channel) Receive() (t *Tensor, err error) {
	err = c.h.use(func(addr int64) (err error) {
		t, err = fromResult(capi.Dlb_channel_receive(addr))
		return err
	})
	return t, err
}

// Allocate lends a compact row-major tensor from the channel's pool (dlb_channel_allocate): the
// fast way to send a stream of tensors (docs/ipc.md, "The pool"). Its memory is not zero-filled:
// fill it, then Send it on this channel. Its slot goes back to the pool once this process has
// closed it and the peer has closed what it received. Errors: the layout's (as Allocate), a
// tensor larger than the pool's limit (ErrLimit), ErrTimeout (the pool stayed full: the peer
// holds its tensors), ErrPeerClosed, ErrChannelClosed.
// Ownership: the caller owns the new tensor (Close it), also after the channel is closed; on
// error nothing is allocated.
func (c *Channel) Allocate(dt DType, shape ...int64) (t *Tensor, err error) {
	err = c.h.use(func(addr int64) (err error) {
		t, err = fromResult(capi.Dlb_channel_allocate(addr, CPU.packed(), dt.packed(),
			shapeArg(copyOf(shape)), nil, 0))
		return err
	})
	return t, err
}

// PoolDefaultLimit is the most memory a channel's pool keeps unless SetPoolLimit says otherwise.
var PoolDefaultLimit = capi.DLB_POOL_DEFAULT_LIMIT

// What PoolStats.HugePages reports (DLB_HUGE_PAGES_*).
const (
	HugePagesNone        = capi.DLB_HUGE_PAGES_NONE        // small pages only (or no segment of 2 MiB yet)
	HugePagesTransparent = capi.DLB_HUGE_PAGES_TRANSPARENT // transparent huge pages were asked for
	HugePagesHugeTLB     = capi.DLB_HUGE_PAGES_HUGETLB     // segments of reserved hugetlbfs pages
)

// PoolStats is the state of a channel's pool (dlb_pool_stats).
type PoolStats struct {
	Segments  uint64 // segments the pool keeps
	Bytes     uint64 // their size in all
	Limit     uint64 // the most it may keep (SetPoolLimit)
	Live      uint64 // tensors of this process over the pool's slots
	Lent      uint64 // sends the peer has not given back yet
	Returned  uint64 // sends the peer gave back since the channel opened
	Lost      uint64 // sends the peer could not take (out of file descriptors or mappings)
	HugePages int    // one of the HugePages* constants: what the large segments got
}

// SetPoolLimit sets the most memory the channel's pool may keep, in bytes (PoolDefaultLimit at
// first). Lowering it frees nothing, but no segment is added until the pool is below it.
// 0 is refused (ErrInvalidArgument).
func (c *Channel) SetPoolLimit(bytes uint64) error {
	return c.h.use(func(addr int64) error {
		_, err := check(capi.Dlb_channel_set_pool_limit(addr, bytes))
		return err
	})
}

// PoolStats returns the state of the channel's pool, after taking back what the peer gave back:
// Lent is what the peer still holds, Returned the sends it acknowledged.
func (c *Channel) PoolStats() (PoolStats, error) {
	values := make([]int64, capi.DLBX_POOL_STATS_FIELDS)
	err := c.h.use(func(addr int64) error {
		_, err := check(capi.Dlbx_channel_pool_stats(addr, values))
		return err
	})
	if err != nil {
		return PoolStats{}, err
	}
	return PoolStats{
		Segments:  uint64(values[capi.DLBX_POOL_STATS_SEGMENTS]),
		Bytes:     uint64(values[capi.DLBX_POOL_STATS_BYTES]),
		Limit:     uint64(values[capi.DLBX_POOL_STATS_LIMIT]),
		Live:      uint64(values[capi.DLBX_POOL_STATS_LIVE]),
		Lent:      uint64(values[capi.DLBX_POOL_STATS_LENT]),
		Returned:  uint64(values[capi.DLBX_POOL_STATS_RETURNED]),
		Lost:      uint64(values[capi.DLBX_POOL_STATS_LOST]),
		HugePages: int(values[capi.DLBX_POOL_STATS_HUGE_PAGES]),
	}, nil
}

// Peer returns the peer's process id and user id, as the kernel reported them at connection.
func (c *Channel) Peer() (pid int32, uid uint32, err error) {
	pids, uids := make([]int32, 1), make([]int32, 1)
	err = c.h.use(func(addr int64) error {
		_, err := check(capi.Dlb_channel_peer(addr, pids, uids))
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return pids[0], uint32(uids[0]), nil
}

// AllowUID accepts a peer running as uid too, for the tensors received from now on. A dialed
// channel's listener was checked when it connected: to reach a listener of another user, name
// its uid to DialWith.
func (c *Channel) AllowUID(uid uint32) error { return c.h.allowUID(uid) }

// Close closes the connection; a second Close does nothing.
func (c *Channel) Close() error {
	c.h.close()
	return nil
}
