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
    // The reference and who holds it (the owner, each native call in flight): Lifecycle.cs.
    private Holders holders;

    // A wrap's pin (or release action) and the token that names it: let go of directly when this
    // tensor's own free hands the token back (Releases.Free).
    private readonly GCHandle pin;
    private readonly long pinToken;

    internal Tensor(long address) {
      holders = new Holders(address);
    }

    private Tensor(long address, GCHandle pin, long pinToken) {
      holders = new Holders(address);
      this.pin = pin;
      this.pinToken = pinToken;
    }

    // ---- holding the reference across native calls ---------------------------------------------
    // Every native call runs between Enter and Exit: the count keeps the reference alive for the
    // call, whatever other threads or the finalizer do (the finalizer cannot run before Exit,
    // which uses this object).
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private long Enter() {
      long a = holders.Enter();
      if (a == 0) throw Disposed();
      return a;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Exit() {
      Free(holders.Exit());
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Free(long address) {
      if (address != 0) Releases.Free(address, pin, pinToken);
    }

    /// <summary>Ends <see cref="Holders.BeginExport"/>: moved, the reference is the consumer's and the
    /// tensor reads as disposed, with nothing left to free; otherwise it is open as before.</summary>
    private void EndExport(bool moved) {
      holders.EndExport(moved);
      if (moved) GC.SuppressFinalize(this);
    }

    // Use after Dispose or an export: DLB_ERR_CLOSED with the message every binding gives.
    private static DLPackClosedException Disposed() {
      return Errors.Closed();
    }

    /// <summary>Frees this reference (the memory goes when its last reference goes; a call
    /// running on another thread finishes first). Idempotent.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Dispose() {
      if (holders.Close(out long free)) {
        Free(free);
        GC.SuppressFinalize(this);
      }
    }

    /// <summary>Frees the reference of a tensor that was never disposed (exactly once; <see cref="Dispose"/> frees it sooner).</summary>
    ~Tensor() {
      if (holders.Close(out long free)) Free(free);
    }

    /// <summary>True once disposed or exported.</summary>
    public bool IsDisposed { get { return holders.IsClosed; } }

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
