package org.dlbridge;

import java.time.Duration;
import java.util.function.LongFunction;

/**
 * A listener's or a channel's native handle, closed once. {@link #close()} may come from any
 * thread while another is blocked in accept or receive: it shuts the channel down ({@code
 * dlb_channel_shutdown} wakes the blocked call, which then fails with {@link Status#CLOSED}) and
 * the handle is freed when the last call in progress returns, never under one.
 */
final class ChannelHandle {
  private long address; // 0 once freed; guarded by this
  private int calls; // calls in progress; guarded by this
  private boolean closing; // guarded by this

  ChannelHandle(long address) {
    this.address = address;
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
      DLBridgeNative.dlb_channel_shutdown(address);
      freeIfIdle();
    }
  }
}
