package org.dlbridge;

import java.nio.ByteBuffer;

/** The hand-written JNI entry points (src/main/c/dlbridge_jni.c). */
final class NativeSupport {
  static {
    NativeLoader.load();
  }

  private NativeSupport() {}

  /** Wraps a direct buffer without copying; the buffer stays reachable until the deleter runs. */
  static native long wrapDirect(ByteBuffer buffer, long offset, int dtype, long[] shape,
      boolean readOnly);

  /** A non-owning direct ByteBuffer over a live, host-readable, C-contiguous tensor. */
  static native ByteBuffer byteView(long handle);

  /** How many wrapped buffers have been released (global refs deleted) so far. */
  static native long releasedBufferCount();

  static native void noop();
}
