package dlbridge

import (
	"runtime"
	"sync"
	"sync/atomic"
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
type Tensor struct{ handle }

// Close releases the tensor's reference (the memory goes when its last view or share is closed
// too). It is idempotent: closing a closed tensor returns nil. A call on the tensor that is
// still running in another goroutine keeps the memory until it returns; the release then
// happens there.
func (t *Tensor) Close() error {
	t.close()
	return nil
}

// Closed reports whether Close was called (or the tensor was exported).
func (t *Tensor) Closed() bool { return t.state.Load()&stateClosing != 0 }

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
