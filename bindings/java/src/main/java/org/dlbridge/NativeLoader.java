package org.dlbridge;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads libdlbridge_jni: from the path in the system property {@code dlbridge.native.path} when
 * set, otherwise extracted from the jar's {@code org/dlbridge/native/<os>-<arch>/}.
 */
public final class NativeLoader {
  /** System property naming a libdlbridge_jni file to load instead of the bundled one. */
  public static final String PATH_PROPERTY = "dlbridge.native.path";

  private static boolean loaded;

  private NativeLoader() {}

  /** Loads the library once; later calls do nothing. */
  public static synchronized void load() {
    if (loaded) {
      return;
    }
    String override = System.getProperty(PATH_PROPERTY);
    if (override != null && !override.isEmpty()) {
      System.load(Path.of(override).toAbsolutePath().toString());
    } else {
      String resource = "/org/dlbridge/native/" + platform() + "/" + System.mapLibraryName(
          "dlbridge_jni");
      try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
        if (in == null) {
          throw new UnsatisfiedLinkError("no native dlbridge library for " + platform()
              + " in the jar (" + resource + "); set -D" + PATH_PROPERTY + "=/path/to/lib");
        }
        Path dir = Files.createTempDirectory("dlbridge-jni");
        Path file = dir.resolve(System.mapLibraryName("dlbridge_jni"));
        Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        try {
          System.load(file.toString());
        } finally {
          // A loaded library stays mapped after its file is gone (Linux, macOS): remove both
          // now, so that no JVM exit, however abrupt, leaves them behind. Where a loaded file
          // cannot be deleted (Windows), at exit: deleteOnExit runs in reverse order of
          // registration, so the folder is registered first and removed after its file.
          if (!deleteQuietly(file) || !deleteQuietly(dir)) {
            dir.toFile().deleteOnExit();
            file.toFile().deleteOnExit();
          }
        }
      } catch (IOException e) {
        throw new UnsatisfiedLinkError("cannot extract the native dlbridge library: " + e);
      }
    }
    loaded = true;
  }

  private static boolean deleteQuietly(Path path) {
    try {
      Files.deleteIfExists(path);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** "linux-x86_64", "linux-aarch64", "osx-aarch64", "windows-x86_64", ... */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    String osName;
    if (os.startsWith("linux")) {
      osName = "linux";
    } else if (os.startsWith("mac") || os.startsWith("darwin")) {
      osName = "osx";
    } else if (os.startsWith("windows")) {
      osName = "windows";
    } else {
      osName = os.replaceAll("[^a-z0-9]", "");
    }
    String archName;
    switch (arch) {
      case "amd64":
      case "x86_64":
      case "x86-64":
        archName = "x86_64";
        break;
      case "aarch64":
      case "arm64":
        archName = "aarch64";
        break;
      default:
        archName = arch.replaceAll("[^a-z0-9_]", "");
    }
    return osName + "-" + archName;
  }
}
