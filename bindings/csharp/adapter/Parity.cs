// Parity.cs - the parity rows (tests/parity/parity_table.tsv, README.md there) through the C#
// binding's public API: the subcommand `parity [--steps STEPS]` of the C# adapter's program
// (Host.cs). One line per row, ROW<TAB>STATUS<TAB>DETAIL. Rows with steps run through one
// interpreter of them (Steps); the others are written out in Program. Foreign tensors come from
// the NUnit tests' producer (tests/ForeignHelper.cs); the channel rows' other end is
// $DLBRIDGE_PARITY_PEER, run by tests/Peer.cs.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;

using DLBridge.Tests;

namespace DLBridge.Parity {
  // A row this program cannot run here (step needs_root): SKIP and why.
  internal sealed class SkipException : Exception {
    internal SkipException(string why) : base(why) {
    }
  }

  // One row's steps (README.md, "Steps"): the tensors, folder, listener, channel and peer the row
  // made, the tensor the next step uses, and what the steps found for `report`.
  internal sealed class Steps {
    // How long a row waits for its peer to connect, or to accept its connection.
    private static readonly TimeSpan PeerWait = TimeSpan.FromSeconds(10);

    private readonly Dictionary<string, Action<string[]>> perform;
    private readonly long deletedAtStart = Helper.DeletedCount();
    private readonly List<Tensor> made = new List<Tensor>();
    private Tensor t;
    private float[] wrapped;
    private long[] values;
    private int count;
    private long value;
    private DType dtype;
    private Device device;
    private string names;
    private string detail = "";
    private string dir;
    private Listener listener;
    private Channel channel;
    private Peer peer;

    // Each step, given its name and arguments (a[0], a[1], ...). A step that makes a tensor makes
    // it the tensor the next step uses (Make); the channel steps use the row's one channel.
    internal Steps() {
      perform = new Dictionary<string, Action<string[]>> {
        { "allocate", a => Make(Tensor.Allocate(Device.Cpu, DType.Parse(a[1]), Longs(a[2]),
                                                a.Length > 3 && a[3] != "-" ? Longs(a[3]) : null,
                                                a.Length > 4 ? ulong.Parse(a[4]) : 0)) },
        { "wrap", a => {
          wrapped = Floats(0, long.Parse(a[1]));
          Make(Tensor.Wrap(wrapped, Longs(a[2])));
        } },
        { "iota", a => Iota(Tensor.Allocate(Device.Cpu, DType.Float32, Longs(a[1]))) },
        { "import", a => Make(a[1] == "legacy"
            ? Tensor.ImportLegacy(Helper.ProduceLegacy(long.Parse(a[2])))
            : Tensor.ImportVersioned(Helper.ProduceVersioned(long.Parse(a[2]), int.Parse(a[3]),
                                                             int.Parse(a[4]), 0))) },
        { "share_read_only", a => Make(t.ShareReadOnly()) },
        { "export", a => Make(a[1] == "legacy" ? Tensor.ImportLegacy(t.ExportLegacy())
                                               : Tensor.ImportVersioned(t.ExportVersioned())) },
        { "slice", a => Make(t.Slice(a[1].Split(',').Select(Axis).ToArray())) },
        { "select", a => Make(t.Select(int.Parse(a[1]), long.Parse(a[2]))) },
        { "reshape", a => Make(t.Reshape(Longs(a[1]))) },
        { "transpose", a => Make(t.Transpose()) },
        { "permute", a => Make(t.Permute(Array.ConvertAll(Longs(a[1]), x => (int)x))) },
        { "base", a => t = made[0] },
        { "copy_out", a => values = IsInt32(a[1])
            ? Array.ConvertAll(t.ToArray<int>(), x => (long)x)
            : Array.ConvertAll(t.ToArray<float>(), x => (long)x) },
        { "copy_in", a => t.CopyFrom(Floats(long.Parse(a[1]), long.Parse(a[2]))) },
        { "view", a => count = IsInt32(a[1]) ? View<int>(a) : View<float>(a) },
        { "element", a => value = (long)t.GetElement<float>(Longs(a[1])) },  // all float32
        { "close", a => t.Dispose() },
        { "dtype", a => dtype = DType.Parse(a[1]) },
        { "device", a => device = Device.Parse(a[1]) },
        { "status_names", a => names = string.Join(",", Longs(a[1]).Select(
            s => Status.Name((int)s))) },
        { "report", a => detail = Facts(a) },
        { "print", a => Print(Facts(a)) },
        { "needs_root", a => {
          if (!Posix.IsRoot) throw new SkipException("needs root to run a peer as another user");
        } },
        { "folder", a => Posix.Chmod(dir = Posix.MakeFolder("dlbridge-parity-cs"), a[1]) },
        { "listen", a => listener = Listener.Listen(Socket) },
        { "folder_mode", a => Posix.Chmod(dir, a[1]) },
        { "socket_mode", a => Posix.Chmod(Socket, a[1]) },
        { "allow_uid", a => listener.AllowUid(uint.Parse(a[1])) },
        { "peer", a => peer = new Peer(a.Skip(1).Select(x => x == "PATH" ? Socket : x).ToArray()) },
        { "accept", a => {
          listener.SetTimeout(a.Length > 1 ? TimeSpan.FromSeconds(long.Parse(a[1])) : PeerWait);
          channel = listener.Accept();
        } },
        { "listen_at", a => {
          using (ChannelOptions options = Keyed(a)) listener = Listener.Listen(a[1], options);
          Print(listener.IsRemote ? "ready " + listener.Port : "ready");
        } },
        { "connect", a => {
          using (ChannelOptions options = Keyed(a)) channel = Channel.Connect(a[1], options);
        } },
        { "connect_peer", a => {
          string path = peer.ReadLine();
          if (path == null) {
            throw new DLPackException(Status.Device, "the peer printed no socket path");
          }
          uint uid = a.Length > 1 ? uint.Parse(a[1]) : Channel.UidSelf;
          channel = Channel.Connect(path, uid, PeerWait);
        } },
        { "timeout", a => channel.SetTimeout(TimeSpan.FromMilliseconds(long.Parse(a[1]))) },
        { "send", a => channel.Send(t) },
        { "send_copy", a => channel.SendCopy(t) },
        { "receive", a => Make(channel.Receive()) },
        { "shareable", a => Iota(Tensor.AllocateShareable(Device.Cpu, DType.Float32,
                                                          Longs(a[1]))) },
      };
    }

    // The foreign producer's deleter calls since the row began.
    internal long Deleted {
      get { return Helper.DeletedCount() - deletedAtStart; }
    }

    // The socket's path in the row's folder.
    private string Socket {
      get { return dir + "/s"; }
    }

    // Performs the steps in order (the first that fails throws) and ends the row: closes every
    // tensor it made, its channel and listener, reaps its peer (tests/Peer.cs: killed after
    // 10 s), removes its folder. Returns the detail `report` wrote.
    internal string Run(IEnumerable<string[]> steps) {
      try {
        foreach (string[] step in steps) {
          if (!perform.TryGetValue(step[0], out Action<string[]> action)) {
            throw new InvalidDataException("unknown step '" + step[0] + "'");
          }
          action(step);
        }
        return detail;
      } finally {
        made.ForEach(m => m.Dispose());
        channel?.Dispose();
        listener?.Dispose();
        peer?.Dispose();
        if (dir != null) Directory.Delete(dir, true);
      }
    }

    // An error's message with the row's folder written DIR.
    internal string Hidden(string message) {
      return dir == null ? message : message.Replace(dir, "DIR");
    }

    // A tensor a step made: the tensor the next step uses; the row's end closes it.
    private void Make(Tensor tensor) {
      made.Add(tensor);
      t = tensor;
    }

    // A new float32 tensor made to hold 0, 1, 2, ... in C order.
    private void Iota(Tensor tensor) {
      Make(tensor);
      tensor.CopyFrom(Floats(0, tensor.ElementCount));
    }

    // A line of its own, at once (`print`, `listen_at`'s ready line).
    private static void Print(string line) {
      Console.WriteLine(line);
      Console.Out.Flush();
    }

    // The facts a `report` or `print` step names, written name=value separated by spaces.
    private string Facts(string[] a) {
      return string.Join(" ", a.Skip(1).Select(fact => fact + "=" + Fact(fact)));
    }

    private object Fact(string name) {
      switch (name) {
        case "shape": return Program.List(t.Shape);
        case "strides": return Program.List(t.Strides);
        case "dtype": return t.DType;
        case "device": return t.Device;
        case "flags": return t.Flags;
        case "values": return Program.List(values);
        case "same_memory": return SameMemory() ? 1 : 0;
        case "deleted": return Deleted;
        case "count": return count;
        case "value": return value;
        case "code": return dtype.Code;
        case "bits": return dtype.Bits;
        case "lanes": return dtype.Lanes;
        case "type": return device.DeviceType;
        case "id": return device.DeviceId;
        case "name": return device;
        case "names": return names;
        default: throw new InvalidDataException("unknown fact '" + name + "'");
      }
    }

    // Whether the tensor's data is the buffer `wrap` gave (pinned while the tensor holds it).
    private unsafe bool SameMemory() {
      fixed (float* p = wrapped) {
        return p != null && t.HostData(false).Data == (IntPtr)p;
      }
    }

    // The language's writable array of T over the tensor's memory, element I set to V through it
    // when the step names them: its length.
    private int View<T>(string[] a) where T : struct {
      Span<T> span = t.AsSpan<T>();
      if (a.Length > 3) span[int.Parse(a[2])] = (T)Convert.ChangeType(long.Parse(a[3]), typeof(T));
      return span.Length;
    }

    // The options of a channel step's KEYHEX argument (hex), or null (the defaults) without one.
    private static ChannelOptions Keyed(string[] a) {
      if (a.Length < 3) return null;
      byte[] key = Enumerable.Range(0, a[2].Length / 2)
          .Select(i => Convert.ToByte(a[2].Substring(2 * i, 2), 16)).ToArray();
      return new ChannelOptions().SetKey(key);
    }

    // The language's array type for a step's DT: int[] for int32, float[] for float32.
    private static bool IsInt32(string dt) {
      if (dt != "int32" && dt != "float32") throw new InvalidDataException("no array type for dtype " + dt);
      return dt == "int32";
    }

    // A LIST: integers separated by commas, V*N for N times V, `-` for none.
    private static long[] Longs(string list) {
      if (list == "-") return new long[0];
      return list.Split(',').SelectMany(item => {
        string[] vn = item.Split('*');
        return Enumerable.Repeat(long.Parse(vn[0]), vn.Length > 1 ? int.Parse(vn[1]) : 1);
      }).ToArray();
    }

    // One axis of a slice SPEC, start:stop:step, an empty part for none.
    private static SliceRange Axis(string spec) {
      long[] p = spec.Split(':').Select(s => s == "" ? SliceRange.None : long.Parse(s)).ToArray();
      return new SliceRange(p[0], p[1], p.Length > 2 ? p[2] : SliceRange.None);
    }

    // The language's own array of the n float32 values start, start + 1, ...
    private static float[] Floats(long start, long n) {
      return Enumerable.Range(0, (int)n).Select(i => (float)(start + i)).ToArray();
    }
  }

  internal static class Program {
    // Runs one row: `body` returns the detail of a success; the binding's exception (any of
    // IDLPackError's) is the row's outcome, its message rewritten by `failed` when given, and a
    // SkipException prints SKIP. Anything else is a bug of this program: it ends it.
    private static void Row(string id, Func<string> body, Func<string, string> failed = null) {
      string status, detail;
      try {
        detail = body();
        status = "DLB_OK";
      } catch (Exception e) when (e is IDLPackError) {
        status = ((IDLPackError)e).StatusName;
        detail = failed == null ? e.Message : failed(e.Message);
      } catch (SkipException e) {
        status = "SKIP";
        detail = e.Message;
      }
      Console.WriteLine(id + "\t" + status + "\t" + detail);
    }

    internal static string List(long[] v) {
      return "[" + string.Join(",", v) + "]";
    }

    // A row of steps: an error's message writes the row's folder DIR. A refused import still
    // calls its deleter: when the report names `deleted`, the failure line says how often.
    private static void StepsRow(string id, string steps) {
      var list = steps.Split(new[] { " ; " }, StringSplitOptions.None).Select(s => s.Split(' ')).ToList();
      bool reportsDeleted = list.Any(s => s[0] == "report" && s.Contains("deleted"));
      var row = new Steps();
      Row(id, () => row.Run(list), m => row.Hidden(m) + (reportsDeleted ? " deleted=" + row.Deleted : ""));
    }

    // The table's rows in order: each one's name and steps (empty: written out below). A line
    // may end before the header does: its missing fields are empty.
    private static IEnumerable<KeyValuePair<string, string>> ReadTable(string path) {
      string[][] lines = File.ReadLines(path).Where(l => l != "" && !l.StartsWith("#"))
          .Select(l => l.Split('\t')).ToArray();
      int row = Array.IndexOf(lines[0], "row");
      int steps = Array.IndexOf(lines[0], "steps");
      if (row < 0 || steps < 0) throw new InvalidDataException(path + ": no column 'row' or 'steps'");
      return lines.Skip(1).Select(f => new KeyValuePair<string, string>(f[row], steps < f.Length ? f[steps] : ""));
    }

    // ---- a close or an export racing a call (rows close_during_call, export_during_call) -------
    // The race rows' foreign tensor: 64 MiB of float32, above glibc's largest mmap threshold, so
    // the producer's deleter unmaps the memory and a copy still reading it faults. Every value
    // 0 .. 2^24 - 1 is exact in float32.
    private const int RaceElements = 1 << 24;
    private const int RaceTries = 20;

    // The message of a use after close, as this binding gives it (row use_after_close).
    private static string ClosedMessage() {
      Tensor t = Tensor.Allocate(Device.Cpu, DType.Float32, 1);
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
        bool lostAsClosed = lost is DLPackClosedException && lost.Message == closed;
        if (lost != null && !lostAsClosed) throw lost;
        bool overlapped = lost == null && raceStart < copyEnd;
        long read = copied == null ? 0 : copied.Where((x, i) => x == i).LongCount();
        outcome = "overlapped=" + (overlapped ? 1 : 0) + " read=" + read + " deleted="
            + (Helper.DeletedCount() - deleted);
        if (overlapped) break;
      }
      return outcome;
    }

    // Rows cuda_available and opencl_available: why the runtime is unusable, when it is.
    private static string Usable(DLPackException reason) {
      if (reason != null) throw reason;
      return "";
    }

    // Row cuda_allocate (as C prints on the same machine).
    private static string CudaAllocate() {
      using (Tensor t = Tensor.Allocate(Device.Cuda(0), DType.Float32, 2)) {
        return "shape=" + List(t.Shape) + " strides=" + List(t.Strides);
      }
    }

    // The rows with no steps, each written out.
    private static readonly Dictionary<string, Action<string>> WrittenOut = new Dictionary<string, Action<string>> {
      { "close_during_call", id => Row(id, () => RaceCall(t => t.Dispose())) },
      { "export_during_call", id => Row(id, () => RaceCall(t => Tensor.ImportVersioned(t.ExportVersioned()).Dispose())) },
      { "cuda_available", id => Row(id, () => Usable(Cuda.UnavailableReason)) },
      { "cuda_allocate", id => Row(id, CudaAllocate) },
      { "opencl_available", id => Row(id, () => Usable(OpenCL.UnavailableReason)) },
    };

    // `parity`: the table's rows; `parity --steps STEPS`: that one row, named steps (the
    // channel peer of suites ipc-languages and remote, tests/ipc/run_languages.py).
    internal static int Run(string[] args) {
      if (args.Length == 2 && args[0] == "--steps") {
        StepsRow("steps", args[1]);
        return 0;
      }
      string table = Environment.GetEnvironmentVariable("DLBRIDGE_PARITY_TABLE");
      if (string.IsNullOrEmpty(table)) {
        Console.Error.WriteLine("parity: DLBRIDGE_PARITY_TABLE (the table's path) is not set");
        return 2;
      }
      long liveAtStart = DLBridge.LiveCount;
      foreach (KeyValuePair<string, string> row in ReadTable(table)) {
        if (row.Value != "") {
          StepsRow(row.Key, row.Value);
        } else if (row.Key != "live_count_balance") {
          WrittenOut[row.Key](row.Key);
        }
      }
      // Last: every other row has freed what it made by now.
      Row("live_count_balance", () => "live=" + (DLBridge.LiveCount - liveAtStart));
      return 0;
    }
  }
}
