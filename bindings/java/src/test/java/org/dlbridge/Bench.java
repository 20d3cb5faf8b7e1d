package org.dlbridge;

import java.nio.ByteBuffer;

/**
 * A plain Java bench harness (no JMH): ns per operation, best of several rounds after warm-up.
 * Run: java -cp target/classes:target/test-classes org.dlbridge.Bench
 */
public final class Bench {
  private Bench() {}

  private interface Op {
    void run(int n);
  }

  private static double nsPerOp(Op op, int n) {
    for (int i = 0; i < 5; i++) {
      op.run(n); // warm-up: let the JIT compile the path
    }
    double best = Double.MAX_VALUE;
    for (int r = 0; r < 7; r++) {
      long t0 = System.nanoTime();
      op.run(n);
      best = Math.min(best, (System.nanoTime() - t0) / (double) n);
    }
    return best;
  }

  public static void main(String[] args) {
    ByteBuffer buf = ByteBuffer.allocateDirect(1024);
    long[] shape = {16, 16};
    int n = 200_000;
    double swigNoop = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        DLBridgeNative.dlbx_noop();
      }
    }, 5_000_000);
    double jniNoop = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        NativeSupport.noop();
      }
    }, 5_000_000);
    double live = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        DLBridgeNative.dlb_tensor_live_count();
      }
    }, 5_000_000);
    double wrap = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        Tensor.wrap(buf, DType.FLOAT32, shape).close();
      }
    }, n);
    double alloc = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        Tensor.allocate(Device.CPU, DType.FLOAT32, shape).close();
      }
    }, n);
    double exchange = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        Tensor t = Tensor.wrap(buf, DType.FLOAT32, shape);
        Tensor.importVersioned(t.exportVersioned()).close();
      }
    }, n);
    double legacy = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        Tensor t = Tensor.wrap(buf, DType.FLOAT32, shape);
        Tensor.importLegacy(t.exportLegacy()).close();
      }
    }, n);
    System.out.printf("dlbridge %s Java bench (ns/op, best of 7)%n", DLBridge.version());
    System.out.printf("  bare JNI call (SWIG, empty C function)      %8.1f%n", swigNoop);
    System.out.printf("  bare JNI call (hand-written, empty)         %8.1f%n", jniNoop);
    System.out.printf("  dlb_tensor_live_count through SWIG          %8.1f%n", live);
    System.out.printf("  wrap direct ByteBuffer + close              %8.1f%n", wrap);
    System.out.printf("  allocate 16x16 float32 + close              %8.1f%n", alloc);
    System.out.printf("  wrap + exportVersioned + importVersioned + close %4.1f%n", exchange);
    System.out.printf("  wrap + exportLegacy + importLegacy + close   %8.1f%n", legacy);
  }
}
