// Tensor.cs - the Tensor class and its lifecycle: the one native reference it holds, the count
// that keeps it alive across native calls, Dispose and the finalizer, Address, ToString. The
// other concerns live in Tensor.Create.cs, Tensor.Access.cs, Tensor.Views.cs, Tensor.Exchange.cs,
// Tensor.Ipc.cs.
using System;
using System.Runtime.CompilerServices;
using System.Runtime.ConstrainedExecution;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
  /// <summary>
  /// A DLPack tensor owned by C#: one reference to a native DLManagedTensorVersioned made by
  /// dlbridge.
  /// <para>Ownership: every method returning a Tensor gives the caller a new reference to
  /// dispose (views and shares keep the memory alive on their own: the base may be disposed
  /// first). <see cref="Dispose"/> is idempotent; a tensor nobody disposed is freed by its
  /// finalizer. Use after Dispose (or after an export) throws <see cref="DLPackClosedException"/>
  /// (an ObjectDisposedException, status DLB_ERR_CLOSED). Failures throw the core's status and
  /// message (see Errors.cs: <see cref="DLPackArgumentException"/> for invalid arguments,
  /// <see cref="DLPackException"/> otherwise) and leave the caller's tensors as they were.
  /// Every method may be called from any thread.</para>
  /// </summary>
  // A Tensor is its own handle object: a critical finalizer (run after ordinary finalizers, like
  // a SafeHandle's) and the count a SafeHandle keeps, in one object. A Tensor holding a SafeHandle
  // costs a second object per tensor, and SafeHandle's count a few ns more per call on Mono (the
  // bench: docs/csharp.md); a Tensor deriving from SafeHandle would make DangerousRelease and
  // SetHandleAsInvalid part of the tensor's public API.
  public sealed partial class Tensor : CriticalFinalizerObject, IDisposable {
    // The reference: 0 once freed or given away. Whoever exchanges it for 0 owns it: the free
    // (Dispose, the finalizer, the last call of a disposed tensor) or an export, never both.
    private long address;

    // Who holds the reference, in steps of Hold: the owner until Dispose or an export, and each
    // native call in flight (Enter .. Exit); Closed set once the owner let go. The reference is
    // freed by whoever brings the count to Closed alone: the Dispose when no call is in flight,
    // otherwise the last call's Exit. Exporting: an export holds the tensor alone, taken only
    // when no call is in flight (the protocol of docs/architecture.md: an export waits for the
    // calls); calls and Dispose that come meanwhile wait for it to end, and it waits for nothing.
    private int holders = Hold;
    private const int Closed = 1, Hold = 2, Exporting = 1 << 30;

    // A wrap's pin (or release action) and the token that names it: let go of directly when this
    // tensor's own free hands the token back (Releases.Free).
    private readonly GCHandle pin;
    private readonly long pinToken;

    internal Tensor(long address) {
      this.address = address;
    }

    private Tensor(long address, GCHandle pin, long pinToken) {
      this.address = address;
      this.pin = pin;
      this.pinToken = pinToken;
    }

    // ---- holding the reference across native calls ---------------------------------------------
    // The small steps of a tensor's life are marked AggressiveInlining: Mono's JIT inlines only
    // tiny methods by default, and a wrap + dispose cycle otherwise pays a dozen nested calls
    // (about 10 ns on Mono, the bench: docs/csharp.md). Methods with an exception handler are
    // never inlined, so none of these has one.
    // Every native call runs between Enter and Exit: the count keeps the reference alive for the
    // call, whatever other threads or the finalizer do (the finalizer cannot run before Exit,
    // which uses this object).
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private long Enter() {
      int seen = Volatile.Read(ref holders);
      while (true) {
        if ((seen & (Closed | Exporting)) != 0) {
          if ((seen & Closed) != 0) throw Disposed();
          seen = AfterExport();
          continue;
        }
        int before = Interlocked.CompareExchange(ref holders, seen + Hold, seen);
        if (before == seen) break;
        seen = before;
      }
      long a = Volatile.Read(ref address);
      if (a == 0) {
        // An export took it.
        Exit();
        throw Disposed();
      }
      return a;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Exit() {
      if (Interlocked.Add(ref holders, -Hold) == Closed) FreeIfHeld();
    }

    // The owner lets go (Dispose, the finalizer, an export): true for the one call that did.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool Close() {
      int seen = Volatile.Read(ref holders);
      while (true) {
        if ((seen & Closed) != 0) return false;
        if ((seen & Exporting) != 0) {
          seen = AfterExport(); // a refused export leaves the tensor open: then it is closed here
          continue;
        }
        int after = (seen | Closed) - Hold;
        int before = Interlocked.CompareExchange(ref holders, after, seen);
        if (before == seen) {
          if (after == Closed) FreeIfHeld();
          return true;
        }
        seen = before;
      }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void FreeIfHeld() {
      long a = Interlocked.Exchange(ref address, 0);
      if (a != 0) Releases.Free(a, pin, pinToken);
    }

    /// <summary>Gives an export the reference alone: waits for the calls in flight to end (and
    /// for another export), then marks the tensor Exporting. 0 when it was disposed or exported
    /// already. End it with <see cref="EndExport"/>.</summary>
    private long BeginExport() {
      var wait = new SpinWait();
      while (true) {
        int seen = Volatile.Read(ref holders);
        if ((seen & Closed) != 0) return 0;
        if (seen == Hold && Interlocked.CompareExchange(ref holders, Hold | Exporting, Hold) == Hold) {
          return Volatile.Read(ref address);
        }
        wait.SpinOnce();
      }
    }

    /// <summary>Ends <see cref="BeginExport"/>: moved, the reference is the consumer's and the
    /// tensor reads as disposed, with nothing left to free; otherwise it is open as before. Calls
    /// and Dispose wait without writing the count while Exporting is set, so it is set whole.</summary>
    private void EndExport(bool moved) {
      if (moved) {
        Volatile.Write(ref address, 0);
        Interlocked.Exchange(ref holders, Closed);
        GC.SuppressFinalize(this);
      } else {
        Interlocked.Exchange(ref holders, Hold);
      }
    }

    // Waits while an export holds the tensor (one short native call at most); the count after it.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private int AfterExport() {
      var wait = new SpinWait();
      int seen;
      while (((seen = Volatile.Read(ref holders)) & Exporting) != 0) wait.SpinOnce();
      return seen;
    }

    // Use after Dispose or an export: DLB_ERR_CLOSED with the message every binding gives.
    private static DLPackClosedException Disposed() {
      return Errors.Closed();
    }

    /// <summary>Frees this reference (the memory goes when its last reference goes; a call
    /// running on another thread finishes first). Idempotent.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Dispose() {
      if (Close()) GC.SuppressFinalize(this);
    }

    /// <summary>Frees the reference of a tensor that was never disposed (exactly once; <see cref="Dispose"/> frees it sooner).</summary>
    ~Tensor() {
      Close();
    }

    /// <summary>True once disposed or exported.</summary>
    public bool IsDisposed { get { return (Volatile.Read(ref holders) & Closed) != 0; } }

    /// <summary>The native DLManagedTensorVersioned*, borrowed: valid while this Tensor is
    /// alive; do not free it (export to hand it over).</summary>
    public IntPtr Address {
      get {
        long a = Enter();
        Exit();
        return new IntPtr(a);
      }
    }

    /// <summary>"Tensor(float32, [3, 2], cpu)", or "Tensor(disposed)".</summary>
    public override string ToString() {
      if (IsDisposed) return "Tensor(disposed)";
      return "Tensor(" + DType + ", [" + string.Join(", ", Shape) + "], " + Device + ")";
    }
  }
}
