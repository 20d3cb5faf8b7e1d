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

    /// <summary>A device from DLPack's <paramref name="deviceType"/> (a <c>Type*</c> constant or any other) and <paramref name="deviceId"/>.</summary>
    public Device(int deviceType, int deviceId = 0) {
      Packed = ((long)(uint)deviceType << 32) | (uint)deviceId;
    }

    /// <summary>DLPack's device type (DLDeviceType: <see cref="TypeCpu"/>, <see cref="TypeCuda"/>, ...).</summary>
    public int DeviceType { get { return (int)((ulong)Packed >> 32); } }
    /// <summary>The device's number among those of its type (0 for the CPU).</summary>
    public int DeviceId { get { return (int)(uint)(Packed & 0xffffffffL); } }

    // Every DLPack device type of the header (DLDeviceType), as constants: SWIG copies the values
    // from dlpack.h into the generated module. A type not listed here is still a Device.
    /// <summary>kDLCPU: host memory.</summary>
    public const int TypeCpu = DLBridgeNative.kDLCPU;
    /// <summary>kDLCUDA: CUDA device memory.</summary>
    public const int TypeCuda = DLBridgeNative.kDLCUDA;
    /// <summary>kDLCUDAHost: pinned host memory (cudaMallocHost).</summary>
    public const int TypeCudaHost = DLBridgeNative.kDLCUDAHost;
    /// <summary>kDLOpenCL: OpenCL buffers.</summary>
    public const int TypeOpenCL = DLBridgeNative.kDLOpenCL;
    /// <summary>kDLVulkan: Vulkan buffers.</summary>
    public const int TypeVulkan = DLBridgeNative.kDLVulkan;
    /// <summary>kDLMetal: Metal buffers.</summary>
    public const int TypeMetal = DLBridgeNative.kDLMetal;
    /// <summary>kDLVPI: Verilog simulator buffers.</summary>
    public const int TypeVpi = DLBridgeNative.kDLVPI;
    /// <summary>kDLROCM: ROCm (AMD GPU) memory.</summary>
    public const int TypeRocm = DLBridgeNative.kDLROCM;
    /// <summary>kDLROCMHost: pinned ROCm host memory.</summary>
    public const int TypeRocmHost = DLBridgeNative.kDLROCMHost;
    /// <summary>kDLExtDev: a reserved extension device type.</summary>
    public const int TypeExtDev = DLBridgeNative.kDLExtDev;
    /// <summary>kDLCUDAManaged: CUDA managed (unified) memory.</summary>
    public const int TypeCudaManaged = DLBridgeNative.kDLCUDAManaged;
    /// <summary>kDLOneAPI: oneAPI (SYCL) unified shared memory.</summary>
    public const int TypeOneApi = DLBridgeNative.kDLOneAPI;
    /// <summary>kDLWebGPU: WebGPU buffers.</summary>
    public const int TypeWebGpu = DLBridgeNative.kDLWebGPU;
    /// <summary>kDLHexagon: Qualcomm Hexagon DSP memory.</summary>
    public const int TypeHexagon = DLBridgeNative.kDLHexagon;
    /// <summary>kDLMAIA: Microsoft MAIA device memory.</summary>
    public const int TypeMaia = DLBridgeNative.kDLMAIA;
    /// <summary>kDLTrn: AWS Trainium device memory.</summary>
    public const int TypeTrn = DLBridgeNative.kDLTrn;
    /// <summary>kDLTPU: TPU device memory.</summary>
    public const int TypeTpu = DLBridgeNative.kDLTPU;
    /// <summary>kDLTPUHost: TPU host memory.</summary>
    public const int TypeTpuHost = DLBridgeNative.kDLTPUHost;

    /// <summary>The CPU (cpu:0).</summary>
    public static readonly Device Cpu = new Device(TypeCpu, 0);
    /// <summary>Pinned CUDA host memory (cuda_host:0).</summary>
    public static readonly Device CudaHost = new Device(TypeCudaHost, 0);
    /// <summary>CUDA managed memory (cuda_managed:0).</summary>
    public static readonly Device CudaManaged = new Device(TypeCudaManaged, 0);
    /// <summary>CUDA device <paramref name="id"/> (cuda:ID).</summary>
    public static Device Cuda(int id = 0) { return new Device(TypeCuda, id); }
    /// <summary>OpenCL device <paramref name="id"/> (opencl:ID; ids number the devices of all platforms in order).</summary>
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

    /// <summary>True when device type and id are equal.</summary>
    public bool Equals(Device other) { return Packed == other.Packed; }
    /// <summary>True when <paramref name="obj"/> is an equal Device.</summary>
    public override bool Equals(object obj) { return obj is Device && Equals((Device)obj); }
    /// <summary>A hash of device type and id.</summary>
    public override int GetHashCode() { return Packed.GetHashCode(); }
    /// <summary>True when device type and id are equal.</summary>
    public static bool operator ==(Device a, Device b) { return a.Packed == b.Packed; }
    /// <summary>True when device type or id differ.</summary>
    public static bool operator !=(Device a, Device b) { return a.Packed != b.Packed; }
  }
}
