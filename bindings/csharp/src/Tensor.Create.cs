// Tensor.Create.cs - making tensors: allocate, copy from arrays, wrap arrays and native memory.
using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
  public sealed partial class Tensor {
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

    /// <summary>The dlbridge library version ("0.2.0").</summary>
    public static string LibraryVersion { get { return DLBridgeNative.dlb_version_string(); } }
  }
}
