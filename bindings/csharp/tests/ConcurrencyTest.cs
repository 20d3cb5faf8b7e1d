using System;
using System.Collections.Concurrent;
using System.Threading;
using NUnit.Framework;

namespace DLBridge.Tests {
  [TestFixture]
  public class ConcurrencyTest : LeakChecked {
    /// <summary>8 threads create, share and dispose 100k tensors; the shares are disposed by
    /// other threads than the ones that made them.</summary>
    [Test]
    public void EightThreadsHundredThousandTensors() {
      const int threads = 8, perThread = 12500;
      DLBridge.CollectReleased();
      long collected = DLBridge.ReleasedCount;
      var handoff = new ConcurrentQueue<Tensor>();
      Exception failure = null;
      int wrapped = 0;
      Thread[] workers = new Thread[threads];
      for (int w = 0; w < threads; w++) {
        workers[w] = new Thread(() => {
          try {
            float[] values = { 1, 2, 3, 4 };
            for (int i = 0; i < perThread; i++) {
              Tensor t;
              switch (i % 3) {
                case 0: t = Tensor.Allocate(Device.Cpu, DType.Float32, 2, 2); break;
                case 1: t = Tensor.FromArray(values, 2, 2); break;
                default: t = Tensor.Wrap(new float[4], 2, 2); Interlocked.Increment(ref wrapped); break;
              }
              handoff.Enqueue(t.Share());
              if (i % 2 == 0) t.Dispose(); else handoff.Enqueue(t);
              Tensor other;
              if (handoff.TryDequeue(out other)) {
                Assert.AreEqual(4, other.ElementCount);
                other.Dispose();
              }
            }
          } catch (Exception e) {
            failure = e;
          }
        });
        workers[w].Start();
      }
      foreach (Thread t in workers) t.Join();
      Tensor rest;
      while (handoff.TryDequeue(out rest)) rest.Dispose();
      Assert.IsNull(failure, failure == null ? "" : failure.ToString());
      DLBridge.CollectReleased();
      Assert.AreEqual(collected + wrapped, DLBridge.ReleasedCount, "every wrapped array unpinned once");
    }

    /// <summary>One tensor disposed by one thread while others use it: each use either
    /// succeeds or throws ObjectDisposedException, never touches freed memory.</summary>
    [Test]
    public void DisposeRacesWithUse() {
      for (int round = 0; round < 200; round++) {
        Tensor t = Tensor.FromArray(new double[] { 1, 2, 3 });
        int ok = 0, disposed = 0;
        Thread[] users = new Thread[3];
        for (int u = 0; u < users.Length; u++) {
          users[u] = new Thread(() => {
            for (int i = 0; i < 50; i++) {
              try {
                Assert.AreEqual(6.0, t.ToArray<double>()[0] + t.ToArray<double>()[1] + t.ToArray<double>()[2]);
                Interlocked.Increment(ref ok);
              } catch (ObjectDisposedException) {
                Interlocked.Increment(ref disposed);
              }
            }
          });
          users[u].Start();
        }
        t.Dispose();
        foreach (Thread u in users) u.Join();
        Assert.AreEqual(150, ok + disposed);
      }
    }

    /// <summary>Exports racing a Dispose of the same tensor (refused legacy exports of a
    /// READ_ONLY tensor, accepted legacy and versioned ones): each reference ends with exactly
    /// one owner. The export either gets it (the tensor is then the consumer's) or throws, and
    /// the tensor is freed once either way.</summary>
    [Test]
    public void ExportRacesWithDispose() {
      DLBridge.CollectReleased();
      long collected = DLBridge.ReleasedCount;
      int wrapped = 0;
      for (int round = 0; round < 600; round++) {
        Tensor t = round % 3 == 0 ? Tensor.Allocate(Device.Cpu, DType.Float32, new long[] { 2 }, null, true)
                                  : Tensor.Wrap(new float[2]);
        if (round % 3 != 0) wrapped++;
        IntPtr exported = IntPtr.Zero;
        Exception failure = null;
        int started = 0;
        var exporter = new Thread(() => {
          Volatile.Write(ref started, 1);
          while (Volatile.Read(ref started) != 2) {} // starts with the Dispose below
          try {
            exported = round % 3 == 2 ? t.ExportVersioned() : t.ExportLegacy();
          } catch (ObjectDisposedException) {
          } catch (DLPackException e) {
            if (e.Status != Status.ReadOnly) failure = e;
          } catch (Exception e) {
            failure = e;
          }
        });
        exporter.Start();
        while (Volatile.Read(ref started) != 1) {}
        Volatile.Write(ref started, 2);
        t.Dispose();
        exporter.Join();
        Assert.IsNull(failure, failure == null ? "" : failure.ToString());
        Assert.IsTrue(t.IsDisposed);
        if (exported != IntPtr.Zero) Helper.ConsumeOnNewThread(exported, round % 3 == 2 ? 0 : 1);
      }
      DLBridge.CollectReleased();
      Assert.AreEqual(collected + wrapped, DLBridge.ReleasedCount, "every wrapped array unpinned once");
    }

    /// <summary>Refused exports (legacy, of a READ_ONLY tensor) racing uses and a Dispose of
    /// the same tensor: a refused export gives the reference back while calls on other threads
    /// may still hold it, so the free must wait for the last of them, whichever comes last (the
    /// Dispose, a call's end or the give-back), and happen once.</summary>
    [Test]
    public void RefusedExportRacesWithUseAndDispose() {
      DLBridge.CollectReleased();
      long collected = DLBridge.ReleasedCount;
      const int rounds = 300;
      for (int round = 0; round < rounds; round++) {
        Tensor t = Tensor.Wrap(new double[] { 1, 2, 3 }, new long[] { 3 }, null, true);
        Exception failure = null;
        int go = 0;
        Thread[] threads = new Thread[3];
        for (int k = 0; k < threads.Length; k++) {
          bool exporter = k == 0;
          threads[k] = new Thread(() => {
            while (Volatile.Read(ref go) == 0) {}
            for (int i = 0; i < 20; i++) {
              try {
                if (exporter) {
                  t.ExportLegacy();
                  failure = new Exception("a READ_ONLY tensor was exported legacy");
                } else {
                  Assert.AreEqual(3.0, t.ToArray<double>()[2]);
                }
              } catch (ObjectDisposedException) {
              } catch (DLPackException e) {
                if (!exporter || e.Status != Status.ReadOnly) failure = e;
              } catch (Exception e) {
                failure = e;
              }
            }
          });
          threads[k].Start();
        }
        Volatile.Write(ref go, 1);
        if (round % 2 == 0) Thread.Yield();
        t.Dispose();
        foreach (Thread th in threads) th.Join();
        Assert.IsNull(failure, failure == null ? "" : failure.ToString());
      }
      DLBridge.CollectReleased();
      Assert.AreEqual(collected + rounds, DLBridge.ReleasedCount, "every wrapped array unpinned once");
    }
  }
}
