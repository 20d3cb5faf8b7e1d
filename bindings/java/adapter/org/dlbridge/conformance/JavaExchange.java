package org.dlbridge.conformance;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.stream.LongStream;
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

  /** data + byte_offset of the DLManagedTensorVersioned at {@code address} (read in C). */
  static native long firstElement(long address);

  /** Element i of every base tensor: the runner's interop_base_value, mirrored. */
  private static double baseValue(long code, long i) {
    return code == 1 ? i * 3 + 1 : code == 2 ? (i * 3 - 4) / 2.0 : i * 3 - 4;
  }

  /**
   * The base tensor: a direct ByteBuffer wrapped without a copy, so the memory is Java's and its
   * release (a token the binding drains; nothing enters the JVM) may run on a consumer's thread.
   */
  private static Tensor makeBase(long[] c) {
    long[] shape = Arrays.copyOfRange(c, BASE_SHAPE, BASE_SHAPE + (int) c[BASE_NDIM]);
    int n = Math.toIntExact(LongStream.of(shape).reduce(1, Math::multiplyExact));
    DType dtype = DType.of((int) c[CODE], (int) c[BITS], 1);
    ByteBuffer b = ByteBuffer.allocateDirect(n * (int) c[BITS] / 8).order(ByteOrder.nativeOrder());
    for (int i = 0; i < n; i++) {
      double v = baseValue(c[CODE], i);
      switch (dtype.toString()) {
        case "float32" -> b.putFloat((float) v);
        case "float64" -> b.putDouble(v);
        case "int32" -> b.putInt((int) v);
        case "int64" -> b.putLong((long) v);
        case "uint8" -> b.put((byte) v);
        default -> throw new IllegalArgumentException("dtype " + dtype + " not in the adapter");
      }
    }
    return Tensor.wrap(b.rewind(), dtype, shape);
  }

  private static long none(long v) {
    return v == Long.MIN_VALUE ? Tensor.NONE : v;
  }

  /** out: [0] the exported address (0 when refused), [1] status, [2] the base's first element. */
  static String produce(long[] c, boolean legacy, long[] out) {
    if (c[OP] < 0 || c[OP] > 5) {
      out[1] = -1;
      return "unknown op " + c[OP];
    }
    String stage = "produce";
    Tensor base = null;
    Tensor t = null;
    try {
      base = makeBase(c);
      out[2] = firstElement(base.address());
      stage = "op";
      t = switch ((int) c[OP]) {
        case 0 -> base;
        case 1 -> base.transpose();
        case 2 -> base.slice(Slice.of(none(c[OP_ARGS]), none(c[OP_ARGS + 1]), c[OP_ARGS + 2]));
        case 3 -> base.select((int) c[OP_ARGS], c[OP_ARGS + 1]);
        case 4 -> base.shareReadOnly();
        default -> base.copyTo(Device.CPU);
      };
      if (c[OP] == 5) {
        out[2] = firstElement(t.address());
      }
      stage = legacy ? "exportLegacy" : "exportVersioned";
      out[0] = legacy ? t.exportLegacy() : t.exportVersioned();
      return null;
    } catch (DLPackException e) {
      out[1] = e.getStatus();
      return stage + ": " + e.getMessage();
    } finally {
      // close() does nothing to a tensor already exported; a view holds its own reference.
      if (t != null) {
        t.close();
      }
      if (base != null) {
        base.close();
      }
    }
  }
}
