package org.dlbridge;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongFunction;

/**
 * How a native reference is owned, freed and released: the managed half of the shared release
 * engine (generators/swig/native/dlbx_release.h). Java keeps what a wrapped buffer needs alive;
 * what is released, and when, is decided by the core's reference count.
 *
 * <ul>
 *   <li>Every owner of a native handle (a {@link Tensor}, a buffer over a tensor's memory, a
 *       {@link Listener}, a {@link Channel}) has an {@link Owner}: the handle and the count of
 *       who holds it, freed exactly once (close, the last call after a close, or the cleaner
 *       thread) or moved out (export). A tensor's is a {@link State}, which a slot ({@link
 *       Slots}) keeps reachable while the owner is open.
 *   <li>A wrapped ByteBuffer's release token is its slot + 1. When its owner lets go of its
 *       reference, the slot passes from the State to the buffer, which stays there until the
 *       token comes back: as the result of {@code dlbx_tensor_free} when the release happened
 *       inside that free (the usual case), or from {@code dlbx_release_drain} when another
 *       thread released it (a view's free, a foreign consumer's deleter). The release itself
 *       never enters the JVM, so it may run on any thread, during the JVM's shutdown too.
 *   <li>Tokens queued by other threads are drained by the next free that sees the engine's
 *       counter non-zero (a plain load, no native call), and by the cleaner thread at least
 *       once a second.
 * </ul>
 */
final class Lifecycle {
  /** How often, at most, the cleaner thread idles before draining released tokens itself. */
  private static final long DRAIN_INTERVAL_MS = 1000;

  /** The engine's count of queued tokens: 8 bytes of native memory read without a call. */
  private static final ByteBuffer QUEUED =
      DLBridgeNative.dlbx_java_buffer(DLBridgeNative.dlbx_release_queued(), 8)
          .order(ByteOrder.nativeOrder());
  private static final VarHandle COUNT =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

  /** Where the GC leaves the {@link Owner}s of owners that became unreachable while open. */
  static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();

  static {
    // A daemon in the root thread group with no context class loader: it never keeps a JVM
    // (or mvn exec:java, which waits on its own group) from exiting, and pins no application's
    // class loader or thread group. It ends when interrupted.
    ThreadGroup root = Thread.currentThread().getThreadGroup();
    while (root.getParent() != null) {
      root = root.getParent();
    }
    Thread t = new Thread(root, Lifecycle::cleanLoop, "dlbridge-cleaner");
    t.setDaemon(true);
    t.setContextClassLoader(null);
    t.start();
  }

  private Lifecycle() {}

  /** The release token of a wrap whose buffer {@code slot} keeps: never 0. */
  static long token(int slot) {
    return slot + 1L;
  }

  /** The error of every use of a closed (or exported) owner, in every binding's words. */
  static DLPackException closed() {
    return new DLPackException(Status.CLOSED, DLBridgeNativeConstants.DLB_CLOSED_MESSAGE);
  }

  /** Frees one reference nobody else owns (no State), then lets go of what it released. */
  static void free(long handle) {
    released(DLBridgeNative.dlbx_tensor_free(handle));
    drainIfQueued();
  }

  /** A token handed back (0: none): the buffer its slot kept may go. */
  private static void released(long token) {
    if (token != 0) {
      Slots.release((int) (token - 1));
    }
  }

  /** The number of released tokens waiting to be drained now (a snapshot). */
  static long queued() {
    return (long) COUNT.getAcquire(QUEUED, 0);
  }

  /** Takes the tokens other threads released, if the engine's counter says there are any. */
  static void drainIfQueued() {
    if ((long) COUNT.getAcquire(QUEUED, 0) != 0) {
      drain();
    }
  }

  private static void drain() {
    long[] tokens = new long[DLBridgeNativeConstants.DLB_MAX_NDIM];
    int n;
    do {
      n = DLBridgeNative.dlbx_release_drain(tokens);
      for (int i = 0; i < n; i++) {
        released(tokens[i]);
      }
    } while (n == tokens.length);
  }

  /**
   * One native address and who holds it, the protocol of docs/architecture.md: the owner until
   * it lets go ({@link #letGo}: a close, the cleaner thread), each native call in flight ({@link
   * #enter} .. {@link #exit}), or an export alone. Whoever brings the count to "let go, no call
   * in flight" frees the address, exactly once ({@link #free}): the one letting go when no call
   * is in flight, otherwise the last call's exit. An export waits for the calls in flight, holds
   * the address alone for its one native call, and waits for nothing; calls and a letting go
   * that come meanwhile wait for it. A tensor's {@link State} and a channel's {@link
   * ChannelHandle} are the two kinds.
   *
   * <p>It is a phantom reference to its owner and never refers to it otherwise; the GC hands it
   * to the cleaner thread ({@link #clean}) once the owner is unreachable, if it is still
   * reachable itself (each kind keeps its open owners' reachable). Calls hold this object, not
   * the owner: the JIT may drop an owner while its own last call still runs, and that call then
   * frees as it exits.
   */
  abstract static class Owner extends PhantomReference<Object> {
    private static final VarHandle COUNT;

    static {
      try {
        COUNT = MethodHandles.lookup().findVarHandle(Owner.class, "count", int.class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    /** In {@link #count}: the owner let go; each call in flight; an export holds it alone. */
    private static final int LET_GO = 1, CALL = 2, EXPORTING = 1 << 30;

    /** 0 once freed or moved out; read by a call after it counted itself in. */
    private long address;
    /** 0: open and nobody else holding it; else the bits above and the calls in flight. */
    private volatile int count;

    Owner(Object owner, long address) {
      super(owner, QUEUE);
      this.address = address;
    }

    /** Frees {@code address}: called once, by whoever brought the count to let go alone. */
    abstract void free(long address);

    /** The error of a call that starts after the owner let go. */
    abstract DLPackException closedError();

    /** The cleaner thread's call, for an owner that became unreachable while open. */
    abstract void clean();

    /** Counts a call in and returns the address; 0 when the owner let go (nothing counted). */
    final long tryEnter() {
      for (int i = 0; ; i++) {
        int seen = count;
        if ((seen & LET_GO) != 0) {
          return 0;
        }
        if ((seen & EXPORTING) != 0) {
          backOff(i);
        } else if (COUNT.compareAndSet(this, seen, seen + CALL)) {
          return address;
        }
      }
    }

    /** Counts a call in and returns the address; {@link #closedError} once the owner let go. */
    final long enter() {
      long a = tryEnter();
      if (a == 0) {
        throw closedError();
      }
      return a;
    }

    /** {@code call} with the address, counted as a call in flight. */
    final <T> T use(LongFunction<T> call) {
      long a = enter();
      try {
        return call.apply(a);
      } finally {
        exit();
      }
    }

    /** Counts a call out: the last one out after the owner let go frees. */
    final void exit() {
      if ((int) COUNT.getAndAdd(this, -CALL) - CALL == LET_GO) {
        release();
      }
    }

    /** The owner lets go: true for the one call that did; frees at once with no call in flight. */
    final boolean letGo() {
      for (int i = 0; ; i++) {
        int seen = count;
        if ((seen & LET_GO) != 0) {
          return false;
        }
        if ((seen & EXPORTING) != 0) {
          backOff(i); // a refused export leaves the owner open: then it lets go here
        } else if (COUNT.compareAndSet(this, seen, seen | LET_GO)) {
          if (seen == 0) {
            release();
          }
          return true;
        }
      }
    }

    /** True once the owner let go (or an export moved the address out). */
    final boolean isClosed() {
      return (count & LET_GO) != 0;
    }

    /**
     * Gives an export the address alone: waits for the calls in flight to end (and for another
     * export). {@link #closedError} once the owner let go. End it with {@link #endExport}.
     */
    final long beginExport() {
      for (int i = 0; ; i++) {
        int seen = count;
        if ((seen & LET_GO) != 0) {
          throw closedError();
        }
        if (seen == 0 && COUNT.compareAndSet(this, 0, EXPORTING)) {
          return address;
        }
        backOff(i);
      }
    }

    /**
     * Ends {@link #beginExport}: moved, the address is the consumer's and the owner reads as
     * closed, with nothing left to free; otherwise it is open as before. Calls and a letting go
     * wait without writing the count while an export holds it, so it is written whole.
     */
    final void endExport(boolean moved) {
      if (moved) {
        address = 0;
      }
      count = moved ? LET_GO : 0;
    }

    private void release() {
      long a = address;
      address = 0;
      free(a);
    }

    /**
     * One wait for a state that lasts one native call at most (an export) or a few calls in
     * flight: spin first, then sleep a little longer each time (up to 100 us).
     */
    private static void backOff(int i) {
      if (i < 16) {
        Thread.onSpinWait();
      } else {
        LockSupport.parkNanos(Math.min(i - 15, 100) * 1000L);
      }
    }
  }

  /**
   * The native reference of one tensor (or of a buffer over a tensor's memory), an {@link Owner}
   * that a slot ({@link Slots}) keeps reachable while its owner is open, with a wrapped buffer
   * when the wrap's token names the slot. Freeing it drops it from the slot, so a closed owner
   * costs the GC nothing.
   */
  static final class State extends Owner {
    /** The handle's packed dtype, read once (0: not yet; no valid dtype packs to 0). */
    private int dtype;
    private final int slot;
    /** The wrapped buffer (null otherwise); dropped once the slot holds it. */
    private ByteBuffer buffer;

    /** Owns {@code handle} for {@code owner}; {@code buffer} is what the wrap's token keeps. */
    State(Object owner, long handle, int slot, ByteBuffer buffer) {
      super(owner, handle);
      this.slot = slot;
      this.buffer = buffer;
      Slots.set(slot, this);
    }

    /** Owns {@code handle} for {@code owner}, in a new slot; frees it if none can be had. */
    static State of(Object owner, long handle) {
      int slot;
      try {
        slot = Slots.acquire();
      } catch (RuntimeException | Error e) {
        Lifecycle.free(handle);
        throw e;
      }
      return new State(owner, handle, slot, null);
    }

    @Override
    DLPackException closedError() {
      return closed();
    }

    /**
     * The packed dtype of {@code h}, this State's handle in a call (a tensor's dtype never
     * changes, so racing first reads store the same value).
     */
    int dtype(long h) {
      int d = dtype;
      if (d == 0) {
        d = DLBridgeNative.dlbx_tensor_dtype(h);
        dtype = d;
      }
      return d;
    }

    /**
     * The dtype a Java integer type stands for here: {@code unsigned} when it is the tensor's,
     * else {@code signed} (Java has no unsigned types). {@code h} as for {@link #dtype}.
     */
    DType javaType(long h, DType signed, DType unsigned) {
      return dtype(h) == unsigned.packed() ? unsigned : signed;
    }

    /**
     * Gives up this State's slot before its reference is freed or moved out: a wrapped buffer
     * stays in the slot until its token comes back; any other slot is free again. An export
     * calls it before the consumer can have the address (once out, another thread may release
     * it).
     */
    void handOver() {
      if (buffer != null) {
        Slots.set(slot, buffer);
        buffer = null;
      } else {
        Slots.release(slot);
      }
    }

    @Override
    void free(long h) {
      handOver();
      Lifecycle.free(h);
    }

    @Override
    void clean() {
      letGo();
    }
  }

  /** Frees owners nobody closed, and takes releases made on other threads now and then. */
  private static void cleanLoop() {
    for (;;) {
      try {
        Reference<?> ref = QUEUE.remove(DRAIN_INTERVAL_MS);
        if (ref instanceof Owner) {
          ((Owner) ref).clean();
        }
        // Released tokens are otherwise taken by the next free on any Java thread; this bounds
        // how long their buffers stay held when Java frees nothing.
        drainIfQueued();
      } catch (InterruptedException e) {
        return; // asked to stop: owners not yet cleaned are freed by the process exit
      } catch (Throwable t) {
        // Like java.lang.ref.Cleaner: a failed cleanup must not stop the others.
      }
    }
  }
}
