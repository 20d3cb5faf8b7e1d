package org.dlbridge;

/**
 * A DLPack device: a (device type, device id) value. Not an enum: device types this class has no
 * constant for still round-trip. Names, parsing and host readability are the core's
 * ({@code dlb_device_format}, {@code dlb_device_parse}, {@code dlb_device_is_host_readable}).
 */
public final class Device {
  /** DLPack device type: the host CPU. */
  public static final int TYPE_CPU = DLBridgeNativeConstants.kDLCPU;
  /** DLPack device type: CUDA device memory. */
  public static final int TYPE_CUDA = DLBridgeNativeConstants.kDLCUDA;
  /** DLPack device type: CUDA pinned host memory. */
  public static final int TYPE_CUDA_HOST = DLBridgeNativeConstants.kDLCUDAHost;
  /** DLPack device type: OpenCL device memory. */
  public static final int TYPE_OPENCL = DLBridgeNativeConstants.kDLOpenCL;
  /** DLPack device type: Vulkan buffers. */
  public static final int TYPE_VULKAN = DLBridgeNativeConstants.kDLVulkan;
  /** DLPack device type: Metal buffers. */
  public static final int TYPE_METAL = DLBridgeNativeConstants.kDLMetal;
  /** DLPack device type: Verilog simulator buffers. */
  public static final int TYPE_VPI = DLBridgeNativeConstants.kDLVPI;
  /** DLPack device type: ROCm device memory. */
  public static final int TYPE_ROCM = DLBridgeNativeConstants.kDLROCM;
  /** DLPack device type: ROCm pinned host memory. */
  public static final int TYPE_ROCM_HOST = DLBridgeNativeConstants.kDLROCMHost;
  /** DLPack device type: a reserved extension device. */
  public static final int TYPE_EXT_DEV = DLBridgeNativeConstants.kDLExtDev;
  /** DLPack device type: CUDA managed (unified) memory. */
  public static final int TYPE_CUDA_MANAGED = DLBridgeNativeConstants.kDLCUDAManaged;
  /** DLPack device type: oneAPI (SYCL) memory. */
  public static final int TYPE_ONE_API = DLBridgeNativeConstants.kDLOneAPI;
  /** DLPack device type: WebGPU buffers. */
  public static final int TYPE_WEBGPU = DLBridgeNativeConstants.kDLWebGPU;
  /** DLPack device type: Qualcomm Hexagon DSP memory. */
  public static final int TYPE_HEXAGON = DLBridgeNativeConstants.kDLHexagon;
  /** DLPack device type: Microsoft MAIA memory. */
  public static final int TYPE_MAIA = DLBridgeNativeConstants.kDLMAIA;
  /** DLPack device type: AWS Trainium memory. */
  public static final int TYPE_TRN = DLBridgeNativeConstants.kDLTrn;
  /** DLPack device type: TPU device memory. */
  public static final int TYPE_TPU = DLBridgeNativeConstants.kDLTPU;
  /** DLPack device type: TPU host memory. */
  public static final int TYPE_TPU_HOST = DLBridgeNativeConstants.kDLTPUHost;

  /** The host CPU. */
  public static final Device CPU = new Device(TYPE_CPU, 0);

  private final int type;
  private final int id;

  private Device(int type, int id) {
    this.type = type;
    this.id = id;
  }

  /**
   * Any (device type, device id).
   *
   * @param type a DLPack device type, such as {@link #TYPE_CUDA}
   * @param id the device's index among those of its type
   * @return the device ({@link #CPU} for the CPU)
   */
  public static Device of(int type, int id) {
    return type == TYPE_CPU && id == 0 ? CPU : new Device(type, id);
  }

  /**
   * CUDA device {@code id}.
   *
   * @param id the CUDA device's index
   * @return the device
   */
  public static Device cuda(int id) {
    return new Device(TYPE_CUDA, id);
  }

  /**
   * OpenCL device {@code id} (over all platforms, as {@link DLBridge#openclDeviceCount()} counts).
   *
   * @param id the OpenCL device's index
   * @return the device
   */
  public static Device opencl(int id) {
    return new Device(TYPE_OPENCL, id);
  }

  /**
   * Parses "cpu", "cuda:1", "opencl:0", "device_type_N:ID" (the core's dlb_device_parse).
   *
   * @param text the device's name
   * @return the device
   */
  public static Device parse(String text) {
    long[] out = new long[1];
    DLBridgeNative.dlb_device_parse(text, out);
    return fromPacked(out[0]);
  }

  static Device fromPacked(long packed) {
    return of((int) (packed >>> 32), (int) packed);
  }

  long packed() {
    return ((long) type << 32) | (id & 0xffffffffL);
  }

  /**
   * The DLPack device type.
   *
   * @return one of the {@code TYPE_*} constants, or a type this class does not name
   */
  public int type() {
    return type;
  }

  /**
   * The device's index among those of its type.
   *
   * @return the device id
   */
  public int id() {
    return id;
  }

  /**
   * Whether the host CPU can read this device's memory directly.
   *
   * @return true for the CPU, CUDA/ROCm pinned and CUDA managed memory
   */
  public boolean isHostReadable() {
    return DLBridgeNative.dlb_device_is_host_readable(packed()) != 0;
  }

  /** Waits until all work queued on this device is done (a no-op for the CPU). */
  public void synchronize() {
    synchronize(0L);
  }

  /**
   * Waits until the work queued on {@code stream} (a cudaStream_t or cl_command_queue of this
   * device; 0: all work on the device) is done.
   *
   * @param stream the stream or queue, 0 for the whole device
   */
  public void synchronize(long stream) {
    DLBridgeNative.dlb_device_synchronize(packed(), stream);
  }

  /**
   * Equal when device type and id are equal.
   *
   * @param o the object compared
   * @return true for a Device of the same value
   */
  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Device)) {
      return false;
    }
    Device d = (Device) o;
    return d.type == type && d.id == id;
  }

  /**
   * A hash of device type and id.
   *
   * @return the hash code
   */
  @Override
  public int hashCode() {
    return type * 31 + id;
  }

  /**
   * "cpu", "cuda:1", "device_type_25:0" (the core's dlb_device_format).
   *
   * @return the device's name
   */
  @Override
  public String toString() {
    byte[] text = new byte[DLBridgeNativeConstants.DLB_DEVICE_NAME_SIZE];
    DLBridgeNative.dlb_device_format(packed(), text);
    return DType.cString(text);
  }
}
