package org.dlbridge;

import java.nio.ByteBuffer;
import java.util.function.Consumer;

/** Making tensors: allocate, wrap a direct ByteBuffer, from a Java array. */
final class Create {
  private static final long CPU = Device.CPU.packed();

  private Create() {}

  static Tensor allocate(Device device, DType dtype, long[] shape, long[] strides, long flags) {
    // Compact ranks 0 to 4 pass their extents as arguments (dlbridge.i's shared fast path, as
    // wrap below); every other tensor, and a null shape, takes the general call.
    int ndim = shape != null ? shape.length : -1;
    if (strides == null && ndim >= 0 && ndim <= DLBridgeNative.DLBX_EXTENTS_BY_VALUE) {
      return new Tensor(DLBridgeNative.dlbx_tensor_allocate_compact(device.packed(),
          dtype.packed(), ndim, extent(shape, 0), extent(shape, 1), extent(shape, 2),
          extent(shape, 3), flags));
    }
    return new Tensor(DLBridgeNative.dlb_tensor_allocate(device.packed(), dtype.packed(), shape,
        strides, flags));
  }

  /** Extent {@code i} of a shape of at most four, 0 past its end (the fast path's arguments). */
  private static long extent(long[] shape, int i) {
    return i < shape.length ? shape[i] : 0;
  }

  static Tensor allocateShareable(Device device, DType dtype, long[] shape) {
    return new Tensor(DLBridgeNative.dlb_tensor_allocate_shareable(device.packed(), dtype.packed(),
        shape, null, 0L));
  }

  /**
   * Wraps {@code buffer} from its position, zero-copy. The release token is a new slot, which
   * keeps the buffer reachable until the core releases the memory: on any thread, after every
   * view, share and foreign consumer has let go. The core checks that the elements lie inside
   * the buffer before anything is built; on error nothing changed hands.
   */
  static Tensor wrap(ByteBuffer buffer, DType dtype, long[] shape, long flags) {
    if (buffer != null && !buffer.isDirect()) {
      throw new IllegalArgumentException("Tensor.wrap needs a direct ByteBuffer");
    }
    int position = buffer != null ? buffer.position() : 0;
    long wrapFlags = buffer != null && buffer.isReadOnly() ? flags | Tensor.FLAG_READ_ONLY : flags;
    int slot = Slots.acquire();
    long h;
    try {
      // Ranks 0 to 4 pass their extents as arguments (the shared fast path of dlbridge.i: the
      // same core call, no long[] for JNI to read: about 20 ns of a 75 ns wrap + close,
      // docs/java.md).
      int ndim = shape != null ? shape.length : -1;
      h = ndim >= 0 && ndim <= DLBridgeNative.DLBX_EXTENTS_BY_VALUE
          ? DLBridgeNative.dlbx_tensor_wrap_compact(buffer, ndim, extent(shape, 0),
              extent(shape, 1), extent(shape, 2), extent(shape, 3), CPU, dtype.packed(),
              position, wrapFlags, Lifecycle.token(slot))
          : DLBridgeNative.dlbx_tensor_wrap(buffer, shape, null, CPU, dtype.packed(), position,
              wrapFlags, Lifecycle.token(slot));
    } catch (RuntimeException | Error e) {
      Slots.release(slot); // refused: the token was not handed out
      throw e;
    }
    // The buffer is reachable through this frame until the slot holds it (in the new State).
    return new Tensor(h, slot, buffer);
  }

  /** A compact CPU tensor of {@code shape} filled from a Java array by {@code fill}. */
  static Tensor fromArray(DType dtype, long[] shape, Consumer<Lifecycle.State> fill) {
    Tensor t = allocate(Device.CPU, dtype, shape, null, 0L);
    try {
      fill.accept(t.state);
    } catch (RuntimeException | Error e) {
      t.close(); // the core refused the array (its size): the tensor goes with it
      throw e;
    }
    return t;
  }
}
