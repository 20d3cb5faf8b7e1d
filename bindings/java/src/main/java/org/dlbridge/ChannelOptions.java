package org.dlbridge;

import java.time.Duration;
import java.util.function.LongConsumer;
import java.util.function.LongFunction;

/**
 * Settings for {@link Listener#listen(String, ChannelOptions)} and {@link
 * Channel#connect(String, ChannelOptions)} ({@code dlb_channel_options}; see docs/remote.md):
 * the key remote peers prove they hold, where a remote channel puts what it receives, how much a
 * peer may make it hold, the time limit, and the user a local listener may run as. Each setter
 * returns this object, so they chain; make the options in try-with-resources first, so that a
 * refused value does not leave them unclosed:
 *
 * <pre>{@code
 * try (ChannelOptions options = new ChannelOptions()) {
 *   options.key(key).timeout(Duration.ofSeconds(5));
 *   ...
 * }
 * }</pre>
 *
 * <p>Every value is checked by the core when it is set: a refused one throws {@link
 * DLPackException} with the core's status and message, and the options keep what they had.
 * Listens and connects copy what they need, so the options may be closed (or changed) once the
 * channel is made. A setter waits for listens and connects that are reading the options on other
 * threads; {@link #close()} frees the native options exactly once, when the last of those returns.
 */
public final class ChannelOptions implements AutoCloseable {
  /** The most bytes one received tensor may have unless {@link #maxTensorBytes} says otherwise. */
  public static final long DEFAULT_MAX_TENSOR_BYTES =
      DLBridgeNativeConstants.DLB_REMOTE_DEFAULT_MAX_TENSOR_BYTES.longValueExact();

  /** The most tensors received and not yet taken unless {@link #maxInFlight} says otherwise. */
  public static final int DEFAULT_MAX_IN_FLIGHT =
      (int) DLBridgeNativeConstants.DLB_REMOTE_DEFAULT_MAX_IN_FLIGHT;

  /** The shortest key, in bytes. */
  public static final int MIN_KEY_BYTES = (int) DLBridgeNativeConstants.DLB_REMOTE_MIN_KEY_BYTES;

  /** The longest key, in bytes. */
  public static final int MAX_KEY_BYTES = (int) DLBridgeNativeConstants.DLB_REMOTE_MAX_KEY_BYTES;

  private long address; // 0 once freed; guarded by this
  private int readers; // listens and connects reading the options now; guarded by this
  private boolean closed; // guarded by this

  /**
   * Options with the core's defaults: no key, received tensors in host memory ({@link
   * Device#CPU}), {@link #DEFAULT_MAX_TENSOR_BYTES}, {@link #DEFAULT_MAX_IN_FLIGHT}, no time limit,
   * a local listener of this user only. Ownership: the caller owns them (close them).
   */
  public ChannelOptions() {
    address = DLBridgeNative.dlb_channel_options_create();
  }

  /**
   * The shared secret remote peers prove they hold (a remote listener needs one): {@link
   * #MIN_KEY_BYTES} to {@link #MAX_KEY_BYTES} bytes, copied (the core wipes its copy when the
   * options are closed; the caller's array stays the caller's to clear). Another length: {@link
   * Status#INVALID_ARGUMENT} with the core's message. Local channels ignore it.
   *
   * @param key the key's bytes
   * @return these options
   */
  public ChannelOptions key(byte[] key) {
    if (key == null) {
      throw new NullPointerException("key");
    }
    return set(a -> DLBridgeNative.dlb_channel_options_set_key(a, key));
  }

  /**
   * Where a remote channel puts the tensors it receives: {@link Device#CPU} (the default), CUDA
   * pinned host memory, or a CUDA device's memory. Other devices: {@link Status#UNSUPPORTED};
   * whether UCX reaches that memory is checked when the channel is made ({@link
   * Status#DEVICE_UNAVAILABLE}). Local channels ignore it (they map the sender's memory).
   *
   * @param device the receive device
   * @return these options
   */
  public ChannelOptions receiveDevice(Device device) {
    if (device == null) {
      throw new NullPointerException("device");
    }
    long packed = device.packed();
    return set(a -> DLBridgeNative.dlb_channel_options_set_receive_device(a, packed));
  }

  /**
   * The most bytes one tensor received on a remote channel may have (unsigned; at least 1). A
   * larger one is refused before anything is allocated for it, with {@link Status#LIMIT}.
   *
   * @param bytes the limit in bytes
   * @return these options
   */
  public ChannelOptions maxTensorBytes(long bytes) {
    return set(a -> DLBridgeNative.dlb_channel_options_set_max_tensor_bytes(a, bytes));
  }

  /**
   * The most tensors a remote channel holds received and not yet taken by {@link
   * Channel#receive()} (1 to 65536): a sender waits, within its time limit, until one is taken.
   *
   * @param tensors the limit (unsigned)
   * @return these options
   */
  public ChannelOptions maxInFlight(int tensors) {
    long count = Integer.toUnsignedLong(tensors);
    return set(a -> DLBridgeNative.dlb_channel_options_set_max_in_flight(a, count));
  }

  /**
   * The channel's time limit, for connecting and for every later call ({@code null}: none, the
   * default), as {@link Channel#setTimeout} sets it later. A negative duration is refused ({@link
   * Status#INVALID_ARGUMENT}, the core's message), except -1 ns, the core's own spelling of none.
   *
   * @param timeout the time limit, or null for none
   * @return these options
   */
  public ChannelOptions timeout(Duration timeout) {
    long ns = ChannelHandle.nanos(timeout);
    return set(a -> DLBridgeNative.dlb_channel_options_set_timeout(a, ns));
  }

  /**
   * The user a local listener may run as besides this one ({@link Channel#UID_SELF}: this user
   * only, the default), as {@link Channel#connect(String, int, Duration)} takes it. Remote
   * channels ignore it.
   *
   * @param uid the listener's user id (unsigned, as the kernel's)
   * @return these options
   */
  public ChannelOptions listenerUid(int uid) {
    long unsigned = Integer.toUnsignedLong(uid);
    return set(a -> DLBridgeNative.dlb_channel_options_set_listener_uid(a, unsigned));
  }

  /** A setter: alone, once no listen or connect reads the options. */
  private synchronized ChannelOptions set(LongConsumer call) {
    boolean interrupted = false;
    try {
      while (readers > 0 && !closed) {
        try {
          wait();
        } catch (InterruptedException e) {
          interrupted = true; // the setter is short once it may run: finish it first
        }
      }
      call.accept(live());
      return this;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * {@code call} with the native options' address ({@code 0} for {@code options} null: the
   * core's defaults), counted as a reader so that neither a setter nor the free runs under it.
   */
  static <T> T read(ChannelOptions options, LongFunction<T> call) {
    if (options == null) {
      return call.apply(0L);
    }
    long a;
    synchronized (options) {
      a = options.live();
      options.readers++;
    }
    try {
      return call.apply(a);
    } finally {
      synchronized (options) {
        if (--options.readers == 0) {
          options.notifyAll();
          options.freeIfClosed();
        }
      }
    }
  }

  private long live() {
    if (closed) {
      throw new IllegalStateException("the channel options are closed");
    }
    return address;
  }

  private void freeIfClosed() {
    if (closed && readers == 0 && address != 0) {
      DLBridgeNative.dlb_channel_options_free(address);
      address = 0;
    }
  }

  /**
   * Frees the native options (the core wipes its copy of the key), at once or when the last
   * listen or connect reading them returns. Channels made with them keep what they need. Calling
   * it again does nothing; any other use afterwards throws {@link IllegalStateException}.
   */
  @Override
  public synchronized void close() {
    if (!closed) {
      closed = true;
      notifyAll();
      freeIfClosed();
    }
  }
}
