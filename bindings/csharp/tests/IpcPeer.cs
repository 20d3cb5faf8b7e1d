// IpcPeer.cs - the C# peer of suite ipc's exchange across languages (tests/ipc/README.md, "The
// peer protocol"): `IpcPeer.exe consume PATH` or `IpcPeer.exe produce PATH`; and of the remote
// pairs (suite remote): `IpcPeer.exe remote-consume KEYHEX [SCHEME]` (listens at
// SCHEME://127.0.0.1:0, tcp unless named, and prints `ready PORT`) or
// `IpcPeer.exe remote-produce ADDRESS KEYHEX`. ChannelTest runs it as the producer of its own
// exchange.
using System;
using DLBridge;

static class IpcPeer {
  static void Expect(bool ok, string what) {
    if (!ok) throw new Exception(what);
  }

  static void Consume(string path) {
    using (Listener listener = Listener.Listen(path)) {
      Console.WriteLine("ready");
      Console.Out.Flush();
      using (Channel channel = listener.Accept()) {
        Expect(channel.PeerPid > 0, "the peer's pid");
        Expect(channel.PeerUid == Native.Getuid(), "the peer's uid is not ours");
        using (Tensor t = channel.Receive()) {
          Expect(t.DType == DType.Float32, "dtype " + t.DType);
          Expect(string.Join(",", t.Shape) == "2,3", "shape " + string.Join(",", t.Shape));
          Expect(string.Join(",", t.ToArray<float>()) == "0,1,2,3,4,5",
                 "values " + string.Join(",", t.ToArray<float>()));
          Expect(t.IsShareable, "a received tensor is shareable");
          t.SetElement(100f, 0, 0);
          channel.Send(t);
        }
        using (Tensor copied = channel.Receive()) {
          Expect(copied.DType == DType.Int32, "dtype " + copied.DType);
          Expect(string.Join(",", copied.ToArray<int>()) == "7,8", "copied values");
          Expect((copied.Flags & Tensor.FlagIsCopied) != 0, "IS_COPIED is not set");
        }
        try {
          channel.Receive().Dispose();
          throw new Exception("a receive after the peer closed succeeded");
        } catch (DLPackPeerClosedException e) {
          Expect(e.Status == Status.PeerClosed && e.Message == "the peer closed the channel",
                 "after the peer closed: " + e);
        }
      }
    }
    Console.WriteLine("consume ok");
  }

  static void Produce(string path) {
    using (Channel channel = Channel.Connect(path))
    using (Tensor x = Tensor.AllocateShareable(Device.Cpu, DType.Float32, 2, 3))
    using (Tensor plain = Tensor.FromArray(new[] { 7, 8 }, 2)) {
      x.CopyFrom(new float[] { 0, 1, 2, 3, 4, 5 });
      channel.Send(x);
      using (Tensor back = channel.Receive()) {
        Expect(x.GetElement<float>(0, 0) == 100f, "the consumer's write is not in our tensor");
        Expect(back.GetElement<float>(0, 0) == 100f, "the tensor sent back");
      }
      channel.SendCopy(plain);
    }
    Console.WriteLine("produce ok");
  }

  // The peers' time limit: a peer that stops answering fails the pair instead of hanging it.
  static readonly TimeSpan RemoteLimit = TimeSpan.FromSeconds(120);

  static byte[] HexKey(string hex) {
    Expect(hex.Length % 2 == 0, "KEYHEX has an odd number of digits");
    byte[] key = new byte[hex.Length / 2];
    for (int i = 0; i < key.Length; i++) key[i] = Convert.ToByte(hex.Substring(2 * i, 2), 16);
    return key;
  }

  static void RemoteConsume(string keyHex, string scheme) {
    using (ChannelOptions options = new ChannelOptions()) {
      options.SetKey(HexKey(keyHex)).SetTimeout(RemoteLimit);
      using (Listener listener = Listener.Listen(scheme + "://127.0.0.1:0", options)) {
        Console.WriteLine("ready " + listener.Port);
        Console.Out.Flush();
        using (Channel channel = listener.Accept()) {
          Expect(channel.IsRemote, "the accepted channel is not remote");
          using (Tensor t = channel.Receive()) {
            Expect(t.DType == DType.Float32, "dtype " + t.DType);
            Expect(string.Join(",", t.Shape) == "2,3", "shape " + string.Join(",", t.Shape));
            Expect(string.Join(",", t.ToArray<float>()) == "0,1,2,3,4,5",
                   "values " + string.Join(",", t.ToArray<float>()));
            Expect((t.Flags & Tensor.FlagIsCopied) != 0, "IS_COPIED is not set on the first");
            t.SetElement(100f, 0, 0);
            channel.Send(t);
          }
          using (Tensor t = channel.Receive()) {
            Expect(t.DType == DType.Int32, "dtype " + t.DType);
            Expect(string.Join(",", t.Shape) == "7,8", "shape " + string.Join(",", t.Shape));
            int[] values = t.ToArray<int>();
            for (int i = 0; i < 7; i++) {
              for (int j = 0; j < 8; j++) {
                Expect(values[8 * i + j] == 8 * i + j,
                       "element [" + i + ", " + j + "] is " + values[8 * i + j]);
              }
            }
            Expect((t.Flags & Tensor.FlagIsCopied) != 0, "IS_COPIED is not set on the second");
          }
          try {
            channel.Receive().Dispose();
            throw new Exception("a receive after the peer closed succeeded");
          } catch (DLPackPeerClosedException e) {
            Expect(e.Status == Status.PeerClosed, "after the peer closed: " + e);
          }
        }
      }
    }
    Console.WriteLine("consume ok");
  }

  static void RemoteProduce(string address, string keyHex) {
    using (ChannelOptions options = new ChannelOptions()) {
      options.SetKey(HexKey(keyHex)).SetTimeout(RemoteLimit);
      using (Channel channel = Channel.Connect(address, options))
      using (Tensor x = Tensor.Allocate(Device.Cpu, DType.Float32, 2, 3)) {
        Expect(channel.IsRemote, "the channel is not remote");
        x.CopyFrom(new float[] { 0, 1, 2, 3, 4, 5 });
        channel.Send(x);
        using (Tensor back = channel.Receive()) {
          Expect(back.GetElement<float>(0, 0) == 100f,
                 "the tensor sent back has " + back.GetElement<float>(0, 0));
          Expect(x.GetElement<float>(0, 0) == 0f, "the consumer's write reached our tensor");
        }
        int[] values = new int[7 * 8];
        for (int i = 0; i < values.Length; i++) values[i] = i;  // 8 * row + column
        using (Tensor ints = Tensor.FromArray(values, 7, 8)) channel.Send(ints);
      }
    }
    Console.WriteLine("produce ok");
  }

  // Also the subcommand `ipc-peer` of the C# adapter's program (bindings/csharp/adapter/Host.cs).
  internal static int Main(string[] args) {
    string role = args.Length > 0 ? args[0] : "";
    bool known = ((role == "consume" || role == "produce") && args.Length == 2) ||
                 (role == "remote-consume" && (args.Length == 2 || args.Length == 3)) ||
                 (role == "remote-produce" && args.Length == 3);
    if (!known) {
      Console.Error.WriteLine("usage: IpcPeer.exe consume|produce PATH | remote-consume KEYHEX " +
                              "[SCHEME] | remote-produce ADDRESS KEYHEX");
      return 2;
    }
    try {
      if (role == "consume") Consume(args[1]);
      else if (role == "produce") Produce(args[1]);
      else if (role == "remote-consume") RemoteConsume(args[1], args.Length == 3 ? args[2] : "tcp");
      else RemoteProduce(args[1], args[2]);
      return 0;
    } catch (Exception e) {
      Console.Error.WriteLine("csharp " + args[0] + ": " + e);
      return 1;
    }
  }
}

static class Native {
  [System.Runtime.InteropServices.DllImport("libc", EntryPoint = "getuid")]
  internal static extern uint Getuid();
}
