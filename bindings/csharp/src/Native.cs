// Native.cs - the hand-written side of the native boundary: the exception hook shared with
// SWIG's wrappers, the array struct SWIG's wrappers pass, the entry points of
// native/dlbridge_csharp.c, and the queue that unpins wrapped arrays after their release.
using System;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

namespace DLBridge {
  /// <summary>An array argument as it crosses to C (dlb_cs_array): the pinned elements and
  /// their count, -1 for a null array.</summary>
  [StructLayout(LayoutKind.Sequential)]
  internal unsafe struct NativeArray {
    public long Length;
    public void* Data;

    public static NativeArray Of(long length, void* data) {
      NativeArray a;
      a.Length = length;
      a.Data = data;
      return a;
    }
  }

  /// <summary>The one place a native failure becomes a <see cref="DLPackException"/>: the
  /// native side calls back while the P/Invoke is running, the exception is kept for the calling
  /// thread, and the C# wrapper throws it when the call returns.</summary>
  internal static class NativeExceptions {
    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    private delegate void Callback(int status, IntPtr message);

    // Kept alive for the life of the process: native code holds its function pointer.
    private static readonly Callback callback = OnException;
    private static int registered;

    [ThreadStatic] private static DLPackException pending;
    private static int pendingCount;

    internal static NativeExceptions.Token Register() {
      if (Interlocked.Exchange(ref registered, 1) == 0) {
        NativeMethods.dlb_cs_register_exception(callback);
      }
      return new Token();
    }

    internal sealed class Token {}

    private static unsafe void OnException(int status, IntPtr message) {
      string text = Utf8(message);
      if (pending == null) Interlocked.Increment(ref pendingCount);
      pending = new DLPackException(status, text);
    }

    internal static unsafe string Utf8(IntPtr text) {
      if (text == IntPtr.Zero) return null;
      byte* p = (byte*)text;
      int n = 0;
      while (p[n] != 0) n++;
      return Encoding.UTF8.GetString(p, n);
    }

    /// <summary>True when some thread has an exception waiting (a plain read: the fast path of
    /// every call).</summary>
    internal static bool AnyPending {
      get { return Volatile.Read(ref pendingCount) != 0; }
    }

    internal static void ThrowPending() {
      DLPackException e = pending;
      if (e == null) return;
      pending = null;
      Interlocked.Decrement(ref pendingCount);
      throw e;
    }
  }

  /// <summary>The entry points of native/dlbridge_csharp.c (see dlbridge_csharp.h for their
  /// ownership rules).</summary>
  internal static class NativeMethods {
    internal const string Library = "dlbridge_csharp";

    static NativeMethods() {
      NativeExceptions.Register();
    }

    internal static void EnsureRegistered() {}

    [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
    internal static extern void dlb_cs_register_exception(Delegate callback);

    // Pointers, not arrays: the callers pin with `fixed`, which costs nothing, where the
    // marshaller's array pinning costs about a P/Invoke call each.
    [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
    private static extern unsafe long dlb_cs_wrap(long data, ulong byteOffset, long device, int dtype,
                                                  int ndim, long* shape, long* strides, ulong flags,
                                                  long capacity, long handle);

    /// <summary>Refuses strides that do not match the shape, as dlbridge.i does for the SWIG
    /// entry points (this hand-written one bypasses it), with the core's message for it;
    /// before anything is allocated.</summary>
    internal static void CheckStrides(long[] shape, long[] strides) {
      if (strides != null && strides.Length != shape.Length) {
        throw new DLPackException(Status.InvalidArgument, DLBridgeNative.DLB_STRIDES_LENGTH_MESSAGE);
      }
    }

    /// <summary>dlb_cs_wrap over arrays checked by <see cref="CheckStrides"/>: the new tensor,
    /// or 0 with the core's exception pending (the caller lets go of what it allocated, then
    /// throws it with NativeExceptions.ThrowPending).</summary>
    internal static unsafe long Wrap(long data, ulong byteOffset, long device, int dtype, long[] shape,
                                     long[] strides, ulong flags, long capacity, long handle) {
      fixed (long* s = shape)
      fixed (long* st = strides) {
        return dlb_cs_wrap(data, byteOffset, device, dtype, shape.Length, s, st, flags, capacity, handle);
      }
    }

    [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
    internal static extern long dlb_cs_free(long tensor);

    [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
    internal static extern unsafe int dlb_cs_take_released(long* output, int capacity);

    [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
    private static extern IntPtr dlb_cs_released_head();

    /// <summary>The native queue's head, read without a call.</summary>
    internal static readonly IntPtr ReleasedHead = dlb_cs_released_head();

    [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
    internal static extern long dlb_cs_released_count();
  }

  /// <summary>Takes the handles of wrapped memory whose tensors were released (on any thread)
  /// and lets go of them: unpins arrays, runs release actions of wrapped native memory.</summary>
  internal static class ReleaseQueue {
    private static long unpinned;

    internal static long Unpinned {
      get { return Interlocked.Read(ref unpinned); }
    }

    internal const int Batch = 16;

    /// <summary>True when released handles wait in the native queue (one memory read).</summary>
    internal static unsafe bool Pending {
      get { return Volatile.Read(ref *(IntPtr*)NativeMethods.ReleasedHead) != IntPtr.Zero; }
    }

    /// <summary>Frees one native reference and lets go of what it released, and of whatever
    /// was released elsewhere meanwhile; <paramref name="own"/> is the pin the reference's
    /// handle holds and <paramref name="ownToken"/> its token (0 when it holds none).</summary>
    internal static void Free(long tensor, GCHandle own, long ownToken) {
      long released = NativeMethods.dlb_cs_free(tensor);
      if (released != 0) Let(released, own, ownToken);
      if (Pending) Drain();
    }

    internal static unsafe void Drain() {
      long* buffer = stackalloc long[Batch];
      int n;
      // A full batch may leave more behind than the head shows (what a take could not hand
      // out): take again until a batch comes back short and the head is empty.
      do {
        n = NativeMethods.dlb_cs_take_released(buffer, Batch);
        for (int i = 0; i < n; i++) Let(buffer[i], default(GCHandle), 0);
      } while (n == Batch || Pending);
    }

    /// <summary>The release context of a wrapped tensor: the GCHandle's value shifted left
    /// once, its low bit saying whether the handle holds a release Action (run it) or a pinned
    /// array (only free it: no Target lookup on the hot path). GCHandle values are below 2^62
    /// on every runtime (Mono: small indices; CoreCLR: user-space pointers).</summary>
    internal static long Token(GCHandle handle, bool isAction) {
      return (GCHandle.ToIntPtr(handle).ToInt64() << 1) | (isAction ? 1L : 0L);
    }

    // On Mono, GCHandle.FromIntPtr is a call into the runtime (an application-domain check,
    // about 14 ns) and a [ThreadStatic] field is cheap; on CoreCLR it is the other way round
    // (measured by bench/Bench.cs). So on Mono only, the pin this thread exported last is kept
    // with its token: a consumer that imports it back (or frees it) on this thread releases
    // that token next, and needs no lookup. A stale entry is harmless: a GCHandle is its
    // token's value, so whichever handle holds that value now is the one FromIntPtr would give.
    private static readonly bool keepExportedPin = Type.GetType("Mono.Runtime") != null;
    [ThreadStatic] private static GCHandle exportedPin;
    [ThreadStatic] private static long exportedToken;

    /// <summary>Notes the pin of a wrapped array whose tensor this thread just exported.</summary>
    internal static void Exported(GCHandle pin, long token) {
      if (!keepExportedPin) return;
      exportedPin = pin;
      exportedToken = token;
    }

    private static void Let(long token, GCHandle own, long ownToken) {
      // The caller's own pin, or (Mono) the one this thread exported last, needs no lookup.
      GCHandle h = token == ownToken && ownToken != 0 ? own
                 : keepExportedPin && token == exportedToken ? exportedPin
                 : GCHandle.FromIntPtr(new IntPtr(token >> 1));
      Action release = (token & 1) != 0 ? (Action)h.Target : null;
      h.Free();
      Interlocked.Increment(ref unpinned);
      if (release != null) {
        try {
          release();
        } catch (Exception) {
          // A release action must not throw; this may be the finalizer thread.
        }
      }
    }
  }
}
