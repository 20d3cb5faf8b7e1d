package org.dlbridge;

/**
 * Views and copies: each a new reference the caller owns (dlb_tensor_share, slice, select,
 * reshape, permute, transpose, copy), or a copy into an existing tensor. Callers hold the
 * source's lock.
 */
final class Views {
  private Views() {}

  static long share(long h, boolean readOnly) {
    return DLBridgeNative.dlb_tensor_share(h,
        readOnly ? DLBridgeNativeConstants.DLPACK_FLAG_BITMASK_READ_ONLY : 0L);
  }

  /** The slices as the core's (start, stop, step) triples. */
  static long slice(long h, Slice[] slices) {
    if (slices == null) {
      throw new IllegalArgumentException("slices is null");
    }
    long[] triples = new long[3 * slices.length];
    for (int i = 0; i < slices.length; i++) {
      if (slices[i] == null) {
        throw new IllegalArgumentException(
            "slice " + i + " is null (use Slice.ALL for a whole dimension)");
      }
      triples[3 * i] = slices[i].start();
      triples[3 * i + 1] = slices[i].stop();
      triples[3 * i + 2] = slices[i].step();
    }
    return DLBridgeNative.dlb_tensor_slice(h, triples);
  }

  static long select(long h, int axis, long index) {
    return DLBridgeNative.dlb_tensor_select(h, axis, index);
  }

  static long reshape(long h, long[] shape) {
    return DLBridgeNative.dlb_tensor_reshape(h, shape);
  }

  static long permute(long h, int[] axes) {
    return DLBridgeNative.dlb_tensor_permute(h, axes);
  }

  static long transpose(long h) {
    return DLBridgeNative.dlb_tensor_transpose(h);
  }

  /** A compact copy on {@code device}, queued on {@code stream} (0: complete on return). */
  static long copyTo(long h, Device device, long stream) {
    return DLBridgeNative.dlb_tensor_copy_async(h, device.packed(), stream);
  }

  /** Copies the elements of {@code src} into {@code dst} (0: complete on return). */
  static void copyInto(Tensor src, Tensor dst, long stream) {
    src.state.use(s -> dst.state.use(d ->
        DLBridgeNative.dlb_tensor_copy_into_async(s, d, stream)));
  }
}
