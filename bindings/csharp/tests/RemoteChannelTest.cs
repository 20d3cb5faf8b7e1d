// RemoteChannelTest.cs - channels across machines over loopback (docs/remote.md): a listener at
// tcp://127.0.0.1:0 on this thread, a connect on another; the key handshake's refusals at both
// ends; the options' checks, each with the core's status and message. Ignored, with the core's
// reason, where UCX or libcrypto is missing (Channel.RemoteUnavailableReason); the options'
// checks need neither and always run.
using System;
using System.IO;
using System.Threading.Tasks;
using NUnit.Framework;

namespace DLBridge.Tests {
  [TestFixture]
  public class RemoteChannelTest : LeakChecked {
    private const string Loopback = "tcp://127.0.0.1:0";
    // Long enough for a loaded machine, short enough that a lost peer fails the test.
    private static readonly TimeSpan Limit = TimeSpan.FromSeconds(60);
    private static readonly TimeSpan Wait = TimeSpan.FromMinutes(2);

    private static byte[] Key(int seed) {
      byte[] k = new byte[32];
      for (int i = 0; i < k.Length; i++) k[i] = unchecked((byte)(seed + 7 * i));
      return k;
    }

    private static ChannelOptions Options(byte[] key) {
      ChannelOptions o = new ChannelOptions();
      try {
        if (key != null) o.SetKey(key);
        return o.SetTimeout(Limit);
      } catch {
        o.Dispose();
        throw;
      }
    }

    private static void AssumeRemote() {
      DLPackException why = Channel.RemoteUnavailableReason;
      if (why != null) Assert.Ignore("remote channels are not available here: " + why.Message);
    }

    private static Task<Channel> ConnectLater(int port, ChannelOptions options) {
      return Task.Run(() => Channel.Connect("tcp://127.0.0.1:" + port, options));
    }

    private static T Finished<T>(Task<T> task) {
      Assert.IsTrue(task.Wait(Wait), "the other thread did not finish");
      return task.Result;
    }

    // Disposes `client` on another thread while `server` waits in a Receive, which ends with the
    // peer closed. As between two processes, the server's side runs while the client's close says
    // goodbye (a close flushes what it sent to a peer that takes it).
    private static void HangUp(Channel client, Channel server) {
      Task closing = Task.Run(() => client.Dispose());
      DLPackPeerClosedException end = Assert.Throws<DLPackPeerClosedException>(() => server.Receive());
      Assert.AreEqual(Status.PeerClosed, end.Status);
      StringAssert.StartsWith("waiting for a tensor: the peer at tcp://127.0.0.1:", end.Message);
      Assert.IsTrue(closing.Wait(Wait), "the client's Dispose did not return");
    }

    [Test]
    public void ATensorCrossesLoopbackCopiedBothWays() {
      AssumeRemote();
      using (ChannelOptions options = Options(Key(1)))
      using (Listener listener = Listener.Listen(Loopback, options)) {
        Assert.IsTrue(listener.IsRemote);
        int port = listener.Port;
        Assert.That(port, Is.InRange(1, 65535));
        Task<Channel> connecting = ConnectLater(port, options);
        using (Channel server = listener.Accept())
        using (Channel client = Finished(connecting))
        using (Tensor x = Tensor.FromArray(new float[] { 0, 1, 2, 3, 4, 5 }, 2, 3)) {
          Assert.IsTrue(server.IsRemote && client.IsRemote);
          Assert.Greater(client.Port, 0);
          Assert.IsFalse(x.IsShareable, "a remote channel sends any tensor");
          client.Send(x);
          using (Tensor got = server.Receive()) {
            Assert.AreEqual(DType.Float32, got.DType);
            Assert.AreEqual(new long[] { 2, 3 }, got.Shape);
            Assert.AreEqual(new float[] { 0, 1, 2, 3, 4, 5 }, got.ToArray<float>());
            Assert.AreNotEqual(0UL, got.Flags & Tensor.FlagIsCopied);
            Assert.AreEqual(Device.Cpu, got.Device);
            got.SetElement(100f, 0, 0);
            server.Send(got);
          }
          using (Tensor back = client.Receive()) {
            Assert.AreEqual(100f, back.GetElement<float>(0, 0));
            Assert.AreNotEqual(0UL, back.Flags & Tensor.FlagIsCopied);
          }
          Assert.AreEqual(0f, x.GetElement<float>(0, 0), "the bytes were copied, not shared");
          int[] values = new int[7 * 8];
          for (int i = 0; i < values.Length; i++) values[i] = i;
          using (Tensor ints = Tensor.FromArray(values, 7, 8)) client.Send(ints);
          using (Tensor got = server.Receive()) {
            Assert.AreEqual(DType.Int32, got.DType);
            Assert.AreEqual(values, got.ToArray<int>());
            Assert.AreNotEqual(0UL, got.Flags & Tensor.FlagIsCopied);
          }
          HangUp(client, server);
        }
      }
    }

    [Test]
    public void ATransposeArrivesCompactOrWithItsStridesWhenSentKeepingLayout() {
      AssumeRemote();
      using (ChannelOptions options = Options(Key(3)))
      using (Listener listener = Listener.Listen(Loopback, options)) {
        Task<Channel> connecting = ConnectLater(listener.Port, options);
        using (Channel server = listener.Accept())
        using (Channel client = Finished(connecting))
        using (Tensor x = Tensor.FromArray(new float[] { 0, 1, 2, 3, 4, 5 }, 2, 3))
        using (Tensor xt = x.Transpose()) {
          client.Send(xt);
          client.SendKeepingLayout(xt);
          float[] want = { 0, 3, 1, 4, 2, 5 };
          using (Tensor packed = server.Receive()) {
            Assert.AreEqual(new long[] { 2, 1 }, packed.Strides);
            Assert.AreEqual(want, packed.ToArray<float>());
          }
          using (Tensor kept = server.Receive()) {
            Assert.AreEqual(new long[] { 1, 3 }, kept.Strides);
            Assert.AreEqual(want, kept.ToArray<float>());
          }
          HangUp(client, server);
        }
      }
    }

    [Test]
    public void AStreamSentWithSendMoreArrivesWholeAndInOrder() {
      AssumeRemote();
      const int count = 20;
      using (ChannelOptions options = Options(Key(4)))
      using (Listener listener = Listener.Listen(Loopback, options)) {
        Task<Channel> connecting = ConnectLater(listener.Port, options);
        using (Channel server = listener.Accept())
        using (Channel client = Finished(connecting)) {
          for (int i = 0; i < count; i++) {
            float[] values = new float[i + 1];
            for (int j = 0; j <= i; j++) values[j] = i * 100 + j;
            using (Tensor x = Tensor.FromArray(values, i + 1)) {
              if (i < count - 1) client.SendMore(x);
              else client.Send(x);
            }
          }
          for (int i = 0; i < count; i++) {
            float[] want = new float[i + 1];
            for (int j = 0; j <= i; j++) want[j] = i * 100 + j;
            using (Tensor got = server.Receive()) {
              Assert.AreEqual(DType.Float32, got.DType);
              Assert.AreEqual(new long[] { i + 1 }, got.Shape, "tensor " + i);
              Assert.AreEqual(want, got.ToArray<float>(), "tensor " + i);
              Assert.AreNotEqual(0UL, got.Flags & Tensor.FlagIsCopied);
            }
          }
          HangUp(client, server);
        }
      }
    }

    [Test]
    public void AWrongKeyIsRefusedAtBothEndsAndTheListenerServesOn() {
      AssumeRemote();
      using (ChannelOptions right = Options(Key(1)))
      using (ChannelOptions wrong = Options(Key(2)))
      using (Listener listener = Listener.Listen(Loopback, right)) {
        int port = listener.Port;
        Task<Channel> refused = ConnectLater(port, wrong);
        DLPackPermissionException accepted =
            Assert.Throws<DLPackPermissionException>(() => listener.Accept());
        Assert.AreEqual(Status.Permission, accepted.Status);
        StringAssert.StartsWith("refused the peer at tcp://127.0.0.1:", accepted.Message);
        StringAssert.EndsWith(": it did not prove it holds the channel's key", accepted.Message);
        AggregateException failed = Assert.Throws<AggregateException>(() => refused.Wait(Wait));
        DLPackPermissionException connected =
            failed.InnerException as DLPackPermissionException;
        Assert.IsNotNull(connected, failed.InnerException.ToString());
        Assert.AreEqual(Status.Permission, connected.Status);
        Assert.AreEqual("the listener at tcp://127.0.0.1:" + port + " refused this channel's key",
                        connected.Message);
        Task<Channel> admitted = ConnectLater(port, right);
        using (Channel server = listener.Accept())
        using (Channel client = Finished(admitted)) {
          Assert.IsTrue(server.IsRemote && client.IsRemote);
          HangUp(client, server);
        }
      }
    }

    [Test]
    public void ARemoteListenerNeedsAKey() {
      AssumeRemote();
      const string message = "a remote channel needs a key that its peers share " +
                             "(dlb_channel_options_set_key)";
      using (ChannelOptions keyless = Options(null)) {
        TestUtil.Throws(Status.InvalidArgument, message,
                        () => Listener.Listen(Loopback, keyless).Dispose());
      }
      TestUtil.Throws(Status.InvalidArgument, message, () => Listener.Listen(Loopback, null).Dispose());
    }

    [Test]
    public void TheOptionsRefuseWhatTheCoreRefusesAndKeepWhatTheyHad() {
      using (ChannelOptions options = new ChannelOptions()) {
        foreach (int length in new[] { 0, 15, 1025, 4000 }) {
          TestUtil.Throws(Status.InvalidArgument, "a key of " + length + " bytes: a channel's key " +
                          "has 16 to 1024 bytes (random ones: 32 is plenty)",
                          () => options.SetKey(new byte[length]));
        }
        Assert.AreEqual(16u, ChannelOptions.MinKeyBytes);
        Assert.AreEqual(1024u, ChannelOptions.MaxKeyBytes);
        options.SetKey(new byte[ChannelOptions.MinKeyBytes]).SetKey(new byte[ChannelOptions.MaxKeyBytes]);
        TestUtil.Throws(Status.InvalidArgument, "a maximum tensor size of 0 bytes: at least 1",
                        () => options.SetMaxTensorBytes(0));
        TestUtil.Throws(Status.InvalidArgument, "a maximum of 0 tensors in flight: 1 to 65536",
                        () => options.SetMaxInFlight(0));
        TestUtil.Throws(Status.InvalidArgument, "a maximum of 65537 tensors in flight: 1 to 65536",
                        () => options.SetMaxInFlight(65537));
        TestUtil.Throws(Status.InvalidArgument,
                        "timeout -500 ns is negative: a time limit is 0 ns or more, or none",
                        () => options.SetTimeout(TimeSpan.FromTicks(-5)));
        TestUtil.Throws(Status.Unsupported, "a remote channel receives into cpu, cuda_host, cuda " +
                        "or cuda_managed memory, not opencl",
                        () => options.SetReceiveDevice(Device.OpenCL(0)));
        Assert.Throws<ArgumentNullException>(() => options.SetKey(null));
        options.SetMaxTensorBytes(ulong.MaxValue).SetMaxInFlight(65536).SetTimeout(null)
            .SetTimeout(TimeSpan.Zero).SetReceiveDevice(Device.Cpu).SetListenerUid(Channel.UidSelf);
        Assert.AreEqual(1UL << 30, ChannelOptions.DefaultMaxTensorBytes);
        Assert.AreEqual(64u, ChannelOptions.DefaultMaxInFlight);
      }
    }

    [Test]
    public void DisposedOptionsRefuseEveryUse() {
      ChannelOptions options = new ChannelOptions();
      options.Dispose();
      options.Dispose();
      foreach (TestDelegate use in new TestDelegate[] {
          () => options.SetKey(Key(1)),
          () => options.SetMaxInFlight(1),
          () => Listener.Listen(Loopback, options),
          () => Channel.Connect("tcp://127.0.0.1:1", options) }) {
        ObjectDisposedException e = Assert.Throws<ObjectDisposedException>(use);
        Assert.AreEqual("ChannelOptions", e.ObjectName);
      }
    }

    [Test]
    public void OptionsMakeLocalChannelsToo() {
      string dir = Path.Combine(Path.GetTempPath(), "dlbridge-cs-" + Guid.NewGuid().ToString("N"));
      string path = Path.Combine(dir, "local.sock");
      try {
        using (ChannelOptions options = Options(Key(3)))
        using (Listener listener = Listener.Listen(path, options))
        using (Channel client = Channel.Connect(path, options))
        using (Channel server = listener.Accept()) {
          Assert.IsFalse(listener.IsRemote);
          Assert.AreEqual(-1, listener.Port);
          Assert.IsFalse(client.IsRemote || server.IsRemote);
          Assert.AreEqual(-1, client.Port);
          Assert.AreEqual(System.Diagnostics.Process.GetCurrentProcess().Id, server.PeerPid);
        }
      } finally {
        if (Directory.Exists(dir)) Directory.Delete(dir, true);
      }
    }

    [Test]
    public void RemoteAvailabilityIsTheCoresAnswer() {
      DLPackException why = Channel.RemoteUnavailableReason;
      if (why != null) {
        Assert.AreEqual(Status.Unsupported, why.Status);
        Assert.IsNotEmpty(why.Message);
      }
      Assert.AreEqual(why == null, Channel.RemoteIsAvailable);
    }
  }
}
