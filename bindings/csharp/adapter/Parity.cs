// Parity.cs - the parity rows (tests/parity/parity_table.tsv, README.md there) through the C#
// binding's public API, the subcommand `parity` of the C# adapter's program (DLBridge.Adapter.exe,
// Host.cs), with the foreign DLPack producer the NUnit tests use
// (tests/foreign/foreign_dlpack.c in libdlbridge_cs_test_helpers). One line per row:
// ROW<TAB>STATUS<TAB>DETAIL, STATUS the core's status name the exception carries (IDLPackError),
// DETAIL its message, or for a success the facts the table names. The channel rows' other end is
// the C program $DLBRIDGE_PARITY_PEER (tests/parity/parity_peer.cc), run by tests/Peer.cs.
using System;
using System.IO;
using System.Linq;

using DLBridge.Tests;

namespace DLBridge.Parity {
  internal static class Program {
    private delegate string Body();

    // Runs one row: `body` returns the detail of a success; the binding's exception (any of
    // IDLPackError's) is the row's outcome. Anything else is a bug of this program: it ends it.
    // A row in a folder of its own writes that folder's path as DIR.
    private static void Row(string id, Body body, string folder = null) {
      string status, detail;
      try {
        detail = body();
        status = "DLB_OK";
      } catch (Exception e) when (e is IDLPackError) {
        status = ((IDLPackError)e).StatusName;
        detail = e.Message;
      }
      if (folder != null) detail = detail.Replace(folder, "DIR");
      Console.WriteLine(id + "\t" + status + "\t" + detail);
    }

    private static string List(long[] v) {
      return "[" + string.Join(",", v) + "]";
    }

    private static string Values(float[] v) {
      return "values=" + List(v.Select(x => (long)x).ToArray());
    }

    private static string Layout(Tensor t) {
      return "shape=" + List(t.Shape) + " strides=" + List(t.Strides);
    }

    // A float32 tensor of `shape` holding 0, 1, 2, ... in C order.
    private static Tensor Iota(params long[] shape) {
      long n = shape.Aggregate(1L, (a, b) => a * b);
      return Tensor.FromArray(Enumerable.Range(0, (int)n).Select(i => (float)i).ToArray(), shape);
    }

    private static readonly long None = SliceRange.None;

    // ---- a close or an export racing a call (rows close_during_call, export_during_call) -------
    // The race rows' foreign tensor: 64 MiB of float32, above glibc's largest mmap threshold, so
    // the producer's deleter unmaps the memory and a copy still reading it faults. Every value
    // 0 .. 2^24 - 1 is exact in float32.
    private const int RaceElements = 1 << 24;
    private const int RaceTries = 20;

    // The message of a use after close, as this binding gives it (row use_after_close).
    private static string ClosedMessage() {
      Tensor t = Iota(1);
      t.Dispose();
      try {
        return List(t.Shape);
      } catch (DLPackClosedException e) {
        return e.Message;
      }
    }

    // The foreign tensor copied out on a second thread while this one runs `racer` on it. A try
    // in which the copy lost the race must have failed DLB_ERR_CLOSED with the message of a use
    // after close (anything else is the row's outcome); tries are made until the racer began
    // before the copy ended.
    private static string RaceCall(Action<Tensor> racer) {
      string closed = ClosedMessage();
      string outcome = "";
      for (int attempt = 1; attempt <= RaceTries; attempt++) {
        long deleted = Helper.DeletedCount();
        Tensor t = Tensor.ImportVersioned(Helper.ProduceVersioned(RaceElements, 1, 3, 0));
        float[] copied = null;
        Exception lost = null;
        long copyEnd = 0;
        var copying = new System.Threading.ManualResetEventSlim(false);
        var caller = new System.Threading.Thread(() => {
          copying.Set();
          try {
            copied = t.ToArray<float>();
          } catch (Exception e) {
            lost = e;
          }
          copyEnd = System.Diagnostics.Stopwatch.GetTimestamp();
        });
        caller.Start();
        copying.Wait();
        long raceStart = System.Diagnostics.Stopwatch.GetTimestamp();
        racer(t);
        caller.Join();
        t.Dispose();
        if (lost != null) {
          var e = lost as IDLPackError;
          if (e == null || e.Status != Status.Closed || lost.Message != closed) throw lost;
        }
        bool overlapped = lost == null && raceStart < copyEnd;
        long read = 0;
        for (int i = 0; copied != null && i < copied.Length; i++) {
          if (copied[i] == i) read++;
        }
        outcome = "overlapped=" + (overlapped ? 1 : 0) + " read=" + read + " deleted="
            + (Helper.DeletedCount() - deleted);
        if (overlapped) break;
      }
      return outcome;
    }

    // ---- the channel rows (their peer: tests/Peer.cs) ------------------------------------------
    // How long a row waits for a peer (to connect, to send, to exit) before it fails.
    private static readonly TimeSpan PeerWait = TimeSpan.FromSeconds(10);

    // The peer, or the row's failure when it cannot be started.
    private static Peer StartPeer(params string[] args) {
      if (Peer.Program == null) throw new DLPackException(Status.Device, "DLBRIDGE_PARITY_PEER is not set");
      return new Peer(args);
    }

    // A row in DIR, a new 0700 folder, removed after it.
    private static void InFolder(string id, Func<string, string> body) {
      string dir = Posix.MakeFolder("dlbridge-parity-cs");
      try {
        Row(id, () => body(dir), dir);
      } finally {
        Directory.Delete(dir, true);
      }
    }

    // Listens at DIR/s (`prepare` runs then, with the listener and the path), starts the peer with
    // `args` (PATH: the socket's path), accepts it and runs `body` on the channel. The channel and
    // the listener are closed before the peer is reaped (a peer waits for the close).
    private static string Accepted(string dir, string[] args, Action<Listener, string> prepare,
                                   Func<Channel, string> body) {
      string path = dir + "/s";
      Peer peer = null;
      try {
        using (Listener listener = Listener.Listen(path)) {
          if (prepare != null) prepare(listener, path);
          peer = StartPeer(args.Select(a => a == "PATH" ? path : a).ToArray());
          listener.SetTimeout(PeerWait);  // a peer that never came
          using (Channel channel = listener.Accept()) return body(channel);
        }
      } finally {
        if (peer != null) peer.Dispose();
      }
    }

    // listen; the peer in `mode`; accept; a time limit (`limit`); receive: the row's outcome.
    private static void ReceiveFrom(string id, string mode, TimeSpan limit) {
      InFolder(id, dir => Accepted(dir, new[] { mode, "PATH" }, null, channel => {
        channel.SetTimeout(limit);
        channel.Receive().Dispose();
        return "";
      }));
    }

    // We listen (allowing uid 65534 when `allow`), widened for another user; the peer connects
    // as uid 65534 and echoes a float32 [4] tensor 0..3.
    private static void OtherUidConnects(string id, bool allow) {
      InFolder(id, dir => Accepted(dir, new[] { "connect-as", "65534", "0", "PATH" },
        (listener, path) => {
          if (allow) listener.AllowUid(65534);
          Posix.Chmod(dir, "711");
          Posix.Chmod(path, "666");
        },
        channel => {
          using (Tensor t = Tensor.AllocateShareable(Device.Cpu, DType.Float32, 4)) {
            t.CopyFrom(new float[] { 0, 1, 2, 3 });
            channel.SetTimeout(PeerWait);
            channel.Send(t);
            using (Tensor back = channel.Receive()) return Values(back.ToArray<float>());
          }
        }));
    }

    // The peer listens as uid 65534 and prints its socket's path; we connect, naming its uid
    // (`nameUid`) or plainly, and receive its tensor.
    private static void ConnectToOtherUid(string id, bool nameUid) {
      Row(id, () => {
        using (Peer peer = StartPeer("listen-as", "65534", "0")) {
          string path = peer.ReadLine();
          if (path == null) throw new DLPackException(Status.Device, "the peer printed no socket path");
          using (Channel channel = nameUid ? Channel.Connect(path, 65534, PeerWait) : Channel.Connect(path)) {
            channel.SetTimeout(PeerWait);
            using (Tensor t = channel.Receive()) return Values(t.ToArray<float>());
          }
        }
      });
    }

    private static void ChannelRows() {
      Row("channel_no_listener", () => {
        using (Channel.Connect("dlbridge-parity-absent.sock")) return "";
      });
      InFolder("channel_permission", dir => {
        Posix.Chmod(dir, "755");
        using (Listener.Listen(dir + "/s")) return "";
      });
      ReceiveFrom("channel_peer_closed", "connect-close", PeerWait);
      ReceiveFrom("channel_forged", "forge", PeerWait);
      ReceiveFrom("channel_timeout", "half", TimeSpan.FromMilliseconds(100));
      if (!Posix.IsRoot) {
        foreach (string id in new[] { "channel_refused_uid_accept", "channel_refused_uid_connect",
                                      "channel_second_uid_accept", "channel_second_uid_connect" }) {
          Console.WriteLine(id + "\tSKIP\tneeds root to run a peer as another user");
        }
      } else {
        OtherUidConnects("channel_refused_uid_accept", false);
        ConnectToOtherUid("channel_refused_uid_connect", false);
        OtherUidConnects("channel_second_uid_accept", true);
        ConnectToOtherUid("channel_second_uid_connect", true);
      }
      // The names the typed exceptions of statuses 11 to 16 carry.
      Row("status_names_channel", () => "names=" + string.Join(",", new IDLPackError[] {
        new DLPackNoListenerException(""), new DLPackPermissionException(""),
        new DLPackPeerClosedException(""), new DLPackProtocolException(""),
        new DLPackTimeoutException(""), new DLPackLimitException(""),
      }.Select(e => e.StatusName)));
    }

    internal static unsafe int Run() {
      long liveAtStart = DLBridge.LiveCount;

      Row("create", () => {
        using (Tensor t = Tensor.Allocate(Device.Cpu, DType.Float32, 2, 3)) {
          return Layout(t) + " dtype=" + t.DType + " device=" + t.Device;
        }
      });
      Row("create_negative_extent", () => {
        using (Tensor t = Tensor.Allocate(Device.Cpu, DType.Float32, 2, -3)) return Layout(t);
      });
      Row("create_ndim_65", () => {
        using (Tensor t = Tensor.Allocate(Device.Cpu, DType.Float32, Enumerable.Repeat(1L, 65).ToArray())) {
          return Layout(t);
        }
      });
      Row("create_strides_length", () => {
        using (Tensor t = Tensor.Allocate(Device.Cpu, DType.Float32, new long[] { 2, 3 }, new long[] { 1 })) {
          return Layout(t);
        }
      });
      Row("create_is_copied", () => {
        using (Tensor t = Tensor.Allocate(Device.Cpu, DType.Float32, new long[] { 2, 3 }, null, Tensor.FlagIsCopied)) {
          return Layout(t);
        }
      });

      Row("wrap", () => {
        float[] buffer = { 0, 1, 2, 3, 4, 5 };
        using (Tensor t = Tensor.Wrap(buffer, 2, 3)) {
          // The array is pinned while the tensor holds it: its address does not move.
          fixed (float* p = buffer) {
            return Layout(t) + " " + Values(t.ToArray<float>()) +
                   " same_memory=" + (t.HostData(false).Data == (IntPtr)p ? 1 : 0);
          }
        }
      });
      Row("wrap_beyond_buffer", () => {
        using (Tensor t = Tensor.Wrap(new float[5], 2, 3)) return Layout(t);
      });
      Row("wrap_ndim_5", () => {
        using (Tensor t = Tensor.Wrap(new float[] { 0, 1, 2, 3, 4, 5 }, 1, 1, 1, 2, 3)) {
          return Layout(t) + " " + Values(t.ToArray<float>());
        }
      });
      Row("wrap_ndim_65", () => {
        long[] shape = new long[65];
        for (int i = 0; i < shape.Length; i++) shape[i] = 1;
        using (Tensor t = Tensor.Wrap(new float[1], shape)) return Layout(t);
      });

      Row("import_versioned", () => {
        long deleted = Helper.DeletedCount();
        string read;
        using (Tensor t = Tensor.ImportVersioned(Helper.ProduceVersioned(4, 1, 3, 0))) {
          read = Values(t.ToArray<float>());
        }
        return read + " deleted=" + (Helper.DeletedCount() - deleted);
      });
      Row("import_legacy", () => {
        long deleted = Helper.DeletedCount();
        string read;
        using (Tensor t = Tensor.ImportLegacy(Helper.ProduceLegacy(4))) {
          read = Values(t.ToArray<float>());
        }
        return read + " deleted=" + (Helper.DeletedCount() - deleted);
      });
      {
        // The refused tensor's deleter has run: the detail follows the message on this row.
        long deleted = Helper.DeletedCount();
        try {
          Tensor.ImportVersioned(Helper.ProduceVersioned(4, 2, 0, 0)).Dispose();
          Console.WriteLine("import_major_2\tDLB_OK\t");
        } catch (Exception e) when (e is IDLPackError) {
          Console.WriteLine("import_major_2\t" + ((IDLPackError)e).StatusName + "\t" + e.Message +
                            " deleted=" + (Helper.DeletedCount() - deleted));
        }
      }
      Row("export_import_legacy", () => {
        using (Tensor t = Iota(2, 3))
        using (Tensor back = Tensor.ImportLegacy(t.ExportLegacy())) {
          return Layout(back) + " " + Values(back.ToArray<float>());
        }
      });
      Row("export_import_versioned", () => {
        using (Tensor t = Iota(2, 3))
        using (Tensor back = Tensor.ImportVersioned(t.ExportVersioned())) {
          return Layout(back) + " " + Values(back.ToArray<float>()) + " flags=" + back.Flags;
        }
      });
      Row("export_legacy_read_only", () => {
        using (Tensor t = Iota(2, 3))
        using (Tensor ro = t.ShareReadOnly()) {
          Tensor.ImportLegacy(ro.ExportLegacy()).Dispose();
          return "";
        }
      });
      Row("export_versioned_read_only", () => {
        using (Tensor t = Iota(2, 3))
        using (Tensor ro = t.ShareReadOnly())
        using (Tensor back = Tensor.ImportVersioned(ro.ExportVersioned())) {
          return "flags=" + back.Flags;
        }
      });

      Row("slice", () => {
        using (Tensor b = Iota(3, 4))
        using (Tensor v = b.Slice(new SliceRange(1, 3), new SliceRange(None, None, 2))) {
          return Layout(v) + " " + Values(v.ToArray<float>());
        }
      });
      Row("slice_step_zero", () => {
        using (Tensor b = Iota(3, 4))
        using (Tensor v = b.Slice(new SliceRange(0, 2, 0))) {
          return Layout(v);
        }
      });
      Row("select", () => {
        using (Tensor b = Iota(3, 4))
        using (Tensor v = b.Select(1, -1)) {
          return Layout(v) + " " + Values(v.ToArray<float>());
        }
      });
      Row("select_out_of_range", () => {
        using (Tensor b = Iota(3, 4))
        using (Tensor v = b.Select(0, 3)) {
          return Layout(v);
        }
      });
      Row("reshape", () => {
        using (Tensor b = Iota(3, 4))
        using (Tensor v = b.Reshape(2, -1)) {
          return Layout(v) + " " + Values(v.ToArray<float>());
        }
      });
      Row("reshape_non_contiguous", () => {
        using (Tensor b = Iota(3, 4))
        using (Tensor tr = b.Transpose())
        using (Tensor v = tr.Reshape(12)) {
          return Layout(v);
        }
      });
      Row("transpose", () => {
        using (Tensor b = Iota(3, 4))
        using (Tensor v = b.Transpose()) {
          return Layout(v) + " " + Values(v.ToArray<float>());
        }
      });
      Row("permute", () => {
        using (Tensor b = Iota(2, 3, 4))
        using (Tensor v = b.Permute(2, 0, 1)) {
          return Layout(v);
        }
      });
      Row("permute_invalid", () => {
        using (Tensor b = Iota(2, 3, 4))
        using (Tensor v = b.Permute(0, 0, 1)) {
          return Layout(v);
        }
      });

      Row("copy_out", () => {
        using (Tensor t = Iota(2, 3)) return Values(t.ToArray<float>());
      });
      Row("copy_out_transposed", () => {
        using (Tensor t = Iota(2, 3))
        using (Tensor tr = t.Transpose()) {
          return Values(tr.ToArray<float>());
        }
      });
      Row("copy_out_wrong_type", () => {
        using (Tensor t = Iota(2, 3)) {
          t.ToArray<int>();
          return "";
        }
      });
      Row("copy_out_negative_strides", () => {
        using (Tensor t = Iota(3, 4))
        using (Tensor v = t.Slice(new SliceRange(None, None, -1), new SliceRange(None, None, 2))) {
          return Values(v.ToArray<float>());
        }
      });
      Row("copy_in_transposed", () => {
        using (Tensor t = Iota(3, 4))
        using (Tensor tr = t.Transpose()) {
          tr.CopyFrom(Enumerable.Range(100, 12).Select(i => (float)i).ToArray());
          return Values(t.ToArray<float>());
        }
      });
      Row("copy_in_count_mismatch", () => {
        using (Tensor t = Iota(3, 4))
        using (Tensor tr = t.Transpose()) {
          tr.CopyFrom(new float[5]);
          return "";
        }
      });

      Row("typed_view", () => {
        using (Tensor t = Iota(2, 3)) {
          Span<float> v = t.AsSpan<float>();
          v[4] = 40;
          return "count=" + v.Length + " " + Values(t.ToArray<float>());
        }
      });
      Row("typed_view_wrong_type", () => {
        using (Tensor t = Iota(2, 3)) {
          return "count=" + t.AsReadOnlySpan<int>().Length;
        }
      });
      Row("typed_view_transposed", () => {
        using (Tensor t = Iota(2, 3))
        using (Tensor tr = t.Transpose()) {
          return "count=" + tr.AsReadOnlySpan<float>().Length;
        }
      });
      Row("write_read_only", () => {
        using (Tensor t = Iota(2, 3))
        using (Tensor ro = t.ShareReadOnly()) {
          return "count=" + ro.AsSpan<float>().Length;
        }
      });
      Row("copy_into_read_only", () => {
        using (Tensor t = Iota(2, 3))
        using (Tensor ro = t.ShareReadOnly()) {
          ro.CopyFrom(new float[6]);
          return "";
        }
      });
      Row("element_get", () => {
        using (Tensor t = Iota(2, 3)) return "value=" + (long)t.GetElement<float>(1, 2);
      });
      Row("element_out_of_range", () => {
        using (Tensor t = Iota(2, 3)) return "value=" + (long)t.GetElement<float>(2, 0);
      });

      Row("use_after_close", () => {
        Tensor t = Iota(2, 3);
        t.Dispose();
        return List(t.Shape);
      });
      Row("double_close", () => {
        Tensor t = Iota(2, 3);
        t.Dispose();
        t.Dispose();
        return "";
      });
      Row("close_during_call", () => RaceCall(t => t.Dispose()));
      Row("export_during_call", () => RaceCall(t => Tensor.ImportVersioned(t.ExportVersioned()).Dispose()));

      Row("cuda_available", () => {
        DLPackException reason = Cuda.UnavailableReason;
        if (reason != null) throw reason;
        return "";
      });
      Row("cuda_allocate", () => {
        using (Tensor t = Tensor.Allocate(Device.Cuda(0), DType.Float32, 2)) return Layout(t);
      });
      Row("opencl_available", () => {
        DLPackException reason = OpenCL.UnavailableReason;
        if (reason != null) throw reason;
        return "";
      });
      Row("dtype_parse_unknown", () => DType.Parse("float33").Name);
      Row("dtype_parse", () => {
        DType d = DType.Parse("bfloat16x4");
        return "code=" + d.Code + " bits=" + d.Bits + " lanes=" + d.Lanes;
      });
      Row("device_unknown_type", () => {
        Device d = Device.Parse("device_type_99:3");
        return "type=" + d.DeviceType + " id=" + d.DeviceId + " name=" + d;
      });
      Row("device_parse_unknown", () => Device.Parse("gpu:0").ToString());
      Row("status_name", () => "name=" + Status.Name(Status.ReadOnly) + " unknown=" + Status.Name(99));

      ChannelRows();

      Row("live_count_balance", () => "live=" + (DLBridge.LiveCount - liveAtStart));
      return 0;
    }
  }
}
