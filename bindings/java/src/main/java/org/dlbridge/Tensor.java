package org.dlbridge;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.ShortBuffer;
import java.util.Arrays;
import java.util.function.LongFunction;
import java.util.function.LongUnaryOperator;

/**
 * An owned DLPack tensor (a dlbridge DLManagedTensorVersioned): the entry point of the binding.
 * The work is done by package-private classes, one per concern: {@link Create}, {@link Access},
 * {@link Views}, {@link Exchange}, {@link Lifecycle}; devices are {@link Device} and {@link
 * DLBridge}.
 *
 * <p>Ownership: a Tensor owns one reference to its memory. {@link #close()} releases it (the
 * DLPack deleter runs exactly once, when the last reference goes); a cleaner thread does the
 * same for a tensor nobody closed. Views, {@link #share()}s and buffers over the memory hold
 * their own references, so they outlive the tensor they came from. {@link #exportVersioned()} /
 * {@link #exportLegacy()} move the reference out to a foreign consumer; the Tensor is closed
 * afterwards. Every method may be called from any thread; using a closed tensor throws {@link
 * DLPackException} with {@link Status#CLOSED} ("the tensor is closed"), and a second close does
 * nothing. Tensors live on any device with a backend (CPU, CUDA, OpenCL, ...).
 *
 * <p>Every rule (sizes, dtypes, layouts, devices, READ_ONLY, indices) is the core's: a mistake
 * throws {@link DLPackException} with the core's status and message.
 */
public final class Tensor implements AutoCloseable {
  /** An omitted slice bound, like Python's None (the core's DLB_SLICE_NONE). */
  public static final long NONE = DLBridgeNativeConstants.DLB_SLICE_NONE;

  /**
   * DLPack flag bit (from the C header, as {@link #flags()} reports it): the tensor's memory must
   * not be written; writes through this binding are refused with {@link Status#READ_ONLY}.
   */
  public static final long FLAG_READ_ONLY = DLBridgeNativeConstants.DLPACK_FLAG_BITMASK_READ_ONLY;
  /**
   * DLPack flag bit: the producer made this tensor's memory as a copy (the consumer may write it
   * without affecting the producer's data), as a channel's copying send does.
   */
  public static final long FLAG_IS_COPIED = DLBridgeNativeConstants.DLPACK_FLAG_BITMASK_IS_COPIED;
  /**
   * DLPack flag bit: sub-byte elements (int4, float4_e2m1fn, ...) are stored one per byte
   * instead of packed.
   */
  public static final long FLAG_IS_SUBBYTE_TYPE_PADDED =
      DLBridgeNativeConstants.DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;

  /** The native reference and who holds it; uses count themselves in (see {@link Lifecycle}). */
  final Lifecycle.State state;

  /** Owns {@code handle}, a new reference. */
  Tensor(long handle) {
    this.state = Lifecycle.State.of(this, handle);
  }

  /** Owns {@code handle}, which wraps {@code buffer} with the token of {@code slot}. */
  Tensor(long handle, int slot, ByteBuffer buffer) {
    this.state = new Lifecycle.State(this, handle, slot, buffer);
  }

  // ---- creation ----------------------------------------------------------------------------------

  /**
   * An uninitialised compact tensor on {@code device}: the CPU or any device with a backend.
   *
   * @param device where the memory is allocated
   * @param dtype the element type
   * @param shape the extents, one per dimension (none: a scalar)
   * @return the new tensor, owned by the caller
   */
  public static Tensor allocate(Device device, DType dtype, long... shape) {
    return Create.allocate(device, dtype, shape, null, 0L);
  }

  /**
   * An uninitialised tensor with the given strides (in elements, one per extent; negative and
   * zero included: enough memory is allocated to cover them).
   *
   * @param device where the memory is allocated
   * @param dtype the element type
   * @param shape the extents, one per dimension
   * @param strides the strides in elements, one per dimension, or null for compact ones
   * @return the new tensor, owned by the caller
   */
  public static Tensor allocate(Device device, DType dtype, long[] shape, long[] strides) {
    return Create.allocate(device, dtype, shape, strides, 0L);
  }

  /**
   * With DLPack {@code flags}: {@link #FLAG_READ_ONLY}, {@link #FLAG_IS_SUBBYTE_TYPE_PADDED}
   * (sub-byte elements one per byte instead of packed). {@code strides} may be null (compact).
   *
   * @param device where the memory is allocated
   * @param dtype the element type
   * @param shape the extents, one per dimension
   * @param strides the strides in elements, one per dimension, or null for compact ones
   * @param flags DLPack flag bits, 0 for none
   * @return the new tensor, owned by the caller
   */
  public static Tensor allocate(Device device, DType dtype, long[] shape, long[] strides,
      long flags) {
    return Create.allocate(device, dtype, shape, strides, flags);
  }

  /**
   * A compact, zero-filled tensor in memory another process can map ({@code
   * dlb_tensor_allocate_shareable}), to send on a {@link Channel} without a copy: on the CPU a
   * sealed memfd; on a CUDA device (a library built with CUDA) memory exported as a file
   * descriptor or, where the device cannot, through a CUDA IPC handle with a weaker lifetime rule
   * (see {@link #shareableKind()}). Other devices: {@link Status#UNSUPPORTED}. Ownership: the
   * caller owns it.
   *
   * @param device where the memory is allocated (the CPU or a CUDA device)
   * @param dtype the element type
   * @param shape the extents, one per dimension
   * @return the new zero-filled tensor, owned by the caller
   */
  public static Tensor allocateShareable(Device device, DType dtype, long... shape) {
    return Create.allocateShareable(device, dtype, shape);
  }

  /**
   * Wraps a direct ByteBuffer without copying: the elements start at the buffer's position and
   * must lie inside its capacity (the core refuses them otherwise, before anything is built).
   * The buffer stays reachable until the memory is released, even while a foreign consumer
   * holds the tensor. A read-only buffer gives a READ_ONLY tensor.
   *
   * @param buffer a direct buffer holding the elements, compact and in C order
   * @param dtype the element type
   * @param shape the extents, one per dimension
   * @return a tensor over the buffer's memory, owned by the caller
   */
  public static Tensor wrap(ByteBuffer buffer, DType dtype, long... shape) {
    return Create.wrap(buffer, dtype, shape, 0L);
  }

  /**
   * {@link #wrap(ByteBuffer, DType, long...)} with DLPack {@code flags}
   * ({@link #FLAG_IS_SUBBYTE_TYPE_PADDED}, {@link #FLAG_READ_ONLY}).
   *
   * @param buffer a direct buffer holding the elements, compact and in C order
   * @param dtype the element type
   * @param shape the extents, one per dimension
   * @param flags DLPack flag bits, 0 for none
   * @return a tensor over the buffer's memory, owned by the caller
   */
  public static Tensor wrap(ByteBuffer buffer, DType dtype, long[] shape, long flags) {
    return Create.wrap(buffer, dtype, shape, flags);
  }

  /**
   * A float32 CPU tensor of {@code shape} holding a copy of {@code data}.
   *
   * @param data the elements in C order, exactly as many as the shape holds
   * @param shape the extents, one per dimension
   * @return the new tensor, owned by the caller
   */
  public static Tensor fromArray(float[] data, long... shape) {
    return Create.fromArray(DType.FLOAT32, shape, s -> Access.from(s, data));
  }

  /**
   * A float64 CPU tensor of {@code shape} holding a copy of {@code data}.
   *
   * @param data the elements in C order, exactly as many as the shape holds
   * @param shape the extents, one per dimension
   * @return the new tensor, owned by the caller
   */
  public static Tensor fromArray(double[] data, long... shape) {
    return Create.fromArray(DType.FLOAT64, shape, s -> Access.from(s, data));
  }

  /**
   * A int8 CPU tensor of {@code shape} holding a copy of {@code data}.
   *
   * @param data the elements in C order, exactly as many as the shape holds
   * @param shape the extents, one per dimension
   * @return the new tensor, owned by the caller
   */
  public static Tensor fromArray(byte[] data, long... shape) {
    return Create.fromArray(DType.INT8, shape, s -> Access.from(s, data, false));
  }

  /**
   * A int16 CPU tensor of {@code shape} holding a copy of {@code data}.
   *
   * @param data the elements in C order, exactly as many as the shape holds
   * @param shape the extents, one per dimension
   * @return the new tensor, owned by the caller
   */
  public static Tensor fromArray(short[] data, long... shape) {
    return Create.fromArray(DType.INT16, shape, s -> Access.from(s, data));
  }

  /**
   * A int32 CPU tensor of {@code shape} holding a copy of {@code data}.
   *
   * @param data the elements in C order, exactly as many as the shape holds
   * @param shape the extents, one per dimension
   * @return the new tensor, owned by the caller
   */
  public static Tensor fromArray(int[] data, long... shape) {
    return Create.fromArray(DType.INT32, shape, s -> Access.from(s, data));
  }

  /**
   * A int64 CPU tensor of {@code shape} holding a copy of {@code data}.
   *
   * @param data the elements in C order, exactly as many as the shape holds
   * @param shape the extents, one per dimension
   * @return the new tensor, owned by the caller
   */
  public static Tensor fromArray(long[] data, long... shape) {
    return Create.fromArray(DType.INT64, shape, s -> Access.from(s, data));
  }

  /**
   * A bool CPU tensor (one byte per element, 0 or 1) of {@code shape} holding {@code data}.
   *
   * @param data the elements in C order, exactly as many as the shape holds
   * @param shape the extents, one per dimension
   * @return the new tensor, owned by the caller
   */
  public static Tensor fromArray(boolean[] data, long... shape) {
    byte[] bytes = Access.bytesOf(data);
    return Create.fromArray(DType.BOOL, shape, s -> Access.from(s, bytes, true));
  }

  // ---- exchange ----------------------------------------------------------------------------------

  /**
   * Takes ownership of a foreign DLManagedTensorVersioned at {@code address}. The tensor is
   * consumed even when the import fails (its deleter has then already run).
   *
   * @param address the address of the foreign DLManagedTensorVersioned
   * @return a tensor owning the imported memory
   */
  public static Tensor importVersioned(long address) {
    return Exchange.importVersioned(address);
  }

  /**
   * Takes ownership of a foreign legacy DLManagedTensor; consumed even on error.
   *
   * @param address the address of the foreign DLManagedTensor
   * @return a tensor owning the imported memory
   */
  public static Tensor importLegacy(long address) {
    return Exchange.importLegacy(address);
  }

  /**
   * Hands the tensor to a foreign consumer: the address of a DLManagedTensorVersioned the
   * consumer now owns (it must call its deleter once). This Tensor is closed afterwards.
   *
   * @return the address of the exported DLManagedTensorVersioned
   */
  public long exportVersioned() {
    return Exchange.exportVersioned(state);
  }

  /**
   * Hands the tensor to a legacy consumer: the address of a DLManagedTensor it now owns. Refused
   * for READ_ONLY tensors, which then stay open. This Tensor is closed on success.
   *
   * @return the address of the exported DLManagedTensor
   */
  public long exportLegacy() {
    return Exchange.exportLegacy(state);
  }

  // ---- queries -----------------------------------------------------------------------------------

  /**
   * The extents.
   *
   * @return a new array with one extent per dimension
   */
  public long[] shape() {
    return with(h -> {
      long[] out = new long[DLBridgeNative.dlbx_tensor_ndim(h)];
      DLBridgeNative.dlb_tensor_get_shape(h, out);
      return out;
    });
  }

  /**
   * Strides in elements (compact row-major ones when the producer sent none).
   *
   * @return a new array with one stride per dimension
   */
  public long[] strides() {
    return with(h -> {
      long[] out = new long[DLBridgeNative.dlbx_tensor_ndim(h)];
      DLBridgeNative.dlb_tensor_get_strides(h, out);
      return out;
    });
  }

  /**
   * The number of dimensions.
   *
   * @return the rank, 0 for a scalar
   */
  public int ndim() {
    return with(DLBridgeNative::dlbx_tensor_ndim);
  }

  /**
   * The number of elements (the core's dlb_tensor_element_count).
   *
   * @return the product of the extents
   */
  public long elementCount() {
    return with(h -> {
      long[] n = new long[1];
      DLBridgeNative.dlb_tensor_element_count(h, n);
      return n[0];
    });
  }

  /**
   * Bytes the elements take stored compactly (packed-aware: the core's dlb_tensor_byte_size).
   *
   * @return the size in bytes
   */
  public long byteSize() {
    return with(h -> {
      long[] n = new long[1];
      DLBridgeNative.dlb_tensor_byte_size(h, DLBridgeNative.dlb_tensor_flags(h), n);
      return n[0];
    });
  }

  /**
   * The element type.
   *
   * @return the tensor's dtype
   */
  public DType dtype() {
    return with(h -> DType.fromPacked(state.dtype(h)));
  }

  /**
   * The device the memory lives on.
   *
   * @return the tensor's device
   */
  public Device device() {
    return with(h -> Device.fromPacked(DLBridgeNative.dlbx_tensor_device(h)));
  }

  /**
   * The DLPack flags: {@link #FLAG_READ_ONLY}, {@link #FLAG_IS_COPIED},
   * {@link #FLAG_IS_SUBBYTE_TYPE_PADDED}.
   *
   * @return the flag bits
   */
  public long flags() {
    return with(DLBridgeNative::dlb_tensor_flags);
  }

  /**
   * Whether the tensor carries {@link #FLAG_READ_ONLY}.
   *
   * @return true for a read-only tensor
   */
  public boolean isReadOnly() {
    return with(h -> DLBridgeNative.dlb_tensor_is_read_only(h) != 0);
  }

  /**
   * Whether this is the only reference to the memory (dlb_tensor_is_exclusive).
   *
   * @return true when no share, view or foreign owner holds the memory
   */
  public boolean isExclusive() {
    return with(h -> DLBridgeNative.dlb_tensor_is_exclusive(h) != 0);
  }

  /**
   * Whether the elements lie compactly in C (row-major) order (dlb_tensor_is_c_contiguous).
   *
   * @return true for a C-contiguous tensor
   */
  public boolean isCContiguous() {
    return with(h -> DLBridgeNative.dlb_tensor_is_c_contiguous(h) != 0);
  }

  /**
   * Whether the elements lie compactly in Fortran (column-major) order
   * (dlb_tensor_is_f_contiguous): a transpose of a C-contiguous tensor is.
   *
   * @return true for an F-contiguous tensor
   */
  public boolean isFContiguous() {
    return with(h -> DLBridgeNative.dlb_tensor_is_f_contiguous(h) != 0);
  }

  /**
   * Whether the host CPU can read the tensor's memory (dlb_tensor_is_host_readable): CPU memory,
   * and CUDA host and managed memory; a device's own memory is not.
   *
   * @return true for memory the buffers, arrays and element accessors can read in place
   */
  public boolean isHostReadable() {
    return with(h -> DLBridgeNative.dlb_tensor_is_host_readable(h) != 0);
  }

  /**
   * Whether this tensor's memory can be sent on a {@link Channel} without a copy: allocated with
   * {@link #allocateShareable}, received from a channel, or a view or share of one of those.
   *
   * @return true for shareable memory
   */
  public boolean isShareable() {
    return with(h -> DLBridgeNative.dlb_tensor_is_shareable(h) != 0);
  }

  /**
   * Which kind of shareable memory this tensor is over: one of the {@link Shareable} constants
   * ({@code dlb_tensor_shareable_kind}).
   *
   * @return the kind, {@link Shareable#NONE} for memory that is not shareable
   */
  public int shareableKind() {
    return with(h -> DLBridgeNative.dlb_tensor_shareable_kind(h));
  }

  /**
   * Makes the work queued afterwards on {@code consumerStream} wait for the work the sender
   * queued before {@link Channel#sendCuda} ({@code dlb_cuda_wait_received}), without blocking
   * the host: the cross-process counterpart of {@link DLBridge#cudaStreamHandshake}, with its
   * stream convention ({@link DLBridge#CUDA_STREAM_NONE}, 1, 2, -1, or a cudaStream_t of this
   * tensor's device). This tensor must be CUDA memory received from a channel, or a view or
   * share of one; without an event from the sender nothing is done.
   *
   * @param consumerStream the stream to make wait, in the DLPack stream convention
   */
  public void cudaWaitReceived(long consumerStream) {
    with(h -> DLBridgeNative.dlb_cuda_wait_received(h, consumerStream));
  }

  /**
   * Whether {@link #close()} (or an export) has released this tensor's reference.
   *
   * @return true once the tensor is closed
   */
  public boolean isClosed() {
    return state.isClosed();
  }

  /**
   * The address of the underlying DLManagedTensorVersioned (still owned by this Tensor).
   *
   * @return the native address, valid while the tensor is open
   */
  public long address() {
    return with(h -> h);
  }

  // ---- views and copies --------------------------------------------------------------------------

  /**
   * Another owned reference to the same memory, as writable as this one.
   *
   * @return the new reference, owned by the caller
   */
  public Tensor share() {
    return derive(h -> Views.share(h, false));
  }

  /**
   * Another owned reference to the same memory that carries {@link #FLAG_READ_ONLY}, for code
   * that must not write; this tensor stays as writable as it was.
   *
   * @return the new read-only reference, owned by the caller
   */
  public Tensor shareReadOnly() {
    return derive(h -> Views.share(h, true));
  }

  /**
   * Slices the leading dimensions, one {@link Slice} each ({@code t.slice(Slice.of(0, 2),
   * Slice.every(-1))} is Python's {@code t[0:2, ::-1]}); the other dimensions stay whole.
   *
   * @param slices one slice per leading dimension
   * @return the view, owned by the caller
   */
  public Tensor slice(Slice... slices) {
    return derive(h -> Views.slice(h, slices));
  }

  /**
   * x[..., index, ...] along {@code axis}, removing that dimension.
   *
   * @param axis the dimension (negative counts from the end)
   * @param index the position along it (negative counts from the end)
   * @return the view, owned by the caller
   */
  public Tensor select(int axis, long index) {
    return derive(h -> Views.select(h, axis, index));
  }

  /**
   * The same elements in another shape, without a copy (refused with {@link Status#LAYOUT} when
   * the strides do not allow it).
   *
   * @param shape the new extents; one may be -1 (inferred)
   * @return the view, owned by the caller
   */
  public Tensor reshape(long... shape) {
    return derive(h -> Views.reshape(h, shape));
  }

  /**
   * Dimension i of the view is dimension axes[i] of this tensor.
   *
   * @param axes a permutation of the dimensions (negative counts from the end)
   * @return the view, owned by the caller
   */
  public Tensor permute(int... axes) {
    return derive(h -> Views.permute(h, axes));
  }

  /**
   * The dimensions in reverse order.
   *
   * @return the view, owned by the caller
   */
  public Tensor transpose() {
    return derive(Views::transpose);
  }

  /**
   * A compact, writable copy on {@code device}, complete when the call returns.
   *
   * @param device where the copy is allocated
   * @return the copy, owned by the caller
   */
  public Tensor copyTo(Device device) {
    return copyToAsync(device, 0L);
  }

  /**
   * {@link #copyTo(Device)} queued on {@code stream} (a cudaStream_t or cl_command_queue of the
   * device side; 0: synchronous). Keep this tensor open; read the copy after
   * {@link Device#synchronize(long)}.
   *
   * @param device where the copy is allocated
   * @param stream the device's stream or queue, 0 for a synchronous copy
   * @return the copy, owned by the caller
   */
  public Tensor copyToAsync(Device device, long stream) {
    return derive(h -> Views.copyTo(h, device, stream));
  }

  /**
   * Copies the elements of this tensor into {@code dst} (same shape and dtype, any devices).
   *
   * @param dst the tensor written
   */
  public void copyInto(Tensor dst) {
    copyIntoAsync(dst, 0L);
  }

  /**
   * {@link #copyInto(Tensor)} queued on {@code stream}; both stay open until the stream is done.
   *
   * @param dst the tensor written
   * @param stream the device's stream or queue, 0 for a synchronous copy
   */
  public void copyIntoAsync(Tensor dst, long stream) {
    Views.copyInto(this, dst, stream);
  }

  /**
   * Copies the elements of {@code src} into this tensor: {@code src.copyInto(this)}.
   *
   * @param src the tensor read
   */
  public void copyFrom(Tensor src) {
    src.copyInto(this);
  }

  // ---- buffers over the memory -------------------------------------------------------------------
  // Direct buffers in native byte order over a host-readable, C-contiguous tensor (the core's
  // dlb_tensor_host_elements; asByteBuffer: dlb_tensor_host_data). Without an argument a buffer
  // is writable unless the tensor is READ_ONLY (then read-only); `writable` true asks for write
  // access (a READ_ONLY tensor is refused, DLB_ERR_READ_ONLY), false gives a read-only buffer.
  // Each holds its own reference to the memory, released when the buffer (and every buffer
  // derived from it) is garbage-collected: it stays valid after close(). Integer buffers hold the
  // signed or unsigned dtype of their width. Another dtype, a strided view or device memory is
  // refused with the core's message.

  /**
   * The raw bytes of the elements (any dtype, packed sub-byte data included), writable unless the
   * tensor is READ_ONLY.
   *
   * @return a direct buffer over the memory, holding its own reference
   */
  public ByteBuffer asByteBuffer() {
    return Access.buffer(state, null, null, 1, null);
  }

  /**
   * The raw bytes of the elements.
   *
   * @param writable true to ask for write access (refused for a READ_ONLY tensor), false for a
   *     read-only buffer
   * @return a direct buffer over the memory, holding its own reference
   */
  public ByteBuffer asByteBuffer(boolean writable) {
    return Access.buffer(state, null, null, 1, writable);
  }

  /**
   * The float32 elements, writable unless the tensor is READ_ONLY.
   *
   * @return a direct buffer over the memory, holding its own reference
   */
  public FloatBuffer asFloatBuffer() {
    return Access.buffer(state, DType.FLOAT32, DType.FLOAT32, 4, null).asFloatBuffer();
  }

  /**
   * The float32 elements.
   *
   * @param writable true to ask for write access (refused for a READ_ONLY tensor), false for a
   *     read-only buffer
   * @return a direct buffer over the memory, holding its own reference
   */
  public FloatBuffer asFloatBuffer(boolean writable) {
    return Access.buffer(state, DType.FLOAT32, DType.FLOAT32, 4, writable).asFloatBuffer();
  }

  /**
   * The float64 elements, writable unless the tensor is READ_ONLY.
   *
   * @return a direct buffer over the memory, holding its own reference
   */
  public DoubleBuffer asDoubleBuffer() {
    return Access.buffer(state, DType.FLOAT64, DType.FLOAT64, 8, null).asDoubleBuffer();
  }

  /**
   * The float64 elements.
   *
   * @param writable true to ask for write access (refused for a READ_ONLY tensor), false for a
   *     read-only buffer
   * @return a direct buffer over the memory, holding its own reference
   */
  public DoubleBuffer asDoubleBuffer(boolean writable) {
    return Access.buffer(state, DType.FLOAT64, DType.FLOAT64, 8, writable).asDoubleBuffer();
  }

  /**
   * The int16 or uint16 elements, writable unless the tensor is READ_ONLY.
   *
   * @return a direct buffer over the memory, holding its own reference
   */
  public ShortBuffer asShortBuffer() {
    return Access.buffer(state, DType.INT16, DType.UINT16, 2, null).asShortBuffer();
  }

  /**
   * The int16 or uint16 elements.
   *
   * @param writable true to ask for write access (refused for a READ_ONLY tensor), false for a
   *     read-only buffer
   * @return a direct buffer over the memory, holding its own reference
   */
  public ShortBuffer asShortBuffer(boolean writable) {
    return Access.buffer(state, DType.INT16, DType.UINT16, 2, writable).asShortBuffer();
  }

  /**
   * The uint16 elements as chars, writable unless the tensor is READ_ONLY.
   *
   * @return a direct buffer over the memory, holding its own reference
   */
  public CharBuffer asCharBuffer() {
    return Access.buffer(state, DType.UINT16, DType.UINT16, 2, null).asCharBuffer();
  }

  /**
   * The uint16 elements as chars.
   *
   * @param writable true to ask for write access (refused for a READ_ONLY tensor), false for a
   *     read-only buffer
   * @return a direct buffer over the memory, holding its own reference
   */
  public CharBuffer asCharBuffer(boolean writable) {
    return Access.buffer(state, DType.UINT16, DType.UINT16, 2, writable).asCharBuffer();
  }

  /**
   * The int32 or uint32 elements, writable unless the tensor is READ_ONLY.
   *
   * @return a direct buffer over the memory, holding its own reference
   */
  public IntBuffer asIntBuffer() {
    return Access.buffer(state, DType.INT32, DType.UINT32, 4, null).asIntBuffer();
  }

  /**
   * The int32 or uint32 elements.
   *
   * @param writable true to ask for write access (refused for a READ_ONLY tensor), false for a
   *     read-only buffer
   * @return a direct buffer over the memory, holding its own reference
   */
  public IntBuffer asIntBuffer(boolean writable) {
    return Access.buffer(state, DType.INT32, DType.UINT32, 4, writable).asIntBuffer();
  }

  /**
   * The int64 or uint64 elements, writable unless the tensor is READ_ONLY.
   *
   * @return a direct buffer over the memory, holding its own reference
   */
  public LongBuffer asLongBuffer() {
    return Access.buffer(state, DType.INT64, DType.UINT64, 8, null).asLongBuffer();
  }

  /**
   * The int64 or uint64 elements.
   *
   * @param writable true to ask for write access (refused for a READ_ONLY tensor), false for a
   *     read-only buffer
   * @return a direct buffer over the memory, holding its own reference
   */
  public LongBuffer asLongBuffer(boolean writable) {
    return Access.buffer(state, DType.INT64, DType.UINT64, 8, writable).asLongBuffer();
  }

  // ---- copies to and from Java arrays ------------------------------------------------------------
  // One core call each (dlb_tensor_copy_to_host / copy_from_host): any strides, any device, C
  // order. The array's type must be the tensor's dtype (byte: int8/uint8, short: int16/uint16,
  // char: uint16, int: int32/uint32, long: int64/uint64, boolean: bool), and copyFrom's array
  // must hold exactly elementCount() values; a READ_ONLY tensor refuses copyFrom. The core's
  // messages: "the tensor holds float32 elements, not int32", "the buffer holds 20 bytes but the
  // tensor's 6 float32 elements take 24", "cannot copy into a read-only tensor".

  /**
   * A copy of the float32 elements, in C order.
   *
   * @return a new array of {@link #elementCount()} values
   */
  public float[] toFloatArray() {
    return Access.toFloats(state);
  }

  /**
   * A copy of the float64 elements, in C order.
   *
   * @return a new array of {@link #elementCount()} values
   */
  public double[] toDoubleArray() {
    return Access.toDoubles(state);
  }

  /**
   * A copy of the int8 or uint8 elements, in C order.
   *
   * @return a new array of {@link #elementCount()} values
   */
  public byte[] toByteArray() {
    return Access.toBytes(state, false);
  }

  /**
   * A copy of the int16 or uint16 elements, in C order.
   *
   * @return a new array of {@link #elementCount()} values
   */
  public short[] toShortArray() {
    return Access.toShorts(state);
  }

  /**
   * A copy of the uint16 elements, in C order.
   *
   * @return a new array of {@link #elementCount()} values
   */
  public char[] toCharArray() {
    return Access.toChars(state);
  }

  /**
   * A copy of the int32 or uint32 elements, in C order.
   *
   * @return a new array of {@link #elementCount()} values
   */
  public int[] toIntArray() {
    return Access.toInts(state);
  }

  /**
   * A copy of the int64 or uint64 elements, in C order.
   *
   * @return a new array of {@link #elementCount()} values
   */
  public long[] toLongArray() {
    return Access.toLongs(state);
  }

  /**
   * A copy of the bool elements, in C order.
   *
   * @return a new array of {@link #elementCount()} values
   */
  public boolean[] toBooleanArray() {
    return Access.toBooleans(state);
  }

  /**
   * Overwrites the float32 elements with {@code src}, in C order.
   *
   * @param src exactly {@link #elementCount()} values
   */
  public void copyFrom(float[] src) {
    Access.from(state, src);
  }

  /**
   * Overwrites the float64 elements with {@code src}, in C order.
   *
   * @param src exactly {@link #elementCount()} values
   */
  public void copyFrom(double[] src) {
    Access.from(state, src);
  }

  /**
   * Overwrites the int8 or uint8 elements with {@code src}, in C order.
   *
   * @param src exactly {@link #elementCount()} values
   */
  public void copyFrom(byte[] src) {
    Access.from(state, src, false);
  }

  /**
   * Overwrites the int16 or uint16 elements with {@code src}, in C order.
   *
   * @param src exactly {@link #elementCount()} values
   */
  public void copyFrom(short[] src) {
    Access.from(state, src);
  }

  /**
   * Overwrites the uint16 elements with {@code src}, in C order.
   *
   * @param src exactly {@link #elementCount()} values
   */
  public void copyFrom(char[] src) {
    Access.from(state, src);
  }

  /**
   * Overwrites the int32 or uint32 elements with {@code src}, in C order.
   *
   * @param src exactly {@link #elementCount()} values
   */
  public void copyFrom(int[] src) {
    Access.from(state, src);
  }

  /**
   * Overwrites the int64 or uint64 elements with {@code src}, in C order.
   *
   * @param src exactly {@link #elementCount()} values
   */
  public void copyFrom(long[] src) {
    Access.from(state, src);
  }

  /**
   * Overwrites the bool elements with {@code src}, in C order.
   *
   * @param src exactly {@link #elementCount()} values
   */
  public void copyFrom(boolean[] src) {
    Access.from(state, Access.bytesOf(src), true);
  }

  // ---- elements ----------------------------------------------------------------------------------
  // One element at a full index (one value per dimension, negative counting from the end), in
  // host-readable memory of any layout, typed as the arrays above (unsigned values come back in
  // the signed type of their width). The core names a wrong dtype, index count or index
  // (DLB_ERR_INVALID_ARGUMENT), a setter on a READ_ONLY tensor (DLB_ERR_READ_ONLY) and device
  // memory (DLB_ERR_UNSUPPORTED: copy it to the CPU first).

  /**
   * One float32 element.
   *
   * @param index one position per dimension (negative counts from the end)
   * @return the element's value
   */
  public float getFloat(long... index) {
    return Float.intBitsToFloat((int) Access.get(state, DType.FLOAT32, DType.FLOAT32, index));
  }

  /**
   * Writes one float32 element.
   *
   * @param value the new value
   * @param index one position per dimension (negative counts from the end)
   */
  public void setFloat(float value, long... index) {
    Access.set(state, DType.FLOAT32, DType.FLOAT32, index, Float.floatToRawIntBits(value));
  }

  /**
   * One float64 element.
   *
   * @param index one position per dimension (negative counts from the end)
   * @return the element's value
   */
  public double getDouble(long... index) {
    return Double.longBitsToDouble(Access.get(state, DType.FLOAT64, DType.FLOAT64, index));
  }

  /**
   * Writes one float64 element.
   *
   * @param value the new value
   * @param index one position per dimension (negative counts from the end)
   */
  public void setDouble(double value, long... index) {
    Access.set(state, DType.FLOAT64, DType.FLOAT64, index, Double.doubleToRawLongBits(value));
  }

  /**
   * One int8 or uint8 element.
   *
   * @param index one position per dimension (negative counts from the end)
   * @return the element's value
   */
  public byte getByte(long... index) {
    return (byte) Access.get(state, DType.INT8, DType.UINT8, index);
  }

  /**
   * Writes one int8 or uint8 element.
   *
   * @param value the new value
   * @param index one position per dimension (negative counts from the end)
   */
  public void setByte(byte value, long... index) {
    Access.set(state, DType.INT8, DType.UINT8, index, value);
  }

  /**
   * One int16 or uint16 element.
   *
   * @param index one position per dimension (negative counts from the end)
   * @return the element's value
   */
  public short getShort(long... index) {
    return (short) Access.get(state, DType.INT16, DType.UINT16, index);
  }

  /**
   * Writes one int16 or uint16 element.
   *
   * @param value the new value
   * @param index one position per dimension (negative counts from the end)
   */
  public void setShort(short value, long... index) {
    Access.set(state, DType.INT16, DType.UINT16, index, value);
  }

  /**
   * One int32 or uint32 element.
   *
   * @param index one position per dimension (negative counts from the end)
   * @return the element's value
   */
  public int getInt(long... index) {
    return (int) Access.get(state, DType.INT32, DType.UINT32, index);
  }

  /**
   * Writes one int32 or uint32 element.
   *
   * @param value the new value
   * @param index one position per dimension (negative counts from the end)
   */
  public void setInt(int value, long... index) {
    Access.set(state, DType.INT32, DType.UINT32, index, value);
  }

  /**
   * One int64 or uint64 element.
   *
   * @param index one position per dimension (negative counts from the end)
   * @return the element's value
   */
  public long getLong(long... index) {
    return Access.get(state, DType.INT64, DType.UINT64, index);
  }

  /**
   * Writes one int64 or uint64 element.
   *
   * @param value the new value
   * @param index one position per dimension (negative counts from the end)
   */
  public void setLong(long value, long... index) {
    Access.set(state, DType.INT64, DType.UINT64, index, value);
  }

  /**
   * One bool element.
   *
   * @param index one position per dimension (negative counts from the end)
   * @return the element's value
   */
  public boolean getBoolean(long... index) {
    return Access.get(state, DType.BOOL, DType.BOOL, index) != 0;
  }

  /**
   * Writes one bool element.
   *
   * @param value the new value
   * @param index one position per dimension (negative counts from the end)
   */
  public void setBoolean(boolean value, long... index) {
    Access.set(state, DType.BOOL, DType.BOOL, index, value ? 1 : 0);
  }

  // ---- lifecycle ---------------------------------------------------------------------------------

  /** Releases this tensor's reference (the deleter runs once). Calling it again does nothing. */
  @Override
  public void close() {
    state.letGo(); // a use in progress frees as it ends
  }

  /**
   * A description such as "Tensor(float32[2, 3] on cpu)", or "Tensor(closed)".
   *
   * @return the description
   */
  @Override
  public String toString() {
    try {
      return "Tensor(" + dtype() + Arrays.toString(shape()) + " on " + device() + ")";
    } catch (DLPackException e) {
      if (e.getStatus() != Status.CLOSED) {
        throw e;
      }
      return "Tensor(closed)"; // closed before, or while, it was read
    }
  }

  /** {@code op} on the live handle, counted as a call in flight (a close waits for it). */
  private <T> T with(LongFunction<T> op) {
    return state.use(op);
  }

  /** A new Tensor owning the reference {@code op} makes from this one. */
  private Tensor derive(LongUnaryOperator op) {
    long h = state.enter();
    try {
      return new Tensor(op.applyAsLong(h));
    } finally {
      state.exit();
    }
  }
}
