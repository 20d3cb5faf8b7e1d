package org.dlbridge;

/** Library-wide information; {@code java -cp dlbridge.jar org.dlbridge.DLBridge} runs a self-check. */
public final class DLBridge {
  private DLBridge() {}

  /** The version of the native dlbridge library inside this jar, such as "0.1.0". */
  public static String version() {
    return DLBridgeNative.dlb_version_string();
  }

  /** Tensors made by the native library and not yet freed, across all threads (leak checks). */
  public static long liveTensorCount() {
    return DLBridgeNative.dlb_tensor_live_count();
  }

  /** Prints the version and round-trips one tensor through the native library. */
  public static void main(String[] args) {
    System.out.println("dlbridge " + version() + " (" + NativeLoader.platform() + ")");
    try (Tensor t = Tensor.fromArray(new float[] {1, 2, 3, 4}, 2, 2); Tensor tt = t.transpose()) {
      float[] v = tt.toFloatArray();
      if (v[1] != 3f) {
        throw new AssertionError("transpose gave " + java.util.Arrays.toString(v));
      }
    }
    if (liveTensorCount() != 0) {
      throw new AssertionError("leaked " + liveTensorCount() + " tensors");
    }
    System.out.println("self-check ok");
  }
}
