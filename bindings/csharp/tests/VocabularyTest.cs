using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Reflection;
using System.Text.RegularExpressions;
using NUnit.Framework;

namespace DLBridge.Tests {
  /// <summary>The names every binding offers (docs/architecture.md, "One vocabulary"), checked
  /// against the constants SWIG generated from the headers, and the assembly itself.</summary>
  [TestFixture]
  public class VocabularyTest : LeakChecked {
    // The generated module (internal): every constant SWIG copied from dlpack.h and dlbridge.h.
    private static Dictionary<string, object> HeaderConstants() {
      Type module = typeof(Tensor).Assembly.GetType("DLBridge.DLBridgeNative", true);
      return module.GetFields(BindingFlags.Public | BindingFlags.Static)
                   .Where(f => f.IsLiteral)
                   .ToDictionary(f => f.Name, f => f.GetRawConstantValue());
    }

    private static Dictionary<string, int> PublicConstants(Type type, string prefix) {
      return type.GetFields(BindingFlags.Public | BindingFlags.Static)
                 .Where(f => f.IsLiteral && f.Name.StartsWith(prefix))
                 .ToDictionary(f => f.Name, f => Convert.ToInt32(f.GetRawConstantValue()));
    }

    // DLB_ERR_READ_ONLY -> ReadOnly
    private static string Pascal(string macro) {
      return string.Concat(macro.Split('_').Select(w => w.Substring(0, 1) + w.Substring(1).ToLowerInvariant()));
    }

    [Test]
    public void EveryStatusOfTheHeaderIsAConstant() {
      Dictionary<string, object> header = HeaderConstants();
      Dictionary<string, int> status = PublicConstants(typeof(Status), "");
      List<string> macros = header.Keys.Where(k => k == "DLB_OK" || k.StartsWith("DLB_ERR_")).ToList();
      Assert.GreaterOrEqual(macros.Count, 11);
      foreach (string macro in macros) {
        string name = macro == "DLB_OK" ? "Ok" : Pascal(macro.Substring("DLB_ERR_".Length));
        Assert.IsTrue(status.ContainsKey(name), "Status." + name + " for " + macro);
        Assert.AreEqual(header[macro], status[name], macro);
        Assert.AreEqual(macro, Status.Name(status[name]), "the core's name of Status." + name);
      }
      Assert.AreEqual(macros.Count, status.Count, "Status holds the header's statuses and nothing else");
    }

    /// <summary>Each status with a typed exception gets it (through the one place a native
    /// failure becomes an exception, Errors.For), catchable as the .NET type a caller expects,
    /// with the status, its name and the message; every other status is DLPackException.</summary>
    [Test]
    public void EveryStatusBecomesItsTypedException() {
      Type errors = typeof(Tensor).Assembly.GetType("DLBridge.Errors", true);
      MethodInfo forStatus = errors.GetMethod("For", BindingFlags.NonPublic | BindingFlags.Static);
      Assert.AreEqual(11, Status.NoListener);
      Assert.AreEqual(12, Status.Permission);
      Assert.AreEqual(13, Status.PeerClosed);
      Assert.AreEqual(14, Status.Protocol);
      Assert.AreEqual(15, Status.Timeout);
      Assert.AreEqual(16, Status.Limit);
      foreach (int status in PublicConstants(typeof(Status), "").Values.Where(v => v != Status.Ok).Concat(new[] { 99 })) {
        Exception e = (Exception)forStatus.Invoke(null, new object[] { status, "message " + status });
        Type[] types = TestUtil.ExceptionTypes.ContainsKey(status) ? TestUtil.ExceptionTypes[status]
                     : new[] { typeof(DLPackException) };
        Assert.AreEqual(types[0], e.GetType(), Status.Name(status));
        foreach (Type type in types) Assert.IsInstanceOf(type, e, Status.Name(status));
        IDLPackError error = (IDLPackError)e;
        Assert.AreEqual(status, error.Status);
        Assert.AreEqual(Status.Name(status), error.StatusName);
        Assert.AreEqual("message " + status, e.Message);
        Assert.AreEqual(Status.Name(status) + ": message " + status, e.ToString());
      }
      // The six statuses of a channel, by the core's names.
      Assert.AreEqual(new[] { "DLB_ERR_NO_LISTENER", "DLB_ERR_PERMISSION", "DLB_ERR_PEER_CLOSED",
                              "DLB_ERR_PROTOCOL", "DLB_ERR_TIMEOUT", "DLB_ERR_LIMIT" },
                      Enumerable.Range(11, 6).Select(Status.Name).ToArray());
    }

    [Test]
    public void EveryDeviceTypeAndDTypeCodeOfTheHeaderIsAConstant() {
      Dictionary<string, object> header = HeaderConstants();
      // DLDeviceType's values are C# ints, DLDataTypeCode's uints (dlpack.h spells them 0U, ...).
      List<int> deviceTypes = header.Where(kv => kv.Key.StartsWith("kDL") && kv.Value is int)
                                    .Select(kv => (int)kv.Value).ToList();
      List<int> dtypeCodes = header.Where(kv => kv.Key.StartsWith("kDL") && kv.Value is uint)
                                   .Select(kv => (int)(uint)kv.Value).ToList();
      Assert.AreEqual(18, deviceTypes.Count, "DLPack 1.3 and post-1.3 device types");
      Assert.AreEqual(19, dtypeCodes.Count, "DLPack 1.3 and post-1.3 dtype codes");
      CollectionAssert.AreEquivalent(deviceTypes, PublicConstants(typeof(Device), "Type").Values);
      CollectionAssert.AreEquivalent(dtypeCodes, PublicConstants(typeof(DType), "Code").Values);
      Assert.AreEqual(1, Device.TypeCpu);
      Assert.AreEqual(20, Device.TypeTpuHost);
      Assert.AreEqual(17, DType.CodeFloat4E2M1Fn);
      Assert.AreEqual(18, DType.CodeBcomplex);
      // Every named device type has the core's name; an unknown code still passes through.
      foreach (int type in deviceTypes) Assert.IsNotNull(new Device(type).TypeName, "device type " + type);
      Assert.AreEqual("device_type_99:0", new Device(99).ToString());
      Assert.AreEqual(new DType(99, 8).Code, 99);
    }

    [Test]
    public void ConstantsSpelledInCSharpMatchTheCoresBehaviour() {
      // Spelled in typemaps_csharp.i (static-checked against the header there): here through
      // what the core does with them.
      using (Tensor ro = Tensor.Allocate(Device.Cpu, DType.Float32, new long[] { 2 }, null, Tensor.FlagReadOnly))
      using (Tensor copy = ro.CopyTo(Device.Cpu))
      using (Tensor padded = Tensor.Allocate(Device.Cpu, DType.Parse("uint4"), new long[] { 3 }, null,
                                             Tensor.FlagIsSubbyteTypePadded))
      using (Tensor iota = Tensor.FromArray(new[] { 0, 1, 2, 3 }))
      using (Tensor reversed = iota.Slice(new SliceRange(SliceRange.None, SliceRange.None, -1))) {
        Assert.IsTrue(ro.IsReadOnly);
        Assert.AreEqual(Tensor.FlagIsCopied, copy.Flags);
        Assert.AreEqual(3, padded.ByteSize);
        Assert.AreEqual(new[] { 3, 2, 1, 0 }, reversed.ToArray<int>());
      }
      Assert.AreEqual(long.MinValue, Cuda.StreamNone);
    }

    /// <summary>Status values are constants: a switch over them compiles (CS0150 otherwise) and
    /// takes the core's status.</summary>
    [Test]
    public void StatusesCanBeSwitchedOn() {
      string taken = "none";
      using (Tensor t = Tensor.FromArray(new float[] { 1 }))
      using (Tensor ro = t.ShareReadOnly()) {
        try {
          ro.CopyFrom(new float[] { 2 });
        } catch (Exception e) when (e is IDLPackError) {
          switch (((IDLPackError)e).Status) {
            case Status.InvalidArgument: taken = "invalid argument"; break;
            case Status.ReadOnly: taken = "read-only"; break;
            case Status.Closed: taken = "closed"; break;
            case Status.Timeout: taken = "timeout"; break;
            default: taken = "other"; break;
          }
        }
      }
      Assert.AreEqual("read-only", taken);
    }

    [Test]
    public void TheAssemblyVersionIsTheProjects() {
      Assembly assembly = typeof(Tensor).Assembly;
      Version library = new Version(DLBridge.Version);
      Version version = assembly.GetName().Version;
      Assert.AreEqual(new Version(library.Major, library.Minor, library.Build, 0), version);
      Assert.AreNotEqual(new Version(0, 0, 0, 0), version);
      var informational = (AssemblyInformationalVersionAttribute)Attribute.GetCustomAttribute(
          assembly, typeof(AssemblyInformationalVersionAttribute));
      Assert.AreEqual(DLBridge.Version, informational.InformationalVersion);
    }

    [Test]
    public void DeviceQueriesOfTheVocabulary() {
      Assert.AreEqual(Cuda.UnavailableReason == null, Cuda.IsAvailable);
      Assert.AreEqual(OpenCL.UnavailableReason == null, OpenCL.IsAvailable);
      if (!Cuda.IsAvailable) {
        IDLPackError reason = Cuda.UnavailableReason;
        TestUtil.Throws(reason.Status, reason.Message, () => { var unused = Cuda.DeviceCount; });
        foreach (TestDelegate call in new TestDelegate[] { () => Cuda.Synchronize(), () => Cuda.PointerDevice(IntPtr.Zero) }) {
          IDLPackError e = Assert.Catch<Exception>(call) as IDLPackError;
          Assert.IsNotNull(e);
          Assert.That(e.Status == Status.Unsupported || e.Status == Status.DeviceUnavailable, e.StatusName);
        }
      }
    }
  }

  /// <summary>What a user sees when libdlbridge_csharp.so is not where the runtime looks
  /// (MissingLibrary.exe, run in its own mono).</summary>
  [TestFixture]
  public class MissingLibraryTest {
    private static readonly string[] FirstCalls = {
      "FromArray", "Wrap", "Allocate", "ImportVersioned", "DTypeParse", "DeviceName", "LiveCount",
      "CollectReleased", "CudaIsAvailable", "StatusName",
    };

    private static string Run(string dir, string mono, string call) {
      ProcessStartInfo info = new ProcessStartInfo(mono, "MissingLibrary.exe " + call);
      info.UseShellExecute = false;
      info.RedirectStandardOutput = true;
      info.WorkingDirectory = dir;
      info.EnvironmentVariables.Remove("LD_LIBRARY_PATH");
      info.EnvironmentVariables.Remove("MONO_PATH");
      using (Process p = Process.Start(info)) {
        string output = p.StandardOutput.ReadToEnd();
        p.WaitForExit();
        Assert.AreEqual(0, p.ExitCode, call + ": " + output);
        return output.Trim();
      }
    }

    [Test]
    public void AMissingNativeLibraryIsOneClearException() {
      string build = Environment.GetEnvironmentVariable("DLBRIDGE_CSHARP_BUILD_DIR");
      string mono = Environment.GetEnvironmentVariable("DLBRIDGE_MONO");
      if (build == null || mono == null) Assert.Ignore("run through run_nunit.py");
      // Next to the library, each first call works (the program can tell the two apart).
      Assert.AreEqual("loaded", Run(build, mono, "FromArray"));
      string alone = Path.Combine(Path.GetTempPath(), "dlbridge-missing-" + Process.GetCurrentProcess().Id);
      Directory.CreateDirectory(alone);
      try {
        foreach (string file in new[] { "DLBridge.dll", "MissingLibrary.exe" }) {
          File.Copy(Path.Combine(build, file), Path.Combine(alone, file), true);
        }
        foreach (string call in FirstCalls) {
          string[] fields = Run(alone, mono, call).Split('\t');
          Assert.AreEqual(3, fields.Length, call + ": " + string.Join(" | ", fields));
          // One exception, the runtime's own as its inner one: no TypeInitializationException.
          Assert.AreEqual("System.DllNotFoundException", fields[0], call);
          Assert.AreEqual("System.DllNotFoundException", fields[1], call);
          StringAssert.StartsWith("DLBridge.dll could not load its native library libdlbridge_csharp.so (", fields[2], call);
          StringAssert.Contains("Install the DLBridge NuGet package, which carries it in runtimes/linux-x64/native/",
                                fields[2], call);
          StringAssert.Contains("put libdlbridge_csharp.so next to DLBridge.dll", fields[2], call);
        }
      } finally {
        Directory.Delete(alone, true);
      }
    }

    // The tensor rows of docs/architecture.md's vocabulary table, one name per concept in every
    // language (the Java and Go vocabulary tests read the same rows).
    private static readonly string[] TensorRows = {
      "a tensor's element count",
      "read-only (the READ_ONLY flag)",
      "C-contiguous (row-major, no gaps)",
      "F-contiguous (column-major, no gaps)",
      "host-readable (the CPU can read the memory in place)",
      "the only holder of its memory (no live view or share)",
      "a read-only share of the same memory",
      "a copy queued on a stream",
    };

    // The cells of one language's column of the "One vocabulary" table, keyed by concept.
    private static Dictionary<string, string> VocabularyColumn(string page, string language) {
      string text = File.ReadAllText(page);
      int start = text.IndexOf("## One vocabulary", StringComparison.Ordinal);
      Assert.GreaterOrEqual(start, 0, page + " has no section \"One vocabulary\"");
      string section = text.Substring(start + 1);
      int end = section.IndexOf("\n## ", StringComparison.Ordinal);
      if (end >= 0) section = section.Substring(0, end);
      int column = -1;
      var cells = new Dictionary<string, string>();
      foreach (string line in section.Split('\n')) {
        if (!line.StartsWith("|") || line.StartsWith("|---")) continue;
        string[] row = line.Substring(1, line.LastIndexOf('|') - 1).Split('|').Select(c => c.Trim()).ToArray();
        if (column < 0) {
          column = Array.IndexOf(row, language);
          Assert.GreaterOrEqual(column, 0, "the vocabulary table has no " + language + " column: " + line);
        } else if (column < row.Length) {
          cells[row[0]] = row[column];
        }
      }
      return cells;
    }

    /// <summary>Every name the C# column of a tensor row gives is a public instance member of
    /// Tensor: a rename in the code or in the table fails here.</summary>
    [Test]
    public void TensorVocabularyIsTheTables() {
      string page = Environment.GetEnvironmentVariable("DLBRIDGE_ARCHITECTURE_DOC");
      Assert.IsNotNull(page, "DLBRIDGE_ARCHITECTURE_DOC names docs/architecture.md (run_nunit.py sets it)");
      Dictionary<string, string> cells = VocabularyColumn(page, "C#");
      var problems = new List<string>();
      foreach (string concept in TensorRows) {
        string cell;
        if (!cells.TryGetValue(concept, out cell)) {
          problems.Add("no row \"" + concept + "\"");
          continue;
        }
        MatchCollection names = Regex.Matches(cell, "`([A-Za-z_][A-Za-z0-9_]*)");
        if (names.Count == 0) problems.Add("row \"" + concept + "\" names nothing for C#: " + cell);
        foreach (Match name in names) {
          if (typeof(Tensor).GetMember(name.Groups[1].Value, BindingFlags.Public | BindingFlags.Instance).Length == 0) {
            problems.Add("row \"" + concept + "\": Tensor has no member " + name.Groups[1].Value);
          }
        }
      }
      Assert.IsEmpty(problems);
    }
  }
}
