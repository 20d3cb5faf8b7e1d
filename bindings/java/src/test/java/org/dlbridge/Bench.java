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
    // Warm-up in many short calls: op.run itself then gets a regular C2 compile with mature
    // profiles. (5 long calls left the first tensor row on an early OSR compile, ~45 ns slower
    // than the same loop measured a second time.)
    int chunk = Math.max(1, n / 50);
    for (int i = 0; i < 1000; i++) {
      op.run(chunk);
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
    double swigCall = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        DLBridgeNative.dlb_device_type_is_known(1);
      }
    }, 5_000_000);
    double jniNoop = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        BenchNative.noop();
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
    // The same cycles looped in C against the core, in this process (src/test/c/bench_helpers.c).
    double cWrap = nsPerOp(BenchNative::wrapFree, 2_000_000);
    double cAlloc = nsPerOp(BenchNative::allocateFree, 2_000_000);
    double cExchange = nsPerOp(BenchNative::wrapExportImportFree, 2_000_000);
    double cLegacy = nsPerOp(BenchNative::wrapLegacyFree, 2_000_000);
    System.out.printf("dlbridge %s Java bench (ns/op, best of 7; C = the same cycle looped in C, "
        + "target: Java <= %.0fx C)%n", DLBridge.version(), TARGET_RATIO);
    System.out.printf("  %-52s %8s %8s %7s%n", "cycle", "Java", "C", "ratio");
    row("bare JNI call (hand-written, empty; test tree)", jniNoop, Double.NaN);
    row("dlb_device_type_is_known through SWIG", swigCall, Double.NaN);
    row("dlb_tensor_live_count through SWIG", live, Double.NaN);
    row("wrap direct ByteBuffer + close", wrap, cWrap);
    row("allocate 16x16 float32 + close", alloc, cAlloc);
    row("wrap + exportVersioned + importVersioned + close", exchange, cExchange);
    row("wrap + exportLegacy + importLegacy + close", legacy, cLegacy);
  }

  private static final double TARGET_RATIO = 3.0;

  private static void row(String name, double java, double c) {
    if (Double.isNaN(c)) {
      System.out.printf("  %-52s %8.1f %8s %7s%n", name, java, "-", "-");
    } else {
      double ratio = java / c;
      System.out.printf("  %-52s %8.1f %8.1f %6.2fx%s%n", name, java, c, ratio,
          ratio <= TARGET_RATIO ? "" : "  (over " + TARGET_RATIO + "x)");
    }
  }
}
