// Tensor.Create.cs - making tensors: allocate, copy from arrays, wrap arrays and native memory.
using System;
using System.Runtime.CompilerServices;
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
    public const ulong FlagReadOnly = DLBridgeNative.DLPACK_FLAG_BITMASK_READ_ONLY;
    /// <summary>DLPack's IS_COPIED flag: the producer made a copy for this exchange, so the consumer is the only owner of the memory.</summary>
    public const ulong FlagIsCopied = DLBridgeNative.DLPACK_FLAG_BITMASK_IS_COPIED;
    /// <summary>DLPack's IS_SUBBYTE_TYPE_PADDED flag: sub-byte elements are stored one per byte instead of packed.</summary>
    public const ulong FlagIsSubbyteTypePadded = DLBridgeNative.DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;

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
      throw Errors.Argument("no dtype for elements of type " + typeof(T).Name);
    }

    /// <summary>A new CPU tensor holding a copy of <paramref name="data"/>; the shape defaults
    /// to one dimension of data.Length (the core refuses an array that does not hold exactly
    /// the shape's elements).</summary>
    public static Tensor FromArray<T>(T[] data, params long[] shape) where T : struct {
      if (data == null) throw new ArgumentNullException("data");
      if (shape == null || shape.Length == 0) shape = new long[] { data.LongLength };
      Tensor t = Allocate(Device.Cpu, DTypeOf<T>(), shape);
      try {
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
    /// unpinned by the free that released it when that is C#'s own, otherwise by the next call
    /// into this library that frees or wraps a tensor, or by
    /// <see cref="DLBridge.CollectReleased"/>. The shape defaults to one dimension of
    /// data.Length; the core refuses a shape whose elements reach beyond the array. bool[]
    /// cannot be pinned on every runtime: use FromArray.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static Tensor Wrap<T>(T[] data, params long[] shape) where T : struct {
      return Wrap(data, shape, null, false);
    }

    /// <summary>Wraps a managed array without copying (see <see cref="Wrap{T}(T[], long[])"/>),
    /// with strides (null: row-major), optionally READ_ONLY.</summary>
    public static Tensor Wrap<T>(T[] data, long[] shape, long[] strides, bool readOnly) where T : struct {
      if (data == null) throw new ArgumentNullException("data");
      DType dtype = DTypeOf<T>();
      if (typeof(T) == typeof(bool)) {
        throw Errors.Argument("a bool[] cannot be wrapped: use FromArray");
      }
      if (shape == null || shape.Length == 0) shape = new long[] { data.LongLength };
      Releases.DrainIfQueued();
      GCHandle pin = GCHandle.Alloc(data, GCHandleType.Pinned);
      long token = Releases.Token(pin, false);
      long t;
      try {
        t = DLBridgeNative.dlbx_tensor_wrap(ArrayAddress(data, pin), (ulong)data.LongLength * (ulong)(dtype.Bits / 8),
                                           shape, strides, Device.Cpu.Packed, dtype.Packed, 0,
                                           readOnly ? FlagReadOnly : 0, token);
      } catch {
        pin.Free(); // refused: nothing changed hands
        throw;
      }
      return new Tensor(t, pin, token);
    }

    // Where the elements of an array that `pin` holds pinned are. `fixed` reads the address in
    // place (the GCHandle keeps it valid after the block), where AddrOfPinnedObject is a call
    // into the runtime on Mono; the typeof tests fold away for each T. An empty array has no
    // element to take the address of.
    private static unsafe long ArrayAddress<T>(T[] data, GCHandle pin) where T : struct {
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
    /// (any device the core knows), described by dtype, shape and strides (null: row-major),
    /// the first element <paramref name="byteOffset"/> bytes after data. When
    /// <paramref name="byteCount"/> says how many bytes from data the memory holds, the core
    /// refuses elements beyond them; left out, the caller vouches for the memory (negative
    /// strides may then reach before data, as DLPack allows).
    /// <paramref name="release"/> (may be null) runs once after the last reference is freed, on a
    /// thread that calls into this library (never on a foreign native thread, never in a
    /// deleter); it must not throw. On error nothing changes hands and release does not run.
    /// </summary>
    public static Tensor WrapNative(IntPtr data, Device device, DType dtype, long[] shape,
                                    long[] strides = null, bool readOnly = false,
                                    Action release = null, ulong byteOffset = 0,
                                    ulong byteCount = ulong.MaxValue) {
      return WrapNative(data, device, dtype, shape, strides, readOnly ? FlagReadOnly : 0, release,
                        byteOffset, byteCount);
    }

    /// <summary>
    /// <see cref="WrapNative(IntPtr, Device, DType, long[], long[], bool, Action, ulong, ulong)"/>
    /// with DLPack <paramref name="flags"/>: <see cref="FlagReadOnly"/>, and
    /// <see cref="FlagIsSubbyteTypePadded"/> for sub-byte elements stored one per byte. Flags the
    /// core does not accept are refused with its message; ownership as in the other overload.
    /// </summary>
    public static Tensor WrapNative(IntPtr data, Device device, DType dtype, long[] shape,
                                    long[] strides, ulong flags, Action release = null,
                                    ulong byteOffset = 0, ulong byteCount = ulong.MaxValue) {
      Releases.DrainIfQueued();
      GCHandle keep = release != null ? GCHandle.Alloc(release) : default(GCHandle);
      long token = release != null ? Releases.Token(keep, true) : 0;
      long t;
      try {
        t = DLBridgeNative.dlbx_tensor_wrap(data.ToInt64(), byteCount, shape, strides, device.Packed,
                                           dtype.Packed, byteOffset, flags, token);
      } catch {
        if (release != null) keep.Free(); // refused: nothing changed hands
        throw;
      }
      return new Tensor(t, keep, token);
    }
  }
}
