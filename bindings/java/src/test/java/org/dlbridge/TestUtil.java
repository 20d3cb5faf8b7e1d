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
    int used = Slots.inUse();
    for (int i = 0; i < 500 && used != goal; i++) {
      System.gc();
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      used = Slots.inUse();
    }
    return used;
  }

  /** The live count after collecting garbage (cleaner-released tensors) until it reaches goal. */
  static long liveAfterGc(long goal) {
    long live = DLBridgeNative.dlb_tensor_live_count();
    for (int i = 0; i < 200 && live != goal; i++) {
      System.gc();
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      live = DLBridgeNative.dlb_tensor_live_count();
    }
    return live;
  }
}
