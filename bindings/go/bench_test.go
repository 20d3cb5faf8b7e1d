package dlbridge_test

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
	"github.com/dlbridge/dlbridge/bindings/go/internal/ctest"
)

// The benchmark times each Go cycle next to the same cycle written in C (a loop in
// internal/ctest) and the cycle's floor, all in the same run with the same iteration count.
// The floor is what Go cannot do without: one bare cgo call (an empty C function) per native
// call of the cycle, one Tensor object per tensor it makes (a slot of a finalizer batch), and for
// a wrap with a release function the token that names the Go function to C. The binding's own
// overhead is what is left of the Go time after the floor and the C work: Go - floor - C.
// The target: overhead <= C. TestMain prints the table after the benchmarks;
// `meson test --benchmark --suite go` runs them.

type benchRow struct {
	name                     string
	goNs, cNs, floorNs       float64
	calls, tensors, releases int
}

var (
	benchMu   sync.Mutex
	benchRows = map[string]benchRow{}
)

// timeNs is the mean nanoseconds of one of n calls of f.
func timeNs(n int, f func()) float64 {
	start := time.Now()
	for i := 0; i < n; i++ {
		f()
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

func noRelease() {}

func max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// benchCycle times b.N cycles in Go, in C and of the floor's pieces, interleaved in five rounds,
// and keeps each one's fastest round: on a shared machine the other processes' noise only ever
// adds time, and interleaving exposes every column to the same conditions.
func benchCycle(b *testing.B, name string, calls, tensors, releases int, cLoop func(int64) float64,
	cycle func(b *testing.B)) {
	const rounds = 5
	n := max(b.N/rounds, 1)
	goNs, cNs := math.Inf(1), math.Inf(1)
	cgoNs, tensorNs, releaseNs := math.Inf(1), math.Inf(1), math.Inf(1)
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		// ns/op counts the Go cycles only (their mean); the columns keep the fastest rounds.
		b.StopTimer()
		cNs = math.Min(cNs, cLoop(int64(n)))
		cgoNs = math.Min(cgoNs, timeNs(n, ctest.Empty))
		tensorNs = math.Min(tensorNs, timeNs(n, dlbridge.FloorTensorObject))
		if releases > 0 {
			releaseNs = math.Min(releaseNs, timeNs(n, func() { dlbridge.FloorReleaseToken(noRelease) }))
		}
		// The floor's Tensor objects are garbage now: collected here, not during the Go cycles.
		runtime.GC()
		b.StartTimer()
		start := time.Now()
		for i := 0; i < n; i++ {
			cycle(b)
		}
		goNs = math.Min(goNs, float64(time.Since(start).Nanoseconds())/float64(n))
	}
	b.StopTimer()
	floor := float64(calls)*cgoNs + float64(tensors)*tensorNs
	if releases > 0 {
		floor += float64(releases) * releaseNs
	}
	b.ReportMetric(goNs, "Go-ns/cycle")
	b.ReportMetric(cNs, "C-ns/cycle")
	b.ReportMetric(floor, "floor-ns/cycle")
	benchMu.Lock()
	benchRows[name] = benchRow{name, goNs, cNs, floor, calls, tensors, releases}
	benchMu.Unlock()
}

func BenchmarkBareCgoCall(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ctest.Empty()
	}
}

func BenchmarkAllocateClose(b *testing.B) {
	benchCycle(b, "allocate + close", 2, 1, 0, ctest.BenchAllocateFree, func(b *testing.B) {
		t, err := dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, 4, 4)
		if err != nil {
			b.Fatal(err)
		}
		t.Close()
	})
}

func BenchmarkWrapClose(b *testing.B) {
	buf := ctest.Malloc(64)
	defer ctest.Free(buf)
	shape := []int64{4, 4}
	benchCycle(b, "wrap + close", 2, 1, 0, ctest.BenchWrapFree, func(b *testing.B) {
		t, err := dlbridge.Wrap(buf, 64, dlbridge.CPU, dlbridge.Float32, shape, nil, 0, 0, nil)
		if err != nil {
			b.Fatal(err)
		}
		t.Close()
	})
}

func BenchmarkWrapReleaseClose(b *testing.B) {
	buf := ctest.Malloc(64)
	defer ctest.Free(buf)
	shape := []int64{4, 4}
	released := 0
	release := func() { released++ }
	benchCycle(b, "wrap + close (with release)", 2, 1, 1, ctest.BenchWrapReleaseFree, func(b *testing.B) {
		t, err := dlbridge.Wrap(buf, 64, dlbridge.CPU, dlbridge.Float32, shape, nil, 0, 0, release)
		if err != nil {
			b.Fatal(err)
		}
		t.Close()
	})
	if cycles := 5 * max(b.N/5, 1); released != cycles {
		b.Fatalf("%d releases for %d cycles", released, cycles)
	}
}

func BenchmarkExportImportVersioned(b *testing.B) {
	benchCycle(b, "allocate + export + import + close (versioned)", 3, 2, 0, ctest.BenchExportImportVersioned,
		func(b *testing.B) {
			t, err := dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, 4, 4)
			if err != nil {
				b.Fatal(err)
			}
			p, _ := t.ExportVersioned()
			back, err := dlbridge.ImportVersioned(p)
			if err != nil {
				b.Fatal(err)
			}
			back.Close()
		})
}

func BenchmarkExportImportLegacy(b *testing.B) {
	benchCycle(b, "allocate + export + import + close (legacy)", 4, 2, 0, ctest.BenchExportImportLegacy,
		func(b *testing.B) {
			t, err := dlbridge.Allocate(dlbridge.CPU, dlbridge.Float32, 4, 4)
			if err != nil {
				b.Fatal(err)
			}
			p, err := t.ExportLegacy()
			if err != nil {
				b.Fatal(err)
			}
			back, err := dlbridge.ImportLegacy(p)
			if err != nil {
				b.Fatal(err)
			}
			back.Close()
		})
}

// TestMain runs the tests (and benchmarks), then checks that no tensor made by the core is left
// alive (after giving finalizers their chance), then prints the benchmark table, if any.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && !waitLive(0) {
		fmt.Printf("FAIL: %d tensors are still alive after every test\n", dlbridge.LiveCount())
		code = 1
	}
	if len(benchRows) > 0 {
		rows := make([]benchRow, 0, len(benchRows))
		for _, r := range benchRows {
			rows = append(rows, r)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
		fmt.Println()
		fmt.Println("| cycle | Go ns | C ns | floor ns (calls, tensors, release tokens) | Go - floor ns | overhead ns (Go - floor - C) | within (overhead <= C) |")
		fmt.Println("|---|---:|---:|---:|---:|---:|---|")
		for _, r := range rows {
			overhead := r.goNs - r.floorNs - r.cNs
			within := "yes"
			if overhead > r.cNs {
				within = "no"
			}
			fmt.Printf("| %s | %.1f | %.1f | %.1f (%d, %d, %d) | %.1f | %.1f | %s |\n", r.name, r.goNs, r.cNs,
				r.floorNs, r.calls, r.tensors, r.releases, r.goNs-r.floorNs, overhead, within)
		}
	}
	os.Exit(code)
}
