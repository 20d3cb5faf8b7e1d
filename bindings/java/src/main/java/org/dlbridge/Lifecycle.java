package org.dlbridge;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * How a native reference is owned, freed and released: the managed half of the shared release
 * engine (generators/swig/native/dlbx_release.h). Java keeps what a wrapped buffer needs alive;
 * what is released, and when, is decided by the core's reference count.
 *
 * <ul>
 *   <li>Every owner (a {@link Tensor}, a buffer over a tensor's memory) has a {@link State}: its
 *       native reference, freed at most once (close, export, or the cleaner thread), and a slot
 *       ({@link Slots}) that keeps the State reachable while the owner is open.
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

  /** Where the GC leaves the States of owners that became unreachable while open. */
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
   * The native reference of one owner, freed at most once: by close(), an export, or the
   * cleaner thread. It is a phantom reference to its owner, and never refers to the owner
   * otherwise. While the owner is open, its slot holds this State, which keeps it (and a
   * wrapped buffer) reachable whatever becomes of the owner; the GC hands it to the cleaner
   * thread once the owner is unreachable. Closing drops it from the slot, so a closed owner
   * costs the GC nothing. Uses of the handle hold this State's lock, so that a close waits for
   * a use in progress.
   */
  static final class State extends PhantomReference<Object> {
    /** Guarded by this; 0 once freed or moved out. */
    private long handle;
    /** The handle's packed dtype, read once (0: not yet; no valid dtype packs to 0). */
    private int dtype;
    private final int slot;
    /** The wrapped buffer (null otherwise); dropped once the slot holds it. */
    private ByteBuffer buffer;

    /** Owns {@code handle} for {@code owner}; {@code buffer} is what the wrap's token keeps. */
    State(Object owner, long handle, int slot, ByteBuffer buffer) {
      super(owner, QUEUE);
      this.handle = handle;
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

    /** The live handle; the caller holds this State's lock. */
    long handle() {
      long h = handle;
      if (h == 0) {
        throw closed();
      }
      return h;
    }

    /** The packed dtype of the live handle (a tensor's dtype never changes). Under the lock. */
    int dtype() {
      if (dtype == 0) {
        dtype = DLBridgeNative.dlbx_tensor_dtype(handle());
      }
      return dtype;
    }

    /**
     * The dtype a Java integer type stands for here: {@code unsigned} when it is the tensor's,
     * else {@code signed} (Java has no unsigned types). Under the lock.
     */
    DType javaType(DType signed, DType unsigned) {
      return dtype() == unsigned.packed() ? unsigned : signed;
    }

    /** True once freed or moved out; the caller holds this State's lock. */
    boolean isClosed() {
      return handle == 0;
    }

    /** Takes the live handle (0 when there is none): the caller frees or moves it. */
    synchronized long take() {
      long h = handle;
      handle = 0;
      return h;
    }

    /**
     * Gives up this State's slot before its reference is freed or moved out: a wrapped buffer
     * stays in the slot until its token comes back; any other slot is free again.
     */
    private void handOver() {
      if (buffer != null) {
        // Before the free or the export: once it is out, another thread may release it.
        Slots.set(slot, buffer);
        buffer = null;
      } else {
        Slots.release(slot);
      }
    }

    /** Gives up the slot after the handle taken by take() was moved out (exported). */
    void disown() {
      handOver();
    }

    /** Frees the handle taken by take(), then gives up the slot. */
    void free(long h) {
      handOver();
      Lifecycle.free(h);
    }

    /** The cleaner thread's call, for an owner that became unreachable. */
    void clean() {
      if (Slots.get(slot) != this) {
        return; // closed or moved out already
      }
      long h = take();
      if (h != 0) {
        free(h);
      }
    }
  }

  /** Frees owners nobody closed, and takes releases made on other threads now and then. */
  private static void cleanLoop() {
    for (;;) {
      try {
        Reference<?> ref = QUEUE.remove(DRAIN_INTERVAL_MS);
        if (ref instanceof State) {
          ((State) ref).clean();
        } else if (ref instanceof ChannelHandle) {
          ((ChannelHandle) ref).clean();
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
