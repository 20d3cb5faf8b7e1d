using System;
using System.Linq;
using NUnit.Framework;

namespace DLBridge.Tests {
  [TestFixture]
  public class TensorTest : LeakChecked {
    private static void RoundTrip<T>(T[] values, DType dtype) where T : struct {
      using (Tensor t = Tensor.FromArray(values, 2, values.Length / 2)) {
        Assert.AreEqual(dtype, t.DType);
        Assert.AreEqual(dtype, Tensor.DTypeOf<T>());
        Assert.AreEqual(new long[] { 2, values.Length / 2 }, t.Shape);
        Assert.AreEqual(Device.Cpu, t.Device);
        Assert.AreEqual(values.Length, t.ElementCount);
        Assert.AreEqual(values, t.ToArray<T>());
        Assert.IsTrue(t.IsExclusive);
        Assert.AreEqual(values, t.AsReadOnlySpan<T>().ToArray());
      }
      if (typeof(T) == typeof(bool)) return;
      T[] copy = (T[])values.Clone();
      using (Tensor w = Tensor.Wrap(copy)) {
        Assert.AreEqual(dtype, w.DType);
        Assert.AreEqual(values, w.ToArray<T>());
        // Zero copy: the tensor's memory is the array.
        Span<T> span = w.AsSpan<T>();
        span[0] = values[values.Length - 1];
        Assert.AreEqual(values[values.Length - 1], copy[0]);
      }
    }

    [Test]
    public void RoundTripEveryDType() {
      RoundTrip(new float[] { 1.5f, -2, float.MaxValue, float.Epsilon }, DType.Float32);
      RoundTrip(new double[] { 1.5, -2, double.MaxValue, double.Epsilon }, DType.Float64);
      RoundTrip(new sbyte[] { 1, -2, sbyte.MinValue, sbyte.MaxValue }, DType.Int8);
      RoundTrip(new byte[] { 1, 2, 0, byte.MaxValue }, DType.UInt8);
      RoundTrip(new short[] { 1, -2, short.MinValue, short.MaxValue }, DType.Int16);
      RoundTrip(new ushort[] { 1, 2, 0, ushort.MaxValue }, DType.UInt16);
      RoundTrip(new int[] { 1, -2, int.MinValue, int.MaxValue }, DType.Int32);
      RoundTrip(new uint[] { 1, 2, 0, uint.MaxValue }, DType.UInt32);
      RoundTrip(new long[] { 1, -2, long.MinValue, long.MaxValue }, DType.Int64);
      RoundTrip(new ulong[] { 1, 2, 0, ulong.MaxValue }, DType.UInt64);
      RoundTrip(new bool[] { true, false, false, true }, DType.Bool);
    }

    [Test]
    public void AllocateWithStridesAndFlags() {
      using (Tensor t = Tensor.Allocate(Device.Cpu, DType.Int32, new long[] { 2, 3 }, new long[] { 1, 2 }, true)) {
        Assert.AreEqual(new long[] { 1, 2 }, t.Strides);
        Assert.IsTrue(t.IsReadOnly);
        Assert.AreEqual(Tensor.FlagReadOnly, t.Flags & Tensor.FlagReadOnly);
        Assert.IsFalse(t.IsCContiguous);
        Assert.IsTrue(t.IsFContiguous); // strides (1, 2) of a 2x3: column-major
        Assert.AreEqual(24, t.ByteSize);
      }
      using (Tensor t = Tensor.Allocate(Device.Cpu, DType.Float32, 4, 5)) {
        Assert.AreEqual(new long[] { 5, 1 }, t.Strides);
        Assert.IsTrue(t.IsCContiguous);
        Assert.IsFalse(t.IsFContiguous);
        Assert.AreEqual(2, t.NDim);
        Assert.AreEqual(0UL, t.Flags & Tensor.FlagReadOnly);
        Assert.AreEqual("Tensor(float32, [4, 5], cpu)", t.ToString());
      }
      using (Tensor scalar = Tensor.Allocate(Device.Cpu, DType.Float64)) {
        Assert.AreEqual(0, scalar.NDim);
        Assert.AreEqual(1, scalar.ElementCount);
      }
    }

    [Test]
    public unsafe void PaddedSubByteTensorsTakeOneBytePerElement() {
      DType u4 = DType.Parse("uint4");
      ulong padded = Tensor.FlagIsSubbyteTypePadded;
      byte[] values = { 1, 2, 3, 4, 5 };
      byte[] back = new byte[5];
      fixed (byte* v = values)
      fixed (byte* b = back) {
        using (Tensor src = Tensor.WrapNative((IntPtr)v, Device.Cpu, u4, new long[] { 5 }, null, padded))
        using (Tensor dst = Tensor.Allocate(Device.Cpu, u4, new long[] { 5 }, null, padded))
        using (Tensor output = Tensor.WrapNative((IntPtr)b, Device.Cpu, u4, new long[] { 5 }, null, padded))
        using (Tensor packed = Tensor.Allocate(Device.Cpu, u4, 5)) {
          Assert.AreEqual(padded, src.Flags);
          Assert.AreEqual(padded, dst.Flags);
          Assert.AreEqual(5, dst.ByteSize);
          Assert.AreEqual(3, packed.ByteSize);
          src.CopyInto(dst);
          dst.CopyInto(output);
        }
      }
      Assert.AreEqual(values, back);
      // Flags the core does not accept are refused with its message.
      TestUtil.Throws(Status.InvalidArgument, "flag IS_COPIED cannot be requested for a new allocation",
          () => Tensor.Allocate(Device.Cpu, u4, new long[] { 5 }, null, Tensor.FlagIsCopied));
      TestUtil.Throws(Status.Unsupported, "flags 0x10000000000 contain bits unknown to DLPack 1.3",
          () => Tensor.Allocate(Device.Cpu, u4, new long[] { 5 }, null, 1UL << 40));
    }

    [Test]
    public void ViewsOutliveTheirBase() {
      Tensor b = Tensor.FromArray(Enumerable.Range(0, 24).Select(i => (float)i).ToArray(), 4, 6);
      Tensor slice = b.Slice(new SliceRange(1, 3), new SliceRange(SliceRange.None, SliceRange.None, 2));
      Tensor select = b.Select(0, -1);
      Tensor reshaped = b.Reshape(3, -1);
      Tensor permuted = b.Permute(1, 0);
      Tensor transposed = b.Transpose();
      Tensor shared = b.ShareReadOnly();
      b.Dispose();
      TestUtil.ThrowsClosed(() => { var unused = b.Shape; });
      Assert.AreEqual(new long[] { 2, 3 }, slice.Shape);
      Assert.AreEqual(new float[] { 6, 8, 10, 12, 14, 16 }, slice.ToArray<float>());
      Assert.AreEqual(new float[] { 18, 19, 20, 21, 22, 23 }, select.ToArray<float>());
      Assert.AreEqual(new long[] { 3, 8 }, reshaped.Shape);
      Assert.AreEqual(new long[] { 6, 4 }, permuted.Shape);
      Assert.AreEqual(new float[] { 0, 6, 12, 18, 1, 7 }, permuted.ToArray<float>().Take(6).ToArray());
      Assert.AreEqual(new long[] { 1, 6 }, transposed.Strides);
      Assert.IsTrue(shared.IsReadOnly);
      Assert.IsFalse(shared.IsExclusive);
      TestUtil.Throws(Status.Layout, "the tensor is not C-contiguous: copy it to a contiguous tensor first",
                      () => slice.AsSpan<float>());
      foreach (Tensor v in new[] { slice, select, reshaped, permuted, transposed, shared }) v.Dispose();
    }

    [Test]
    public void CopiesAndCopyInto() {
      using (Tensor src = Tensor.FromArray(new[] { 1, 2, 3, 4, 5, 6 }, 2, 3))
      using (Tensor t = src.Transpose())
      using (Tensor copy = t.CopyTo(Device.Cpu))
      using (Tensor async = t.CopyToAsync(Device.Cpu, IntPtr.Zero))
      using (Tensor dst = Tensor.Allocate(Device.Cpu, DType.Int32, 3, 2)) {
        Assert.AreEqual(new[] { 1, 4, 2, 5, 3, 6 }, copy.ToArray<int>());
        Assert.AreEqual(Tensor.FlagIsCopied, copy.Flags & Tensor.FlagIsCopied);
        Assert.AreEqual(new[] { 1, 4, 2, 5, 3, 6 }, async.ToArray<int>());
        t.CopyInto(dst);
        Assert.AreEqual(new[] { 1, 4, 2, 5, 3, 6 }, dst.ToArray<int>());
        using (Tensor ro = dst.ShareReadOnly()) {
          TestUtil.Throws(Status.ReadOnly, "cannot copy into a read-only tensor", () => t.CopyInto(ro));
        }
        Device.Cpu.Synchronize();
      }
    }

    [Test]
    public void SpansSeeTheTensorsMemory() {
      using (Tensor t = Tensor.FromArray(new double[] { 1, 2, 3 })) {
        Span<double> s = t.AsSpan<double>();
        s[1] = 20;
        Assert.AreEqual(new double[] { 1, 20, 3 }, t.ToArray<double>());
        HostBuffer b = t.HostData(false);
        Assert.AreEqual(24, b.ByteCount);
        Assert.AreNotEqual(IntPtr.Zero, b.Data);
        using (Tensor ro = t.ShareReadOnly()) {
          Assert.AreEqual(3, ro.AsReadOnlySpan<double>().Length);
          TestUtil.Throws(Status.ReadOnly, "the tensor is read-only", () => ro.AsSpan<double>());
          TestUtil.Throws(Status.ReadOnly, "cannot copy into a read-only tensor", () => ro.CopyFrom(new double[] { 1, 2, 3 }));
          TestUtil.Throws(Status.ReadOnly, "the tensor is read-only", () => ro.HostData(true));
        }
      }
    }

    [Test]
    public void Misuse() {
      Tensor t = Tensor.FromArray(new float[] { 1, 2 });
      t.Dispose();
      t.Dispose(); // idempotent
      Assert.IsTrue(t.IsDisposed);
      // Use after Dispose: DLB_ERR_CLOSED with the message every binding gives, as an
      // ObjectDisposedException.
      TestUtil.ThrowsClosed(() => t.ToArray<float>());
      ObjectDisposedException e = Assert.Catch<ObjectDisposedException>(() => t.ToArray<float>());
      Assert.AreEqual("Tensor", e.ObjectName);
      Assert.AreEqual("the tensor is closed", e.Message);
      TestUtil.ThrowsClosed(() => t.Share());
      TestUtil.ThrowsClosed(() => t.ExportVersioned());
      TestUtil.ThrowsClosed(() => t.ExportLegacy());
      TestUtil.ThrowsClosed(() => { var unused = t.Address; });
      Assert.AreEqual("Tensor(disposed)", t.ToString());

      using (Tensor i = Tensor.FromArray(new[] { 1, 2, 3 })) {
        // A wrong element type is the core's refusal, an ArgumentException as .NET users expect.
        TestUtil.Throws(Status.InvalidArgument, "the tensor holds int32 elements, not float32",
                        () => i.ToArray<float>());
        Assert.Catch<ArgumentException>(() => i.ToArray<float>());
        TestUtil.Throws(Status.InvalidArgument, "the tensor holds int32 elements, not int64",
                        () => i.CopyFrom(new long[] { 1, 2, 3 }));
        TestUtil.Throws(Status.InvalidArgument, "the buffer holds 8 bytes but the tensor's 3 int32 elements take 12",
                        () => i.CopyFrom(new int[] { 1, 2 }));
        TestUtil.Throws(Status.InvalidArgument, "the tensor holds int32 elements, not float64",
                        () => i.AsSpan<double>());
        TestUtil.Throws(Status.InvalidArgument, "the tensor holds int32 elements, not uint8",
                        () => i.GetElement<byte>(0));
        TestUtil.Throws(Status.InvalidArgument, "no dtype for elements of type Decimal",
                        () => i.ToArray<decimal>());
      }
      TestUtil.Throws(Status.InvalidArgument, "shape[0] is -1; extents must not be negative",
                      () => Tensor.Allocate(Device.Cpu, DType.Float32, -1, 2));
      TestUtil.Throws(Status.Overflow, "element count of shape (9223372036854775807, 2) overflows 63 bits",
                      () => Tensor.Allocate(Device.Cpu, DType.Float32, long.MaxValue, 2));
      TestUtil.Throws(Status.InvalidArgument, "shape is null",
                      () => Tensor.Allocate(Device.Cpu, DType.Float32, null));
      TestUtil.Throws(Status.InvalidArgument, "ndim 65 exceeds the maximum of 64",
                      () => Tensor.Allocate(Device.Cpu, DType.Float32, new long[65]));
      TestUtil.Throws(Status.InvalidArgument, "strides must have one value per extent",
                      () => Tensor.Allocate(Device.Cpu, DType.Float32, new long[] { 2 }, new long[] { 1, 1 }));
      TestUtil.Throws(Status.InvalidArgument, "the buffer holds 16 bytes but the tensor's 6 float32 elements take 24",
                      () => Tensor.FromArray(new float[4], 2, 3));
      // The core's buffer check, before anything is built (dlb_tensor_wrap_buffer).
      TestUtil.Throws(Status.InvalidArgument, "the tensor's elements reach bytes [0, 24) of a buffer of 16 bytes",
                      () => Tensor.Wrap(new float[4], 2, 3));
      TestUtil.Throws(Status.InvalidArgument, "a bool[] cannot be wrapped: use FromArray",
                      () => Tensor.Wrap(new bool[4]));
    }

    [Test]
    public void ElementsAndCopiesOfAnyLayout() {
      using (Tensor b = Tensor.FromArray(Enumerable.Range(0, 12).Select(i => (float)i).ToArray(), 3, 4))
      using (Tensor tr = b.Transpose())
      using (Tensor reversed = b.Slice(new SliceRange(SliceRange.None, SliceRange.None, -1),
                                       new SliceRange(SliceRange.None, SliceRange.None, 2))) {
        // Copies out and in are one core call whatever the strides.
        Assert.AreEqual(new float[] { 8, 10, 4, 6, 0, 2 }, reversed.ToArray<float>());
        tr.CopyFrom(Enumerable.Range(100, 12).Select(i => (float)i).ToArray());
        Assert.AreEqual(new float[] { 100, 103, 106, 109, 101, 104, 107, 110, 102, 105, 108, 111 },
                        b.ToArray<float>());
        TestUtil.Throws(Status.InvalidArgument, "the buffer holds 20 bytes but the tensor's 12 float32 elements take 48",
                        () => tr.CopyFrom(new float[5]));
        // Elements by index through the core, strides honoured, negative indices from the end.
        Assert.AreEqual(103f, tr.GetElement<float>(1, 0));
        Assert.AreEqual(111f, tr.GetElement<float>(-1, -1));
        tr.SetElement(7f, 1, 0);
        Assert.AreEqual(7f, b.GetElement<float>(0, 1));
        TestUtil.Throws(Status.InvalidArgument, "index 4 is out of range for axis 0 with extent 4",
                        () => tr.GetElement<float>(4, 0));
        TestUtil.Throws(Status.Layout, "the tensor is not C-contiguous: copy it to a contiguous tensor first",
                        () => tr.AsReadOnlySpan<float>());
        using (Tensor ro = b.ShareReadOnly()) {
          Assert.AreEqual(7f, ro.GetElement<float>(0, 1));
          TestUtil.Throws(Status.ReadOnly, "the tensor is read-only", () => ro.SetElement(1f, 0, 0));
        }
      }
      using (Tensor flags = Tensor.FromArray(new[] { true, false, true }))
      using (Tensor longs = Tensor.FromArray(new[] { long.MinValue, 5L })) {
        Assert.IsFalse(flags.GetElement<bool>(1));
        flags.SetElement(true, 1);
        Assert.AreEqual(new[] { true, true, true }, flags.ToArray<bool>());
        Assert.AreEqual(long.MinValue, longs.GetElement<long>(0));
      }
    }

    [Test]
    public void WrapWithStridesAndReadOnly() {
      int[] data = { 0, 1, 2, 3, 4, 5 };
      // A 3 x 2 column-major view of the array, read-only.
      using (Tensor t = Tensor.Wrap(data, new long[] { 3, 2 }, new long[] { 1, 3 }, true)) {
        Assert.AreEqual(new long[] { 1, 3 }, t.Strides);
        Assert.IsTrue(t.IsReadOnly);
        Assert.AreEqual(new[] { 0, 3, 1, 4, 2, 5 }, t.ToArray<int>());
        TestUtil.Throws(Status.ReadOnly, "cannot copy into a read-only tensor", () => t.CopyFrom(data));
        TestUtil.Throws(Status.ReadOnly,
            "cannot export a read-only tensor as a legacy DLManagedTensor, which has no READ_ONLY flag",
            () => t.ExportLegacy());
      }
      // Strides that reach past the array are refused before anything is handed out.
      TestUtil.Throws(Status.InvalidArgument, "the tensor's elements reach bytes [0, 28) of a buffer of 24 bytes",
                      () => Tensor.Wrap(data, new long[] { 3, 2 }, new long[] { 1, 4 }, false));
      TestUtil.Throws(Status.InvalidArgument, "strides must have one value per extent",
                      () => Tensor.Wrap(data, new long[] { 3, 2 }, new long[] { 1 }, false));
      // A shape smaller than the array: its first elements, no copy.
      using (Tensor w = Tensor.Wrap(data, 2, 2)) {
        Assert.AreEqual(new[] { 0, 1, 2, 3 }, w.ToArray<int>());
      }
    }

    [Test]
    public void DTypesAndDevicesThroughTheCore() {
      Assert.AreEqual(DType.Float32, DType.Parse("float32"));
      Assert.AreEqual(new DType(DType.CodeFloat, 32, 4), DType.Parse("float32x4"));
      Assert.AreEqual("bfloat16", DType.BFloat16.ToString());
      Assert.AreEqual(16, DType.Parse("float32x4").ElementSize);
      Assert.IsTrue(DType.Parse("int4").IsSubByte);
      TestUtil.Throws(Status.InvalidArgument, "dtype float with 31 bits is not a valid DLPack type",
                      () => DType.Parse("float31"));
      // A code nobody named is still a dtype value.
      DType unknown = new DType(200, 8);
      Assert.IsFalse(unknown.IsValid);
      Assert.AreEqual("dtype(code=200, bits=8, lanes=1)", unknown.ToString());

      Assert.AreEqual(Device.Cuda(1), Device.Parse("cuda:1"));
      Assert.AreEqual("opencl:0", Device.OpenCL().ToString());
      Assert.AreEqual("cpu", Device.Cpu.ToString());
      Assert.AreEqual("device_type_99:3", new Device(99, 3).ToString());
      Assert.AreEqual(new Device(99, 3), Device.Parse("device_type_99:3"));
      Assert.IsTrue(Device.Cpu.IsHostReadable);
      Assert.IsTrue(Device.Cpu.IsTypeKnown);
      Assert.IsTrue(Device.Cpu.HasBackend);
      Assert.IsFalse(new Device(99, 0).IsTypeKnown);
      Assert.AreEqual("cuda", Device.Cuda(0).TypeName);
      Assert.IsNull(new Device(99, 0).TypeName);
      Assert.IsFalse(Device.Cuda(0).IsHostReadable);
      Assert.AreEqual("DLB_ERR_READ_ONLY", Status.Name(Status.ReadOnly));
      Assert.AreEqual("DLB_ERR_UNKNOWN", Status.Name(1000));
      Assert.IsNotEmpty(DLBridge.Version);
    }
  }
}
