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
    synchronized (s) {
      long h = s.handle();
      s.take();
      s.disown(); // before the consumer can have the address
      return h;
    }
  }

  /** The reference of {@code s} as a legacy DLManagedTensor; on error {@code s} stays open. */
  static long exportLegacy(Lifecycle.State s) {
    synchronized (s) {
      long legacy = DLBridgeNative.dlb_tensor_export_legacy(s.handle());
      s.take();
      s.disown(); // before the consumer can have the address
      return legacy;
    }
  }
}
