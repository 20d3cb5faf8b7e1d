// Lifecycle.cs - the managed half of wrapped memory's life: what C# does when the core releases
// it (the Tensor's own reference and its count are in Tensor.cs). The release itself is the shared
// engine's (generators/swig/native/dlbx_release.h): a wrap carries a token (a GCHandle); when
// the core releases the memory, on whatever thread, the token is handed back to the
// dlbx_tensor_free that released it, or queued for the next drain. No foreign thread ever runs
// managed code.
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
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
