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
    /// afterwards. A call running on another thread finishes first; a call that starts after
    /// the export throws <see cref="DLPackClosedException"/>.</summary>
    public IntPtr ExportVersioned() {
      // No native call: the versioned struct is the reference itself, moved once no call uses it.
      long a = holders.BeginExport();
      if (a == 0) throw Disposed();
      EndExport(true);
      return new IntPtr(a);
    }

    /// <summary>Hands this tensor to a consumer that speaks only DLPack &lt; 1.0: returns a
    /// DLManagedTensor* the consumer now owns. Refused (the tensor stays open) when a flag would
    /// be lost, READ_ONLY included. This Tensor is disposed afterwards; a call running on
    /// another thread finishes first.</summary>
    public IntPtr ExportLegacy() {
      // Held alone, the reference is this call's: a concurrent Dispose waits for the outcome.
      long a = holders.BeginExport();
      if (a == 0) throw Disposed();
      long legacy;
      try {
        legacy = DLBridgeNative.dlb_tensor_export_legacy(a);
      } catch {
        EndExport(false); // refused: open as before (a Dispose that waited closes it now)
        throw;
      }
      EndExport(true);
      return new IntPtr(legacy);
    }
  }
}
