// Errors.cs - what the binding throws. Every failure the core reports becomes one exception that
// carries the core's status and its message verbatim (IDLPackError), of the .NET type a C#
// caller expects for it:
//   DLB_ERR_INVALID_ARGUMENT  DLPackArgumentException : ArgumentException (a wrong array type, a
//                             negative extent, a buffer that is too small, ...);
//   DLB_ERR_CLOSED            DLPackClosedException : ObjectDisposedException (use after Dispose
//                             or after an export);
//   the channel's statuses    DLB_ERR_NO_LISTENER  DLPackNoListenerException : IOException
//                             DLB_ERR_PERMISSION   DLPackPermissionException : UnauthorizedAccessException
//                             DLB_ERR_PEER_CLOSED  DLPackPeerClosedException : IOException
//                             DLB_ERR_PROTOCOL     DLPackProtocolException : IOException
//                             DLB_ERR_TIMEOUT      DLPackTimeoutException : TimeoutException
//                             DLB_ERR_LIMIT        DLPackLimitException : IOException
//   every other status        DLPackException : Exception.
// .NET has no multiple inheritance, so no one class can be both an ArgumentException and the
// others' base: `catch (ArgumentException)`, `catch (TimeoutException)`, ... work as .NET users
// expect, and `catch (Exception e) when (e is IDLPackError)` catches them all.
using System;
using System.IO;

namespace DLBridge {
  /// <summary>A failure reported by the dlbridge core (or the binding's use-after-close check):
  /// implemented by <see cref="DLPackException"/>, <see cref="DLPackArgumentException"/>,
  /// <see cref="DLPackClosedException"/> and the channel's exceptions
  /// (<see cref="DLPackNoListenerException"/>, <see cref="DLPackPermissionException"/>,
  /// <see cref="DLPackPeerClosedException"/>, <see cref="DLPackProtocolException"/>,
  /// <see cref="DLPackTimeoutException"/>, <see cref="DLPackLimitException"/>).</summary>
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

  /// <summary>A core failure that none of the typed exceptions below stands for (an invalid
  /// argument, a closed object, a channel's statuses): its status and the core's
  /// message.</summary>
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

  /// <summary>Nothing listens at the address a channel connects to (DLB_ERR_NO_LISTENER): an
  /// IOException with the status and the core's message.</summary>
  public sealed class DLPackNoListenerException : IOException, IDLPackError {
    public int Status { get { return DLBridgeNative.DLB_ERR_NO_LISTENER; } }
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    public DLPackNoListenerException(string message) : base(message) {}
    public override string ToString() { return StatusName + ": " + Message; }
  }

  /// <summary>Not permitted (DLB_ERR_PERMISSION): a folder or socket's modes, another user's
  /// folder, or a peer or listener running as a user the channel does not accept. An
  /// UnauthorizedAccessException with the status and the core's message.</summary>
  public sealed class DLPackPermissionException : UnauthorizedAccessException, IDLPackError {
    public int Status { get { return DLBridgeNative.DLB_ERR_PERMISSION; } }
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    public DLPackPermissionException(string message) : base(message) {}
    public override string ToString() { return StatusName + ": " + Message; }
  }

  /// <summary>The peer closed the channel or went away, also in the middle of a tensor
  /// (DLB_ERR_PEER_CLOSED): an IOException with the status and the core's message.</summary>
  public sealed class DLPackPeerClosedException : IOException, IDLPackError {
    public int Status { get { return DLBridgeNative.DLB_ERR_PEER_CLOSED; } }
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    public DLPackPeerClosedException(string message) : base(message) {}
    public override string ToString() { return StatusName + ": " + Message; }
  }

  /// <summary>What arrived on a channel is not a valid tensor (a malformed, forged or truncated
  /// descriptor), or the channel lost its place in the stream when a time limit ran out in the
  /// middle of a tensor (DLB_ERR_PROTOCOL): an IOException with the status and the
  /// core's message.</summary>
  public sealed class DLPackProtocolException : IOException, IDLPackError {
    public int Status { get { return DLBridgeNative.DLB_ERR_PROTOCOL; } }
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    public DLPackProtocolException(string message) : base(message) {}
    public override string ToString() { return StatusName + ": " + Message; }
  }

  /// <summary>The channel's time limit ran out (DLB_ERR_TIMEOUT; see
  /// <see cref="Channel.SetTimeout"/>): a TimeoutException with the status and the core's
  /// message.</summary>
  public sealed class DLPackTimeoutException : TimeoutException, IDLPackError {
    public int Status { get { return DLBridgeNative.DLB_ERR_TIMEOUT; } }
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    public DLPackTimeoutException(string message) : base(message) {}
    public override string ToString() { return StatusName + ": " + Message; }
  }

  /// <summary>A limit of the process or the system ran out (DLB_ERR_LIMIT: open file
  /// descriptors, mappings, file descriptors in flight): an IOException with the status and the
  /// core's message.</summary>
  public sealed class DLPackLimitException : IOException, IDLPackError {
    public int Status { get { return DLBridgeNative.DLB_ERR_LIMIT; } }
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    public DLPackLimitException(string message) : base(message) {}
    public override string ToString() { return StatusName + ": " + Message; }
  }

  internal static class Errors {
    /// <summary>The exception for a core status (never DLB_OK).</summary>
    internal static Exception For(int status, string message) {
      switch (status) {
        case DLBridgeNative.DLB_ERR_INVALID_ARGUMENT: return new DLPackArgumentException(status, message);
        case DLBridgeNative.DLB_ERR_CLOSED: return new DLPackClosedException(status, message);
        case DLBridgeNative.DLB_ERR_NO_LISTENER: return new DLPackNoListenerException(message);
        case DLBridgeNative.DLB_ERR_PERMISSION: return new DLPackPermissionException(message);
        case DLBridgeNative.DLB_ERR_PEER_CLOSED: return new DLPackPeerClosedException(message);
        case DLBridgeNative.DLB_ERR_PROTOCOL: return new DLPackProtocolException(message);
        case DLBridgeNative.DLB_ERR_TIMEOUT: return new DLPackTimeoutException(message);
        case DLBridgeNative.DLB_ERR_LIMIT: return new DLPackLimitException(message);
        default: return new DLPackException(status, message);
      }
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
    public const int NoListener = DLBridgeNative.DLB_ERR_NO_LISTENER;
    public const int Permission = DLBridgeNative.DLB_ERR_PERMISSION;
    public const int PeerClosed = DLBridgeNative.DLB_ERR_PEER_CLOSED;
    public const int Protocol = DLBridgeNative.DLB_ERR_PROTOCOL;
    public const int Timeout = DLBridgeNative.DLB_ERR_TIMEOUT;
    public const int Limit = DLBridgeNative.DLB_ERR_LIMIT;

    /// <summary>The core's name of any status value ("DLB_ERR_READ_ONLY", or
    /// "DLB_ERR_UNKNOWN").</summary>
    public static string Name(int status) {
      return DLBridgeNative.dlb_status_name(status);
    }
  }
}
