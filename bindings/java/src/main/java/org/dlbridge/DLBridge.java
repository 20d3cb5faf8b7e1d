package org.dlbridge;

import java.util.Optional;

/**
 * Library-wide information and the device runtimes (CUDA and OpenCL: availability with the
 * reason, device counts, pointers, stream handshakes; {@link Device#synchronize()} waits for a
 * device); {@code java -cp dlbridge.jar org.dlbridge.DLBridge} runs a self-check.
 */
public final class DLBridge {
  /**
   * The consumer-stream value of {@link #cudaStreamHandshake} that stands for "not given": the
   * legacy default stream (DLB_CUDA_STREAM_NONE).
   */
  public static final long CUDA_STREAM_NONE = DLBridgeNativeConstants.DLB_CUDA_STREAM_NONE;

  private DLBridge() {}

  /**
   * The version of the native dlbridge library inside this jar (the core's
   * {@code dlb_version_string}), the same as the jar's own version.
   *
   * @return the version, such as "0.2.0"
   */
  public static String version() {
    return DLBridgeNative.dlb_version_string();
  }

  /**
   * Tensors made by the native library and not yet freed, across all threads (leak checks).
   *
   * @return the number of live tensors
   */
  public static long liveCount() {
    return DLBridgeNative.dlb_tensor_live_count();
  }

  /** The error {@code check} throws, or empty when it returns. */
  private static Optional<DLPackException> failure(Runnable check) {
    try {
      check.run();
      return Optional.empty();
    } catch (DLPackException e) {
      return Optional.of(e);
    }
  }

  // ---- channels across machines ------------------------------------------------------------

  /**
   * Whether remote channels (tcp:// and ucx:// addresses) can be made in this process: UCX and
   * libcrypto load ({@code dlb_remote_available}).
   *
   * @return true when they can; {@link #remoteUnavailableReason()} says why not
   */
  public static boolean remoteIsAvailable() {
    return remoteUnavailableReason().isEmpty();
  }

  /**
   * Why remote channels cannot be made here: {@link Status#UNSUPPORTED} with the core's message,
   * which names what is missing and the packages that bring it; empty when they can.
   *
   * @return the reason, or empty
   */
  public static Optional<DLPackException> remoteUnavailableReason() {
    return failure(DLBridgeNative::dlb_remote_available);
  }

  // ---- CUDA ------------------------------------------------------------------------------

  /**
   * Whether CUDA work can run here (built with CUDA, a driver, at least one device).
   *
   * @return true when it can; {@link #cudaUnavailableReason()} says why not
   */
  public static boolean cudaIsAvailable() {
    return cudaUnavailableReason().isEmpty();
  }

  /**
   * Why CUDA cannot run here: {@link Status#DEVICE_UNAVAILABLE} ("no CUDA driver found", "no
   * CUDA device") or {@link Status#UNSUPPORTED} (a library built without CUDA), with the core's
   * message; empty when it can.
   *
   * @return the reason, or empty
   */
  public static Optional<DLPackException> cudaUnavailableReason() {
    return failure(DLBridgeNative::dlb_cuda_is_available);
  }

  /**
   * The number of CUDA devices; throws {@link DLPackException} with {@link
   * Status#DEVICE_UNAVAILABLE} without a driver or device.
   *
   * @return the device count (at least 1)
   */
  public static int cudaDeviceCount() {
    int[] count = new int[1];
    DLBridgeNative.dlb_cuda_device_count(count);
    return count[0];
  }

  /**
   * The device that CUDA memory at {@code pointer} lives on.
   *
   * @param pointer an address of memory CUDA knows
   * @return its device, {@link Device#CPU} when CUDA does not know it
   */
  public static Device cudaPointerDevice(long pointer) {
    long[] out = new long[1];
    DLBridgeNative.dlb_cuda_pointer_device(pointer, out);
    return Device.fromPacked(out[0]);
  }

  /**
   * The DLPack stream handshake: work queued later on {@code consumerStream} waits for the work
   * queued so far on {@code producerStream} (a cudaStream_t of device {@code deviceId}, 0 for the
   * legacy default stream), without blocking the host. {@code consumerStream} follows the DLPack
   * convention: {@link #CUDA_STREAM_NONE} or 1 the legacy default stream, 2 the per-thread
   * default stream, -1 no synchronisation, other positive values a cudaStream_t.
   *
   * @param deviceId the CUDA device both streams belong to
   * @param producerStream the stream whose work so far is waited for
   * @param consumerStream the stream made to wait
   */
  public static void cudaStreamHandshake(int deviceId, long producerStream, long consumerStream) {
    DLBridgeNative.dlb_cuda_stream_handshake(deviceId, producerStream, consumerStream);
  }

  // ---- OpenCL ----------------------------------------------------------------------------

  /**
   * The OpenCL objects behind one device; they belong to the library (do not release them).
   *
   * @param platform the cl_platform_id
   * @param device the cl_device_id
   * @param context the cl_context
   * @param queue the library's in-order cl_command_queue
   */
  public record OpenCLDeviceObjects(long platform, long device, long context, long queue) {}

  /**
   * Whether OpenCL work can run here (a platform with at least one device was found).
   *
   * @return true when it can; {@link #openclUnavailableReason()} says why not
   */
  public static boolean openclIsAvailable() {
    return openclUnavailableReason().isEmpty();
  }

  /**
   * Why OpenCL cannot run here ({@link Status#DEVICE_UNAVAILABLE}: no loader, platform or
   * device; {@link Status#UNSUPPORTED}: built without OpenCL), with the core's message; empty
   * when it can.
   *
   * @return the reason, or empty
   */
  public static Optional<DLPackException> openclUnavailableReason() {
    return failure(DLBridgeNative::dlb_opencl_is_available);
  }

  /**
   * The number of OpenCL devices over all platforms; throws {@link DLPackException} when there is
   * none.
   *
   * @return the device count (at least 1)
   */
  public static int openclDeviceCount() {
    int[] count = new int[1];
    DLBridgeNative.dlb_opencl_device_count(count);
    return count[0];
  }

  /**
   * The name of an OpenCL device.
   *
   * @param deviceId the OpenCL device's index
   * @return "platform name / device name"
   */
  public static String openclDeviceName(int deviceId) {
    byte[] text = new byte[DLBridgeNativeConstants.DLB_ERROR_MESSAGE_SIZE];
    DLBridgeNative.dlb_opencl_device_name(deviceId, text);
    return DType.cString(text);
  }

  /**
   * The cl_platform_id, cl_device_id, cl_context and the library's in-order cl_command_queue of
   * OpenCL device {@code deviceId}, as addresses. The queue is a stream for
   * {@link Tensor#copyToAsync(Device, long)} and {@link Device#synchronize(long)}.
   *
   * @param deviceId the OpenCL device's index
   * @return the objects, owned by the library
   */
  public static OpenCLDeviceObjects openclDeviceObjects(int deviceId) {
    long[] platform = new long[1];
    long[] device = new long[1];
    long[] context = new long[1];
    long[] queue = new long[1];
    DLBridgeNative.dlb_opencl_device_objects(deviceId, platform, device, context, queue);
    return new OpenCLDeviceObjects(platform[0], device[0], context[0], queue[0]);
  }

  /**
   * Commands queued later on {@code consumerQueue} start only after those queued so far on
   * {@code producerQueue} complete, without blocking the host (same cl_context).
   *
   * @param producerQueue the cl_command_queue whose commands so far are waited for
   * @param consumerQueue the cl_command_queue made to wait
   */
  public static void openclQueueHandshake(long producerQueue, long consumerQueue) {
    DLBridgeNative.dlb_opencl_queue_handshake(producerQueue, consumerQueue);
  }

  /**
   * Prints the version and round-trips one tensor through the native library: {@code java -cp
   * dlbridge.jar org.dlbridge.DLBridge}.
   *
   * @param args ignored
   */
  public static void main(String[] args) {
    System.out.println("dlbridge " + version() + " (" + NativeLoader.platform() + ")");
    try (Tensor t = Tensor.fromArray(new float[] {1, 2, 3, 4}, 2, 2); Tensor tt = t.transpose()) {
      float[] v = tt.toFloatArray();
      if (v[1] != 3f) {
        throw new AssertionError("transpose gave " + java.util.Arrays.toString(v));
      }
    }
    if (liveCount() != 0) {
      throw new AssertionError("leaked " + liveCount() + " tensors");
    }
    System.out.println("self-check ok");
  }
}
