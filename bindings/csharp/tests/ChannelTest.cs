// ChannelTest.cs - tensors across processes: this process listens and consumes, the C peer of
// suite ipc-languages ($DLBRIDGE_IPC_PEER, tests/ipc/ipc_peer.c) produces (tests/ipc/README.md,
// "The peer protocol"); what every Listener and Channel does after Dispose, also from another
// thread while a call is blocked; the channel's own statuses and time limits; and, against the
// parity rows' C peer ($DLBRIDGE_PARITY_PEER, tests/Peer.cs), a peer that sends half a frame, a
// forged descriptor, and two users sharing both ways (as root).
using System;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Threading;
using NUnit.Framework;

namespace DLBridge.Tests {
  [TestFixture]
  public class ChannelTest {
    private string dir;

    [SetUp]
    public void MakeFolder() {
      dir = Path.Combine(Path.GetTempPath(), "dlbridge-cs-" + Guid.NewGuid().ToString("N"));
    }

    [TearDown]
    public void RemoveFolder() {
      if (Directory.Exists(dir)) Directory.Delete(dir, true);
    }

    private string SocketPath { get { return Path.Combine(dir, "channel.sock"); } }

    private static void ExpectClosed(TestDelegate call) {
      DLPackClosedException e = Assert.Throws<DLPackClosedException>(call);
      Assert.AreEqual(Status.Closed, e.Status);
      Assert.AreEqual("the channel is closed", e.Message);
      Assert.AreEqual("Channel", e.ObjectName);
    }

    [Test]
    public void TensorsCrossProcessesWithoutACopy() {
      string peer = Environment.GetEnvironmentVariable("DLBRIDGE_IPC_PEER");
      if (string.IsNullOrEmpty(peer)) {
        Assert.Ignore("DLBRIDGE_IPC_PEER is not set (run through meson test)");
      }
      using (Listener listener = Listener.Listen(SocketPath)) {
        listener.SetTimeout(TimeSpan.FromSeconds(60));  // a producer that died fails the test
        ProcessStartInfo info = new ProcessStartInfo(peer, "produce " + SocketPath);
        info.UseShellExecute = false;
        info.RedirectStandardOutput = true;
        info.RedirectStandardError = true;
        using (Process producer = Process.Start(info))
        using (Channel channel = listener.Accept()) {
          Assert.AreEqual(producer.Id, channel.PeerPid);
          using (Tensor t = channel.Receive()) {
            Assert.AreEqual(DType.Float32, t.DType);
            Assert.AreEqual(new long[] { 2, 3 }, t.Shape);
            Assert.AreEqual(new float[] { 0, 1, 2, 3, 4, 5 }, t.ToArray<float>());
            Assert.IsTrue(t.IsShareable);
            Assert.AreEqual(0UL, t.Flags & Tensor.FlagIsCopied, "the producer's memory, mapped");
            // The producer checks that this write is in its own tensor (its exit status).
            t.SetElement(100f, 0, 0);
            channel.Send(t);
          }
          using (Tensor copied = channel.Receive()) {
            Assert.AreEqual(DType.Float32, copied.DType);
            Assert.AreEqual(new long[] { 7, 8 }, copied.Shape);
            float[] iota = Enumerable.Range(0, 56).Select(i => (float)i).ToArray();
            Assert.AreEqual(iota, copied.ToArray<float>());
            Assert.AreNotEqual(0UL, copied.Flags & Tensor.FlagIsCopied);
          }
          TestUtil.Throws(Status.PeerClosed, "the peer closed the channel", () => channel.Receive());
          string output = producer.StandardOutput.ReadToEnd();
          string errors = producer.StandardError.ReadToEnd();
          producer.WaitForExit();
          Assert.AreEqual(0, producer.ExitCode, output + errors);
          Assert.AreEqual("produce ok", output.Trim());
        }
      }
    }

    [Test]
    public void MemoryThatIsNotShareableIsRefusedOrCopied() {
      using (Listener listener = Listener.Listen(SocketPath))
      using (Channel client = Channel.Connect(SocketPath))
      using (Channel server = listener.Accept())
      using (Tensor plain = Tensor.FromArray(new[] { 1, 2, 3 }, 3)) {
        Assert.IsFalse(plain.IsShareable);
        TestUtil.Throws(Status.Unsupported, "the tensor's memory is not shareable: allocate it as " +
                        "shareable memory, or send a copy", () => client.Send(plain));
        client.SendCopy(plain);
        using (Tensor got = server.Receive()) {
          Assert.AreEqual(new[] { 1, 2, 3 }, got.ToArray<int>());
          Assert.AreNotEqual(0UL, got.Flags & Tensor.FlagIsCopied);
        }
        Assert.AreEqual(System.Diagnostics.Process.GetCurrentProcess().Id, server.PeerPid);
      }
    }

    // The CUDA half of channels where it runs without a GPU: the kinds of shareable memory, and
    // the refusals of the CUDA calls for host tensors (or, built without CUDA, their
    // UNSUPPORTED). The GPU cases are the core's suite ipc (tests/ipc/test_ipc_cuda.cc).
    [Test]
    public void CudaSendsAndWaitsRefuseHostTensorsWithTheCoreMessages() {
      DLPackException reason = Cuda.UnavailableReason;
      bool builtWithoutCuda = reason != null && reason.Status == Status.Unsupported;
      using (Listener listener = Listener.Listen(SocketPath))
      using (Channel client = Channel.Connect(SocketPath))
      using (Channel server = listener.Accept())
      using (Tensor host = Tensor.AllocateShareable(Device.Cpu, DType.Float32, 4))
      using (Tensor plain = Tensor.FromArray(new[] { 1, 2 }, 2)) {
        Assert.AreEqual(Shareable.Memfd, host.ShareableKind);
        Assert.AreEqual(Shareable.None, plain.ShareableKind);
        TestDelegate send = () => client.SendCuda(host, IntPtr.Zero);
        client.Send(host);
        using (Tensor got = server.Receive()) {
          Assert.AreEqual(Shareable.Memfd, got.ShareableKind);
          TestDelegate wait = () => got.CudaWaitReceived(1);
          if (builtWithoutCuda) {
            TestUtil.Throws(Status.Unsupported, "dlbridge was built without CUDA support", send);
            TestUtil.Throws(Status.Unsupported, "dlbridge was built without CUDA support", wait);
          } else {
            TestUtil.Throws(Status.InvalidArgument,
                            "the cuda send takes cuda tensors, not cpu ones: send it without a stream", send);
            TestUtil.Throws(Status.InvalidArgument, "the tensor is not cuda memory received from a channel", wait);
          }
        }
      }
    }

    [Test]
    public void AfterDisposeEveryCallThrowsChannelClosed() {
      Listener listener = Listener.Listen(SocketPath);
      Channel client = Channel.Connect(SocketPath);
      Channel server = listener.Accept();
      using (Tensor x = Tensor.AllocateShareable(Device.Cpu, DType.Float32, 2)) {
        client.Dispose();
        client.Dispose();
        ExpectClosed(() => client.Send(x));
        ExpectClosed(() => client.SendCopy(x));
        ExpectClosed(() => client.Receive());
        ExpectClosed(() => { int unused = client.PeerPid; });
        ExpectClosed(() => client.AllowUid(1));
        listener.Dispose();
        ExpectClosed(() => listener.Accept());
        ExpectClosed(() => listener.AllowUid(1));
        Assert.IsFalse(File.Exists(SocketPath), "the socket file is removed");
        server.Dispose();
      }
    }

    [Test]
    public void DisposeFromAnotherThreadWakesBlockedCalls() {
      Listener listener = Listener.Listen(SocketPath);
      using (Channel client = Channel.Connect(SocketPath)) {
        Channel server = listener.Accept();
        Exception received = null, accepted = null;
        Thread receiver = new Thread(() => {
          try { server.Receive().Dispose(); } catch (Exception e) { received = e; }
        });
        Thread acceptor = new Thread(() => {
          try { listener.Accept().Dispose(); } catch (Exception e) { accepted = e; }
        });
        receiver.Start();
        acceptor.Start();
        Thread.Sleep(50);  // both block: nothing is sent, nobody connects (late is fine too)
        server.Dispose();
        listener.Dispose();
        Assert.IsTrue(receiver.Join(10000) && acceptor.Join(10000), "a blocked call was not woken");
        foreach (Exception e in new[] { received, accepted }) {
          Assert.IsInstanceOf<DLPackClosedException>(e);
          Assert.AreEqual("the channel is closed", e.Message);
        }
      }
    }

    [Test]
    public void AListenerNobodyDisposedIsClosedByItsFinalizerAndADisposedOneNotAgain() {
      string reused = Path.Combine(dir, "reused.sock"), dropped = Path.Combine(dir, "dropped.sock");
      // The disposed listener's native channel is freed, and the next one at its path may get its
      // very address: a second close of the first would take the second's socket file with it.
      // Made on threads that end, so that no stack slot of this one keeps them reachable.
      RunOnAThread(() => Listener.Listen(reused).Dispose());
      using (Listener live = Listener.Listen(reused)) {
        RunOnAThread(() => Listener.Listen(dropped));
        Assert.IsTrue(File.Exists(dropped));
        for (int i = 0; i < 200 && File.Exists(dropped); i++) {
          GC.Collect();
          GC.WaitForPendingFinalizers();
          Thread.Sleep(10);
        }
        Assert.IsFalse(File.Exists(dropped), "the dropped listener's socket file is still there");
        using (Channel client = Channel.Connect(reused))
        using (Channel server = live.Accept()) {
          Assert.AreEqual(Process.GetCurrentProcess().Id, server.PeerPid);
        }
      }
    }

    private static void RunOnAThread(ThreadStart work) {
      Thread thread = new Thread(work);
      thread.Start();
      thread.Join();
    }

    [Test]
    public void ListenRefusesAFolderOthersCanEnter() {
      Directory.CreateDirectory(dir);
      // Mode 0755: not the user's alone (the core's check and message).
      Process.Start("chmod", "755 " + dir).WaitForExit();
      TestUtil.Throws(Status.Permission, "folder '" + dir + "' can be entered by other users (mode 0755): " +
                      "a channel's socket must live in a folder only its user can enter (mode 0700)",
                      () => Listener.Listen(SocketPath));
      Assert.Throws<DLPackPermissionException>(() => Listener.Listen(SocketPath));
    }

    [Test]
    public void NothingListeningIsNoListener() {
      string message = "nothing listens at '" + SocketPath + "' (No such file or directory)";
      TestUtil.Throws(Status.NoListener, message, () => Channel.Connect(SocketPath));
      TestUtil.Throws(Status.NoListener, message,
                      () => Channel.Connect(SocketPath, Channel.UidSelf, TimeSpan.FromSeconds(1)));
      // An IOException to a .NET caller.
      Assert.Throws<DLPackNoListenerException>(() => Channel.Connect(SocketPath));
      Assert.Catch<IOException>(() => Channel.Connect(SocketPath));
    }

    [Test]
    public void APeerThatClosedIsPeerClosed() {
      using (Listener listener = Listener.Listen(SocketPath)) {
        Channel client = Channel.Connect(SocketPath);
        using (Channel server = listener.Accept()) {
          client.Dispose();
          TestUtil.Throws(Status.PeerClosed, "the peer closed the channel", () => server.Receive());
          TestUtil.Throws(Status.PeerClosed, "the peer closed the channel", () => server.Receive());
          Assert.Catch<IOException>(() => server.Receive());
        }
      }
    }

    [Test]
    public void TimeLimitsOfReceiveAcceptAndConnect() {
      using (Listener listener = Listener.Listen(SocketPath))
      using (Tensor x = Tensor.AllocateShareable(Device.Cpu, DType.Int32, 2)) {
        // Nothing was sent: the time limit runs out, and the channel stays usable.
        using (Channel client = Channel.Connect(SocketPath))
        using (Channel server = listener.Accept()) {
          server.SetTimeout(TimeSpan.FromMilliseconds(50));
          Stopwatch clock = Stopwatch.StartNew();
          TestUtil.Throws(Status.Timeout, "receiving on the channel: the time limit ran out", () => server.Receive());
          Assert.GreaterOrEqual(clock.ElapsedMilliseconds, 40);
          Assert.Catch<TimeoutException>(() => server.Receive());
          x.CopyFrom(new[] { 5, 6 });
          client.Send(x);
          using (Tensor got = server.Receive()) Assert.AreEqual(new[] { 5, 6 }, got.ToArray<int>());
          server.SetTimeout(null);
          server.SetTimeout(Timeout.InfiniteTimeSpan);
          server.SetTimeout(TimeSpan.MaxValue);
          client.Send(x);
          using (Tensor got = server.Receive()) Assert.AreEqual(new[] { 5, 6 }, got.ToArray<int>());
          // The core's refusal of a negative limit, in nanoseconds (a tick is 100 ns).
          TestUtil.Throws(Status.InvalidArgument, "timeout -500 ns is negative: a time limit is 0 ns or more, or none",
                          () => server.SetTimeout(TimeSpan.FromTicks(-5)));
        }
        // A listener's limit applies to Accept (TimeSpan.Zero: do not wait) and passes on.
        listener.SetTimeout(TimeSpan.Zero);
        TestUtil.Throws(Status.Timeout, "waiting for a connection: the time limit ran out", () => listener.Accept());
        using (Channel client = Channel.Connect(SocketPath))
        using (Channel server = listener.Accept()) {
          TestUtil.Throws(Status.Timeout, "receiving on the channel: the time limit ran out", () => server.Receive());
        }
        listener.SetTimeout(null);
        // Connect's limit stays the channel's.
        using (Channel client = Channel.Connect(SocketPath, Channel.UidSelf, TimeSpan.FromMilliseconds(20)))
        using (Channel server = listener.Accept()) {
          TestUtil.Throws(Status.Timeout, "receiving on the channel: the time limit ran out", () => client.Receive());
          server.Send(x);
          using (Tensor got = client.Receive()) Assert.AreEqual(new[] { 5, 6 }, got.ToArray<int>());
        }
        TestUtil.Throws(Status.InvalidArgument, "timeout -100 ns is negative: a time limit is 0 ns or more, or none",
                        () => Channel.Connect(SocketPath, Channel.UidSelf, TimeSpan.FromTicks(-1)));
      }
      ExpectClosedAfterDispose();
    }

    private void ExpectClosedAfterDispose() {
      Listener listener = Listener.Listen(SocketPath);
      Channel client = Channel.Connect(SocketPath);
      client.Dispose();
      listener.Dispose();
      ExpectClosed(() => client.SetTimeout(null));
      ExpectClosed(() => listener.SetTimeout(TimeSpan.Zero));
    }

    // ---- against the parity rows' C peer ----------------------------------------------------

    [Test]
    public void APoolTensorIsFilledSentAndItsSlotComesBack() {
      using (Listener listener = Listener.Listen(SocketPath))
      using (Channel sender = Channel.Connect(SocketPath))
      using (Channel receiver = listener.Accept()) {
        PoolStats fresh = sender.PoolStats;
        Assert.AreEqual(0UL, fresh.Segments);
        Assert.AreEqual(Channel.PoolDefaultLimit, fresh.Limit);
        using (Tensor t = sender.Allocate(DType.Float32, 2, 3)) {
          Assert.IsTrue(t.IsExclusive, "not sent yet");
          t.CopyFrom(new float[] { 1, 2, 3, 4, 5, 6 });
          sender.Send(t);
          using (Tensor got = receiver.Receive()) {
            Assert.AreEqual(new float[] { 1, 2, 3, 4, 5, 6 }, got.ToArray<float>());
            Assert.IsFalse(got.IsShareable);
            TestUtil.Throws(Status.Unsupported, "the tensor was lent by its sender's pool and goes " +
                            "back to it when freed: it cannot be sent on; send a copy",
                            () => receiver.Send(got));
            Assert.AreEqual(1UL, sender.PoolStats.Lent);
          }
        }
        PoolStats stats = sender.PoolStats;
        Assert.AreEqual(0UL, stats.Lent, stats.ToString());
        Assert.AreEqual(1UL, stats.Returned, stats.ToString());
        Assert.AreEqual(0UL, stats.Live, stats.ToString());
        Assert.AreEqual(1UL, stats.Segments, stats.ToString());
        Assert.That(stats.HugePages, Is.EqualTo(PoolStats.HugePagesNone)
            .Or.EqualTo(PoolStats.HugePagesTransparent).Or.EqualTo(PoolStats.HugePagesHugeTlb));
        TestUtil.Throws(Status.InvalidArgument, "a pool limit of 0 bytes leaves no room",
                        () => sender.SetPoolLimit(0));
        sender.SetPoolLimit(1 << 20);
        TestUtil.Throws(Status.Limit, "a tensor of 4 bytes needs a pool segment of 2097152 bytes, " +
                        "more than the channel's pool limit of 1048576 bytes " +
                        "(dlb_channel_set_pool_limit)", () => sender.Allocate(DType.UInt8, 4));
      }
    }

    private static void NeedPeer() {
      if (string.IsNullOrEmpty(Peer.Program)) Assert.Ignore("DLBRIDGE_PARITY_PEER is not set (run through meson test)");
    }

    private static void NeedRoot() {
      NeedPeer();
      if (!Posix.IsRoot) Assert.Ignore("needs root to run a peer as another user");
    }

    // Listens, starts the peer with `args` (PATH: the socket's path) and accepts it (within 10 s);
    // `body` runs on the channel. Channel and listener are closed before the peer is reaped.
    private void WithAcceptedPeer(string[] args, Action<Listener> prepare, Action<Channel, Peer> body) {
      Peer peer = null;
      try {
        using (Listener listener = Listener.Listen(SocketPath)) {
          if (prepare != null) prepare(listener);
          peer = new Peer(args.Select(a => a == "PATH" ? SocketPath : a).ToArray());
          listener.SetTimeout(TimeSpan.FromSeconds(10));
          using (Channel channel = listener.Accept()) body(channel, peer);
        }
        Assert.AreEqual(0, peer.Reap(), "the peer's exit status");
      } finally {
        if (peer != null) peer.Dispose();
      }
    }

    [Test]
    public void APeerThatSendsHalfAFrameTimesOutAndTheChannelIsOutOfStep() {
      NeedPeer();
      WithAcceptedPeer(new[] { "half", "PATH" }, null, (channel, peer) => {
        channel.SetTimeout(TimeSpan.FromMilliseconds(100));
        TestUtil.Throws(Status.Timeout, "receiving on the channel: the time limit ran out", () => channel.Receive());
        string lost = "the channel lost its place in the stream when a time limit ran out in the middle of a " +
                      "tensor: close it";
        TestUtil.Throws(Status.Protocol, lost, () => channel.Receive());
        using (Tensor x = Tensor.AllocateShareable(Device.Cpu, DType.Float32, 1)) {
          TestUtil.Throws(Status.Protocol, lost, () => channel.Send(x));
        }
      });
    }

    [Test]
    public void AForgedDescriptorIsProtocolAndAPeerThatLeftIsPeerClosed() {
      NeedPeer();
      WithAcceptedPeer(new[] { "forge", "PATH" }, null, (channel, peer) => {
        channel.SetTimeout(TimeSpan.FromSeconds(10));
        TestUtil.Throws(Status.Protocol, "dtype float with 33 bits is not a valid DLPack type", () => channel.Receive());
      });
      WithAcceptedPeer(new[] { "connect-close", "PATH" }, null, (channel, peer) => {
        channel.SetTimeout(TimeSpan.FromSeconds(10));
        Assert.AreEqual(peer.Id, channel.PeerPid);
        TestUtil.Throws(Status.PeerClosed, "the peer closed the channel", () => channel.Receive());
      });
    }

    [Test]
    public void TwoUsersShareWhenTheListenerAllowsTheOther() {
      NeedRoot();
      Action<Listener> widen = listener => {
        Posix.Chmod(dir, "711");
        Posix.Chmod(SocketPath, "666");
      };
      string[] nobody = { "connect-as", "65534", "0", "PATH" };
      // Not allowed: refused at Accept with its own status (the peer gives up: exit status 1).
      Peer refused = null;
      using (Listener listener = Listener.Listen(SocketPath)) {
        widen(listener);
        listener.SetTimeout(TimeSpan.FromSeconds(10));
        refused = new Peer(nobody.Select(a => a == "PATH" ? SocketPath : a).ToArray());
        try {
          TestUtil.Throws(Status.Permission, "the peer runs as uid 65534, which this channel does not accept " +
                          "(allow that uid on the listener)", () => listener.Accept());
          Assert.AreEqual(1, refused.Reap());
        } finally {
          refused.Dispose();
        }
      }
      // Allowed: the tensor goes to uid 65534 and comes back. (The folder must be 0700 again
      // when the listener is made: it is widened after Listen.)
      Posix.Chmod(dir, "700");
      WithAcceptedPeer(nobody, listener => { listener.AllowUid(65534); widen(listener); }, (channel, peer) => {
        Assert.AreEqual(65534u, channel.PeerUid);
        channel.SetTimeout(TimeSpan.FromSeconds(10));
        using (Tensor t = Tensor.AllocateShareable(Device.Cpu, DType.Float32, 4)) {
          t.CopyFrom(new float[] { 0, 1, 2, 3 });
          channel.Send(t);
          using (Tensor back = channel.Receive()) {
            Assert.AreEqual(new float[] { 0, 1, 2, 3 }, back.ToArray<float>());
            t.SetElement(7f, 0);
            Assert.AreEqual(7f, back.GetElement<float>(0), "the same memory in both users' processes");
          }
        }
      });
    }

    [Test]
    public void TwoUsersShareWhenTheConnectorNamesTheListenersUid() {
      NeedRoot();
      // A plain Connect refuses a listener of another user.
      using (Peer peer = new Peer("listen-as", "65534", "0")) {
        string path = peer.ReadLine();
        Assert.IsNotNull(path, "the peer printed no socket path");
        TestUtil.Throws(Status.Permission, "the listener runs as uid 65534, which this channel does not accept " +
                        "(name that uid when connecting)", () => Channel.Connect(path));
        Assert.AreEqual(0, peer.Reap());
      }
      // Named, it is accepted; the channel keeps the connect's time limit.
      using (Peer peer = new Peer("listen-as", "65534", "0")) {
        string path = peer.ReadLine();
        Assert.IsNotNull(path, "the peer printed no socket path");
        using (Channel channel = Channel.Connect(path, 65534, TimeSpan.FromSeconds(10))) {
          Assert.AreEqual(65534u, channel.PeerUid);
          Assert.AreEqual(peer.Id, channel.PeerPid);
          using (Tensor t = channel.Receive()) Assert.AreEqual(new float[] { 0, 1, 2, 3 }, t.ToArray<float>());
          TestUtil.Throws(Status.Timeout, "receiving on the channel: the time limit ran out",
                          () => { channel.SetTimeout(TimeSpan.FromMilliseconds(20)); channel.Receive(); });
        }
        Assert.AreEqual(0, peer.Reap());
      }
    }
  }
}
