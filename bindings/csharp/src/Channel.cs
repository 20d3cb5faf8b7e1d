// Channel.cs - tensors across processes without copying (docs/ipc.md): channels over a Unix
// domain socket that pass shareable memory with its file descriptor (the tensor's side, shareable
// memory, is in Tensor.Ipc.cs); and the same channels across machines (docs/remote.md), made
// with ChannelOptions (ChannelOptions.cs). Every check and message is the core's
// (dlb_channel_*); this file gives them .NET's shapes (IDisposable, a listener that accepts,
// exceptions, time limits as TimeSpan?).
using System;
using System.Runtime.ConstrainedExecution;
using System.Threading;

namespace DLBridge {
  /// <summary>A listener's or a channel's native handle, held as a Tensor's reference is
  /// (<see cref="Holders"/>): every call counts itself in for its duration, so the handle is
  /// freed when the last call returns, never under one. Dispose shuts the channel down first
  /// (dlb_channel_shutdown), which wakes a call blocked in Accept or Receive on another thread;
  /// a critical finalizer, as a SafeHandle's, closes a handle nobody disposed.</summary>
  internal sealed class ChannelHandle : CriticalFinalizerObject {
    private Holders holders;

    internal ChannelHandle(long address) {
      holders = new Holders(address);
    }

    /// <summary>Runs <paramref name="call"/> with the native address, or throws
    /// DLPackClosedException once disposed.</summary>
    internal T Use<T>(Func<long, T> call) {
      long a = holders.Enter();
      if (a == 0) throw Errors.ChannelClosed();
      try {
        return call(a);
      } finally {
        Free(holders.Exit());
      }
    }

    /// <summary>dlb_channel_set_timeout.</summary>
    internal void SetTimeout(TimeSpan? timeout) {
      long ns = TimeLimit.Nanoseconds(timeout);
      Use(a => DLBridgeNative.dlb_channel_set_timeout(a, ns));
    }

    /// <summary>Closes the handle; idempotent. The closer counts itself in as a call while it
    /// wakes the calls in flight, so the address stays valid for the shutdown; the last holder
    /// out frees it.</summary>
    internal void Dispose() {
      long a = holders.Enter();
      if (a == 0) return;
      if (holders.Close(out _)) DLBridgeNative.dlb_channel_shutdown(a);
      Free(holders.Exit());
      GC.SuppressFinalize(this);
    }

    ~ChannelHandle() {
      if (holders.Close(out long free)) Free(free);
    }

    private static void Free(long address) {
      if (address != 0) DLBridgeNative.dlb_channel_close(address);
    }
  }

  /// <summary>A channel's time limit as the core takes it: nanoseconds, or DLB_TIMEOUT_NONE. A
  /// TimeSpan counts 100 ns ticks, so every value converts exactly; null,
  /// Timeout.InfiniteTimeSpan (.NET's "no limit") and spans too long for 64-bit nanoseconds
  /// (about 292 years) mean no limit; other negative spans go to the core, which refuses
  /// them.</summary>
  internal static class TimeLimit {
    internal static long Nanoseconds(TimeSpan? timeout) {
      if (timeout == null || timeout.Value == Timeout.InfiniteTimeSpan) return DLBridgeNative.DLB_TIMEOUT_NONE;
      long ticks = timeout.Value.Ticks;
      if (ticks > long.MaxValue / 100) return DLBridgeNative.DLB_TIMEOUT_NONE;
      if (ticks < long.MinValue / 100) return long.MinValue;
      return ticks * 100;
    }
  }

  /// <summary>
  /// Accepts connections from other processes on a Unix domain socket (dlb_channel_listen): the
  /// socket is created with mode 0600 in a folder only this user can enter (created when
  /// missing; a folder others can enter, or another user's, is refused with
  /// <see cref="DLPackPermissionException"/>). Dispose removes the socket file. To serve another
  /// user, <see cref="AllowUid"/> it and widen the folder's and the socket's modes after
  /// Listen (for example 0711 and 0666): the check of the peer's uid still refuses every user
  /// not allowed.
  /// <para>One thread at a time may Accept; Dispose may come from any thread, also while another
  /// is blocked in Accept, which then throws <see cref="DLPackClosedException"/> (status
  /// DLB_ERR_CLOSED, "the channel is closed"), as every later call does.</para>
  /// </summary>
  public sealed class Listener : IDisposable {
    private readonly ChannelHandle h;

    private Listener(long address) {
      h = new ChannelHandle(address);
    }

    /// <summary>Listens at <paramref name="path"/>. A stale socket left by a process that died
    /// is replaced; a live one is refused.
    /// Ownership: the caller owns the listener; on error nothing is created.</summary>
    public static Listener Listen(string path) {
      if (path == null) throw new ArgumentNullException("path");
      return new Listener(DLBridgeNative.dlb_channel_listen(path));
    }

    /// <summary>Listens at <paramref name="address"/> with <paramref name="options"/> (null: the
    /// defaults; dlb_channel_listen_with_options): a Unix socket path as
    /// <see cref="Listen(string)"/>, or another machine's way in, "tcp://HOST:PORT" (UCX over
    /// TCP) or "ucx://HOST:PORT" (the transports UCX picks), bound to exactly that host; port 0
    /// lets the system pick one (<see cref="Port"/> says which). A remote listener needs a key
    /// (<see cref="ChannelOptions.SetKey"/>; without one the core's
    /// <see cref="DLPackArgumentException"/>), and its accepted channels take its options. UCX or
    /// libcrypto missing: DLB_ERR_UNSUPPORTED (<see cref="Channel.RemoteUnavailableReason"/> asks
    /// first). See docs/remote.md. Ownership: the caller owns the listener; the options stay the
    /// caller's (copied); on error nothing is created.</summary>
    public static Listener Listen(string address, ChannelOptions options) {
      if (address == null) throw new ArgumentNullException("address");
      return new Listener(ChannelOptions.Read(options,
          o => DLBridgeNative.dlb_channel_listen_with_options(address, o)));
    }

    /// <summary>Whether this listener is another machine's way in (a tcp:// or ucx://
    /// address).</summary>
    public bool IsRemote {
      get { return h.Use(a => DLBridgeNative.dlb_channel_is_remote(a)) != 0; }
    }

    /// <summary>The port a remote listener listens on (the one the system picked for port 0), or
    /// -1 for a local listener.</summary>
    public int Port {
      get { return h.Use(a => DLBridgeNative.dlb_channel_port(a)); }
    }

    /// <summary>Waits for the next connection. A peer running as another user is refused with
    /// <see cref="DLPackPermissionException"/> (its connection closed, the listener stays
    /// usable: accept again) unless allowed with <see cref="AllowUid"/>. With a time limit
    /// (<see cref="SetTimeout"/>), <see cref="DLPackTimeoutException"/> when no peer connects in
    /// time (the listener stays usable). The channel takes the listener's allowed uids and time
    /// limit. On a remote listener the peer first proves it holds the key: one that does not is
    /// refused with <see cref="DLPackPermissionException"/> (the listener stays usable: accept
    /// again). Ownership: the caller owns the channel.</summary>
    public Channel Accept() {
      return new Channel(h.Use(a => DLBridgeNative.dlb_channel_accept(a)));
    }

    /// <summary>Accepts peers running as <paramref name="uid"/> too, on every connection accepted
    /// from now on (the caller's own uid always is).</summary>
    public void AllowUid(uint uid) {
      h.Use(a => DLBridgeNative.dlb_channel_allow_uid(a, uid));
    }

    /// <summary>Sets the time limit of each later <see cref="Accept"/>, passed on to every
    /// channel accepted from then on (dlb_channel_set_timeout): null, the default, or
    /// Timeout.InfiniteTimeSpan for none; TimeSpan.Zero: do not wait.</summary>
    public void SetTimeout(TimeSpan? timeout) {
      h.SetTimeout(timeout);
    }

    /// <summary>Stops listening and removes the socket file. Idempotent.</summary>
    public void Dispose() {
      h.Dispose();
    }
  }

  /// <summary>The state of a channel's pool (dlb_pool_stats, <see cref="Channel.PoolStats"/>).
  /// </summary>
  public readonly struct PoolStats {
    /// <summary>Segments the pool keeps.</summary>
    public ulong Segments { get; }
    /// <summary>Their size in all, in bytes.</summary>
    public ulong Bytes { get; }
    /// <summary>The most the pool may keep (<see cref="Channel.SetPoolLimit"/>).</summary>
    public ulong Limit { get; }
    /// <summary>Tensors of this process over the pool's slots.</summary>
    public ulong Live { get; }
    /// <summary>Sends the peer has not given back yet.</summary>
    public ulong Lent { get; }
    /// <summary>Sends the peer gave back since the channel opened.</summary>
    public ulong Returned { get; }
    /// <summary>Sends the peer could not take (out of file descriptors or mappings).</summary>
    public ulong Lost { get; }
    /// <summary>What the large segments got: one of the HugePages* constants.</summary>
    public int HugePages { get; }

    /// <summary>Small pages only, or no segment of 2 MiB yet (DLB_HUGE_PAGES_NONE).</summary>
    public const int HugePagesNone = DLBridgeNative.DLB_HUGE_PAGES_NONE;
    /// <summary>Transparent huge pages were asked for (DLB_HUGE_PAGES_TRANSPARENT).</summary>
    public const int HugePagesTransparent = DLBridgeNative.DLB_HUGE_PAGES_TRANSPARENT;
    /// <summary>Segments of reserved hugetlbfs pages (DLB_HUGE_PAGES_HUGETLB).</summary>
    public const int HugePagesHugeTlb = DLBridgeNative.DLB_HUGE_PAGES_HUGETLB;

    // The fields as dlbx_channel_pool_stats (generators/swig/dlbridge.i) lays them out.
    internal PoolStats(long[] v) {
      Segments = unchecked((ulong)v[DLBridgeNative.DLBX_POOL_STATS_SEGMENTS]);
      Bytes = unchecked((ulong)v[DLBridgeNative.DLBX_POOL_STATS_BYTES]);
      Limit = unchecked((ulong)v[DLBridgeNative.DLBX_POOL_STATS_LIMIT]);
      Live = unchecked((ulong)v[DLBridgeNative.DLBX_POOL_STATS_LIVE]);
      Lent = unchecked((ulong)v[DLBridgeNative.DLBX_POOL_STATS_LENT]);
      Returned = unchecked((ulong)v[DLBridgeNative.DLBX_POOL_STATS_RETURNED]);
      Lost = unchecked((ulong)v[DLBridgeNative.DLBX_POOL_STATS_LOST]);
      HugePages = (int)v[DLBridgeNative.DLBX_POOL_STATS_HUGE_PAGES];
    }

    /// <summary>The fields, for messages.</summary>
    public override string ToString() {
      return "segments " + Segments + ", bytes " + Bytes + ", limit " + Limit + ", live " + Live +
             ", lent " + Lent + ", returned " + Returned + ", lost " + Lost + ", huge pages " +
             HugePages;
    }
  }

  /// <summary>
  /// One end of a connection between two processes. Tensors sent are borrowed for the call and
  /// stay the caller's; tensors received are the caller's to dispose, and stay valid after the
  /// channel is disposed.
  /// <para>One thread at a time may Send or Receive; Dispose may come from any thread, also while
  /// another is blocked in Receive, which then throws <see cref="DLPackClosedException"/> (status
  /// DLB_ERR_CLOSED, "the channel is closed"), as every later call does.</para>
  /// </summary>
  public sealed class Channel : IDisposable {
    private readonly ChannelHandle h;

    internal Channel(long address) {
      h = new ChannelHandle(address);
    }

    /// <summary><see cref="Connect(string, uint, TimeSpan?)"/>'s listener uid for "this user
    /// only" (DLB_UID_SELF).</summary>
    public const uint UidSelf = DLBridgeNative.DLB_UID_SELF;

    /// <summary>Connects to a <see cref="Listener"/> at <paramref name="path"/>; its process must
    /// run as this user (else <see cref="DLPackPermissionException"/>, before anything is sent
    /// or received). Nothing listening there: <see cref="DLPackNoListenerException"/>; a socket
    /// or folder this user may not reach: <see cref="DLPackPermissionException"/>. No time
    /// limit. Ownership: the caller owns the channel.</summary>
    public static Channel Connect(string path) {
      if (path == null) throw new ArgumentNullException("path");
      return new Channel(DLBridgeNative.dlb_channel_connect(path));
    }

    /// <summary>Connects as <see cref="Connect(string)"/> does, accepting a listener that runs
    /// as <paramref name="listenerUid"/> too (<see cref="UidSelf"/>: this user only), with the
    /// time limit <paramref name="timeout"/> for the connection, which the channel keeps for
    /// its sends and receives (<see cref="SetTimeout"/> changes it; null or
    /// Timeout.InfiniteTimeSpan: none; TimeSpan.Zero: do not wait). A connection waits only
    /// while the listener's queue of unaccepted peers is full; running out of time is
    /// <see cref="DLPackTimeoutException"/>. (dlb_channel_connect_with.)
    /// Ownership: the caller owns the channel.</summary>
    public static Channel Connect(string path, uint listenerUid, TimeSpan? timeout = null) {
      if (path == null) throw new ArgumentNullException("path");
      return new Channel(DLBridgeNative.dlb_channel_connect_with(path, listenerUid,
                                                                 TimeLimit.Nanoseconds(timeout)));
    }

    /// <summary>Connects to a listener at <paramref name="address"/> with
    /// <paramref name="options"/> (null: the defaults; dlb_channel_connect_with_options): a Unix
    /// socket path as <see cref="Connect(string, uint, TimeSpan?)"/> (the options' listener uid
    /// and time limit), or "tcp://HOST:PORT" or "ucx://HOST:PORT" for a listener on another
    /// machine (see <see cref="Listener.Listen(string, ChannelOptions)"/> and docs/remote.md). A
    /// remote connect proves it holds the options' key before it returns:
    /// <see cref="DLPackPermissionException"/> when the listener refuses it (or does not prove it
    /// holds the same), <see cref="DLPackNoListenerException"/> when nothing listens there,
    /// <see cref="DLPackTimeoutException"/>. Ownership: the caller owns the channel; the options
    /// stay the caller's (copied); on error nothing is open.</summary>
    public static Channel Connect(string address, ChannelOptions options) {
      if (address == null) throw new ArgumentNullException("address");
      return new Channel(ChannelOptions.Read(options,
          o => DLBridgeNative.dlb_channel_connect_with_options(address, o)));
    }

    /// <summary>Whether this channel goes across machines (a tcp:// or ucx:// address). A remote
    /// channel copies: a received tensor is a new compact tensor with
    /// <see cref="Tensor.FlagIsCopied"/> on the options' receive device, any tensor may be sent
    /// with <see cref="Send"/>, and <see cref="PeerPid"/>, <see cref="PeerUid"/> and
    /// <see cref="AllowUid"/> do not apply (the core's DLPackArgumentException).</summary>
    public bool IsRemote {
      get { return h.Use(a => DLBridgeNative.dlb_channel_is_remote(a)) != 0; }
    }

    /// <summary>The port this remote channel uses on this machine, or -1 for a local
    /// channel.</summary>
    public int Port {
      get { return h.Use(a => DLBridgeNative.dlb_channel_port(a)); }
    }

    /// <summary>True when remote channels (tcp:// and ucx:// addresses) can be made in this
    /// process: UCX and libcrypto load (dlb_remote_available).</summary>
    public static bool RemoteIsAvailable { get { return RemoteUnavailableReason == null; } }

    /// <summary>Null when remote channels can be made here, otherwise the core's exception
    /// saying why (DLB_ERR_UNSUPPORTED; the message names what is missing and the packages that
    /// bring it).</summary>
    public static DLPackException RemoteUnavailableReason {
      get {
        try {
          DLBridgeNative.dlb_remote_available();
          return null;
        } catch (DLPackException e) {
          return e;
        }
      }
    }

    /// <summary>Sets the time limit of each later Send and Receive (dlb_channel_set_timeout):
    /// null, the default, or Timeout.InfiniteTimeSpan for none; TimeSpan.Zero: do not wait. A
    /// call that runs out of time throws <see cref="DLPackTimeoutException"/>. When nothing of a
    /// tensor had arrived or left, the channel stays usable; when the limit ran out in the
    /// middle of a tensor, the channel has lost its place in the stream and every later Send and
    /// Receive throws <see cref="DLPackProtocolException"/>: dispose it. A negative span (other
    /// than Timeout.InfiniteTimeSpan) is the core's DLPackArgumentException.</summary>
    public void SetTimeout(TimeSpan? timeout) {
      h.SetTimeout(timeout);
    }

    /// <summary>Sends <paramref name="tensor"/> without copying: its memory must be shareable
    /// (else DLB_ERR_UNSUPPORTED with the core's message). The peer sees writes made through the
    /// tensor afterwards, and the tensor sees the peer's, unless it is READ_ONLY (then mapped
    /// read-only there). The tensor stays the caller's.</summary>
    public void Send(Tensor tensor) {
      if (tensor == null) throw new ArgumentNullException("tensor");
      h.Use(a => { tensor.SendOn(a, 0); return 0; });
    }

    /// <summary>Sends <paramref name="tensor"/>, first copying it into new shareable memory when
    /// it is not shareable (DLB_SEND_COPY): the peer's tensor then carries IS_COPIED and is its
    /// own.</summary>
    public void SendCopy(Tensor tensor) {
      if (tensor == null) throw new ArgumentNullException("tensor");
      h.Use(a => { tensor.SendOn(a, DLBridgeNative.DLB_SEND_COPY); return 0; });
    }

    /// <summary>Sends <paramref name="tensor"/> on a remote channel with its layout
    /// (DLB_SEND_KEEP_LAYOUT): a strided tensor's covering span travels and the peer's tensor
    /// has its strides, where <see cref="Send"/> packs it and the peer's is compact. A local
    /// channel shares the memory, so its peer always sees the tensor's layout: there it is
    /// <see cref="Send"/>.</summary>
    public void SendKeepingLayout(Tensor tensor) {
      if (tensor == null) throw new ArgumentNullException("tensor");
      h.Use(a => { tensor.SendOn(a, DLBridgeNative.DLB_SEND_KEEP_LAYOUT); return 0; });
    }

    /// <summary>Sends <paramref name="tensor"/> saying more tensors follow at once
    /// (DLB_SEND_MORE): a remote channel may hold its bytes and send them with the next ones as
    /// one batch, leaving with the next <see cref="Send"/> (send the last tensor of a stream
    /// with it), when a batch fills (about 64 KiB, or 1 MiB of tensors from 16 KiB), at the
    /// channel's next Receive, or at its Dispose. A local channel sends at once and ignores it.
    /// The tensor is borrowed: its bytes are copied before this returns, and it stays the
    /// caller's.</summary>
    public void SendMore(Tensor tensor) {
      if (tensor == null) throw new ArgumentNullException("tensor");
      h.Use(a => { tensor.SendOn(a, DLBridgeNative.DLB_SEND_MORE); return 0; });
    }

    /// <summary>Sends a CUDA tensor with stream order (dlb_channel_send_cuda): an interprocess
    /// event is recorded on <paramref name="stream"/> (a cudaStream_t of the tensor's device;
    /// IntPtr.Zero: the legacy default stream) after the work queued on it so far, and the
    /// receiver's <see cref="Tensor.CudaWaitReceived"/> makes its stream wait for it. Keep the
    /// tensor until the receiver has waited: the event belongs to its memory.</summary>
    public void SendCuda(Tensor tensor, IntPtr stream) {
      if (tensor == null) throw new ArgumentNullException("tensor");
      h.Use(a => { tensor.SendCudaOn(a, stream, 0u); return 0; });
    }

    /// <summary><see cref="SendCuda"/>, first copying memory that is not shareable into
    /// shareable memory on its device, on the stream, and waiting for the copy (DLB_SEND_COPY;
    /// no event then goes with it).</summary>
    public void SendCudaCopy(Tensor tensor, IntPtr stream) {
      if (tensor == null) throw new ArgumentNullException("tensor");
      h.Use(a => { tensor.SendCudaOn(a, stream, DLBridgeNative.DLB_SEND_COPY); return 0; });
    }

    /// <summary>Waits for the next tensor from the peer. Everything that arrives is checked
    /// before it is mapped (the core's checks and messages): what is not a valid tensor is
    /// <see cref="DLPackProtocolException"/>. The peer closing the channel is
    /// <see cref="DLPackPeerClosedException"/>, "the peer closed the channel"; the time limit
    /// running out, <see cref="DLPackTimeoutException"/> (see <see cref="SetTimeout"/>).
    /// Ownership: the caller owns the tensor (disposing it unmaps the memory).</summary>
    public Tensor Receive() {
      return new Tensor(h.Use(a => DLBridgeNative.dlb_channel_receive(a)));
    }

    /// <summary>The most memory a channel's pool keeps unless <see cref="SetPoolLimit"/> says
    /// otherwise (DLB_POOL_DEFAULT_LIMIT).</summary>
    public const ulong PoolDefaultLimit = DLBridgeNative.DLB_POOL_DEFAULT_LIMIT;

    /// <summary>Lends a compact row-major CPU tensor from this channel's pool
    /// (dlb_channel_allocate): the fast way to send a stream of tensors (docs/ipc.md, "The
    /// pool"). Its memory is not zero-filled: fill it, then <see cref="Send"/> it on this
    /// channel. Its slot goes back to the pool once this process has disposed it and the peer has
    /// disposed what it received. Errors: the layout's (as
    /// <see cref="Tensor.Allocate(Device, DType, long[])"/>); a tensor larger than the pool's
    /// limit (<see cref="DLPackLimitException"/>);
    /// <see cref="DLPackTimeoutException"/> (the pool stayed full: the peer holds its tensors);
    /// <see cref="DLPackPeerClosedException"/>; <see cref="DLPackClosedException"/>.
    /// Ownership: the caller owns the tensor (dispose it), also after the channel is disposed;
    /// on error nothing is allocated.</summary>
    public Tensor Allocate(DType dtype, params long[] shape) {
      return new Tensor(h.Use(a => DLBridgeNative.dlb_channel_allocate(a, Device.Cpu.Packed,
                                                                        dtype.Packed, shape,
                                                                        null, 0)));
    }

    /// <summary>Sets the most memory this channel's pool may keep, in bytes
    /// (dlb_channel_set_pool_limit; <see cref="PoolDefaultLimit"/> at first). Lowering it frees
    /// nothing, but no segment is added until the pool is below it. 0 is refused
    /// (<see cref="DLPackArgumentException"/>, "a pool limit of 0 bytes leaves no
    /// room").</summary>
    public void SetPoolLimit(ulong bytes) {
      h.Use(a => DLBridgeNative.dlb_channel_set_pool_limit(a, bytes));
    }

    /// <summary>The state of this channel's pool, after taking back what the peer gave back
    /// (dlb_channel_pool_stats): <c>Lent</c> is what the peer still
    /// holds, <c>Returned</c> the sends it acknowledged.</summary>
    public PoolStats PoolStats {
      get {
        long[] v = new long[DLBridgeNative.DLBX_POOL_STATS_FIELDS];
        h.Use(a => DLBridgeNative.dlbx_channel_pool_stats(a, v));
        return new PoolStats(v);
      }
    }

    /// <summary>The peer's process id, as the kernel reported it at connection.</summary>
    public int PeerPid {
      get { return Peer()[0]; }
    }

    /// <summary>The peer's user id, as the kernel reported it at connection.</summary>
    public uint PeerUid {
      get { return unchecked((uint)Peer()[1]); }
    }

    private int[] Peer() {
      int[] pid = new int[1], uid = new int[1];
      h.Use(a => DLBridgeNative.dlb_channel_peer(a, pid, uid));
      return new[] { pid[0], uid[0] };
    }

    /// <summary>Accepts a peer running as <paramref name="uid"/> too, for the tensors received
    /// from now on. A connected channel's peer was checked when it connected: to accept a
    /// listener of another user, name it to <see cref="Connect(string, uint, TimeSpan?)"/>.</summary>
    public void AllowUid(uint uid) {
      h.Use(a => DLBridgeNative.dlb_channel_allow_uid(a, uid));
    }

    /// <summary>Closes the connection (the peer's Receive then fails with "the peer closed the
    /// channel"). Idempotent.</summary>
    public void Dispose() {
      h.Dispose();
    }
  }
}
