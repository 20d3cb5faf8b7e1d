package org.dlbridge;

import static org.dlbridge.Status.DEVICE_UNAVAILABLE;
import static org.dlbridge.Status.UNSUPPORTED;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Devices and streams: OpenCL for real (PoCL in CI), CUDA by its exact unavailable error. */
class DeviceTest extends LeakChecked {
  private static final float[] VALUES = {1, 2, 3, 4, 5, 6};

  /** OpenCL device 0, or a skip; with DLB_REQUIRE_OPENCL=1 (CI, PoCL) finding none fails. */
  private static Device opencl() {
    if (!DLBridge.openclIsAvailable()) {
      assertFalse("1".equals(System.getenv("DLB_REQUIRE_OPENCL")),
          "DLB_REQUIRE_OPENCL=1 but no OpenCL device was found");
      assumeTrue(false, "no OpenCL device");
    }
    return Device.opencl(0);
  }

  @Test
  void openclDevicesAreListed() {
    Device cl = opencl();
    assertTrue(DLBridge.openclDeviceCount() >= 1);
    assertFalse(DLBridge.openclDeviceName(0).isEmpty());
    assertTrue(DLBridge.openclDeviceName(0).contains(" / "), DLBridge.openclDeviceName(0));
    DLBridge.OpenCLDeviceObjects o = DLBridge.openclDeviceObjects(0);
    assertNotEquals(0L, o.platform());
    assertNotEquals(0L, o.device());
    assertNotEquals(0L, o.context());
    assertNotEquals(0L, o.queue());
    assertFalse(cl.isHostReadable());
    assertEquals("opencl:0", cl.toString());
    assertEquals(cl, Device.parse("opencl:0"));
  }

  @Test
  void openclCopiesRoundTrip() {
    Device cl = opencl();
    try (Tensor host = Tensor.fromArray(VALUES, 2, 3);
        Tensor dev = host.copyTo(cl);
        Tensor back = dev.copyTo(Device.CPU)) {
      assertEquals(cl, dev.device());
      assertArrayEquals(new long[] {2, 3}, dev.shape());
      assertArrayEquals(VALUES, back.toFloatArray());
      assertArrayEquals(VALUES, dev.toFloatArray()); // read through a host copy
      // Device memory is not host memory: no ByteBuffer over it.
      DLPackException e = assertThrows(DLPackException.class, dev::asByteBuffer);
      assertEquals(UNSUPPORTED, e.getStatus(), e.getMessage());
    }
  }

  @Test
  void openclAllocateAndCopyInto() {
    Device cl = opencl();
    try (Tensor host = Tensor.fromArray(VALUES, 3, 2);
        Tensor dev = Tensor.allocate(cl, DType.FLOAT32, 3, 2);
        Tensor t = dev.transpose();
        Tensor out = Tensor.allocate(Device.CPU, DType.FLOAT32, 2, 3)) {
      host.copyInto(dev);
      t.copyInto(out); // strided device view into host memory
      assertArrayEquals(new float[] {1, 3, 5, 2, 4, 6}, out.toFloatArray());
    }
  }

  @Test
  void openclAsyncCopiesOnTheLibraryQueue() {
    Device cl = opencl();
    long queue = DLBridge.openclDeviceObjects(0).queue();
    try (Tensor host = Tensor.fromArray(VALUES, 6);
        Tensor dev = host.copyToAsync(cl, queue);
        Tensor back = Tensor.allocate(Device.CPU, DType.FLOAT32, 6)) {
      dev.copyIntoAsync(back, queue);
      cl.synchronize(queue);
      assertArrayEquals(VALUES, back.toFloatArray());
      // The same queue on both sides: nothing to wait for.
      DLBridge.openclQueueHandshake(queue, queue);
      cl.synchronize();
    }
  }

  /**
   * The exact reason CUDA cannot run here: this library built with CUDA on a machine without a
   * driver, or built without CUDA.
   */
  private static void assertCudaUnavailable(Executable call) {
    assertCudaReason(assertThrows(DLPackException.class, call));
  }

  private static void assertCudaReason(DLPackException e) {
    if (e.getStatus() == DEVICE_UNAVAILABLE) {
      assertEquals("no CUDA driver found", e.getMessage());
    } else {
      assertEquals(UNSUPPORTED, e.getStatus(), e.getMessage());
      assertEquals("dlbridge was built without CUDA support", e.getMessage());
    }
  }

  @Test
  void cudaWithoutAGpuFailsWithTheCoreReason() {
    assumeFalse(DLBridge.cudaIsAvailable(), "a CUDA device is present");
    assertCudaReason(DLBridge.cudaUnavailableReason().orElseThrow());
    assertCudaUnavailable(DLBridge::cudaDeviceCount);
    assertCudaUnavailable(() -> DLBridge.cudaStreamHandshake(0, 0, DLBridge.CUDA_STREAM_NONE));
    assertCudaUnavailable(() -> DLBridge.cudaPointerDevice(1234));
    try (Tensor host = Tensor.fromArray(VALUES, 6)) {
      DLPackException e = assertThrows(DLPackException.class, () -> host.copyTo(Device.cuda(0)));
      assertTrue(e.getStatus() == DEVICE_UNAVAILABLE || e.getStatus() == UNSUPPORTED,
          e.getMessage());
      e = assertThrows(DLPackException.class,
          () -> Tensor.allocate(Device.cuda(0), DType.FLOAT32, 2).close());
      assertTrue(e.getStatus() == DEVICE_UNAVAILABLE || e.getStatus() == UNSUPPORTED,
          e.getMessage());
    }
  }

  @Test
  void availabilityAndItsReasonAgree() {
    assertEquals(DLBridge.cudaIsAvailable(), DLBridge.cudaUnavailableReason().isEmpty());
    assertEquals(DLBridge.openclIsAvailable(), DLBridge.openclUnavailableReason().isEmpty());
    DLBridge.openclUnavailableReason().ifPresent(e -> {
      assertTrue(e.getStatus() == DEVICE_UNAVAILABLE || e.getStatus() == UNSUPPORTED,
          e.getMessage());
      assertFalse(e.getMessage().isEmpty());
      assertThrows(DLPackException.class, DLBridge::openclDeviceCount);
    });
    if (DLBridge.cudaIsAvailable()) {
      assertTrue(DLBridge.cudaDeviceCount() >= 1);
    }
  }

  @Test
  void cpuSynchronizeIsANoOp() {
    Device.CPU.synchronize();
    Device.CPU.synchronize(0);
    assertTrue(Device.CPU.isHostReadable());
    assertEquals("cpu", Device.CPU.toString());
    assertEquals(Device.of(3, 0), Device.parse("cuda_host"));
    assertEquals("device_type_99:3", Device.of(99, 3).toString());
    assertEquals(Device.of(99, 3), Device.parse("device_type_99:3"));
  }
}
