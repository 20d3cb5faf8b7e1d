using System;
using NUnit.Framework;

namespace DLBridge.Tests {
  [TestFixture]
  public class DeviceTest : LeakChecked {
    [Test]
    public void CudaReportsWhyItIsUnavailable() {
      DLPackException reason = Cuda.UnavailableReason;
      if (reason == null) {
        Assert.IsTrue(Cuda.IsAvailable);
        Assert.Greater(Cuda.DeviceCount, 0);
        using (Tensor host = Tensor.FromArray(new float[] { 1, 2, 3 }))
        using (Tensor dev = host.CopyTo(Device.Cuda(0)))
        using (Tensor back = dev.CopyTo(Device.Cpu)) {
          Assert.AreEqual(Device.Cuda(0), dev.Device);
          Assert.IsFalse(dev.IsHostReadable);
          Assert.AreEqual(new float[] { 1, 2, 3 }, back.ToArray<float>());
          Assert.AreEqual(new float[] { 1, 2, 3 }, dev.ToArray<float>()); // copied to the CPU first
          Assert.AreEqual(Device.Cpu, Cuda.PointerDevice(IntPtr.Zero));
          Cuda.StreamHandshake(0, IntPtr.Zero, Cuda.StreamNone);
          Cuda.Synchronize(0);
        }
        return;
      }
      Assert.IsFalse(Cuda.IsAvailable);
      Assert.That(reason.Status == Status.Unsupported || reason.Status == Status.DeviceUnavailable,
                  reason.ToString());
      if (reason.Status == Status.Unsupported) {
        Assert.AreEqual("dlbridge was built without CUDA support", reason.Message);
      }
      DLPackException e = Assert.Throws<DLPackException>(() => { var unused = Cuda.DeviceCount; });
      Assert.AreEqual(reason.Status, e.Status);
      Assert.Throws<DLPackException>(() => Cuda.StreamHandshake(0, IntPtr.Zero, Cuda.StreamNone));
      Assert.Throws<DLPackException>(() => Tensor.Allocate(Device.Cuda(0), DType.Float32, 4));
    }

    [Test]
    public void CudaStreamHandshakeRefusesZero() {
      if (!Cuda.IsAvailable) Assert.Ignore("no CUDA here: " + Cuda.UnavailableReason.Message);
      Assert.Catch<DLPackArgumentException>(() => Cuda.StreamHandshake(0, IntPtr.Zero, 0));
    }

    [Test]
    public void OpenCLRoundTripOnAQueue() {
      DLPackException reason = OpenCL.UnavailableReason;
      if (reason != null) {
        if (Environment.GetEnvironmentVariable("DLB_REQUIRE_OPENCL") == "1") {
          Assert.Fail("OpenCL required but unavailable: " + reason);
        }
        Assert.That(reason.Status == Status.Unsupported || reason.Status == Status.DeviceUnavailable);
        Assert.Ignore("no OpenCL here: " + reason.Message);
      }
      Assert.Greater(OpenCL.DeviceCount, 0);
      Assert.IsNotEmpty(OpenCL.DeviceName(0));
      OpenCLDeviceObjects o = OpenCL.DeviceObjects(0);
      Assert.AreNotEqual(IntPtr.Zero, o.Queue);
      Assert.AreNotEqual(IntPtr.Zero, o.Context);
      float[] values = { 1, 2, 3, 4, 5, 6 };
      using (Tensor host = Tensor.FromArray(values, 2, 3))
      using (Tensor dev = host.CopyToAsync(Device.OpenCL(0), o.Queue)) {
        OpenCL.Synchronize(0, o.Queue);
        Assert.AreEqual(Device.OpenCL(0), dev.Device);
        TestUtil.Throws(Status.Unsupported, "opencl:0 memory is not readable by the host: copy the tensor to the cpu first",
                        () => dev.HostData(false));
        using (Tensor t = dev.Transpose())
        using (Tensor back = t.CopyToAsync(Device.Cpu, o.Queue)) {
          OpenCL.QueueHandshake(o.Queue, o.Queue);
          Device.OpenCL(0).Synchronize(o.Queue);
          Assert.AreEqual(new float[] { 1, 4, 2, 5, 3, 6 }, back.ToArray<float>());
        }
        using (Tensor dst = Tensor.Allocate(Device.OpenCL(0), DType.Float32, 2, 3)) {
          host.CopyIntoAsync(dst, o.Queue);
          OpenCL.Synchronize(0, o.Queue);
          Assert.AreEqual(values, dst.ToArray<float>());
        }
      }
    }
  }
}
