package org.dlbridge;

/** JNI entry points of src/test/c/test_helpers.c: a DLPack producer/consumer written in C. */
final class NativeTestHelper {
  static {
    NativeLoader.load();
    System.load(System.getProperty("dlbridge.test.helpers"));
  }

  private NativeTestHelper() {}

  static native long produceVersioned(long n, int major, int minor, long flags);

  static native long produceLegacy(long n);

  static native long deletedCount();

  static native double consumeOnNewThread(long address, boolean legacy);

  static native int versionOf(long address);

  static native void freeLater(long address, long delayMicros);
}
