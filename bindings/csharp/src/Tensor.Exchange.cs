// Tensor.Exchange.cs - handing tensors to and taking them from native DLPack code.
using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
  public sealed partial class Tensor {
    // ---- exchange with native code -------------------------------------------------------------
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
      // No native call: the versioned struct is the handle itself. The claim decides between
      // this export and a concurrent Dispose's release (or another export): one gets it.
      if (h.IsClosed || !h.TryClaim()) throw Disposed();
      long a = h.Address;
      h.Detach();
      return new IntPtr(a);
    }

    /// <summary>Hands this tensor to a consumer that speaks only DLPack &lt; 1.0: returns a
    /// DLManagedTensor* the consumer now owns. Refused (the tensor stays open) when a flag would
    /// be lost, READ_ONLY included. This Tensor is disposed afterwards.</summary>
    public IntPtr ExportLegacy() {
      // The claim keeps the reference alive during the call: a concurrent Dispose leaves the
      // free to this export if it is refused.
      if (h.IsClosed || !h.TryClaim()) throw Disposed();
      long legacy;
      try {
        legacy = DLBridgeNative.dlb_tensor_export_legacy(h.Address);
      } catch {
        h.Reopen(); // refused: the tensor stays open and ours
        throw;
      }
      h.Detach();
      return new IntPtr(legacy);
    }
  }
}
