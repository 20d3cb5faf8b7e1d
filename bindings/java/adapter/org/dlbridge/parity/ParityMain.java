package org.dlbridge.parity;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.dlbridge.Channel;
import org.dlbridge.ChannelOptions;
import org.dlbridge.DLBridge;
import org.dlbridge.DLPackException;
import org.dlbridge.DType;
import org.dlbridge.Device;
import org.dlbridge.Listener;
import org.dlbridge.NativeTestHelper;
import org.dlbridge.Slice;
import org.dlbridge.Status;
import org.dlbridge.Tensor;

/**
 * The parity rows (tests/parity/parity_table.tsv, read from DLBRIDGE_PARITY_TABLE) through the
 * Java binding's public API, plus the foreign DLPack producer the tests load (NativeTestHelper).
 * {@link Steps} performs every row that has steps, by tests/parity/README.md's step language; the
 * rows without (the races, CUDA and OpenCL, and last the live count) are written out in
 * {@link #main}. One line per row: ROW<TAB>STATUS<TAB>DETAIL, as the README says. The subcommand
 * {@code parity} of the Java adapter's program ({@code org.dlbridge.interop.JavaHost}), run by
 * suite parity.
 */
public final class ParityMain {
  private ParityMain() {}

  /** No channel step waits longer than this for a peer that may be gone, nor a row's end. */
  private static final Duration PATIENCE = Duration.ofSeconds(10);

  public static void main(String[] args) throws InterruptedException {
    if (args.length == 2 && args[0].equals("--steps")) { // one row (README.md, "One row ...")
      System.out.println("steps\t" + new Steps().run(args[1]));
      return;
    }
    String table = System.getenv("DLBRIDGE_PARITY_TABLE");
    if (table == null || table.isEmpty()) {
      System.err.println("parity: set DLBRIDGE_PARITY_TABLE to the parity table's path "
          + "(tests/parity/run_parity.py does)");
      System.exit(2);
    }
    final long liveAtStart = DLBridge.liveCount();
    for (String[] r : stepRows(table)) {
      System.out.println(r[0] + "\t" + new Steps().run(r[1]));
    }
    row("close_during_call", () -> race(Tensor::close));
    row("export_during_call", () -> race(t -> Tensor.importVersioned(t.exportVersioned()).close()));
    row("cuda_available", () -> available(DLBridge.cudaUnavailableReason()));
    row("cuda_allocate", () -> {
      try (Tensor t = Tensor.allocate(Device.cuda(0), DType.FLOAT32, 2)) {
        return "shape=" + list(t.shape()) + " strides=" + list(t.strides());
      }
    });
    row("opencl_available", () -> available(DLBridge.openclUnavailableReason()));
    // Typed buffers hold their own references until the GC collects them (the binding's cleaner
    // then frees them): collect before counting.
    long live = DLBridge.liveCount() - liveAtStart;
    for (int i = 0; i < 200 && live != 0; i++) {
      System.gc();
      Thread.sleep(10);
      live = DLBridge.liveCount() - liveAtStart;
    }
    System.out.println("live_count_balance\t" + Status.name(Status.OK) + "\tlive=" + live);
  }

  /** The table's rows that have steps, in order, as {row, steps}; the header names the columns. */
  private static List<String[]> stepRows(String table) {
    List<String[]> lines;
    try {
      lines = Files.readAllLines(Path.of(table)).stream()
          .filter(line -> !line.isEmpty() && !line.startsWith("#"))
          .map(line -> line.split("\t", -1)).collect(Collectors.toList());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the parity table " + table, e);
    }
    List<String> header = Arrays.asList(lines.get(0));
    int row = header.indexOf("row");
    int steps = header.indexOf("steps");
    if (row < 0 || steps < 0) {
      throw new IllegalStateException(table + ": the header names no row or no steps column");
    }
    // A line may have fewer fields than the header: the missing ones are empty.
    return lines.stream().skip(1).filter(f -> steps < f.length && !f[steps].isEmpty())
        .map(f -> new String[] {f[row], f[steps]}).collect(Collectors.toList());
  }

  /** One row's steps (README.md, "Steps"); its fields hold what the steps so far left. */
  private static final class Steps {
    private final long deletedAtStart = NativeTestHelper.deletedCount();
    private final List<Tensor> made = new ArrayList<>();
    private Tensor t; // the tensor the next step uses
    private ByteBuffer wrapped;
    private long[] values;
    private long count;
    private long value;
    private DType dtype;
    private Device device;
    private String names;
    private String detail = "";
    private Path dir; // the row's folder (DIR); its socket is DIR/s
    private Listener listener;
    private Channel channel;
    private Process peer;

    /** The row's line after its name: DLB_OK and the report, SKIP, or the failed step's error. */
    String run(String steps) throws InterruptedException {
      String[][] list = Arrays.stream(steps.split(" ; ")).map(step -> step.split(" "))
          .toArray(String[][]::new);
      try {
        for (String[] step : list) {
          if (step[0].equals("needs_root") && !isRoot()) {
            return "SKIP\tneeds root to run a peer as another user";
          }
          step(step);
        }
        return Status.name(Status.OK) + "\t" + detail;
      } catch (DLPackException e) {
        // A refused import still calls its deleter: a report of deleted follows the message.
        boolean reportsDeleted = Arrays.stream(list)
            .anyMatch(step -> step[0].equals("report") && Arrays.asList(step).contains("deleted"));
        String message = dir == null ? e.getMessage()
            : e.getMessage().replace(dir.toString(), "DIR");
        return e.getStatusName() + "\t" + message + (reportsDeleted ? " deleted=" + deleted() : "");
      } catch (IOException | RuntimeException e) {
        return "ERROR\t" + e; // not the binding's error: an unknown step, a peer not started, ...
      } finally {
        made.forEach(Tensor::close);
        endChannels();
      }
    }

    private void step(String[] w) throws IOException {
      switch (w[0]) {
        case "allocate" -> made(Tensor.allocate(Device.CPU, DType.parse(w[1]), parse(w[2]),
            w.length > 3 && !w[3].equals("-") ? parse(w[3]) : null, w.length > 4 ? num(w[4]) : 0));
        case "wrap" -> {
          wrapped = ByteBuffer.allocateDirect(num(w[1]) * 4).order(ByteOrder.nativeOrder());
          wrapped.asFloatBuffer().put(floats(0, num(w[1])));
          made(Tensor.wrap(wrapped, DType.FLOAT32, parse(w[2])));
        }
        case "iota", "shareable" -> {
          long[] shape = parse(w[1]);
          made(w[0].equals("iota") ? Tensor.allocate(Device.CPU, DType.FLOAT32, shape)
              : Tensor.allocateShareable(Device.CPU, DType.FLOAT32, shape));
          t.copyFrom(floats(0, Math.toIntExact(t.elementCount())));
        }
        case "import" -> made(w[1].equals("legacy")
            ? Tensor.importLegacy(NativeTestHelper.produceLegacy(num(w[2])))
            : Tensor.importVersioned(NativeTestHelper.produceVersioned(num(w[2]), num(w[3]),
                num(w[4]), 0)));
        case "share_read_only" -> made(t.shareReadOnly());
        case "export" -> made(w[1].equals("legacy") ? Tensor.importLegacy(t.exportLegacy())
            : Tensor.importVersioned(t.exportVersioned()));
        case "slice" -> made(t.slice(Arrays.stream(w[1].split(",")).map(Steps::slice)
            .toArray(Slice[]::new)));
        case "select" -> made(t.select(num(w[1]), num(w[2])));
        case "reshape" -> made(t.reshape(parse(w[1])));
        case "transpose" -> made(t.transpose());
        case "permute" -> made(t.permute(LongStream.of(parse(w[1])).mapToInt(Math::toIntExact)
            .toArray()));
        case "copy_out" -> values = w[1].equals("int32")
            ? IntStream.of(t.toIntArray()).asLongStream().toArray() : longs(t.toFloatArray());
        case "copy_in" -> t.copyFrom(floats(num(w[1]), num(w[2])));
        case "view" -> {
          // The language's writable array over the tensor's memory: a typed NIO buffer.
          Buffer view = w[1].equals("int32") ? t.asIntBuffer(true) : t.asFloatBuffer(true);
          count = view.capacity();
          if (w.length > 3 && view instanceof IntBuffer ints) {
            ints.put(num(w[2]), num(w[3]));
          } else if (w.length > 3) {
            ((FloatBuffer) view).put(num(w[2]), num(w[3]));
          }
        }
        case "element" -> value = (long) t.getFloat(parse(w[1]));
        case "close" -> t.close();
        case "base" -> t = made.get(0);
        case "dtype" -> dtype = DType.parse(w[1]);
        case "device" -> device = Device.parse(w[1]);
        case "status_names" -> names = LongStream.of(parse(w[1]))
            .mapToObj(s -> Status.name(Math.toIntExact(s))).collect(Collectors.joining(","));
        case "report" -> detail = facts(w);
        case "print" -> {
          System.out.println(facts(w));
          System.out.flush();
        }
        case "needs_root" -> {} // run() skips the row where this program does not run as root
        case "folder" -> {
          dir = Files.createTempDirectory(Path.of("/tmp"), "dlbridge-parity-java-");
          Files.setAttribute(dir, "unix:mode", Integer.parseInt(w[1], 8));
        }
        case "listen" -> listener = Listener.listen(socket().toString());
        case "folder_mode" -> Files.setAttribute(dir, "unix:mode", Integer.parseInt(w[1], 8));
        case "socket_mode" -> Files.setAttribute(socket(), "unix:mode", Integer.parseInt(w[1], 8));
        case "allow_uid" -> listener.allowUid(num(w[1]));
        case "peer" -> {
          String program = Objects.requireNonNull(System.getenv("DLBRIDGE_PARITY_PEER"),
              "DLBRIDGE_PARITY_PEER is not set");
          Stream<String> args = Arrays.stream(w, 1, w.length)
              .map(arg -> arg.equals("PATH") ? socket().toString() : arg);
          peer = new ProcessBuilder(Stream.concat(Stream.of(program), args).toList())
              .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        }
        case "accept" -> {
          listener.setTimeout(w.length > 1 ? Duration.ofSeconds(num(w[1])) : PATIENCE);
          channel = listener.accept();
        }
        case "listen_at" -> {
          try (ChannelOptions options = keyed(w)) {
            listener = Listener.listen(w[1], options);
          }
          System.out.println(listener.isRemote() ? "ready " + listener.port() : "ready");
          System.out.flush();
        }
        case "connect" -> {
          try (ChannelOptions options = keyed(w)) {
            channel = Channel.connect(w[1], options);
          }
        }
        case "connect_peer" -> {
          String path = Objects.requireNonNull(peer.inputReader().readLine(),
              "the peer printed nothing");
          channel = Channel.connect(path, w.length > 1 ? num(w[1]) : Channel.UID_SELF, PATIENCE);
        }
        case "timeout" -> channel.setTimeout(Duration.ofMillis(num(w[1])));
        case "send" -> channel.send(t);
        case "send_copy" -> channel.sendCopy(t);
        case "receive" -> made(channel.receive());
        default -> throw new IllegalArgumentException("unknown step " + w[0]);
      }
    }

    /** The row's end for the channel steps: channel, listener, then the peer, then the folder. */
    private void endChannels() throws InterruptedException {
      if (channel != null) {
        channel.close();
      }
      if (listener != null) {
        listener.close();
      }
      if (peer != null && !peer.waitFor(PATIENCE.toMillis(), TimeUnit.MILLISECONDS)) {
        peer.destroyForcibly().waitFor();
      }
      if (dir != null) {
        try {
          Files.deleteIfExists(socket());
          Files.delete(dir);
        } catch (IOException e) {
          throw new UncheckedIOException("cannot remove the row's folder " + dir, e);
        }
      }
    }

    /** The options of a remote address's step: its key, KEYHEX, when given (else none). */
    private static ChannelOptions keyed(String[] w) {
      ChannelOptions options = new ChannelOptions();
      return w.length > 2 ? options.key(HexFormat.of().parseHex(w[2])) : options;
    }

    private String facts(String[] w) {
      return Arrays.stream(w, 1, w.length).map(f -> f + "=" + fact(f))
          .collect(Collectors.joining(" "));
    }

    private Path socket() {
      return dir.resolve("s");
    }

    private void made(Tensor tensor) {
      made.add(tensor);
      t = tensor;
    }

    private Object fact(String name) {
      return switch (name) {
        case "shape" -> list(t.shape());
        case "strides" -> list(t.strides());
        case "dtype" -> t.dtype();
        case "device" -> t.device();
        case "flags" -> t.flags();
        case "values" -> list(values);
        case "same_memory" -> sameMemory() ? 1 : 0;
        case "deleted" -> deleted();
        case "count" -> count;
        case "value" -> value;
        case "code" -> dtype.code();
        case "bits" -> dtype.bits();
        case "lanes" -> dtype.lanes();
        case "type" -> device.type();
        case "id" -> device.id();
        case "name" -> device;
        case "names" -> names;
        default -> throw new IllegalArgumentException("unknown fact " + name);
      };
    }

    private long deleted() {
      return NativeTestHelper.deletedCount() - deletedAtStart;
    }

    /** Whether the tensor's data is wrap's buffer: a value written there shows in the tensor. */
    private boolean sameMemory() {
      float first = wrapped.getFloat(0);
      wrapped.putFloat(0, -1f);
      boolean same = t.getFloat(new long[t.ndim()]) == -1f;
      wrapped.putFloat(0, first);
      return same;
    }

    private static int num(String text) {
      return Integer.parseInt(text);
    }

    /** A LIST: integers separated by commas, V*N for N times V, - for none. */
    private static long[] parse(String list) {
      return list.equals("-") ? new long[0] : Arrays.stream(list.split(",")).flatMapToLong(v -> {
        String[] times = v.split("\\*");
        long n = times.length > 1 ? num(times[1]) : 1;
        return LongStream.generate(() -> Long.parseLong(times[0])).limit(n);
      }).toArray();
    }

    /** One axis of a slice SPEC, start:stop:step, where any part may be empty (none). */
    private static Slice slice(String axis) {
      String[] part = (axis + "::").split(":", -1); // the parts a short SPEC leaves out: empty
      return Slice.of(part[0].isEmpty() ? Tensor.NONE : num(part[0]),
          part[1].isEmpty() ? Tensor.NONE : num(part[1]), part[2].isEmpty() ? 1 : num(part[2]));
    }
  }

  /** Prints a written-out row: DLB_OK and the body's detail, or its error. */
  private static void row(String id, Callable<String> body) {
    String line;
    try {
      line = Status.name(Status.OK) + "\t" + body.call();
    } catch (DLPackException e) {
      line = e.getStatusName() + "\t" + e.getMessage();
    } catch (Exception e) {
      line = "ERROR\t" + e; // not the binding's own error
    }
    System.out.println(id + "\t" + line);
  }

  private static String list(long[] values) {
    return LongStream.of(values).mapToObj(Long::toString)
        .collect(Collectors.joining(",", "[", "]"));
  }

  private static long[] longs(float[] values) {
    return IntStream.range(0, values.length).mapToLong(i -> (long) values[i]).toArray();
  }

  /** The n float32 values from, from + 1, ... */
  private static float[] floats(float from, int n) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) {
      v[i] = from + i;
    }
    return v;
  }

  /** An availability query's row: the reason's status and message, or DLB_OK. */
  private static String available(Optional<DLPackException> reason) {
    if (reason.isPresent()) {
      throw reason.get();
    }
    return "";
  }

  /**
   * The race rows: the foreign float32 [0, 1, ..., 2^24 - 1] (64 MiB, above glibc's largest mmap
   * threshold: its deleter unmaps the memory, and a copy still reading it faults) is copied out on
   * a second thread while this one runs {@code racer} on it. A copy that lost the race must fail
   * as row use_after_close does; tries go on (20 at most) until the racer began before the copy
   * ended.
   */
  private static String race(Consumer<Tensor> racer) throws InterruptedException {
    String closed = new Steps().run("iota 1 ; close ; report shape");
    String outcome = "";
    for (int attempt = 0; attempt < 20 && !outcome.startsWith("overlapped=1"); attempt++) {
      long deleted = NativeTestHelper.deletedCount();
      Tensor t = Tensor.importVersioned(NativeTestHelper.produceVersioned(1 << 24, 1, 3, 0));
      float[][] copied = new float[1][];
      DLPackException[] lost = new DLPackException[1];
      long[] copyEnd = new long[1];
      CountDownLatch copying = new CountDownLatch(1);
      Thread caller = new Thread(() -> {
        copying.countDown();
        try {
          copied[0] = t.toFloatArray();
        } catch (DLPackException e) {
          lost[0] = e;
        }
        copyEnd[0] = System.nanoTime();
      });
      caller.start();
      copying.await();
      // A busy machine may run this thread on before the copy has begun, try after try: later
      // tries give the copy a few milliseconds' start (it reads 64 MiB, for longer than that).
      Thread.sleep(attempt % 4);
      long raceStart = System.nanoTime();
      racer.accept(t);
      caller.join();
      t.close();
      DLPackException error = lost[0];
      if (error != null && !closed.equals(error.getStatusName() + "\t" + error.getMessage())) {
        throw error;
      }
      boolean overlapped = error == null && raceStart < copyEnd[0];
      long read = copied[0] == null ? 0
          : IntStream.range(0, copied[0].length).filter(i -> copied[0][i] == i).count();
      outcome = "overlapped=" + (overlapped ? 1 : 0) + " read=" + read + " deleted="
          + (NativeTestHelper.deletedCount() - deleted);
    }
    return outcome;
  }

  /** Whether this process runs as uid 0: the uid rows start a peer as another user. */
  private static boolean isRoot() {
    try {
      return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid") == 0;
    } catch (IOException e) {
      return false;
    }
  }
}
