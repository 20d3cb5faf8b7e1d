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
   * buffer's). The address of the release context goes to {@code state.wrapCtx}: until
   * {@link #pin} is called, the caller must keep the buffer reachable until the deleter runs.
   */
  static native long wrapDirect(Object state, ByteBuffer buffer, long offset, long capacity,
      int dtype, long[] shape, boolean readOnly);

  /** {@link #wrapDirect} for rank 0 to 4, the extents as arguments (unused ones 0). */
  static native long wrapDirect4(Object state, ByteBuffer buffer, long offset, long capacity,
      int dtype, int ndim, long d0, long d1, long d2, long d3, boolean readOnly);

  /**
   * Makes the release context {@code ctx} hold a JNI global ref to {@code buffer}, deleted by the
   * tensor's deleter on whatever thread runs it. Idempotent. False (with an OutOfMemoryError
   * thrown) when the JVM has no room for the ref.
   */
  static native boolean pin(long ctx, ByteBuffer buffer);

  /** A non-owning direct ByteBuffer over a live, host-readable, C-contiguous tensor. */
  static native ByteBuffer byteView(long handle);

  /** How many wrapped buffers have been released (global refs deleted) so far. */
  static native long releasedBufferCount();

  static native void noop();
}
