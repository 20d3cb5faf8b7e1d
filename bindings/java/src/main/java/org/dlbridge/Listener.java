package org.dlbridge;

import java.time.Duration;

/**
 * Accepts connections from other processes on a Unix domain socket ({@code
 * dlb_channel_listen}; see docs/ipc.md): the socket is created with mode 0600 in a folder only
 * this user can enter (created with mode 0700 when missing). {@link #close()} removes the
 * socket file.
 *
 * <p>One thread at a time may {@link #accept()}; {@link #close()} may come from any thread, also
 * while another is blocked in accept, which then throws {@link DLPackException} with {@link
 * Status#CLOSED}, "the channel is closed", as every later call does. Every refusal is the core's
 * status and message.
 */
public final class Listener implements AutoCloseable {
  private final ChannelHandle handle;

  private Listener(long address) {
    this.handle = new ChannelHandle(address);
  }

  /**
   * Listens at {@code path}. A stale socket file left by a process that died is replaced; a live
   * one is refused. Ownership: the caller owns the listener (close it); on error nothing is
   * created.
   *
   * @param path the socket path
   * @return the listener
   */
  public static Listener listen(String path) {
    if (path == null) {
      throw new NullPointerException("path");
    }
    return new Listener(DLBridgeNative.dlb_channel_listen(path));
  }

  /**
   * Waits for the next connection. A peer running as another user is refused with {@link
   * Status#PERMISSION} (its connection closed; this listener stays usable: accept again) unless
   * allowed with {@link #allowUid}. With a time limit ({@link #setTimeout}), {@link
   * Status#TIMEOUT} when no peer connects in time (the listener stays usable). The channel takes
   * the listener's allowed uids and time limit. Ownership: the caller owns the channel.
   *
   * @return the channel to the peer that connected
   */
  public Channel accept() {
    return new Channel(handle.use(DLBridgeNative::dlb_channel_accept));
  }

  /**
   * Accepts peers running as {@code uid} too, on every connection accepted from now on (this
   * process's own uid always is). {@code uid} is unsigned, as the kernel's.
   *
   * @param uid the user id accepted
   */
  public void allowUid(int uid) {
    handle.use(a -> DLBridgeNative.dlb_channel_allow_uid(a, Integer.toUnsignedLong(uid)));
  }

  /**
   * Sets the time limit of each later {@link #accept()} ({@code null}: none, the default; {@link
   * Duration#ZERO}: do not wait), which also passes to every channel accepted from now on (for
   * its sends and receives; {@link Channel#setTimeout} changes it there). A negative duration is
   * refused ({@link Status#INVALID_ARGUMENT}, the core's message), except -1 ns, the core's own
   * spelling of no limit.
   *
   * @param timeout the time limit, or null for none
   */
  public void setTimeout(Duration timeout) {
    handle.setTimeout(timeout);
  }

  /** Stops listening and removes the socket file. Calling it again does nothing. */
  @Override
  public void close() {
    handle.close();
  }
}
