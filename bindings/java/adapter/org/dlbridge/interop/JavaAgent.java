package org.dlbridge.interop;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.dlbridge.DLBridge;
import org.dlbridge.DLPackException;
import org.dlbridge.DType;
import org.dlbridge.Device;
import org.dlbridge.Slice;
import org.dlbridge.Tensor;

/**
 * The Java agent of the interop matrix: produces and consumes tensors with the dlbridge Java
 * binding's public API. The Java adapter's native library (bindings/java/adapter/adapter_java.c)
 * presents these methods as an interop_agent to any host, the Java host and the C host (which
 * starts a JVM) alike.
 *
 * <p>A case arrives as the 17 int64 fields of interop_case after its name, in order: dtype_code,
 * dtype_bits, base_ndim, base_shape[2], op, op_args[3], ndim, shape[2], strides[2], first,
 * flags, legacy_refused. Each entry point returns null when all went well, else the reason.
 */
public final class JavaAgent {
  private JavaAgent() {}

  private static final int CODE = 0;
  private static final int BITS = 1;
  private static final int BASE_NDIM = 2;
  private static final int BASE_SHAPE = 3;
  private static final int OP = 5;
  private static final int OP_ARGS = 6;
  private static final int NDIM = 9;
  private static final int SHAPE = 10;
  private static final int STRIDES = 12;
  private static final int FIRST = 14;
  private static final int FLAGS = 15;

  /** data + byte_offset of the DLManagedTensorVersioned at {@code address} (the adapter reads it). */
  static native long firstElement(long address);

  static double baseValue(long code, long i) {
    if (code == 1) {
      return i * 3 + 1;
    }
    if (code == 2) {
      return (i * 3 - 4) / 2.0;
    }
    return i * 3 - 4;
  }

  static double expectedValue(long[] c, long k) {
    long pos = c[FIRST];
    for (int d = (int) c[NDIM] - 1; d >= 0; d--) {
      pos += (k % c[SHAPE + d]) * c[STRIDES + d];
      k /= c[SHAPE + d];
    }
    return baseValue(c[CODE], pos);
  }

  static long liveCount() {
    return DLBridge.liveCount();
  }

  /**
   * The base tensor: a direct ByteBuffer wrapped without a copy, so the memory is Java's and its
   * release (a token the binding drains; nothing enters the JVM) may run on a consumer's thread.
   */
  private static Tensor makeBase(long[] c) {
    long[] shape = Arrays.copyOfRange(c, BASE_SHAPE, BASE_SHAPE + (int) c[BASE_NDIM]);
    int n = 1;
    for (long e : shape) {
      n *= (int) e;
    }
    DType dtype = DType.of((int) c[CODE], (int) c[BITS], 1);
    ByteBuffer b = ByteBuffer.allocateDirect(n * (int) (c[BITS] / 8)).order(ByteOrder.nativeOrder());
    for (int i = 0; i < n; i++) {
      double v = baseValue(c[CODE], i);
      if (dtype.equals(DType.FLOAT32)) {
        b.putFloat((float) v);
      } else if (dtype.equals(DType.FLOAT64)) {
        b.putDouble(v);
      } else if (dtype.equals(DType.INT32)) {
        b.putInt((int) v);
      } else if (dtype.equals(DType.INT64)) {
        b.putLong((long) v);
      } else if (dtype.equals(DType.UINT8)) {
        b.put((byte) (long) v);
      } else {
        throw new IllegalArgumentException("dtype " + dtype + " not in the agent");
      }
    }
    b.rewind();
    return Tensor.wrap(b, dtype, shape);
  }

  private static long none(long v) {
    return v == Long.MIN_VALUE ? Tensor.NONE : v;
  }

  /** out: [0] the exported address (0 when refused), [1] status, [2] the base's first element. */
  static String produce(long[] c, boolean legacy, long[] out) {
    Tensor base;
    try {
      base = makeBase(c);
    } catch (DLPackException e) {
      out[1] = e.getStatus();
      return "produce: " + e.getMessage();
    }
    out[2] = firstElement(base.address());
    Tensor t;
    try {
      switch ((int) c[OP]) {
        case 0:
          t = base;
          break;
        case 1:
          t = base.transpose();
          break;
        case 2:
          t = base.slice(Slice.of(none(c[OP_ARGS]), none(c[OP_ARGS + 1]), c[OP_ARGS + 2]));
          break;
        case 3:
          t = base.select((int) c[OP_ARGS], c[OP_ARGS + 1]);
          break;
        case 4:
          t = base.shareReadOnly();
          break;
        case 5:
          t = base.copyTo(Device.CPU);
          out[2] = firstElement(t.address());
          break;
        default:
          base.close();
          out[1] = -1;
          return "unknown op " + c[OP];
      }
    } catch (DLPackException e) {
      base.close();
      out[1] = e.getStatus();
      return "op: " + e.getMessage();
    }
    if (t != base) {
      base.close(); // the view holds its own reference
    }
    if (legacy) {
      try {
        out[0] = t.exportLegacy();
      } catch (DLPackException e) {
        t.close(); // a refused export leaves the tensor open, with us
        out[1] = e.getStatus();
        return "exportLegacy: " + e.getMessage();
      }
    } else {
      out[0] = t.exportVersioned();
    }
    return null;
  }

  private static double read(Tensor t, long code, long bits, long[] index) {
    if (code == 2) {
      return bits == 32 ? t.getFloat(index) : t.getDouble(index);
    }
    if (bits == 64) {
      return t.getLong(index);
    }
    if (bits == 32) {
      return t.getInt(index);
    }
    return code == 1 ? t.getByte(index) & 0xff : t.getByte(index);
  }

  /** Writes 0 into one element with the setter of the tensor's dtype. */
  private static void write(Tensor t, long code, long bits, long[] index) {
    if (code == 2 && bits == 32) {
      t.setFloat(0f, index);
    } else if (code == 2) {
      t.setDouble(0.0, index);
    } else if (bits == 64) {
      t.setLong(0L, index);
    } else if (bits == 32) {
      t.setInt(0, index);
    } else {
      t.setByte((byte) 0, index);
    }
  }

  private static String check(Tensor t, long[] c, boolean legacy, long[] out, double[] sum) {
    int nd = (int) c[NDIM];
    long[] wantShape = Arrays.copyOfRange(c, SHAPE, SHAPE + nd);
    long[] wantStrides = Arrays.copyOfRange(c, STRIDES, STRIDES + nd);
    if (!Arrays.equals(t.shape(), wantShape) || !Arrays.equals(t.strides(), wantStrides)) {
      return "layout: shape " + Arrays.toString(t.shape()) + " strides " + Arrays.toString(t.strides())
          + ", expected " + Arrays.toString(wantShape) + " and " + Arrays.toString(wantStrides);
    }
    if (!t.dtype().equals(DType.of((int) c[CODE], (int) c[BITS], 1))) {
      return "dtype " + t.dtype();
    }
    if (t.device().type() != Device.CPU.type() || t.device().id() != 0) {
      return "device " + t.device();
    }
    long wantFlags = legacy ? 0 : c[FLAGS];
    if (t.flags() != wantFlags) {
      return "flags " + t.flags() + ", expected " + wantFlags;
    }
    if ((wantFlags & Tensor.FLAG_IS_COPIED) != 0 && !t.isExclusive()) {
      return "IS_COPIED: the import is not exclusive to its consumer";
    }
    long n = t.elementCount();
    long[] index = new long[nd];
    double s = 0;
    for (long k = 0; k < n; k++) {
      long rest = k;
      for (int d = nd - 1; d >= 0; d--) {
        index[d] = rest % wantShape[d];
        rest /= wantShape[d];
      }
      double v = read(t, c[CODE], c[BITS], index);
      double want = expectedValue(c, k);
      if (v != want) {
        return "values: element " + k + " is " + v + ", expected " + want;
      }
      s += v * (k + 1);
    }
    sum[0] = s;
    if ((c[FLAGS] & Tensor.FLAG_READ_ONLY) != 0) {
      try {
        write(t, c[CODE], c[BITS], new long[nd]);
        out[2] = 0;
      } catch (DLPackException e) {
        out[2] = e.getStatus() == 5 ? 1 : 0; // DLB_ERR_READ_ONLY
      }
    }
    return null;
  }

  /**
   * out: [0] status, [1] the first element as imported, [2] write_refused (-1 not tried);
   * sum[0] the checksum.
   */
  static String consume(long address, long[] c, boolean legacy, boolean freeOnThread, long[] out,
      double[] sum) {
    out[2] = -1;
    Tensor t;
    try {
      t = legacy ? Tensor.importLegacy(address) : Tensor.importVersioned(address);
    } catch (DLPackException e) {
      out[0] = e.getStatus();
      return "import: " + e.getMessage();
    }
    String why;
    try {
      out[1] = firstElement(t.address());
      why = check(t, c, legacy, out, sum);
    } catch (RuntimeException e) {
      why = "check threw " + e;
    } finally {
      if (freeOnThread) {
        Thread th = new Thread(t::close, "interop-free");
        th.start();
        try {
          th.join();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      } else {
        t.close();
      }
    }
    out[0] = why == null ? 0 : -1;
    return why;
  }
}
