using System;
using System.Runtime.InteropServices;
using NUnit.Framework;

namespace DLBridge.Tests {
  /// <summary>The foreign C producer and consumer (tests/test_helpers.c: DLPack only, no
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

  /// <summary>Base of fixtures whose every test must leave the live-tensor count as it found
  /// it (after collecting what the test left to the finalizer).</summary>
  public abstract class LeakChecked {
    private long liveBefore;

    [SetUp]
    public void RecordLive() {
      liveBefore = DLBridge.LiveCount;
    }

    [TearDown]
    public void NoLeaks() {
      Assert.AreEqual(liveBefore, TestUtil.LiveAfterGc(liveBefore), "live tensors after the test");
    }
  }

  internal static class TestUtil {
    internal static long LiveAfterGc(long expected) {
      long live = DLBridge.LiveCount;
      for (int i = 0; i < 20 && live != expected; i++) {
        GC.Collect();
        GC.WaitForPendingFinalizers();
        live = DLBridge.LiveCount;
      }
      return live;
    }

    /// <summary>Asserts that <paramref name="code"/> throws DLPackException with exactly this
    /// status and message.</summary>
    internal static DLPackException Throws(int status, string message, TestDelegate code) {
      DLPackException e = Assert.Throws<DLPackException>(code);
      Assert.AreEqual(Status.Name(status), Status.Name(e.Status), "status");
      Assert.AreEqual(message, e.Message, "message");
      return e;
    }
  }
}
