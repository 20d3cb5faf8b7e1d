// DLBridge.Adapter.exe, the C# adapter's one program. Its subcommands:
//   interop-host [--self-test] ADAPTER.so...  the interop matrix's C# host: the C# table
//       (Subject.cs) in this Mono process, the other adapters loaded from the libraries named,
//       every ordered pair with C# on one side run by the shared C runner (interop_runner.c)
//   parity [--steps STEPS]  the parity rows, or one row of steps (Parity.cs)
using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge.Interop {
  internal static class Host {
    [DllImport("interop_runner_cs", CallingConvention = CallingConvention.Cdecl)]
    static extern IntPtr interop_load_subject([MarshalAs(UnmanagedType.LPStr)] string path);

    [DllImport("interop_runner_cs", CallingConvention = CallingConvention.Cdecl)]
    static extern int interop_run_matrix(IntPtr[] subjects, int count,
                                         [MarshalAs(UnmanagedType.LPStr)] string host,
                                         [MarshalAs(UnmanagedType.LPStr)] string mustInclude,
                                         int sabotage);

    sealed class Holder {
      public int Field = 1;
    }

    static int zero = 0;

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Load(Holder h) { return h.Field; } // a null h faults (SIGSEGV) in JIT code

    [MethodImpl(MethodImplOptions.NoInlining)]
    static int Divide(int a, int b) { return a / b; } // b == 0 traps (SIGFPE) on x86-64

    // Mono turns SIGSEGV and SIGFPE in managed code into exceptions, and stops its threads for
    // the GC with signals. Returns what failed, or null.
    static string ProbeRuntime() {
      try {
        Load(null);
        return "a null dereference did not throw";
      } catch (NullReferenceException) {
      }
      try {
        Divide(1, zero);
        return "a division by zero did not throw";
      } catch (DivideByZeroException) {
      }
      long made = 0;
      Thread[] threads = new Thread[4];
      for (int i = 0; i < threads.Length; ++i) {
        threads[i] = new Thread(() => {
          for (int k = 0; k < 20000; ++k) Interlocked.Add(ref made, new byte[64 + k % 512].Length > 0 ? 1 : 0);
        });
        threads[i].Start();
      }
      for (int i = 0; i < 5; ++i) GC.Collect();
      foreach (Thread t in threads) t.Join();
      return Interlocked.Read(ref made) == 80000 ? null : "allocating threads lost work across collections";
    }

    static int Main(string[] args) {
      string command = args.Length > 0 ? args[0] : "";
      string[] rest = args.Skip(1).ToArray();
      if (command == "interop-host") return RunMatrix(rest);
      bool steps = rest.Length == 2 && rest[0] == "--steps";
      if (command == "parity" && (rest.Length == 0 || steps)) return global::DLBridge.Parity.Program.Run(rest);
      Console.Error.WriteLine("usage: DLBridge.Adapter.exe interop-host [--self-test] ADAPTER.so...\n" +
                              "       DLBridge.Adapter.exe parity [--steps STEPS]");
      return 2;
    }

    static int RunMatrix(string[] args) {
      List<IntPtr> subjects = new List<IntPtr> { global::DLBridge.Conformance.Subject.Table() };
      int sabotage = 0;
      foreach (string arg in args) {
        if (arg == "--self-test") {
          sabotage = 1;
          continue;
        }
        IntPtr subject = interop_load_subject(arg);
        if (subject == IntPtr.Zero) return 1; // the runner said why on stderr
        subjects.Add(subject);
      }
      // Another runtime may now share the process (the Java adapter starts a JVM when loaded, whose
      // signal handlers replace Mono's and chain to them): Mono's own uses of signals must work.
      string broken = ProbeRuntime();
      if (broken != null) {
        Console.WriteLine("the Mono runtime no longer works with the adapters loaded: " + broken);
        Console.WriteLine("0 passed, 1 failed");
        return 1;
      }
      int failed = interop_run_matrix(subjects.ToArray(), subjects.Count, "csharp", "csharp", sabotage);
      return failed == 0 ? 0 : 1;
    }
  }
}
