package dlbridge

import (
	"sync"
	"sync/atomic"

	"github.com/dlbridge/dlbridge/bindings/go/internal/capi"
)

// The release functions of wrapped memory (see Wrap): the table that keeps them until the core
// releases the memory, and the code that runs them when their tokens come back.

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

// releases holds the release functions of wrapped memory until the core releases it. A token
// (the one SWIG's dlbx_tensor_wrap gives the core, which hands it to the shared release engine,
// generators/swig/native/dlbx_release.h) is a slot's index plus one; 0 means "nothing to
// release". A mutex and a free list cost a few nanoseconds where runtime/cgo.Handle's sync.Map
// costs hundreds per new-and-delete.
var releases releaseTable

type releaseTable struct {
	mu    sync.Mutex
	funcs []func()
	free  []int64
	// outstanding counts the tokens added and not yet taken: while it is 0 no free can release
	// wrapped memory with a release function, and frees skip the engine (freeTensor).
	outstanding atomic.Int64
}

// add keeps f until take(token) and returns its token (never 0).
func (r *releaseTable) add(f func()) int64 {
	r.mu.Lock()
	var token int64
	if n := len(r.free); n > 0 {
		token = r.free[n-1]
		r.free = r.free[:n-1]
		r.funcs[token-1] = f
	} else {
		r.funcs = append(r.funcs, f)
		token = int64(len(r.funcs))
	}
	r.outstanding.Add(1)
	r.mu.Unlock()
	return token
}

// take returns the function of token and frees its slot.
func (r *releaseTable) take(token int64) func() {
	r.mu.Lock()
	f := r.funcs[token-1]
	r.funcs[token-1] = nil
	r.free = append(r.free, token)
	r.outstanding.Add(-1)
	r.mu.Unlock()
	return f
}
