package org.dlbridge;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;

/**
 * The drain path, deterministic: with the cleaner thread stopped, a wrapped buffer released by a
 * C consumer on its own thread stays held (its token queued) until a free on a Java thread drains
 * the token. Run in a JVM of its own (ReleaseTest): stopping the cleaner is for good.
 */
public final class DrainMain {
  private DrainMain() {}

  public static void main(String[] args) throws InterruptedException {
    Tensor.allocate(Device.CPU, DType.FLOAT32, 1).close(); // loads the library, starts the cleaner
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().equals("dlbridge-cleaner")) {
        t.interrupt();
        t.join(5000);
      }
    }
    int slots = Slots.inUse();
    ByteBuffer b = ByteBuffer.allocateDirect(16);
    WeakReference<ByteBuffer> weak = new WeakReference<>(b);
    long address = Tensor.wrap(b, DType.FLOAT32, 4).exportVersioned();
    b = null;
    System.out.println("exported: held=" + (Slots.inUse() - slots) + " queued=" + Lifecycle.queued());
    NativeTestHelper.consumeOnNewThread(address, false);
    collect(weak);
    System.out.println("freed by C: held=" + (Slots.inUse() - slots) + " queued="
        + Lifecycle.queued() + " reachable=" + (weak.get() != null));
    Tensor.allocate(Device.CPU, DType.FLOAT32, 1).close(); // a free on this thread drains
    System.out.println("after a Java free: held=" + (Slots.inUse() - slots) + " queued="
        + Lifecycle.queued());
    collect(weak);
    System.out.println("collected=" + (weak.get() == null));
  }

  private static void collect(WeakReference<?> ref) throws InterruptedException {
    for (int i = 0; i < 20 && ref.get() != null; i++) {
      System.gc();
      Thread.sleep(20);
    }
  }
}
