// Tensor.Ipc.cs - the tensor's side of passing tensors across processes (docs/ipc.md): shareable
// memory (allocation, kind, the Shareable constants), the CUDA wait on a received tensor, and the
// sends a Channel (Channel.cs) makes with this tensor borrowed.
using System;

namespace DLBridge {
  public sealed partial class Tensor {
    /// <summary>Allocates a compact, zero-filled tensor in memory another process can map
    /// (dlb_tensor_allocate_shareable), to send on a <see cref="Channel"/> without a copy: on the
    /// CPU a sealed memfd; on a CUDA device (a library built with CUDA) memory exported as a file
    /// descriptor or, where the device cannot, through a CUDA IPC handle with a weaker lifetime
    /// rule (see <see cref="ShareableKind"/>). Other devices: DLB_ERR_UNSUPPORTED.
    /// Ownership: the caller owns the new tensor; on error nothing is allocated.</summary>
    public static Tensor AllocateShareable(Device device, DType dtype, params long[] shape) {
      return new Tensor(DLBridgeNative.dlb_tensor_allocate_shareable(device.Packed, dtype.Packed,
                                                                     shape, null, 0));
    }

    /// <summary>Whether this tensor's memory can be sent on a channel without a copy: allocated
    /// with <see cref="AllocateShareable"/>, received from a channel, or a view or share of one
    /// of those.</summary>
    public bool IsShareable {
      get {
        long a = Enter();
        try {
          return DLBridgeNative.dlb_tensor_is_shareable(a) != 0;
        } finally {
          Exit();
        }
      }
    }

    /// <summary>Which kind of shareable memory this tensor is over: one of the
    /// <see cref="Shareable"/> constants (dlb_tensor_shareable_kind).</summary>
    public int ShareableKind {
      get {
        long a = Enter();
        try {
          return DLBridgeNative.dlb_tensor_shareable_kind(a);
        } finally {
          Exit();
        }
      }
    }

    /// <summary>Makes the work queued afterwards on <paramref name="consumerStream"/> wait for
    /// the work the sender queued before <see cref="Channel.SendCuda"/>
    /// (dlb_cuda_wait_received), without blocking the host: the cross-process counterpart of
    /// <see cref="Cuda.StreamHandshake"/>, with its stream convention (<see cref="Cuda.StreamNone"/>,
    /// 1, 2, -1, or a cudaStream_t of this tensor's device). This tensor must be CUDA memory
    /// received from a channel, or a view or share of one; without an event from the sender
    /// nothing is done.</summary>
    public void CudaWaitReceived(long consumerStream) {
      long a = Enter();
      try {
        DLBridgeNative.dlb_cuda_wait_received(a, consumerStream);
      } finally {
        Exit();
      }
    }

    // dlb_channel_send with this tensor borrowed for the call.
    internal void SendOn(long channel, uint options) {
      long a = Enter();
      try {
        DLBridgeNative.dlb_channel_send(channel, a, options);
      } finally {
        Exit();
      }
    }

    // dlb_channel_send_cuda with this tensor borrowed for the call.
    internal void SendCudaOn(long channel, IntPtr stream, uint options) {
      long a = Enter();
      try {
        DLBridgeNative.dlb_channel_send_cuda(channel, a, stream.ToInt64(), options);
      } finally {
        Exit();
      }
    }
  }

  /// <summary>The kinds of shareable memory, as <see cref="Tensor.ShareableKind"/> reports them
  /// (the core's DLB_SHAREABLE_*; integer constants, so a later kind still comes through). The
  /// kind says which lifetime rule applies to memory sent across processes (docs/ipc.md).</summary>
  public static class Shareable {
    /// <summary>Not shareable.</summary>
    public const int None = DLBridgeNative.DLB_SHAREABLE_NONE;
    /// <summary>Host memory in a sealed memfd: lives while any process maps it.</summary>
    public const int Memfd = DLBridgeNative.DLB_SHAREABLE_MEMFD;
    /// <summary>CUDA memory exported as a POSIX file descriptor: lives while any process holds
    /// it.</summary>
    public const int CudaFd = DLBridgeNative.DLB_SHAREABLE_CUDA_FD;
    /// <summary>CUDA memory shared by a CUDA IPC handle: it belongs to the sender's process,
    /// which must keep its tensor until every receiver is done.</summary>
    public const int CudaIpc = DLBridgeNative.DLB_SHAREABLE_CUDA_IPC;
  }
}
