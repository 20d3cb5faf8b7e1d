// Tensor.Views.cs - zero-copy views, shares and device copies.
using System;
using System.Runtime.InteropServices;
using System.Threading;

namespace DLBridge {
  /// <summary>
  /// One dimension of a slice (<see cref="Tensor.Slice"/>), with Python's semantics
  /// (dlb_tensor_slice): <c>new SliceRange(start, stop, step)</c> is <c>start:stop:step</c>.
  /// Negative bounds count from the end, out-of-range bounds are clamped, and
  /// <see cref="None"/> as a bound means "from the beginning" (start) or "to the end" (stop) in
  /// the direction of the step. The step may be negative, never 0 (the core refuses it: "slice
  /// step is 0 in dimension N"). Examples, for a dimension of extent 6:
  /// <c>new SliceRange(1, 3)</c> is 1:3 (elements 1, 2);
  /// <c>new SliceRange(SliceRange.None, SliceRange.None, 2)</c> is ::2 (0, 2, 4);
  /// <c>new SliceRange(SliceRange.None, SliceRange.None, -1)</c> is ::-1 (5, 4, ..., 0);
  /// <c>new SliceRange(-2, SliceRange.None)</c> is -2: (4, 5); <see cref="All"/> is the whole
  /// dimension. Dimensions after the last SliceRange given are taken whole.
  /// </summary>
  public readonly struct SliceRange {
    /// <summary>An omitted bound (DLB_SLICE_NONE), like Python's None.</summary>
    public const long None = DLBridgeNative.DLB_SLICE_NONE;
    /// <summary>The whole dimension (<c>::</c>).</summary>
    public static readonly SliceRange All = new SliceRange(None, None, 1);

    /// <summary>The first index taken (or <see cref="None"/>).</summary>
    public readonly long Start;
    /// <summary>The index the slice stops before (or <see cref="None"/>).</summary>
    public readonly long Stop;
    /// <summary>The distance between two indices taken: negative walks backwards, 0 is refused.</summary>
    public readonly long Step;

    /// <summary>The slice <c>start:stop:step</c> of one dimension; the step defaults to 1.</summary>
    /// <param name="start">First index taken; negative counts from the end; <see cref="None"/>: from the
    /// beginning in the direction of the step.</param>
    /// <param name="stop">Index the slice stops before; negative counts from the end;
    /// <see cref="None"/>: to the end in the direction of the step.</param>
    /// <param name="step">Distance between indices, not 0; negative walks backwards.</param>
    public SliceRange(long start, long stop, long step = 1) {
      Start = start;
      Stop = stop;
      Step = step;
    }
  }

  public sealed partial class Tensor {
    // ---- views, shares, copies -----------------------------------------------------------------
    /// <summary>A zero-copy view of the first slices.Length dimensions, one
    /// <see cref="SliceRange"/> each (Python semantics); later dimensions are taken whole.</summary>
    public Tensor Slice(params SliceRange[] slices) {
      long[] triples = new long[3 * (slices == null ? 0 : slices.Length)];
      for (int i = 0; i < triples.Length / 3; i++) {
        triples[3 * i] = slices[i].Start;
        triples[3 * i + 1] = slices[i].Stop;
        triples[3 * i + 2] = slices[i].Step;
      }
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_slice(a, triples)); } finally { Exit(); }
    }

    /// <summary>A view of one index along <paramref name="axis"/>, that dimension removed.</summary>
    public Tensor Select(int axis, long index) {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_select(a, axis, index)); } finally { Exit(); }
    }

    /// <summary>A view with a new shape (one extent may be -1); LAYOUT when a copy is needed.</summary>
    public Tensor Reshape(params long[] shape) {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_reshape(a, shape)); } finally { Exit(); }
    }

    /// <summary>A view whose dimension i is dimension axes[i] of this tensor.</summary>
    public Tensor Permute(params int[] axes) {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_permute(a, axes)); } finally { Exit(); }
    }

    /// <summary>A view with the dimensions reversed.</summary>
    public Tensor Transpose() {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_transpose(a)); } finally { Exit(); }
    }

    /// <summary>Another reference to the same memory, as writable as this one.</summary>
    public Tensor Share() {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_share(a, 0)); } finally { Exit(); }
    }

    /// <summary>Another reference to the same memory that carries <see cref="FlagReadOnly"/>, for
    /// code that must not write; this tensor stays as writable as it was.</summary>
    public Tensor ShareReadOnly() {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_share(a, FlagReadOnly)); } finally { Exit(); }
    }

    /// <summary>A compact copy on <paramref name="device"/> (writable, IS_COPIED).</summary>
    public Tensor CopyTo(Device device) {
      long a = Enter();
      try { return new Tensor(DLBridgeNative.dlb_tensor_copy(a, device.Packed)); } finally { Exit(); }
    }

    /// <summary>Like CopyTo, queued on <paramref name="stream"/> (a cudaStream_t or
    /// cl_command_queue): keep this tensor alive and read the copy only after synchronising
    /// the stream.</summary>
    public Tensor CopyToAsync(Device device, IntPtr stream) {
      long a = Enter();
      try {
        return new Tensor(DLBridgeNative.dlb_tensor_copy_async(a, device.Packed, stream.ToInt64()));
      } finally {
        Exit();
      }
    }

    /// <summary>Copies the elements into <paramref name="destination"/> (same shape and dtype).</summary>
    public void CopyInto(Tensor destination) {
      CopyIntoAsync(destination, IntPtr.Zero);
    }

    /// <summary>Like CopyInto, queued on <paramref name="stream"/>: both tensors must stay
    /// alive until the stream has finished.</summary>
    public void CopyIntoAsync(Tensor destination, IntPtr stream) {
      if (destination == null) throw new ArgumentNullException("destination");
      long a = Enter();
      try {
        long d = destination.Enter();
        try {
          DLBridgeNative.dlb_tensor_copy_into_async(a, d, stream.ToInt64());
        } finally {
          destination.Exit();
        }
      } finally {
        Exit();
      }
    }
  }
}
