// ChannelOptions.cs - the settings of a channel made with options (dlb_channel_options; see
// docs/remote.md): above all the key of a channel across machines. Every check and message is the
// core's; this file gives the native options .NET's shapes (IDisposable, fluent setters, time
// limits as TimeSpan?).
using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
  /// <summary>The native options, freed once (dlb_channel_options_free, which wipes the key's
  /// copy) when the last call holding a reference returns, or by the finalizer when nobody
  /// disposed them.</summary>
  internal sealed class ChannelOptionsHandle : SafeHandle {
    internal ChannelOptionsHandle(long address) : base(IntPtr.Zero, true) {
      SetHandle(new IntPtr(address));
    }

    public override bool IsInvalid {
      get { return handle == IntPtr.Zero; }
    }

    protected override bool ReleaseHandle() {
      DLBridgeNative.dlb_channel_options_free(handle.ToInt64());
      return true;
    }
  }

  /// <summary>
  /// Settings for <see cref="Listener.Listen(string, ChannelOptions)"/> and
  /// <see cref="Channel.Connect(string, ChannelOptions)"/> (dlb_channel_options; see
  /// docs/remote.md): the key remote peers prove they hold, where a remote channel puts what it
  /// receives, how much a peer may make it hold, the time limit, and the user a local listener
  /// may run as. The setters return the options, so they chain:
  /// <c>options.SetKey(key).SetTimeout(TimeSpan.FromSeconds(5))</c>.
  /// <para>Every value is checked by the core when it is set: a refused one throws the core's
  /// exception (<see cref="DLPackArgumentException"/>, ...) with its message, and the options keep
  /// what they had. Listens and connects copy what they need, so the options may be disposed (or
  /// changed) once the channel is made. A setter waits for listens and connects reading the
  /// options on other threads; Dispose frees the native options when the last of those returns.
  /// Used after Dispose: ObjectDisposedException.</para>
  /// </summary>
  public sealed class ChannelOptions : IDisposable {
    /// <summary>The most bytes one received tensor may have unless
    /// <see cref="SetMaxTensorBytes"/> says otherwise
    /// (DLB_REMOTE_DEFAULT_MAX_TENSOR_BYTES).</summary>
    public const ulong DefaultMaxTensorBytes = DLBridgeNative.DLB_REMOTE_DEFAULT_MAX_TENSOR_BYTES;

    /// <summary>The most tensors received and not yet taken unless
    /// <see cref="SetMaxInFlight"/> says otherwise (DLB_REMOTE_DEFAULT_MAX_IN_FLIGHT).</summary>
    public const uint DefaultMaxInFlight = DLBridgeNative.DLB_REMOTE_DEFAULT_MAX_IN_FLIGHT;

    /// <summary>The shortest key, in bytes (DLB_REMOTE_MIN_KEY_BYTES).</summary>
    public const uint MinKeyBytes = DLBridgeNative.DLB_REMOTE_MIN_KEY_BYTES;

    /// <summary>The longest key, in bytes (DLB_REMOTE_MAX_KEY_BYTES).</summary>
    public const uint MaxKeyBytes = DLBridgeNative.DLB_REMOTE_MAX_KEY_BYTES;

    private readonly ChannelOptionsHandle h;
    private readonly object gate = new object();
    private int readers; // listens and connects reading the options now; guarded by gate

    /// <summary>Options with the core's defaults: no key, received tensors in host memory
    /// (<see cref="Device.Cpu"/>), <see cref="DefaultMaxTensorBytes"/>,
    /// <see cref="DefaultMaxInFlight"/>, no time limit, a local listener of this user only.
    /// Ownership: the caller owns them (dispose them).</summary>
    public ChannelOptions() {
      h = new ChannelOptionsHandle(DLBridgeNative.dlb_channel_options_create());
    }

    /// <summary>The shared secret remote peers prove they hold (a remote listener needs one):
    /// <see cref="MinKeyBytes"/> to <see cref="MaxKeyBytes"/> bytes, copied (the core wipes its
    /// copy when the options are freed; the caller's array stays the caller's to clear). Another
    /// length: <see cref="DLPackArgumentException"/> with the core's message. Local channels
    /// ignore it.</summary>
    public ChannelOptions SetKey(byte[] key) {
      if (key == null) throw new ArgumentNullException("key");
      return Set(a => DLBridgeNative.dlb_channel_options_set_key(a, key));
    }

    /// <summary>Where a remote channel puts the tensors it receives: <see cref="Device.Cpu"/>
    /// (the default), CUDA pinned host memory, or a CUDA device's memory; other devices are the
    /// core's DLB_ERR_UNSUPPORTED. Whether UCX reaches that memory is checked when the channel is
    /// made (DLB_ERR_DEVICE_UNAVAILABLE). Local channels ignore it.</summary>
    public ChannelOptions SetReceiveDevice(Device device) {
      long packed = device.Packed;
      return Set(a => DLBridgeNative.dlb_channel_options_set_receive_device(a, packed));
    }

    /// <summary>The most bytes one tensor received on a remote channel may have (at least 1): a
    /// larger one is refused before anything is allocated for it
    /// (<see cref="DLPackLimitException"/>).</summary>
    public ChannelOptions SetMaxTensorBytes(ulong bytes) {
      return Set(a => DLBridgeNative.dlb_channel_options_set_max_tensor_bytes(a, bytes));
    }

    /// <summary>The most tensors a remote channel holds received and not yet taken by
    /// <see cref="Channel.Receive"/> (1 to 65536): a sender waits, within its time limit, until
    /// one is taken.</summary>
    public ChannelOptions SetMaxInFlight(uint tensors) {
      return Set(a => DLBridgeNative.dlb_channel_options_set_max_in_flight(a, tensors));
    }

    /// <summary>The channel's time limit, for connecting and for every later call, as
    /// <see cref="Channel.SetTimeout"/> sets it later: null (the default) or
    /// Timeout.InfiniteTimeSpan for none, TimeSpan.Zero: do not wait. Another negative span is
    /// the core's DLPackArgumentException.</summary>
    public ChannelOptions SetTimeout(TimeSpan? timeout) {
      long ns = TimeLimit.Nanoseconds(timeout);
      return Set(a => DLBridgeNative.dlb_channel_options_set_timeout(a, ns));
    }

    /// <summary>The user a local listener may run as besides this one
    /// (<see cref="Channel.UidSelf"/>: this user only, the default), as
    /// <see cref="Channel.Connect(string, uint, TimeSpan?)"/> takes it. Remote channels ignore
    /// it.</summary>
    public ChannelOptions SetListenerUid(uint uid) {
      return Set(a => DLBridgeNative.dlb_channel_options_set_listener_uid(a, uid));
    }

    // A setter: alone, once no listen or connect reads the options.
    private ChannelOptions Set(Func<long, long> call) {
      lock (gate) {
        while (readers > 0) Monitor.Wait(gate);
        Use(call);
      }
      return this;
    }

    // `call` with the native address, holding a reference so that Dispose frees nothing under it.
    private T Use<T>(Func<long, T> call) {
      bool added = false;
      try {
        h.DangerousAddRef(ref added);
      } catch (ObjectDisposedException) {
        throw new ObjectDisposedException("ChannelOptions");
      }
      try {
        return call(h.DangerousGetHandle().ToInt64());
      } finally {
        h.DangerousRelease();
      }
    }

    /// <summary><paramref name="call"/> with the options' address (0 for null options: the core's
    /// defaults), counted as a reader: no setter and no free runs under it.</summary>
    internal static T Read<T>(ChannelOptions options, Func<long, T> call) {
      if (options == null) return call(0);
      lock (options.gate) options.readers++;
      try {
        return options.Use(call);
      } finally {
        lock (options.gate) {
          if (--options.readers == 0) Monitor.PulseAll(options.gate);
        }
      }
    }

    /// <summary>Frees the native options (the core wipes its copy of the key), at once or when
    /// the last listen or connect reading them returns. Channels made with them keep what they
    /// need. Idempotent.</summary>
    public void Dispose() {
      h.Dispose();
    }
  }
}
