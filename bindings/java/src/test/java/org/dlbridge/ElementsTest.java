package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Fills from arrays, element get/set, the slice API and names: what a user reaches for first. */
class ElementsTest extends LeakChecked {
  @Test
  void fillsEveryPrimitiveArrayTypeAndReadsItBack() {
    try (Tensor f = Tensor.allocate(Device.CPU, DType.FLOAT32, 2, 2);
        Tensor d = Tensor.allocate(Device.CPU, DType.FLOAT64, 3);
        Tensor b = Tensor.allocate(Device.CPU, DType.UINT8, 3);
        Tensor s = Tensor.allocate(Device.CPU, DType.INT16, 2);
        Tensor c = Tensor.allocate(Device.CPU, DType.UINT16, 2);
        Tensor i = Tensor.allocate(Device.CPU, DType.INT32, 2);
        Tensor l = Tensor.allocate(Device.CPU, DType.UINT64, 2);
        Tensor z = Tensor.allocate(Device.CPU, DType.BOOL, 3)) {
      f.copyFrom(new float[] {1.5f, -2f, 3f, 4f});
      assertArrayEquals(new float[] {1.5f, -2f, 3f, 4f}, f.toFloatArray());
      d.copyFrom(new double[] {0.25, -1e300, 7});
      assertArrayEquals(new double[] {0.25, -1e300, 7}, d.toDoubleArray());
      b.copyFrom(new byte[] {1, (byte) 200, 3});
      assertArrayEquals(new byte[] {1, (byte) 200, 3}, b.toByteArray());
      s.copyFrom(new short[] {-5, 300});
      assertArrayEquals(new short[] {-5, 300}, s.toShortArray());
      c.copyFrom(new char[] {'A', (char) 65535});
      assertArrayEquals(new char[] {'A', (char) 65535}, c.toCharArray());
      assertArrayEquals(new short[] {65, -1}, c.toShortArray());
      i.copyFrom(new int[] {Integer.MIN_VALUE, 9});
      assertArrayEquals(new int[] {Integer.MIN_VALUE, 9}, i.toIntArray());
      l.copyFrom(new long[] {-1L, 1L << 62});
      assertArrayEquals(new long[] {-1L, 1L << 62}, l.toLongArray());
      z.copyFrom(new boolean[] {true, false, true});
      assertArrayEquals(new boolean[] {true, false, true}, z.toBooleanArray());
    }
  }

  @Test
  void fillsAStridedViewThroughTheCore() {
    try (Tensor base = Tensor.fromArray(new int[] {0, 1, 2, 3, 4, 5}, 2, 3);
        Tensor t = base.transpose()) {
      t.copyFrom(new int[] {10, 11, 12, 13, 14, 15});
      assertArrayEquals(new int[] {10, 12, 14, 11, 13, 15}, base.toIntArray());
    }
  }

  @Test
  void fillMistakesCarryTheCoresMessage() {
    try (Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, 2, 2);
        Tensor ro = t.shareReadOnly();
        Tensor tr = t.transpose();
        Tensor rot = tr.shareReadOnly()) {
      DLPackException wrongType = assertThrows(DLPackException.class,
          () -> t.copyFrom(new int[4]));
      assertEquals(Status.INVALID_ARGUMENT, wrongType.getStatus());
      assertEquals("the tensor holds float32 elements, not int32", wrongType.getMessage());
      DLPackException wrongLength = assertThrows(DLPackException.class,
          () -> t.copyFrom(new float[3]));
      assertEquals(Status.INVALID_ARGUMENT, wrongLength.getStatus());
      assertEquals("the buffer holds 12 bytes but the tensor's 4 float32 elements take 16",
          wrongLength.getMessage());
      DLPackException none = assertThrows(DLPackException.class,
          () -> t.copyFrom((float[]) null));
      assertEquals("the buffer holds 0 bytes but the tensor's 4 float32 elements take 16",
          none.getMessage());
      DLPackException readOnly = assertThrows(DLPackException.class,
          () -> ro.copyFrom(new float[4]));
      assertEquals(Status.READ_ONLY, readOnly.getStatus());
      assertEquals("cannot copy into a read-only tensor", readOnly.getMessage());
      DLPackException readOnlyStrided = assertThrows(DLPackException.class,
          () -> rot.copyFrom(new float[4]));
      assertEquals(Status.READ_ONLY, readOnlyStrided.getStatus());
      assertEquals("cannot copy into a read-only tensor", readOnlyStrided.getMessage());
      // Unsigned dtypes go through the signed Java type of their width, and nothing else.
      try (Tensor u = Tensor.allocate(Device.CPU, DType.UINT32, 2)) {
        u.copyFrom(new int[] {-1, 7});
        assertArrayEquals(new int[] {-1, 7}, u.toIntArray());
        DLPackException e = assertThrows(DLPackException.class, u::toLongArray);
        assertEquals("the tensor holds uint32 elements, not int64", e.getMessage());
      }
    }
  }

  @Test
  void getsAndSetsElementsInAnyLayout() {
    try (Tensor t = Tensor.fromArray(new float[] {0, 1, 2, 3, 4, 5}, 2, 3);
        Tensor tt = t.transpose()) {
      assertEquals(5f, t.getFloat(1, 2));
      assertEquals(5f, t.getFloat(-1, -1));
      assertEquals(5f, tt.getFloat(2, 1));
      tt.setFloat(42f, 0, 1);
      assertEquals(42f, t.getFloat(1, 0));
    }
    try (Tensor d = Tensor.fromArray(new double[] {1, 2}, 2);
        Tensor b = Tensor.fromArray(new byte[] {-1, 2}, 2);
        Tensor s = Tensor.fromArray(new short[] {-3, 4}, 2);
        Tensor i = Tensor.fromArray(new int[] {5, -6}, 2);
        Tensor l = Tensor.fromArray(new long[] {7, Long.MIN_VALUE}, 2);
        Tensor z = Tensor.fromArray(new boolean[] {false, true}, 2)) {
      d.setDouble(-0.5, 1);
      assertEquals(-0.5, d.getDouble(1));
      b.setByte((byte) 100, 0);
      assertEquals((byte) 100, b.getByte(0));
      assertEquals((byte) 2, b.getByte(1));
      s.setShort((short) -300, 1);
      assertEquals((short) -300, s.getShort(1));
      i.setInt(Integer.MAX_VALUE, 0);
      assertEquals(Integer.MAX_VALUE, i.getInt(0));
      assertEquals(-6, i.getInt(1));
      assertEquals(Long.MIN_VALUE, l.getLong(1));
      l.setLong(-9, 0);
      assertEquals(-9, l.getLong(0));
      assertTrue(z.getBoolean(1));
      z.setBoolean(true, 0);
      assertArrayEquals(new boolean[] {true, true}, z.toBooleanArray());
    }
    try (Tensor row = Tensor.fromArray(new int[] {1, 2, 3}, 3);
        Tensor scalar = row.select(0, 2)) {
      assertEquals(3, scalar.getInt());
      scalar.setInt(30);
      assertEquals(30, row.getInt(2));
    }
  }

  @Test
  void elementMistakesCarryTheCoresMessage() {
    try (Tensor t = Tensor.fromArray(new float[] {0, 1, 2, 3, 4, 5}, 2, 3);
        Tensor ro = t.shareReadOnly();
        Tensor nibbles = Tensor.allocate(Device.CPU, DType.parse("uint4"), 4)) {
      DLPackException count = assertThrows(DLPackException.class, () -> t.getFloat(1));
      assertEquals(Status.INVALID_ARGUMENT, count.getStatus());
      assertEquals("1 indices given for a tensor with 2 dimensions", count.getMessage());
      DLPackException range = assertThrows(DLPackException.class, () -> t.setFloat(1f, 0, 3));
      assertEquals("index 3 is out of range for axis 1 with extent 3", range.getMessage());
      DLPackException readOnly = assertThrows(DLPackException.class, () -> ro.setFloat(1f, 0, 0));
      assertEquals(Status.READ_ONLY, readOnly.getStatus());
      assertEquals("the tensor is read-only", readOnly.getMessage());
      assertEquals(2f, ro.getFloat(0, 2));
      DLPackException type = assertThrows(DLPackException.class, () -> t.getInt(0, 0));
      assertEquals(Status.INVALID_ARGUMENT, type.getStatus());
      assertEquals("the tensor holds float32 elements, not int32", type.getMessage());
      DLPackException packed = assertThrows(DLPackException.class, () -> nibbles.getByte(0));
      assertEquals("the tensor holds uint4 elements, not int8", packed.getMessage());
      DLPackException setType = assertThrows(DLPackException.class, () -> t.setDouble(1, 0, 0));
      assertEquals("the tensor holds float32 elements, not float64", setType.getMessage());
    }
  }

  @Test
  void slicesCannotBeMisread() {
    try (Tensor t = Tensor.fromArray(new int[] {0, 1, 2, 3, 4, 5}, 2, 3);
        Tensor first = t.slice(Slice.of(0, 1));
        Tensor reversed = t.slice(Slice.ALL, Slice.every(-1));
        Tensor tail = t.slice(Slice.ALL, Slice.from(1));
        Tensor head = t.slice(Slice.until(1), Slice.of(0, 3, 2))) {
      assertArrayEquals(new long[] {1, 3}, first.shape());
      assertArrayEquals(new int[] {0, 1, 2}, first.toIntArray());
      assertArrayEquals(new int[] {2, 1, 0, 5, 4, 3}, reversed.toIntArray());
      assertArrayEquals(new int[] {1, 2, 4, 5}, tail.toIntArray());
      assertArrayEquals(new int[] {0, 2}, head.toIntArray());
      assertEquals("1:4", Slice.of(1, 4).toString());
      assertEquals("::-1", Slice.every(-1).toString());
      assertEquals(":", Slice.ALL.toString());
      DLPackException tooMany = assertThrows(DLPackException.class,
          () -> t.slice(Slice.ALL, Slice.ALL, Slice.ALL));
      assertEquals("3 slices given for a tensor with 2 dimensions", tooMany.getMessage());
      DLPackException zeroStep = assertThrows(DLPackException.class,
          () -> t.slice(Slice.of(0, 2, 0)));
      assertEquals(Status.INVALID_ARGUMENT, zeroStep.getStatus());
      assertFalse(zeroStep.getMessage().isEmpty());
      IllegalArgumentException nullSlice = assertThrows(IllegalArgumentException.class,
          () -> t.slice(Slice.ALL, null));
      assertEquals("slice 1 is null (use Slice.ALL for a whole dimension)", nullSlice.getMessage());
    }
  }

  @Test
  void typedBuffersSeeTheMemoryThroughTheCoresCheck() {
    try (Tensor f = Tensor.fromArray(new float[] {0, 1, 2, 3, 4, 5}, 2, 3);
        Tensor ro = f.shareReadOnly();
        Tensor ft = f.transpose();
        Tensor u = Tensor.allocate(Device.CPU, DType.UINT16, 2);
        Tensor l = Tensor.fromArray(new long[] {5, 6}, 2);
        Tensor d = Tensor.fromArray(new double[] {0.5}, 1)) {
      java.nio.FloatBuffer fb = f.asFloatBuffer();
      assertEquals(6, fb.capacity());
      fb.put(4, 40f);
      assertArrayEquals(new float[] {0, 1, 2, 3, 40, 5}, f.toFloatArray());
      assertTrue(ro.asFloatBuffer().isReadOnly());
      assertEquals(40f, ro.asFloatBuffer().get(4));
      u.asCharBuffer().put(new char[] {'a', (char) 65535});
      assertArrayEquals(new short[] {97, -1}, u.toShortArray());
      assertEquals(-1, u.asShortBuffer().get(1));
      assertEquals(6L, l.asLongBuffer().get(1));
      assertEquals(0.5, d.asDoubleBuffer().get(0));
      DLPackException type = assertThrows(DLPackException.class, f::asIntBuffer);
      assertEquals(Status.INVALID_ARGUMENT, type.getStatus());
      assertEquals("the tensor holds float32 elements, not int32", type.getMessage());
      DLPackException layout = assertThrows(DLPackException.class, ft::asFloatBuffer);
      assertEquals(Status.LAYOUT, layout.getStatus());
      assertEquals("the tensor is not C-contiguous: copy it to a contiguous tensor first",
          layout.getMessage());
    }
    // A typed buffer holds its own reference: valid after close.
    Tensor t = Tensor.fromArray(new int[] {7, 8}, 2);
    java.nio.IntBuffer ib = t.asIntBuffer();
    t.close();
    assertEquals(8, ib.get(1));
  }

  @Test
  void namesComeFromTheCore() {
    assertEquals("cpu", Device.CPU.toString());
    assertEquals("cuda:1", Device.of(Device.TYPE_CUDA, 1).toString());
    assertEquals("float32", DType.FLOAT32.toString());
    try (Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, 2, 3)) {
      assertEquals("Tensor(float32[2, 3] on cpu)", t.toString());
    }
  }
}
