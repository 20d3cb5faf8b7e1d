// The C# agent of the interop matrix (tests/interop/README.md): produce and consume make,
// export, import and check DLPack tensors with the public API of the C# binding (namespace
// DLBridge) only. The C side of the contract (interop_agent.h) is an interop_agent table in
// unmanaged memory whose entries are reverse P/Invoke function pointers to the static methods
// below (their delegates are kept alive for the life of the process). The C# host (Host.cs) runs
// it in process; adapter_csharp.c embeds Mono to hand the same table to native hosts.
//
// Like the C and Rust agents, the binding's native library (libdlbridge_csharp.so) embeds a
// hidden static copy of the core: DLBridge.LiveCount is the C# side's own count. The producer's
// base memory is a managed array pinned by Tensor.Wrap; after DLBridge.CollectReleased (which
// lets go of what the consumer released, on whatever thread), DLBridge.ReleasedCount counts the
// releases of wrapped arrays, which is what the runner's "released exactly once" check needs.
using System;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using DLBridge;
using DLBridge.VmHost;

namespace DLBridge.Interop {
  // interop_case (interop_agent.h): a name, then int64_t fields only.
  [StructLayout(LayoutKind.Sequential)]
  internal unsafe struct Case {
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

  // interop_report.
  [StructLayout(LayoutKind.Sequential)]
  internal unsafe struct Report {
    public int Status;
    public int WriteRefused;
    public ulong Data;
    public ulong Base;
    public double Checksum;
    public fixed byte Message[256];
  }

  // interop_agent.
  [StructLayout(LayoutKind.Sequential)]
  internal struct AgentTable {
    public uint ContractVersion;
    public IntPtr Name;
    public IntPtr Produce;
    public IntPtr Consume;
    public IntPtr LiveCount;
    public IntPtr Releases;
  }

  [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
  internal unsafe delegate IntPtr ProduceFn(Case* c, int legacy, Report* r);
  [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
  internal unsafe delegate int ConsumeFn(IntPtr tensor, Case* c, int legacy, int freeOnNewThread, Report* r);
  [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
  internal delegate long CountFn();

  // A failed check of the agent's own (status -1).
  internal sealed class CheckFailed : Exception {
    public CheckFailed(string message) : base(message) { }
  }

  internal static unsafe class Agent {
    public const uint ContractVersion = 1; // INTEROP_CONTRACT_VERSION
    const int OpNone = 0, OpTranspose = 1, OpSlice = 2, OpSelect = 3, OpReadOnly = 4, OpCopy = 5;

    // Kept alive for the life of the process: native code holds their function pointers.
    static readonly ProduceFn produceFn = Produce;
    static readonly ConsumeFn consumeFn = Consume;
    static readonly CountFn liveCountFn = LiveCount;
    static readonly CountFn releasesFn = Releases;
    static IntPtr table = IntPtr.Zero;

    /// <summary>The agent's interop_agent table (unmanaged memory, never freed).</summary>
    public static IntPtr Table() {
      if (table != IntPtr.Zero) return table;
      AgentTable t;
      t.ContractVersion = ContractVersion;
      t.Name = Marshal.StringToHGlobalAnsi("csharp");
      t.Produce = Marshal.GetFunctionPointerForDelegate(produceFn);
      t.Consume = Marshal.GetFunctionPointerForDelegate(consumeFn);
      t.LiveCount = Marshal.GetFunctionPointerForDelegate(liveCountFn);
      t.Releases = Marshal.GetFunctionPointerForDelegate(releasesFn);
      table = Marshal.AllocHGlobal(Marshal.SizeOf(typeof(AgentTable)));
      Marshal.StructureToPtr(t, table, false);
      return table;
    }

    [MonoPInvokeCallback(typeof(CountFn))]
    static long LiveCount() { return DLBridge.LiveCount; }

    [MonoPInvokeCallback(typeof(CountFn))]
    static long Releases() {
      DLBridge.CollectReleased(); // unpin what foreign threads released
      return DLBridge.ReleasedCount;
    }

    // ---- the three value rules of interop_cases.c, mirrored ----

    static double BaseValue(long code, long i) {
      if (code == 1) return (double)(i * 3 + 1);
      if (code == 2) return (double)(i * 3 - 4) / 2.0;
      return (double)(i * 3 - 4);
    }

    static long ElementCount(Case* c) {
      long n = 1;
      for (int d = 0; d < c->NDim; ++d) n *= c->Shape[d];
      return n;
    }

    static double ExpectedValue(Case* c, long k) {
      long pos = c->First;
      for (long d = c->NDim - 1; d >= 0; --d) {
        pos += (k % c->Shape[d]) * c->Strides[d];
        k /= c->Shape[d];
      }
      return BaseValue(c->DTypeCode, pos);
    }

    // ---- reports ----

    static void Reset(Report* r) {
      *r = default(Report);
      r->WriteRefused = -1;
    }

    static int Fail(Report* r, int status, string message) {
      byte[] bytes = Encoding.UTF8.GetBytes(message);
      int n = Math.Min(bytes.Length, 255);
      for (int i = 0; i < 256; ++i) r->Message[i] = i < n ? bytes[i] : (byte)0;
      r->Status = status != 0 ? status : -1;
      return r->Status;
    }

    static int Fail(Report* r, Exception e, string what) {
      IDLPackError d = e as IDLPackError;
      return Fail(r, d != null ? d.Status : -1, what + ": " + e.Message);
    }

    // The first element's address as the binding shows it: the host data of a C-contiguous
    // tensor, else of the 0-d view of element 0 (Select along axis 0 until contiguous).
    static ulong FirstElement(Tensor t) {
      Tensor v = t;
      try {
        while (!v.IsCContiguous) {
          Tensor next = v.Select(0, 0);
          if (v != t) v.Dispose();
          v = next;
        }
        return (ulong)v.HostData(false).Data.ToInt64();
      } finally {
        if (v != t) v.Dispose();
      }
    }

    // ---- produce ----

    static Tensor MakeBase(Case* c) {
      long[] shape = new long[c->BaseNDim];
      long n = 1;
      for (int d = 0; d < shape.Length; ++d) {
        shape[d] = c->BaseShape[d];
        n *= shape[d];
      }
      long code = c->DTypeCode, bits = c->DTypeBits;
      if (code == 2 && bits == 32) return Tensor.Wrap(Fill(n, i => (float)BaseValue(code, i)), shape);
      if (code == 2 && bits == 64) return Tensor.Wrap(Fill(n, i => BaseValue(code, i)), shape);
      if (code == 0 && bits == 32) return Tensor.Wrap(Fill(n, i => (int)BaseValue(code, i)), shape);
      if (code == 0 && bits == 64) return Tensor.Wrap(Fill(n, i => (long)BaseValue(code, i)), shape);
      if (code == 1 && bits == 8) return Tensor.Wrap(Fill(n, i => (byte)BaseValue(code, i)), shape);
      throw new CheckFailed("dtype " + code + "/" + bits + " not in the agent");
    }

    static T[] Fill<T>(long n, Func<long, T> value) {
      T[] a = new T[n];
      for (long i = 0; i < n; ++i) a[i] = value(i);
      return a;
    }

    static Tensor ProduceTensor(Case* c, Report* r) {
      Tensor b = MakeBase(c);
      Tensor t = null;
      try {
        r->Base = FirstElement(b);
        switch ((int)c->Op) {
          case OpNone:
            t = b;
            b = null;
            break;
          case OpTranspose:
            t = b.Transpose();
            break;
          case OpSlice:
            t = b.Slice(new SliceRange(c->OpArgs[0], c->OpArgs[1], c->OpArgs[2]));
            break;
          case OpSelect:
            t = b.Select((int)c->OpArgs[0], c->OpArgs[1]);
            break;
          case OpReadOnly:
            t = b.ShareReadOnly();
            break;
          case OpCopy:
            t = b.CopyTo(Device.Cpu);
            r->Base = FirstElement(t);
            break;
          default:
            throw new CheckFailed("unknown op " + c->Op);
        }
        return t;
      } catch {
        if (t != null) t.Dispose();
        throw;
      } finally {
        if (b != null) b.Dispose(); // the view keeps the memory alive on its own
      }
    }

    [MonoPInvokeCallback(typeof(ProduceFn))]
    static IntPtr Produce(Case* c, int legacy, Report* r) {
      Reset(r);
      Tensor t;
      try {
        t = ProduceTensor(c, r);
      } catch (Exception e) {
        Fail(r, e, "produce");
        return IntPtr.Zero;
      }
      try {
        ulong first = FirstElement(t);
        IntPtr p = legacy != 0 ? t.ExportLegacy() : t.ExportVersioned();
        r->Data = first;
        return p;
      } catch (Exception e) {
        t.Dispose(); // a refused export leaves the tensor with us
        Fail(r, e, "export");
        return IntPtr.Zero;
      }
    }

    // ---- consume ----

    // The elements in C order, through the binding's copy-out (ToArray: any strides).
    static double[] Values(Tensor t, Case* c) {
      long code = c->DTypeCode, bits = c->DTypeBits;
      if (code == 2 && bits == 32) return Array.ConvertAll(t.ToArray<float>(), v => (double)v);
      if (code == 2 && bits == 64) return t.ToArray<double>();
      if (code == 0 && bits == 32) return Array.ConvertAll(t.ToArray<int>(), v => (double)v);
      if (code == 0 && bits == 64) return Array.ConvertAll(t.ToArray<long>(), v => (double)v);
      if (code == 1 && bits == 8) return Array.ConvertAll(t.ToArray<byte>(), v => (double)v);
      throw new CheckFailed("dtype " + code + "/" + bits + " not in the agent");
    }

    // A write through the binding's writable span: refused by the core for READ_ONLY tensors.
    static int TryWrite(Tensor t, Case* c) {
      try {
        long code = c->DTypeCode, bits = c->DTypeBits;
        if (code == 2 && bits == 32) t.AsSpan<float>();
        else if (code == 2 && bits == 64) t.AsSpan<double>();
        else if (code == 0 && bits == 32) t.AsSpan<int>();
        else if (code == 0 && bits == 64) t.AsSpan<long>();
        else t.AsSpan<byte>();
        return 0;
      } catch (Exception e) when (e is IDLPackError) {
        return ((IDLPackError)e).Status == Status.ReadOnly ? 1 : 0;
      }
    }

    static void Check(Tensor t, Case* c, int legacy, Report* r) {
      r->Data = FirstElement(t);
      long[] shape = t.Shape, strides = t.Strides;
      if (shape.Length != c->NDim) throw new CheckFailed("ndim " + shape.Length + ", expected " + c->NDim);
      for (int d = 0; d < shape.Length; ++d) {
        if (shape[d] != c->Shape[d] || strides[d] != c->Strides[d]) {
          throw new CheckFailed("dim " + d + ": extent " + shape[d] + " stride " + strides[d] +
                                ", expected " + c->Shape[d] + " and " + c->Strides[d]);
        }
      }
      DType dt = t.DType;
      if (dt.Code != c->DTypeCode || dt.Bits != c->DTypeBits || dt.Lanes != 1) {
        throw new CheckFailed("dtype " + dt + " differs from the case");
      }
      if (t.Device != Device.Cpu) throw new CheckFailed("device " + t.Device + ", not cpu:0");
      ulong wantFlags = legacy != 0 ? 0 : (ulong)c->Flags;
      if (t.Flags != wantFlags) throw new CheckFailed("flags " + t.Flags + ", expected " + wantFlags);
      double[] values = Values(t, c);
      long n = ElementCount(c);
      if (values.LongLength != n) throw new CheckFailed(values.Length + " elements, expected " + n);
      double sum = 0.0;
      for (long k = 0; k < n; ++k) {
        double want = ExpectedValue(c, k);
        if (values[k] != want) throw new CheckFailed("element " + k + " is " + values[k] + ", expected " + want);
        sum += values[k] * (double)(k + 1);
      }
      r->Checksum = sum;
      if ((wantFlags & Tensor.FlagIsCopied) != 0 && !t.IsExclusive) {
        throw new CheckFailed("IS_COPIED: the import is not exclusive to its consumer");
      }
      if (((ulong)c->Flags & Tensor.FlagReadOnly) != 0) {
        if (!t.IsReadOnly && legacy == 0) throw new CheckFailed("READ_ONLY flag not shown by IsReadOnly");
        r->WriteRefused = TryWrite(t, c);
      }
    }

    [MonoPInvokeCallback(typeof(ConsumeFn))]
    static int Consume(IntPtr tensor, Case* c, int legacy, int freeOnNewThread, Report* r) {
      Reset(r);
      Tensor t;
      try {
        t = legacy != 0 ? Tensor.ImportLegacy(tensor) : Tensor.ImportVersioned(tensor);
      } catch (Exception e) {
        return Fail(r, e, "import");
      }
      try {
        Check(t, c, legacy, r);
      } catch (Exception e) {
        Fail(r, e, "check");
      }
      if (freeOnNewThread != 0) {
        Exception err = null;
        Thread th = new Thread(() => {
          try {
            t.Dispose();
          } catch (Exception e) {
            err = e;
          }
        });
        th.Start();
        th.Join();
        if (err != null && r->Status == 0) Fail(r, err, "free on a new thread");
      } else {
        t.Dispose();
      }
      return r->Status;
    }
  }
}
