package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** A test class whose every test must leave the library's live tensor count where it found it. */
abstract class LeakCheckedTest {
  // Read by tests that check the count themselves before the end.
  long liveBefore;

  @BeforeEach
  void recordLive() {
    liveBefore = DLBridgeNative.dlb_tensor_live_count();
  }

  @AfterEach
  void noLeaks() {
    assertEquals(liveBefore, TestUtil.liveAfterGc(liveBefore));
  }
}
