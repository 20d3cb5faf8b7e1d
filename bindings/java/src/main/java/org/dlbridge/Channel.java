package org.dlbridge;

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
  private final ChannelHandle handle;

  Channel(long address) {
    this.handle = new ChannelHandle(address);
  }

  /**
   * Connects to a {@link Listener} at {@code path}; its process must run as this user.
   * Ownership: the caller owns the channel (close it); on error nothing is open.
   */
  public static Channel connect(String path) {
    if (path == null) {
      throw new NullPointerException("path");
    }
    return new Channel(DLBridgeNative.dlb_channel_connect(path));
  }

  /**
   * Sends {@code tensor} without copying: its memory must be shareable ({@link
   * Tensor#allocateShareable}, or received from a channel), else {@link Status#UNSUPPORTED} with
   * the core's message. The peer sees writes made through the tensor afterwards, and the tensor
   * sees the peer's, unless it is READ_ONLY (then mapped read-only there).
   */
  public void send(Tensor tensor) {
    sendWith(tensor, 0);
  }

  /**
   * Sends {@code tensor}, first copying it into new shareable memory when it is not shareable
   * ({@code DLB_SEND_COPY}): the peer's tensor then carries IS_COPIED and is its own.
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
   */
  public void sendCuda(Tensor tensor, long stream) {
    sendCudaWith(tensor, stream, 0);
  }

  /**
   * {@link #sendCuda}, first copying memory that is not shareable into shareable memory on its
   * device, on {@code stream}, and waiting for the copy ({@code DLB_SEND_COPY}; no event then
   * goes with it).
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
   * mapped. The peer closing the channel is {@link Status#DEVICE}, "the peer closed the
   * channel". Ownership: the caller owns the tensor (closing it unmaps the memory).
   */
  public Tensor receive() {
    return new Tensor(handle.use(DLBridgeNative::dlb_channel_receive));
  }

  /** The peer's process id, as the kernel reported it when the connection was made. */
  public int peerPid() {
    return peer()[0];
  }

  /** The peer's user id (unsigned, as the kernel's), reported when the connection was made. */
  public int peerUid() {
    return peer()[1];
  }

  private int[] peer() {
    int[] pid = new int[1];
    int[] uid = new int[1];
    handle.use(a -> DLBridgeNative.dlb_channel_peer(a, pid, uid));
    return new int[] {pid[0], uid[0]};
  }

  /** Accepts a peer running as {@code uid} too, for the tensors received from now on. */
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
