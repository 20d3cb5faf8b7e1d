// Bench.cs - ns per cycle of the C# binding next to the same cycle in C and the runtime's floor,
// all measured in the same process and run. The C cycle is bench/binding_cycles.c (the C column
// every binding's bench shares, linked against the same static core). The floor is what the
// runtime itself charges for the cycle, whatever the binding does: the bare P/Invoke calls the
// cycle needs (a call of an empty C function each), one SafeHandle (new + Dispose) per Tensor it
// makes and one GCHandle pin (Alloc + Free) per array it wraps, each measured here. The binding's
// overhead is C# - floor: what it costs above the runtime's mandatory pieces, the native work of
// the cycle included. Target: overhead <= the C cycle of the same row (the binding adds nothing
// but its native work). No pass/fail: a plain table.
//
//   meson test -C build --benchmark --suite csharp   # Mono default + preemptive (bench/run_bench.sh)
//   DLBRIDGE_DOTNET=/path/to/dotnet meson test -C build --benchmark --suite csharp   # + CoreCLR
//   MONO_THREADS_SUSPEND=preemptive mono build/bindings/csharp/DLBridge.Bench.exe
using System;
using System.Diagnostics;
using System.Reflection;
using System.Runtime.InteropServices;

namespace DLBridge.Bench {
  // A SafeHandle of the same shape as DLBridge's TensorHandle, releasing nothing.
  sealed class Floor : SafeHandle {
    public Floor() : base(IntPtr.Zero, true) { SetHandle(new IntPtr(1)); }
    public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
    protected override bool ReleaseHandle() { return true; }
  }

  static class Program {
    const string Lib = "dlbridge_cs_bench_helpers";
    // bench/binding_cycles.c (no error buffer: a failure shows as its status).
    [DllImport(Lib, EntryPoint = "bench_cycle_wrap_free")] static extern int CWrapFree(int n, IntPtr error);
    [DllImport(Lib, EntryPoint = "bench_cycle_allocate_free")] static extern int CAllocateFree(int n, IntPtr error);
    [DllImport(Lib, EntryPoint = "bench_cycle_wrap_export_import_free")] static extern int CWrapExportImportFree(int n, IntPtr error);
    [DllImport(Lib, EntryPoint = "bench_cycle_wrap_legacy_free")] static extern int CWrapLegacyFree(int n, IntPtr error);
    [DllImport(Lib, EntryPoint = "bench_cycle_noop")] static extern void Noop();

    const int N = 40000;
    const int Runs = 25;
    static readonly float[] data = new float[256];
    static readonly long[] shape = { 16, 16 };

    delegate void Cycle(int n);

    // Best of many short runs of n cycles, in ns per cycle: the machine is shared, and the best
    // run is the one least disturbed.
    static double Time(Cycle cycle, int n) {
      cycle(n); // warm-up (JIT, caches)
      double best = double.MaxValue;
      for (int r = 0; r < Runs; r++) {
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

    static double bare = double.MaxValue, safeHandle = double.MaxValue, pin = double.MaxValue;

    // The pieces the floor is made of, measured again before each row (the best so far counts):
    // one disturbed stretch of the shared machine must not make a floor too high.
    static void MeasurePieces() {
      bare = Math.Min(bare, Time(n => { for (int i = 0; i < n; i++) Noop(); }, N * 10));
      // The SafeHandle that holds each tensor (a finalizable object: allocation registers it with
      // the GC, Dispose suppresses it) and, for wrapped arrays, the pinning GCHandle.
      safeHandle = Math.Min(safeHandle, Time(n => { for (int i = 0; i < n; i++) new Floor().Dispose(); }, N));
      pin = Math.Min(pin, Time(n => {
        for (int i = 0; i < n; i++) GCHandle.Alloc(data, GCHandleType.Pinned).Free();
      }, N));
    }

    static int Main() {
      Console.WriteLine("runtime: {0}", RuntimeName());
      Console.WriteLine("{0,-38} {1,7} {2,7} {3,5} {4,7} {5,4} {6,7} {7,8} {8,10}", "cycle", "C# ns", "C ns",
                        "calls", "tensors", "pins", "floor", "C#-floor", "target<=C");
      // (name, C# cycle, C cycle, native calls, Tensors made, arrays pinned by the C# cycle)
      Row("wrap pinned array + dispose",
          n => { for (int i = 0; i < n; i++) Tensor.Wrap(data, shape).Dispose(); },
          n => Check(CWrapFree(n, IntPtr.Zero)), 2, 1, 1);
      Row("allocate + dispose",
          n => { for (int i = 0; i < n; i++) Tensor.Allocate(Device.Cpu, DType.Float32, shape).Dispose(); },
          n => Check(CAllocateFree(n, IntPtr.Zero)), 2, 1, 0);
      Row("wrap + export + import + dispose",
          n => { for (int i = 0; i < n; i++) Tensor.ImportVersioned(Tensor.Wrap(data, shape).ExportVersioned()).Dispose(); },
          n => Check(CWrapExportImportFree(n, IntPtr.Zero)), 3, 2, 1);
      Row("wrap + export/import legacy + dispose",
          n => { for (int i = 0; i < n; i++) Tensor.ImportLegacy(Tensor.Wrap(data, shape).ExportLegacy()).Dispose(); },
          n => Check(CWrapLegacyFree(n, IntPtr.Zero)), 4, 2, 1);
      Console.WriteLine("bare P/Invoke call {0:F1} ns; SafeHandle new + Dispose {1:F1} ns per tensor; " +
                        "GCHandle pin + free {2:F1} ns per wrapped array", bare, safeHandle, pin);
      Console.WriteLine("floor = calls x bare P/Invoke + tensors x SafeHandle + pins x GCHandle pin; " +
                        "target: C# - floor <= C; live tensors at exit: {0}", DLBridge.LiveCount);
      return 0;
    }

    // Which runtime the figures belong to: Mono's display name and its thread suspension mode,
    // or the folder of CoreCLR's shared framework (which names its version).
    static string RuntimeName() {
      Type mono = Type.GetType("Mono.Runtime");
      if (mono != null) {
        var displayName = mono.GetMethod("GetDisplayName", BindingFlags.NonPublic | BindingFlags.Static);
        return "Mono " + (displayName != null ? displayName.Invoke(null, null) : "?") + ", MONO_THREADS_SUSPEND=" +
               (Environment.GetEnvironmentVariable("MONO_THREADS_SUSPEND") ?? "(default)");
      }
      return "CoreCLR " + System.IO.Path.GetDirectoryName(typeof(object).Assembly.Location);
    }

    static void Row(string name, Cycle cs, Cycle c, int calls, int tensors, int pins) {
      MeasurePieces();
      double tc = Time(c, N);
      double tcs = Time(cs, N);
      double floor = calls * bare + tensors * safeHandle + pins * pin;
      double overhead = tcs - floor;
      Console.WriteLine("{0,-38} {1,7:F1} {2,7:F1} {3,5} {4,7} {5,4} {6,7:F1} {7,8:F1} {8,10}", name, tcs, tc,
                        calls, tensors, pins, floor, overhead,
                        overhead <= tc ? "met" : "over by " + (overhead - tc).ToString("F0"));
    }
  }
}
