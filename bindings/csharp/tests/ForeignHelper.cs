// ForeignHelper.cs - the foreign C producer and consumer of the C# tests and of the parity rows,
// declared once for both (compiled into DLBridge.Tests.dll and into the adapter's program,
// DLBridge.Adapter.exe).
using System;
using System.Runtime.InteropServices;

namespace DLBridge.Tests {
  /// <summary>The foreign C producer and consumer (tests/foreign/foreign_dlpack.c: DLPack only, no
  /// dlbridge inside).</summary>
  internal static class Helper {
    private const string Lib = "dlbridge_cs_test_helpers";

    [DllImport(Lib, EntryPoint = "foreign_dlpack_produce_versioned")]
    internal static extern IntPtr ProduceVersioned(long n, int major, int minor, long flags);

    [DllImport(Lib, EntryPoint = "foreign_dlpack_produce_legacy")]
    internal static extern IntPtr ProduceLegacy(long n);

    [DllImport(Lib, EntryPoint = "foreign_dlpack_deleted_count")]
    internal static extern long DeletedCount();

    /// <summary>Takes ownership, sums the float32 elements, frees it from a new pthread.</summary>
    [DllImport(Lib, EntryPoint = "foreign_dlpack_consume_on_new_thread")]
    internal static extern double ConsumeOnNewThread(IntPtr tensor, int legacy);

    [DllImport(Lib, EntryPoint = "foreign_dlpack_version_of")]
    internal static extern int VersionOf(IntPtr tensor);

    [DllImport(Lib, EntryPoint = "foreign_dlpack_free_later")]
    internal static extern void FreeLater(IntPtr tensor, long delayMicroseconds);
  }
}
