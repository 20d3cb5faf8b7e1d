package dlbridge_test

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
	"github.com/dlbridge/dlbridge/bindings/go/internal/ctest"
)

// A release on another thread is queued by the shared engine and run by this package's next
// free, wrap or collection, or by RunReleases; a release on the thread of a Close runs in it.
func TestReleasesQueuedByOtherThreads(t *testing.T) {
	leakCheck(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection drains behind the test's back
	var released int32
	wrap := func() *dlbridge.Tensor {
		buf := ctest.Malloc(16)
		return get(dlbridge.Wrap(buf, 16, dlbridge.CPU, dlbridge.Float32, []int64{4}, nil, 0, 0, func() {
			atomic.AddInt32(&released, 1)
			ctest.Free(buf)
		}))(t)
	}
	// Close on this goroutine: the release comes back from the free and runs in Close.
	mustClose(t, wrap())
	if got := atomic.LoadInt32(&released); got != 1 {
		t.Fatalf("%d releases after Close", got)
	}
	// A C consumer frees on a thread of its own: queued until RunReleases.
	p := get(wrap().ExportVersioned())(t)
	ctest.ConsumeVersionedOnThread(p)
	if got := atomic.LoadInt32(&released); got != 1 {
		t.Fatalf("%d releases before anything drained", got)
	}
	if n := dlbridge.RunReleases(); n != 1 {
		t.Fatalf("RunReleases ran %d", n)
	}
	if got, n := atomic.LoadInt32(&released), dlbridge.RunReleases(); got != 2 || n != 0 {
		t.Fatalf("%d releases, then RunReleases ran %d more", got, n)
	}
	// The next Close of any tensor drains too, and so does the next Wrap.
	ctest.ConsumeVersionedOnThread(get(wrap().ExportVersioned())(t))
	other := get(dlbridge.FromSlice([]float32{1}))(t)
	other2 := wrap()
	if got := atomic.LoadInt32(&released); got != 3 {
		t.Fatalf("%d releases: Wrap did not drain", got)
	}
	ctest.ConsumeVersionedOnThread(get(other2.ExportVersioned())(t))
	mustClose(t, other)
	if got := atomic.LoadInt32(&released); got != 4 {
		t.Fatalf("%d releases: Close did not drain", got)
	}
	// A collection drains too.
	ctest.ConsumeVersionedOnThread(get(wrap().ExportVersioned())(t))
	for i := 0; i < 1000 && atomic.LoadInt32(&released) != 5; i++ {
		runtime.GC()
		time.Sleep(time.Millisecond) // the finalizer goroutine drains
	}
	if got := atomic.LoadInt32(&released); got != 5 {
		t.Fatalf("%d releases: a collection did not drain", got)
	}
}

// More queued releases than one drain takes at a time all run, each once.
func TestManyQueuedReleases(t *testing.T) {
	leakCheck(t)
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const n = 150
	var released int32
	buf := ctest.Malloc(4)
	defer ctest.Free(buf)
	exported := make([]unsafe.Pointer, n)
	for i := range exported { // every Wrap drains first: all of them before any consumer frees
		x := get(dlbridge.Wrap(buf, 4, dlbridge.CPU, dlbridge.Float32, []int64{1}, nil, 0, 0, func() {
			atomic.AddInt32(&released, 1)
		}))(t)
		exported[i] = get(x.ExportVersioned())(t)
	}
	for _, p := range exported {
		ctest.ConsumeVersionedOnThread(p)
	}
	if got := atomic.LoadInt32(&released); got != 0 {
		t.Fatalf("%d releases ran before a drain", got)
	}
	if ran := dlbridge.RunReleases(); ran != n || atomic.LoadInt32(&released) != n {
		t.Fatalf("RunReleases ran %d, %d releases", ran, atomic.LoadInt32(&released))
	}
}
