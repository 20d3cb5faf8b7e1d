// Tensor.cs - the Tensor class and its handle: lifecycle (Dispose, Address, ToString). The
// other concerns live in Tensor.Create.cs, Tensor.Access.cs, Tensor.Views.cs, Tensor.Exchange.cs.
using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
  /// <summary>
  /// A DLPack tensor owned by C#: one reference to a native DLManagedTensorVersioned made by
  /// dlbridge, held by a SafeHandle.
  /// <para>Ownership: every method returning a Tensor gives the caller a new reference to
  /// dispose (views and shares keep the memory alive on their own: the base may be disposed
  /// first). <see cref="Dispose"/> is idempotent; a tensor nobody disposed is freed by its
  /// finalizer. Use after Dispose (or after an export) throws <see cref="DLPackClosedException"/>
  /// (an ObjectDisposedException, status DLB_ERR_CLOSED). Failures throw the core's status and
  /// message (see Errors.cs: <see cref="DLPackArgumentException"/> for invalid arguments,
  /// <see cref="DLPackException"/> otherwise) and leave the caller's tensors as they were.
  /// Every method may be called from any thread.</para>
  /// </summary>
  public sealed partial class Tensor : IDisposable {
    private readonly TensorHandle h;

    internal Tensor(long address) {
      h = new TensorHandle(address);
    }

    private Tensor(long address, GCHandle pin, long pinToken) {
      h = new TensorHandle(address, pin, pinToken);
    }

    // ---- access to the handle ----------------------------------------------------------------
    // Every native call runs between Enter and Exit: the SafeHandle's count keeps the tensor
    // alive for the call, whatever other threads or the finalizer do.
    private long Enter() {
      AddRef();
      long a = h.Address;
      if (a == 0) {
        // An export took it.
        h.DangerousRelease();
        throw Disposed();
      }
      return a;
    }

    private void Exit() {
      h.DangerousRelease();
    }

    private void AddRef() {
      bool added = false;
      try {
        h.DangerousAddRef(ref added);
      } catch (ObjectDisposedException) {
        throw Disposed();
      }
    }

    // Use after Dispose or an export: DLB_ERR_CLOSED with the message every binding gives.
    private static DLPackClosedException Disposed() {
      return Errors.Closed();
    }

    /// <summary>Frees this reference (the memory goes when its last reference goes). Idempotent.</summary>
    public void Dispose() {
      h.Dispose();
    }

    /// <summary>True once disposed or exported.</summary>
    public bool IsDisposed { get { return h.IsClosed; } }

    /// <summary>The native DLManagedTensorVersioned*, borrowed: valid while this Tensor is
    /// alive; do not free it (export to hand it over).</summary>
    public IntPtr Address {
      get {
        long a = Enter();
        Exit();
        return new IntPtr(a);
      }
    }

    public override string ToString() {
      if (IsDisposed) return "Tensor(disposed)";
      return "Tensor(" + DType + ", [" + string.Join(", ", Shape) + "], " + Device + ")";
    }
  }
}
