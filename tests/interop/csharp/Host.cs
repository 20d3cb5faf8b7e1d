// The C# host of the interop matrix: the C# agent (Agent.cs) runs in this Mono process, the other
// agents are loaded from the libraries named on the command line, and the shared C runner
// (interop_runner.c, built into libinterop_runner_cs.so and reached through P/Invoke) runs every
// ordered pair with C# on one side, versioned and legacy, and prints the table.
// Usage: mono InteropHost.exe [--self-test] AGENT.so...
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace DLBridge.Interop {
  internal static class Host {
    [DllImport("interop_runner_cs", CallingConvention = CallingConvention.Cdecl)]
    static extern IntPtr interop_load_agent([MarshalAs(UnmanagedType.LPStr)] string path);

    [DllImport("interop_runner_cs", CallingConvention = CallingConvention.Cdecl)]
    static extern int interop_run_matrix(IntPtr[] agents, int count,
                                         [MarshalAs(UnmanagedType.LPStr)] string host,
                                         [MarshalAs(UnmanagedType.LPStr)] string mustInclude,
                                         int sabotage);

    static int Main(string[] args) {
      List<IntPtr> agents = new List<IntPtr> { Agent.Table() };
      int sabotage = 0;
      foreach (string arg in args) {
        if (arg == "--self-test") {
          sabotage = 1;
          continue;
        }
        IntPtr agent = interop_load_agent(arg);
        if (agent == IntPtr.Zero) return 1; // the runner said why on stderr
        agents.Add(agent);
      }
      int failed = interop_run_matrix(agents.ToArray(), agents.Count, "csharp", "csharp", sabotage);
      return failed == 0 ? 0 : 1;
    }
  }
}
