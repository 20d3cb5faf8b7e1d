package org.dlbridge;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * An owned DLPack tensor (a dlbridge DLManagedTensorVersioned).
 *
 * <p>Ownership: a Tensor owns one reference to its memory. {@link #close()} releases it (calling
 * the DLPack deleter exactly once); a {@link Cleaner} does the same for a tensor nobody closed.
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

  private static final Cleaner CLEANER = Cleaner.create();

  /**
   * The native reference; freed at most once, by close() or the Cleaner (the Cleaner's action, so
   * it never refers to the Tensor). For a wrapped ByteBuffer it also keeps the buffer reachable
   * while this tensor is the memory's only owner; {@link #pinLocked()} hands that job to a JNI
   * global ref before the memory gains another owner.
   */
  static final class State implements Runnable {
    private long handle;
    /** The wrapped buffer (null otherwise); strongly held until the deleter has run. */
    private ByteBuffer buffer;
    /** The wrap_ctx address of a wrapped buffer, written by NativeSupport.wrapDirect. */
    long wrapCtx;
    private boolean pinned;

    State() {}

    State(long handle) {
      this.handle = handle;
    }

    @Override
    public synchronized void run() {
      long h = handle;
      handle = 0;
      if (h != 0) {
        DLBridgeNative.dlbx_free(h);
      }
      // The deleter has run (synchronously, unless pinned): the buffer may go now.
      Reference.reachabilityFence(buffer);
      buffer = null;
    }
  }

  private final State state;
  private final Cleaner.Cleanable cleanable;

  private Tensor(long handle) {
    if (handle == 0) {
      throw new IllegalStateException("null tensor handle");
    }
    this.state = new State(handle);
    this.cleanable = CLEANER.register(this, state);
  }

  private Tensor(State state) {
    this.state = state;
    this.cleanable = CLEANER.register(this, state);
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
    State st = new State();
    // The native side copies the shape (GetLongArrayRegion): no defensive clone needed.
    int ndim = checkShape(shape).length;
    long h;
    if (ndim <= 4) {
      // The common ranks pass their extents as arguments: no array for JNI to read.
      h = NativeSupport.wrapDirect4(st, buffer, buffer.position(), buffer.capacity(),
          dtype.packed(), ndim, ndim > 0 ? shape[0] : 0, ndim > 1 ? shape[1] : 0,
          ndim > 2 ? shape[2] : 0, ndim > 3 ? shape[3] : 0, buffer.isReadOnly());
    } else {
      h = NativeSupport.wrapDirect(st, buffer, buffer.position(), buffer.capacity(),
          dtype.packed(), shape, buffer.isReadOnly());
    }
    st.handle = h;
    st.buffer = buffer;
    // The constructor's Cleaner registration publishes st safely (Cleaner uses a lock).
    return new Tensor(st);
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
    long h;
    synchronized (state) {
      h = handle();
      pinLocked();
      state.handle = 0;
    }
    cleanable.clean(); // unregisters; the action then finds no handle
    return h;
  }

  /**
   * Hands the tensor to a legacy consumer: returns the address of a DLManagedTensor it now owns.
   * Refused (and this Tensor stays open) for READ_ONLY tensors. This Tensor is closed on success.
   */
  public long exportLegacy() {
    synchronized (state) {
      long h = handle();
      pinLocked();
      long legacy = DLBridgeNative.dlbx_export_legacy(h);
      state.handle = 0;
      cleanable.clean();
      return legacy;
    }
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
      try {
        b = NativeSupport.byteView(ref);
      } catch (RuntimeException e) {
        DLBridgeNative.dlbx_free(ref);
        throw e;
      }
      CLEANER.register(b, new State(ref));
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
    cleanable.clean();
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
   * export, a native caller of address()): from now on a JNI global ref, released by the deleter
   * on any thread, keeps the buffer reachable. Callers hold the state lock on a live tensor.
   */
  private void pinLocked() {
    State s = state;
    if (s.wrapCtx != 0 && !s.pinned) {
      if (!NativeSupport.pin(s.wrapCtx, s.buffer)) {
        throw new OutOfMemoryError("no room for a JNI global reference");
      }
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
        DLBridgeNative.dlbx_free(copy);
      }
    }
  }
}
