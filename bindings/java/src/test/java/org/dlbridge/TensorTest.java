package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class TensorTest extends LeakChecked {

  @Test
  void roundTripsEveryJavaType() {
    float[] f = {1.5f, -2f, 3.25f, 0f, Float.MAX_VALUE, Float.MIN_VALUE};
    try (Tensor t = Tensor.fromArray(f, 2, 3)) {
      assertEquals(DType.FLOAT32, t.dtype());
      assertArrayEquals(new long[] {2, 3}, t.shape());
      assertArrayEquals(new long[] {3, 1}, t.strides());
      assertEquals(Device.CPU, t.device());
      assertArrayEquals(f, t.toFloatArray());
    }
    double[] d = {1.0, -1e300, Math.PI};
    try (Tensor t = Tensor.fromArray(d, 3)) {
      assertEquals(DType.FLOAT64, t.dtype());
      assertArrayEquals(d, t.toDoubleArray());
    }
    byte[] b = {Byte.MIN_VALUE, 0, Byte.MAX_VALUE, 7};
    try (Tensor t = Tensor.fromArray(b, 2, 2)) {
      assertEquals(DType.INT8, t.dtype());
      assertArrayEquals(b, t.toByteArray());
    }
    short[] s = {Short.MIN_VALUE, 1, Short.MAX_VALUE};
    try (Tensor t = Tensor.fromArray(s, 3)) {
      assertEquals(DType.INT16, t.dtype());
      assertArrayEquals(s, t.toShortArray());
    }
    int[] i = {Integer.MIN_VALUE, 1, 2, Integer.MAX_VALUE};
    try (Tensor t = Tensor.fromArray(i, 4)) {
      assertEquals(DType.INT32, t.dtype());
      assertArrayEquals(i, t.toIntArray());
    }
    long[] l = {Long.MIN_VALUE, 0, Long.MAX_VALUE, 42};
    try (Tensor t = Tensor.fromArray(l, 2, 1, 2)) {
      assertEquals(DType.INT64, t.dtype());
      assertArrayEquals(l, t.toLongArray());
    }
    boolean[] z = {true, false, true};
    try (Tensor t = Tensor.fromArray(z, 3)) {
      assertEquals(DType.BOOL, t.dtype());
      assertArrayEquals(z, t.toBooleanArray());
    }
    // A scalar and an empty tensor.
    try (Tensor t = Tensor.fromArray(new float[] {9f})) {
      assertEquals(0, t.ndim());
      assertArrayEquals(new float[] {9f}, t.toFloatArray());
    }
    try (Tensor t = Tensor.fromArray(new int[0], 0, 5)) {
      assertArrayEquals(new int[0], t.toIntArray());
    }
  }

  @Test
  void unsignedAndAllocatedTypes() {
    for (DType dt : new DType[] {DType.UINT8, DType.UINT16, DType.UINT32, DType.UINT64,
        DType.FLOAT16, DType.BFLOAT16, DType.COMPLEX64, DType.COMPLEX128}) {
      try (Tensor t = Tensor.allocate(Device.CPU, dt, 3, 4)) {
        assertEquals(dt, t.dtype());
        assertEquals(12 * dt.elementSize(), t.asByteBuffer().capacity());
      }
    }
    try (Tensor t = Tensor.allocate(Device.CPU, DType.UINT16, 2)) {
      t.asByteBuffer().asShortBuffer().put(new short[] {(short) 65535, 1});
      assertArrayEquals(new short[] {(short) 65535, 1}, t.toShortArray());
    }
  }

  @Test
  void valueClassesKeepUnknownCodes() {
    DType odd = DType.of(200, 8, 1);
    assertEquals(200, odd.code());
    assertEquals(DType.of(2, 32, 1), DType.FLOAT32);
    assertEquals(Device.of(99, 3), Device.of(99, 3));
    DLPackException e = assertThrows(DLPackException.class,
        () -> Tensor.allocate(Device.CPU, odd, 2));
    assertEquals(Status.UNSUPPORTED, e.getStatus(), e.getMessage());
  }

  @Test
  void wrapsDirectBufferWithoutCopying() {
    ByteBuffer buf = ByteBuffer.allocateDirect(6 * 4).order(ByteOrder.nativeOrder());
    int slots = Slots.inUse();
    try (Tensor t = Tensor.wrap(buf, DType.FLOAT32, 2, 3)) {
      buf.asFloatBuffer().put(new float[] {1, 2, 3, 4, 5, 6});
      assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, t.toFloatArray());
      try (Tensor col = t.select(1, 2)) {
        assertArrayEquals(new float[] {3, 6}, col.toFloatArray());
      }
      buf.putFloat(0, 10f); // the same memory
      assertEquals(10f, t.getFloat(0, 0));
    }
    // The token came back inside close(): the slot (and the buffer) is free at once.
    assertEquals(slots, Slots.inUse());
    assertThrows(IllegalArgumentException.class,
        () -> Tensor.wrap(ByteBuffer.allocate(8), DType.FLOAT32, 2));
    assertEquals(slots, Slots.inUse());
  }

  @Test
  void wrapBeyondTheBufferIsRefusedByTheCore() {
    int slots = Slots.inUse();
    ByteBuffer small = ByteBuffer.allocateDirect(8);
    DLPackException e = assertThrows(DLPackException.class,
        () -> Tensor.wrap(small, DType.FLOAT32, 3));
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    assertEquals("the tensor's elements reach bytes [0, 12) of a buffer of 8 bytes",
        e.getMessage());
    // From the buffer's position: 4 floats from byte 8 of 20 reach byte 24.
    ByteBuffer twenty = ByteBuffer.allocateDirect(20);
    twenty.position(8);
    e = assertThrows(DLPackException.class, () -> Tensor.wrap(twenty, DType.FLOAT32, 4));
    assertEquals("the tensor's elements reach bytes [8, 24) of a buffer of 20 bytes",
        e.getMessage());
    try (Tensor three = Tensor.wrap(twenty, DType.FLOAT32, 3)) {
      assertEquals(3, three.elementCount());
    }
    // Ranks above 4 take the general path (the shape as a long[]): the same check, same words.
    ByteBuffer b24 = ByteBuffer.allocateDirect(24).order(ByteOrder.nativeOrder());
    b24.asFloatBuffer().put(new float[] {0, 1, 2, 3, 4, 5});
    try (Tensor five = Tensor.wrap(b24, DType.FLOAT32, 1, 1, 1, 2, 3)) {
      assertArrayEquals(new long[] {1, 1, 1, 2, 3}, five.shape());
      assertEquals(5f, five.getFloat(0, 0, 0, 1, 2));
    }
    e = assertThrows(DLPackException.class, () -> Tensor.wrap(b24, DType.FLOAT32, 1, 1, 1, 2, 4));
    assertEquals("the tensor's elements reach bytes [0, 32) of a buffer of 24 bytes",
        e.getMessage());
    e = assertThrows(DLPackException.class, () -> Tensor.wrap(b24, DType.FLOAT32, (long[]) null));
    assertEquals("shape is null", e.getMessage());
    e = assertThrows(DLPackException.class, () -> Tensor.wrap(null, DType.FLOAT32, 3));
    assertEquals("the buffer is null", e.getMessage());
    // Refused before anything was built: no token handed out, no slot kept.
    assertEquals(slots, Slots.inUse());
  }

  @Test
  void paddedSubByteTensorsTakeOneBytePerElement() {
    DType u4 = DType.parse("uint4");
    long padded = Tensor.FLAG_IS_SUBBYTE_TYPE_PADDED;
    ByteBuffer values = ByteBuffer.allocateDirect(5);
    for (int i = 0; i < 5; ++i) {
      values.put(i, (byte) (i + 1));
    }
    ByteBuffer back = ByteBuffer.allocateDirect(5);
    try (Tensor src = Tensor.wrap(values, u4, new long[] {5}, padded);
        Tensor dst = Tensor.allocate(Device.CPU, u4, new long[] {5}, null, padded);
        Tensor out = Tensor.wrap(back, u4, new long[] {5}, padded);
        Tensor packed = Tensor.allocate(Device.CPU, u4, 5)) {
      assertEquals(padded, src.flags());
      assertEquals(padded, dst.flags());
      assertEquals(5, dst.byteSize());
      assertEquals(3, packed.byteSize());
      src.copyInto(dst);
      dst.copyInto(out);
      for (int i = 0; i < 5; ++i) {
        assertEquals(i + 1, back.get(i));
      }
    }
    // Padded, five elements need five bytes; packed, they fit in three.
    ByteBuffer four = ByteBuffer.allocateDirect(4);
    DLPackException e = assertThrows(DLPackException.class,
        () -> Tensor.wrap(four, u4, new long[] {5}, padded));
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    assertEquals("the tensor's elements reach bytes [0, 5) of a buffer of 4 bytes", e.getMessage());
    try (Tensor fits = Tensor.wrap(four, u4, 5)) {
      assertEquals(0L, fits.flags());
    }
  }

  @Test
  void directBufferExportedToCConsumerIsReleasedOnce() {
    int slots = Slots.inUse();
    ByteBuffer buf = ByteBuffer.allocateDirect(4 * 4).order(ByteOrder.nativeOrder());
    buf.asFloatBuffer().put(new float[] {1, 2, 3, 4});
    Tensor t = Tensor.wrap(buf, DType.FLOAT32, 4);
    long address = t.exportVersioned();
    assertTrue(t.isClosed());
    buf = null;
    System.gc(); // the slot keeps the buffer alive while C holds the tensor
    assertEquals(slots + 1, Slots.inUse());
    assertEquals(1003, NativeTestHelper.versionOf(address));
    assertEquals(10.0, NativeTestHelper.consumeOnNewThread(address, false));
    t.close(); // no-op
    // The release happened on C's thread: its token is drained by the next free (or the
    // cleaner thread), and only then is the slot free.
    Tensor.allocate(Device.CPU, DType.FLOAT32, 1).close();
    assertEquals(slots, Slots.inUse());
  }

  @Test
  void legacyExportToCConsumer() {
    Tensor t = Tensor.fromArray(new float[] {1, 2, 3}, 3);
    long address = t.exportLegacy();
    assertTrue(t.isClosed());
    assertEquals(6.0, NativeTestHelper.consumeOnNewThread(address, true));
  }

  @Test
  void importsFromCProducer() {
    long deleted = NativeTestHelper.deletedCount();
    try (Tensor t = Tensor.importVersioned(NativeTestHelper.produceVersioned(5, 1, 0, 0))) {
      assertArrayEquals(new float[] {0, 1, 2, 3, 4}, t.toFloatArray());
      assertEquals(deleted, NativeTestHelper.deletedCount());
    }
    assertEquals(deleted + 1, NativeTestHelper.deletedCount());
    try (Tensor t = Tensor.importLegacy(NativeTestHelper.produceLegacy(4))) {
      assertArrayEquals(new float[] {0, 1, 2, 3}, t.toFloatArray());
      assertEquals(0, t.flags());
    }
    assertEquals(deleted + 2, NativeTestHelper.deletedCount());
    // Re-exporting an imported tensor to a C consumer still frees the producer's tensor once.
    Tensor t = Tensor.importVersioned(NativeTestHelper.produceVersioned(3, 1, 3, 0));
    assertEquals(3.0, NativeTestHelper.consumeOnNewThread(t.exportVersioned(), false));
    assertEquals(deleted + 3, NativeTestHelper.deletedCount());
  }

  @Test
  void rejectsMajorVersion2AndStillDeletes() {
    long deleted = NativeTestHelper.deletedCount();
    long address = NativeTestHelper.produceVersioned(3, 2, 0, 0);
    DLPackException e = assertThrows(DLPackException.class, () -> Tensor.importVersioned(address));
    assertEquals(Status.UNSUPPORTED_VERSION, e.getStatus());
    assertEquals("DLB_ERR_UNSUPPORTED_VERSION", e.getStatusName());
    assertEquals(TestUtil.CORE_MESSAGE_MAJOR_2, e.getMessage());
    assertEquals(deleted + 1, NativeTestHelper.deletedCount());
    // An unknown flag bit in a 1.x tensor: refused, deleted once.
    long a2 = NativeTestHelper.produceVersioned(3, 1, 99, 1L << 40);
    assertThrows(DLPackException.class, () -> Tensor.importVersioned(a2));
    assertEquals(deleted + 2, NativeTestHelper.deletedCount());
  }

  @Test
  void viewsKeepTheirBaseAlive() {
    Tensor base = Tensor.fromArray(new int[] {0, 1, 2, 3, 4, 5}, 2, 3);
    Tensor t = base.transpose();
    Tensor r = base.reshape(3, -1);
    Tensor s = base.slice(Slice.of(0, 2), Slice.every(-1));
    Tensor p = base.permute(1, 0);
    Tensor sh = base.shareReadOnly();
    base.close();
    assertArrayEquals(new long[] {3, 2}, t.shape());
    assertArrayEquals(new long[] {1, 3}, t.strides());
    assertFalse(t.isCContiguous());
    assertTrue(t.isFContiguous() && t.isHostReadable());
    assertFalse(sh.isFContiguous()); // a 2x3 C-contiguous share is not column-major
    assertArrayEquals(new int[] {0, 3, 1, 4, 2, 5}, t.toIntArray());
    assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5}, r.toIntArray());
    assertArrayEquals(new long[] {3, 2}, r.shape());
    assertArrayEquals(new int[] {2, 1, 0, 5, 4, 3}, s.toIntArray());
    assertArrayEquals(new int[] {0, 3, 1, 4, 2, 5}, p.toIntArray());
    assertTrue(sh.isReadOnly());
    assertFalse(r.isReadOnly()); // a share is read-only, its base and views stay as they were
    try (Tensor c = t.copyTo(Device.CPU)) {
      assertTrue(c.isCContiguous());
      assertEquals(Tensor.FLAG_IS_COPIED, c.flags() & Tensor.FLAG_IS_COPIED);
      assertArrayEquals(new int[] {0, 3, 1, 4, 2, 5}, c.toIntArray());
    }
    DLPackException e = assertThrows(DLPackException.class, () -> t.reshape(6));
    assertEquals(Status.LAYOUT, e.getStatus());
    t.close();
    r.close();
    s.close();
    p.close();
    sh.close();
  }

  @Test
  void misuse() {
    Tensor t = Tensor.fromArray(new float[] {1, 2}, 2);
    t.close();
    t.close(); // idempotent
    for (Executable use : new Executable[] {t::shape, t::toFloatArray, t::exportVersioned,
        t::exportLegacy, () -> t.select(0, 0), () -> t.getFloat(0), t::asFloatBuffer,
        () -> t.copyFrom(new float[2]), t::dtype, t::address}) {
      DLPackException closed = assertThrows(DLPackException.class, use);
      assertEquals(Status.CLOSED, closed.getStatus());
      assertEquals("DLB_ERR_CLOSED", closed.getStatusName());
      assertEquals("the tensor is closed", closed.getMessage());
    }
    assertEquals("Tensor(closed)", t.toString());
    try (Tensor u = Tensor.fromArray(new float[] {1, 2}, 2)) {
      DLPackException wrongType = assertThrows(DLPackException.class, u::toIntArray);
      assertEquals(Status.INVALID_ARGUMENT, wrongType.getStatus());
      assertEquals("the tensor holds float32 elements, not int32", wrongType.getMessage());
      wrongType = assertThrows(DLPackException.class, u::toDoubleArray);
      assertEquals("the tensor holds float32 elements, not float64", wrongType.getMessage());
      DLPackException e = assertThrows(DLPackException.class, () -> u.select(3, 0));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertFalse(e.getMessage().isEmpty());
    }
    // The array's size is the core's check; the allocated tensor goes with the refusal.
    DLPackException count = assertThrows(DLPackException.class,
        () -> Tensor.fromArray(new float[3], 2, 2));
    assertEquals(Status.INVALID_ARGUMENT, count.getStatus());
    assertEquals("the buffer holds 12 bytes but the tensor's 4 float32 elements take 16",
        count.getMessage());
    DLPackException nullShape = assertThrows(DLPackException.class,
        () -> Tensor.allocate(Device.CPU, DType.FLOAT32, (long[]) null));
    assertEquals("shape is null", nullShape.getMessage());
    try (Tensor m = Tensor.fromArray(new int[] {1, 2, 3, 4}, 2, 2); Tensor mt = m.transpose()) {
      DLPackException e = assertThrows(DLPackException.class, mt::asByteBuffer);
      assertEquals(Status.LAYOUT, e.getStatus());
      assertEquals("the tensor is not C-contiguous: copy it to a contiguous tensor first", e.getMessage());
      // A device that cannot take the copy is refused with the core's status, nothing leaked:
      // no CUDA driver here ("no CUDA driver found"), a library built without CUDA, or, on a
      // GPU machine, a device id no machine has.
      DLPackException c = assertThrows(DLPackException.class, () -> m.copyTo(Device.cuda(999)));
      assertTrue(c.getStatus() == Status.DEVICE_UNAVAILABLE
          || c.getStatus() == Status.UNSUPPORTED
          || c.getStatus() == Status.INVALID_ARGUMENT, c.getMessage());
    }
    DLPackException neg = assertThrows(DLPackException.class,
        () -> Tensor.allocate(Device.CPU, DType.FLOAT32, -1));
    assertEquals(Status.INVALID_ARGUMENT, neg.getStatus());
  }

  @Test
  void readOnly() {
    ByteBuffer ro = ByteBuffer.allocateDirect(8).asReadOnlyBuffer();
    try (Tensor t = Tensor.wrap(ro, DType.INT32, 2)) {
      assertTrue(t.isReadOnly());
      ByteBuffer view = t.asByteBuffer();
      assertTrue(view.isReadOnly());
      assertThrows(ReadOnlyBufferException.class, () -> view.putInt(0, 1));
      DLPackException e = assertThrows(DLPackException.class, t::exportLegacy);
      assertEquals(Status.READ_ONLY, e.getStatus());
      assertFalse(t.isClosed()); // a refused export leaves the tensor with its owner
      try (Tensor dst = Tensor.fromArray(new int[] {1, 2}, 2)) {
        DLPackException w = assertThrows(DLPackException.class, () -> t.copyFrom(dst));
        assertEquals(Status.READ_ONLY, w.getStatus());
      }
    }
    try (Tensor w = Tensor.fromArray(new int[] {1, 2}, 2); Tensor r = w.shareReadOnly()) {
      assertThrows(ReadOnlyBufferException.class, () -> r.asByteBuffer().put((byte) 1));
      w.asByteBuffer().putInt(0, 7);
      assertArrayEquals(new int[] {7, 2}, r.toIntArray());
    }
  }

  @Test
  void byteBufferOutlivesClose() {
    Tensor t = Tensor.fromArray(new long[] {5, 6}, 2);
    ByteBuffer b = t.asByteBuffer();
    t.close();
    assertEquals(6L, b.getLong(8));
    b = null;
  }

  @Test
  void cleanerFreesUnclosedTensors() {
    for (int i = 0; i < 1000; i++) {
      Tensor.fromArray(new float[] {i}, 1);
    }
    // noLeaks() collects garbage until the count comes back.
  }

  @Test
  void bufferReleasedOnForeignThreadBecomesCollectable() throws InterruptedException {
    int slots = Slots.inUse();
    ByteBuffer b = ByteBuffer.allocateDirect(3 * 4).order(ByteOrder.nativeOrder());
    b.asFloatBuffer().put(new float[] {1, 2, 4});
    WeakReference<ByteBuffer> weak = new WeakReference<>(b);
    long address = Tensor.wrap(b, DType.FLOAT32, 3).exportVersioned();
    b = null;
    // Only the slot holds the buffer now, and it must, until the C consumer frees it.
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(20);
    }
    assertTrue(weak.get() != null);
    assertEquals(7.0, NativeTestHelper.consumeOnNewThread(address, false));
    // Nothing else frees here: the cleaner thread drains the token within about a second.
    assertTrue(collected(weak, 200));
    assertEquals(slots, Slots.inUse());
  }

  @Test
  void unclosedSharedWrapIsCleaned() {
    int slots = Slots.inUse();
    for (int i = 0; i < 100; i++) {
      Tensor t = Tensor.wrap(ByteBuffer.allocateDirect(8), DType.INT32, 2);
      t.share(); // neither is closed
      t.transpose();
    }
    assertEquals(liveBefore, TestUtil.liveAfterGc(liveBefore));
    assertEquals(slots, TestUtil.slotsAfterGc(slots));
  }

  @Test
  void slotTableGrowsPastASegment() {
    int slotsBefore = Slots.inUse();
    int n = 10_000; // more than two segments of 4096 slots
    Tensor[] wraps = new Tensor[n];
    Tensor[] views = new Tensor[n];
    for (int i = 0; i < n; i++) {
      ByteBuffer b = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
      b.putInt(0, i);
      wraps[i] = Tensor.wrap(b, DType.INT32, 2);
      views[i] = i % 2 == 0 ? wraps[i].slice(Slice.of(0, 1)) : null; // views of half of them
    }
    assertTrue(Slots.inUse() >= slotsBefore + n + n / 2);
    for (int i = 0; i < n; i += 2) {
      wraps[i].close(); // its slot keeps the buffer until the last reference goes
    }
    assertTrue(Slots.inUse() >= slotsBefore + n + n / 2);
    for (int i = 0; i < n; i += 2) {
      assertEquals(i, views[i].toIntArray()[0]);
      views[i].close(); // hands back the token of wraps[i], released in this free
      wraps[i + 1].close();
    }
    // Every token came back exactly once: each slot is free once (a token taken twice would
    // push its slot twice and loop the free stack).
    assertEquals(slotsBefore, Slots.inUse());
  }

  /** Collects garbage until {@code ref} is cleared or about 2 s have passed. */
  private static boolean collected(WeakReference<?> ref) throws InterruptedException {
    return collected(ref, 40);
  }

  /** Collects garbage until {@code ref} is cleared or {@code tries} x 50 ms have passed. */
  private static boolean collected(WeakReference<?> ref, int tries) throws InterruptedException {
    for (int i = 0; i < tries && ref.get() != null; i++) {
      System.gc();
      Thread.sleep(50);
    }
    return ref.get() == null;
  }

  @Test
  void wrappedBufferStaysReachableWhileAnyOwnerHoldsItsMemory() throws InterruptedException {
    int slots = Slots.inUse();
    // Sole owner, never closed by hand: the tensor keeps the buffer reachable.
    WeakReference<ByteBuffer> alone = new WeakReference<>(ByteBuffer.allocateDirect(16));
    Tensor t = Tensor.wrap(alone.get(), DType.FLOAT32, 4);
    System.gc();
    assertTrue(alone.get() != null);
    t.close();
    assertEquals(slots, Slots.inUse());
    assertTrue(collected(alone));
    // A view outlives the wrapping tensor: the buffer is held by its slot until the
    // view's release, then it can go.
    ByteBuffer b = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
    b.asFloatBuffer().put(new float[] {1, 2, 3, 4});
    WeakReference<ByteBuffer> viewed = new WeakReference<>(b);
    Tensor base = Tensor.wrap(b, DType.FLOAT32, 2, 2);
    b = null;
    Tensor view = base.transpose();
    base.close();
    assertEquals(slots + 2, Slots.inUse()); // the view's State, the base's buffer
    System.gc();
    assertTrue(viewed.get() != null);
    assertArrayEquals(new float[] {1, 3, 2, 4}, view.toFloatArray());
    view.close();
    assertEquals(slots, Slots.inUse());
    assertTrue(collected(viewed));
  }
}
