package org.dlbridge;

final class TestUtil {
  /** The core's message for a versioned tensor with major version 2, verbatim. */
  static final String CORE_MESSAGE_MAJOR_2 = 
      "DLPack major version 2 is not supported (dlbridge accepts major version 1)";

  private TestUtil() {}

  /**
   * The slots in use after collecting garbage until the count reaches goal: unclosed owners are
   * freed by the cleanup thread, pinned buffers released on other threads are taken within
   * about a second.
   */
  static int slotsAfterGc(int goal) {
    return (int) afterGc(Slots::inUse, goal, 500);
  }

  /** The live count after collecting garbage (cleaner-released tensors) until it reaches goal. */
  static long liveAfterGc(long goal) {
    return afterGc(DLBridgeNative::dlb_tensor_live_count, goal, 200);
  }

  /** Collects garbage and polls `count` every 10 ms, at most `rounds` times, until it is goal. */
  private static long afterGc(java.util.function.LongSupplier count, long goal, int rounds) {
    long value = count.getAsLong();
    for (int i = 0; i < rounds && value != goal; i++) {
      System.gc();
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      value = count.getAsLong();
    }
    return value;
  }
}
