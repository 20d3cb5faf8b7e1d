using System;
using System.Diagnostics;
using System.IO;
using System.Runtime.CompilerServices;
using NUnit.Framework;

namespace DLBridge.Tests {
  [TestFixture]
  public class OwnershipTest : LeakChecked {
    private static float[] Iota(int n) {
      float[] a = new float[n];
      for (int i = 0; i < n; i++) a[i] = i;
      return a;
    }

    [Test]
    public void WrappedArrayFreedByACConsumerOnAnotherThread([Values(false, true)] bool legacy) {
      DLBridge.CollectReleased();
      long released = DLBridge.ReleasedCount;
      Assert.AreEqual(0, DLBridge.QueuedReleases);
      float[] data = Iota(10);
      Tensor t = Tensor.Wrap(data);
      IntPtr exported = legacy ? t.ExportLegacy() : t.ExportVersioned();
      Assert.IsTrue(t.IsDisposed);
      TestUtil.ThrowsClosed(() => t.ToArray<float>());
      t.Dispose(); // still idempotent after an export
      // The consumer owns it now: it reads the pinned array and frees it on a new pthread, where
      // the release engine queues the token.
      Assert.AreEqual(45.0, Helper.ConsumeOnNewThread(exported, legacy ? 1 : 0));
      Assert.AreEqual(1, DLBridge.QueuedReleases, "released exactly once, natively, and queued");
      Assert.AreEqual(released, DLBridge.ReleasedCount, "nothing called into the runtime");
      DLBridge.CollectReleased();
      Assert.AreEqual(released + 1, DLBridge.ReleasedCount, "unpinned exactly once");
      Assert.AreEqual(0, DLBridge.QueuedReleases);
      DLBridge.CollectReleased();
      Assert.AreEqual(released + 1, DLBridge.ReleasedCount);
    }

    /// <summary>A foreign thread's release is drained by the next Dispose of any tensor on
    /// a C# thread, without an explicit CollectReleased.</summary>
    [Test]
    public void ForeignReleasesAreDrainedByTheNextDispose() {
      DLBridge.CollectReleased();
      long released = DLBridge.ReleasedCount;
      Tensor t = Tensor.Wrap(Iota(4));
      Helper.ConsumeOnNewThread(t.ExportVersioned(), 0);
      Assert.AreEqual(1, DLBridge.QueuedReleases);
      Tensor.Allocate(Device.Cpu, DType.Float32, 2).Dispose();
      Assert.AreEqual(0, DLBridge.QueuedReleases);
      Assert.AreEqual(released + 1, DLBridge.ReleasedCount);
    }

    [Test]
    public void ExportedVersionedTensorsAreDLPack13() {
      using (Tensor t = Tensor.FromArray(Iota(3))) {
        IntPtr p = t.ExportVersioned();
        Assert.AreEqual(1003, Helper.VersionOf(p));
        Assert.AreEqual(3.0, Helper.ConsumeOnNewThread(p, 0));
      }
    }

    [Test]
    public void ImportFromACProducer() {
      long deleted = Helper.DeletedCount();
      using (Tensor t = Tensor.ImportVersioned(Helper.ProduceVersioned(5, 1, 3, 0))) {
        Assert.AreEqual(new float[] { 0, 1, 2, 3, 4 }, t.ToArray<float>());
        Assert.IsFalse(t.IsExclusive); // the producer may still alias it
        using (Tensor view = t.Slice(new SliceRange(1, 3))) {
          t.Dispose();
          Assert.AreEqual(deleted, Helper.DeletedCount(), "the view keeps the producer's tensor");
          Assert.AreEqual(new float[] { 1, 2 }, view.ToArray<float>());
        }
      }
      Assert.AreEqual(deleted + 1, Helper.DeletedCount());
      using (Tensor t = Tensor.ImportLegacy(Helper.ProduceLegacy(4))) {
        Assert.AreEqual(new float[] { 0, 1, 2, 3 }, t.ToArray<float>());
        Assert.AreEqual(0UL, t.Flags);
      }
      Assert.AreEqual(deleted + 2, Helper.DeletedCount());
    }

    [Test]
    public void RejectedImportsStillCallTheDeleterOnce() {
      long deleted = Helper.DeletedCount();
      TestUtil.Throws(Status.UnsupportedVersion,
                      "DLPack major version 2 is not supported (dlbridge accepts major version 1)",
                      () => Tensor.ImportVersioned(Helper.ProduceVersioned(3, 2, 0, 0)));
      Assert.AreEqual(deleted + 1, Helper.DeletedCount());
      // An unknown flag bit: refused by validation, consumed all the same.
      DLPackException e = Assert.Throws<DLPackException>(
          () => Tensor.ImportVersioned(Helper.ProduceVersioned(3, 1, 3, 1L << 40)));
      Assert.AreEqual(Status.Unsupported, e.Status);
      Assert.AreEqual(deleted + 2, Helper.DeletedCount());
      TestUtil.Throws(Status.InvalidArgument, "tensor is NULL", () => Tensor.ImportVersioned(IntPtr.Zero));
    }

    [Test]
    public void ReadOnlyLegacyExportIsRefusedAndTheTensorStaysOpen() {
      using (Tensor t = Tensor.FromArray(Iota(2)))
      using (Tensor ro = t.ShareReadOnly()) {
        TestUtil.Throws(Status.ReadOnly,
            "cannot export a read-only tensor as a legacy DLManagedTensor, which has no READ_ONLY flag",
            () => ro.ExportLegacy());
        Assert.IsFalse(ro.IsDisposed);
        Assert.AreEqual(new float[] { 0, 1 }, ro.ToArray<float>());
      }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Abandon(int n, long[] releasedBefore) {
      for (int i = 0; i < n; i++) {
        Tensor.Allocate(Device.Cpu, DType.Float32, 8);
        Tensor.Wrap(new int[4]);
      }
    }

    [Test]
    public void TensorsNeverDisposedAreFreedByTheFinalizer() {
      DLBridge.CollectReleased();
      long collected = DLBridge.ReleasedCount;
      long live = DLBridge.LiveCount;
      Abandon(1000, null);
      Assert.AreEqual(live, TestUtil.LiveAfterGc(live));
      DLBridge.CollectReleased();
      Assert.AreEqual(collected + 1000, DLBridge.ReleasedCount, "every wrapped array unpinned");
    }

    [Test]
    public void WrappedNativeMemoryRunsItsReleaseOnce() {
      IntPtr memory = System.Runtime.InteropServices.Marshal.AllocHGlobal(64);
      int releases = 0;
      Tensor t = Tensor.WrapNative(memory, Device.Cpu, DType.UInt8, new long[] { 8, 8 },
                                   release: () => { releases++; System.Runtime.InteropServices.Marshal.FreeHGlobal(memory); });
      Tensor view = t.Reshape(64);
      t.Dispose();
      Assert.AreEqual(0, releases);
      view.Dispose();
      Assert.AreEqual(1, releases);
      DLBridge.CollectReleased();
      Assert.AreEqual(1, releases);
      // Refused: nothing changes hands, the release does not run.
      TestUtil.Throws(Status.InvalidArgument, "data is NULL but the tensor has 4 elements",
          () => Tensor.WrapNative(IntPtr.Zero, Device.Cpu, DType.UInt8, new long[] { 4 }, release: () => releases++));
      // A byte count the elements reach beyond: the core's buffer check.
      IntPtr small = System.Runtime.InteropServices.Marshal.AllocHGlobal(64);
      try {
        TestUtil.Throws(Status.InvalidArgument, "the tensor's elements reach bytes [8, 72) of a buffer of 64 bytes",
            () => Tensor.WrapNative(small, Device.Cpu, DType.UInt8, new long[] { 8, 8 }, release: () => releases++,
                                    byteOffset: 8, byteCount: 64));
      } finally {
        System.Runtime.InteropServices.Marshal.FreeHGlobal(small);
      }
      DLBridge.CollectReleased();
      Assert.AreEqual(1, releases);
    }

    /// <summary>A foreign thread frees a wrapped array's tensor while the runtime shuts down:
    /// the process must exit cleanly (Shutdown.exe, run in its own mono).</summary>
    [Test]
    public void DeleterDuringShutdownDoesNotCrash() {
      string dir = Environment.GetEnvironmentVariable("DLBRIDGE_CSHARP_BUILD_DIR");
      string mono = Environment.GetEnvironmentVariable("DLBRIDGE_MONO");
      if (dir == null || mono == null) Assert.Ignore("run through run_nunit.py");
      for (int delay = 0; delay <= 30000; delay += 2500) {
        ProcessStartInfo info = new ProcessStartInfo(mono, Path.Combine(dir, "Shutdown.exe") + " " + delay);
        info.UseShellExecute = false;
        info.RedirectStandardOutput = true;
        info.WorkingDirectory = dir;
        using (Process p = Process.Start(info)) {
          string output = p.StandardOutput.ReadToEnd();
          p.WaitForExit();
          Assert.AreEqual(0, p.ExitCode, "delay " + delay + ": " + output);
          Assert.AreEqual("exported", output.Trim());
        }
      }
    }
  }
}
