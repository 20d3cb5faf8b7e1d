package org.dlbridge;

/**
 * JNI entry points of bindings/java/tests/test_helpers.c: a DLPack producer/consumer written in
 * C, with no dlbridge inside (tests/foreign/foreign_dlpack.c). Public for the parity program
 * (org.dlbridge.parity), which otherwise uses only the binding's public API.
 */
public final class NativeTestHelper {
  static {
    NativeLoader.load();
    System.load(System.getProperty("dlbridge.test.helpers"));
  }

  private NativeTestHelper() {}

  public static native long produceVersioned(long n, int major, int minor, long flags);

  public static native long produceLegacy(long n);

  public static native long deletedCount();

  public static native double consumeOnNewThread(long address, boolean legacy);

  public static native int versionOf(long address);

  public static native void freeLater(long address, long delayMicros);
}
