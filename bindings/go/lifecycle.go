package dlbridge

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// Tensor owns one reference to a DLPack tensor made by the dlbridge core (a
// DLManagedTensorVersioned in C memory). Close releases it; a finalizer releases tensors that
// are never closed, but only when the garbage collector gets to them (and to the tensors made
// just before and after them, which share one finalizer), so close what you create.
//
// Every method may be called from any goroutine; Close may race with other methods (they then
// return ErrClosed). Slices returned by Data, Float32s and friends alias the tensor's C memory
// and are valid only until the tensor (and every view or share of the same memory) is closed;
// they do not keep the Tensor reachable (see Data for where runtime.KeepAlive is needed).
type Tensor struct {
	state atomic.Uint32 // calls in flight and the state bits below
	addr  int64         // the DLManagedTensorVersioned*, 0 once released or moved out
}

// A Tensor's state word. Calls into the core count themselves in the low bits for as long as
// they use the address, so that Close never frees memory a call is using. Every transition is
// one atomic operation on this word; the common ones (a call, a Close with no call in flight,
// an export) are one each, which a sync.RWMutex takes two to four of.
const (
	callsMask = 1<<29 - 1
	// stateClosing: Close was called or the tensor was exported; calls that start now return
	// ErrClosed, and whoever leaves the tensor with no call in flight releases it.
	stateClosing = 1 << 29
	// stateExclusive: an export holds the tensor for one core call (taken only when no call is
	// in flight, and never held while waiting for anything); calls and Close wait for it.
	stateExclusive = 1 << 30
	// stateReleased: the address was freed or moved out, by exactly one goroutine.
	stateReleased = 1 << 31
)

// enter counts a call in; false when the tensor is closed (nothing counted then).
func (t *Tensor) enter() bool {
	for {
		s := t.state.Add(1)
		if s&(stateClosing|stateExclusive) == 0 {
			return true
		}
		// Undo through leave: when a Close came in since, with this count as its only call in
		// flight, the release is now ours.
		t.leave()
		if s&stateClosing != 0 {
			return false
		}
		waitWhile(&t.state, stateExclusive)
	}
}

// leave counts a call out; the last one out of a closed tensor releases it.
func (t *Tensor) leave() {
	if t.state.Add(^uint32(0)) == stateClosing {
		t.release()
	}
}

// release frees the address of a closed tensor with no call in flight; of all the goroutines
// that may try (Close, the last call to leave), exactly one succeeds.
func (t *Tensor) release() {
	if t.state.CompareAndSwap(stateClosing, stateClosing|stateReleased) {
		freeTensor(t.take())
	}
}

// freeTensor frees one reference to a C tensor and runs the release functions of the wrapped
// memory it released. A release comes back here as dlbx_tensor_free's result when it happens
// on this thread (the usual case); a release on another thread (a consumer that frees an
// exported tensor, a view freed elsewhere) is queued by the shared engine and run by the next
// drain: at the end of every free, at every Wrap, at every garbage collection, or RunReleases.
// While no wrap with a release function is outstanding nothing can be released: the free is
// the plain one.
func freeTensor(addr int64) {
	if releases.outstanding.Load() != 0 {
		freeReleasing(addr)
		return
	}
	capi.Dlb_tensor_free(addr)
}

// freeReleasing is freeTensor while wraps with release functions are outstanding.
func freeReleasing(addr int64) {
	if token := capi.Dlbx_tensor_free(addr); token != 0 {
		releases.take(token)()
	}
	drainReleases()
}

// releasesQueued is the engine's count of queued tokens (dlbx_release_queued: an int64 of C
// memory that lives as long as the process): a load tells whether to drain, without a call.
var releasesQueued = (*int64)(addrToPtr(capi.Dlbx_release_queued()))

// drainReleases runs the release functions of the tokens the engine queued, if any (a load when
// there are none: small enough to be inlined where it is called).
func drainReleases() int {
	if atomic.LoadInt64(releasesQueued) == 0 {
		return 0
	}
	return runQueuedReleases()
}

// runQueuedReleases takes the queued tokens in batches and runs their release functions.
func runQueuedReleases() int {
	ran := 0
	tokens := make([]int64, 64)
	for {
		n := capi.Dlbx_release_drain(tokens)
		for _, token := range tokens[:n] {
			releases.take(token)()
		}
		ran += n
		if n < len(tokens) {
			return ran
		}
	}
}

// RunReleases runs now the release functions (see Wrap) of memory that other threads
// released, and returns how many ran. A release on the thread of a Close runs in that Close; one
// on another thread (a C consumer that calls the deleter of an exported tensor on a thread of
// its own) is queued until this package next frees a tensor, wraps memory, or collects garbage.
// Call RunReleases where a release must have run by a given point (after a consumer reports it
// is done with an exported tensor).
func RunReleases() int { return drainReleases() }

// take moves the address out (the caller made itself the only one who may): the Tensor reads
// as closed, and its batch's finalizer has nothing left to free for it.
func (t *Tensor) take() int64 {
	addr := t.addr
	t.addr = 0
	return addr
}

// use runs f with the tensor's address, counted as a call in flight (Close leaves the release
// to the last call to end).
func (t *Tensor) use(f func(addr int64) error) error {
	if !t.enter() {
		return ErrClosed
	}
	err := f(t.addr)
	t.leave()
	runtime.KeepAlive(t)
	return err
}

// Close releases the tensor's reference (the memory goes when its last view or share is closed
// too). It is idempotent: closing a closed tensor returns nil. A call on the tensor that is
// still running in another goroutine keeps the memory until it returns; the release then
// happens there.
func (t *Tensor) Close() error {
	if t.state.CompareAndSwap(0, stateClosing|stateReleased) { // no call in flight: free here
		freeTensor(t.take())
		return nil
	}
	for {
		s := t.state.Load()
		if s&stateClosing != 0 {
			return nil
		}
		if s&stateExclusive != 0 {
			// An export may fail and leave the tensor open: wait to see.
			waitWhile(&t.state, stateExclusive)
			continue
		}
		if t.state.CompareAndSwap(s, s|stateClosing) {
			t.release() // fails while calls are in flight: the last of them releases
			return nil
		}
	}
}

// Closed reports whether Close was called (or the tensor was exported).
func (t *Tensor) Closed() bool {
	return t.state.Load()&stateClosing != 0
}

// claimExclusive gives the caller the tensor alone for one core call (an export): it waits for
// the calls in flight to end and an export in progress to finish. ok is false when the tensor
// is closed. End it with endExclusive.
func (t *Tensor) claimExclusive() (addr int64, ok bool) {
	for !t.state.CompareAndSwap(0, stateExclusive) {
		s := t.state.Load()
		if s&stateClosing != 0 {
			return 0, false
		}
		// Calls in flight or another export: wait for the word to come back to 0. The holder
		// of stateExclusive never waits for anything, so this cannot deadlock.
		waitWhile(&t.state, callsMask|stateExclusive)
	}
	return t.addr, true
}

// endExclusive ends claimExclusive: moved says the address was handed over (the Tensor reads as
// closed, with nothing to release), else the tensor is open as before. Calls that tried to
// start meanwhile may still be counted in the word, so the bits change by one addition.
func (t *Tensor) endExclusive(moved bool) {
	if moved {
		t.take()
		t.state.Add(stateClosing | stateReleased - stateExclusive)
	} else {
		t.state.Add(^uint32(stateExclusive - 1)) // minus stateExclusive
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

// newTensor returns a Tensor that owns addr. Tensors come in batches that share one finalizer:
// runtime.SetFinalizer on every Tensor (and clearing it again on Close) cost more than the rest
// of a short-lived tensor's Go side, while a batch pays for it once per tensorBatchSize tensors.
// The batch's finalizer runs when no Tensor of the batch is reachable any more, and frees those
// of them that were never closed. The batch being filled is shared by every goroutine (a slot
// costs one atomic addition) and forgotten at each garbage collection, so that a batch that
// stops being filled is finalized like any other.
func newTensor(addr int64) *Tensor {
	for {
		b := fillingBatch.Load()
		if b != nil {
			if slot := b.claimed.Add(1) - 1; slot < tensorBatchSize {
				t := &b.tensors[slot]
				t.addr = addr
				return t
			}
		}
		next := new(tensorBatch)
		if fillingBatch.CompareAndSwap(b, next) {
			runtime.SetFinalizer(next, (*tensorBatch).finalize)
			forgetFillingBatchAtGC.Do(forgetFillingBatchAtEachGC)
		}
	}
}

// tensorBatchSize trades the finalizer's cost per tensor (setting it ~60 ns, running it ~400 ns,
// shared by the batch) against how long a leaked tensor may wait for the other tensors of its
// batch to become unreachable, and the Go memory a live tensor keeps (its batch's 2 KiB).
const tensorBatchSize = 128

// tensorBatch holds the Tensors of one batch (no Go pointers: the collector does not scan it).
// A Tensor is a pointer into tensors, which keeps the whole batch alive. Slots are never
// reused, so a closed Tensor stays closed.
type tensorBatch struct {
	claimed atomic.Int32 // slots handed out, and past tensorBatchSize the tries of a full batch
	tensors [tensorBatchSize]Tensor
}

// fillingBatch is the batch new Tensors are taken from (nil: none yet, or forgotten at a GC).
var fillingBatch atomic.Pointer[tensorBatch]

// finalize frees the tensors of the batch that were never closed (nothing else can reach them).
func (b *tensorBatch) finalize() {
	used := int(b.claimed.Load())
	if used > tensorBatchSize {
		used = tensorBatchSize
	}
	for i := range b.tensors[:used] {
		if addr := b.tensors[i].addr; addr != 0 {
			freeTensor(addr)
		}
	}
}

var forgetFillingBatchAtGC sync.Once

// forgetFillingBatchAtEachGC drops fillingBatch after every garbage collection, through an
// object that is unreachable from birth and whose finalizer re-arms itself (16 bytes: the
// collector may never finalize smaller pointer-free objects, which share tiny blocks). It also
// drains the releases other threads queued: a program that stops closing tensors still runs
// them, at its next collection (at most two minutes apart: Go forces one).
func forgetFillingBatchAtEachGC() {
	runtime.SetFinalizer(&[16]byte{}, func(*[16]byte) {
		fillingBatch.Store(nil)
		drainReleases()
		forgetFillingBatchAtEachGC()
	})
}

// fromResult wraps a wrapper's result that is a new tensor.
func fromResult(result int64) (*Tensor, error) {
	addr, err := check(result)
	if err != nil {
		return nil, err
	}
	return newTensor(addr), nil
}
