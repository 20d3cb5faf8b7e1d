// Tensor.Access.cs - what a tensor is (shape, dtype, ...) and its elements: spans, copies to and
// from arrays.
using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
  /// <summary>Where a tensor's elements are, for host-readable C-contiguous tensors: the address
  /// of the first element and the bytes the elements take. Valid while the tensor lives.</summary>
  public struct HostBuffer {
    /// <summary>The address of the first element.</summary>
    public IntPtr Data;
    /// <summary>The bytes the elements take.</summary>
    public long ByteCount;
  }

  public sealed partial class Tensor {
    // ---- properties -----------------------------------------------------------------------------
    /// <summary>The number of dimensions (0 for a scalar).</summary>
    public int NDim {
      get { long a = Enter(); try { return DLBridgeNative.dlbx_tensor_ndim(a); } finally { Exit(); } }
    }

    /// <summary>The extent of each dimension (a new array each call).</summary>
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

    /// <summary>The element type.</summary>
    public DType DType {
      get { long a = Enter(); try { return new DType(DLBridgeNative.dlbx_tensor_dtype(a)); } finally { Exit(); } }
    }

    /// <summary>The device the memory is on.</summary>
    public Device Device {
      get { long a = Enter(); try { return new Device(DLBridgeNative.dlbx_tensor_device(a)); } finally { Exit(); } }
    }

    /// <summary>The DLPack flags (FlagReadOnly, FlagIsCopied, ...).</summary>
    public ulong Flags {
      get { long a = Enter(); try { return DLBridgeNative.dlb_tensor_flags(a); } finally { Exit(); } }
    }

    /// <summary>True when the tensor carries DLPack's READ_ONLY flag: writes through the binding are refused.</summary>
    public bool IsReadOnly {
      get { long a = Enter(); try { return DLBridgeNative.dlb_tensor_is_read_only(a) != 0; } finally { Exit(); } }
    }

    /// <summary>True when this reference is the only holder of its memory (the core's rule).</summary>
    public bool IsExclusive {
      get { long a = Enter(); try { return DLBridgeNative.dlb_tensor_is_exclusive(a) != 0; } finally { Exit(); } }
    }

    /// <summary>True when the elements are C-contiguous (row-major, no gaps).</summary>
    public bool IsCContiguous {
      get { long a = Enter(); try { return DLBridgeNative.dlb_tensor_is_c_contiguous(a) != 0; } finally { Exit(); } }
    }

    /// <summary>True when the elements are F-contiguous (column-major, no gaps): a transpose of a
    /// C-contiguous tensor is.</summary>
    public bool IsFContiguous {
      get { long a = Enter(); try { return DLBridgeNative.dlb_tensor_is_f_contiguous(a) != 0; } finally { Exit(); } }
    }

    /// <summary>True when the host CPU can read the memory directly (CPU, CUDA pinned or managed, ROCm pinned memory).</summary>
    public bool IsHostReadable {
      get { long a = Enter(); try { return DLBridgeNative.dlb_tensor_is_host_readable(a) != 0; } finally { Exit(); } }
    }

    /// <summary>The number of elements (the product of the shape).</summary>
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

    // ---- the elements: one core call each ----------------------------------------------------
    /// <summary>The address and byte count of the elements (host-readable, C-contiguous;
    /// writable refused for READ_ONLY tensors), by the core's dlb_tensor_host_data. Valid while
    /// this tensor lives.</summary>
    public HostBuffer HostData(bool writable) {
      long a = Enter();
      try {
        long[] data = new long[1], size = new long[1];
        DLBridgeNative.dlb_tensor_host_data(a, writable ? 1 : 0, data, size);
        HostBuffer b;
        b.Data = new IntPtr(data[0]);
        b.ByteCount = size[0];
        return b;
      } finally {
        Exit();
      }
    }

    /// <summary>A writable span over the elements, by the core's typed host access
    /// (dlb_tensor_host_elements): refused with the core's status and message unless
    /// <typeparamref name="T"/> is the tensor's element type, the memory is host-readable and
    /// C-contiguous, and the tensor is not READ_ONLY. Valid while this tensor lives: dispose it
    /// only after the last use. With mcs, hold the span in a local before writing through it
    /// (<c>t.AsSpan&lt;float&gt;()[0] = 1</c> does not compile there: CS1612).</summary>
    public unsafe Span<T> AsSpan<T>() where T : struct {
      long a = Enter();
      try {
        long count;
        void* data = HostElements<T>(a, DLBridgeNative.DLB_ACCESS_WRITE, out count);
        return new Span<T>(data, SpanLength(count));
      } finally {
        Exit();
      }
    }

    /// <summary>A read-only span over the elements (the checks of <see cref="AsSpan{T}"/> but
    /// READ_ONLY).</summary>
    public unsafe ReadOnlySpan<T> AsReadOnlySpan<T>() where T : struct {
      long a = Enter();
      try {
        long count;
        void* data = HostElements<T>(a, DLBridgeNative.DLB_ACCESS_READ, out count);
        return new ReadOnlySpan<T>(data, SpanLength(count));
      } finally {
        Exit();
      }
    }

    private static unsafe void* HostElements<T>(long a, uint access, out long count) where T : struct {
      long[] data = new long[1], n = new long[1];
      DLBridgeNative.dlb_tensor_host_elements(a, DTypeOf<T>().Packed, access, data, n);
      count = n[0];
      return (void*)data[0];
    }

    private static int SpanLength(long n) {
      if (n > int.MaxValue) {
        throw new DLPackException(Status.Overflow, "the tensor has more elements than a span can hold");
      }
      return (int)n;
    }

    /// <summary>Copies the elements out in row-major order, whatever the strides and the device
    /// (dlb_tensor_copy_to_host); refused with the core's message unless
    /// <typeparamref name="T"/> is the tensor's element type.</summary>
    public T[] ToArray<T>() where T : struct {
      long a = Enter();
      try {
        long[] n = new long[1];
        DLBridgeNative.dlb_tensor_element_count(a, n);
        T[] result = new T[n[0]];
        CopyHost(a, result, false);
        return result;
      } finally {
        Exit();
      }
    }

    /// <summary>Copies <paramref name="data"/>, in row-major order, into the elements whatever
    /// the strides and the device (dlb_tensor_copy_from_host): refused with the core's message
    /// unless it holds exactly the tensor's elements of its element type, and for a READ_ONLY
    /// tensor.</summary>
    public void CopyFrom<T>(T[] data) where T : struct {
      if (data == null) throw new ArgumentNullException("data");
      long a = Enter();
      try {
        CopyHost(a, data, true);
      } finally {
        Exit();
      }
    }

    // One core copy between the tensor and an array, pinned for the call: `fixed` for bool[]
    // (which a GCHandle cannot pin on every runtime), a pinning GCHandle for the others (a
    // generic array cannot be `fixed` in C# 7.2).
    private static unsafe void CopyHost<T>(long a, T[] array, bool intoTensor) where T : struct {
      DType dtype = DTypeOf<T>();
      ulong bytes = (ulong)array.LongLength * (ulong)(dtype.Bits / 8);
      if (typeof(T) == typeof(bool)) {
        fixed (bool* p = (bool[])(object)array) CopyHost(a, dtype, (long)p, bytes, intoTensor);
        return;
      }
      GCHandle pin = GCHandle.Alloc(array, GCHandleType.Pinned);
      try {
        CopyHost(a, dtype, pin.AddrOfPinnedObject().ToInt64(), bytes, intoTensor);
      } finally {
        pin.Free();
      }
    }

    private static void CopyHost(long a, DType dtype, long buffer, ulong bytes, bool intoTensor) {
      if (intoTensor) {
        DLBridgeNative.dlb_tensor_copy_from_host(a, dtype.Packed, buffer, bytes);
      } else {
        DLBridgeNative.dlb_tensor_copy_to_host(a, dtype.Packed, buffer, bytes);
      }
    }

    /// <summary>One element, by its index (one per dimension; a negative one counts from the
    /// end), whatever the strides: the core checks the element type, the memory and the index
    /// (dlb_tensor_typed_element) and says what is wrong.</summary>
    public unsafe T GetElement<T>(params long[] index) where T : struct {
      long a = Enter();
      try {
        void* p = ElementAddress<T>(a, index, false);
        if (typeof(T) == typeof(float)) return (T)(object)*(float*)p;
        if (typeof(T) == typeof(double)) return (T)(object)*(double*)p;
        if (typeof(T) == typeof(sbyte)) return (T)(object)*(sbyte*)p;
        if (typeof(T) == typeof(byte)) return (T)(object)*(byte*)p;
        if (typeof(T) == typeof(short)) return (T)(object)*(short*)p;
        if (typeof(T) == typeof(ushort)) return (T)(object)*(ushort*)p;
        if (typeof(T) == typeof(int)) return (T)(object)*(int*)p;
        if (typeof(T) == typeof(uint)) return (T)(object)*(uint*)p;
        if (typeof(T) == typeof(long)) return (T)(object)*(long*)p;
        if (typeof(T) == typeof(ulong)) return (T)(object)*(ulong*)p;
        return (T)(object)(*(byte*)p != 0); // bool, one byte (DTypeOf refused every other T)
      } finally {
        Exit();
      }
    }

    /// <summary>Writes one element (see <see cref="GetElement{T}"/>); refused for a READ_ONLY
    /// tensor.</summary>
    public unsafe void SetElement<T>(T value, params long[] index) where T : struct {
      long a = Enter();
      try {
        void* p = ElementAddress<T>(a, index, true);
        object v = value;
        if (typeof(T) == typeof(float)) *(float*)p = (float)v;
        else if (typeof(T) == typeof(double)) *(double*)p = (double)v;
        else if (typeof(T) == typeof(sbyte)) *(sbyte*)p = (sbyte)v;
        else if (typeof(T) == typeof(byte)) *(byte*)p = (byte)v;
        else if (typeof(T) == typeof(short)) *(short*)p = (short)v;
        else if (typeof(T) == typeof(ushort)) *(ushort*)p = (ushort)v;
        else if (typeof(T) == typeof(int)) *(int*)p = (int)v;
        else if (typeof(T) == typeof(uint)) *(uint*)p = (uint)v;
        else if (typeof(T) == typeof(long)) *(long*)p = (long)v;
        else if (typeof(T) == typeof(ulong)) *(ulong*)p = (ulong)v;
        else *(byte*)p = (byte)((bool)v ? 1 : 0);
      } finally {
        Exit();
      }
    }

    private static unsafe void* ElementAddress<T>(long a, long[] index, bool writable) where T : struct {
      // One core call: the element type, the host's access and READ_ONLY, then the index.
      long[] address = new long[1];
      DLBridgeNative.dlb_tensor_typed_element(a, DTypeOf<T>().Packed,
          writable ? DLBridgeNative.DLB_ACCESS_WRITE : DLBridgeNative.DLB_ACCESS_READ, index, address);
      return (void*)address[0];
    }
  }
}
