// Tensor.Exchange.cs - handing tensors to and taking them from native DLPack code.
using System;

namespace DLBridge {
  public sealed partial class Tensor {
    /// <summary>Takes ownership of a foreign DLManagedTensorVersioned*. The producer's tensor is
    /// consumed even when this throws: its deleter has then run exactly once.</summary>
    public static Tensor ImportVersioned(IntPtr tensor) {
      return new Tensor(DLBridgeNative.dlb_tensor_import(tensor.ToInt64()));
    }

    /// <summary>Takes ownership of a foreign legacy DLManagedTensor*; consumed even on error.</summary>
    public static Tensor ImportLegacy(IntPtr tensor) {
      return new Tensor(DLBridgeNative.dlb_tensor_import_legacy(tensor.ToInt64()));
    }

    /// <summary>Hands this tensor to a native consumer: returns a DLManagedTensorVersioned* the
    /// consumer now owns (it calls its deleter once, on any thread). This Tensor is disposed
    /// afterwards; do not export while another thread is using it.</summary>
    public IntPtr ExportVersioned() {
      // No native call: the versioned struct is the reference itself. Of an export and a
      // concurrent Dispose (or another export), the one that takes the reference has it.
      long a = Take();
      if (a == 0) throw Disposed();
      GiveAway();
      return new IntPtr(a);
    }

    /// <summary>Hands this tensor to a consumer that speaks only DLPack &lt; 1.0: returns a
    /// DLManagedTensor* the consumer now owns. Refused (the tensor stays open) when a flag would
    /// be lost, READ_ONLY included. This Tensor is disposed afterwards.</summary>
    public IntPtr ExportLegacy() {
      // Taken, the reference is this call's alone: a concurrent Dispose finds nothing to free.
      long a = Take();
      if (a == 0) throw Disposed();
      long legacy;
      try {
        legacy = DLBridgeNative.dlb_tensor_export_legacy(a);
      } catch {
        Restore(a); // refused: ours again (freed now if the tensor was disposed meanwhile)
        throw;
      }
      GiveAway();
      return new IntPtr(legacy);
    }
  }
}
