using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
  /// <summary>One dimension of a slice with Python semantics (see dlb_tensor_slice): negative
  /// bounds count from the end, out-of-range bounds are clamped, <see cref="None"/> as a bound
  /// means "from the beginning / to the end" in the direction of the step.</summary>
  public readonly struct SliceRange {
    /// <summary>An omitted bound (DLB_SLICE_NONE), like Python's None.</summary>
    public static readonly long None = DLBridgeNative.DLB_SLICE_NONE;
    /// <summary>The whole dimension.</summary>
    public static readonly SliceRange All = new SliceRange(None, None, 1);

    public readonly long Start;
    public readonly long Stop;
    public readonly long Step;

    public SliceRange(long start, long stop, long step = 1) {
      Start = start;
      Stop = stop;
      Step = step;
    }
  }

  /// <summary>Where a tensor's elements are, for host-readable C-contiguous tensors: the address
  /// of the first element and the bytes the elements take. Valid while the tensor lives.</summary>
  public struct HostBuffer {
    public IntPtr Data;
    public long ByteCount;
  }

  /// <summary>
  /// A DLPack tensor owned by C#: one reference to a native DLManagedTensorVersioned made by
  /// dlbridge, held by a SafeHandle.
  /// <para>Ownership: every method returning a Tensor gives the caller a new reference to
  /// dispose (views and shares keep the memory alive on their own: the base may be disposed
  /// first). <see cref="Dispose"/> is idempotent; a tensor nobody disposed is freed by its
  /// finalizer. Use after Dispose (or after an export) throws ObjectDisposedException. Failures
  /// throw <see cref="DLPackException"/> with the core's status and message and leave the caller's
  /// tensors as they were. Every method may be called from any thread.</para>
  /// </summary>
  public sealed class Tensor : IDisposable {
    private readonly TensorHandle h;

    internal Tensor(long address) {
      h = new TensorHandle(address);
    }

    private Tensor(long address, GCHandle pin, long pinToken) {
      h = new TensorHandle(address, pin, pinToken);
    }

    // ---- access to the handle ----------------------------------------------------------------
    // Every native call runs between Enter and Exit: the SafeHandle's count keeps the tensor
    // alive for the call, whatever other threads or the finalizer do.
    private long Enter() {
      if (h.IsClosed) throw Disposed();
      bool added = false;
      h.DangerousAddRef(ref added);
      return h.Address;
    }

    private void Exit() {
      h.DangerousRelease();
    }

    private static ObjectDisposedException Disposed() {
      return new ObjectDisposedException("Tensor", "the tensor was disposed or exported");
    }

    /// <summary>Frees this reference (the memory goes when its last reference goes). Idempotent.</summary>
    public void Dispose() {
      h.Dispose();
    }

    /// <summary>True once disposed or exported.</summary>
    public bool IsDisposed { get { return h.IsClosed; } }

    /// <summary>The native DLManagedTensorVersioned*, borrowed: valid while this Tensor is
    /// alive; do not free it (export to hand it over).</summary>
    public IntPtr Address {
      get {
        long a = Enter();
        Exit();
        return new IntPtr(a);
      }
    }

    // ---- creation ----------------------------------------------------------------------------
    /// <summary>Allocates an uninitialised compact tensor on <paramref name="device"/>.</summary>
    public static Tensor Allocate(Device device, DType dtype, params long[] shape) {
      return new Tensor(DLBridgeNative.dlb_tensor_allocate(device.Packed, dtype.Packed, shape, null, 0));
    }

    /// <summary>Allocates with explicit strides (in elements; null: row-major), optionally
    /// READ_ONLY.</summary>
    public static Tensor Allocate(Device device, DType dtype, long[] shape, long[] strides,
                                  bool readOnly = false) {
      return Allocate(device, dtype, shape, strides, readOnly ? FlagReadOnly : 0);
    }

    /// <summary>Allocates with explicit strides (null: row-major) and DLPack
    /// <paramref name="flags"/>: <see cref="FlagReadOnly"/>, and
    /// <see cref="FlagIsSubbyteTypePadded"/> to store sub-byte elements one per byte instead of
    /// packed. Flags the core does not accept are refused with its message.</summary>
    public static Tensor Allocate(Device device, DType dtype, long[] shape, long[] strides, ulong flags) {
      return new Tensor(DLBridgeNative.dlb_tensor_allocate(device.Packed, dtype.Packed, shape, strides, flags));
    }

    /// <summary>The DLPack flag bits, from the C header.</summary>
    public static readonly ulong FlagReadOnly = DLBridgeNative.DLPACK_FLAG_BITMASK_READ_ONLY;
    public static readonly ulong FlagIsCopied = DLBridgeNative.DLPACK_FLAG_BITMASK_IS_COPIED;
    public static readonly ulong FlagIsSubbyteTypePadded = DLBridgeNative.DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;

    /// <summary>The DType that an array of <typeparamref name="T"/> holds: float, double,
    /// sbyte, byte, short, ushort, int, uint, long, ulong, bool.</summary>
    public static DType DTypeOf<T>() where T : struct {
      // typeof(T) == typeof(X) spelled out each time: both JITs fold that pattern for each T
      // (CoreCLR does not through a local holding typeof(T), and calls into the runtime).
      if (typeof(T) == typeof(float)) return DType.Float32;
      if (typeof(T) == typeof(double)) return DType.Float64;
      if (typeof(T) == typeof(sbyte)) return DType.Int8;
      if (typeof(T) == typeof(byte)) return DType.UInt8;
      if (typeof(T) == typeof(short)) return DType.Int16;
      if (typeof(T) == typeof(ushort)) return DType.UInt16;
      if (typeof(T) == typeof(int)) return DType.Int32;
      if (typeof(T) == typeof(uint)) return DType.UInt32;
      if (typeof(T) == typeof(long)) return DType.Int64;
      if (typeof(T) == typeof(ulong)) return DType.UInt64;
      if (typeof(T) == typeof(bool)) return DType.Bool;
      throw new DLPackException(Status.InvalidArgument, "no dtype for elements of type " + typeof(T).Name);
    }

    /// <summary>A new CPU tensor holding a copy of <paramref name="data"/>; the shape defaults
    /// to one dimension of data.Length.</summary>
    public static Tensor FromArray<T>(T[] data, params long[] shape) where T : struct {
      if (data == null) throw new ArgumentNullException("data");
      DType dtype = DTypeOf<T>();
      if (shape == null || shape.Length == 0) shape = new long[] { data.LongLength };
      Tensor t = Allocate(Device.Cpu, dtype, shape);
      try {
        long count = t.ElementCount;
        if (count != data.LongLength) {
          throw new DLPackException(Status.InvalidArgument,
              "the array holds " + data.LongLength + " elements, the shape " + count);
        }
        t.CopyFrom(data);
        return t;
      } catch {
        t.Dispose();
        throw;
      }
    }

    /// <summary>
    /// Wraps a managed array without copying: the array stays pinned until the tensor's last
    /// reference is freed (by C#, or by a foreign consumer on any native thread), then it is
    /// unpinned by the next call into this library that frees or wraps a tensor, or by
    /// <see cref="CollectReleased"/>. The shape defaults to one dimension of data.Length and
    /// must fit in the array. bool[] cannot be pinned on every runtime: use FromArray.
    /// </summary>
    public static Tensor Wrap<T>(T[] data, params long[] shape) where T : struct {
      return Wrap(data, shape, null, false);
    }

    /// <summary>Wraps a managed array without copying (see <see cref="Wrap{T}(T[], long[])"/>),
    /// with strides (null: row-major), optionally READ_ONLY.</summary>
    public static Tensor Wrap<T>(T[] data, long[] shape, long[] strides, bool readOnly) where T : struct {
      if (data == null) throw new ArgumentNullException("data");
      DType dtype = DTypeOf<T>();
      if (typeof(T) == typeof(bool)) {
        throw new DLPackException(Status.InvalidArgument, "a bool[] cannot be wrapped: use FromArray");
      }
      if (shape == null || shape.Length == 0) shape = new long[] { data.LongLength };
      NativeMethods.CheckStrides(shape, strides);
      if (ReleaseQueue.Pending) ReleaseQueue.Drain();
      GCHandle pin = GCHandle.Alloc(data, GCHandleType.Pinned);
      long token = ReleaseQueue.Token(pin, false);
      long t = NativeMethods.Wrap(ElementAddress(data, pin), 0, Device.Cpu.Packed, dtype.Packed,
                                  shape, strides, readOnly ? FlagReadOnly : 0,
                                  data.LongLength * (dtype.Bits / 8), token);
      if (t == 0) {
        pin.Free(); // refused: nothing changed hands
        NativeExceptions.ThrowPending();
      }
      return new Tensor(t, pin, token);
    }

    // Where the elements of an array that `pin` holds pinned are. `fixed` reads the address in
    // place (the GCHandle keeps it valid after the block), where AddrOfPinnedObject is a call
    // into the runtime on Mono; the typeof tests fold away for each T. An empty array has no
    // element to take the address of.
    private static unsafe long ElementAddress<T>(T[] data, GCHandle pin) where T : struct {
      if (data.Length > 0) {
        object o = data;
        if (typeof(T) == typeof(float)) fixed (float* p = (float[])o) return (long)p;
        if (typeof(T) == typeof(double)) fixed (double* p = (double[])o) return (long)p;
        if (typeof(T) == typeof(sbyte)) fixed (sbyte* p = (sbyte[])o) return (long)p;
        if (typeof(T) == typeof(byte)) fixed (byte* p = (byte[])o) return (long)p;
        if (typeof(T) == typeof(short)) fixed (short* p = (short[])o) return (long)p;
        if (typeof(T) == typeof(ushort)) fixed (ushort* p = (ushort[])o) return (long)p;
        if (typeof(T) == typeof(int)) fixed (int* p = (int[])o) return (long)p;
        if (typeof(T) == typeof(uint)) fixed (uint* p = (uint[])o) return (long)p;
        if (typeof(T) == typeof(long)) fixed (long* p = (long[])o) return (long)p;
        if (typeof(T) == typeof(ulong)) fixed (ulong* p = (ulong[])o) return (long)p;
      }
      return pin.AddrOfPinnedObject().ToInt64();
    }

    /// <summary>
    /// Wraps native memory without copying: <paramref name="data"/> on <paramref name="device"/>
    /// (any device the core knows), described by dtype, shape and strides (null: row-major).
    /// <paramref name="release"/> (may be null) runs once after the last reference is freed, on a
    /// thread that calls into this library (never on a foreign native thread, never in a
    /// deleter); it must not throw. On error nothing changes hands and release does not run.
    /// </summary>
    public static Tensor WrapNative(IntPtr data, Device device, DType dtype, long[] shape,
                                    long[] strides = null, bool readOnly = false,
                                    Action release = null, ulong byteOffset = 0) {
      return WrapNative(data, device, dtype, shape, strides, readOnly ? FlagReadOnly : 0, release,
                        byteOffset);
    }

    /// <summary>
    /// <see cref="WrapNative(IntPtr, Device, DType, long[], long[], bool, Action, ulong)"/> with
    /// DLPack <paramref name="flags"/>: <see cref="FlagReadOnly"/>, and
    /// <see cref="FlagIsSubbyteTypePadded"/> for sub-byte elements stored one per byte. Flags the
    /// core does not accept are refused with its message; ownership as in the other overload.
    /// </summary>
    public static Tensor WrapNative(IntPtr data, Device device, DType dtype, long[] shape,
                                    long[] strides, ulong flags, Action release = null,
                                    ulong byteOffset = 0) {
      if (shape == null) throw new ArgumentNullException("shape");
      NativeMethods.CheckStrides(shape, strides);
      if (ReleaseQueue.Pending) ReleaseQueue.Drain();
      GCHandle keep = release != null ? GCHandle.Alloc(release) : default(GCHandle);
      long t = NativeMethods.Wrap(data.ToInt64(), byteOffset, device.Packed, dtype.Packed,
                                  shape, strides, flags, -1,
                                  release != null ? ReleaseQueue.Token(keep, true) : 0);
      if (t == 0) {
        if (release != null) keep.Free(); // refused: nothing changed hands
        NativeExceptions.ThrowPending();
      }
      return new Tensor(t);
    }

    /// <summary>Unpins the arrays (and runs the release actions) of wrapped tensors whose last
    /// reference was freed since, on whatever thread. Called by Dispose and Wrap already.</summary>
    public static void CollectReleased() {
      ReleaseQueue.Drain();
    }

    /// <summary>Wrapped arrays and native buffers unpinned/released so far by this process.</summary>
    public static long CollectedCount { get { return ReleaseQueue.Unpinned; } }

    /// <summary>Wrapped tensors whose native release ran so far (collected or not).</summary>
    public static long ReleasedCount { get { return NativeMethods.dlb_cs_released_count(); } }

    /// <summary>Tensors made by the core and not freed yet, across all threads (leak checks).</summary>
    public static long LiveCount { get { return DLBridgeNative.dlb_tensor_live_count(); } }

    // ---- exchange with native code -------------------------------------------------------------
    /// <summary>Takes ownership of a foreign DLManagedTensorVersioned*. The producer's tensor is
    /// consumed even when this throws: its deleter has then run exactly once.</summary>
    public static Tensor ImportVersioned(IntPtr tensor) {
      return new Tensor(DLBridgeNative.dlb_tensor_import(tensor.ToInt64()));
    }

    /// <summary>Takes ownership of a foreign legacy DLManagedTensor*; consumed even on error.</summary>
    public static Tensor ImportLegacy(IntPtr tensor) {
      return new Tensor(DLBridgeNative.dlb_tensor_import_legacy(tensor.ToInt64()));
    }

    /// <summary>Hands this tensor to a native consumer: returns a DLManagedTensorVersioned* the
    /// consumer now owns (it calls its deleter once, on any thread). This Tensor is disposed
    /// afterwards; do not export while another thread is using it.</summary>
    public IntPtr ExportVersioned() {
      // No native call: the versioned struct is the handle itself. The claim decides between
      // this export and a concurrent Dispose's release (or another export): one gets it.
      if (h.IsClosed || !h.TryClaim()) throw Disposed();
      long a = h.Address;
      h.Detach();
      return new IntPtr(a);
    }

    /// <summary>Hands this tensor to a consumer that speaks only DLPack &lt; 1.0: returns a
    /// DLManagedTensor* the consumer now owns. Refused (the tensor stays open) when a flag would
    /// be lost, READ_ONLY included. This Tensor is disposed afterwards.</summary>
    public IntPtr ExportLegacy() {
      // The claim keeps the reference alive during the call: a concurrent Dispose leaves the
      // free to this export if it is refused.
      if (h.IsClosed || !h.TryClaim()) throw Disposed();
      long legacy;
      try {
        legacy = DLBridgeNative.dlb_tensor_export_legacy(h.Address);
      } catch {
        h.Reopen(); // refused: the tensor stays open and ours
        throw;
      }
      h.Detach();
      return new IntPtr(legacy);
    }

    // ---- properties -----------------------------------------------------------------------------
    public int NDim {
      get { long a = Enter(); try { return DLBridgeNative.dlbx_tensor_ndim(a); } finally { Exit(); } }
    }

    public long[] Shape {
      get {
        long a = Enter();
        try {
          long[] shape = new long[DLBridgeNative.dlbx_tensor_ndim(a)];
          DLBridgeNative.dlb_tensor_get_shape(a, shape);
          return shape;
        } finally {
          Exit();
        }
      }
    }

    /// <summary>Strides in elements (row-major ones when the tensor has none).</summary>
    public long[] Strides {
      get {
        long a = Enter();
        try {
          long[] strides = new long[DLBridgeNative.dlbx_tensor_ndim(a)];
          DLBridgeNative.dlb_tensor_get_strides(a, strides);
          return strides;
        } finally {
          Exit();
        }
      }
    }

    public DType DType {
      get { long a = Enter(); try { return new DType(DLBridgeNative.dlbx_tensor_dtype(a)); } finally { Exit(); } }
    }

    public Device Device {
      get { long a = Enter(); try { return new Device(DLBridgeNative.dlbx_tensor_device(a)); } finally { Exit(); } }
    }

    /// <summary>The DLPack flags (FlagReadOnly, FlagIsCopied, ...).</summary>
    public ulong Flags {
      get { long a = Enter(); try { return DLBridgeNative.dlb_tensor_flags(a); } finally { Exit(); } }
    }

    public bool IsReadOnly {
      get { long a = Enter(); try { return DLBridgeNative.dlb_tensor_is_read_only(a) != 0; } finally { Exit(); } }
    }

    /// <summary>True when this reference is the only holder of its memory (the core's rule).</summary>
    public bool IsExclusive {
      get { long a = Enter(); try { return DLBridgeNative.dlb_tensor_is_exclusive(a) != 0; } finally { Exit(); } }
    }

    public bool IsContiguous {
      get { long a = Enter(); try { return DLBridgeNative.dlb_tensor_is_c_contiguous(a) != 0; } finally { Exit(); } }
    }

    public bool IsHostReadable {
      get { long a = Enter(); try { return DLBridgeNative.dlb_tensor_is_host_readable(a) != 0; } finally { Exit(); } }
    }

    public long ElementCount {
      get {
        long a = Enter();
        try {
          long[] n = new long[1];
          DLBridgeNative.dlb_tensor_element_count(a, n);
          return n[0];
        } finally {
          Exit();
        }
      }
    }

    /// <summary>Bytes the elements take stored compactly (packed-aware).</summary>
    public long ByteSize {
      get {
        long a = Enter();
        try {
          long[] n = new long[1];
          DLBridgeNative.dlb_tensor_byte_size(a, DLBridgeNative.dlb_tensor_flags(a), n);
          return n[0];
        } finally {
          Exit();
        }
      }
    }

    // ---- element access -----------------------------------------------------------------------
    /// <summary>The address and byte count of the elements (host-readable, C-contiguous;
    /// writable refused for READ_ONLY tensors), by the core's dlb_tensor_host_data. Valid while
    /// this tensor lives.</summary>
    public HostBuffer HostData(bool writable) {
      long a = Enter();
      try {
        return HostDataOf(a, writable);
      } finally {
        Exit();
      }
    }

    private static HostBuffer HostDataOf(long a, bool writable) {
      long[] data = new long[1], size = new long[1];
      DLBridgeNative.dlb_tensor_host_data(a, writable ? 1 : 0, data, size);
      HostBuffer b;
      b.Data = new IntPtr(data[0]);
      b.ByteCount = size[0];
      return b;
    }

    private static DType CheckElementType<T>(long a, string use) where T : struct {
      DType want = DTypeOf<T>();
      DType have = new DType(DLBridgeNative.dlbx_tensor_dtype(a));
      if (want != have) {
        throw new DLPackException(Status.InvalidArgument,
            "a " + KeywordOf(typeof(T)) + "[] cannot " + use + " the elements of a " + have + " tensor");
      }
      return have;
    }

    private static string KeywordOf(Type t) {
      if (t == typeof(float)) return "float";
      if (t == typeof(double)) return "double";
      if (t == typeof(sbyte)) return "sbyte";
      if (t == typeof(byte)) return "byte";
      if (t == typeof(short)) return "short";
      if (t == typeof(ushort)) return "ushort";
      if (t == typeof(int)) return "int";
      if (t == typeof(uint)) return "uint";
      if (t == typeof(long)) return "long";
      if (t == typeof(ulong)) return "ulong";
      if (t == typeof(bool)) return "bool";
      return t.Name;
    }

    /// <summary>A writable span over the elements (host-readable, C-contiguous, not
    /// READ_ONLY). Valid while this tensor lives: dispose it only after the last use.</summary>
    public unsafe Span<T> AsSpan<T>() where T : struct {
      long a = Enter();
      try {
        DType dtype = CheckElementType<T>(a, "view");
        HostBuffer b = HostDataOf(a, true);
        return new Span<T>((void*)b.Data, SpanLength(b.ByteCount / dtype.ElementSize));
      } finally {
        Exit();
      }
    }

    /// <summary>A read-only span over the elements (host-readable, C-contiguous).</summary>
    public unsafe ReadOnlySpan<T> AsReadOnlySpan<T>() where T : struct {
      long a = Enter();
      try {
        DType dtype = CheckElementType<T>(a, "view");
        HostBuffer b = HostDataOf(a, false);
        return new ReadOnlySpan<T>((void*)b.Data, SpanLength(b.ByteCount / dtype.ElementSize));
      } finally {
        Exit();
      }
    }

    private static int SpanLength(long n) {
      if (n > int.MaxValue) {
        throw new DLPackException(Status.Overflow, "the tensor has more elements than a span can hold");
      }
      return (int)n;
    }

    /// <summary>Copies the elements out, in row-major order (any strides, any device: a tensor
    /// the host cannot read directly is copied to the CPU first).</summary>
    public T[] ToArray<T>() where T : struct {
      long a = Enter();
      try {
        CheckElementType<T>(a, "hold");
        bool direct = DLBridgeNative.dlb_tensor_is_host_readable(a) != 0 &&
                      DLBridgeNative.dlb_tensor_is_c_contiguous(a) != 0;
        if (!direct) {
          using (Tensor copy = new Tensor(DLBridgeNative.dlb_tensor_copy(a, Device.Cpu.Packed))) {
            return copy.ToArray<T>();
          }
        }
        long[] n = new long[1];
        DLBridgeNative.dlb_tensor_element_count(a, n);
        T[] result = new T[n[0]];
        HostBuffer b = HostDataOf(a, false);
        CopyBytes(b.Data, result, b.ByteCount, false);
        return result;
      } finally {
        Exit();
      }
    }

    /// <summary>Copies <paramref name="data"/> (element count as this tensor) into this
    /// host-readable, C-contiguous tensor; refused for READ_ONLY tensors.</summary>
    public void CopyFrom<T>(T[] data) where T : struct {
      if (data == null) throw new ArgumentNullException("data");
      long a = Enter();
      try {
        CheckElementType<T>(a, "fill");
        HostBuffer b = HostDataOf(a, true);
        long[] n = new long[1];
        DLBridgeNative.dlb_tensor_element_count(a, n);
        if (n[0] != data.LongLength) {
          throw new DLPackException(Status.InvalidArgument,
              "the array holds " + data.LongLength + " elements, the tensor " + n[0]);
        }
        CopyBytes(b.Data, data, b.ByteCount, true);
      } finally {
        Exit();
      }
    }

    private static unsafe void CopyBytes(IntPtr native, Array array, long bytes, bool toNative) {
      if (bytes == 0) return;
      bool[] bools = array as bool[];
      if (bools != null) {
        fixed (bool* p = bools) {
          if (toNative) Buffer.MemoryCopy(p, (void*)native, bytes, bytes);
          else Buffer.MemoryCopy((void*)native, p, bytes, bytes);
        }
        return;
      }
      GCHandle pin = GCHandle.Alloc(array, GCHandleType.Pinned);
      try {
        void* p = (void*)pin.AddrOfPinnedObject();
        if (toNative) Buffer.MemoryCopy(p, (void*)native, bytes, bytes);
        else Buffer.MemoryCopy((void*)native, p, bytes, bytes);
      } finally {
        pin.Free();
      }
    }

    // ---- views, shares, copies -----------------------------------------------------------------
    /// <summary>A zero-copy view of the first slices.Length dimensions (Python semantics).</summary>
    public Tensor Slice(params SliceRange[] slices) {
      long[] triples = new long[3 * (slices == null ? 0 : slices.Length)];
      for (int i = 0; i < triples.Length / 3; i++) {
        triples[3 * i] = slices[i].Start;
        triples[3 * i + 1] = slices[i].Stop;
        triples[3 * i + 2] = slices[i].Step;
      }
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_slice(a, triples)); } finally { Exit(); }
    }

    /// <summary>A view of one index along <paramref name="axis"/>, that dimension removed.</summary>
    public Tensor Select(int axis, long index) {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_select(a, axis, index)); } finally { Exit(); }
    }

    /// <summary>A view with a new shape (one extent may be -1); LAYOUT when a copy is needed.</summary>
    public Tensor Reshape(params long[] shape) {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_reshape(a, shape)); } finally { Exit(); }
    }

    /// <summary>A view whose dimension i is dimension axes[i] of this tensor.</summary>
    public Tensor Permute(params int[] axes) {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_permute(a, axes)); } finally { Exit(); }
    }

    /// <summary>A view with the dimensions reversed.</summary>
    public Tensor Transpose() {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_transpose(a)); } finally { Exit(); }
    }

    /// <summary>Another reference to the same memory (optionally a READ_ONLY alias).</summary>
    public Tensor Share(bool readOnly = false) {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_share(a, readOnly ? FlagReadOnly : 0)); } finally { Exit(); }
    }

    /// <summary>A compact copy on <paramref name="device"/> (writable, IS_COPIED).</summary>
    public Tensor CopyTo(Device device) {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_copy(a, device.Packed)); } finally { Exit(); }
    }

    /// <summary>Like CopyTo, queued on <paramref name="stream"/> (a cudaStream_t or
    /// cl_command_queue): keep this tensor alive and read the copy only after synchronising
    /// the stream.</summary>
    public Tensor CopyToAsync(Device device, IntPtr stream) {
      long a = Enter();
      try {
        return new Tensor(DLBridgeNative.dlb_tensor_copy_async(a, device.Packed, stream.ToInt64()));
      } finally {
        Exit();
      }
    }

    /// <summary>Copies the elements into <paramref name="destination"/> (same shape and dtype).</summary>
    public void CopyInto(Tensor destination) {
      CopyIntoAsync(destination, IntPtr.Zero);
    }

    /// <summary>Like CopyInto, queued on <paramref name="stream"/>: both tensors must stay
    /// alive until the stream has finished.</summary>
    public void CopyIntoAsync(Tensor destination, IntPtr stream) {
      if (destination == null) throw new ArgumentNullException("destination");
      long a = Enter();
      try {
        long d = destination.Enter();
        try {
          DLBridgeNative.dlb_tensor_copy_into_async(a, d, stream.ToInt64());
        } finally {
          destination.Exit();
        }
      } finally {
        Exit();
      }
    }

    public override string ToString() {
      if (IsDisposed) return "Tensor(disposed)";
      return "Tensor(" + DType + ", [" + string.Join(", ", Shape) + "], " + Device + ")";
    }

    /// <summary>The dlbridge library version ("0.2.0").</summary>
    public static string LibraryVersion { get { return DLBridgeNative.dlb_version_string(); } }
  }
}
