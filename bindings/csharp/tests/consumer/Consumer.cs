// A consumer of the DLBridge package, built by tests/package_test.sh against the package's
// lib/ only (outside the source tree). Prints what it did; exit status 0 on success.
using System;

namespace Consumer {
  // Inside the namespace, `DLBridge.X` names the class DLBridge.DLBridge (at file scope it would
  // name the namespace).
  using DLBridge;

  static class Program {
    static int Main() {
      using (Tensor t = Tensor.FromArray(new float[] { 1, 2, 3, 4, 5, 6 }, 2, 3))
      using (Tensor tt = t.Transpose())
      using (Tensor wrapped = Tensor.Wrap(new int[] { 7, 8, 9 })) {
        float[] values = tt.ToArray<float>();
        Console.WriteLine("dlbridge {0}: {1} -> [{2}]", DLBridge.Version, tt, string.Join(", ", values));
        if (values[1] != 4) return 1;
        try {
          Tensor.Allocate(Device.Cpu, DType.Float32, -1);
          return 2;
        } catch (ArgumentException e) {
          // DLB_ERR_INVALID_ARGUMENT is a DLPackArgumentException: an ArgumentException that
          // carries the core's status and message.
          Console.WriteLine("refused: {0}", e);
          if (((IDLPackError)e).Status != Status.InvalidArgument) return 2;
        }
        using (Tensor back = Tensor.ImportVersioned(wrapped.ExportVersioned())) {
          if (back.ToArray<int>()[2] != 9) return 3;
        }
      }
      DLBridge.CollectReleased();
      Console.WriteLine("live tensors: {0}, wrapped arrays released: {1}", DLBridge.LiveCount, DLBridge.ReleasedCount);
      return DLBridge.LiveCount == 0 && DLBridge.ReleasedCount == 1 ? 0 : 4;
    }
  }
}
