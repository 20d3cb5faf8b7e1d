package org.dlbridge;

import java.io.File;
import java.net.URISyntaxException;
import java.net.URL;

/**
 * JNI entry points of bindings/java/tests/bench_helpers.c: the bench's cycles run {@code n}
 * times in C, straight against the core, for the C column of {@link Bench}.
 */
final class BenchNative {
  static {
    String path = System.getProperty("dlbridge.bench.helpers");
    if (path == null) {
      URL url = BenchNative.class.getResource("testnative/libdlbridge_bench_helpers.so");
      if (url == null) {
        throw new UnsatisfiedLinkError("libdlbridge_bench_helpers.so is not on the class path");
      }
      try {
        path = new File(url.toURI()).getAbsolutePath();
      } catch (URISyntaxException e) {
        throw new UnsatisfiedLinkError(e.toString());
      }
    }
    System.load(path);
  }

  private BenchNative() {}

  static native void wrapFree(int n);

  static native void allocateFree(int n);

  static native void wrapExportImportFree(int n);

  static native void wrapLegacyFree(int n);

  static native long releases();

  /** An empty JNI call: the floor of one call into native code. */
  static native void noop();
}
