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
    /// <summary>The core's status code: a <see cref="T:DLBridge.Status"/> constant, or a code this version has no name for.</summary>
    public int Status { get; }

    /// <summary>An exception for the core's <paramref name="status"/> with its <paramref name="message"/> (the binding makes these; see <see cref="M:DLBridge.Status.Name(System.Int32)"/> for the name).</summary>
    public DLPackException(int status, string message) : base(message) {
      Status = status;
    }

    /// <summary>The status's name as the core spells it ("DLB_ERR_INVALID_ARGUMENT"), or "DLB_ERR_UNKNOWN".</summary>
    public string StatusName {
      get { return DLBridgeNative.dlb_status_name(Status); }
    }

    /// <summary>The status's name and the core's message ("DLB_ERR_INVALID_ARGUMENT: ...").</summary>
    public override string ToString() {
      return StatusName + ": " + Message;
    }
  }

  /// <summary>The core refused an argument (DLB_ERR_INVALID_ARGUMENT): an ArgumentException with
  /// the status and the core's message.</summary>
  public sealed class DLPackArgumentException : ArgumentException, IDLPackError {
    /// <summary>The core's status code: a <see cref="T:DLBridge.Status"/> constant, or a code this version has no name for.</summary>
    public int Status { get; }

    /// <summary>An argument refused with <paramref name="status"/> (DLB_ERR_INVALID_ARGUMENT) and the core's <paramref name="message"/>.</summary>
    public DLPackArgumentException(int status, string message) : base(message) {
      Status = status;
    }

    /// <summary>The status's name as the core spells it ("DLB_ERR_INVALID_ARGUMENT"), or "DLB_ERR_UNKNOWN".</summary>
    public string StatusName {
      get { return DLBridgeNative.dlb_status_name(Status); }
    }

    /// <summary>The status's name and the core's message ("DLB_ERR_INVALID_ARGUMENT: ...").</summary>
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

    /// <summary>The core's status code: a <see cref="T:DLBridge.Status"/> constant, or a code this version has no name for.</summary>
    public int Status { get; }

    /// <summary>A closed object used, with <paramref name="status"/> (DLB_ERR_CLOSED) and the core's <paramref name="message"/>; the ObjectName is "Channel" for the channel's message, "Tensor" otherwise.</summary>
    public DLPackClosedException(int status, string message)
        : base(message == DLBridgeNative.DLB_CHANNEL_CLOSED_MESSAGE ? "Channel" : "Tensor", message) {
      Status = status;
      this.message = message;
    }

    /// <summary>The core's message alone (ObjectDisposedException's own would add the object's name).</summary>
    public override string Message {
      get { return message; }
    }

    /// <summary>The status's name as the core spells it ("DLB_ERR_INVALID_ARGUMENT"), or "DLB_ERR_UNKNOWN".</summary>
    public string StatusName {
      get { return DLBridgeNative.dlb_status_name(Status); }
    }

    /// <summary>The status's name and the core's message ("DLB_ERR_INVALID_ARGUMENT: ...").</summary>
    public override string ToString() {
      return StatusName + ": " + Message;
    }
  }

  /// <summary>Nothing listens at the address a channel connects to (DLB_ERR_NO_LISTENER): an
  /// IOException with the status and the core's message.</summary>
  public sealed class DLPackNoListenerException : IOException, IDLPackError {
    /// <summary>Always <c>Status.NoListener</c> (DLB_ERR_NO_LISTENER).</summary>
    public int Status { get { return DLBridgeNative.DLB_ERR_NO_LISTENER; } }
    /// <summary>The status's name as the core spells it ("DLB_ERR_TIMEOUT").</summary>
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    /// <summary>The failure with the core's <paramref name="message"/>.</summary>
    public DLPackNoListenerException(string message) : base(message) {}
    /// <summary>The status's name and the core's message ("DLB_ERR_TIMEOUT: ...").</summary>
    public override string ToString() { return StatusName + ": " + Message; }
  }

  /// <summary>Not permitted (DLB_ERR_PERMISSION): a folder or socket's modes, another user's
  /// folder, or a peer or listener running as a user the channel does not accept. An
  /// UnauthorizedAccessException with the status and the core's message.</summary>
  public sealed class DLPackPermissionException : UnauthorizedAccessException, IDLPackError {
    /// <summary>Always <c>Status.Permission</c> (DLB_ERR_PERMISSION).</summary>
    public int Status { get { return DLBridgeNative.DLB_ERR_PERMISSION; } }
    /// <summary>The status's name as the core spells it ("DLB_ERR_TIMEOUT").</summary>
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    /// <summary>The failure with the core's <paramref name="message"/>.</summary>
    public DLPackPermissionException(string message) : base(message) {}
    /// <summary>The status's name and the core's message ("DLB_ERR_TIMEOUT: ...").</summary>
    public override string ToString() { return StatusName + ": " + Message; }
  }

  /// <summary>The peer closed the channel or went away, also in the middle of a tensor
  /// (DLB_ERR_PEER_CLOSED): an IOException with the status and the core's message.</summary>
  public sealed class DLPackPeerClosedException : IOException, IDLPackError {
    /// <summary>Always <c>Status.PeerClosed</c> (DLB_ERR_PEER_CLOSED).</summary>
    public int Status { get { return DLBridgeNative.DLB_ERR_PEER_CLOSED; } }
    /// <summary>The status's name as the core spells it ("DLB_ERR_TIMEOUT").</summary>
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    /// <summary>The failure with the core's <paramref name="message"/>.</summary>
    public DLPackPeerClosedException(string message) : base(message) {}
    /// <summary>The status's name and the core's message ("DLB_ERR_TIMEOUT: ...").</summary>
    public override string ToString() { return StatusName + ": " + Message; }
  }

  /// <summary>What arrived on a channel is not a valid tensor (a malformed, forged or truncated
  /// descriptor), or the channel lost its place in the stream when a time limit ran out in the
  /// middle of a tensor (DLB_ERR_PROTOCOL): an IOException with the status and the
  /// core's message.</summary>
  public sealed class DLPackProtocolException : IOException, IDLPackError {
    /// <summary>Always <c>Status.Protocol</c> (DLB_ERR_PROTOCOL).</summary>
    public int Status { get { return DLBridgeNative.DLB_ERR_PROTOCOL; } }
    /// <summary>The status's name as the core spells it ("DLB_ERR_TIMEOUT").</summary>
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    /// <summary>The failure with the core's <paramref name="message"/>.</summary>
    public DLPackProtocolException(string message) : base(message) {}
    /// <summary>The status's name and the core's message ("DLB_ERR_TIMEOUT: ...").</summary>
    public override string ToString() { return StatusName + ": " + Message; }
  }

  /// <summary>The channel's time limit ran out (DLB_ERR_TIMEOUT; see
  /// <see cref="Channel.SetTimeout"/>): a TimeoutException with the status and the core's
  /// message.</summary>
  public sealed class DLPackTimeoutException : TimeoutException, IDLPackError {
    /// <summary>Always <c>Status.Timeout</c> (DLB_ERR_TIMEOUT).</summary>
    public int Status { get { return DLBridgeNative.DLB_ERR_TIMEOUT; } }
    /// <summary>The status's name as the core spells it ("DLB_ERR_TIMEOUT").</summary>
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    /// <summary>The failure with the core's <paramref name="message"/>.</summary>
    public DLPackTimeoutException(string message) : base(message) {}
    /// <summary>The status's name and the core's message ("DLB_ERR_TIMEOUT: ...").</summary>
    public override string ToString() { return StatusName + ": " + Message; }
  }

  /// <summary>A limit of the process or the system ran out (DLB_ERR_LIMIT: open file
  /// descriptors, mappings, file descriptors in flight): an IOException with the status and the
  /// core's message.</summary>
  public sealed class DLPackLimitException : IOException, IDLPackError {
    /// <summary>Always <c>Status.Limit</c> (DLB_ERR_LIMIT).</summary>
    public int Status { get { return DLBridgeNative.DLB_ERR_LIMIT; } }
    /// <summary>The status's name as the core spells it ("DLB_ERR_TIMEOUT").</summary>
    public string StatusName { get { return DLBridgeNative.dlb_status_name(Status); } }
    /// <summary>The failure with the core's <paramref name="message"/>.</summary>
    public DLPackLimitException(string message) : base(message) {}
    /// <summary>The status's name and the core's message ("DLB_ERR_TIMEOUT: ...").</summary>
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
    /// <summary>DLB_OK (0): success; never thrown.</summary>
    public const int Ok = DLBridgeNative.DLB_OK;
    /// <summary>DLB_ERR_INVALID_ARGUMENT: a parameter or a tensor field is malformed (a negative extent, a wrong array type, ...).</summary>
    public const int InvalidArgument = DLBridgeNative.DLB_ERR_INVALID_ARGUMENT;
    /// <summary>DLB_ERR_OUT_OF_MEMORY: a host or device allocation failed.</summary>
    public const int OutOfMemory = DLBridgeNative.DLB_ERR_OUT_OF_MEMORY;
    /// <summary>DLB_ERR_UNSUPPORTED_VERSION: a versioned tensor's major version is not 1.</summary>
    public const int UnsupportedVersion = DLBridgeNative.DLB_ERR_UNSUPPORTED_VERSION;
    /// <summary>DLB_ERR_UNSUPPORTED: well-formed but not handled here (an unknown code or flag bit, a device type without a backend, a library built without CUDA).</summary>
    public const int Unsupported = DLBridgeNative.DLB_ERR_UNSUPPORTED;
    /// <summary>DLB_ERR_READ_ONLY: a write into a READ_ONLY tensor, or an export that would drop that flag.</summary>
    public const int ReadOnly = DLBridgeNative.DLB_ERR_READ_ONLY;
    /// <summary>DLB_ERR_LAYOUT: the memory layout does not allow the operation without a copy (a reshape of a non-contiguous tensor).</summary>
    public const int Layout = DLBridgeNative.DLB_ERR_LAYOUT;
    /// <summary>DLB_ERR_OVERFLOW: an element count or byte size does not fit in 64 bits.</summary>
    public const int Overflow = DLBridgeNative.DLB_ERR_OVERFLOW;
    /// <summary>DLB_ERR_DEVICE: a device runtime or a backend reported a failure (for a channel, an operating system failure no other status describes).</summary>
    public const int Device = DLBridgeNative.DLB_ERR_DEVICE;
    /// <summary>DLB_ERR_DEVICE_UNAVAILABLE: the device's runtime or hardware is not available in this process (no driver, no device).</summary>
    public const int DeviceUnavailable = DLBridgeNative.DLB_ERR_DEVICE_UNAVAILABLE;
    /// <summary>DLB_ERR_CLOSED: a tensor, listener or channel used after Dispose or after an export.</summary>
    public const int Closed = DLBridgeNative.DLB_ERR_CLOSED;
    /// <summary>DLB_ERR_NO_LISTENER: nothing listens at the address a channel connects to.</summary>
    public const int NoListener = DLBridgeNative.DLB_ERR_NO_LISTENER;
    /// <summary>DLB_ERR_PERMISSION: not permitted (file or folder modes, another user's folder, a peer running as a user this end does not accept).</summary>
    public const int Permission = DLBridgeNative.DLB_ERR_PERMISSION;
    /// <summary>DLB_ERR_PEER_CLOSED: the peer closed the channel or went away, also in the middle of a tensor.</summary>
    public const int PeerClosed = DLBridgeNative.DLB_ERR_PEER_CLOSED;
    /// <summary>DLB_ERR_PROTOCOL: what arrived is not a tensor this library accepts, or the channel lost its place in the stream after a timeout mid-tensor.</summary>
    public const int Protocol = DLBridgeNative.DLB_ERR_PROTOCOL;
    /// <summary>DLB_ERR_TIMEOUT: the channel's time limit ran out.</summary>
    public const int Timeout = DLBridgeNative.DLB_ERR_TIMEOUT;
    /// <summary>DLB_ERR_LIMIT: a limit of the process or the system was reached (open file descriptors, mappings, descriptors in flight); the message names it.</summary>
    public const int Limit = DLBridgeNative.DLB_ERR_LIMIT;

    /// <summary>The core's name of any status value ("DLB_ERR_READ_ONLY", or
    /// "DLB_ERR_UNKNOWN").</summary>
    public static string Name(int status) {
      return DLBridgeNative.dlb_status_name(status);
    }
  }
}
