// ChannelTest.cs - tensors across processes: this process listens and consumes, IpcPeer.exe in
// its own mono produces (tests/ipc/README.md, "The peer protocol"); and what every Listener and
// Channel does after Dispose, also from another thread while a call is blocked.
using System;
using System.Diagnostics;
using System.IO;
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
      string build = Environment.GetEnvironmentVariable("DLBRIDGE_CSHARP_BUILD_DIR");
      string mono = Environment.GetEnvironmentVariable("DLBRIDGE_MONO");
      if (build == null || mono == null) Assert.Ignore("run through run_nunit.py");
      using (Listener listener = Listener.Listen(SocketPath)) {
        ProcessStartInfo info = new ProcessStartInfo(mono,
            Path.Combine(build, "IpcPeer.exe") + " produce " + SocketPath);
        info.UseShellExecute = false;
        info.RedirectStandardOutput = true;
        info.RedirectStandardError = true;
        info.WorkingDirectory = build;
        using (Process producer = Process.Start(info))
        using (Channel channel = listener.Accept()) {
          Assert.AreEqual(producer.Id, channel.PeerPid);
          using (Tensor t = channel.Receive()) {
            Assert.AreEqual(new long[] { 2, 3 }, t.Shape);
            Assert.AreEqual(new float[] { 0, 1, 2, 3, 4, 5 }, t.ToArray<float>());
            Assert.IsTrue(t.IsShareable);
            t.SetElement(100f, 0, 0);
            channel.Send(t);
          }
          using (Tensor copied = channel.Receive()) {
            Assert.AreEqual(new[] { 7, 8 }, copied.ToArray<int>());
            Assert.AreNotEqual(0UL, copied.Flags & Tensor.FlagIsCopied);
          }
          DLPackException end = Assert.Throws<DLPackException>(() => channel.Receive());
          Assert.AreEqual(Status.Device, end.Status);
          Assert.AreEqual("the peer closed the channel", end.Message);
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
        DLPackException e = Assert.Throws<DLPackException>(() => client.Send(plain));
        Assert.AreEqual(Status.Unsupported, e.Status);
        Assert.AreEqual("the tensor's memory is not shareable: allocate it with " +
                        "dlb_tensor_allocate_shareable, or send with DLB_SEND_COPY", e.Message);
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
                            "dlb_channel_send_cuda sends cuda tensors, not cpu ones: use dlb_channel_send", send);
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
    public void ListenRefusesAFolderOthersCanEnter() {
      Directory.CreateDirectory(dir);
      // Mode 0755: not the user's alone (the core's check and message).
      Process.Start("chmod", "755 " + dir).WaitForExit();
      DLPackArgumentException e = Assert.Throws<DLPackArgumentException>(() => Listener.Listen(SocketPath));
      Assert.AreEqual(Status.InvalidArgument, e.Status);
      Assert.AreEqual("folder '" + dir + "' can be entered by other users (mode 0755): a channel's " +
                      "socket must live in a folder only its user can enter (mode 0700)", e.Message);
    }
  }
}
