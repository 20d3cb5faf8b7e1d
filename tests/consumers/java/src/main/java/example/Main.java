package example;

import org.dlbridge.DLBridge;
import org.dlbridge.DType;
import org.dlbridge.Device;
import org.dlbridge.Slice;
import org.dlbridge.Tensor;

/** What a new user writes first: make a tensor, fill it, view it, hand it over and take it back. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    try (Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, 2, 3)) {
      t.copyFrom(new float[] {0, 1, 2, 3, 4, 5});
      t.setFloat(50f, 1, 2);
      try (Tensor column = t.slice(Slice.ALL, Slice.of(2, 3));
          Tensor back = Tensor.importVersioned(column.copyTo(Device.CPU).exportVersioned())) {
        float[] values = back.toFloatArray();
        System.out.println(t + " column 2: " + values[0] + ", " + values[1]);
      }
    }
    System.out.println("live tensors: " + DLBridge.liveCount());
    // The time main returns: the caller checks that the JVM exits soon after.
    System.out.println("main returns at " + System.currentTimeMillis());
  }
}
