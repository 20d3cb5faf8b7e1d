package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * The DLPack contract as a Java user sees it: 0-d tensors survive every export and import and a
 * C consumer reads them, views read their own elements, and shares or views of a copy do not
 * claim IS_COPIED.
 */
class ContractTest extends LeakChecked {
  @Test
  void scalarsExportAndImportBothWays() {
    try (Tensor t = Tensor.fromArray(new float[] {7.5f})) {
      assertEquals(0, t.ndim());
      assertEquals(0, t.shape().length);
      assertEquals(1, t.elementCount());
      try (Tensor s = t.share();
          Tensor back = Tensor.importLegacy(s.exportLegacy())) {
        assertEquals(0, back.ndim());
        assertArrayEquals(new float[] {7.5f}, back.toFloatArray());
      }
      try (Tensor s = t.share()) {
        // A C consumer on another thread reads the scalar and frees it.
        assertEquals(7.5, NativeTestHelper.consumeOnNewThread(s.exportVersioned(), false));
      }
    }
    try (Tensor v = Tensor.fromArray(new long[] {4, 5, 6}, 3);
        Tensor one = v.select(0, 2)) {
      assertEquals(0, one.ndim());
      assertArrayEquals(new long[] {6}, one.toLongArray());
    }
  }

  @Test
  void viewsReadTheirOwnElementsThroughExports() {
    try (Tensor t = Tensor.fromArray(new float[] {0, 1, 2, 3, 4, 5}, 2, 3);
        Tensor row = t.select(0, 1)) {
      assertArrayEquals(new float[] {3, 4, 5}, row.toFloatArray());
      assertEquals(12.0, NativeTestHelper.consumeOnNewThread(row.share().exportLegacy(), true));
    }
  }

  @Test
  void sharesAndViewsOfACopyAreNotCopied() {
    try (Tensor t = Tensor.fromArray(new int[] {1, 2, 3, 4}, 2, 2);
        Tensor c = t.copyTo(Device.CPU);
        Tensor s = c.share();
        Tensor v = c.transpose()) {
      assertEquals(Tensor.FLAG_IS_COPIED, c.flags() & Tensor.FLAG_IS_COPIED);
      assertEquals(0, s.flags() & Tensor.FLAG_IS_COPIED);
      assertEquals(0, v.flags() & Tensor.FLAG_IS_COPIED);
    }
  }
}
