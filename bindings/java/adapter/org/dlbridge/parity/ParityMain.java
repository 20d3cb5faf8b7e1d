package org.dlbridge.parity;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.dlbridge.Channel;
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
 * The parity rows (tests/parity/parity_table.tsv) through the Java binding's public API, plus
 * the foreign DLPack producer the tests load (NativeTestHelper). One line per row:
 * ROW<TAB>STATUS<TAB>DETAIL, as tests/parity/README.md says. The subcommand {@code parity} of the
 * Java adapter's program ({@code org.dlbridge.interop.JavaHost}), run by suite parity.
 */
public final class ParityMain {
  private ParityMain() {}

  /** A row's body: the detail of a success; a DLPackException is the row's outcome. */
  private interface Body {
    String run();
  }

  private static void row(String id, Body body) {
    String status;
    String detail;
    try {
      detail = body.run();
      status = Status.name(Status.OK);
    } catch (DLPackException e) {
      status = e.getStatusName();
      detail = e.getMessage();
    }
    System.out.println(id + "\t" + status + "\t" + detail);
  }

  private static String list(long[] values) {
    StringBuilder out = new StringBuilder("[");
    for (int i = 0; i < values.length; i++) {
      out.append(i == 0 ? "" : ",").append(values[i]);
    }
    return out.append("]").toString();
  }

  private static String values(float[] v) {
    long[] whole = new long[v.length];
    for (int i = 0; i < v.length; i++) {
      whole[i] = (long) v[i];
    }
    return "values=" + list(whole);
  }

  private static String layout(Tensor t) {
    return "shape=" + list(t.shape()) + " strides=" + list(t.strides());
  }

  /** Every element of {@code t} (any layout), in C order. */
  private static String contents(Tensor t) {
    return values(t.toFloatArray());
  }

  /** A float32 tensor of {@code shape} holding 0, 1, 2, ... in C order. */
  private static Tensor iota(long... shape) {
    Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, shape);
    float[] v = new float[(int) t.elementCount()];
    for (int i = 0; i < v.length; i++) {
      v[i] = i;
    }
    t.copyFrom(v);
    return t;
  }

  // ---- a close or an export racing a call (rows close_during_call, export_during_call) -------

  /**
   * Elements of the race rows' foreign tensor: 64 MiB of float32, above glibc's largest mmap
   * threshold, so the producer's deleter unmaps the memory and a copy still reading it faults.
   * Every value 0 .. 2^24 - 1 is exact in float32.
   */
  private static final int RACE_ELEMENTS = 1 << 24;
  private static final int RACE_TRIES = 20;

  /** What the row's main thread does to the tensor while the copy runs. */
  private interface Racer {
    void race(Tensor t);
  }

  /** The message of a use after close, as this binding gives it (row use_after_close). */
  private static String closedMessage() {
    Tensor t = iota(1);
    t.close();
    try {
      t.shape();
    } catch (DLPackException e) {
      return e.getMessage();
    }
    return "no error after close";
  }

  /**
   * The foreign tensor copied out on a second thread while this one runs {@code racer} on it.
   * A try in which the copy lost the race must have failed DLB_ERR_CLOSED with the message of a
   * use after close (anything else is the row's outcome); tries are made until the racer began
   * before the copy ended.
   */
  private static String raceCall(Racer racer) {
    String closed = closedMessage();
    String outcome = "";
    for (int attempt = 1; attempt <= RACE_TRIES; attempt++) {
      long deleted = NativeTestHelper.deletedCount();
      Tensor t = Tensor.importVersioned(NativeTestHelper.produceVersioned(RACE_ELEMENTS, 1, 3, 0));
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
      long raceStart;
      try {
        copying.await();
        raceStart = System.nanoTime();
        racer.race(t);
        caller.join();
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
      t.close();
      if (lost[0] != null
          && (lost[0].getStatus() != Status.CLOSED || !lost[0].getMessage().equals(closed))) {
        throw lost[0];
      }
      boolean overlapped = lost[0] == null && raceStart < copyEnd[0];
      long read = 0;
      for (int i = 0; copied[0] != null && i < copied[0].length; i++) {
        read += copied[0][i] == i ? 1 : 0;
      }
      outcome = "overlapped=" + (overlapped ? 1 : 0) + " read=" + read + " deleted="
          + (NativeTestHelper.deletedCount() - deleted);
      if (overlapped) {
        break;
      }
    }
    return outcome;
  }

  // ---- channels: the peer program (DLBRIDGE_PARITY_PEER, tests/parity/parity_peer.cc) -------

  /** A channel row's body, given its folder DIR (mode 0700, under /tmp). */
  private interface ChannelBody {
    String run(Path dir) throws Exception;
  }

  /**
   * A channel row: a fresh DIR, removed afterwards; DIR's path in a message is written "DIR".
   * Anything but the binding's own exception (the peer would not start, ...) fails the row.
   */
  private static void channelRow(String id, boolean needsRoot, ChannelBody body) {
    if (needsRoot && !isRoot()) {
      System.out.println(id + "\tSKIP\tneeds root to run a peer as another user");
      return;
    }
    String status;
    String detail;
    Path dir = null;
    try {
      dir = Files.createTempDirectory(Path.of("/tmp"), "dlbridge-parity-",
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      detail = body.run(dir);
      status = Status.name(Status.OK);
    } catch (DLPackException e) {
      status = e.getStatusName();
      detail = dir == null ? e.getMessage() : e.getMessage().replace(dir.toString(), "DIR");
    } catch (Exception e) {
      status = "ERROR";
      detail = e.toString();
    } finally {
      if (dir != null) {
        remove(dir);
      }
    }
    System.out.println(id + "\t" + status + "\t" + detail);
  }

  private static boolean isRoot() {
    try {
      return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid") == 0;
    } catch (IOException e) {
      return false;
    }
  }

  private static void remove(Path folder) {
    try (var paths = Files.walk(folder)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toArray(Path[]::new)) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      System.err.println("parity: cannot remove " + folder + ": " + e);
    }
  }

  /** The peer program in one mode; closing it waits for it (and kills it after 30 s). */
  private static final class Peer implements AutoCloseable {
    final Process process;

    Peer(String... args) throws IOException {
      String program = System.getenv("DLBRIDGE_PARITY_PEER");
      if (program == null || program.isEmpty()) {
        throw new IllegalStateException("DLBRIDGE_PARITY_PEER is not set");
      }
      String[] command = new String[args.length + 1];
      command[0] = program;
      System.arraycopy(args, 0, command, 1, args.length);
      process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    /** The first line the peer prints (listen-as: its socket's path). */
    String line() throws IOException {
      String line = new BufferedReader(new InputStreamReader(process.getInputStream(),
          StandardCharsets.UTF_8)).readLine();
      if (line == null) {
        throw new IllegalStateException("the peer printed nothing");
      }
      return line;
    }

    @Override
    public void close() {
      try {
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
          process.destroyForcibly().waitFor();
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Lets uid 65534 reach a socket: its folder 0711, the socket 0666. */
  private static void widen(Path dir, Path socket) throws IOException {
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
    Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-rw-rw-"));
  }

  /** No call of a row waits longer than this for a peer that may be gone. */
  private static final Duration PATIENCE = Duration.ofSeconds(30);

  @SuppressWarnings("try") // peers and channels opened for their effect, closed in order
  private static void channelRows() {
    row("channel_no_listener", () -> {
      try (Channel c = Channel.connect("dlbridge-parity-absent.sock")) {
        return "connected";
      }
    });
    channelRow("channel_permission", false, dir -> {
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
      try (Listener l = Listener.listen(dir.resolve("s").toString())) {
        return "listening";
      }
    });
    channelRow("channel_peer_closed", false, dir -> receiveFrom(dir, "connect-close", null));
    channelRow("channel_forged", false, dir -> receiveFrom(dir, "forge", null));
    channelRow("channel_timeout", false,
        dir -> receiveFrom(dir, "half", Duration.ofMillis(100)));
    channelRow("channel_refused_uid_accept", true, dir -> {
      Path path = dir.resolve("s");
      try (Listener listener = Listener.listen(path.toString())) {
        listener.setTimeout(PATIENCE);
        widen(dir, path);
        try (Peer peer = new Peer("connect-as", "65534", "0", path.toString());
            Channel c = listener.accept()) {
          return "accepted";
        }
      }
    });
    channelRow("channel_refused_uid_connect", true, dir -> {
      try (Peer peer = new Peer("listen-as", "65534", "0");
          Channel c = Channel.connect(peer.line())) {
        return "connected";
      }
    });
    channelRow("channel_second_uid_accept", true, dir -> {
      Path path = dir.resolve("s");
      try (Listener listener = Listener.listen(path.toString())) {
        listener.setTimeout(PATIENCE);
        listener.allowUid(65534);
        widen(dir, path);
        try (Peer peer = new Peer("connect-as", "65534", "0", path.toString());
            Channel c = listener.accept();
            Tensor t = Tensor.allocateShareable(Device.CPU, DType.FLOAT32, 4)) {
          t.copyFrom(new float[] {0, 1, 2, 3});
          c.send(t);
          try (Tensor back = c.receive()) {
            return contents(back);
          }
        }
      }
    });
    channelRow("channel_second_uid_connect", true, dir -> {
      try (Peer peer = new Peer("listen-as", "65534", "0");
          Channel c = Channel.connect(peer.line(), 65534, PATIENCE);
          Tensor t = c.receive()) {
        return contents(t);
      }
    });
    row("status_names_channel", () -> "names=" + String.join(",",
        Status.name(Status.NO_LISTENER), Status.name(Status.PERMISSION),
        Status.name(Status.PEER_CLOSED), Status.name(Status.PROTOCOL),
        Status.name(Status.TIMEOUT), Status.name(Status.LIMIT)));
  }

  /**
   * Listens at DIR/s, lets the peer in `mode` connect, accepts it and receives, with the accepted
   * channel's time limit `limit` (otherwise PATIENCE).
   */
  @SuppressWarnings("try") // the peer is closed (waited for) after the channel
  private static String receiveFrom(Path dir, String mode, Duration limit) throws Exception {
    Path path = dir.resolve("s");
    try (Listener listener = Listener.listen(path.toString())) {
      listener.setTimeout(PATIENCE);
      try (Peer peer = new Peer(mode, path.toString()); Channel c = listener.accept()) {
        if (limit != null) {
          c.setTimeout(limit);
        }
        try (Tensor t = c.receive()) {
          return contents(t);
        }
      }
    }
  }

  /** The outcome of an availability query: the reason's status and message, or DLB_OK. */
  private static String available(Optional<DLPackException> reason) {
    if (reason.isPresent()) {
      throw reason.get();
    }
    return "";
  }

  public static void main(String[] args) throws InterruptedException {
    final long liveAtStart = DLBridge.liveCount();

    // ---- create
    row("create", () -> {
      try (Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, 2, 3)) {
        return layout(t) + " dtype=" + t.dtype() + " device=" + t.device();
      }
    });
    row("create_negative_extent", () -> {
      try (Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, 2, -3)) {
        return layout(t);
      }
    });
    row("create_ndim_65", () -> {
      long[] shape = new long[65];
      Arrays.fill(shape, 1);
      try (Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, shape)) {
        return layout(t);
      }
    });
    row("create_strides_length", () -> {
      try (Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, new long[] {2, 3},
          new long[] {1})) {
        return layout(t);
      }
    });
    row("create_is_copied", () -> {
      try (Tensor t = Tensor.allocate(Device.CPU, DType.FLOAT32, new long[] {2, 3}, null,
          Tensor.FLAG_IS_COPIED)) {
        return layout(t);
      }
    });

    // ---- wrap
    row("wrap", () -> {
      ByteBuffer buffer = ByteBuffer.allocateDirect(6 * 4).order(ByteOrder.nativeOrder());
      buffer.asFloatBuffer().put(new float[] {0, 1, 2, 3, 4, 5});
      try (Tensor t = Tensor.wrap(buffer, DType.FLOAT32, 2, 3)) {
        String detail = layout(t) + " " + contents(t);
        // The same memory: a write through the tensor shows in the buffer, and back.
        t.setFloat(50f, 1, 2);
        boolean same = buffer.getFloat(5 * 4) == 50f;
        buffer.putFloat(5 * 4, 5f);
        same = same && t.getFloat(1, 2) == 5f;
        return detail + " same_memory=" + (same ? 1 : 0);
      }
    });
    row("wrap_beyond_buffer", () -> {
      try (Tensor t = Tensor.wrap(ByteBuffer.allocateDirect(5 * 4), DType.FLOAT32, 2, 3)) {
        return layout(t);
      }
    });
    row("wrap_ndim_5", () -> {
      ByteBuffer buffer = ByteBuffer.allocateDirect(6 * 4).order(ByteOrder.nativeOrder());
      buffer.asFloatBuffer().put(new float[] {0, 1, 2, 3, 4, 5});
      try (Tensor t = Tensor.wrap(buffer, DType.FLOAT32, 1, 1, 1, 2, 3)) {
        return layout(t) + " " + contents(t);
      }
    });
    row("wrap_ndim_65", () -> {
      long[] shape = new long[65];
      java.util.Arrays.fill(shape, 1);
      try (Tensor t = Tensor.wrap(ByteBuffer.allocateDirect(4), DType.FLOAT32, shape)) {
        return layout(t);
      }
    });

    // ---- import and export
    row("import_versioned", () -> {
      long deleted = NativeTestHelper.deletedCount();
      String detail;
      try (Tensor t = Tensor.importVersioned(NativeTestHelper.produceVersioned(4, 1, 3, 0))) {
        detail = contents(t);
      }
      return detail + " deleted=" + (NativeTestHelper.deletedCount() - deleted);
    });
    row("import_legacy", () -> {
      long deleted = NativeTestHelper.deletedCount();
      String detail;
      try (Tensor t = Tensor.importLegacy(NativeTestHelper.produceLegacy(4))) {
        detail = contents(t);
      }
      return detail + " deleted=" + (NativeTestHelper.deletedCount() - deleted);
    });
    {
      // The refused tensor's deleter has run: the message names the version, the detail the
      // deletion (printed after the message for this row).
      long deleted = NativeTestHelper.deletedCount();
      try {
        Tensor.importVersioned(NativeTestHelper.produceVersioned(4, 2, 0, 0)).close();
        System.out.println("import_major_2\tDLB_OK\timported");
      } catch (DLPackException e) {
        System.out.println("import_major_2\t" + e.getStatusName() + "\t" + e.getMessage()
            + " deleted=" + (NativeTestHelper.deletedCount() - deleted));
      }
    }
    row("export_import_legacy", () -> {
      try (Tensor back = Tensor.importLegacy(iota(2, 3).exportLegacy())) {
        return layout(back) + " " + contents(back);
      }
    });
    row("export_import_versioned", () -> {
      try (Tensor back = Tensor.importVersioned(iota(2, 3).exportVersioned())) {
        return layout(back) + " " + contents(back) + " flags=" + back.flags();
      }
    });
    row("export_legacy_read_only", () -> {
      try (Tensor t = iota(2, 3); Tensor ro = t.shareReadOnly()) {
        return "address=" + ro.exportLegacy();
      }
    });
    row("export_versioned_read_only", () -> {
      try (Tensor t = iota(2, 3);
          Tensor back = Tensor.importVersioned(t.shareReadOnly().exportVersioned())) {
        return "flags=" + back.flags();
      }
    });

    // ---- views
    try (Tensor t = iota(3, 4)) {
      row("slice", () -> {
        try (Tensor v = t.slice(Slice.of(1, 3), Slice.every(2))) {
          return layout(v) + " " + contents(v);
        }
      });
      row("slice_step_zero", () -> {
        try (Tensor v = t.slice(Slice.of(0, 2, 0))) {
          return layout(v);
        }
      });
      row("select", () -> {
        try (Tensor v = t.select(1, -1)) {
          return layout(v) + " " + contents(v);
        }
      });
      row("select_out_of_range", () -> {
        try (Tensor v = t.select(0, 3)) {
          return layout(v);
        }
      });
      row("reshape", () -> {
        try (Tensor v = t.reshape(2, -1)) {
          return layout(v) + " " + contents(v);
        }
      });
      row("reshape_non_contiguous", () -> {
        try (Tensor tt = t.transpose(); Tensor v = tt.reshape(12)) {
          return layout(v);
        }
      });
      row("transpose", () -> {
        try (Tensor v = t.transpose()) {
          return layout(v) + " " + contents(v);
        }
      });
    }
    try (Tensor t = iota(2, 3, 4)) {
      row("permute", () -> {
        try (Tensor v = t.permute(2, 0, 1)) {
          return layout(v);
        }
      });
      row("permute_invalid", () -> {
        try (Tensor v = t.permute(0, 0, 1)) {
          return layout(v);
        }
      });
    }

    // ---- copies to and from arrays
    try (Tensor t = iota(2, 3)) {
      row("copy_out", () -> values(t.toFloatArray()));
      row("copy_out_transposed", () -> {
        try (Tensor v = t.transpose()) {
          return values(v.toFloatArray());
        }
      });
      row("copy_out_wrong_type", () -> "ints=" + Arrays.toString(t.toIntArray()));
    }
    try (Tensor t = iota(3, 4)) {
      row("copy_out_negative_strides", () -> {
        try (Tensor v = t.slice(Slice.every(-1), Slice.every(2))) {
          return values(v.toFloatArray());
        }
      });
      try (Tensor v = t.transpose()) {
        row("copy_in_transposed", () -> {
          float[] in = new float[12];
          for (int i = 0; i < in.length; i++) {
            in[i] = 100 + i;
          }
          v.copyFrom(in);
          return contents(t);
        });
        row("copy_in_count_mismatch", () -> {
          v.copyFrom(new float[5]);
          return contents(t);
        });
      }
    }

    // ---- typed host access and elements
    try (Tensor t = iota(2, 3)) {
      row("typed_view", () -> {
        FloatBuffer view = t.asFloatBuffer(true);
        view.put(4, 40f);
        return "count=" + view.capacity() + " " + contents(t);
      });
      row("typed_view_wrong_type", () -> "count=" + t.asIntBuffer().capacity());
      row("typed_view_transposed", () -> {
        try (Tensor v = t.transpose()) {
          return "count=" + v.asFloatBuffer().capacity();
        }
      });
      try (Tensor ro = t.shareReadOnly()) {
        row("write_read_only", () -> "count=" + ro.asFloatBuffer(true).capacity());
        row("copy_into_read_only", () -> {
          ro.copyFrom(new float[6]);
          return contents(ro);
        });
      }
      row("element_get", () -> "value=" + (long) t.getFloat(1, 2));
      row("element_out_of_range", () -> "value=" + (long) t.getFloat(2, 0));
    }

    // ---- lifecycle misuse a binding must catch
    row("use_after_close", () -> {
      Tensor t = iota(2, 3);
      t.close();
      return "shape=" + list(t.shape());
    });
    row("double_close", () -> {
      Tensor t = iota(2, 3);
      t.close();
      t.close();
      return "";
    });

    // ---- a close or an export racing a call on another thread
    row("close_during_call", () -> raceCall(t -> t.close()));
    row("export_during_call",
        () -> raceCall(t -> Tensor.importVersioned(t.exportVersioned()).close()));

    // ---- devices and names
    row("cuda_available", () -> available(DLBridge.cudaUnavailableReason()));
    row("cuda_allocate", () -> {
      try (Tensor t = Tensor.allocate(Device.cuda(0), DType.FLOAT32, 2)) {
        return layout(t);
      }
    });
    row("opencl_available", () -> available(DLBridge.openclUnavailableReason()));
    row("dtype_parse_unknown", () -> "name=" + DType.parse("float33"));
    row("dtype_parse", () -> {
      DType d = DType.parse("bfloat16x4");
      return "code=" + d.code() + " bits=" + d.bits() + " lanes=" + d.lanes();
    });
    row("device_unknown_type", () -> {
      Device d = Device.parse("device_type_99:3");
      return "type=" + d.type() + " id=" + d.id() + " name=" + d;
    });
    row("device_parse_unknown", () -> "name=" + Device.parse("gpu:0"));
    row("status_name", () -> "name=" + Status.name(Status.READ_ONLY) + " unknown="
        + Status.name(99));

    // ---- channels between processes
    channelRows();

    // The typed buffers above hold their own references until the GC collects them (the
    // binding's cleaner then frees them): collect before counting.
    long live = DLBridge.liveCount() - liveAtStart;
    for (int i = 0; i < 200 && live != 0; i++) {
      System.gc();
      Thread.sleep(10);
      live = DLBridge.liveCount() - liveAtStart;
    }
    final long balance = live;
    row("live_count_balance", () -> "live=" + balance);
  }
}
