package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tensors across processes: this JVM listens and consumes, IpcPeer in a JVM of its own produces
 * (tests/ipc/README.md, "The peer protocol"); refusals with the core's messages; and what every
 * Listener and Channel does after close, also from another thread while a call is blocked.
 */
class ChannelTest {
  @TempDir Path tmp;

  private Path socket() {
    return tmp.resolve("sock").resolve("channel.sock");
  }

  private static void expectClosed(Executable call) {
    DLPackException e = assertThrows(DLPackException.class, call);
    assertEquals(Status.CLOSED, e.getStatus());
    assertEquals("the channel is closed", e.getMessage());
  }

  @Test
  void tensorsCrossProcessesWithoutACopy() throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    String cp = System.getProperty("dlbridge.test.jar") + File.pathSeparator
        + System.getProperty("dlbridge.test.classes");
    try (Listener listener = Listener.listen(socket().toString())) {
      ProcessBuilder pb = new ProcessBuilder(java.toString(), "-cp", cp,
          "org.dlbridge.ipc.IpcPeer", "produce", socket().toString());
      pb.redirectErrorStream(true);
      Process producer = pb.start();
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
          assertArrayEquals(new long[] {2, 3}, t.shape());
          assertArrayEquals(new float[] {0, 1, 2, 3, 4, 5}, t.toFloatArray());
          assertTrue(t.isShareable());
          assertFalse(t.isExclusive(), "the producer maps the same memory");
          t.setFloat(100f, 0, 0);
          channel.send(t);
        }
        try (Tensor copied = channel.receive()) {
          assertArrayEquals(new int[] {7, 8}, copied.toIntArray());
          assertNotEquals(0L, copied.flags() & Tensor.FLAG_IS_COPIED);
        }
        DLPackException end = assertThrows(DLPackException.class, channel::receive);
        assertEquals(Status.DEVICE, end.getStatus());
        assertEquals("the peer closed the channel", end.getMessage());
      }
      assertTrue(producer.waitFor(120, TimeUnit.SECONDS));
      String out = output.get();
      assertEquals(0, producer.exitValue(), out);
      assertEquals("produce ok", out.strip());
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
      assertEquals("the tensor's memory is not shareable: allocate it with "
          + "dlb_tensor_allocate_shareable, or send with DLB_SEND_COPY", e.getMessage());
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
          assertEquals("dlb_channel_send_cuda sends cuda tensors, not cpu ones: use "
              + "dlb_channel_send", send.getMessage());
          assertEquals(Status.INVALID_ARGUMENT, wait.getStatus());
          assertEquals("the tensor is not cuda memory received from a channel", wait.getMessage());
        }
      }
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
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    assertEquals("folder '" + dir + "' can be entered by other users (mode 0755): a channel's "
        + "socket must live in a folder only its user can enter (mode 0700)", e.getMessage());
  }
}
