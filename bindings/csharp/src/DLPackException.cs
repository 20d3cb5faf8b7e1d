using System;

namespace DLBridge {
  /// <summary>A failure reported by the dlbridge core: its status code (one of the
  /// <c>Status.*</c> constants, or a code this version does not name) and the core's message,
  /// verbatim.</summary>
  public sealed class DLPackException : Exception {
    /// <summary>The core's dlb_status.</summary>
    public int Status { get; }

    public DLPackException(int status, string message) : base(message) {
      Status = status;
    }

    /// <summary>The status's name as the core spells it ("DLB_ERR_READ_ONLY"), or
    /// "DLB_ERR_UNKNOWN".</summary>
    public string StatusName {
      get { return DLBridgeNative.dlb_status_name(Status); }
    }

    public override string ToString() {
      return StatusName + ": " + Message;
    }
  }

  /// <summary>The core's status codes, read from the C header at class load. Plain integers: a
  /// newer library may report a code this version has no name for.</summary>
  public static class Status {
    public static readonly int Ok = DLBridgeNative.DLB_OK;
    public static readonly int InvalidArgument = DLBridgeNative.DLB_ERR_INVALID_ARGUMENT;
    public static readonly int OutOfMemory = DLBridgeNative.DLB_ERR_OUT_OF_MEMORY;
    public static readonly int UnsupportedVersion = DLBridgeNative.DLB_ERR_UNSUPPORTED_VERSION;
    public static readonly int Unsupported = DLBridgeNative.DLB_ERR_UNSUPPORTED;
    public static readonly int ReadOnly = DLBridgeNative.DLB_ERR_READ_ONLY;
    public static readonly int Layout = DLBridgeNative.DLB_ERR_LAYOUT;
    public static readonly int Overflow = DLBridgeNative.DLB_ERR_OVERFLOW;
    public static readonly int DeviceError = DLBridgeNative.DLB_ERR_DEVICE;
    public static readonly int DeviceUnavailable = DLBridgeNative.DLB_ERR_DEVICE_UNAVAILABLE;

    /// <summary>The core's name of any status value.</summary>
    public static string Name(int status) {
      return DLBridgeNative.dlb_status_name(status);
    }
  }
}
