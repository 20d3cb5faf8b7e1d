package org.dlbridge;

import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;
import java.nio.ByteBuffer;

/**
 * A plain Java bench harness (no JMH): ns per operation, best of several rounds after warm-up.
 * Run: java -cp target/classes:target/test-classes org.dlbridge.Bench
 *
 * <p>Each tensor cycle is timed three ways in the same run:
 *
 * <ul>
 *   <li>Java: the cycle through the public API;
 *   <li>C: the same cycle looped in C against the core (bench/binding_cycles.c);
 *   <li>floor: what any Java binding of this C API must pay for the cycle: the same native calls
 *       made bare, straight through the generated layer (DLBridgeNative: the JNI transitions, the
 *       typemaps and the core's own work; a rank-2 wrap or allocate is dlbx_tensor_wrap_compact
 *       or dlbx_tensor_allocate_compact, as in Tensor.wrap and Tensor.allocate), plus, per
 *       tensor, an owner object and a phantom reference registered in a table and dropped again
 *       (the least a GC safety net costs).
 * </ul>
 *
 * "over floor" is Java minus floor: what this binding adds (its slots, locks, states, tokens).
 * The target is over floor &lt;= C.
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

  // ---- the floor's Java pieces: an owner and its registered phantom reference ------------------
  private static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();
  private static final Object[] TABLE = new Object[1024];

  /** Registers a phantom reference to a new owner in slot {@code i} of the table. */
  private static void register(int i) {
    TABLE[i & 1023] = new PhantomReference<>(new Object(), QUEUE);
  }

  private static void unregister(int i) {
    TABLE[i & 1023] = null;
  }

  private static final long CPU = Device.CPU.packed();
  private static final int F32 = DType.FLOAT32.packed();
  /** A token the floor's wraps carry: handed back by the free, nothing to let go of. */
  private static final long TOKEN = 1;

  public static void main(String[] args) {
    ByteBuffer buf = ByteBuffer.allocateDirect(1024);
    long[] shape = {16, 16};
    int n = 200_000;
    double jniNoop = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        BenchNative.noop();
      }
    }, 5_000_000);
    double swigCall = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        DLBridgeNative.dlb_device_type_is_known(1);
      }
    }, 5_000_000);
    double live = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        DLBridgeNative.dlb_tensor_live_count();
      }
    }, 5_000_000);

    // The cycles through the API, in the order the bench has always had (the heap's state, to
    // which glibc's aligned_alloc in the allocate row is sensitive, stays comparable), then
    // their floors.
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
    double wrapFloor = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        register(i);
        long h = DLBridgeNative.dlbx_tensor_wrap_compact(buf, 2, 16, 16, 0, 0, CPU, F32, 0, 0,
            TOKEN);
        DLBridgeNative.dlbx_tensor_free(h);
        unregister(i);
      }
    }, n);
    double allocFloor = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        register(i);
        long h = DLBridgeNative.dlbx_tensor_allocate_compact(CPU, F32, 2, 16, 16, 0, 0, 0);
        DLBridgeNative.dlbx_tensor_free(h);
        unregister(i);
      }
    }, n);
    double exchangeFloor = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        register(i);
        long h = DLBridgeNative.dlbx_tensor_wrap_compact(buf, 2, 16, 16, 0, 0, CPU, F32, 0, 0,
            TOKEN);
        unregister(i);
        register(i + 1);
        DLBridgeNative.dlbx_tensor_free(DLBridgeNative.dlb_tensor_import(h));
        unregister(i + 1);
      }
    }, n);
    double legacyFloor = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        register(i);
        long h = DLBridgeNative.dlbx_tensor_wrap_compact(buf, 2, 16, 16, 0, 0, CPU, F32, 0, 0,
            TOKEN);
        long l = DLBridgeNative.dlb_tensor_export_legacy(h);
        unregister(i);
        register(i + 1);
        DLBridgeNative.dlbx_tensor_free(DLBridgeNative.dlb_tensor_import_legacy(l));
        unregister(i + 1);
      }
    }, n);
    // The shared fast path (dlbridge.i: extents by value) against the general call (a long[]
    // for JNI to measure and copy), the bare native calls of each cycle.
    double wrapByValue = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        DLBridgeNative.dlbx_tensor_free(DLBridgeNative.dlbx_tensor_wrap_compact(buf, 2, 16, 16,
            0, 0, CPU, F32, 0, 0, TOKEN));
      }
    }, n);
    double wrapArray = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        DLBridgeNative.dlbx_tensor_free(DLBridgeNative.dlbx_tensor_wrap(buf, shape, null, CPU,
            F32, 0, 0, TOKEN));
      }
    }, n);
    double allocByValue = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        DLBridgeNative.dlbx_tensor_free(DLBridgeNative.dlbx_tensor_allocate_compact(CPU, F32, 2,
            16, 16, 0, 0, 0));
      }
    }, n);
    double allocArray = nsPerOp(k -> {
      for (int i = 0; i < k; i++) {
        DLBridgeNative.dlbx_tensor_free(DLBridgeNative.dlb_tensor_allocate(CPU, F32, shape, null,
            0));
      }
    }, n);
    // The same cycles looped in C against the core, in this process
    // (bindings/java/tests/bench_helpers.c).
    double cWrap = nsPerOp(BenchNative::wrapFree, 2_000_000);
    double cAlloc = nsPerOp(BenchNative::allocateFree, 2_000_000);
    double cExchange = nsPerOp(BenchNative::wrapExportImportFree, 2_000_000);
    double cLegacy = nsPerOp(BenchNative::wrapLegacyFree, 2_000_000);

    System.out.printf("dlbridge %s Java bench (ns/op, best of 7; C: the same cycle looped in C;"
        + " floor: its bare native calls + per tensor an owner and a registered phantom reference;"
        + " target: Java - floor <= C)%n", DLBridge.version());
    System.out.printf("  %-50s %7s %7s %7s %10s  %s%n", "cycle", "Java", "C", "floor",
        "over floor", "target");
    call("bare JNI call (hand-written, empty; test tree)", jniNoop);
    call("dlb_device_type_is_known through SWIG", swigCall);
    call("dlb_tensor_live_count through SWIG", live);
    row("wrap direct ByteBuffer + close", wrap, cWrap, wrapFloor);
    row("allocate 16x16 float32 + close", alloc, cAlloc, allocFloor);
    row("wrap + exportVersioned + importVersioned + close", exchange, cExchange, exchangeFloor);
    row("wrap + exportLegacy + importLegacy + close", legacy, cLegacy, legacyFloor);
    System.out.printf("the shared fast path (extents by value) against a long[], bare calls:%n");
    byValue("wrap 16x16 + free", wrapByValue, wrapArray);
    byValue("allocate 16x16 + free", allocByValue, allocArray);
  }

  private static void byValue(String name, double byValue, double array) {
    System.out.printf("  %-50s %7.1f ns by value, %7.1f ns with a long[] (%.2fx)%n", name,
        byValue, array, byValue / array);
  }

  private static void call(String name, double java) {
    System.out.printf("  %-50s %7.1f %7s %7s %10s%n", name, java, "-", "-", "-");
  }

  private static void row(String name, double java, double c, double floor) {
    double over = java - floor;
    System.out.printf("  %-50s %7.1f %7.1f %7.1f %10.1f  %s%n", name, java, c, floor, over,
        over <= c ? "met" : "missed");
  }
}
