package org.dlbridge.conformance;

import java.nio.ByteBuffer;
import java.util.stream.LongStream;
import org.dlbridge.DLPackException;
import org.dlbridge.DType;
import org.dlbridge.Device;
import org.dlbridge.Slice;
import org.dlbridge.Tensor;

/**
 * dlbridge's Java binding as a subject of the DLPack conformance kit, through the binding's
 * public API only. The kit reaches these methods through the Java adapter's native library
 * (bindings/java/adapter/adapter_java.c, which exports dlpack_conformance_subject()); the return
 * codes are dlpack_conformance.h's DLPC_*.
 *
 * <p>Producer: the kit's values are wrapped read-only (Tensor.wrap over a direct buffer on the
 * kit's memory) and copied into a tensor laid out as asked (Tensor.allocate with strides, or a
 * slice of a larger allocation reshaped for an offset), then shared read-only or copied, and
 * exported. Consumer: Tensor.importVersioned / importLegacy, read back with Tensor.copyInto into
 * the kit's buffer (wrapped); the adapter releases it with Tensor.close() and counts with
 * DLBridge.liveCount().
 */
final class JavaSubject {
  static final int OK = 0;
  static final int UNSUPPORTED = 1;
  static final int REFUSED = 2;
  static final int ERROR = 3;

  /** Where consume() puts each number it reports (numbers[]). */
  static final int NDIM = 0;
  static final int WRITABLE = 1;
  static final int VALUES_SIZE = 2;
  static final int ADDRESS = 3;
  static final int SHAPE = 4;
  static final int MAX_NDIM = 8;
  static final int STRIDES = SHAPE + MAX_NDIM;

  private JavaSubject() {}

  private static String why(DLPackException e) {
    return e.getStatusName() + ": " + e.getMessage();
  }

  /**
   * Exports the tensor the kit describes: out[0] = the address of the new DLManagedTensorVersioned
   * (or legacy DLManagedTensor), owned by the kit. Otherwise message[0] says why. {@code values}
   * (null when empty) is the kit's, valid for the call only; {@code strides} null: compact.
   */
  static int produce(int code, int bits, int lanes, long[] shape, long[] strides, long offset,
      long flags, ByteBuffer values, boolean legacy, long[] out, String[] message) {
    // How sub-byte elements are stored (packed, or padded to a byte each): the kit's values and
    // the export share it.
    long layout = flags & Tensor.FLAG_IS_SUBBYTE_TYPE_PADDED;
    DType dtype = DType.of(code, bits, lanes);
    Tensor laidOut = null;
    Tensor result = null;
    try {
      laidOut = layOut(dtype, shape, strides, offset, layout);
      if (values != null) {
        try (Tensor kit = Tensor.wrap(values.asReadOnlyBuffer(), dtype, shape, layout)) {
          laidOut.copyFrom(kit);
        }
      }
      // IS_COPIED: a copy its consumer solely owns.
      result = (flags & Tensor.FLAG_READ_ONLY) != 0 ? laidOut.shareReadOnly()
          : (flags & Tensor.FLAG_IS_COPIED) != 0 ? laidOut.copyTo(Device.CPU) : laidOut;
      try {
        out[0] = legacy ? result.exportLegacy() : result.exportVersioned();
      } catch (DLPackException e) {
        // Only what the legacy struct cannot say (READ_ONLY, sub-byte padding) is refused.
        message[0] = why(e);
        return legacy ? REFUSED : ERROR;
      }
      return OK;
    } catch (DLPackException e) {
      message[0] = why(e);
      return e.getStatusName().equals("DLB_ERR_UNSUPPORTED") ? UNSUPPORTED : ERROR;
    } catch (RuntimeException e) {
      message[0] = e.toString();
      return ERROR;
    } finally {
      // close() does nothing to a tensor already exported.
      if (result != null) {
        result.close();
      }
      if (laidOut != null) {
        laidOut.close();
      }
    }
  }

  /** An uninitialised tensor with the layout asked for. */
  private static Tensor layOut(DType dtype, long[] shape, long[] strides, long offset,
      long layout) {
    if (offset > 0) {
      // A view `offset` elements into a larger allocation.
      long count = LongStream.of(shape).reduce(1, Math::multiplyExact);
      try (Tensor base = Tensor.allocate(Device.CPU, dtype, new long[] {offset + count}, null,
              layout);
          Tensor tail = base.slice(Slice.from(offset))) {
        return tail.reshape(shape);
      }
    }
    return Tensor.allocate(Device.CPU, dtype, shape, strides, layout);
  }

  /**
   * Imports the kit's tensor at {@code address} (ownership moves here in every case). On OK,
   * objects[0] is the Tensor the kit hands back to release(), numbers[] what it reads (see the
   * indexes above; VALUES_SIZE -1: values not read) and {@code values} the elements, compact in
   * C order. Otherwise objects[1] says why.
   */
  static int consume(long address, boolean legacy, ByteBuffer values, long[] numbers,
      Object[] objects) {
    Tensor t;
    try {
      t = legacy ? Tensor.importLegacy(address) : Tensor.importVersioned(address);
    } catch (DLPackException e) {
      objects[1] = why(e); // the import has called the tensor's deleter
      return REFUSED;
    }
    try {
      long[] shape = t.shape();
      long[] strides = t.strides();
      if (shape.length > MAX_NDIM) {
        t.close();
        objects[1] = "ndim " + shape.length + " is more than a report holds";
        return ERROR;
      }
      numbers[NDIM] = shape.length;
      System.arraycopy(shape, 0, numbers, SHAPE, shape.length);
      System.arraycopy(strides, 0, numbers, STRIDES, strides.length);
      numbers[WRITABLE] = t.isReadOnly() ? 0 : 1;
      numbers[ADDRESS] = t.address();
      numbers[VALUES_SIZE] = readValues(t, values);
      objects[0] = t;
      return OK;
    } catch (RuntimeException e) {
      t.close();
      objects[1] = e.toString();
      return ERROR;
    }
  }

  /** Copies t's elements, compact in C order, into {@code values}; their byte count, or -1. */
  private static long readValues(Tensor t, ByteBuffer values) {
    if (t.elementCount() == 0) {
      return 0;
    }
    long layout = t.flags() & Tensor.FLAG_IS_SUBBYTE_TYPE_PADDED;
    try (Tensor compact = Tensor.wrap(values, t.dtype(), t.shape(), layout)) {
      t.copyInto(compact);
      return compact.byteSize();
    }
  }
}
