package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/** The jar alone (no native path, no other classpath entry) is enough to run dlbridge. */
class JarTest {
  @Test
  void jarContainsTheNativeLibrary() throws IOException {
    try (ZipFile zip = new ZipFile(jar().toFile())) {
      assertTrue(zip.getEntry("org/dlbridge/native/linux-x86_64/libdlbridge_jni.so") != null);
    }
  }

  /** The project's license travels in the jar, byte for byte the repository's LICENSE. */
  @Test
  void jarCarriesTheLicense() throws IOException {
    byte[] expected = Files.readAllBytes(Path.of(System.getProperty("dlbridge.test.license")));
    try (ZipFile zip = new ZipFile(jar().toFile())) {
      var entry = zip.getEntry("META-INF/LICENSE");
      assertTrue(entry != null, "no META-INF/LICENSE in " + jar());
      byte[] actual = zip.getInputStream(entry).readAllBytes();
      assertTrue(Arrays.equals(expected, actual), "META-INF/LICENSE differs from LICENSE");
      assertTrue(new String(actual, StandardCharsets.UTF_8).contains("Apache License"));
    }
  }

  @Test
  void jarRunsOnItsOwn() throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    ProcessBuilder pb = new ProcessBuilder(java.toString(), "-cp", jar().toString(),
        "org.dlbridge.DLBridge");
    pb.environment().remove("LD_LIBRARY_PATH");
    pb.redirectErrorStream(true);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), out);
    assertTrue(out.startsWith("dlbridge " + DLBridge.version()), out);
    assertTrue(out.contains("self-check ok"), out);
  }

  /**
   * Extracting the bundled library leaves nothing in the temporary folder, and the cleaner
   * thread is a daemon of the root group, with no class loader, that an interrupt ends.
   */
  @Test
  void leavesNoTemporaryFilesAndACleanerThatEnds() throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Path tmp = Files.createTempDirectory("dlbridge-tmpdir");
    String cp = jar() + File.pathSeparator + System.getProperty("dlbridge.test.classes");
    ProcessBuilder pb = new ProcessBuilder(java.toString(), "-Djava.io.tmpdir=" + tmp, "-cp", cp,
        "org.dlbridge.CleanerMain");
    pb.redirectErrorStream(true);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), out);
    assertEquals("daemon=true root-group=true same-group-as-main=false loader=null\n"
        + "ended-on-interrupt=true", out.strip());
    try (Stream<Path> left = Files.list(tmp)) {
      assertEquals("[]", Arrays.toString(left.toArray()));
    }
    Files.delete(tmp);
  }

  /** -Ddlbridge.native.path overrides the bundled library. */
  @Test
  void nativePathPropertyOverrides() throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Path dir = Files.createTempDirectory("dlbridge-override");
    Path lib = dir.resolve("libcopy_of_dlbridge_jni.so");
    try (ZipFile zip = new ZipFile(jar().toFile())) {
      Files.copy(zip.getInputStream(
          zip.getEntry("org/dlbridge/native/linux-x86_64/libdlbridge_jni.so")), lib);
    }
    for (String path : new String[] {lib.toString(), dir.resolve("missing.so").toString()}) {
      ProcessBuilder pb = new ProcessBuilder(java.toString(), "-Ddlbridge.native.path=" + path,
          "-cp", jar().toString(), "org.dlbridge.DLBridge");
      pb.redirectErrorStream(true);
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (path.endsWith("missing.so")) {
        assertTrue(p.waitFor() != 0, out);
        assertTrue(out.contains("UnsatisfiedLinkError") && out.contains("missing.so"), out);
      } else {
        assertEquals(0, p.waitFor(), out);
        assertTrue(out.contains("self-check ok"), out);
      }
    }
    Files.delete(lib);
    Files.delete(dir);
  }

  /**
   * A buffer released on a C thread is kept (its token queued) until a free on a Java thread
   * drains the token, which then lets it go: DrainMain, with the cleaner thread stopped.
   */
  @Test
  void foreignReleaseIsDrainedByTheNextFree() throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    String cp = jar() + File.pathSeparator + System.getProperty("dlbridge.test.classes");
    ProcessBuilder pb = new ProcessBuilder(java.toString(), "-cp", cp,
        "-Ddlbridge.test.helpers=" + System.getProperty("dlbridge.test.helpers"),
        "org.dlbridge.DrainMain");
    pb.redirectErrorStream(true);
    Process p = pb.start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, p.waitFor(), out);
    assertEquals("exported: held=1 queued=0\n"
        + "freed by C: held=1 queued=1 reachable=true\n"
        + "after a Java free: held=0 queued=0\n"
        + "collected=true", out.strip());
  }

  /** Deleters of exported buffers run on C threads while the JVM exits: no crash, exit 0. */
  @Test
  void deletersDuringJvmExitDoNotCrash() throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    String cp = jar() + File.pathSeparator + System.getProperty("dlbridge.test.classes");
    for (String delay : new String[] {"0", "200", "1000", "3000"}) {
      ProcessBuilder pb = new ProcessBuilder(java.toString(), "-cp", cp,
          "-Ddlbridge.test.helpers=" + System.getProperty("dlbridge.test.helpers"),
          "org.dlbridge.ShutdownMain", delay);
      pb.redirectErrorStream(true);
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertEquals(0, p.waitFor(), out);
      assertEquals("exiting", out.strip());
    }
  }

  private static Path jar() {
    Path jar = Path.of(System.getProperty("dlbridge.test.jar"));
    assertTrue(Files.isRegularFile(jar), jar.toString());
    return jar;
  }
}
