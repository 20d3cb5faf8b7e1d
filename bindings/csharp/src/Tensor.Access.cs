// Tensor.Access.cs - what a tensor is (shape, dtype, ...) and its elements: spans, copies to and
// from arrays.
using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
  /// <summary>Where a tensor's elements are, for host-readable C-contiguous tensors: the address
  /// of the first element and the bytes the elements take. Valid while the tensor lives.</summary>
  public struct HostBuffer {
    public IntPtr Data;
    public long ByteCount;
  }

  public sealed partial class Tensor {
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
  }
}
