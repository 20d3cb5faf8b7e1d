package org.dlbridge;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Host access to a tensor's elements, each through one core rule: typed buffers over the memory
 * (dlb_tensor_host_elements; raw bytes: dlb_tensor_host_data), copies to and from Java arrays
 * of any layout and device (dlb_tensor_copy_to_host / copy_from_host, one call each), one
 * element at an index (dlb_tensor_host_elements for the dtype, dlb_tensor_element_data). The core checks the dtype, the size, the
 * layout, the device and READ_ONLY, with its own messages; Java only says which dtype its array
 * holds. A Java integer type stands for the signed and the unsigned dtype of its width
 * ({@link Lifecycle.State#javaType}). Each method counts itself in as a call on the tensor
 * while it uses the handle ({@link Lifecycle.Owner}).
 */
final class Access {
  private static final long READ = DLBridgeNativeConstants.DLB_ACCESS_READ;
  private static final long WRITE = DLBridgeNativeConstants.DLB_ACCESS_WRITE;

  private Access() {}

  // ---- buffers over the memory -----------------------------------------------------------------

  /**
   * A direct buffer (native byte order) over the elements of {@code s} as {@code dtype}
   * (signed or unsigned: see {@link Lifecycle.State#javaType}), each {@code elementSize} bytes;
   * its raw bytes when {@code dtype} is null. {@code writable} asks the core for write access
   * (refused for a READ_ONLY tensor), false gives a read-only buffer, null: writable unless the
   * tensor is READ_ONLY. The buffer holds its own reference to the memory (a share, released
   * once the buffer and every buffer derived from it are unreachable).
   */
  static ByteBuffer buffer(Lifecycle.State s, DType signed, DType unsigned, int elementSize,
      Boolean writable) {
    long h = s.enter();
    try {
      boolean write = writable != null ? writable : DLBridgeNative.dlb_tensor_is_read_only(h) == 0;
      DType dtype = signed == null ? null : s.javaType(h, signed, unsigned);
      long ref = DLBridgeNative.dlb_tensor_share(h, 0L);
      ByteBuffer b;
      try {
        long[] data = new long[1];
        long[] n = new long[1];
        long bytes;
        if (dtype == null) {
          DLBridgeNative.dlb_tensor_host_data(ref, write ? 1 : 0, data, n);
          bytes = n[0];
        } else {
          DLBridgeNative.dlb_tensor_host_elements(ref, dtype.packed(), write ? WRITE : READ, data,
              n);
          bytes = n[0] * elementSize;
        }
        b = DLBridgeNative.dlbx_java_buffer(data[0], bytes);
      } catch (RuntimeException | Error e) {
        Lifecycle.free(ref);
        throw e;
      }
      Lifecycle.State.of(b, ref); // the buffer owns `ref` now
      b.order(ByteOrder.nativeOrder());
      return write ? b : b.asReadOnlyBuffer().order(ByteOrder.nativeOrder());
    } finally {
      s.exit();
    }
  }

  // ---- copies to and from Java arrays ----------------------------------------------------------

  /** The element count as a Java array length. */
  private static int arrayLength(long h) {
    long[] n = new long[1];
    DLBridgeNative.dlb_tensor_element_count(h, n);
    if (n[0] > Integer.MAX_VALUE) {
      throw new DLPackException(Status.OVERFLOW,
          "the tensor's " + n[0] + " elements do not fit in a Java array");
    }
    return (int) n[0];
  }

  static float[] toFloats(Lifecycle.State s) {
    return s.use(h -> {
      float[] out = new float[arrayLength(h)];
      DLBridgeNative.dlbx_java_to_floats(h, DType.FLOAT32.packed(), out);
      return out;
    });
  }

  static double[] toDoubles(Lifecycle.State s) {
    return s.use(h -> {
      double[] out = new double[arrayLength(h)];
      DLBridgeNative.dlbx_java_to_doubles(h, DType.FLOAT64.packed(), out);
      return out;
    });
  }

  /** int8, uint8 or (as {@code bool}) bool elements. */
  static byte[] toBytes(Lifecycle.State s, boolean bool) {
    return s.use(h -> {
      byte[] out = new byte[arrayLength(h)];
      DType dtype = bool ? DType.BOOL : s.javaType(h, DType.INT8, DType.UINT8);
      DLBridgeNative.dlbx_java_to_bytes(h, dtype.packed(), out);
      return out;
    });
  }

  static short[] toShorts(Lifecycle.State s) {
    return s.use(h -> {
      short[] out = new short[arrayLength(h)];
      DType dtype = s.javaType(h, DType.INT16, DType.UINT16);
      DLBridgeNative.dlbx_java_to_shorts(h, dtype.packed(), out);
      return out;
    });
  }

  static char[] toChars(Lifecycle.State s) {
    return s.use(h -> {
      char[] out = new char[arrayLength(h)];
      DLBridgeNative.dlbx_java_to_chars(h, DType.UINT16.packed(), out);
      return out;
    });
  }

  static int[] toInts(Lifecycle.State s) {
    return s.use(h -> {
      int[] out = new int[arrayLength(h)];
      DLBridgeNative.dlbx_java_to_ints(h, s.javaType(h, DType.INT32, DType.UINT32).packed(), out);
      return out;
    });
  }

  static long[] toLongs(Lifecycle.State s) {
    return s.use(h -> {
      long[] out = new long[arrayLength(h)];
      DLBridgeNative.dlbx_java_to_longs(h, s.javaType(h, DType.INT64, DType.UINT64).packed(), out);
      return out;
    });
  }

  static boolean[] toBooleans(Lifecycle.State s) {
    byte[] bytes = toBytes(s, true);
    boolean[] out = new boolean[bytes.length];
    for (int i = 0; i < bytes.length; i++) {
      out[i] = bytes[i] != 0;
    }
    return out;
  }

  static void from(Lifecycle.State s, float[] src) {
    s.use(h -> {
      DLBridgeNative.dlbx_java_from_floats(h, DType.FLOAT32.packed(), src);
      return null;
    });
  }

  static void from(Lifecycle.State s, double[] src) {
    s.use(h -> {
      DLBridgeNative.dlbx_java_from_doubles(h, DType.FLOAT64.packed(), src);
      return null;
    });
  }

  /** int8, uint8 or (as {@code bool}) bool elements. */
  static void from(Lifecycle.State s, byte[] src, boolean bool) {
    s.use(h -> {
      DType dtype = bool ? DType.BOOL : s.javaType(h, DType.INT8, DType.UINT8);
      DLBridgeNative.dlbx_java_from_bytes(h, dtype.packed(), src);
      return null;
    });
  }

  static void from(Lifecycle.State s, short[] src) {
    s.use(h -> {
      DType dtype = s.javaType(h, DType.INT16, DType.UINT16);
      DLBridgeNative.dlbx_java_from_shorts(h, dtype.packed(), src);
      return null;
    });
  }

  static void from(Lifecycle.State s, char[] src) {
    s.use(h -> {
      DLBridgeNative.dlbx_java_from_chars(h, DType.UINT16.packed(), src);
      return null;
    });
  }

  static void from(Lifecycle.State s, int[] src) {
    s.use(h -> {
      DLBridgeNative.dlbx_java_from_ints(h, s.javaType(h, DType.INT32, DType.UINT32).packed(), src);
      return null;
    });
  }

  static void from(Lifecycle.State s, long[] src) {
    s.use(h -> {
      DType dtype = s.javaType(h, DType.INT64, DType.UINT64);
      DLBridgeNative.dlbx_java_from_longs(h, dtype.packed(), src);
      return null;
    });
  }

  /** bool elements as the bytes 0 and 1 (null stays null: the core refuses it). */
  static byte[] bytesOf(boolean[] values) {
    if (values == null) {
      return null;
    }
    byte[] bytes = new byte[values.length];
    for (int i = 0; i < values.length; i++) {
      bytes[i] = (byte) (values[i] ? 1 : 0);
    }
    return bytes;
  }

  // ---- one element -----------------------------------------------------------------------------
  // One JNI call each (dlbx_java_get/set, native/java_memory.i): the core's dtype check, as a
  // typed view of any layout makes it (dlb_tensor_host_elements), then its index, device and
  // READ_ONLY checks and the element's address (dlb_tensor_element_data).

  /** The bytes of the element at {@code index}, sign-extended. */
  static long get(Lifecycle.State s, DType signed, DType unsigned, long[] index) {
    long[] out = new long[1];
    long h = s.enter();
    try {
      DLBridgeNative.dlbx_java_get(h, s.javaType(h, signed, unsigned).packed(), index, out);
    } finally {
      s.exit();
    }
    return out[0];
  }

  /** Writes the low bytes of {@code bits} (as many as an element has) at {@code index}. */
  static void set(Lifecycle.State s, DType signed, DType unsigned, long[] index, long bits) {
    long h = s.enter();
    try {
      DLBridgeNative.dlbx_java_set(h, s.javaType(h, signed, unsigned).packed(), index,
          bits);
    } finally {
      s.exit();
    }
  }
}
