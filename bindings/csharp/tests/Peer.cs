// Peer.cs - the other end of the channel tests and of the parity channel rows: the C program
// $DLBRIDGE_PARITY_PEER (tests/parity/parity_peer.cc, its modes in tests/parity/README.md); and
// the few libc calls those tests need. Compiled into DLBridge.Tests.dll and DLBridge.Adapter.exe.
using System;
using System.Diagnostics;
using System.IO;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading.Tasks;

namespace DLBridge.Tests {
  internal static class Posix {
    [DllImport("libc", EntryPoint = "mkdtemp", SetLastError = true)]
    private static extern IntPtr MkdTemp(byte[] template);

    [DllImport("libc", EntryPoint = "chmod", SetLastError = true)]
    private static extern int ChMod(string path, uint mode);

    [DllImport("libc", EntryPoint = "geteuid")]
    private static extern uint Geteuid();

    internal static bool IsRoot {
      get { return Geteuid() == 0; }
    }

    // A new folder of mode 0700 under /tmp (mkdtemp): /tmp/PREFIX-XXXXXX.
    internal static string MakeFolder(string prefix) {
      byte[] template = Encoding.ASCII.GetBytes("/tmp/" + prefix + "-XXXXXX\0");
      if (MkdTemp(template) == IntPtr.Zero) {
        throw new IOException("mkdtemp failed: errno " + Marshal.GetLastWin32Error());
      }
      return Encoding.ASCII.GetString(template, 0, template.Length - 1);
    }

    // chmod, the mode in octal digits as the shell writes it ("711").
    internal static void Chmod(string path, string octal) {
      if (ChMod(path, Convert.ToUInt32(octal, 8)) != 0) {
        throw new IOException("chmod " + path + " failed: errno " + Marshal.GetLastWin32Error());
      }
    }
  }

  // One run of the parity peer: its stdout comes here (only listen-as prints: the socket's path),
  // its stderr goes to ours. Dispose reaps it (a row must not hang: killed after ExitWait).
  internal sealed class Peer : IDisposable {
    private static readonly TimeSpan ExitWait = TimeSpan.FromSeconds(10);

    private readonly Process process;

    // $DLBRIDGE_PARITY_PEER (null or empty: not set).
    internal static readonly string Program =
        Environment.GetEnvironmentVariable("DLBRIDGE_PARITY_PEER");

    internal Peer(params string[] args) {
      if (string.IsNullOrEmpty(Program)) {
        throw new InvalidOperationException("DLBRIDGE_PARITY_PEER is not set");
      }
      ProcessStartInfo info = new ProcessStartInfo(Program, string.Join(" ", args));
      info.UseShellExecute = false;
      info.RedirectStandardOutput = true;
      process = Process.Start(info);
    }

    internal int Id {
      get { return process.Id; }
    }

    // The first line the peer prints, or null when it prints none in time.
    internal string ReadLine() {
      Task<string> line = process.StandardOutput.ReadLineAsync();
      return line.Wait(ExitWait) ? line.Result : null;
    }

    // Waits for the peer to exit, killing it when it does not in time: its exit status, or -1
    // when it had to be killed.
    internal int Reap() {
      if (process.WaitForExit((int)ExitWait.TotalMilliseconds)) return process.ExitCode;
      try {
        process.Kill();
      } catch (InvalidOperationException) {
        // it exited meanwhile
      }
      process.WaitForExit();
      return -1;
    }

    public void Dispose() {
      if (!process.HasExited) Reap();
      process.Dispose();
    }
  }
}
