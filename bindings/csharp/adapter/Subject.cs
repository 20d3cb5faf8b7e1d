// The C# adapter's one table (dlpack_conformance.h): the binding as the conformance kit's subject
// and, through the exchange extension, the interop matrix's C# side, over the public API alone.
// The table lives in unmanaged memory and points to the static methods below (reverse P/Invoke);
// adapter_csharp.c exports it from an embedded Mono, Host.cs runs it in process.
// Producer: the kit's values, wrapped read-only, copied into a tensor laid out as asked, shared
// read-only or copied, exported. Consumer: an import read back with CopyInto into the kit's
// buffer. The live count is the binding's own core's. Exchange producer: a managed array pinned
// by Tensor.Wrap; DLBridge.ReleasedCount (after CollectReleased) counts its releases.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;
using DLBridge;
using DLBridge.VmHost;

namespace DLBridge.Conformance {
  [StructLayout(LayoutKind.Sequential)]
  internal struct DLDataType {
    public byte Code;
    public byte Bits;
    public ushort Lanes;
  }

  // dlpc_case_spec
  [StructLayout(LayoutKind.Sequential)]
  internal unsafe struct CaseSpec {
    public ulong StructSize;
    public int CaseId;
    public IntPtr Check;
    public DLDataType DType;
    public int NDim;
    public long* Shape;
    public long* Strides;
    public long OffsetElements;
    public ulong Flags;
    public IntPtr Values;
    public ulong ValuesSize;
  }

  // dlpc_consume_report
  [StructLayout(LayoutKind.Sequential)]
  internal unsafe struct ConsumeReport {
    public const int MaxNDim = 8; // DLPC_MAX_NDIM
    public ulong StructSize;
    public IntPtr Handle;
    public IntPtr FirstElement;
    public int NDim;
    public fixed long Shape[MaxNDim];
    public int StridesKnown;
    public fixed long Strides[MaxNDim];
    public int Writable;
    public IntPtr Values;
    public ulong ValuesCapacity;
    public ulong ValuesSize;
    public fixed byte Message[256];
  }

  // A DLManagedTensorVersioned (dlpack.h) up to dl_tensor.byte_offset: where an imported
  // tensor's element 0 is.
  [StructLayout(LayoutKind.Sequential)]
  internal struct ManagedTensorHead {
    public uint VersionMajor;
    public uint VersionMinor;
    public IntPtr ManagerCtx;
    public IntPtr Deleter;
    public ulong Flags;
    public IntPtr Data;
    public int DeviceType;
    public int DeviceId;
    public int NDim;
    public DLDataType DType;
    public IntPtr Shape;
    public IntPtr Strides;
    public ulong ByteOffset;
  }

  // dlpc_subject
  [StructLayout(LayoutKind.Sequential)]
  internal struct SubjectTable {
    public ulong StructSize;
    public uint ContractVersion;
    public IntPtr Name;
    public IntPtr Ctx;
    public IntPtr ProduceVersioned;
    public IntPtr ProduceLegacy;
    public IntPtr ConsumeVersioned;
    public IntPtr ConsumeLegacy;
    public IntPtr Release;
    public IntPtr LiveCount;
    public IntPtr Language;
    public IntPtr ExchangeProduce;
    public IntPtr Releases;
  }

  // dlpc_exchange_case: a name, then int64_t fields only.
  [StructLayout(LayoutKind.Sequential)]
  internal unsafe struct ExchangeCase {
    public IntPtr Name;
    public long DTypeCode;
    public long DTypeBits;
    public long BaseNDim;
    public fixed long BaseShape[2];
    public long Op;
    public fixed long OpArgs[3];
    public long NDim;
    public fixed long Shape[2];
    public fixed long Strides[2];
    public long First;
    public long Flags;
    public long LegacyRefused;
  }

  // dlpc_exchange_report.
  [StructLayout(LayoutKind.Sequential)]
  internal unsafe struct ExchangeReport {
    public int Status;
    public ulong Base;
    public fixed byte Message[256];
  }

  internal unsafe delegate int ProduceFn(IntPtr ctx, CaseSpec* spec, IntPtr* result, IntPtr message, UIntPtr size);
  internal unsafe delegate int ConsumeFn(IntPtr ctx, IntPtr tensor, ConsumeReport* report);
  internal delegate void ReleaseFn(IntPtr ctx, IntPtr handle);
  internal delegate long LiveCountFn(IntPtr ctx);
  internal unsafe delegate IntPtr ExchangeProduceFn(IntPtr ctx, ExchangeCase* c, int legacy, ExchangeReport* r);

  internal static unsafe class Subject {
    // dlpack_conformance.h
    const uint ContractVersion = 1; // DLPC_CONTRACT_VERSION
    const int Ok = 0, Unsupported = 1, Refused = 2, Error = 3; // DLPC_*

    // The table's delegates, kept alive for the life of the process: native code holds their
    // function pointers.
    static readonly List<Delegate> kept = new List<Delegate>();
    static IntPtr table = IntPtr.Zero;

    static IntPtr Pointer(Delegate fn) {
      kept.Add(fn);
      return Marshal.GetFunctionPointerForDelegate(fn);
    }

    /// <summary>The subject's dlpc_subject table (unmanaged memory, never freed).</summary>
    public static IntPtr Table() {
      if (table != IntPtr.Zero) return table;
      SubjectTable t;
      t.StructSize = (ulong)Marshal.SizeOf(typeof(SubjectTable));
      t.ContractVersion = ContractVersion;
      t.Name = Marshal.StringToHGlobalAnsi("dlbridge C# binding");
      t.Ctx = IntPtr.Zero;
      t.ProduceVersioned = Pointer(new ProduceFn(ProduceVersioned));
      t.ProduceLegacy = Pointer(new ProduceFn(ProduceLegacy));
      t.ConsumeVersioned = Pointer(new ConsumeFn(ConsumeVersioned));
      t.ConsumeLegacy = Pointer(new ConsumeFn(ConsumeLegacy));
      t.Release = Pointer(new ReleaseFn(Release));
      t.LiveCount = Pointer(new LiveCountFn(LiveCount));
      t.Language = Marshal.StringToHGlobalAnsi("csharp");
      t.ExchangeProduce = Pointer(new ExchangeProduceFn(ExchangeProduce));
      t.Releases = Pointer(new LiveCountFn(Releases));
      table = Marshal.AllocHGlobal(Marshal.SizeOf(typeof(SubjectTable)));
      Marshal.StructureToPtr(t, table, false);
      return table;
    }

    static string Why(IDLPackError e) { return e.StatusName + ": " + e.Message; }

    /// <summary>Writes text, NUL-terminated and cut to fit, into a C buffer of size bytes.</summary>
    static void Say(string text, byte* buffer, long size) {
      if (size <= 0) return;
      byte[] bytes = Encoding.UTF8.GetBytes(text);
      long n = Math.Min(bytes.LongLength, size - 1);
      for (long i = 0; i < n; ++i) buffer[i] = bytes[i];
      buffer[n] = 0;
    }

    static long[] Dims(long* dims, int ndim) {
      long[] v = new long[ndim];
      for (int d = 0; d < ndim; ++d) v[d] = dims[d];
      return v;
    }

    [MonoPInvokeCallback(typeof(ProduceFn))]
    static int ProduceVersioned(IntPtr ctx, CaseSpec* spec, IntPtr* result, IntPtr message, UIntPtr size) {
      return Produce(spec, false, result, (byte*)message, (long)size.ToUInt64());
    }

    [MonoPInvokeCallback(typeof(ProduceFn))]
    static int ProduceLegacy(IntPtr ctx, CaseSpec* spec, IntPtr* result, IntPtr message, UIntPtr size) {
      return Produce(spec, true, result, (byte*)message, (long)size.ToUInt64());
    }

    /// <summary>Exports the tensor the kit describes; *result is then the kit's.</summary>
    static int Produce(CaseSpec* spec, bool legacy, IntPtr* result, byte* message, long size) {
      // How sub-byte elements are stored (packed, or padded to a byte each): the kit's values
      // and the export share it.
      ulong layout = spec->Flags & Tensor.FlagIsSubbyteTypePadded;
      Tensor laidOut = null, exported = null;
      bool exporting = false;
      try {
        DType dtype = new DType(spec->DType.Code, spec->DType.Bits, spec->DType.Lanes);
        long[] shape = Dims(spec->Shape, spec->NDim);
        long[] strides = spec->Strides != null ? Dims(spec->Strides, spec->NDim) : null;
        laidOut = LayOut(dtype, shape, strides, spec->OffsetElements, layout);
        if (spec->ValuesSize > 0) {
          // The kit's values, valid for this call: wrapped read-only and copied out.
          using (Tensor kit = Tensor.WrapNative(spec->Values, Device.Cpu, dtype, shape, null,
                                                Tensor.FlagReadOnly | layout)) {
            kit.CopyInto(laidOut);
          }
        }
        if ((spec->Flags & Tensor.FlagReadOnly) != 0) {
          exported = laidOut.ShareReadOnly();
        } else if ((spec->Flags & Tensor.FlagIsCopied) != 0) {
          exported = laidOut.CopyTo(Device.Cpu); // a copy its consumer solely owns: IS_COPIED
        } else {
          exported = laidOut;
        }
        exporting = true;
        *result = legacy ? exported.ExportLegacy() : exported.ExportVersioned();
        return Ok;
      } catch (Exception ex) when (ex is IDLPackError e) {
        Say(Why(e), message, size);
        // Only what the legacy struct cannot say (READ_ONLY, sub-byte padding) is refused.
        if (exporting) return legacy ? Refused : Error;
        return e.Status == Status.Unsupported ? Unsupported : Error;
      } catch (Exception e) {
        Say(e.ToString(), message, size);
        return Error;
      } finally {
        // Dispose does nothing to a tensor already exported.
        if (exported != null) exported.Dispose();
        if (laidOut != null) laidOut.Dispose();
      }
    }

    /// <summary>An uninitialised tensor with the layout asked for.</summary>
    static Tensor LayOut(DType dtype, long[] shape, long[] strides, long offset, ulong layout) {
      if (offset > 0) {
        // A view `offset` elements into a larger allocation.
        long count = 1;
        foreach (long extent in shape) count *= extent;
        using (Tensor b = Tensor.Allocate(Device.Cpu, dtype, new long[] { offset + count }, null, layout))
        using (Tensor tail = b.Slice(new SliceRange(offset, SliceRange.None))) {
          return tail.Reshape(shape);
        }
      }
      return Tensor.Allocate(Device.Cpu, dtype, shape, strides, layout);
    }

    [MonoPInvokeCallback(typeof(ConsumeFn))]
    static int ConsumeVersioned(IntPtr ctx, IntPtr tensor, ConsumeReport* report) {
      return Consume(tensor, false, report);
    }

    [MonoPInvokeCallback(typeof(ConsumeFn))]
    static int ConsumeLegacy(IntPtr ctx, IntPtr tensor, ConsumeReport* report) {
      return Consume(tensor, true, report);
    }

    /// <summary>Imports the kit's tensor (ownership moves here in every case) and reports what
    /// the binding reads of it.</summary>
    static int Consume(IntPtr tensor, bool legacy, ConsumeReport* report) {
      Tensor t = null;
      try {
        t = legacy ? Tensor.ImportLegacy(tensor) : Tensor.ImportVersioned(tensor);
        long[] shape = t.Shape;
        long[] strides = t.Strides;
        if (shape.Length > ConsumeReport.MaxNDim) {
          throw new ArgumentException("ndim " + shape.Length + " is more than a report holds");
        }
        report->NDim = shape.Length;
        for (int d = 0; d < shape.Length; ++d) {
          report->Shape[d] = shape[d];
          report->Strides[d] = strides[d];
        }
        report->StridesKnown = 1;
        report->Writable = t.IsReadOnly ? 0 : 1;
        long count = t.ElementCount;
        if (count > 0) report->FirstElement = new IntPtr((long)FirstElement(t));
        report->ValuesSize = ReadValues(t, count, report->Values);
        report->Handle = GCHandle.ToIntPtr(GCHandle.Alloc(t));
        return Ok;
      } catch (Exception e) when (t == null && e is IDLPackError) {
        Say(Why((IDLPackError)e), report->Message, 256); // the import has called the deleter
        return Refused;
      } catch (Exception e) {
        t?.Dispose();
        Say(e.ToString(), report->Message, 256);
        return Error;
      }
    }

    /// <summary>Copies t's elements, compact in C order, into the kit's buffer; their byte
    /// count, or ulong.MaxValue when not read.</summary>
    static ulong ReadValues(Tensor t, long count, IntPtr values) {
      if (count == 0) return 0;
      ulong layout = t.Flags & Tensor.FlagIsSubbyteTypePadded;
      using (Tensor compact = Tensor.WrapNative(values, Device.Cpu, t.DType, t.Shape, null, layout)) {
        t.CopyInto(compact);
        return (ulong)compact.ByteSize;
      }
    }

    /// <summary>Drops a consumed tensor (on whatever thread the kit calls from): its producer's
    /// deleter runs now.</summary>
    [MonoPInvokeCallback(typeof(ReleaseFn))]
    static void Release(IntPtr ctx, IntPtr handle) {
      try {
        GCHandle h = GCHandle.FromIntPtr(handle);
        Tensor t = (Tensor)h.Target;
        h.Free();
        t.Dispose();
      } catch (Exception e) {
        Console.Error.WriteLine("csharp subject: release threw " + e);
      }
    }

    [MonoPInvokeCallback(typeof(LiveCountFn))]
    static long LiveCount(IntPtr ctx) { return DLBridge.LiveCount; }

    // ---- the interop matrix's producer (the exchange extension) ----

    const int OpNone = 0, OpTranspose = 1, OpSlice = 2, OpSelect = 3, OpReadOnly = 4, OpCopy = 5;

    [MonoPInvokeCallback(typeof(LiveCountFn))]
    static long Releases(IntPtr ctx) {
      DLBridge.CollectReleased(); // unpin what foreign threads released
      return DLBridge.ReleasedCount;
    }

    // interop_base_value (tests/interop/interop_cases.c), mirrored.
    static double BaseValue(long code, long i) {
      if (code == 1) return (double)(i * 3 + 1);
      if (code == 2) return (double)(i * 3 - 4) / 2.0;
      return (double)(i * 3 - 4);
    }

    // Element 0's address as the binding shows it (Tensor.Address, its DLManagedTensorVersioned).
    static ulong FirstElement(Tensor t) {
      ManagedTensorHead* head = (ManagedTensorHead*)t.Address;
      return (ulong)((byte*)head->Data + head->ByteOffset);
    }

    static Tensor MakeBase(ExchangeCase* c) {
      long[] shape = Dims(c->BaseShape, (int)c->BaseNDim);
      long n = 1;
      foreach (long e in shape) n *= e;
      long code = c->DTypeCode, bits = c->DTypeBits;
      if (code == 2 && bits == 32) return Tensor.Wrap(Fill(n, i => (float)BaseValue(code, i)), shape);
      if (code == 2 && bits == 64) return Tensor.Wrap(Fill(n, i => BaseValue(code, i)), shape);
      if (code == 0 && bits == 32) return Tensor.Wrap(Fill(n, i => (int)BaseValue(code, i)), shape);
      if (code == 0 && bits == 64) return Tensor.Wrap(Fill(n, i => (long)BaseValue(code, i)), shape);
      if (code == 1 && bits == 8) return Tensor.Wrap(Fill(n, i => (byte)BaseValue(code, i)), shape);
      throw new ArgumentException("dtype " + code + "/" + bits + " not in the adapter");
    }

    static T[] Fill<T>(long n, Func<long, T> value) {
      T[] a = new T[n];
      for (long i = 0; i < n; ++i) a[i] = value(i);
      return a;
    }

    static Tensor View(Tensor b, ExchangeCase* c, ExchangeReport* r) {
      switch ((int)c->Op) {
        case OpNone: return b.Share();
        case OpTranspose: return b.Transpose();
        case OpSlice: return b.Slice(new SliceRange(c->OpArgs[0], c->OpArgs[1], c->OpArgs[2]));
        case OpSelect: return b.Select((int)c->OpArgs[0], c->OpArgs[1]);
        case OpReadOnly: return b.ShareReadOnly();
        case OpCopy:
          Tensor copy = b.CopyTo(Device.Cpu);
          r->Base = FirstElement(copy);
          return copy;
      }
      throw new ArgumentException("unknown op " + c->Op);
    }

    [MonoPInvokeCallback(typeof(ExchangeProduceFn))]
    static IntPtr ExchangeProduce(IntPtr ctx, ExchangeCase* c, int legacy, ExchangeReport* r) {
      *r = default(ExchangeReport);
      Tensor t = null;
      try {
        using (Tensor b = MakeBase(c)) { // the view keeps the memory alive on its own
          r->Base = FirstElement(b);
          t = View(b, c, r);
        }
        return legacy != 0 ? t.ExportLegacy() : t.ExportVersioned();
      } catch (Exception e) {
        r->Status = (e as IDLPackError)?.Status ?? -1;
        Say("produce: " + e.Message, r->Message, 256);
        return IntPtr.Zero;
      } finally {
        if (t != null) t.Dispose(); // nothing to an exported tensor; a refused one is ours
      }
    }
  }
}
