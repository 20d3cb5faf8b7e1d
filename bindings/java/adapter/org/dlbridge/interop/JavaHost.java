package org.dlbridge.interop;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.dlbridge.ipc.IpcPeer;
import org.dlbridge.parity.ParityMain;

/**
 * The Java adapter's one program. Its subcommands:
 *
 * <ul>
 *   <li>{@code interop-host ADAPTER.so [--self-test] OTHER.so...}: the Java host of the interop
 *       matrix, a JVM that loads adapter libraries through the Java adapter's native library and
 *       runs every ordered pair that has Java on one side, Java producing and consuming with its
 *       public API;
 *   <li>{@code parity}: the parity rows (suite parity, {@link ParityMain});
 *   <li>{@code ipc-peer consume|produce|remote-consume|remote-produce ARGS}: suite
 *       ipc-languages' Java peer ({@link IpcPeer}).
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
      System.exit(interopHost(rest));
    } else if (command.equals("parity") && rest.length == 0) {
      ParityMain.main(rest);
    } else if (command.equals("ipc-peer")) {
      IpcPeer.main(rest);
    } else {
      System.err.println("usage: JavaHost interop-host ADAPTER.so [--self-test] OTHER.so...\n"
          + "       JavaHost parity\n"
          + "       JavaHost ipc-peer consume|produce|remote-consume|remote-produce ARGS");
      System.exit(2);
    }
  }

  private static int interopHost(String[] args) {
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
    return runMatrix(agents.toArray(new String[0]), selfTest) == 0 ? 0 : 1;
  }
}
