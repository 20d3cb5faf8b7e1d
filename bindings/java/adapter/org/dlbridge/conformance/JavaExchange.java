package org.dlbridge.conformance;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.dlbridge.DLPackException;
import org.dlbridge.DType;
import org.dlbridge.Device;
import org.dlbridge.Slice;
import org.dlbridge.Tensor;

/**
 * The interop matrix's Java producer: the exchange extension of the Java adapter's one table
 * (bindings/java/adapter/adapter_java.c presents it, with {@link JavaSubject}'s consumer, as a
 * dlpc_subject to any host, the Java host and a native host that starts a JVM alike). It makes
 * each case with the dlbridge Java binding's public API.
 *
 * <p>A case arrives as the 17 int64 fields of dlpc_exchange_case after its name, in order:
 * dtype_code, dtype_bits, base_ndim, base_shape[2], op, op_args[3], ndim, shape[2], strides[2],
 * first, flags, legacy_refused. produce returns null when all went well, else the reason.
 */
final class JavaExchange {
  private JavaExchange() {}

  private static final int CODE = 0;
  private static final int BITS = 1;
  private static final int BASE_NDIM = 2;
  private static final int BASE_SHAPE = 3;
  private static final int OP = 5;
  private static final int OP_ARGS = 6;

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
        throw new IllegalArgumentException("dtype " + dtype + " not in the adapter");
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
}
