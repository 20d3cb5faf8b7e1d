package org.dlbridge;

/**
 * A DLPack device: a (device type, device id) value. Not an enum: device types this class has no
 * constant for still round-trip. Names, parsing and host readability are the core's
 * ({@code dlb_device_format}, {@code dlb_device_parse}, {@code dlb_device_is_host_readable}).
 */
public final class Device {
  public static final int TYPE_CPU = DLBridgeNativeConstants.kDLCPU;
  public static final int TYPE_CUDA = DLBridgeNativeConstants.kDLCUDA;
  public static final int TYPE_CUDA_HOST = DLBridgeNativeConstants.kDLCUDAHost;
  public static final int TYPE_OPENCL = DLBridgeNativeConstants.kDLOpenCL;
  public static final int TYPE_VULKAN = DLBridgeNativeConstants.kDLVulkan;
  public static final int TYPE_METAL = DLBridgeNativeConstants.kDLMetal;
  public static final int TYPE_VPI = DLBridgeNativeConstants.kDLVPI;
  public static final int TYPE_ROCM = DLBridgeNativeConstants.kDLROCM;
  public static final int TYPE_ROCM_HOST = DLBridgeNativeConstants.kDLROCMHost;
  public static final int TYPE_EXT_DEV = DLBridgeNativeConstants.kDLExtDev;
  public static final int TYPE_CUDA_MANAGED = DLBridgeNativeConstants.kDLCUDAManaged;
  public static final int TYPE_ONE_API = DLBridgeNativeConstants.kDLOneAPI;
  public static final int TYPE_WEBGPU = DLBridgeNativeConstants.kDLWebGPU;
  public static final int TYPE_HEXAGON = DLBridgeNativeConstants.kDLHexagon;
  public static final int TYPE_MAIA = DLBridgeNativeConstants.kDLMAIA;
  public static final int TYPE_TRN = DLBridgeNativeConstants.kDLTrn;
  public static final int TYPE_TPU = DLBridgeNativeConstants.kDLTPU;
  public static final int TYPE_TPU_HOST = DLBridgeNativeConstants.kDLTPUHost;

  /** The host CPU. */
  public static final Device CPU = new Device(TYPE_CPU, 0);

  private final int type;
  private final int id;

  private Device(int type, int id) {
    this.type = type;
    this.id = id;
  }

  public static Device of(int type, int id) {
    return type == TYPE_CPU && id == 0 ? CPU : new Device(type, id);
  }

  public static Device cuda(int id) {
    return new Device(TYPE_CUDA, id);
  }

  public static Device opencl(int id) {
    return new Device(TYPE_OPENCL, id);
  }

  /** Parses "cpu", "cuda:1", "opencl:0", "device_type_N:ID" (the core's dlb_device_parse). */
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

  public int type() {
    return type;
  }

  public int id() {
    return id;
  }

  /** True for memory the host CPU can read directly (CPU, CUDA/ROCm pinned, CUDA managed). */
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
   */
  public void synchronize(long stream) {
    DLBridgeNative.dlb_device_synchronize(packed(), stream);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Device)) {
      return false;
    }
    Device d = (Device) o;
    return d.type == type && d.id == id;
  }

  @Override
  public int hashCode() {
    return type * 31 + id;
  }

  /** "cpu", "cuda:1", "device_type_25:0" (the core's dlb_device_format). */
  @Override
  public String toString() {
    byte[] text = new byte[DLBridgeNativeConstants.DLB_DEVICE_NAME_SIZE];
    DLBridgeNative.dlb_device_format(packed(), text);
    return DType.cString(text);
  }
}
