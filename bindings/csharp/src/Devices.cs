using System;

namespace DLBridge {
  /// <summary>CUDA, through the core (every CUDA function of the C API). A library built
  /// without CUDA reports <c>Status.Unsupported</c> ("built without CUDA support"); a machine
  /// without a driver or a device <c>Status.DeviceUnavailable</c>. Nothing here allocates
  /// anything the caller must free; streams stay the caller's.</summary>
  public static class Cuda {
    /// <summary>The consumer-stream value that stands for "not given" (DLB_CUDA_STREAM_NONE).</summary>
    public const long StreamNone = DLBridgeNative.DLB_CUDA_STREAM_NONE;

    /// <summary>True when CUDA work can run here.</summary>
    public static bool IsAvailable { get { return UnavailableReason == null; } }

    /// <summary>Null when CUDA is available, otherwise the core's exception saying why.</summary>
    public static DLPackException UnavailableReason {
      get {
        try {
          DLBridgeNative.dlb_cuda_is_available();
          return null;
        } catch (DLPackException e) {
          return e;
        }
      }
    }

    /// <summary>The number of CUDA devices; throws when there is no driver or device.</summary>
    public static int DeviceCount {
      get {
        int[] count = new int[1];
        DLBridgeNative.dlb_cuda_device_count(count);
        return count[0];
      }
    }

    /// <summary>The DLPack device <paramref name="pointer"/> lives on (the CPU for memory CUDA
    /// does not know).</summary>
    public static Device PointerDevice(IntPtr pointer) {
      long[] outValue = new long[1];
      DLBridgeNative.dlb_cuda_pointer_device(pointer.ToInt64(), outValue);
      return new Device(outValue[0]);
    }

    /// <summary>The DLPack stream handshake (see dlb_cuda_stream_handshake): makes the work
    /// queued on <paramref name="producerStream"/> visible to the consumer's stream, without
    /// blocking the host. <paramref name="consumerStream"/> follows DLPack's convention
    /// (<see cref="StreamNone"/> or 1: legacy default, 2: per-thread default, -1: no sync).</summary>
    public static void StreamHandshake(int deviceId, IntPtr producerStream, long consumerStream) {
      DLBridgeNative.dlb_cuda_stream_handshake(deviceId, producerStream.ToInt64(), consumerStream);
    }

    /// <summary>Waits until the work on <paramref name="stream"/> (IntPtr.Zero: all work on the
    /// device) is done.</summary>
    public static void Synchronize(int deviceId = 0, IntPtr stream = default(IntPtr)) {
      Device.Cuda(deviceId).Synchronize(stream);
    }
  }

  /// <summary>The native objects behind one OpenCL device. They belong to the library and live
  /// until the process ends.</summary>
  public struct OpenCLDeviceObjects {
    /// <summary>The cl_platform_id.</summary>
    public IntPtr Platform;
    /// <summary>The cl_device_id.</summary>
    public IntPtr Device;
    /// <summary>The library's cl_context for the device (buffers of tensors on this device belong to it).</summary>
    public IntPtr Context;
    /// <summary>The library's in-order cl_command_queue for the device.</summary>
    public IntPtr Queue;
  }

  /// <summary>OpenCL, through the core (every OpenCL function of the C API). Device ids number
  /// the devices of all platforms in order.</summary>
  public static class OpenCL {
    /// <summary>True when an OpenCL platform with at least one device was found.</summary>
    public static bool IsAvailable { get { return UnavailableReason == null; } }

    /// <summary>Null when OpenCL is available, otherwise the core's exception saying why.</summary>
    public static DLPackException UnavailableReason {
      get {
        try {
          DLBridgeNative.dlb_opencl_is_available();
          return null;
        } catch (DLPackException e) {
          return e;
        }
      }
    }

    /// <summary>The number of OpenCL devices of all platforms; throws when OpenCL is not available.</summary>
    public static int DeviceCount {
      get {
        int[] count = new int[1];
        DLBridgeNative.dlb_opencl_device_count(count);
        return count[0];
      }
    }

    /// <summary>The platform, device, context and queue the library uses for device <paramref name="deviceId"/>.</summary>
    public static OpenCLDeviceObjects DeviceObjects(int deviceId) {
      long[] platform = new long[1], device = new long[1], context = new long[1], queue = new long[1];
      DLBridgeNative.dlb_opencl_device_objects(deviceId, platform, device, context, queue);
      OpenCLDeviceObjects o;
      o.Platform = new IntPtr(platform[0]);
      o.Device = new IntPtr(device[0]);
      o.Context = new IntPtr(context[0]);
      o.Queue = new IntPtr(queue[0]);
      return o;
    }

    /// <summary>"platform name / device name".</summary>
    public static string DeviceName(int deviceId) {
      byte[] buffer = new byte[DLBridgeNative.DLB_ERROR_MESSAGE_SIZE];
      DLBridgeNative.dlb_opencl_device_name(deviceId, buffer);
      return DType.Text(buffer);
    }

    /// <summary>Makes the commands queued so far on <paramref name="producerQueue"/> complete
    /// before any command queued afterwards on <paramref name="consumerQueue"/> (same context),
    /// without blocking the host.</summary>
    public static void QueueHandshake(IntPtr producerQueue, IntPtr consumerQueue) {
      DLBridgeNative.dlb_opencl_queue_handshake(producerQueue.ToInt64(), consumerQueue.ToInt64());
    }

    /// <summary>Waits until the work on <paramref name="queue"/> (IntPtr.Zero: all work on the
    /// device) is done.</summary>
    public static void Synchronize(int deviceId = 0, IntPtr queue = default(IntPtr)) {
      Device.OpenCL(deviceId).Synchronize(queue);
    }
  }
}
