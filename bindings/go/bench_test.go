package dlbridge_test

import (
	"fmt"
	"math"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	dlbridge "github.com/dlbridge/dlbridge/bindings/go"
	"github.com/dlbridge/dlbridge/bindings/go/internal/ctest"
)

// The benchmark compares each Go cycle with the same cycle written in C (a loop in
// internal/ctest), measured in the same run with the same iteration count, and with one bare
// cgo call (an empty C function). The target: Go ns <= 2 x C ns + (native calls) x cgo ns.
// TestMain prints the table after the benchmarks; `meson test --benchmark --suite go` runs it.

type benchRow struct {
	name             string
	goNs, cNs, cgoNs float64
	nativeCalls      int
}

var (
	benchMu   sync.Mutex
	benchRows = map[string]benchRow{}
)

// bareCgoNs times n calls of an empty C function.
func bareCgoNs(n int) float64 {
	start := time.Now()
	for i := 0; i < n; i++ {
		ctest.Empty()
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// benchCycle times b.N cycles in Go, in C and of bare cgo calls, interleaved in five rounds,
// and keeps each one's fastest round: on a shared machine the other processes' noise only ever
// adds time, and interleaving exposes all three columns to the same conditions.
func benchCycle(b *testing.B, name string, nativeCalls int, cLoop func(int64) float64, cycle func(b *testing.B)) {
	const rounds = 5
	n := b.N / rounds
	if n < 1 {
		n = 1
	}
	goNs, cNs, cgoNs := math.Inf(1), math.Inf(1), math.Inf(1)
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		// ns/op counts the Go cycles only (their mean); the columns keep the fastest rounds.
		b.StopTimer()
		cNs = math.Min(cNs, cLoop(int64(n)))
		cgoNs = math.Min(cgoNs, bareCgoNs(n))
		b.StartTimer()
		start := time.Now()
		for i := 0; i < n; i++ {
			cycle(b)
		}
		goNs = math.Min(goNs, float64(time.Since(start).Nanoseconds())/float64(n))
	}
	b.StopTimer()
	b.ReportMetric(goNs, "Go-ns/cycle")
	b.ReportMetric(cNs, "C-ns/cycle")
	b.ReportMetric(goNs/cNs, "x-C")
	benchMu.Lock()
	benchRows[name] = benchRow{name, goNs, cNs, cgoNs, nativeCalls}
	benchMu.Unlock()
}

func BenchmarkBareCgoCall(b *testing.B) {
	for i := 0; i < b.N; i++ {
		ctest.Empty()
	}
}

func BenchmarkAllocateClose(b *testing.B) {
	benchCycle(b, "allocate + close", 2, ctest.BenchAllocateFree, func(b *testing.B) {
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
	benchCycle(b, "wrap + close", 2, ctest.BenchWrapFree, func(b *testing.B) {
		t, err := dlbridge.Wrap(buf, dlbridge.CPU, dlbridge.Float32, shape, nil, 0, 0, nil)
		if err != nil {
			b.Fatal(err)
		}
		t.Close()
	})
}

func BenchmarkExportImportVersioned(b *testing.B) {
	benchCycle(b, "allocate + export + import + close (versioned)", 3, ctest.BenchExportImportVersioned,
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
	benchCycle(b, "allocate + export + import + close (legacy)", 4, ctest.BenchExportImportLegacy,
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
		fmt.Println("| cycle | Go ns | C ns | Go/C | bare cgo ns | native calls | target ns (2 x C + calls x cgo) | within |")
		fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|")
		for _, r := range rows {
			target := 2*r.cNs + float64(r.nativeCalls)*r.cgoNs
			within := "yes"
			if r.goNs > target {
				within = "no"
			}
			fmt.Printf("| %s | %.1f | %.1f | %.2f | %.1f | %d | %.1f | %s |\n",
				r.name, r.goNs, r.cNs, r.goNs/r.cNs, r.cgoNs, r.nativeCalls, target, within)
		}
	}
	os.Exit(code)
}
