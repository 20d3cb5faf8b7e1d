using System;

namespace DLBridge {
  /// <summary>A DLPack device: device type and id over the integer codes (a device type this
  /// version has no name for is still a device). Names come from the core.</summary>
  public readonly struct Device : IEquatable<Device> {
    /// <summary>device_type &lt;&lt; 32 | device_id, as the native layer passes it.</summary>
    internal readonly long Packed;

    internal Device(long packed) {
      Packed = packed;
    }

    public Device(int deviceType, int deviceId = 0) {
      Packed = ((long)(uint)deviceType << 32) | (uint)deviceId;
    }

    public int DeviceType { get { return (int)((ulong)Packed >> 32); } }
    public int DeviceId { get { return (int)(uint)(Packed & 0xffffffffL); } }

    // Every DLPack device type of the header (DLDeviceType), as constants: SWIG copies the values
    // from dlpack.h into the generated module. A type not listed here is still a Device.
    public const int TypeCpu = DLBridgeNative.kDLCPU;
    public const int TypeCuda = DLBridgeNative.kDLCUDA;
    public const int TypeCudaHost = DLBridgeNative.kDLCUDAHost;
    public const int TypeOpenCL = DLBridgeNative.kDLOpenCL;
    public const int TypeVulkan = DLBridgeNative.kDLVulkan;
    public const int TypeMetal = DLBridgeNative.kDLMetal;
    public const int TypeVpi = DLBridgeNative.kDLVPI;
    public const int TypeRocm = DLBridgeNative.kDLROCM;
    public const int TypeRocmHost = DLBridgeNative.kDLROCMHost;
    public const int TypeExtDev = DLBridgeNative.kDLExtDev;
    public const int TypeCudaManaged = DLBridgeNative.kDLCUDAManaged;
    public const int TypeOneApi = DLBridgeNative.kDLOneAPI;
    public const int TypeWebGpu = DLBridgeNative.kDLWebGPU;
    public const int TypeHexagon = DLBridgeNative.kDLHexagon;
    public const int TypeMaia = DLBridgeNative.kDLMAIA;
    public const int TypeTrn = DLBridgeNative.kDLTrn;
    public const int TypeTpu = DLBridgeNative.kDLTPU;
    public const int TypeTpuHost = DLBridgeNative.kDLTPUHost;

    public static readonly Device Cpu = new Device(TypeCpu, 0);
    public static readonly Device CudaHost = new Device(TypeCudaHost, 0);
    public static readonly Device CudaManaged = new Device(TypeCudaManaged, 0);
    public static Device Cuda(int id = 0) { return new Device(TypeCuda, id); }
    public static Device OpenCL(int id = 0) { return new Device(TypeOpenCL, id); }

    /// <summary>Parses "cpu", "cuda:1", "opencl:0", "device_type_N:ID" (the core's rule).</summary>
    public static Device Parse(string text) {
      long[] outValue = new long[1];
      DLBridgeNative.dlb_device_parse(text, outValue);
      return new Device(outValue[0]);
    }

    /// <summary>True when imports accept this device type: one DLPack defines, or one a backend
    /// is registered for.</summary>
    public bool IsTypeKnown { get { return DLBridgeNative.dlb_device_type_is_known(DeviceType) != 0; } }

    /// <summary>True when a backend serves this device type now (always for the CPU; CUDA and
    /// OpenCL register theirs on first use).</summary>
    public bool HasBackend { get { return DLBridgeNative.dlb_backend_is_registered(DeviceType) != 0; } }

    /// <summary>True when the host CPU can read this device's memory directly.</summary>
    public bool IsHostReadable { get { return DLBridgeNative.dlb_device_is_host_readable(Packed) != 0; } }

    /// <summary>The core's name of the device type ("cuda"), or null for one DLPack does not
    /// define.</summary>
    public string TypeName { get { return DLBridgeNative.dlb_device_type_name(DeviceType); } }

    /// <summary>Waits until the work queued on <paramref name="stream"/> (IntPtr.Zero: all work
    /// on this device) is done. A no-op for the CPU.</summary>
    public void Synchronize(IntPtr stream = default(IntPtr)) {
      DLBridgeNative.dlb_device_synchronize(Packed, stream.ToInt64());
    }

    /// <summary>"cpu", "cuda:1", "device_type_25:0" (the core's format).</summary>
    public override string ToString() {
      byte[] buffer = new byte[DLBridgeNative.DLB_DEVICE_NAME_SIZE];
      DLBridgeNative.dlb_device_format(Packed, buffer);
      return DType.Text(buffer);
    }

    public bool Equals(Device other) { return Packed == other.Packed; }
    public override bool Equals(object obj) { return obj is Device && Equals((Device)obj); }
    public override int GetHashCode() { return Packed.GetHashCode(); }
    public static bool operator ==(Device a, Device b) { return a.Packed == b.Packed; }
    public static bool operator !=(Device a, Device b) { return a.Packed != b.Packed; }
  }
}
