// Lifecycle.cs - ownership of native handles: the holder count that a Tensor and a listener's
// or channel's handle both keep (Holders, the protocol of docs/architecture.md), and the managed
// half of wrapped memory's life: what C# does when the core releases it. The release itself is
// the shared engine's (generators/swig/native/dlbx_release.h): a wrap carries a token (a
// GCHandle); when the core releases the memory, on whatever thread, the token is handed back to
// the dlbx_tensor_free that released it, or queued for the next drain. No foreign thread ever
// runs managed code.
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
  /// <summary>One native address and who holds it: the owner until it lets go (Dispose, the
  /// finalizer, an export), and each native call in flight (Enter .. Exit). Whoever brings the
  /// count to "let go, no call in flight" gets the address back to free, exactly once: the
  /// owner's Close when no call is in flight, otherwise the last call's Exit. An export holds
  /// the address alone, taken only when no call is in flight; calls and Close that come
  /// meanwhile wait for it to end, and it waits for nothing. A field of its owner (a Tensor, a
  /// ChannelHandle), never copied; the owner frees what it is given back, its own way.</summary>
  // The small steps are marked AggressiveInlining: Mono's JIT inlines only tiny methods by
  // default, and a wrap + dispose cycle otherwise pays a dozen nested calls (about 10 ns on Mono,
  // the bench: docs/csharp.md). Methods with an exception handler are never inlined, so none of
  // these has one.
  internal struct Holders {
    // 0 once freed or given away.
    private long address;
    // The calls in flight, in steps of Call; Closed once the owner let go; Exporting while an
    // export holds the address alone. 0: open, nobody else holding it.
    private int count;
    private const int Closed = 1, Call = 2, Exporting = 1 << 30;

    internal Holders(long address) {
      this.address = address;
      count = 0;
    }

    /// <summary>Counts a call in and returns the address, or 0 when the owner let go (nothing
    /// counted then).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal long Enter() {
      int seen = Volatile.Read(ref count);
      while (true) {
        if ((seen & (Closed | Exporting)) != 0) {
          if ((seen & Closed) != 0) return 0;
          seen = AfterExport();
          continue;
        }
        int before = Interlocked.CompareExchange(ref count, seen + Call, seen);
        if (before == seen) break;
        seen = before;
      }
      // Never 0 here: an export that moved it set Closed after clearing it.
      return Volatile.Read(ref address);
    }

    /// <summary>Counts a call out: the address for the last call out after the owner let go to
    /// free, else 0.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal long Exit() {
      return Interlocked.Add(ref count, -Call) == Closed ? Interlocked.Exchange(ref address, 0) : 0;
    }

    /// <summary>The owner lets go: true for the one call that did. <paramref name="free"/> is
    /// the address to free when no call was in flight, else 0 (the last Exit returns it).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal bool Close(out long free) {
      free = 0;
      int seen = Volatile.Read(ref count);
      while (true) {
        if ((seen & Closed) != 0) return false;
        if ((seen & Exporting) != 0) {
          seen = AfterExport(); // a refused export leaves the owner open: then it is closed here
          continue;
        }
        int before = Interlocked.CompareExchange(ref count, seen | Closed, seen);
        if (before == seen) {
          if (seen == 0) free = Interlocked.Exchange(ref address, 0);
          return true;
        }
        seen = before;
      }
    }

    /// <summary>True once the owner let go (or an export moved the address out).</summary>
    internal bool IsClosed {
      get { return (Volatile.Read(ref count) & Closed) != 0; }
    }

    /// <summary>Gives an export the address alone: waits for the calls in flight to end (and for
    /// another export). 0 when the owner let go already. End it with <see cref="EndExport"/>.</summary>
    internal long BeginExport() {
      var wait = new SpinWait();
      while (true) {
        int seen = Volatile.Read(ref count);
        if ((seen & Closed) != 0) return 0;
        if (seen == 0 && Interlocked.CompareExchange(ref count, Exporting, 0) == 0) {
          return Volatile.Read(ref address);
        }
        wait.SpinOnce();
      }
    }

    /// <summary>Ends <see cref="BeginExport"/>: moved, the address is the consumer's and the
    /// owner reads as closed, with nothing left to free; otherwise it is open as before. Calls
    /// and Close wait without writing the count while Exporting is set, so it is set whole.</summary>
    internal void EndExport(bool moved) {
      if (moved) Volatile.Write(ref address, 0);
      Interlocked.Exchange(ref count, moved ? Closed : 0);
    }

    // Waits while an export holds the address (one short native call at most); the count after.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private int AfterExport() {
      var wait = new SpinWait();
      int seen;
      while (((seen = Volatile.Read(ref count)) & Exporting) != 0) wait.SpinOnce();
      return seen;
    }
  }

  /// <summary>What C# lets go of when the core releases wrapped memory: the token of a wrap is
  /// a GCHandle (shifted left once; the low bit set when it holds a release Action to run rather
  /// than a pinned array).</summary>
  internal static unsafe class Releases {
    private static long released;

    internal const int Batch = 16;

    /// <summary>Tokens let go of so far (arrays unpinned, release actions run).</summary>
    internal static long Released {
      get { return Interlocked.Read(ref released); }
    }

    /// <summary>Tokens released natively and waiting for a drain.</summary>
    internal static long Queued {
      get { return Volatile.Read(ref *NativeLibrary.Queued); }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static long Token(GCHandle handle, bool isAction) {
      // GCHandle values are below 2^62 on every runtime (Mono: small indices; CoreCLR:
      // user-space addresses), so the shift loses nothing.
      return (GCHandle.ToIntPtr(handle).ToInt64() << 1) | (isAction ? 1L : 0L);
    }

    /// <summary>Frees one reference (dlbx_tensor_free) and lets go of the token this free
    /// released, and of whatever other threads released meanwhile. <paramref name="own"/> is
    /// the GCHandle that <paramref name="ownToken"/> names (0: none).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static void Free(long tensor, GCHandle own, long ownToken) {
      long token = DLBridgeNative.dlbx_tensor_free(tensor);
      if (token != 0) Let(token, own, ownToken);
      if (Volatile.Read(ref *NativeLibrary.Queued) != 0) Drain();
    }

    /// <summary>Drains when the engine's counter says anything is queued (one memory read).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static void DrainIfQueued() {
      if (Volatile.Read(ref *NativeLibrary.Queued) != 0) Drain();
    }

    /// <summary>Lets go of the queued tokens, a batch at a time until one comes back short (a
    /// token still being queued by another thread waits for the next drain).</summary>
    internal static void Drain() {
      long[] tokens = new long[Batch];
      int n;
      do {
        n = DLBridgeNative.dlbx_release_drain(tokens);
        for (int i = 0; i < n; i++) Let(tokens[i], default(GCHandle), 0);
      } while (n == Batch);
    }

    // GCHandle.FromIntPtr checks the handle's application domain on Mono, a call into the
    // runtime (about 14 ns, on every release of a tensor that is not its wrap's own: imports of an
    // export, views, foreign releases). A GCHandle is one IntPtr on Mono and CoreCLR (checked
    // here once) and FromIntPtr's result is that IntPtr, so the token's value is read as one.
    private static readonly bool handleIsIntPtr = sizeof(GCHandle) == sizeof(IntPtr);

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static GCHandle HandleOf(long token) {
      IntPtr value = new IntPtr(token >> 1);
      return handleIsIntPtr ? *(GCHandle*)&value : GCHandle.FromIntPtr(value);
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static void Let(long token, GCHandle own, long ownToken) {
      GCHandle h = token == ownToken ? own : HandleOf(token);
      Action release = (token & 1) != 0 ? (Action)h.Target : null;
      h.Free();
      Interlocked.Increment(ref released);
      if (release != null) Run(release);
    }

    // Apart from Let, which the JIT inlines only without an exception handler.
    private static void Run(Action release) {
      try {
        release();
      } catch (Exception) {
        // A release action must not throw; this may be the finalizer thread.
      }
    }
  }

  /// <summary>The library as a whole: live tensors, released wrapped memory, the version.</summary>
  public static class DLBridge {
    /// <summary>Tensors made by the core and not freed yet, across all threads (leak checks).</summary>
    public static long LiveCount {
      get { return DLBridgeNative.dlb_tensor_live_count(); }
    }

    /// <summary>Lets go of wrapped memory whose last reference was freed elsewhere (a native
    /// consumer on its own thread): unpins the arrays and runs the release actions. Every Wrap
    /// and every Dispose does this already when anything is waiting.</summary>
    public static void CollectReleased() {
      Releases.Drain();
    }

    /// <summary>Wrapped arrays unpinned and release actions run so far, by this process.</summary>
    public static long ReleasedCount {
      get { return Releases.Released; }
    }

    /// <summary>Wrapped memory released natively and not yet let go of by C# (what
    /// <see cref="CollectReleased"/> would let go of now).</summary>
    public static long QueuedReleases {
      get { return Releases.Queued; }
    }

    /// <summary>The dlbridge library version ("0.2.0").</summary>
    public static string Version {
      get { return DLBridgeNative.dlb_version_string(); }
    }
  }
}
