// Errors.cs - what the binding throws. Every failure the core reports becomes one exception that
// carries the core's status and its message verbatim (IDLPackError), of the .NET type a C#
// caller expects for it:
//   DLB_ERR_INVALID_ARGUMENT  DLPackArgumentException : ArgumentException (a wrong array type, a
//                             negative extent, a buffer that is too small, ...);
//   DLB_ERR_CLOSED            DLPackClosedException : ObjectDisposedException (use after Dispose
//                             or after an export);
//   every other status        DLPackException : Exception.
// .NET has no multiple inheritance, so no one class can be both an ArgumentException and the
// others' base: `catch (ArgumentException)` and `catch (ObjectDisposedException)` work as .NET
// users expect, and `catch (Exception e) when (e is IDLPackError)` catches them all.
using System;

namespace DLBridge {
  /// <summary>A failure reported by the dlbridge core (or the binding's use-after-close check):
  /// implemented by <see cref="DLPackException"/>, <see cref="DLPackArgumentException"/> and
  /// <see cref="DLPackClosedException"/>.</summary>
  public interface IDLPackError {
    /// <summary>The core's dlb_status: one of the <see cref="T:DLBridge.Status"/> constants, or a
    /// code this version has no name for.</summary>
    int Status { get; }

    /// <summary>The status's name as the core spells it ("DLB_ERR_READ_ONLY"), or
    /// "DLB_ERR_UNKNOWN".</summary>
    string StatusName { get; }

    /// <summary>The core's message, verbatim.</summary>
    string Message { get; }
  }

  /// <summary>A core failure other than an invalid argument or a closed tensor: its status and
  /// the core's message.</summary>
  public sealed class DLPackException : Exception, IDLPackError {
    public int Status { get; }

    public DLPackException(int status, string message) : base(message) {
      Status = status;
    }

    public string StatusName {
      get { return DLBridgeNative.dlb_status_name(Status); }
    }

    public override string ToString() {
      return StatusName + ": " + Message;
    }
  }

  /// <summary>The core refused an argument (DLB_ERR_INVALID_ARGUMENT): an ArgumentException with
  /// the status and the core's message.</summary>
  public sealed class DLPackArgumentException : ArgumentException, IDLPackError {
    public int Status { get; }

    public DLPackArgumentException(int status, string message) : base(message) {
      Status = status;
    }

    public string StatusName {
      get { return DLBridgeNative.dlb_status_name(Status); }
    }

    public override string ToString() {
      return StatusName + ": " + Message;
    }
  }

  /// <summary>A tensor used after Dispose or after an export (DLB_ERR_CLOSED, the message every
  /// binding gives: DLB_CLOSED_MESSAGE), or a Listener or Channel after Dispose
  /// (DLB_CHANNEL_CLOSED_MESSAGE): an ObjectDisposedException whose ObjectName is "Tensor" or
  /// "Channel" and whose Message is the core's text alone.</summary>
  public sealed class DLPackClosedException : ObjectDisposedException, IDLPackError {
    private readonly string message;

    public int Status { get; }

    public DLPackClosedException(int status, string message)
        : base(message == DLBridgeNative.DLB_CHANNEL_CLOSED_MESSAGE ? "Channel" : "Tensor", message) {
      Status = status;
      this.message = message;
    }

    public override string Message {
      get { return message; }
    }

    public string StatusName {
      get { return DLBridgeNative.dlb_status_name(Status); }
    }

    public override string ToString() {
      return StatusName + ": " + Message;
    }
  }

  internal static class Errors {
    /// <summary>The exception for a core status (never DLB_OK).</summary>
    internal static Exception For(int status, string message) {
      if (status == DLBridgeNative.DLB_ERR_INVALID_ARGUMENT) return new DLPackArgumentException(status, message);
      if (status == DLBridgeNative.DLB_ERR_CLOSED) return new DLPackClosedException(status, message);
      return new DLPackException(status, message);
    }

    /// <summary>A tensor used after Dispose or an export.</summary>
    internal static DLPackClosedException Closed() {
      return new DLPackClosedException(DLBridgeNative.DLB_ERR_CLOSED, DLBridgeNative.DLB_CLOSED_MESSAGE);
    }

    /// <summary>A Listener or Channel used after Dispose.</summary>
    internal static DLPackClosedException ChannelClosed() {
      return new DLPackClosedException(DLBridgeNative.DLB_ERR_CLOSED, DLBridgeNative.DLB_CHANNEL_CLOSED_MESSAGE);
    }

    /// <summary>An argument the binding refuses before calling C, for a reason of its own
    /// language (not a rule of the core's).</summary>
    internal static DLPackArgumentException Argument(string message) {
      return new DLPackArgumentException(DLBridgeNative.DLB_ERR_INVALID_ARGUMENT, message);
    }
  }

  /// <summary>The core's status codes (dlb_status), as constants a <c>switch</c> can use: SWIG
  /// copies each value from the DLB_* macros of dlbridge.h into the generated module, and each
  /// constant here is one of those, named after the macro (DLB_ERR_READ_ONLY: ReadOnly). Plain
  /// integers: a newer library may report a code this version has no name for
  /// (<see cref="Name"/> still names it).</summary>
  public static class Status {
    public const int Ok = DLBridgeNative.DLB_OK;
    public const int InvalidArgument = DLBridgeNative.DLB_ERR_INVALID_ARGUMENT;
    public const int OutOfMemory = DLBridgeNative.DLB_ERR_OUT_OF_MEMORY;
    public const int UnsupportedVersion = DLBridgeNative.DLB_ERR_UNSUPPORTED_VERSION;
    public const int Unsupported = DLBridgeNative.DLB_ERR_UNSUPPORTED;
    public const int ReadOnly = DLBridgeNative.DLB_ERR_READ_ONLY;
    public const int Layout = DLBridgeNative.DLB_ERR_LAYOUT;
    public const int Overflow = DLBridgeNative.DLB_ERR_OVERFLOW;
    public const int Device = DLBridgeNative.DLB_ERR_DEVICE;
    public const int DeviceUnavailable = DLBridgeNative.DLB_ERR_DEVICE_UNAVAILABLE;
    public const int Closed = DLBridgeNative.DLB_ERR_CLOSED;

    /// <summary>The core's name of any status value ("DLB_ERR_READ_ONLY", or
    /// "DLB_ERR_UNKNOWN").</summary>
    public static string Name(int status) {
      return DLBridgeNative.dlb_status_name(status);
    }
  }
}
