package dlbridge

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// handle owns one C address for a Tensor, a Listener or a Channel, and implements the ownership
// protocol of docs/architecture.md (open, in a call, closing, released, moved by export) over
// one atomic word: calls into the core count themselves in the low bits for as long as they
// use the address, so that a close never frees memory a call is using. The common transitions
// (a call, a close with no call in flight, an export) are one atomic operation each, which a
// sync.RWMutex takes two to four of.
type handle struct {
	state   atomic.Uint32 // calls in flight and the state bits below
	channel bool          // the address is a dlb_channel* (else a DLManagedTensorVersioned*)
	addr    int64         // 0 once released or moved out
}

const (
	callsMask = 1<<29 - 1
	// stateClosing: closed (or exported); calls that start now fail, and whoever leaves the
	// handle with no call in flight releases it.
	stateClosing = 1 << 29
	// stateExclusive: an export holds the tensor for one core call (taken only when no call is
	// in flight, and never held while waiting for anything); calls and close wait for it.
	stateExclusive = 1 << 30
	// stateReleased: the address was freed or moved out, by exactly one goroutine.
	stateReleased = 1 << 31
)

// enter counts a call in; false when the handle is closed (nothing counted then).
func (h *handle) enter() bool {
	for {
		s := h.state.Add(1)
		if s&(stateClosing|stateExclusive) == 0 {
			return true
		}
		// Undo through leave: when a close came in since, with this count as its only call in
		// flight, the release is now ours.
		h.leave()
		if s&stateClosing != 0 {
			return false
		}
		waitWhile(&h.state, stateExclusive)
	}
}

// leave counts a call out; the last one out of a closed handle releases it.
func (h *handle) leave() {
	if h.state.Add(^uint32(0)) == stateClosing {
		h.release()
	}
}

// release frees the address of a closed handle with no call in flight; of all the goroutines
// that may try (the closer, the last call to leave), exactly one succeeds. Never inlined: leave,
// on every call's path, stays small enough to be inlined itself.
//
//go:noinline
func (h *handle) release() {
	if h.state.CompareAndSwap(stateClosing, stateClosing|stateReleased) {
		h.free()
	}
}

// free frees the address (the caller made itself the only one who may).
func (h *handle) free() {
	if h.channel {
		capi.Dlb_channel_close(h.take())
	} else {
		freeTensor(h.take())
	}
}

// take moves the address out: the owner reads as closed, and a finalizer finds nothing to free.
func (h *handle) take() int64 {
	addr := h.addr
	h.addr = 0
	return addr
}

// close closes the handle; idempotent. With no call in flight it frees at once. Otherwise the
// closer counts itself in as one more call, so that the address stays valid while it wakes the
// calls blocked in a channel (dlb_channel_shutdown; they then fail), and the last call to leave
// frees. A tensor call is never woken: it runs to its end.
func (h *handle) close() {
	if h.state.CompareAndSwap(0, stateClosing|stateReleased) {
		h.free()
		return
	}
	for {
		s := h.state.Load()
		if s&stateClosing != 0 {
			return
		}
		if s&stateExclusive != 0 {
			// An export may fail and leave the tensor open: wait to see.
			waitWhile(&h.state, stateExclusive)
			continue
		}
		if h.state.CompareAndSwap(s, (s+1)|stateClosing) {
			if h.channel {
				capi.Dlb_channel_shutdown(h.addr)
			}
			h.leave()
			return
		}
	}
}

// use runs f with the address, counted as a call in flight (a close meanwhile leaves the free to
// the last call to end). Once closed: ErrClosed, or ErrChannelClosed for a channel.
func (h *handle) use(f func(addr int64) error) error {
	if !h.enter() {
		if h.channel {
			return ErrChannelClosed
		}
		return ErrClosed
	}
	err := f(h.addr)
	h.leave()
	return err
}

// claimExclusive gives the caller the handle alone for one core call (an export): it waits for
// the calls in flight to end and an export in progress to finish. ok is false when the handle
// is closed. End it with endExclusive.
func (h *handle) claimExclusive() (addr int64, ok bool) {
	for !h.state.CompareAndSwap(0, stateExclusive) {
		if h.state.Load()&stateClosing != 0 {
			return 0, false
		}
		// Calls in flight or another export: wait for the word to come back to 0. The holder
		// of stateExclusive never waits for anything, so this cannot deadlock.
		waitWhile(&h.state, callsMask|stateExclusive)
	}
	return h.addr, true
}

// endExclusive ends claimExclusive: moved says the address was handed over (the handle reads as
// closed, with nothing to release), else it is open as before. Calls that tried to start
// meanwhile may still be counted in the word, so the bits change by one addition.
func (h *handle) endExclusive(moved bool) {
	if moved {
		h.take()
		h.state.Add(stateClosing | stateReleased - stateExclusive)
	} else {
		h.state.Add(^uint32(stateExclusive - 1)) // minus stateExclusive
	}
}

// waitWhile waits until none of the bits is set in *word. The states waited on last one core
// call (an export), or a few calls in flight: yield first, then sleep a little longer each time.
func waitWhile(word *atomic.Uint32, bits uint32) {
	for i := 0; word.Load()&bits != 0; i++ {
		if i < 16 {
			runtime.Gosched()
		} else {
			time.Sleep(time.Duration(i-15) * time.Microsecond)
		}
	}
}
