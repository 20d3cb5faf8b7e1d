package org.dlbridge;

/**
 * The kinds of shareable memory, as {@link Tensor#shareableKind()} reports them (the core's
 * {@code DLB_SHAREABLE_*}; integer constants, so a later kind still comes through). The kind
 * says which lifetime rule applies to memory sent across processes (docs/ipc.md).
 */
public final class Shareable {
  private Shareable() {}

  /** Not shareable. */
  public static final int NONE = DLBridgeNativeConstants.DLB_SHAREABLE_NONE;
  /** Host memory in a sealed memfd: lives while any process maps it. */
  public static final int MEMFD = DLBridgeNativeConstants.DLB_SHAREABLE_MEMFD;
  /** CUDA memory exported as a POSIX file descriptor: lives while any process holds it. */
  public static final int CUDA_FD = DLBridgeNativeConstants.DLB_SHAREABLE_CUDA_FD;
  /**
   * CUDA memory shared by a CUDA IPC handle (devices that cannot export a file descriptor): it
   * belongs to the sender's process, which must keep its tensor until every receiver is done.
   */
  public static final int CUDA_IPC = DLBridgeNativeConstants.DLB_SHAREABLE_CUDA_IPC;
}
