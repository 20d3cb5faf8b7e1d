// MissingLibrary.exe CASE: makes one first call into the binding (CASE names which) and prints
// what came of it on one line: "loaded" when the call worked, otherwise the exception's type,
// its inner exception's type and its message, tab-separated. OwnershipTest runs it in its own
// mono, once next to libdlbridge_csharp.so and once in a folder without it: every first call
// must then fail with one DllNotFoundException that names the library and how to install it.
using System;

namespace MissingLibrary {
  using DLBridge;

  static class Program {
    static void Call(string what) {
      switch (what) {
        case "FromArray": Tensor.FromArray(new float[] { 1, 2 }).Dispose(); break;
        case "Wrap": Tensor.Wrap(new float[4]).Dispose(); break;
        case "Allocate": Tensor.Allocate(Device.Cpu, DType.Float32, 2).Dispose(); break;
        case "ImportVersioned": Tensor.ImportVersioned(IntPtr.Zero); break;
        case "DTypeParse": DType.Parse("float32"); break;
        case "DeviceName": new Device(Device.TypeCuda, 1).ToString(); break;
        case "LiveCount": Console.Write(DLBridge.LiveCount > 0 ? "" : ""); break;
        case "CollectReleased": DLBridge.CollectReleased(); break;
        case "CudaIsAvailable": Console.Write(Cuda.IsAvailable ? "" : ""); break;
        case "StatusName": Status.Name(Status.ReadOnly); break;
        default: throw new ArgumentException("unknown case " + what);
      }
    }

    static int Main(string[] args) {
      try {
        Call(args[0]);
        Console.WriteLine("loaded");
      } catch (Exception e) {
        Console.WriteLine("{0}\t{1}\t{2}", e.GetType().FullName,
                          e.InnerException == null ? "-" : e.InnerException.GetType().FullName,
                          e.Message.Replace('\n', ' '));
      }
      return 0;
    }
  }
}
