package org.dlbridge.interop;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The Java host of the interop matrix: a JVM that loads agent libraries through the Java
 * adapter's native library and runs every ordered pair that has Java on one side, Java producing
 * and consuming with its public API. Usage: JavaHost ADAPTER.so [--self-test] AGENT.so...
 */
public final class JavaHost {
  private JavaHost() {}

  /** Runs the matrix in the adapter (interop_runner.c); returns the number of failed cells. */
  static native int runMatrix(String[] agentPaths, boolean selfTest);

  public static void main(String[] args) {
    System.load(Path.of(args[0]).toAbsolutePath().toString());
    boolean selfTest = false;
    List<String> agents = new ArrayList<>();
    for (int i = 1; i < args.length; i++) {
      if (args[i].equals("--self-test")) {
        selfTest = true;
      } else {
        agents.add(args[i]);
      }
    }
    int failed = runMatrix(agents.toArray(new String[0]), selfTest);
    System.exit(failed == 0 ? 0 : 1);
  }
}
