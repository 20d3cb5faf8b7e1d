package org.dlbridge;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A listener's or a channel's native handle, an {@link Lifecycle.Owner} as a tensor's is.
 * {@link #close()} may come from any thread while another is blocked in accept or receive: it
 * shuts the channel down ({@code dlb_channel_shutdown} wakes the blocked call, which then fails
 * with {@link Status#CLOSED}) and the handle is freed when the last call in progress returns,
 * never under one. When an owner nobody closed becomes unreachable, the {@code dlbridge-cleaner}
 * thread closes it ({@link #clean()}).
 */
final class ChannelHandle extends Lifecycle.Owner {
  /**
   * The handles of open owners: a phantom reference is enqueued only while it is itself
   * reachable. A set of its own rather than {@link Slots}, whose counts tests of tensors read.
   */
  private static final Set<ChannelHandle> OPEN = ConcurrentHashMap.newKeySet();

  /** Owns {@code address} for {@code owner}, which the cleaner closes if nobody else does. */
  ChannelHandle(Object owner, long address) {
    super(owner, address);
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

  @Override
  DLPackException closedError() {
    return closed();
  }

  @Override
  void free(long address) {
    DLBridgeNative.dlb_channel_close(address);
  }

  /**
   * Closes the handle; a second close does nothing. The closer counts itself in as a call while
   * it wakes the calls in flight, so that the address stays valid for the shutdown; the last
   * holder out frees it.
   */
  void close() {
    long a = tryEnter();
    if (a == 0) {
      return;
    }
    try {
      if (letGo()) {
        OPEN.remove(this);
        DLBridgeNative.dlb_channel_shutdown(a);
      }
    } finally {
      exit();
    }
  }

  /**
   * The cleaner thread's close, for an owner that became unreachable while open (a closed one's
   * handle left {@link #OPEN}, so the GC drops it unenqueued). No call can start on an
   * unreachable owner, but the JIT may drop an owner while its own last call still runs: that
   * call is not woken, and it frees the handle as it returns.
   */
  @Override
  void clean() {
    if (letGo()) {
      OPEN.remove(this);
    }
  }
}
