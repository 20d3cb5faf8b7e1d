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
    this.handle = new ChannelHandle(this, address);
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
   * Connects to a listener at {@code address} with {@code options} ({@code null}: the defaults;
   * {@code dlb_channel_connect_with_options}): a Unix socket path as {@link #connect(String, int,
   * Duration)} (the options' listener uid and time limit), or {@code "tcp://HOST:PORT"} or {@code
   * "ucx://HOST:PORT"} for a listener on another machine (see {@link Listener#listen(String,
   * ChannelOptions)} and docs/remote.md). A remote connect proves it holds the options' key before
   * it returns: {@link Status#PERMISSION} when the listener refuses it (or does not prove it holds
   * the same), {@link Status#NO_LISTENER} when nothing listens there, {@link Status#TIMEOUT}.
   * Ownership: the caller owns the channel; the options stay the caller's (copied); on error
   * nothing is open.
   *
   * @param address the socket path, or tcp:// or ucx:// with host and port
   * @param options the options, or null for the defaults
   * @return the connected channel
   */
  public static Channel connect(String address, ChannelOptions options) {
    if (address == null) {
      throw new NullPointerException("address");
    }
    return new Channel(ChannelOptions.read(options,
        o -> DLBridgeNative.dlb_channel_connect_with_options(address, o)));
  }

  /**
   * Whether this channel goes across machines (a tcp:// or ucx:// address). A remote channel
   * copies: a received tensor is a new compact tensor with {@link Tensor#FLAG_IS_COPIED} on the
   * options' receive device, any tensor may be sent with {@link #send}, and {@link #peerPid},
   * {@link #peerUid} and {@link #allowUid} do not apply ({@link Status#INVALID_ARGUMENT}).
   *
   * @return true for a remote channel
   */
  public boolean isRemote() {
    return handle.isRemote();
  }

  /**
   * The port this remote channel uses on this machine, or -1 for a local channel.
   *
   * @return the port, or -1
   */
  public int port() {
    return handle.port();
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
   * Sends {@code tensor} on a remote channel with its layout ({@code DLB_SEND_KEEP_LAYOUT}): a
   * strided tensor's covering span travels and the peer's tensor has its strides, where {@link
   * #send} packs it and the peer's is compact. A local channel shares the memory, so its peer
   * always sees the tensor's layout: there it is {@link #send}.
   *
   * @param tensor the tensor sent; it stays the caller's
   */
  public void sendKeepingLayout(Tensor tensor) {
    sendWith(tensor, DLBridgeNativeConstants.DLB_SEND_KEEP_LAYOUT);
  }

  /**
   * Sends {@code tensor} with more to follow at once ({@code DLB_SEND_MORE}): a remote channel
   * may hold its bytes and send them with the next ones as one batch, where each tensor would
   * otherwise be one transport message. Held tensors leave with the next {@link #send} (send the
   * last tensor of a stream with it), when a batch fills (about 64 KiB, or 1 MiB of tensors
   * from 16 KiB), at the channel's next receive, or at its close. A local channel sends every
   * tensor at once and ignores the option.
   *
   * @param tensor the tensor sent; it stays the caller's, its bytes copied before this returns
   */
  public void sendMore(Tensor tensor) {
    sendWith(tensor, DLBridgeNativeConstants.DLB_SEND_MORE);
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
    handle.use(a -> tensor.state.use(t ->
        DLBridgeNative.dlb_channel_send_cuda(a, t, stream, options)));
  }

  private void sendWith(Tensor tensor, long options) {
    if (tensor == null) {
      throw new NullPointerException("tensor");
    }
    handle.use(a -> tensor.state.use(t -> DLBridgeNative.dlb_channel_send(a, t, options)));
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
   * The most memory a channel's pool keeps unless {@link #setPoolLimit} says otherwise ({@code
   * DLB_POOL_DEFAULT_LIMIT}).
   */
  public static final long POOL_DEFAULT_LIMIT =
      DLBridgeNativeConstants.DLB_POOL_DEFAULT_LIMIT.longValueExact();

  /** {@link PoolStats#hugePages()}: small pages only (or no segment of 2 MiB yet). */
  public static final int HUGE_PAGES_NONE = DLBridgeNativeConstants.DLB_HUGE_PAGES_NONE;

  /** {@link PoolStats#hugePages()}: transparent huge pages were asked for. */
  public static final int HUGE_PAGES_TRANSPARENT =
      DLBridgeNativeConstants.DLB_HUGE_PAGES_TRANSPARENT;

  /** {@link PoolStats#hugePages()}: segments of reserved hugetlbfs pages. */
  public static final int HUGE_PAGES_HUGETLB = DLBridgeNativeConstants.DLB_HUGE_PAGES_HUGETLB;

  /**
   * The state of a channel's pool ({@code dlb_pool_stats}); the counts are unsigned in the core
   * and none comes near 2^63.
   *
   * @param segments segments the pool keeps
   * @param bytes their size in all
   * @param limit the most the pool may keep ({@link #setPoolLimit})
   * @param live tensors of this process over the pool's slots
   * @param lent sends the peer has not given back yet
   * @param returned sends the peer gave back since the channel opened
   * @param lost sends the peer could not take (out of file descriptors or mappings)
   * @param hugePages what the large segments got: one of the {@code HUGE_PAGES_*} constants
   */
  public record PoolStats(long segments, long bytes, long limit, long live, long lent,
      long returned, long lost, int hugePages) {}

  /**
   * Lends a compact row-major CPU tensor from this channel's pool ({@code dlb_channel_allocate}):
   * the fast way to send a stream of tensors (docs/ipc.md, "The pool"). Its memory is not
   * zero-filled: fill it, then {@link #send} it on this channel. Its slot goes back to the pool
   * once this process has closed it and the peer has closed what it received. Errors: the
   * layout's (as {@link Tensor#allocate}); a tensor larger than the pool's limit ({@link
   * Status#LIMIT}); {@link Status#TIMEOUT} (the pool stayed full: the peer holds its tensors);
   * {@link Status#PEER_CLOSED}; {@link Status#CLOSED}. Ownership: the caller owns the tensor
   * (close it), also after the channel is closed; on error nothing is allocated.
   *
   * @param dtype the element type
   * @param shape the extents, one per dimension
   * @return the lent tensor, owned by the caller
   */
  public Tensor allocate(DType dtype, long... shape) {
    if (dtype == null) {
      throw new NullPointerException("dtype");
    }
    return new Tensor(handle.use(a -> DLBridgeNative.dlb_channel_allocate(a,
        Device.CPU.packed(), dtype.packed(), shape, null, 0L)));
  }

  /**
   * Sets the most memory this channel's pool may keep, in bytes ({@link #POOL_DEFAULT_LIMIT} at
   * first; unsigned). Lowering it frees nothing, but no segment is added until the pool is below
   * it. 0 is refused ({@link Status#INVALID_ARGUMENT}, "a pool limit of 0 bytes leaves no room").
   *
   * @param bytes the limit in bytes
   */
  public void setPoolLimit(long bytes) {
    handle.use(a -> DLBridgeNative.dlb_channel_set_pool_limit(a, bytes));
  }

  /**
   * The state of this channel's pool, after taking back what the peer gave back ({@code
   * dlb_channel_pool_stats}): {@link PoolStats#lent()} is what the peer still holds, {@link
   * PoolStats#returned()} the sends it acknowledged.
   *
   * @return the pool's state
   */
  public PoolStats poolStats() {
    long[] v = new long[DLBridgeNativeConstants.DLBX_POOL_STATS_FIELDS];
    handle.use(a -> DLBridgeNative.dlbx_channel_pool_stats(a, v));
    return new PoolStats(v[DLBridgeNativeConstants.DLBX_POOL_STATS_SEGMENTS],
        v[DLBridgeNativeConstants.DLBX_POOL_STATS_BYTES],
        v[DLBridgeNativeConstants.DLBX_POOL_STATS_LIMIT],
        v[DLBridgeNativeConstants.DLBX_POOL_STATS_LIVE],
        v[DLBridgeNativeConstants.DLBX_POOL_STATS_LENT],
        v[DLBridgeNativeConstants.DLBX_POOL_STATS_RETURNED],
        v[DLBridgeNativeConstants.DLBX_POOL_STATS_LOST],
        (int) v[DLBridgeNativeConstants.DLBX_POOL_STATS_HUGE_PAGES]);
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
