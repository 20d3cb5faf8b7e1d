package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tensors across processes: this JVM listens and consumes, C's peer (tests/ipc/ipc_peer.c,
 * $DLBRIDGE_IPC_PEER) produces (tests/ipc/README.md, "The peer protocol"); refusals with the
 * core's messages; and what every Listener and Channel does after close, also from another
 * thread while a call is blocked.
 */
class ChannelTest {
  @TempDir Path tmp;

  private Path socket() {
    return tmp.resolve("sock").resolve("channel.sock");
  }

  private static void expectClosed(Executable call) {
    expect(Status.CLOSED, "the channel is closed", call);
  }

  private static void expect(int status, String message, Executable call) {
    DLPackException e = assertThrows(DLPackException.class, call);
    assertEquals(Status.name(status), e.getStatusName(), e.getMessage());
    assertEquals(message, e.getMessage());
  }

  @Test
  void tensorsCrossProcessesWithoutACopy() throws Exception {
    String peer = System.getenv("DLBRIDGE_IPC_PEER");
    assumeTrue(peer != null && !peer.isEmpty(), "DLBRIDGE_IPC_PEER is not set");
    try (Listener listener = Listener.listen(socket().toString())) {
      listener.setTimeout(Duration.ofSeconds(60)); // a producer that died fails the test
      Process producer = new ProcessBuilder(peer, "produce", socket().toString())
          .redirectErrorStream(true).start();
      CompletableFuture<String> output = CompletableFuture.supplyAsync(() -> {
        try {
          return new String(producer.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
          return e.toString();
        }
      });
      try (Channel channel = listener.accept()) {
        assertEquals(producer.pid(), channel.peerPid());
        try (Tensor t = channel.receive()) {
          assertEquals(DType.FLOAT32, t.dtype());
          assertArrayEquals(new long[] {2, 3}, t.shape());
          assertArrayEquals(new float[] {0, 1, 2, 3, 4, 5}, t.toFloatArray());
          assertEquals(0L, t.flags());
          assertTrue(t.isShareable());
          assertFalse(t.isExclusive(), "the producer maps the same memory");
          t.setFloat(100f, 0, 0);
          channel.send(t);
        }
        try (Tensor copied = channel.receive()) {
          assertEquals(DType.FLOAT32, copied.dtype());
          assertArrayEquals(new long[] {7, 8}, copied.shape());
          float[] iota = new float[56];
          for (int i = 0; i < iota.length; i++) {
            iota[i] = i;
          }
          assertArrayEquals(iota, copied.toFloatArray());
          assertEquals(Tensor.FLAG_IS_COPIED, copied.flags());
        }
        DLPackException end = assertThrows(DLPackException.class, channel::receive);
        assertEquals(Status.PEER_CLOSED, end.getStatus());
        assertEquals("the peer closed the channel", end.getMessage());
      }
      assertTrue(producer.waitFor(120, TimeUnit.SECONDS));
      String out = output.get();
      assertEquals(0, producer.exitValue(), out);
      assertEquals("produce ok", out.strip()); // it saw our write, 100, in its own tensor
    }
  }

  @Test
  void memoryThatIsNotShareableIsRefusedOrCopied() {
    try (Listener listener = Listener.listen(socket().toString());
        Channel client = Channel.connect(socket().toString());
        Channel server = listener.accept();
        Tensor plain = Tensor.fromArray(new int[] {1, 2, 3}, 3)) {
      assertFalse(plain.isShareable());
      DLPackException e = assertThrows(DLPackException.class, () -> client.send(plain));
      assertEquals(Status.UNSUPPORTED, e.getStatus());
      assertEquals("the tensor's memory is not shareable: allocate it as shareable memory, or "
          + "send a copy", e.getMessage());
      client.sendCopy(plain);
      try (Tensor got = server.receive()) {
        assertArrayEquals(new int[] {1, 2, 3}, got.toIntArray());
        assertNotEquals(0L, got.flags() & Tensor.FLAG_IS_COPIED);
      }
      assertEquals(ProcessHandle.current().pid(), server.peerPid());
    }
  }

  /**
   * The CUDA half of channels where it runs without a GPU: the kinds of shareable memory, and the
   * refusals of the CUDA calls for host tensors (or, built without CUDA, their UNSUPPORTED). The
   * GPU cases are the core's suite ipc (tests/ipc/test_ipc_cuda.cc).
   */
  @Test
  void cudaSendsAndWaitsRefuseHostTensorsWithTheCoreMessages() {
    boolean builtWithoutCuda = DLBridge.cudaUnavailableReason()
        .map(e -> e.getStatus() == Status.UNSUPPORTED).orElse(false);
    try (Listener listener = Listener.listen(socket().toString());
        Channel client = Channel.connect(socket().toString());
        Channel server = listener.accept();
        Tensor host = Tensor.allocateShareable(Device.CPU, DType.FLOAT32, 4);
        Tensor plain = Tensor.fromArray(new int[] {1, 2}, 2)) {
      assertEquals(Shareable.MEMFD, host.shareableKind());
      assertEquals(Shareable.NONE, plain.shareableKind());
      DLPackException send = assertThrows(DLPackException.class, () -> client.sendCuda(host, 0));
      client.send(host);
      try (Tensor got = server.receive()) {
        assertEquals(Shareable.MEMFD, got.shareableKind());
        DLPackException wait = assertThrows(DLPackException.class, () -> got.cudaWaitReceived(1));
        if (builtWithoutCuda) {
          for (DLPackException e : new DLPackException[] {send, wait}) {
            assertEquals(Status.UNSUPPORTED, e.getStatus());
            assertEquals("dlbridge was built without CUDA support", e.getMessage());
          }
        } else {
          assertEquals(Status.INVALID_ARGUMENT, send.getStatus());
          assertEquals("the cuda send takes cuda tensors, not cpu ones: send it without a "
              + "stream", send.getMessage());
          assertEquals(Status.INVALID_ARGUMENT, wait.getStatus());
          assertEquals("the tensor is not cuda memory received from a channel", wait.getMessage());
        }
      }
    }
  }

  @Test
  void aPoolTensorIsFilledSentAndItsSlotComesBack() {
    try (Listener listener = Listener.listen(socket().toString());
        Channel sender = Channel.connect(socket().toString());
        Channel receiver = listener.accept()) {
      Channel.PoolStats fresh = sender.poolStats();
      assertEquals(0, fresh.segments());
      assertEquals(Channel.POOL_DEFAULT_LIMIT, fresh.limit());
      try (Tensor t = sender.allocate(DType.FLOAT32, 2, 3)) {
        assertTrue(t.isExclusive(), "not sent yet");
        t.copyFrom(new float[] {1, 2, 3, 4, 5, 6});
        sender.send(t);
        try (Tensor got = receiver.receive()) {
          assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, got.toFloatArray());
          assertFalse(got.isShareable());
          expect(Status.UNSUPPORTED, "the tensor was lent by its sender's pool and goes back to "
              + "it when freed: it cannot be sent on; send a copy", () -> receiver.send(got));
          assertEquals(1, sender.poolStats().lent());
        }
      }
      Channel.PoolStats stats = sender.poolStats();
      assertEquals(0, stats.lent());
      assertEquals(1, stats.returned());
      assertEquals(0, stats.live());
      assertEquals(1, stats.segments());
      assertTrue(stats.hugePages() == Channel.HUGE_PAGES_NONE
          || stats.hugePages() == Channel.HUGE_PAGES_TRANSPARENT
          || stats.hugePages() == Channel.HUGE_PAGES_HUGETLB, stats.toString());
      expect(Status.INVALID_ARGUMENT, "a pool limit of 0 bytes leaves no room",
          () -> sender.setPoolLimit(0));
      sender.setPoolLimit(1 << 20);
      expect(Status.LIMIT, "a tensor of 4 bytes needs a pool segment of 2097152 bytes, more than "
          + "the channel's pool limit of 1048576 bytes (dlb_channel_set_pool_limit)",
          () -> sender.allocate(DType.UINT8, 4));
    }
  }

  @Test
  void afterCloseEveryCallThrowsClosed() {
    Listener listener = Listener.listen(socket().toString());
    Channel client = Channel.connect(socket().toString());
    Channel server = listener.accept();
    try (Tensor x = Tensor.allocateShareable(Device.CPU, DType.FLOAT32, 2)) {
      client.close();
      client.close();
      expectClosed(() -> client.send(x));
      expectClosed(() -> client.sendCopy(x));
      expectClosed(client::receive);
      expectClosed(client::peerPid);
      expectClosed(() -> client.allowUid(1));
      listener.close();
      expectClosed(listener::accept);
      expectClosed(() -> listener.allowUid(1));
      assertFalse(Files.exists(socket()), "the socket file is removed");
      server.close();
    }
  }

  @Test
  void closeFromAnotherThreadWakesBlockedCalls() throws Exception {
    Listener listener = Listener.listen(socket().toString());
    try (Channel client = Channel.connect(socket().toString())) {
      Channel server = listener.accept();
      CompletableFuture<Tensor> received = CompletableFuture.supplyAsync(server::receive);
      CompletableFuture<Channel> accepted = CompletableFuture.supplyAsync(listener::accept);
      Thread.sleep(50); // both block: nothing is sent, nobody connects (late is fine too)
      server.close();
      listener.close();
      for (CompletableFuture<?> blocked : new CompletableFuture<?>[] {received, accepted}) {
        Throwable cause = assertThrows(java.util.concurrent.ExecutionException.class,
            () -> blocked.get(10, TimeUnit.SECONDS)).getCause();
        DLPackException e = (DLPackException) cause;
        assertEquals(Status.CLOSED, e.getStatus());
        assertEquals("the channel is closed", e.getMessage());
      }
    }
  }

  @Test
  void listenRefusesAFolderOthersCanEnter() throws Exception {
    Path dir = Files.createDirectory(tmp.resolve("open"),
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
    DLPackException e = assertThrows(DLPackException.class,
        () -> Listener.listen(dir.resolve("channel.sock").toString()));
    assertEquals(Status.PERMISSION, e.getStatus());
    assertEquals("folder '" + dir + "' can be entered by other users (mode 0755): a channel's "
        + "socket must live in a folder only its user can enter (mode 0700)", e.getMessage());
  }

  @Test
  void connectWhereNothingListensIsNoListener() throws Exception {
    Path absent = tmp.resolve("absent.sock");
    expect(Status.NO_LISTENER, "nothing listens at '" + absent + "' (No such file or directory)",
        () -> Channel.connect(absent.toString()));
    expect(Status.NO_LISTENER, "nothing listens at '" + absent + "' (No such file or directory)",
        () -> Channel.connect(absent.toString(), Channel.UID_SELF, Duration.ofSeconds(5)));
    // A socket file whose listener is gone (closing a Java server socket leaves its file).
    Path dead = tmp.resolve("dead.sock");
    try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      server.bind(UnixDomainSocketAddress.of(dead));
    }
    assertTrue(Files.exists(dead));
    expect(Status.NO_LISTENER, "nothing listens at '" + dead + "' (Connection refused)",
        () -> Channel.connect(dead.toString()));
  }

  @Test
  void aPeerThatClosesIsPeerClosed() throws Exception {
    try (Listener listener = Listener.listen(socket().toString())) {
      try (Channel client = Channel.connect(socket().toString());
          Channel server = listener.accept()) {
        client.close();
        expect(Status.PEER_CLOSED, "the peer closed the channel", server::receive);
        expect(Status.PEER_CLOSED, "the peer closed the channel", server::receive);
      }
      // A peer that goes away in the middle of a tensor's descriptor.
      try (SocketChannel raw = SocketChannel.open(UnixDomainSocketAddress.of(socket()));
          Channel server = listener.accept()) {
        raw.write(ByteBuffer.wrap(halfADescriptor()));
        raw.close();
        expect(Status.PEER_CLOSED, "the peer closed the channel after 16 of the 1088 bytes of a "
            + "descriptor", server::receive);
      }
    }
  }

  /** The first 16 bytes of a descriptor (its magic and version): half a frame, then nothing. */
  private static byte[] halfADescriptor() {
    return "dlbridge\1\0\0\0\1\0\0\0".getBytes(StandardCharsets.ISO_8859_1);
  }

  @Test
  void timeLimitsRunOutWithTheirOwnStatus() throws Exception {
    try (Listener listener = Listener.listen(socket().toString());
        Tensor x = Tensor.allocateShareable(Device.CPU, DType.FLOAT32, 2)) {
      listener.setTimeout(Duration.ofMillis(50));
      expect(Status.TIMEOUT, "waiting for a connection: the time limit ran out", listener::accept);
      // The listener stays usable, and its limit passes on to the channels it accepts.
      try (Channel client = Channel.connect(socket().toString(), Channel.UID_SELF,
              Duration.ofSeconds(30));
          Channel server = listener.accept()) {
        expect(Status.TIMEOUT, "receiving on the channel: the time limit ran out", server::receive);
        client.setTimeout(Duration.ZERO);
        expect(Status.TIMEOUT, "receiving on the channel: the time limit ran out", client::receive);
        // Nothing of a tensor had arrived: both ends stay usable.
        x.copyFrom(new float[] {4, 5});
        client.send(x);
        server.setTimeout(null);
        try (Tensor got = server.receive()) {
          assertArrayEquals(new float[] {4, 5}, got.toFloatArray());
        }
        expect(Status.INVALID_ARGUMENT,
            "timeout -5 ns is negative: a time limit is 0 ns or more, or none",
            () -> server.setTimeout(Duration.ofNanos(-5)));
        expect(Status.INVALID_ARGUMENT,
            "timeout -5 ns is negative: a time limit is 0 ns or more, or none",
            () -> listener.setTimeout(Duration.ofNanos(-5)));
      }
      expect(Status.INVALID_ARGUMENT,
          "timeout -5 ns is negative: a time limit is 0 ns or more, or none",
          () -> Channel.connect(socket().toString(), Channel.UID_SELF, Duration.ofNanos(-5)));
      listener.close();
      expectClosed(() -> listener.setTimeout(null));
    }
  }

  @Test
  void aPeerThatSendsHalfAFrameTimesOutAndTheChannelIsOutOfStep() throws Exception {
    try (Listener listener = Listener.listen(socket().toString());
        SocketChannel raw = SocketChannel.open(UnixDomainSocketAddress.of(socket()));
        Channel server = listener.accept();
        Tensor x = Tensor.allocateShareable(Device.CPU, DType.FLOAT32, 2)) {
      raw.write(ByteBuffer.wrap(halfADescriptor()));
      server.setTimeout(Duration.ofMillis(100));
      long start = System.nanoTime();
      expect(Status.TIMEOUT, "receiving on the channel: the time limit ran out", server::receive);
      assertTrue(System.nanoTime() - start >= Duration.ofMillis(90).toNanos());
      String outOfStep = "the channel lost its place in the stream when a time limit ran out in "
          + "the middle of a tensor: close it";
      expect(Status.PROTOCOL, outOfStep, server::receive);
      expect(Status.PROTOCOL, outOfStep, () -> server.send(x));
    }
  }

  // ---- two users: the parity matrix's peer (tests/parity), run as uid 65534 by root --------

  private static final int OTHER_UID = 65534;

  /** The peer program, or the test is skipped: it needs root and DLBRIDGE_PARITY_PEER. */
  private static String peerAsAnotherUser() throws Exception {
    String peer = System.getenv("DLBRIDGE_PARITY_PEER");
    assumeTrue(peer != null && !peer.isEmpty(), "DLBRIDGE_PARITY_PEER is not set");
    int uid = (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    assumeTrue(uid == 0, "needs root to run a peer as another user");
    return peer;
  }

  private static Process start(String... command) throws Exception {
    return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
  }

  /** Waits for the peer (killing it after 60 s); its exit status. */
  private static int reap(Process peer) throws Exception {
    if (!peer.waitFor(60, TimeUnit.SECONDS)) {
      peer.destroyForcibly().waitFor();
      throw new AssertionError("the peer did not exit");
    }
    return peer.exitValue();
  }

  /** A new folder of mode 0700 under /tmp, where uid 65534 can be let in. */
  private static Path privateFolder() throws Exception {
    return Files.createTempDirectory(Path.of("/tmp"), "dlbridge-java-",
        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
  }

  private static void remove(Path folder) throws Exception {
    try (var paths = Files.walk(folder)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toArray(Path[]::new)) {
        Files.deleteIfExists(p);
      }
    }
  }

  @Test
  void anotherUserConnectsRefusedThenAllowed() throws Exception {
    String peer = peerAsAnotherUser();
    Path dir = privateFolder();
    Path path = dir.resolve("s");
    try (Listener listener = Listener.listen(path.toString())) {
      listener.setTimeout(Duration.ofSeconds(60));
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
      Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-rw-rw-"));
      Process refused = start(peer, "connect-as", "" + OTHER_UID, "0", path.toString());
      try {
        expect(Status.PERMISSION, "the peer runs as uid 65534, which this channel does not accept "
            + "(allow that uid on the listener)", listener::accept);
      } finally {
        reap(refused); // it fails its receive: this end closed the connection
      }
      // A refused peer does not stop the listener: allow the uid and serve the next one.
      listener.allowUid(OTHER_UID);
      Process echo = start(peer, "connect-as", "" + OTHER_UID, "0", path.toString());
      try (Channel channel = listener.accept();
          Tensor x = Tensor.allocateShareable(Device.CPU, DType.FLOAT32, 4)) {
        assertEquals(OTHER_UID, channel.peerUid());
        x.copyFrom(new float[] {0, 1, 2, 3});
        channel.send(x);
        try (Tensor back = channel.receive()) {
          assertArrayEquals(new float[] {0, 1, 2, 3}, back.toFloatArray());
        }
      } finally {
        assertEquals(0, reap(echo));
      }
    } finally {
      remove(dir);
    }
  }

  /** Starts the peer listening as uid 65534; the path it prints. */
  private static String listenAs(Process listener) throws Exception {
    BufferedReader out = new BufferedReader(
        new InputStreamReader(listener.getInputStream(), StandardCharsets.UTF_8));
    String path = out.readLine();
    assertNotNull(path, "the peer printed no path");
    return path;
  }

  @Test
  void connectingToAnotherUsersListenerNamesItsUid() throws Exception {
    String peer = peerAsAnotherUser();
    Process refusing = start(peer, "listen-as", "" + OTHER_UID, "0");
    try {
      String path = listenAs(refusing);
      expect(Status.PERMISSION, "the listener runs as uid 65534, which this channel does not "
          + "accept (name that uid when connecting)", () -> Channel.connect(path));
    } finally {
      reap(refusing);
    }
    Process sharing = start(peer, "listen-as", "" + OTHER_UID, "0");
    try (Channel channel = Channel.connect(listenAs(sharing), OTHER_UID, Duration.ofSeconds(60));
        Tensor got = channel.receive()) {
      assertEquals(OTHER_UID, channel.peerUid());
      assertArrayEquals(new float[] {0, 1, 2, 3}, got.toFloatArray());
    } finally {
      assertEquals(0, reap(sharing));
    }
  }

  /** Listens at {@code path} and drops the listener unclosed: only the cleaner can close it. */
  private static void listenAndDrop(Path path) {
    Listener.listen(path.toString());
  }

  /** Listens at {@code path}, closes the listener and drops it. */
  private static void listenCloseAndDrop(Path path) {
    Listener.listen(path.toString()).close();
  }

  /** Connects to {@code path} and drops the channel unclosed. */
  private static void connectAndDrop(Path path) {
    Channel.connect(path.toString());
  }

  /** Collects garbage every 10 ms, at most 500 times, until {@code path} is gone. */
  private static boolean goneAfterGc(Path path) throws InterruptedException {
    for (int i = 0; i < 500 && Files.exists(path); i++) {
      System.gc();
      Thread.sleep(10);
    }
    return !Files.exists(path);
  }

  @Test
  void aListenerNobodyClosedIsClosedByTheCleanerAndAClosedOneNotAgain() throws Exception {
    Path reused = tmp.resolve("sock").resolve("reused.sock");
    Path dropped = tmp.resolve("sock").resolve("dropped.sock");
    // The closed listener's native channel is freed; the next one at its path may get its very
    // address: a second close of the first would take the second's socket file with it.
    listenCloseAndDrop(reused);
    try (Listener live = Listener.listen(reused.toString())) {
      listenAndDrop(dropped);
      assertTrue(Files.exists(dropped));
      assertTrue(goneAfterGc(dropped), "dlb_channel_close removes the socket file");
      // The GC that found the dropped listener found the closed one too.
      assertTrue(Files.exists(reused));
      try (Channel client = Channel.connect(reused.toString());
          Channel server = live.accept()) {
        assertEquals(ProcessHandle.current().pid(), server.peerPid());
      }
    }
  }

  @Test
  void aChannelNobodyClosedIsClosedByTheCleaner() throws Exception {
    try (Listener listener = Listener.listen(socket().toString())) {
      connectAndDrop(socket());
      try (Channel server = listener.accept()) {
        server.setTimeout(Duration.ofSeconds(10));
        CompletableFuture<Void> collector = CompletableFuture.runAsync(() -> {
          for (int i = 0; i < 500; i++) {
            System.gc();
            try {
              Thread.sleep(10);
            } catch (InterruptedException e) {
              return;
            }
          }
        });
        try {
          expect(Status.PEER_CLOSED, "the peer closed the channel", server::receive);
        } finally {
          collector.cancel(true);
        }
      }
    }
  }
}
