// Shutdown.exe DELAY_US: wraps managed arrays, exports them to a C consumer that frees them
// from detached pthreads after DELAY_US microseconds, and returns from Main at once, so that the
// deleters run while the runtime shuts down or after it is gone. Exit status 0 is the test.
using System;
using System.Runtime.InteropServices;
using DLBridge;

static class Shutdown {
  [DllImport("dlbridge_cs_test_helpers", EntryPoint = "foreign_dlpack_free_later")]
  static extern void FreeLater(IntPtr tensor, long delayMicroseconds);

  static int Main(string[] args) {
    long delay = long.Parse(args[0]);
    for (int i = 0; i < 16; i++) {
      Tensor t = Tensor.Wrap(new float[1024]);
      FreeLater(t.ExportVersioned(), delay + i * 100);
    }
    // A tensor nobody disposed, for the finalizer at shutdown.
    Tensor.Wrap(new int[8]);
    Console.WriteLine("exported");
    return 0;
  }
}
