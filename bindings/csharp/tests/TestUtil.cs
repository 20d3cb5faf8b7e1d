using System;
using NUnit.Framework;

namespace DLBridge.Tests {
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

    /// <summary>Asserts that <paramref name="code"/> throws the binding's exception for exactly
    /// this status and message: DLPackArgumentException (an ArgumentException) for
    /// DLB_ERR_INVALID_ARGUMENT, DLPackClosedException (an ObjectDisposedException) for
    /// DLB_ERR_CLOSED, DLPackException for every other status.</summary>
    internal static IDLPackError Throws(int status, string message, TestDelegate code) {
      Exception e = Assert.Catch<Exception>(code);
      IDLPackError error = e as IDLPackError;
      Assert.IsNotNull(error, "not a dlbridge error: " + e);
      Type expected = status == Status.InvalidArgument ? typeof(DLPackArgumentException)
                    : status == Status.Closed ? typeof(DLPackClosedException)
                    : typeof(DLPackException);
      Assert.AreEqual(expected, e.GetType(), "exception type");
      Assert.AreEqual(Status.Name(status), error.StatusName, "status");
      Assert.AreEqual(status, error.Status, "status");
      Assert.AreEqual(message, e.Message, "message");
      return error;
    }

    internal static void ThrowsClosed(TestDelegate code) {
      Throws(Status.Closed, "the tensor is closed", code);
    }
  }
}
