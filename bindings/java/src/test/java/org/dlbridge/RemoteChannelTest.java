package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Channels across machines over loopback (docs/remote.md): a listener at tcp://127.0.0.1:0 on
 * this thread, a connect on another; the key handshake's refusals at both ends; the options'
 * checks, each with the core's status and message. Skipped, with the core's reason, where UCX or
 * libcrypto is missing ({@link DLBridge#remoteUnavailableReason()}); the options' checks need
 * neither and always run.
 */
class RemoteChannelTest extends LeakChecked {
  private static final String LOOPBACK = "tcp://127.0.0.1:0";
  /** Long enough for a loaded machine, short enough that a lost peer fails the test. */
  private static final Duration LIMIT = Duration.ofSeconds(60);

  @TempDir Path tmp;

  private static byte[] key(int seed) {
    byte[] k = new byte[32];
    for (int i = 0; i < k.length; i++) {
      k[i] = (byte) (seed + 7 * i);
    }
    return k;
  }

  private static ChannelOptions options(byte[] key) {
    ChannelOptions o = new ChannelOptions();
    try {
      if (key != null) {
        o.key(key);
      }
      o.timeout(LIMIT);
      return o;
    } catch (RuntimeException e) {
      o.close();
      throw e;
    }
  }

  private static DLPackException expect(int status, Executable call) {
    DLPackException e = assertThrows(DLPackException.class, call);
    assertEquals(Status.name(status), e.getStatusName(), e.getMessage());
    return e;
  }

  private static void expect(int status, String message, Executable call) {
    assertEquals(message, expect(status, call).getMessage());
  }

  private static CompletableFuture<Channel> connectLater(int port, ChannelOptions options) {
    return CompletableFuture.supplyAsync(
        () -> Channel.connect("tcp://127.0.0.1:" + port, options));
  }

  /** What {@code future} failed with: a DLPackException, else the test fails. */
  private static DLPackException failureOf(CompletableFuture<?> future) throws Exception {
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> future.get(2, TimeUnit.MINUTES));
    return assertInstanceOf(DLPackException.class, e.getCause());
  }

  /**
   * Closes {@code client} on another thread while {@code server} waits in a receive, which ends
   * with {@link Status#PEER_CLOSED}. As between two processes, the server's side runs while the
   * client's close says goodbye (a close flushes what it sent to a peer that takes it).
   */
  private static void hangUp(Channel client, Channel server) throws Exception {
    CompletableFuture<Void> closing = CompletableFuture.runAsync(client::close);
    DLPackException end = expect(Status.PEER_CLOSED, server::receive);
    assertTrue(end.getMessage().startsWith("waiting for a tensor: the peer at tcp://127.0.0.1:"),
        end.getMessage());
    closing.get(2, TimeUnit.MINUTES);
  }

  private void assumeRemote() {
    assumeTrue(DLBridge.remoteIsAvailable(), () -> "remote channels are not available here: "
        + DLBridge.remoteUnavailableReason().map(Throwable::getMessage).orElse(""));
  }

  @Test
  void aTensorCrossesLoopbackCopiedBothWays() throws Exception {
    assumeRemote();
    try (ChannelOptions options = options(key(1));
        Listener listener = Listener.listen(LOOPBACK, options)) {
      assertTrue(listener.isRemote());
      int port = listener.port();
      assertTrue(port > 0 && port < 65536, "port " + port);
      CompletableFuture<Channel> connecting = connectLater(port, options);
      try (Channel server = listener.accept();
          Channel client = connecting.get(2, TimeUnit.MINUTES);
          Tensor x = Tensor.fromArray(new float[] {0, 1, 2, 3, 4, 5}, 2, 3)) {
        assertTrue(server.isRemote() && client.isRemote());
        assertTrue(client.port() > 0, "client port " + client.port());
        assertFalse(x.isShareable(), "a remote channel sends any tensor");
        client.send(x);
        try (Tensor got = server.receive()) {
          assertEquals(DType.FLOAT32, got.dtype());
          assertArrayEquals(new long[] {2, 3}, got.shape());
          assertArrayEquals(new float[] {0, 1, 2, 3, 4, 5}, got.toFloatArray());
          assertNotEquals(0L, got.flags() & Tensor.FLAG_IS_COPIED);
          assertEquals(Device.CPU, got.device());
          got.setFloat(100f, 0, 0);
          server.send(got);
        }
        try (Tensor back = client.receive()) {
          assertEquals(100f, back.getFloat(0, 0));
          assertNotEquals(0L, back.flags() & Tensor.FLAG_IS_COPIED);
        }
        assertEquals(0f, x.getFloat(0, 0), "the bytes were copied, not shared");
        int[] values = new int[7 * 8];
        for (int i = 0; i < values.length; i++) {
          values[i] = i;
        }
        try (Tensor ints = Tensor.fromArray(values, 7, 8)) {
          client.send(ints);
        }
        try (Tensor got = server.receive()) {
          assertEquals(DType.INT32, got.dtype());
          assertArrayEquals(values, got.toIntArray());
          assertNotEquals(0L, got.flags() & Tensor.FLAG_IS_COPIED);
        }
        hangUp(client, server);
      }
    }
  }

  @Test
  void aTransposeArrivesCompactOrWithItsStridesWhenSentKeepingLayout() throws Exception {
    assumeRemote();
    try (ChannelOptions options = options(key(3));
        Listener listener = Listener.listen(LOOPBACK, options)) {
      CompletableFuture<Channel> connecting = connectLater(listener.port(), options);
      try (Channel server = listener.accept();
          Channel client = connecting.get(2, TimeUnit.MINUTES);
          Tensor x = Tensor.fromArray(new float[] {0, 1, 2, 3, 4, 5}, 2, 3);
          Tensor xt = x.transpose()) {
        client.send(xt);
        client.sendKeepingLayout(xt);
        float[] want = {0, 3, 1, 4, 2, 5};
        try (Tensor packed = server.receive()) {
          assertArrayEquals(new long[] {2, 1}, packed.strides());
          assertArrayEquals(want, packed.toFloatArray());
        }
        try (Tensor kept = server.receive()) {
          assertArrayEquals(new long[] {1, 3}, kept.strides());
          assertArrayEquals(want, kept.toFloatArray());
        }
        hangUp(client, server);
      }
    }
  }

  @Test
  void aStreamSentWithSendMoreArrivesWholeAndInOrder() throws Exception {
    assumeRemote();
    int count = 20;
    try (ChannelOptions options = options(key(4));
        Listener listener = Listener.listen(LOOPBACK, options)) {
      CompletableFuture<Channel> connecting = connectLater(listener.port(), options);
      try (Channel server = listener.accept();
          Channel client = connecting.get(2, TimeUnit.MINUTES)) {
        for (int i = 0; i < count; i++) {
          float[] values = new float[i + 1];
          for (int j = 0; j < values.length; j++) {
            values[j] = i * 100 + j;
          }
          try (Tensor x = Tensor.fromArray(values, i + 1)) {
            if (i < count - 1) {
              client.sendMore(x);
            } else {
              client.send(x);
            }
          }
        }
        for (int i = 0; i < count; i++) {
          float[] want = new float[i + 1];
          for (int j = 0; j < want.length; j++) {
            want[j] = i * 100 + j;
          }
          try (Tensor got = server.receive()) {
            assertEquals(DType.FLOAT32, got.dtype());
            assertArrayEquals(new long[] {i + 1}, got.shape(), "tensor " + i);
            assertArrayEquals(want, got.toFloatArray(), "tensor " + i);
            assertNotEquals(0L, got.flags() & Tensor.FLAG_IS_COPIED);
          }
        }
        hangUp(client, server);
      }
    }
  }

  @Test
  void aWrongKeyIsRefusedAtBothEndsAndTheListenerServesOn() throws Exception {
    assumeRemote();
    try (ChannelOptions right = options(key(1));
        ChannelOptions wrong = options(key(2));
        Listener listener = Listener.listen(LOOPBACK, right)) {
      int port = listener.port();
      CompletableFuture<Channel> refused = connectLater(port, wrong);
      DLPackException accepted = expect(Status.PERMISSION, listener::accept);
      assertTrue(accepted.getMessage().startsWith("refused the peer at tcp://127.0.0.1:"),
          accepted.getMessage());
      assertTrue(accepted.getMessage().endsWith(": it did not prove it holds the channel's key"),
          accepted.getMessage());
      DLPackException connected = failureOf(refused);
      assertEquals(Status.PERMISSION, connected.getStatus());
      assertEquals("the listener at tcp://127.0.0.1:" + port + " refused this channel's key",
          connected.getMessage());
      CompletableFuture<Channel> admitted = connectLater(port, right);
      try (Channel server = listener.accept();
          Channel client = admitted.get(2, TimeUnit.MINUTES)) {
        assertTrue(server.isRemote() && client.isRemote());
        hangUp(client, server);
      }
    }
  }

  @Test
  void aRemoteListenerNeedsAKey() {
    assumeRemote();
    String message = "a remote channel needs a key that its peers share "
        + "(dlb_channel_options_set_key)";
    try (ChannelOptions keyless = options(null)) {
      expect(Status.INVALID_ARGUMENT, message, () -> Listener.listen(LOOPBACK, keyless).close());
    }
    expect(Status.INVALID_ARGUMENT, message, () -> Listener.listen(LOOPBACK, null).close());
  }

  @Test
  void theOptionsRefuseWhatTheCoreRefusesAndKeepWhatTheyHad() {
    try (ChannelOptions options = new ChannelOptions()) {
      for (int length : new int[] {0, 15, 1025, 4000}) {
        expect(Status.INVALID_ARGUMENT, "a key of " + length + " bytes: a channel's key has 16 "
            + "to 1024 bytes (random ones: 32 is plenty)", () -> options.key(new byte[length]));
      }
      assertEquals(16, ChannelOptions.MIN_KEY_BYTES);
      assertEquals(1024, ChannelOptions.MAX_KEY_BYTES);
      options.key(new byte[ChannelOptions.MIN_KEY_BYTES])
          .key(new byte[ChannelOptions.MAX_KEY_BYTES]);
      expect(Status.INVALID_ARGUMENT, "a maximum tensor size of 0 bytes: at least 1",
          () -> options.maxTensorBytes(0));
      expect(Status.INVALID_ARGUMENT, "a maximum of 0 tensors in flight: 1 to 65536",
          () -> options.maxInFlight(0));
      expect(Status.INVALID_ARGUMENT, "a maximum of 65537 tensors in flight: 1 to 65536",
          () -> options.maxInFlight(65537));
      expect(Status.INVALID_ARGUMENT, "a maximum of 4294967295 tensors in flight: 1 to 65536",
          () -> options.maxInFlight(-1));
      expect(Status.INVALID_ARGUMENT,
          "timeout -5 ns is negative: a time limit is 0 ns or more, or none",
          () -> options.timeout(Duration.ofNanos(-5)));
      expect(Status.UNSUPPORTED, "a remote channel receives into cpu, cuda_host, cuda or "
          + "cuda_managed memory, not opencl", () -> options.receiveDevice(Device.opencl(0)));
      assertThrows(NullPointerException.class, () -> options.key(null));
      options.maxTensorBytes(-1L).maxInFlight(65536).timeout(null).timeout(Duration.ZERO)
          .receiveDevice(Device.CPU).listenerUid(Channel.UID_SELF);
      assertEquals(1L << 30, ChannelOptions.DEFAULT_MAX_TENSOR_BYTES);
      assertEquals(64, ChannelOptions.DEFAULT_MAX_IN_FLIGHT);
    }
  }

  @Test
  void closedOptionsRefuseEveryUse() {
    ChannelOptions options = new ChannelOptions();
    options.close();
    options.close();
    for (Executable use : new Executable[] {
        () -> options.key(key(1)),
        () -> options.maxInFlight(1),
        () -> Listener.listen(LOOPBACK, options),
        () -> Channel.connect("tcp://127.0.0.1:1", options)}) {
      IllegalStateException e = assertThrows(IllegalStateException.class, use);
      assertEquals("the channel options are closed", e.getMessage());
    }
  }

  @Test
  void optionsMakeLocalChannelsToo() throws Exception {
    String path = tmp.resolve("sock").resolve("local.sock").toString();
    try (ChannelOptions options = options(key(3));
        Listener listener = Listener.listen(path, options);
        Channel client = Channel.connect(path, options);
        Channel server = listener.accept()) {
      assertFalse(listener.isRemote());
      assertEquals(-1, listener.port());
      assertFalse(client.isRemote() || server.isRemote());
      assertEquals(-1, client.port());
      assertEquals(ProcessHandle.current().pid(), server.peerPid());
    }
  }

  @Test
  void remoteAvailabilityIsTheCoresAnswer() {
    DLBridge.remoteUnavailableReason().ifPresent(e -> {
      assertEquals(Status.UNSUPPORTED, e.getStatus());
      assertFalse(e.getMessage().isEmpty());
    });
    assertEquals(DLBridge.remoteUnavailableReason().isEmpty(), DLBridge.remoteIsAvailable());
  }
}
