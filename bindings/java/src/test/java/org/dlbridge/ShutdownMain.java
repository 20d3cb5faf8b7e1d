package org.dlbridge;

import java.nio.ByteBuffer;

/** Exports wrapped buffers to C threads that free them while this JVM exits. */
public final class ShutdownMain {
  private ShutdownMain() {}

  public static void main(String[] args) {
    long delay = Long.parseLong(args[0]);
    for (int i = 0; i < 16; i++) {
      Tensor t = Tensor.wrap(ByteBuffer.allocateDirect(64), DType.FLOAT32, 16);
      NativeTestHelper.freeLater(t.exportVersioned(), delay + i * 100L);
    }
    System.out.println("exiting");
  }
}
