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
      this.address = address;
    }

    /// <summary>A wrapped array's handle: <paramref name="pin"/> (and its release token) let
    /// go directly when this handle's free releases it, instead of being looked up from the
    /// token (GCHandle.FromIntPtr is a call into the runtime on Mono).</summary>
    internal TensorHandle(long address, GCHandle pin, long pinToken) : this(address) {
      ownPin = pin;
      ownPinToken = pinToken;
    }

    private readonly long address;
    private readonly GCHandle ownPin;
    private readonly long ownPinToken;

    public override bool IsInvalid {
      get { return handle == IntPtr.Zero; }
    }

    /// <summary>The address, for a call the caller brackets with DangerousAddRef/Release.</summary>
    internal long Address {
      get { return address; }
    }

    // Who the native reference goes to: still ours (Open), being handed to a consumer by an
    // export in flight (Exporting), the consumer's (Exported), freed (Freed), or to be freed by
    // the export in flight if it is refused (FreeIfRefused: the handle was released meanwhile).
    // Every change is a compare-and-swap: an export and the release never both have it, and a
    // claimed reference needs no AddRef to stay alive during the export's call.
    private const int Open = 0, Exporting = 1, Exported = 2, Freed = 3, FreeIfRefused = 4;
    private int owner;

    /// <summary>Claims the reference for an export: true for the one caller that gets it, false
    /// when it was freed or claimed already. Follow with <see cref="Detach"/> or
    /// <see cref="Reopen"/>.</summary>
    internal bool TryClaim() {
      return Interlocked.CompareExchange(ref owner, Exporting, Open) == Open;
    }

    /// <summary>Gives the claimed reference away: the handle closes without freeing it.</summary>
    internal void Detach() {
      Volatile.Write(ref owner, Exported);
      if (ownPinToken != 0) ReleaseQueue.Exported(ownPin, ownPinToken);
      Dispose();
    }

    /// <summary>The claimed reference was not exported: it is ours again, or freed now when
    /// the handle was released during the export.</summary>
    internal void Reopen() {
      if (Interlocked.CompareExchange(ref owner, Open, Exporting) != Exporting) {
        Volatile.Write(ref owner, Freed);
        ReleaseQueue.Free(address, ownPin, ownPinToken);
      }
    }

    protected override bool ReleaseHandle() {
      // Runs once: on Dispose, after the last native call using it, or on the finalizer thread.
      while (true) {
        int state = Volatile.Read(ref owner);
        if (state == Open) {
          if (Interlocked.CompareExchange(ref owner, Freed, Open) != Open) continue;
          ReleaseQueue.Free(address, ownPin, ownPinToken);
          return true;
        }
        if (state == Exporting) {
          if (Interlocked.CompareExchange(ref owner, FreeIfRefused, Exporting) != Exporting) continue;
          return true;
        }
        return true; // exported: the consumer's
      }
    }
  }
}
