using System;
using System.Collections.Generic;
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

    /// <summary>The binding's exception type of each status that has one of its own (docs/csharp.md,
    /// "Errors"), and the .NET type a caller catches it as; every other status is
    /// DLPackException.</summary>
    internal static readonly Dictionary<int, Type[]> ExceptionTypes = new Dictionary<int, Type[]> {
      { Status.InvalidArgument, new[] { typeof(DLPackArgumentException), typeof(ArgumentException) } },
      { Status.Closed, new[] { typeof(DLPackClosedException), typeof(ObjectDisposedException) } },
      { Status.NoListener, new[] { typeof(DLPackNoListenerException), typeof(System.IO.IOException) } },
      { Status.Permission, new[] { typeof(DLPackPermissionException), typeof(UnauthorizedAccessException) } },
      { Status.PeerClosed, new[] { typeof(DLPackPeerClosedException), typeof(System.IO.IOException) } },
      { Status.Protocol, new[] { typeof(DLPackProtocolException), typeof(System.IO.IOException) } },
      { Status.Timeout, new[] { typeof(DLPackTimeoutException), typeof(TimeoutException) } },
      { Status.Limit, new[] { typeof(DLPackLimitException), typeof(System.IO.IOException) } },
    };

    /// <summary>Asserts that <paramref name="code"/> throws the binding's exception for exactly
    /// this status and message, of the status's type (<see cref="ExceptionTypes"/>).</summary>
    internal static IDLPackError Throws(int status, string message, TestDelegate code) {
      Exception e = Assert.Catch<Exception>(code);
      IDLPackError error = e as IDLPackError;
      Assert.IsNotNull(error, "not a dlbridge error: " + e);
      Type expected = ExceptionTypes.ContainsKey(status) ? ExceptionTypes[status][0] : typeof(DLPackException);
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
