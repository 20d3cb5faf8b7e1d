// Bench.cs - ns per cycle of the C# binding next to the same cycle in C, measured in the same
// process and run (bench/bench_helpers.c, linked against the same static core), plus one bare
// P/Invoke call. The budget of a C# cycle is 2x its C cycle plus one bare P/Invoke per native
// call the C# cycle makes. No pass/fail: a plain table.
//
//   meson test -C build --benchmark --suite csharp
//   MONO_THREADS_SUSPEND=preemptive mono build/bindings/csharp/DLBridge.Bench.exe
using System;
using System.Diagnostics;
using System.Runtime.InteropServices;
using DLBridge;

// A SafeHandle of the same shape as DLBridge's TensorHandle, releasing nothing.
sealed class Floor : SafeHandle {
  public Floor() : base(IntPtr.Zero, true) { SetHandle(new IntPtr(1)); }
  public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
  protected override bool ReleaseHandle() { return true; }
}

static class Bench {
  const string Lib = "dlbridge_cs_bench_helpers";
  // bench/binding_cycles.c, the C column every binding's bench shares (no error buffer: a
  // failure shows as its status).
  [DllImport(Lib, EntryPoint = "bench_cycle_wrap_free")] static extern int cs_bench_wrap_free(int n, IntPtr error);
  [DllImport(Lib, EntryPoint = "bench_cycle_allocate_free")] static extern int cs_bench_allocate_free(int n, IntPtr error);
  [DllImport(Lib, EntryPoint = "bench_cycle_wrap_export_import_free")] static extern int cs_bench_wrap_export_import_free(int n, IntPtr error);
  [DllImport(Lib, EntryPoint = "bench_cycle_wrap_legacy_free")] static extern int cs_bench_wrap_legacy_free(int n, IntPtr error);
  [DllImport(Lib, EntryPoint = "bench_cycle_noop")] static extern void cs_bench_noop();

  const int N = 200000;
  static readonly float[] data = new float[256];
  static readonly long[] shape = { 16, 16 };

  delegate void Cycle(int n);

  // Best of 5 runs of n cycles, in ns per cycle.
  static double Time(Cycle cycle, int n) {
    cycle(n / 10); // warm-up (JIT, caches)
    double best = double.MaxValue;
    for (int r = 0; r < 5; r++) {
      Stopwatch sw = Stopwatch.StartNew();
      cycle(n);
      sw.Stop();
      best = Math.Min(best, sw.Elapsed.TotalMilliseconds * 1e6 / n);
    }
    return best;
  }

  static void Check(int status) {
    if (status != 0) throw new InvalidOperationException("C cycle failed with status " + status);
  }

  static int Main() {
    double bare = Time(n => { for (int i = 0; i < n; i++) cs_bench_noop(); }, N * 10);
    Console.WriteLine("MONO_THREADS_SUSPEND={0}", Environment.GetEnvironmentVariable("MONO_THREADS_SUSPEND") ?? "(default)");
    Console.WriteLine("bare P/Invoke call: {0:F1} ns", bare);
    Console.WriteLine("{0,-36} {1,10} {2,10} {3,7} {4,7} {5,10}", "cycle", "C# ns", "C ns", "ratio", "calls", "budget ns");
    // (name, C# cycle, C cycle, native calls the C# cycle makes)
    Row("wrap pinned array + dispose",
        n => { for (int i = 0; i < n; i++) Tensor.Wrap(data, shape).Dispose(); },
        n => Check(cs_bench_wrap_free(n, IntPtr.Zero)), 2, bare);
    Row("allocate + dispose",
        n => { for (int i = 0; i < n; i++) Tensor.Allocate(Device.Cpu, DType.Float32, shape).Dispose(); },
        n => Check(cs_bench_allocate_free(n, IntPtr.Zero)), 2, bare);
    Row("wrap + export + import + dispose",
        n => { for (int i = 0; i < n; i++) Tensor.ImportVersioned(Tensor.Wrap(data, shape).ExportVersioned()).Dispose(); },
        n => Check(cs_bench_wrap_export_import_free(n, IntPtr.Zero)), 3, bare);
    Row("wrap + export/import legacy + dispose",
        n => { for (int i = 0; i < n; i++) Tensor.ImportLegacy(Tensor.Wrap(data, shape).ExportLegacy()).Dispose(); },
        n => Check(cs_bench_wrap_legacy_free(n, IntPtr.Zero)), 4, bare);
    Console.WriteLine("budget = 2 x C + calls x bare P/Invoke; live tensors at exit: {0}", Tensor.LiveCount);
    // What every C# cycle pays on top of its native calls, measured here: the SafeHandle that
    // holds each tensor (a finalizable object: allocation registers it with the GC, Dispose
    // suppresses it) and, for wrapped arrays, the pinning GCHandle.
    double safeHandle = Time(n => { for (int i = 0; i < n; i++) new Floor().Dispose(); }, N);
    double pin = Time(n => {
      for (int i = 0; i < n; i++) GCHandle.Alloc(data, GCHandleType.Pinned).Free();
    }, N);
    Console.WriteLine("floor: SafeHandle new + Dispose {0:F1} ns per tensor; GCHandle pin + free {1:F1} ns per wrapped array",
                      safeHandle, pin);
    return 0;
  }

  static void Row(string name, Cycle cs, Cycle c, int calls, double bare) {
    double tc = Time(c, N);
    double tcs = Time(cs, N);
    double budget = 2 * tc + calls * bare;
    Console.WriteLine("{0,-36} {1,10:F1} {2,10:F1} {3,7:F2} {4,7} {5,10:F1}{6}", name, tcs, tc, tcs / tc, calls, budget,
                      tcs <= budget ? "" : "  over budget");
  }
}
