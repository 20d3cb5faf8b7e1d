using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
  /// <summary>Holds one reference to a native DLManagedTensorVersioned. As a SafeHandle it is
  /// reference-counted around native calls (a finalizer or another thread's Dispose cannot free
  /// the tensor while a call is using it) and freed by its finalizer when nobody disposed it.</summary>
  internal sealed class TensorHandle : SafeHandle {
    internal TensorHandle(long address) : base(IntPtr.Zero, true) {
      SetHandle(new IntPtr(address));
    }

    public override bool IsInvalid {
      get { return handle == IntPtr.Zero; }
    }

    /// <summary>The address, for a call the caller brackets with DangerousAddRef/Release.</summary>
    internal long Address {
      get { return handle.ToInt64(); }
    }

    // Who the native reference goes to: still ours (Open), being handed to a consumer by a call
    // in flight (Exporting), the consumer's (Exported), or freed (Freed). Every change is a
    // compare-and-swap, so that an export and the release can never both have it.
    /// <summary>The pin of the array this handle's tensor wraps (Tensor.Wrap), if any: when
    /// this handle's free releases it, it is let go directly instead of being looked up from
    /// its token.</summary>
    internal GCHandle OwnPin;

    private const int Open = 0, Exporting = 1, Exported = 2, Freed = 3;
    private int owner;

    /// <summary>Claims the reference for an export: true for the one caller that gets it, false
    /// when it was freed or claimed already. The handle is only disposed by
    /// <see cref="Detach"/> (or given back by <see cref="Reopen"/>).</summary>
    internal bool TryClaim() {
      return Interlocked.CompareExchange(ref owner, Exporting, Open) == Open;
    }

    /// <summary>Gives the claimed reference away: the handle closes without freeing it (once
    /// the calls in flight are done).</summary>
    internal void Detach() {
      Volatile.Write(ref owner, Exported);
      Dispose();
    }

    /// <summary>An export that was refused: the reference is ours again.</summary>
    internal void Reopen() {
      Volatile.Write(ref owner, Open);
    }

    protected override bool ReleaseHandle() {
      // Runs once: on Dispose, after the last native call using it, or on the finalizer thread.
      // A claimed reference belongs to the export (which holds the handle open while it runs).
      if (Interlocked.CompareExchange(ref owner, Freed, Open) == Open) {
        ReleaseQueue.Free(handle.ToInt64(), OwnPin);
      }
      return true;
    }
  }
}
