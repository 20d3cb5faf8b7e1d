package org.dlbridge;

import static org.dlbridge.DLBridgeNativeConstants.DLPACK_FLAG_BITMASK_READ_ONLY;

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
 * a closed tensor throws {@link IllegalStateException}. Tensors live on any device with a
 * backend (CPU, CUDA, OpenCL, ...); reading elements of device memory copies to the host.
 */
public final class Tensor implements AutoCloseable {
  /** An omitted slice bound, like Python's None (the core's DLB_SLICE_NONE). */
  public static final long NONE = DLBridgeNativeConstants.DLB_SLICE_NONE;

  /** DLPack flag bits, as {@link #flags()} reports them (from the C header). */
  public static final long FLAG_READ_ONLY = DLBridgeNativeConstants.DLPACK_FLAG_BITMASK_READ_ONLY;
  public static final long FLAG_IS_COPIED = DLBridgeNativeConstants.DLPACK_FLAG_BITMASK_IS_COPIED;
  public static final long FLAG_IS_SUBBYTE_TYPE_PADDED =
      DLBridgeNativeConstants.DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;

  /**
   * The native reference of one owner (a Tensor, or an asByteBuffer() buffer), freed at most
   * once: by close(), an export, or the cleanup thread. It is a phantom reference to its owner,
   * and never refers to the owner otherwise. While the owner is open, its slot ({@link Slots})
   * holds this State, which keeps it (and a wrapped buffer) reachable whatever becomes of the
   * owner; the GC then hands it to the cleanup thread once the owner is unreachable. Closing
   * drops it from the slot, so a closed owner costs the GC nothing.
   *
   * <p>A wrapped buffer's release context is the slot. When the owner lets go of its reference
   * (free or export), the slot passes from this State to the buffer itself; the release
   * callback reports the slot once the core's reference count lets the memory go (inside that
   * very free, or later on any thread), and only that report (see {@link Slots#drain}) frees
   * the slot and so the buffer.
   */
  static final class State extends PhantomReference<Object> {
    /** Guarded by this; 0 once freed or moved out. */
    private long handle;
    final int slot;
    /** The wrapped buffer (null otherwise); dropped once the slot holds it. */
    private ByteBuffer buffer;

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
     * Gives up this State's slot before its reference is freed or moved out: a wrapped buffer
     * stays in the slot until its release is reported; any other slot is free again.
     */
    private boolean handOver() {
      if (buffer != null) {
        // Before the free or the export: once it is out, another thread may release the slot.
        Slots.set(slot, buffer);
        buffer = null;
        return true;
      }
      return false;
    }

    /** Gives up the slot after the handle taken by take() was moved out (exported). */
    void disown() {
      if (!handOver()) {
        Slots.release(slot);
      }
    }

    /** Frees the handle taken by take(), then gives up the slot. */
    void free(long h) {
      boolean kept = handOver();
      int released = NativeSupport.free(h);
      if (!kept) {
        Slots.release(slot);
      }
      Slots.drain(released);
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

  /**
   * An uninitialised compact tensor on {@code device}: the CPU, or any device with a backend
   * (CUDA, OpenCL, ...).
   */
  public static Tensor allocate(Device device, DType dtype, long... shape) {
    return new Tensor(DLBridgeNative.dlb_tensor_allocate(device.packed(), dtype.packed(),
        checkShape(shape), null, 0L));
  }

  /**
   * An uninitialised tensor on {@code device} with the given strides (in elements, one per
   * extent; negative and zero included: enough memory is allocated to cover them).
   */
  public static Tensor allocate(Device device, DType dtype, long[] shape, long[] strides) {
    return allocate(device, dtype, shape, strides, 0L);
  }

  /**
   * {@link #allocate(Device, DType, long[], long[])} with DLPack {@code flags}: {@link
   * #FLAG_READ_ONLY}, and {@link #FLAG_IS_SUBBYTE_TYPE_PADDED} to store sub-byte elements one
   * per byte instead of packed. {@code strides} may be null (compact row-major). Flags the core
   * does not accept are refused with its message.
   */
  public static Tensor allocate(Device device, DType dtype, long[] shape, long[] strides,
      long flags) {
    return new Tensor(DLBridgeNative.dlb_tensor_allocate(device.packed(), dtype.packed(),
        checkShape(shape), strides, flags));
  }

  /**
   * Wraps a direct ByteBuffer without copying: the tensor's elements start at the buffer's
   * position. The buffer stays reachable until the tensor's deleter runs, even when a foreign
   * consumer holds the tensor. A read-only buffer gives a READ_ONLY tensor.
   */
  public static Tensor wrap(ByteBuffer buffer, DType dtype, long... shape) {
    return wrap(buffer, dtype, shape, 0L);
  }

  /**
   * {@link #wrap(ByteBuffer, DType, long...)} with DLPack {@code flags}: {@link
   * #FLAG_IS_SUBBYTE_TYPE_PADDED} for sub-byte elements stored one per byte, {@link
   * #FLAG_READ_ONLY} for a read-only tensor over a writable buffer (a read-only buffer always
   * gives one). Flags the core does not accept are refused with its message.
   */
  public static Tensor wrap(ByteBuffer buffer, DType dtype, long[] shape, long flags) {
    if (buffer == null || !buffer.isDirect()) {
      throw new IllegalArgumentException("Tensor.wrap needs a direct ByteBuffer");
    }
    int ndim = checkShape(shape).length;
    long wrapFlags = buffer.isReadOnly() ? flags | FLAG_READ_ONLY : flags;
    int slot = Slots.acquire(); // the release context: it must exist before the wrap
    long h;
    try {
      // The common ranks pass their extents as arguments: no array for JNI to read.
      h = ndim <= 4
          ? NativeSupport.wrapDirect4(slot, buffer, buffer.position(), buffer.capacity(),
              dtype.packed(), ndim, ndim > 0 ? shape[0] : 0, ndim > 1 ? shape[1] : 0,
              ndim > 2 ? shape[2] : 0, ndim > 3 ? shape[3] : 0, wrapFlags)
          : wrapAnyRank(slot, buffer, dtype, shape, wrapFlags);
    } catch (RuntimeException | Error e) {
      Slots.release(slot); // refused: no release callback will report this slot
      throw e;
    }
    // The buffer is reachable through this frame until the slot holds it (in the new State).
    return new Tensor(h, slot, buffer);
  }

  private static long wrapAnyRank(int slot, ByteBuffer buffer, DType dtype, long[] shape,
      long flags) {
    // The native side copies the shape (GetLongArrayRegion): no defensive clone needed.
    return NativeSupport.wrapDirect(slot, buffer, buffer.position(), buffer.capacity(),
        dtype.packed(), shape, flags);
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
    return new Tensor(DLBridgeNative.dlb_tensor_import(address));
  }

  /** Takes ownership of a foreign legacy DLManagedTensor; consumed even on error. */
  public static Tensor importLegacy(long address) {
    return new Tensor(DLBridgeNative.dlb_tensor_import_legacy(address));
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
      s.handle = 0;
      s.disown(); // before the consumer can have the address
    }
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
      legacy = DLBridgeNative.dlb_tensor_export_legacy(h); // on error the tensor stays open
      s.handle = 0;
      s.disown(); // before the consumer can have the address
    }
    return legacy;
  }

  // ---- queries -------------------------------------------------------------------------------

  public long[] shape() {
    synchronized (state) {
      long h = handle();
      long[] out = new long[DLBridgeNative.dlbx_tensor_ndim(h)];
      DLBridgeNative.dlb_tensor_get_shape(h, out);
      return out;
    }
  }

  /** Strides in elements (compact row-major ones when the producer sent none). */
  public long[] strides() {
    synchronized (state) {
      long h = handle();
      long[] out = new long[DLBridgeNative.dlbx_tensor_ndim(h)];
      DLBridgeNative.dlb_tensor_get_strides(h, out);
      return out;
    }
  }

  public int ndim() {
    synchronized (state) {
      return DLBridgeNative.dlbx_tensor_ndim(handle());
    }
  }

  /** The number of elements (the core's dlb_tensor_element_count). */
  public long elementCount() {
    long[] n = new long[1];
    synchronized (state) {
      DLBridgeNative.dlb_tensor_element_count(handle(), n);
    }
    return n[0];
  }

  /** Bytes the elements take stored compactly (packed-aware: the core's dlb_tensor_byte_size). */
  public long byteSize() {
    long[] n = new long[1];
    synchronized (state) {
      long h = handle();
      DLBridgeNative.dlb_tensor_byte_size(h, DLBridgeNative.dlb_tensor_flags(h), n);
    }
    return n[0];
  }

  public DType dtype() {
    synchronized (state) {
      return DType.fromPacked(DLBridgeNative.dlbx_tensor_dtype(handle()));
    }
  }

  public Device device() {
    synchronized (state) {
      return Device.fromPacked(DLBridgeNative.dlbx_tensor_device(handle()));
    }
  }

  /** The DLPack flags: {@link #FLAG_READ_ONLY}, {@link #FLAG_IS_COPIED}, {@link #FLAG_IS_SUBBYTE_TYPE_PADDED}. */
  public long flags() {
    synchronized (state) {
      return DLBridgeNative.dlb_tensor_flags(handle());
    }
  }

  public boolean isReadOnly() {
    synchronized (state) {
      return DLBridgeNative.dlb_tensor_is_read_only(handle()) != 0;
    }
  }

  /**
   * True when this Tensor is the only holder of its memory (no share, view or foreign owner is
   * alive): the core's dlb_tensor_is_exclusive.
   */
  public boolean isExclusive() {
    synchronized (state) {
      return DLBridgeNative.dlb_tensor_is_exclusive(handle()) != 0;
    }
  }

  public boolean isContiguous() {
    synchronized (state) {
      return DLBridgeNative.dlb_tensor_is_c_contiguous(handle()) != 0;
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
      return handle();
    }
  }

  // ---- views and copies ----------------------------------------------------------------------

  /** Another owned reference to the same memory; {@code readOnly} makes the new one read-only. */
  public Tensor share(boolean readOnly) {
    synchronized (state) {
      long h = handle();
      return new Tensor(DLBridgeNative.dlb_tensor_share(h, readOnly ? DLPACK_FLAG_BITMASK_READ_ONLY : 0L));
    }
  }

  public Tensor share() {
    return share(false);
  }

  /**
   * Slices the leading dimensions, one {@link Slice} each ({@code t.slice(Slice.of(0, 2),
   * Slice.every(-1))} is Python's {@code t[0:2, ::-1]}); the other dimensions stay whole. The
   * view shares this tensor's memory and holds its own reference.
   *
   * @throws DLPackException more slices than dimensions, a step of 0 (the core's message)
   */
  public Tensor slice(Slice... slices) {
    if (slices == null) {
      throw new IllegalArgumentException("slices is null");
    }
    long[] triples = new long[3 * slices.length];
    for (int i = 0; i < slices.length; i++) {
      if (slices[i] == null) {
        throw new IllegalArgumentException("slice " + i + " is null (use Slice.ALL for a whole dimension)");
      }
      triples[3 * i] = slices[i].start();
      triples[3 * i + 1] = slices[i].stop();
      triples[3 * i + 2] = slices[i].step();
    }
    synchronized (state) {
      long h = handle();
      return new Tensor(DLBridgeNative.dlb_tensor_slice(h, triples));
    }
  }

  /** x[..., index, ...] along {@code axis}, removing that dimension. */
  public Tensor select(int axis, long index) {
    synchronized (state) {
      long h = handle();
      return new Tensor(DLBridgeNative.dlb_tensor_select(h, axis, index));
    }
  }

  public Tensor reshape(long... shape) {
    synchronized (state) {
      long h = handle();
      return new Tensor(DLBridgeNative.dlb_tensor_reshape(h, checkShape(shape)));
    }
  }

  /** Dimension i of the view is dimension axes[i] of this tensor (negative counts from the end). */
  public Tensor permute(int... axes) {
    synchronized (state) {
      long h = handle();
      return new Tensor(DLBridgeNative.dlb_tensor_permute(h, axes));
    }
  }

  public Tensor transpose() {
    synchronized (state) {
      long h = handle();
      return new Tensor(DLBridgeNative.dlb_tensor_transpose(h));
    }
  }

  /** A compact, writable copy on {@code device}, complete when the call returns. */
  public Tensor copyTo(Device device) {
    synchronized (state) {
      return new Tensor(DLBridgeNative.dlb_tensor_copy(handle(), device.packed()));
    }
  }

  /**
   * Like {@link #copyTo(Device)}, queued on {@code stream} (a cudaStream_t or cl_command_queue
   * of the device side; 0 makes the call synchronous). Keep this tensor open and read the copy
   * only after {@link Device#synchronize(long)} on that stream.
   */
  public Tensor copyTo(Device device, long stream) {
    synchronized (state) {
      return new Tensor(DLBridgeNative.dlb_tensor_copy_async(handle(), device.packed(), stream));
    }
  }

  /** Copies the elements of this tensor into {@code dst} (same shape and dtype, any devices). */
  public void copyInto(Tensor dst) {
    copyInto(dst, 0L);
  }

  /**
   * Like {@link #copyInto(Tensor)}, queued on {@code stream} (0: synchronous). Both tensors must
   * stay open until the stream has finished the copy.
   */
  public void copyInto(Tensor dst, long stream) {
    synchronized (state) {
      long s = handle();
      synchronized (dst.state) {
        DLBridgeNative.dlb_tensor_copy_into_async(s, dst.handle(), stream);
      }
    }
  }

  /** Copies the elements of {@code src} into this tensor: {@code src.copyInto(this)}. */
  public void copyFrom(Tensor src) {
    src.copyInto(this);
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
      long ref = DLBridgeNative.dlb_tensor_share(h, 0L);
      ByteBuffer b;
      int slot;
      try {
        b = NativeSupport.byteView(ref, false);
        slot = Slots.acquire();
      } catch (RuntimeException | Error e) {
        Slots.drain(NativeSupport.free(ref));
        throw e;
      }
      // The buffer owns `ref`: the cleanup thread frees it once the buffer (and every buffer
      // derived from it, which refers to it) is unreachable.
      Slots.set(slot, new State(b, ref, slot, null));
      b.order(ByteOrder.nativeOrder());
      return DLBridgeNative.dlb_tensor_is_read_only(h) != 0 ? b.asReadOnlyBuffer()
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

  // ---- filling from arrays ---------------------------------------------------------------------
  // Each copies the array into the tensor in row-major order. The dtype must match the array
  // type and the array must hold exactly elementCount() values. A strided view or device tensor
  // is written through a compact host copy. A READ_ONLY tensor throws DLPackException
  // (DLB_ERR_READ_ONLY). Nothing changes hands: the tensor stays the caller's.

  /** float32 data. */
  public void copyFrom(float[] src) {
    write(src.length, b -> b.asFloatBuffer().put(src), DType.FLOAT32);
  }

  /** float64 data. */
  public void copyFrom(double[] src) {
    write(src.length, b -> b.asDoubleBuffer().put(src), DType.FLOAT64);
  }

  /** int8 or uint8 data. */
  public void copyFrom(byte[] src) {
    write(src.length, b -> b.put(src), DType.INT8, DType.UINT8);
  }

  /** int16 or uint16 data. */
  public void copyFrom(short[] src) {
    write(src.length, b -> b.asShortBuffer().put(src), DType.INT16, DType.UINT16);
  }

  /** uint16 data (Java's char is an unsigned 16-bit integer). */
  public void copyFrom(char[] src) {
    write(src.length, b -> b.asCharBuffer().put(src), DType.UINT16);
  }

  /** int32 or uint32 data. */
  public void copyFrom(int[] src) {
    write(src.length, b -> b.asIntBuffer().put(src), DType.INT32, DType.UINT32);
  }

  /** int64 or uint64 data. */
  public void copyFrom(long[] src) {
    write(src.length, b -> b.asLongBuffer().put(src), DType.INT64, DType.UINT64);
  }

  /** bool data (stored as bytes 0 and 1). */
  public void copyFrom(boolean[] src) {
    write(src.length, b -> {
      for (boolean v : src) {
        b.put((byte) (v ? 1 : 0));
      }
    }, DType.BOOL);
  }

  /** uint16 data as Java chars. */
  public char[] toCharArray() {
    char[] out = new char[checkedCount(DType.UINT16)];
    read(b -> b.asCharBuffer().get(out));
    return out;
  }

  // ---- elements --------------------------------------------------------------------------------
  // One element at a full index (one value per dimension, negative counts from the end), in
  // host-readable memory of any layout. The getter's type must match the dtype (getByte: int8
  // or uint8, getShort: int16 or uint16, getInt: int32 or uint32, getLong: int64 or uint64);
  // unsigned values come back in the signed type of the same width. The core names a wrong
  // index count or an index out of range (DLPackException, DLB_ERR_INVALID_ARGUMENT); a setter
  // on a READ_ONLY tensor throws DLB_ERR_READ_ONLY; device memory throws DLB_ERR_UNSUPPORTED
  // (copy it to the CPU first).

  public float getFloat(long... index) {
    return Float.intBitsToFloat((int) element(index, 4, DType.FLOAT32));
  }

  public void setFloat(float value, long... index) {
    setElement(index, 4, Float.floatToRawIntBits(value), DType.FLOAT32);
  }

  public double getDouble(long... index) {
    return Double.longBitsToDouble(element(index, 8, DType.FLOAT64));
  }

  public void setDouble(double value, long... index) {
    setElement(index, 8, Double.doubleToRawLongBits(value), DType.FLOAT64);
  }

  public byte getByte(long... index) {
    return (byte) element(index, 1, DType.INT8, DType.UINT8);
  }

  public void setByte(byte value, long... index) {
    setElement(index, 1, value, DType.INT8, DType.UINT8);
  }

  public short getShort(long... index) {
    return (short) element(index, 2, DType.INT16, DType.UINT16);
  }

  public void setShort(short value, long... index) {
    setElement(index, 2, value, DType.INT16, DType.UINT16);
  }

  public int getInt(long... index) {
    return (int) element(index, 4, DType.INT32, DType.UINT32);
  }

  public void setInt(int value, long... index) {
    setElement(index, 4, value, DType.INT32, DType.UINT32);
  }

  public long getLong(long... index) {
    return element(index, 8, DType.INT64, DType.UINT64);
  }

  public void setLong(long value, long... index) {
    setElement(index, 8, value, DType.INT64, DType.UINT64);
  }

  public boolean getBoolean(long... index) {
    return element(index, 1, DType.BOOL) != 0;
  }

  public void setBoolean(boolean value, long... index) {
    setElement(index, 1, value ? 1 : 0, DType.BOOL);
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
    long[] count = new long[1];
    DLBridgeNative.dlb_shape_element_count(checkShape(shape), count);
    long n = count[0];
    if (n != length) {
      throw new IllegalArgumentException("shape " + Arrays.toString(shape) + " holds " + n
          + " elements but the array has " + length);
    }
    return allocate(Device.CPU, dtype, shape);
  }

  private void fill(BufferAction action) {
    synchronized (state) {
      ByteBuffer b = NativeSupport.byteView(handle(), true).order(ByteOrder.nativeOrder());
      action.apply(b);
    }
  }

  private int checkedCount(DType... accepted) {
    checkDtype("read as", accepted);
    long n = elementCount();
    if (n > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("the tensor has too many elements for an array");
    }
    return (int) n;
  }


  /** The dtype, if it is one of {@code accepted}; otherwise the mistake, named. */
  private DType checkDtype(String use, DType... accepted) {
    DType d = dtype();
    for (DType a : accepted) {
      if (a.equals(d)) {
        return d;
      }
    }
    throw new IllegalArgumentException("a " + d + " tensor cannot be " + use + " "
        + Arrays.toString(accepted));
  }

  private long element(long[] index, int size, DType... accepted) {
    synchronized (state) {
      checkDtype("read as", accepted);
      return NativeSupport.elementGet(handle(), index, size);
    }
  }

  private void setElement(long[] index, int size, long bits, DType... accepted) {
    synchronized (state) {
      checkDtype("written as", accepted);
      NativeSupport.elementSet(handle(), index, size, bits);
    }
  }

  /**
   * Writes {@code length} values through a byte view; a strided or device tensor gets them
   * through a compact host tensor and one copy.
   */
  private void write(int length, BufferAction action, DType... accepted) {
    synchronized (state) {
      long h = handle();
      DType d = checkDtype("filled from", accepted);
      long n = elementCount();
      if (n != length) {
        throw new IllegalArgumentException("the tensor has " + n + " elements but the array has "
            + length);
      }
      if (DLBridgeNative.dlb_tensor_is_host_readable(h) != 0
          && DLBridgeNative.dlb_tensor_is_c_contiguous(h) != 0) {
        action.apply(NativeSupport.byteView(h, true).order(ByteOrder.nativeOrder()));
        return;
      }
      // The core refuses the final copy into a READ_ONLY tensor.
      long staging = DLBridgeNative.dlb_tensor_allocate(Device.CPU.packed(), d.packed(), shape(),
          null, 0L);
      try {
        action.apply(NativeSupport.byteView(staging, true).order(ByteOrder.nativeOrder()));
        DLBridgeNative.dlb_tensor_copy_into(staging, h);
      } finally {
        Slots.drain(NativeSupport.free(staging));
      }
    }
  }

  /** Reads through a byte view; non-contiguous or device tensors are copied to the host first. */
  private void read(BufferAction action) {
    synchronized (state) {
      long h = handle();
      if (DLBridgeNative.dlb_tensor_is_host_readable(h) != 0
          && DLBridgeNative.dlb_tensor_is_c_contiguous(h) != 0) {
        action.apply(NativeSupport.byteView(h, false).order(ByteOrder.nativeOrder()));
        return;
      }
      long copy = DLBridgeNative.dlb_tensor_copy(h, Device.CPU.packed());
      try {
        action.apply(NativeSupport.byteView(copy, false).order(ByteOrder.nativeOrder()));
      } finally {
        Slots.drain(NativeSupport.free(copy));
      }
    }
  }
}
