package org.dlbridge;

/**
 * Tensors to and from native code, as addresses of DLPack managed structs: an import takes
 * ownership (the tensor is consumed even when it is refused), an export moves the reference out
 * to its consumer, which calls the deleter once, on any thread.
 */
final class Exchange {
  private Exchange() {}

  static Tensor importVersioned(long address) {
    return new Tensor(DLBridgeNative.dlb_tensor_import(address));
  }

  static Tensor importLegacy(long address) {
    return new Tensor(DLBridgeNative.dlb_tensor_import_legacy(address));
  }

  /** The reference of {@code s}, moved out: {@code s} is closed. */
  static long exportVersioned(Lifecycle.State s) {
    long h = s.beginExport(); // waits for the calls in flight
    s.handOver(); // before the consumer can have the address
    s.endExport(true);
    return h;
  }

  /** The reference of {@code s} as a legacy DLManagedTensor; on error {@code s} stays open. */
  static long exportLegacy(Lifecycle.State s) {
    long h = s.beginExport();
    long legacy;
    try {
      legacy = DLBridgeNative.dlb_tensor_export_legacy(h);
    } catch (RuntimeException | Error e) {
      s.endExport(false); // refused: open as before (a close that waited closes it now)
      throw e;
    }
    s.handOver(); // before the consumer can have the address
    s.endExport(true);
    return legacy;
  }
}
