package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** Base of test classes whose every test must leave the live-tensor count where it found it. */
abstract class LeakChecked {
  /** The live count when the test started. */
  long liveBefore;

  @BeforeEach
  void recordLive() {
    liveBefore = DLBridge.liveCount();
  }

  @AfterEach
  void noLeaks() {
    assertEquals(liveBefore, TestUtil.liveAfterGc(liveBefore));
  }
}
