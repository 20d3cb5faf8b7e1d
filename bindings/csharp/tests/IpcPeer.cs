// IpcPeer.cs - the C# peer of suite ipc's exchange across languages (tests/ipc/README.md, "The
// peer protocol"): `IpcPeer.exe consume PATH` or `IpcPeer.exe produce PATH`. ChannelTest runs it
// as the producer of its own exchange.
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

  static int Main(string[] args) {
    if (args.Length != 2 || (args[0] != "consume" && args[0] != "produce")) {
      Console.Error.WriteLine("usage: IpcPeer.exe consume|produce PATH");
      return 2;
    }
    try {
      if (args[0] == "consume") Consume(args[1]);
      else Produce(args[1]);
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
