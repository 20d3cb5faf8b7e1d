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
    this.handle = new ChannelHandle(this, address);
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
   * Listens at {@code address} with {@code options} ({@code null}: the defaults; {@code
   * dlb_channel_listen_with_options}): a Unix socket path as {@link #listen(String)}, or another
   * machine's way in, {@code "tcp://HOST:PORT"} (UCX over TCP) or {@code "ucx://HOST:PORT"} (the
   * transports UCX picks), bound to exactly that host; port 0 lets the system pick one ({@link
   * #port()} says which). A remote listener needs a key ({@link ChannelOptions#key}; without one
   * {@link Status#INVALID_ARGUMENT}), and its accepted channels take its options. UCX or libcrypto
   * missing: {@link Status#UNSUPPORTED} ({@link DLBridge#remoteUnavailableReason()} asks first).
   * See docs/remote.md. Ownership: the caller owns the listener; the options stay the caller's
   * (copied); on error nothing is created.
   *
   * @param address the socket path, or tcp:// or ucx:// with host and port
   * @param options the options, or null for the defaults
   * @return the listener
   */
  public static Listener listen(String address, ChannelOptions options) {
    if (address == null) {
      throw new NullPointerException("address");
    }
    return new Listener(ChannelOptions.read(options,
        o -> DLBridgeNative.dlb_channel_listen_with_options(address, o)));
  }

  /**
   * Whether this listener is another machine's way in (a tcp:// or ucx:// address).
   *
   * @return true for a remote listener
   */
  public boolean isRemote() {
    return handle.isRemote();
  }

  /**
   * The port a remote listener listens on (the one the system picked for port 0), or -1 for a
   * local listener.
   *
   * @return the port, or -1
   */
  public int port() {
    return handle.port();
  }

  /**
   * Waits for the next connection. A peer running as another user is refused with {@link
   * Status#PERMISSION} (its connection closed; this listener stays usable: accept again) unless
   * allowed with {@link #allowUid}. With a time limit ({@link #setTimeout}), {@link
   * Status#TIMEOUT} when no peer connects in time (the listener stays usable). The channel takes
   * the listener's allowed uids and time limit. On a remote listener, the peer first proves it
   * holds the key: one that does not is refused with {@link Status#PERMISSION} (the listener stays
   * usable: accept again). Ownership: the caller owns the channel.
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
