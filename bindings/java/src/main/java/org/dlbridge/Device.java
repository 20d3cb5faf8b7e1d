package org.dlbridge;

/**
 * A DLPack device: a (device type, device id) value. Not an enum: device types this class has no
 * constant for still round-trip.
 */
public final class Device {
  public static final int TYPE_CPU = 1;
  public static final int TYPE_CUDA = 2;
  public static final int TYPE_CUDA_HOST = 3;
  public static final int TYPE_OPENCL = 4;
  public static final int TYPE_VULKAN = 7;
  public static final int TYPE_METAL = 8;
  public static final int TYPE_VPI = 9;
  public static final int TYPE_ROCM = 10;
  public static final int TYPE_ROCM_HOST = 11;
  public static final int TYPE_EXT_DEV = 12;
  public static final int TYPE_CUDA_MANAGED = 13;
  public static final int TYPE_ONE_API = 14;
  public static final int TYPE_WEBGPU = 15;
  public static final int TYPE_HEXAGON = 16;
  public static final int TYPE_MAIA = 17;
  public static final int TYPE_TRN = 18;

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
    return type == TYPE_CPU || type == TYPE_CUDA_HOST || type == TYPE_CUDA_MANAGED
        || type == TYPE_ROCM_HOST;
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

  @Override
  public String toString() {
    return "device(" + type + ":" + id + ")";
  }
}
