package org.dlbridge.interop;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.dlbridge.parity.ParityMain;

/**
 * The Java adapter's one program. Its subcommands:
 *
 * <ul>
 *   <li>{@code interop-host ADAPTER.so [--self-test] OTHER.so...}: the Java host of the interop
 *       matrix, a JVM that loads adapter libraries through the Java adapter's native library and
 *       runs every ordered pair that has Java on one side, Java producing and consuming with its
 *       public API;
 *   <li>{@code parity [--steps STEPS]}: the parity rows (suite parity, {@link ParityMain}), or one
 *       row of steps (suites ipc-languages and remote run it as Java's channel peer).
 * </ul>
 */
public final class JavaHost {
  private JavaHost() {}

  /** Runs the matrix in the adapter (interop_runner.c); returns the number of failed cells. */
  static native int runMatrix(String[] agentPaths, boolean selfTest);

  public static void main(String[] args) throws InterruptedException {
    String command = args.length > 0 ? args[0] : "";
    String[] rest = Arrays.copyOfRange(args, Math.min(1, args.length), args.length);
    if (command.equals("interop-host") && rest.length > 0) {
      System.load(Path.of(rest[0]).toAbsolutePath().toString());
      List<String> agents = new ArrayList<>(Arrays.asList(rest).subList(1, rest.length));
      boolean selfTest = agents.remove("--self-test");
      System.exit(runMatrix(agents.toArray(new String[0]), selfTest) == 0 ? 0 : 1);
    } else if (command.equals("parity") && (rest.length == 0
        || rest.length == 2 && rest[0].equals("--steps"))) {
      ParityMain.main(rest);
    } else {
      System.err.println("usage: JavaHost interop-host ADAPTER.so [--self-test] OTHER.so...\n"
          + "       JavaHost parity [--steps STEPS]");
      System.exit(2);
    }
  }
}
