package org.dlbridge;

import java.time.Duration;

/**
 * One end of a connection between two processes ({@code dlb_channel_*}; see docs/ipc.md): tensors
 * in shareable memory cross without a copy, their memory's file descriptor passed beside a
 * descriptor of the tensor. Tensors sent are borrowed for the call and stay the caller's;
 * tensors received are the caller's to close, and stay valid after the channel is closed.
 *
 * <p>One thread at a time may send or receive; {@link #close()} may come from any thread, also
 * while another is blocked in {@link #receive()}, which then throws {@link DLPackException} with
 * {@link Status#CLOSED}, "the channel is closed", as every later call does. Every refusal is the
 * core's status and message.
 */
public final class Channel implements AutoCloseable {
  /**
   * The {@code listenerUid} of {@link #connect(String, int, Duration)} that accepts only a
   * listener running as this process's user ({@code DLB_UID_SELF}).
   */
  public static final int UID_SELF = (int) DLBridgeNativeConstants.DLB_UID_SELF;

  private final ChannelHandle handle;

  Channel(long address) {
    this.handle = new ChannelHandle(address);
  }

  /**
   * Connects to a {@link Listener} at {@code path}; its process must run as this user
   * ({@link Status#PERMISSION} otherwise, before anything is sent or received). Nothing listening
   * there: {@link Status#NO_LISTENER}; a socket or folder this user may not reach: {@link
   * Status#PERMISSION}. No time limit. Ownership: the caller owns the channel (close it); on error
   * nothing is open.
   *
   * @param path the listener's socket path
   * @return the connected channel
   */
  public static Channel connect(String path) {
    if (path == null) {
      throw new NullPointerException("path");
    }
    return new Channel(DLBridgeNative.dlb_channel_connect(path));
  }

  /**
   * {@link #connect(String)}, accepting a listener that runs as {@code listenerUid} too (unsigned,
   * as the kernel's; {@link #UID_SELF}: this user only), with a time limit for the connection
   * ({@code null}: none) that the channel then keeps for its sends and receives ({@link
   * #setTimeout} changes it). A connection waits only while the listener's queue of peers not yet
   * accepted is full; when the limit runs out: {@link Status#TIMEOUT}
   * ({@code dlb_channel_connect_with}). Ownership: the caller owns the channel; on error nothing
   * is open.
   *
   * @param path the listener's socket path
   * @param listenerUid the user the listener may run as besides this one, or {@link #UID_SELF}
   * @param timeout the time limit, or null for none
   * @return the connected channel
   */
  public static Channel connect(String path, int listenerUid, Duration timeout) {
    if (path == null) {
      throw new NullPointerException("path");
    }
    return new Channel(DLBridgeNative.dlb_channel_connect_with(path,
        Integer.toUnsignedLong(listenerUid), ChannelHandle.nanos(timeout)));
  }

  /**
   * Sets the time limit of each later send and receive ({@code null}: none, the default of a
   * channel not made by {@link #connect(String, int, Duration)}; {@link Duration#ZERO}: do not
   * wait). A call that runs out of time throws {@link Status#TIMEOUT}. When nothing of a tensor
   * had arrived or left, the channel stays usable; when the limit ran out in the middle of a
   * tensor, it has lost its place in the stream and every later send and receive throws {@link
   * Status#PROTOCOL}: close it. A negative duration is refused ({@link Status#INVALID_ARGUMENT},
   * the core's message), except -1 ns, which is the core's own spelling of no limit.
   *
   * @param timeout the time limit, or null for none
   */
  public void setTimeout(Duration timeout) {
    handle.setTimeout(timeout);
  }

  /**
   * Sends {@code tensor} without copying: its memory must be shareable ({@link
   * Tensor#allocateShareable}, or received from a channel), else {@link Status#UNSUPPORTED} with
   * the core's message. The peer sees writes made through the tensor afterwards, and the tensor
   * sees the peer's, unless it is READ_ONLY (then mapped read-only there).
   *
   * @param tensor the tensor sent; it stays the caller's
   */
  public void send(Tensor tensor) {
    sendWith(tensor, 0);
  }

  /**
   * Sends {@code tensor}, first copying it into new shareable memory when it is not shareable
   * ({@code DLB_SEND_COPY}): the peer's tensor then carries IS_COPIED and is its own.
   *
   * @param tensor the tensor sent; it stays the caller's
   */
  public void sendCopy(Tensor tensor) {
    sendWith(tensor, DLBridgeNativeConstants.DLB_SEND_COPY);
  }

  /**
   * Sends a CUDA tensor with stream order ({@code dlb_channel_send_cuda}): an interprocess event
   * is recorded on {@code stream} (a cudaStream_t of the tensor's device; 0: the legacy default
   * stream) after the work queued on it so far, and the receiver's {@link
   * Tensor#cudaWaitReceived} makes its stream wait for it. Keep the tensor open until the
   * receiver has waited: the event belongs to its memory. The tensor stays the caller's.
   *
   * @param tensor the CUDA tensor sent
   * @param stream the cudaStream_t whose work so far the receiver waits for, 0 the legacy default
   */
  public void sendCuda(Tensor tensor, long stream) {
    sendCudaWith(tensor, stream, 0);
  }

  /**
   * {@link #sendCuda}, first copying memory that is not shareable into shareable memory on its
   * device, on {@code stream}, and waiting for the copy ({@code DLB_SEND_COPY}; no event then
   * goes with it).
   *
   * @param tensor the CUDA tensor sent; it stays the caller's
   * @param stream the cudaStream_t of the copy, 0 the legacy default
   */
  public void sendCudaCopy(Tensor tensor, long stream) {
    sendCudaWith(tensor, stream, DLBridgeNativeConstants.DLB_SEND_COPY);
  }

  private void sendCudaWith(Tensor tensor, long stream, long options) {
    if (tensor == null) {
      throw new NullPointerException("tensor");
    }
    handle.use(a -> {
      synchronized (tensor.state) {
        return DLBridgeNative.dlb_channel_send_cuda(a, tensor.state.handle(), stream, options);
      }
    });
  }

  private void sendWith(Tensor tensor, long options) {
    if (tensor == null) {
      throw new NullPointerException("tensor");
    }
    handle.use(a -> {
      synchronized (tensor.state) {
        return DLBridgeNative.dlb_channel_send(a, tensor.state.handle(), options);
      }
    });
  }

  /**
   * Waits for the next tensor from the peer; everything that arrives is checked before it is
   * mapped. The peer closing the channel (or vanishing, also in the middle of a tensor) is {@link
   * Status#PEER_CLOSED}, "the peer closed the channel"; what is not a valid tensor, {@link
   * Status#PROTOCOL}; the time limit running out, {@link Status#TIMEOUT} ("receiving on the
   * channel: the time limit ran out"). Ownership: the caller owns the tensor (closing it unmaps
   * the memory).
   *
   * @return the received tensor
   */
  public Tensor receive() {
    return new Tensor(handle.use(DLBridgeNative::dlb_channel_receive));
  }

  /**
   * The peer's process id, as the kernel reported it when the connection was made.
   *
   * @return the peer's pid
   */
  public int peerPid() {
    return peer()[0];
  }

  /**
   * The peer's user id, as the kernel reported it when the connection was made.
   *
   * @return the peer's uid (unsigned, as the kernel's)
   */
  public int peerUid() {
    return peer()[1];
  }

  private int[] peer() {
    int[] pid = new int[1];
    int[] uid = new int[1];
    handle.use(a -> DLBridgeNative.dlb_channel_peer(a, pid, uid));
    return new int[] {pid[0], uid[0]};
  }

  /**
   * Accepts a peer running as {@code uid} too, for the tensors received from now on. A connected
   * channel's peer was checked when it connected: to accept a listener of another user, name it
   * to {@link #connect(String, int, Duration)}.
   *
   * @param uid the user id accepted (unsigned, as the kernel's)
   */
  public void allowUid(int uid) {
    handle.use(a -> DLBridgeNative.dlb_channel_allow_uid(a, Integer.toUnsignedLong(uid)));
  }

  /**
   * Closes the connection (the peer's receive then fails with "the peer closed the channel").
   * Calling it again does nothing.
   */
  @Override
  public void close() {
    handle.close();
  }
}
