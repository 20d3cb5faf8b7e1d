package org.dlbridge;

import java.nio.ByteBuffer;

/** The hand-written JNI entry points (src/main/c/dlbridge_jni.c). */
final class NativeSupport {
  static {
    NativeLoader.load();
  }

  private NativeSupport() {}

  /**
   * Wraps a direct buffer without copying (from {@code offset}; {@code capacity} is the
   * buffer's), with DLPack {@code flags}. The release context is {@code slot} (see {@link Slots}): the caller keeps the
   * buffer reachable in that slot until the release is reported.
   */
  static native long wrapDirect(int slot, ByteBuffer buffer, long offset, long capacity,
      int dtype, long[] shape, long flags);

  /** {@link #wrapDirect} for rank 0 to 4, the extents as arguments (unused ones 0). */
  static native long wrapDirect4(int slot, ByteBuffer buffer, long offset, long capacity,
      int dtype, int ndim, long d0, long d1, long d2, long d3, long flags);

  /**
   * Frees one reference to a tensor (dlb_tensor_free), then takes the list of slots whose
   * buffers were released since the last take, on any thread: its first slot, or -1.
   */
  static native int free(long handle);

  /** Takes the list of released slots, as {@link #free} does. */
  static native int takeReleased();

  /** The native entries of slot segment {@code index}: a direct buffer the Java side reads. */
  static native ByteBuffer slotSegment(int index);

  /** A non-owning direct ByteBuffer over a tensor that dlb_tensor_host_data accepts. */
  static native ByteBuffer byteView(long handle, boolean writable);

  /**
   * One element at {@code index} (the core checks count, range, host memory and whole-byte
   * elements), its {@code size} bytes (1, 2, 4, 8) sign-extended into a long.
   */
  static native long elementGet(long handle, long[] index, int size);

  /** Writes the low {@code size} bytes of {@code bits} into one element (refused if READ_ONLY). */
  static native void elementSet(long handle, long[] index, int size, long bits);

  /** How many wrapped buffers have been released (their release callback run) so far. */
  static native long releasedBufferCount();
}
