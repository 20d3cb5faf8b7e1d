package org.dlbridge;

import java.lang.ref.PhantomReference;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongFunction;

/**
 * A listener's or a channel's native handle, closed once. {@link #close()} may come from any
 * thread while another is blocked in accept or receive: it shuts the channel down ({@code
 * dlb_channel_shutdown} wakes the blocked call, which then fails with {@link Status#CLOSED}) and
 * the handle is freed when the last call in progress returns, never under one.
 *
 * <p>It is a phantom reference to its owner (the {@link Listener} or {@link Channel}), never
 * referring to it otherwise: when an owner nobody closed becomes unreachable, the {@code
 * dlbridge-cleaner} thread of {@link Lifecycle} closes it ({@link #clean()}). Calls hold this
 * handle, not the owner, so the handle outlives them whatever the cleaner does.
 */
final class ChannelHandle extends PhantomReference<Object> {
  /**
   * The handles of open owners: a phantom reference is enqueued only while it is itself
   * reachable. A set of its own rather than {@link Slots}, whose counts tests of tensors read.
   */
  private static final Set<ChannelHandle> OPEN = ConcurrentHashMap.newKeySet();

  private long address; // 0 once freed; guarded by this
  private int calls; // calls in progress; guarded by this
  private boolean closing; // guarded by this

  /** Owns {@code address} for {@code owner}, which the cleaner closes if nobody else does. */
  ChannelHandle(Object owner, long address) {
    super(owner, Lifecycle.QUEUE);
    this.address = address;
    OPEN.add(this);
  }

  /** The error of every use after close, in every binding's words. */
  static DLPackException closed() {
    return new DLPackException(Status.CLOSED, DLBridgeNativeConstants.DLB_CHANNEL_CLOSED_MESSAGE);
  }

  /**
   * A time limit in the core's nanoseconds: {@code null} is no limit ({@code DLB_TIMEOUT_NONE});
   * a duration beyond 2^63 - 1 ns (292 years) is that many; a negative one goes to the core as it
   * is, which refuses it (only -1 ns, the core's own spelling of no limit, means none).
   */
  static long nanos(Duration timeout) {
    if (timeout == null) {
      return DLBridgeNativeConstants.DLB_TIMEOUT_NONE;
    }
    try {
      return timeout.toNanos();
    } catch (ArithmeticException tooLong) {
      return timeout.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
    }
  }

  /** Sets the channel's or the listener's time limit ({@code dlb_channel_set_timeout}). */
  void setTimeout(Duration timeout) {
    long ns = nanos(timeout);
    use(a -> DLBridgeNative.dlb_channel_set_timeout(a, ns));
  }

  /** Whether the channel goes across machines ({@code dlb_channel_is_remote}). */
  boolean isRemote() {
    return use(a -> DLBridgeNative.dlb_channel_is_remote(a)) != 0;
  }

  /** The port a remote channel uses here, -1 for a local one ({@code dlb_channel_port}). */
  int port() {
    return use(a -> DLBridgeNative.dlb_channel_port(a));
  }

  /** {@code call} with the native address, counted as a call in progress. */
  <T> T use(LongFunction<T> call) {
    long a;
    synchronized (this) {
      if (closing) {
        throw closed();
      }
      calls++;
      a = address;
    }
    try {
      return call.apply(a);
    } finally {
      synchronized (this) {
        calls--;
        freeIfIdle();
      }
    }
  }

  private void freeIfIdle() {
    if (closing && calls == 0 && address != 0) {
      DLBridgeNative.dlb_channel_close(address);
      address = 0;
    }
  }

  synchronized void close() {
    if (!closing) {
      closing = true;
      OPEN.remove(this);
      DLBridgeNative.dlb_channel_shutdown(address);
      freeIfIdle();
    }
  }

  /**
   * The cleaner thread's close, for an owner that became unreachable while open (a closed one's
   * handle left {@link #OPEN}, so the GC drops it unenqueued; the flag covers a close that ran
   * as the owner went). No call can start on an unreachable owner, but the JIT may drop an owner
   * while its own last call still runs: that call is not woken, and it frees the handle as it
   * returns.
   */
  synchronized void clean() {
    if (!closing) {
      closing = true;
      OPEN.remove(this);
      freeIfIdle();
    }
  }
}
