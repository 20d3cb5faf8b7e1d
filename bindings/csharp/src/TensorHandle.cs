using System;
using System.Runtime.InteropServices;

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

    private int detached;

    /// <summary>Gives the native reference away (an export): the handle closes without freeing
    /// it, once the calls in flight are done.</summary>
    internal void Detach() {
      detached = 1;
      Dispose();
    }

    protected override bool ReleaseHandle() {
      if (detached != 0) return true;
      // Runs once: on Dispose, after the last native call using it, or on the finalizer thread.
      ReleaseQueue.Free(handle.ToInt64());
      return true;
    }
  }
}
