package org.dlbridge;

import java.util.concurrent.CountDownLatch;

/**
 * Slots against JNI global references (issue #32 §2): what keeping a tensor's owner reachable
 * costs per tensor, measured both ways in one process. A plain harness like {@link Bench}: warm-up
 * in short calls, then the best of several rounds.
 * Run: java -cp target/classes:target/test-classes org.dlbridge.SlotsBench
 *
 * <p>The cycle is what {@link Lifecycle} does for every tensor: register the owner under a token
 * the core can carry, resolve the token back to the owner, release the token. Timed as:
 *
 * <ul>
 *   <li>slots (the baseline): {@link Slots#acquire}, {@link Slots#set}, {@link Slots#get},
 *       {@link Slots#release}, all in Java;
 *   <li>global reference, own calls: {@code NewGlobalRef}, {@code NewLocalRef} and {@code
 *       DeleteGlobalRef}, each behind a JNI call of its own (C#'s GCHandle model done from Java);
 *   <li>global reference, folded: the same JNI work inside two calls the binding makes anyway
 *       (the wrap's and the free's), so only their cost over two empty calls with the same
 *       arguments counts;
 * </ul>
 *
 * each on one thread and on two threads at once (ns per cycle and thread), with its ratio to the
 * baseline of the same thread count.
 */
public final class SlotsBench {
  private SlotsBench() {}

  static native long newGlobal(Object owner);

  static native Object resolveGlobal(long token);

  static native void deleteGlobal(long token);

  static native boolean resolveAndDeleteGlobal(long token);

  static native long noopObject(Object owner);

  static native boolean noopLong(long token);

  private interface Op {
    /** Runs {@code n} cycles; returns a value the JIT cannot drop. */
    long run(int n);
  }

  /** Consumed by every op, so that no loop is optimised away. */
  private static volatile long sink;

  private static final Object OWNER = new Object();

  private static long slots(int n) {
    long found = 0;
    for (int i = 0; i < n; i++) {
      int slot = Slots.acquire();
      Slots.set(slot, OWNER);
      found += Slots.get(slot) == OWNER ? 1 : 0;
      Slots.release(slot);
    }
    return found;
  }

  private static long globalOwnCalls(int n) {
    long found = 0;
    for (int i = 0; i < n; i++) {
      long token = newGlobal(OWNER);
      found += resolveGlobal(token) == OWNER ? 1 : 0;
      deleteGlobal(token);
    }
    return found;
  }

  private static long globalFolded(int n) {
    long found = 0;
    for (int i = 0; i < n; i++) {
      found += resolveAndDeleteGlobal(newGlobal(OWNER)) ? 1 : 0;
    }
    return found;
  }

  /** The two calls globalFolded rides on, empty: its cost is the difference. */
  private static long emptyCalls(int n) {
    long found = 0;
    for (int i = 0; i < n; i++) {
      found += noopLong(noopObject(OWNER)) ? 1 : 0;
    }
    return found;
  }

  /** ns per cycle and thread, best of 7 rounds, on {@code threads} threads at once. */
  private static double nsPerOp(Op op, int n, int threads) throws InterruptedException {
    int chunk = Math.max(1, n / 50);
    for (int i = 0; i < 1000; i++) {
      sink += op.run(chunk);
    }
    double best = Double.MAX_VALUE;
    for (int round = 0; round < 7; round++) {
      CountDownLatch start = new CountDownLatch(1);
      Thread[] others = new Thread[threads - 1];
      for (int t = 0; t < others.length; t++) {
        others[t] = new Thread(() -> {
          try {
            start.await();
          } catch (InterruptedException e) {
            return;
          }
          sink += op.run(n);
        });
        others[t].start();
      }
      long t0 = System.nanoTime();
      start.countDown();
      sink += op.run(n);
      for (Thread t : others) {
        t.join();
      }
      best = Math.min(best, (System.nanoTime() - t0) / (double) n);
    }
    return best;
  }

  public static void main(String[] args) throws InterruptedException {
    BenchNative.noop(); // loads the bench's native library, where this class's methods live
    int n = 2_000_000;
    System.out.printf("dlbridge %s: a tensor owner's token, Slots against JNI global references"
        + " (ns per register + resolve + release, best of 7; ratio: against slots on as many"
        + " threads)%n", DLBridge.version());
    System.out.printf("  %-48s %9s %7s %9s %7s%n", "cycle", "1 thread", "ratio", "2 threads",
        "ratio");
    double[] base = new double[3];
    for (int threads = 1; threads <= 2; threads++) {
      base[threads] = nsPerOp(SlotsBench::slots, n, threads);
    }
    double[] own = new double[3];
    double[] folded = new double[3];
    double[] empty = new double[3];
    for (int threads = 1; threads <= 2; threads++) {
      own[threads] = nsPerOp(SlotsBench::globalOwnCalls, n, threads);
      folded[threads] = nsPerOp(SlotsBench::globalFolded, n, threads);
      empty[threads] = nsPerOp(SlotsBench::emptyCalls, n, threads);
    }
    row("slots (baseline)", base, base);
    row("global reference, its own 3 JNI calls", own, base);
    row("global reference, folded into 2 calls", folded, base);
    row("  those 2 calls, empty", empty, base);
    double[] foldedOnly = {0, folded[1] - empty[1], folded[2] - empty[2]};
    row("global reference, folded, over the empty calls", foldedOnly, base);
  }

  private static void row(String name, double[] ns, double[] base) {
    System.out.printf("  %-48s %9.1f %6.2fx %9.1f %6.2fx%n", name, ns[1], ns[1] / base[1], ns[2],
        ns[2] / base[2]);
  }
}
