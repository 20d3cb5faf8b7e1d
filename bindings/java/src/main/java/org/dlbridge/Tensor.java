package org.dlbridge;

import java.lang.ref.PhantomReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * An owned DLPack tensor (a dlbridge DLManagedTensorVersioned).
 *
 * <p>Ownership: a Tensor owns one reference to its memory. {@link #close()} releases it (calling
 * the DLPack deleter exactly once); a cleanup thread does the same for a tensor nobody closed.
 * Views and {@link #share()}s hold their own references, so they outlive the tensor they came
 * from. {@link #exportVersioned()} / {@link #exportLegacy()} move the reference out to a foreign
 * consumer; the Tensor is closed afterwards. Every method may be called from any thread; using
 * a closed tensor throws {@link IllegalStateException}.
 */
public final class Tensor implements AutoCloseable {
  /** An omitted slice bound, like Python's None. */
  public static final long NONE = Long.MIN_VALUE;

  static final long FLAG_READ_ONLY = 1L;
  static final long FLAG_IS_COPIED = 2L;
  static final long FLAG_IS_SUBBYTE_TYPE_PADDED = 4L;

  /**
   * The native reference of one owner (a Tensor, or an asByteBuffer() buffer), freed at most
   * once: by close(), an export, or the cleanup thread. It is a phantom reference to its owner,
   * and never refers to the owner otherwise. While the owner is open, its slot ({@link Slots})
   * holds this State, which keeps it (and a wrapped buffer) reachable whatever becomes of the
   * owner; the GC then hands it to the cleanup thread once the owner is unreachable. Closing
   * drops it from the slot, so a closed owner costs the GC nothing.
   *
   * <p>A wrapped buffer's release context is the slot. Until the memory gains a second owner the
   * deleter runs inside the free that drops this State's reference, while the slot still holds
   * this State and so the buffer. {@link Tensor#pinLocked()} marks the slot pinned first: from
   * then on the slot passes from this State to the buffer itself when the reference is dropped,
   * and only the deleter's report (see {@link Slots#drain}) frees it.
   */
  static final class State extends PhantomReference<Object> {
    /** Guarded by this; 0 once freed or moved out. */
    private long handle;
    final int slot;
    /**
     * The wrapped buffer (null otherwise), dropped by the thread that took the handle once the
     * slot holds it or the deleter has run, so a closed Tensor never keeps it.
     */
    private ByteBuffer buffer;
    /** Guarded by this; set before the memory of a wrapped buffer gains a second owner. */
    private boolean pinned;

    State(Object owner, long handle, int slot, ByteBuffer buffer) {
      super(owner, Slots.QUEUE);
      this.handle = handle;
      this.slot = slot;
      this.buffer = buffer;
    }

    /** Takes the live handle (0 when there is none): the caller frees or moves it. */
    synchronized long take() {
      long h = handle;
      handle = 0;
      return h;
    }

    /**
     * Gives up this State's slot after its handle was taken and moved out (exported): a pinned
     * slot keeps the buffer until the deleter reports. {@code pinned} is read after take(),
     * which saw every pin.
     */
    void disown() {
      if (pinned) {
        Slots.set(slot, buffer);
      } else {
        Slots.release(slot);
      }
      buffer = null;
    }

    /** Frees the handle taken by take(), then gives up the slot. */
    void free(long h) {
      if (pinned) {
        // Before the free: once it is in, another thread may release and reuse the slot.
        Slots.set(slot, buffer);
        buffer = null;
        Slots.drain(NativeSupport.free(h));
      } else {
        // A sole owner: the free runs the deleter (if any) now, while the slot holds this
        // State and so the buffer.
        int released = NativeSupport.free(h);
        Slots.release(slot);
        buffer = null;
        Slots.drain(released);
      }
    }

    /** The cleanup thread's call, for an owner that became unreachable. */
    void clean() {
      if (Slots.get(slot) != this) {
        return; // closed or moved out already
      }
      long h = take();
      if (h != 0) {
        free(h);
      }
    }
  }

  private final State state;

  /** Owns {@code handle}, a new reference; frees it if no slot can be had. */
  private Tensor(long handle) {
    if (handle == 0) {
      throw new IllegalStateException("null tensor handle");
    }
    int slot;
    try {
      slot = Slots.acquire();
    } catch (RuntimeException | Error e) {
      Slots.drain(NativeSupport.free(handle));
      throw e;
    }
    this.state = new State(this, handle, slot, null);
    Slots.set(slot, state);
  }

  /** Owns {@code handle}, which wraps {@code buffer} with {@code slot} as release context. */
  private Tensor(long handle, int slot, ByteBuffer buffer) {
    this.state = new State(this, handle, slot, buffer);
    Slots.set(slot, state);
  }

  // ---- creation ------------------------------------------------------------------------------

  /** An uninitialised compact tensor on {@code device}. */
  public static Tensor allocate(Device device, DType dtype, long... shape) {
    return new Tensor(DLBridgeNative.dlbx_allocate(device.packed(), dtype.packed(),
        checkShape(shape), 0L));
  }

  /**
   * Wraps a direct ByteBuffer without copying: the tensor's elements start at the buffer's
   * position. The buffer stays reachable until the tensor's deleter runs, even when a foreign
   * consumer holds the tensor. A read-only buffer gives a READ_ONLY tensor.
   */
  public static Tensor wrap(ByteBuffer buffer, DType dtype, long... shape) {
    if (buffer == null || !buffer.isDirect()) {
      throw new IllegalArgumentException("Tensor.wrap needs a direct ByteBuffer");
    }
    int ndim = checkShape(shape).length;
    int slot = Slots.acquire(); // the release context: it must exist before the wrap
    long h;
    try {
      // The common ranks pass their extents as arguments: no array for JNI to read.
      h = ndim <= 4
          ? NativeSupport.wrapDirect4(slot, buffer, buffer.position(), buffer.capacity(),
              dtype.packed(), ndim, ndim > 0 ? shape[0] : 0, ndim > 1 ? shape[1] : 0,
              ndim > 2 ? shape[2] : 0, ndim > 3 ? shape[3] : 0, buffer.isReadOnly())
          : wrapAnyRank(slot, buffer, dtype, shape);
    } catch (RuntimeException | Error e) {
      Slots.release(slot); // refused: no release callback will report this slot
      throw e;
    }
    // The buffer is reachable through this frame until the slot holds it (in the new State).
    return new Tensor(h, slot, buffer);
  }

  private static long wrapAnyRank(int slot, ByteBuffer buffer, DType dtype, long[] shape) {
    // The native side copies the shape (GetLongArrayRegion): no defensive clone needed.
    return NativeSupport.wrapDirect(slot, buffer, buffer.position(), buffer.capacity(),
        dtype.packed(), shape, buffer.isReadOnly());
  }

  public static Tensor fromArray(float[] data, long... shape) {
    Tensor t = allocateFor(DType.FLOAT32, data.length, shape);
    t.fill(b -> b.asFloatBuffer().put(data));
    return t;
  }

  public static Tensor fromArray(double[] data, long... shape) {
    Tensor t = allocateFor(DType.FLOAT64, data.length, shape);
    t.fill(b -> b.asDoubleBuffer().put(data));
    return t;
  }

  /** int8 data. */
  public static Tensor fromArray(byte[] data, long... shape) {
    Tensor t = allocateFor(DType.INT8, data.length, shape);
    t.fill(b -> b.put(data));
    return t;
  }

  /** int16 data. */
  public static Tensor fromArray(short[] data, long... shape) {
    Tensor t = allocateFor(DType.INT16, data.length, shape);
    t.fill(b -> b.asShortBuffer().put(data));
    return t;
  }

  /** int32 data. */
  public static Tensor fromArray(int[] data, long... shape) {
    Tensor t = allocateFor(DType.INT32, data.length, shape);
    t.fill(b -> b.asIntBuffer().put(data));
    return t;
  }

  /** int64 data. */
  public static Tensor fromArray(long[] data, long... shape) {
    Tensor t = allocateFor(DType.INT64, data.length, shape);
    t.fill(b -> b.asLongBuffer().put(data));
    return t;
  }

  /** bool data (one byte per element, 0 or 1). */
  public static Tensor fromArray(boolean[] data, long... shape) {
    Tensor t = allocateFor(DType.BOOL, data.length, shape);
    t.fill(b -> {
      for (boolean v : data) {
        b.put((byte) (v ? 1 : 0));
      }
    });
    return t;
  }

  // ---- exchange ------------------------------------------------------------------------------

  /**
   * Takes ownership of a foreign DLManagedTensorVersioned at {@code address}. The tensor is
   * consumed even when the import fails (its deleter has then already run).
   */
  public static Tensor importVersioned(long address) {
    return new Tensor(DLBridgeNative.dlbx_import(address));
  }

  /** Takes ownership of a foreign legacy DLManagedTensor; consumed even on error. */
  public static Tensor importLegacy(long address) {
    return new Tensor(DLBridgeNative.dlbx_import_legacy(address));
  }

  /**
   * Hands the tensor to a foreign consumer: returns the address of a DLManagedTensorVersioned the
   * consumer now owns (it must call its deleter once). This Tensor is closed afterwards.
   */
  public long exportVersioned() {
    State s = state;
    long h;
    synchronized (s) {
      h = handle();
      pinLocked();
      s.handle = 0;
    }
    s.disown();
    return h;
  }

  /**
   * Hands the tensor to a legacy consumer: returns the address of a DLManagedTensor it now owns.
   * Refused (and this Tensor stays open) for READ_ONLY tensors. This Tensor is closed on success.
   */
  public long exportLegacy() {
    State s = state;
    long legacy;
    synchronized (s) {
      long h = handle();
      pinLocked();
      legacy = DLBridgeNative.dlbx_export_legacy(h); // on error the tensor stays open
      s.handle = 0;
    }
    s.disown();
    return legacy;
  }

  // ---- queries -------------------------------------------------------------------------------

  public long[] shape() {
    synchronized (state) {
      long h = handle();
      long[] out = new long[DLBridgeNative.dlbx_ndim(h)];
      DLBridgeNative.dlbx_get_shape(h, out);
      return out;
    }
  }

  /** Strides in elements (compact row-major ones when the producer sent none). */
  public long[] strides() {
    synchronized (state) {
      long h = handle();
      long[] out = new long[DLBridgeNative.dlbx_ndim(h)];
      DLBridgeNative.dlbx_get_strides(h, out);
      return out;
    }
  }

  public int ndim() {
    synchronized (state) {
      return DLBridgeNative.dlbx_ndim(handle());
    }
  }

  public long elementCount() {
    long n = 1;
    for (long d : shape()) {
      n *= d;
    }
    return n;
  }

  public DType dtype() {
    synchronized (state) {
      return DType.fromPacked(DLBridgeNative.dlbx_dtype(handle()));
    }
  }

  public Device device() {
    synchronized (state) {
      return Device.fromPacked(DLBridgeNative.dlbx_device(handle()));
    }
  }

  /** The DLPack flags (READ_ONLY = 1, IS_COPIED = 2, IS_SUBBYTE_TYPE_PADDED = 4). */
  public long flags() {
    synchronized (state) {
      return DLBridgeNative.dlbx_flags(handle());
    }
  }

  public boolean isReadOnly() {
    return (flags() & FLAG_READ_ONLY) != 0;
  }

  public boolean isContiguous() {
    synchronized (state) {
      return DLBridgeNative.dlbx_is_c_contiguous(handle()) != 0;
    }
  }

  public boolean isClosed() {
    synchronized (state) {
      return state.handle == 0;
    }
  }

  /** The address of the underlying DLManagedTensorVersioned (still owned by this Tensor). */
  public long address() {
    synchronized (state) {
      long h = handle();
      pinLocked(); // native code may now take references of its own
      return h;
    }
  }

  // ---- views and copies ----------------------------------------------------------------------

  /** Another owned reference to the same memory; {@code readOnly} makes the new one read-only. */
  public Tensor share(boolean readOnly) {
    synchronized (state) {
      long h = handle();
      pinLocked();
      return new Tensor(DLBridgeNative.dlbx_share(h, readOnly ? FLAG_READ_ONLY : 0L));
    }
  }

  public Tensor share() {
    return share(false);
  }

  /**
   * Slices the leading dimensions; {@code startStopStep} holds one (start, stop, step) triple per
   * dimension with Python semantics ({@link #NONE} for an omitted bound).
   */
  public Tensor slice(long... startStopStep) {
    synchronized (state) {
      long h = handle();
      pinLocked();
      return new Tensor(DLBridgeNative.dlbx_slice(h, startStopStep));
    }
  }

  /** x[..., index, ...] along {@code axis}, removing that dimension. */
  public Tensor select(int axis, long index) {
    synchronized (state) {
      long h = handle();
      pinLocked();
      return new Tensor(DLBridgeNative.dlbx_select(h, axis, index));
    }
  }

  public Tensor reshape(long... shape) {
    synchronized (state) {
      long h = handle();
      pinLocked();
      return new Tensor(DLBridgeNative.dlbx_reshape(h, checkShape(shape)));
    }
  }

  public Tensor permute(int... axes) {
    long[] a = new long[axes.length];
    for (int i = 0; i < axes.length; i++) {
      a[i] = axes[i];
    }
    synchronized (state) {
      long h = handle();
      pinLocked();
      return new Tensor(DLBridgeNative.dlbx_permute(h, a));
    }
  }

  public Tensor transpose() {
    synchronized (state) {
      long h = handle();
      pinLocked();
      return new Tensor(DLBridgeNative.dlbx_transpose(h));
    }
  }

  /** A compact, writable copy on {@code device}. */
  public Tensor copyTo(Device device) {
    synchronized (state) {
      return new Tensor(DLBridgeNative.dlbx_copy(handle(), device.packed()));
    }
  }

  /** Copies the elements of {@code src} into this tensor (same shape and dtype). */
  public void copyFrom(Tensor src) {
    synchronized (src.state) {
      long s = src.handle();
      synchronized (state) {
        DLBridgeNative.dlbx_copy_into(s, handle());
      }
    }
  }

  // ---- host access ---------------------------------------------------------------------------

  /**
   * A direct ByteBuffer (native byte order) over the elements of a host-readable, C-contiguous
   * tensor, read-only when the tensor is READ_ONLY. The buffer holds its own reference to the
   * memory, released when the buffer is garbage-collected, so it stays valid after close().
   */
  public ByteBuffer asByteBuffer() {
    synchronized (state) {
      long h = handle();
      pinLocked();
      long ref = DLBridgeNative.dlbx_share(h, 0L);
      ByteBuffer b;
      int slot;
      try {
        b = NativeSupport.byteView(ref);
        slot = Slots.acquire();
      } catch (RuntimeException | Error e) {
        Slots.drain(NativeSupport.free(ref));
        throw e;
      }
      // The buffer owns `ref`: the cleanup thread frees it once the buffer (and every buffer
      // derived from it, which refers to it) is unreachable.
      Slots.set(slot, new State(b, ref, slot, null));
      b.order(ByteOrder.nativeOrder());
      return (DLBridgeNative.dlbx_flags(h) & FLAG_READ_ONLY) != 0 ? b.asReadOnlyBuffer()
          .order(ByteOrder.nativeOrder()) : b;
    }
  }

  public float[] toFloatArray() {
    float[] out = new float[checkedCount(DType.FLOAT32)];
    read(b -> b.asFloatBuffer().get(out));
    return out;
  }

  public double[] toDoubleArray() {
    double[] out = new double[checkedCount(DType.FLOAT64)];
    read(b -> b.asDoubleBuffer().get(out));
    return out;
  }

  /** int8 or uint8 data. */
  public byte[] toByteArray() {
    byte[] out = new byte[checkedCount(DType.INT8, DType.UINT8)];
    read(b -> b.get(out));
    return out;
  }

  /** int16 or uint16 data. */
  public short[] toShortArray() {
    short[] out = new short[checkedCount(DType.INT16, DType.UINT16)];
    read(b -> b.asShortBuffer().get(out));
    return out;
  }

  /** int32 or uint32 data. */
  public int[] toIntArray() {
    int[] out = new int[checkedCount(DType.INT32, DType.UINT32)];
    read(b -> b.asIntBuffer().get(out));
    return out;
  }

  /** int64 or uint64 data. */
  public long[] toLongArray() {
    long[] out = new long[checkedCount(DType.INT64, DType.UINT64)];
    read(b -> b.asLongBuffer().get(out));
    return out;
  }

  public boolean[] toBooleanArray() {
    boolean[] out = new boolean[checkedCount(DType.BOOL)];
    read(b -> {
      for (int i = 0; i < out.length; i++) {
        out[i] = b.get(i) != 0;
      }
    });
    return out;
  }

  // ---- lifecycle -----------------------------------------------------------------------------

  /** Releases this tensor's reference (the deleter runs once). Calling it again does nothing. */
  @Override
  public void close() {
    State s = state;
    long h = s.take(); // waits for a use in progress (uses hold the lock)
    if (h != 0) {
      s.free(h);
    }
  }

  @Override
  public String toString() {
    synchronized (state) {
      if (state.handle == 0) {
        return "Tensor(closed)";
      }
      return "Tensor(" + dtype() + Arrays.toString(shape()) + " on " + device() + ")";
    }
  }

  // ---- internals -----------------------------------------------------------------------------

  private interface BufferAction {
    void apply(ByteBuffer b);
  }

  /** The live handle; callers hold the state lock. */
  private long handle() {
    long h = state.handle;
    if (h == 0) {
      throw closed();
    }
    return h;
  }

  /**
   * Before the memory of a wrapped buffer gains another owner (a view, a share, a buffer, an
   * export, a native caller of address()): from now on the buffer's slot holds it until the
   * deleter, on whatever thread it runs, has reported its release. Callers hold the state lock
   * on a live tensor.
   */
  private void pinLocked() {
    State s = state;
    if (s.buffer != null && !s.pinned) {
      Slots.pin(s.slot);
      s.pinned = true;
    }
  }

  private static IllegalStateException closed() {
    return new IllegalStateException("the tensor is closed (or was exported)");
  }

  private static long[] checkShape(long[] shape) {
    if (shape == null) {
      throw new IllegalArgumentException("shape is null");
    }
    return shape;
  }

  private static Tensor allocateFor(DType dtype, int length, long[] shape) {
    long n = 1;
    for (long d : checkShape(shape)) {
      if (d < 0) {
        throw new IllegalArgumentException("negative extent " + d + " in shape "
            + Arrays.toString(shape));
      }
      n = Math.multiplyExact(n, d);
    }
    if (n != length) {
      throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " holds " + n
          + " elements but the array has " + length);
    }
    return allocate(Device.CPU, dtype, shape);
  }

  private void fill(BufferAction action) {
    synchronized (state) {
      ByteBuffer b = NativeSupport.byteView(handle()).order(ByteOrder.nativeOrder());
      action.apply(b);
    }
  }

  private int checkedCount(DType... accepted) {
    DType d = dtype();
    for (DType a : accepted) {
      if (a.equals(d)) {
        long n = elementCount();
        if (n > Integer.MAX_VALUE) {
          throw new IllegalArgumentException("the tensor has too many elements for an array");
        }
        return (int) n;
      }
    }
    throw new IllegalArgumentException("a " + d + " tensor cannot be read as "
        + Arrays.toString(accepted));
  }

  /** Reads through a byte view; non-contiguous or device tensors are copied to the host first. */
  private void read(BufferAction action) {
    synchronized (state) {
      long h = handle();
      if (DLBridgeNative.dlbx_is_host_readable(h) != 0
          && DLBridgeNative.dlbx_is_c_contiguous(h) != 0) {
        action.apply(NativeSupport.byteView(h).order(ByteOrder.nativeOrder()));
        return;
      }
      long copy = DLBridgeNative.dlbx_copy(h, Device.CPU.packed());
      try {
        action.apply(NativeSupport.byteView(copy).order(ByteOrder.nativeOrder()));
      } finally {
        Slots.drain(NativeSupport.free(copy));
      }
    }
  }
}
