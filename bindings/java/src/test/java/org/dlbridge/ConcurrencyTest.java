package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ConcurrencyTest {
  private static final int THREADS = 8;
  private static final int TOTAL = 100_000;

  /** 8 threads create 100k tensors, hand half to other threads through a queue (shares and
   * views included), and close them there; the live count returns to where it started. */
  @Test
  void eightThreadsCreateShareAndClose() throws Exception {
    long before = DLBridgeNative.dlb_tensor_live_count();
    int slotsBefore = Slots.inUse();
    BlockingQueue<Tensor> handoff = new ArrayBlockingQueue<>(1024);
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    List<Future<Long>> results = new ArrayList<>();
    for (int w = 0; w < THREADS; w++) {
      final int worker = w;
      results.add(pool.submit(() -> {
        long sum = 0;
        for (int i = 0; i < TOTAL / THREADS; i++) {
          Tensor t;
          switch (i % 4) {
            case 0:
              t = Tensor.fromArray(new int[] {worker, i}, 2);
              break;
            case 1:
              t = Tensor.allocate(Device.CPU, DType.FLOAT32, 2, 2);
              break;
            case 2:
              t = Tensor.wrap(ByteBuffer.allocateDirect(16), DType.INT32, 4);
              break;
            default:
              try (Tensor base = Tensor.fromArray(new long[] {1, 2, 3}, 3)) {
                t = base.slice(Slice.from(1));
              }
          }
          if (i % 2 == 0) {
            Tensor shared = t.share();
            t.close();
            handoff.put(shared);
          } else {
            t.close();
          }
          Tensor other = handoff.poll();
          if (other != null) {
            sum += other.ndim();
            other.close();
            other.close();
          }
        }
        return sum;
      }));
    }
    for (Future<Long> f : results) {
      f.get(5, TimeUnit.MINUTES);
    }
    pool.shutdown();
    Tensor rest;
    while ((rest = handoff.poll()) != null) {
      rest.close();
    }
    assertEquals(before, TestUtil.liveAfterGc(before));
    // Every wrapped buffer's token back once (the slot table's count would be off, or its free
    // stack loop, otherwise), every slot free.
    assertEquals(slotsBefore, TestUtil.slotsAfterGc(slotsBefore));
  }

  /** Many threads close the same tensor, and use it while others close it. */
  @Test
  void racingClose() throws Exception {
    long before = DLBridgeNative.dlb_tensor_live_count();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    for (int round = 0; round < 200; round++) {
      Tensor t = Tensor.fromArray(new float[] {1, 2, 3}, 3);
      List<Future<?>> fs = new ArrayList<>();
      for (int k = 0; k < THREADS; k++) {
        fs.add(pool.submit(() -> {
          try {
            t.toFloatArray();
          } catch (DLPackException closed) {
            // expected once another thread has closed it, and only that
            assertEquals(Status.CLOSED, closed.getStatus());
          }
          t.close();
        }));
      }
      for (Future<?> f : fs) {
        f.get();
      }
    }
    pool.shutdown();
    assertEquals(before, TestUtil.liveAfterGc(before));
  }

  // White-box: a call held "in flight" with the tensor's owner count (Lifecycle.Owner), so that
  // what a close and an export do meanwhile is certain rather than left to timing.

  @Test
  void aCloseDuringACallFreesWhenTheCallEnds() {
    long before = DLBridgeNative.dlb_tensor_live_count();
    Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, 2, 3);
    t.state.enter();
    t.close();
    assertTrue(t.isClosed());
    assertEquals(before + 1, DLBridgeNative.dlb_tensor_live_count()); // the call still uses it
    DLPackException e = assertThrows(DLPackException.class, t::shape);
    assertEquals(Status.CLOSED, e.getStatus());
    assertEquals("the tensor is closed", e.getMessage());
    t.close(); // idempotent, and frees nothing early
    assertEquals(before + 1, DLBridgeNative.dlb_tensor_live_count());
    t.state.exit(); // the last call out frees
    assertEquals(before, DLBridgeNative.dlb_tensor_live_count());
  }

  @Test
  void anExportWaitsForTheCallsInFlight() throws Exception {
    long before = DLBridgeNative.dlb_tensor_live_count();
    Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, 2, 3);
    t.state.enter();
    CompletableFuture<Long> export = CompletableFuture.supplyAsync(t::exportVersioned);
    Thread.sleep(50);
    assertFalse(export.isDone(), "the export handed the tensor over while a call used it");
    t.state.exit();
    long address = export.get(10, TimeUnit.SECONDS);
    assertTrue(t.isClosed());
    assertEquals(before + 1, DLBridgeNative.dlb_tensor_live_count()); // moved out, not freed
    Tensor.importVersioned(address).close();
    assertEquals(before, DLBridgeNative.dlb_tensor_live_count());
  }
}
