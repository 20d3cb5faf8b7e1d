// Bench.cs - ns per cycle of the C# binding next to the same cycle in C and the runtime's floor,
// all measured in the same process and run. The C cycle is bench/binding_cycles.c (the C column
// every binding's bench shares, linked against the same static core). The floor is what any C#
// binding of this C API must pay for the cycle, defined as Java's bench defines it: the same
// native calls made bare, straight through the generated layer (DLBridgeNative: the P/Invoke
// transitions, the array typemaps and the core's own work), plus, per Tensor the cycle makes, one
// handle object (new + Dispose of an object with a critical finalizer: the GC safety net), and per
// array it wraps, one GCHandle pin (Alloc + Free). The binding's overhead is C# - floor: what
// DLBridge adds on top (the reference and count in its Tensor, token bookkeeping, checks). Target:
// overhead <= the C cycle of the same row. No pass/fail: a
// plain table. (The floor reaches DLBridgeNative through InternalsVisibleTo("DLBridge.Bench").)
//
//   meson test -C build --benchmark --suite csharp   # Mono default + preemptive (bench/run_bench.sh)
//   DLBRIDGE_DOTNET=/path/to/dotnet meson test -C build --benchmark --suite csharp   # + CoreCLR
//   MONO_THREADS_SUSPEND=preemptive mono build/bindings/csharp/DLBridge.Bench.exe
using System;
using System.Diagnostics;
using System.Reflection;
using System.Runtime.ConstrainedExecution;
using System.Runtime.InteropServices;

namespace DLBridge.Bench {
  // The handle object every binding needs per tensor, bare: an object with a critical finalizer
  // (the GC's safety net) whose Dispose takes it off the finalization queue. DLBridge's Tensor is
  // such an object, with its reference and count inside (src/Tensor.cs).
  sealed class Floor : CriticalFinalizerObject, IDisposable {
    public void Dispose() { GC.SuppressFinalize(this); }
    ~Floor() {}
  }

  // The runtime's own handle type, for the record below the table: what a Tensor holding a
  // SafeHandle would pay instead.
  sealed class Handle : SafeHandle {
    public Handle() : base(IntPtr.Zero, true) { SetHandle(new IntPtr(1)); }
    public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
    protected override bool ReleaseHandle() { return true; }
  }

  static unsafe class Program {
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
    static readonly long Cpu = Device.Cpu.Packed;
    static readonly int F32 = DType.Float32.Packed;
    const ulong DataBytes = 256 * sizeof(float);

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

    // The floor's wrap: the array pinned for as long as the tensor lives (its address read with
    // `fixed`, as the binding does), the generated layer's wrap, and a token of the pin's own,
    // handed back by the free (nothing is queued).
    static long BareWrap(GCHandle pin) {
      long token = GCHandle.ToIntPtr(pin).ToInt64() << 1;
      fixed (float* p = data) {
        return DLBridgeNative.dlbx_tensor_wrap((long)p, DataBytes, shape, null, Cpu, F32, 0, 0, token);
      }
    }

    static double bare = double.MaxValue, handle = double.MaxValue, safeHandle = double.MaxValue, pin = double.MaxValue;

    // The runtime's pieces, for the record below the table (each floor has them inside).
    static void MeasurePieces() {
      bare = Math.Min(bare, Time(n => { for (int i = 0; i < n; i++) Noop(); }, N * 10));
      handle = Math.Min(handle, Time(n => { for (int i = 0; i < n; i++) new Floor().Dispose(); }, N));
      safeHandle = Math.Min(safeHandle, Time(n => { for (int i = 0; i < n; i++) new Handle().Dispose(); }, N));
      pin = Math.Min(pin, Time(n => {
        for (int i = 0; i < n; i++) GCHandle.Alloc(data, GCHandleType.Pinned).Free();
      }, N));
    }

    static int Main() {
      Console.WriteLine("runtime: {0}", RuntimeName());
      Console.WriteLine("{0,-38} {1,7} {2,7} {3,7} {4,8} {5,10}", "cycle", "C# ns", "C ns", "floor",
                        "C#-floor", "target<=C");
      // (name, C# cycle, C cycle, floor cycle)
      Row("wrap pinned array + dispose",
          n => { for (int i = 0; i < n; i++) Tensor.Wrap(data, shape).Dispose(); },
          n => Check(CWrapFree(n, IntPtr.Zero)),
          n => {
            for (int i = 0; i < n; i++) {
              GCHandle p = GCHandle.Alloc(data, GCHandleType.Pinned);
              long t = BareWrap(p);
              new Floor().Dispose();
              DLBridgeNative.dlbx_tensor_free(t);
              p.Free();
            }
          });
      Row("allocate + dispose",
          n => { for (int i = 0; i < n; i++) Tensor.Allocate(Device.Cpu, DType.Float32, shape).Dispose(); },
          n => Check(CAllocateFree(n, IntPtr.Zero)),
          n => {
            for (int i = 0; i < n; i++) {
              long t = DLBridgeNative.dlb_tensor_allocate(Cpu, F32, shape, null, 0);
              new Floor().Dispose();
              DLBridgeNative.dlbx_tensor_free(t);
            }
          });
      Row("wrap + export + import + dispose",
          n => { for (int i = 0; i < n; i++) Tensor.ImportVersioned(Tensor.Wrap(data, shape).ExportVersioned()).Dispose(); },
          n => Check(CWrapExportImportFree(n, IntPtr.Zero)),
          n => {
            for (int i = 0; i < n; i++) {
              GCHandle p = GCHandle.Alloc(data, GCHandleType.Pinned);
              long t = BareWrap(p);
              new Floor().Dispose();
              long imported = DLBridgeNative.dlb_tensor_import(t);
              new Floor().Dispose();
              DLBridgeNative.dlbx_tensor_free(imported);
              p.Free();
            }
          });
      Row("wrap + export/import legacy + dispose",
          n => { for (int i = 0; i < n; i++) Tensor.ImportLegacy(Tensor.Wrap(data, shape).ExportLegacy()).Dispose(); },
          n => Check(CWrapLegacyFree(n, IntPtr.Zero)),
          n => {
            for (int i = 0; i < n; i++) {
              GCHandle p = GCHandle.Alloc(data, GCHandleType.Pinned);
              long t = BareWrap(p);
              new Floor().Dispose();
              long imported = DLBridgeNative.dlb_tensor_import_legacy(DLBridgeNative.dlb_tensor_export_legacy(t));
              new Floor().Dispose();
              DLBridgeNative.dlbx_tensor_free(imported);
              p.Free();
            }
          });
      Console.WriteLine("of which the runtime's own: bare P/Invoke call {0:F1} ns; handle object new + Dispose {1:F1} ns; " +
                        "GCHandle pin + free {2:F1} ns (a SafeHandle new + Dispose instead: {3:F1} ns)", bare, handle, pin,
                        safeHandle);
      Console.WriteLine("floor = the cycle's native calls made bare through the generated layer + per tensor a " +
                        "finalizable handle object + per wrapped array a pin; target: C# - floor <= C; live tensors at exit: {0}",
                        DLBridge.LiveCount);
      return DLBridge.LiveCount == 0 ? 0 : 1;
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

    // The three cycles of a row timed in turn, twice, the best of each counting: a disturbed
    // stretch of the shared machine must not favour one column.
    static void Row(string name, Cycle cs, Cycle c, Cycle floorCycle) {
      MeasurePieces();
      double tc = double.MaxValue, tcs = double.MaxValue, floor = double.MaxValue;
      for (int round = 0; round < 2; round++) {
        tc = Math.Min(tc, Time(c, N));
        floor = Math.Min(floor, Time(floorCycle, N));
        tcs = Math.Min(tcs, Time(cs, N));
      }
      double overhead = tcs - floor;
      Console.WriteLine("{0,-38} {1,7:F1} {2,7:F1} {3,7:F1} {4,8:F1} {5,10}", name, tcs, tc, floor, overhead,
                        overhead <= tc ? "met" : "over by " + (overhead - tc).ToString("F0"));
    }
  }
}
