package org.dlbridge.ipc;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import org.dlbridge.Channel;
import org.dlbridge.ChannelOptions;
import org.dlbridge.DLPackException;
import org.dlbridge.DType;
import org.dlbridge.Device;
import org.dlbridge.Listener;
import org.dlbridge.Status;
import org.dlbridge.Tensor;

/**
 * The Java peer of suite ipc-languages (tests/ipc/README.md, "The peer protocol"): {@code
 * IpcPeer consume PATH} or {@code IpcPeer produce PATH}, and of the remote pairs (suite remote):
 * {@code IpcPeer remote-consume KEYHEX [SCHEME]} (listens at SCHEME://127.0.0.1:0, tcp unless
 * named, and prints {@code ready PORT}) or {@code IpcPeer remote-produce ADDRESS KEYHEX}; with
 * the binding's public API alone.
 * ChannelTest runs it as the producer of its own exchange.
 */
public final class IpcPeer {
  private IpcPeer() {}

  private static void expect(boolean ok, String what) {
    if (!ok) {
      throw new IllegalStateException(what);
    }
  }

  private static int myUid() throws Exception {
    return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
  }

  static void consume(String path) throws Exception {
    try (Listener listener = Listener.listen(path)) {
      System.out.println("ready");
      System.out.flush();
      try (Channel channel = listener.accept()) {
        expect(channel.peerPid() > 0 && channel.peerUid() == myUid(), "the peer's pid and uid");
        try (Tensor t = channel.receive()) {
          expect(t.dtype().equals(DType.FLOAT32) && Arrays.equals(t.shape(), new long[] {2, 3}),
              "the first tensor is " + t);
          expect(Arrays.equals(t.toFloatArray(), new float[] {0, 1, 2, 3, 4, 5}),
              "values " + Arrays.toString(t.toFloatArray()));
          expect(t.isShareable(), "a received tensor is shareable");
          t.setFloat(100f, 0, 0);
          channel.send(t);
        }
        try (Tensor copied = channel.receive()) {
          expect(Arrays.equals(copied.toIntArray(), new int[] {7, 8}), "the copy's values");
          expect((copied.flags() & Tensor.FLAG_IS_COPIED) != 0, "IS_COPIED is not set");
        }
        try {
          channel.receive().close();
          throw new IllegalStateException("a receive after the peer closed succeeded");
        } catch (DLPackException e) {
          expect(e.getStatus() == Status.PEER_CLOSED
                  && e.getMessage().equals("the peer closed the channel"),
              "after the peer closed: " + e);
        }
      }
    }
    System.out.println("consume ok");
  }

  static void produce(String path) {
    try (Channel channel = Channel.connect(path);
        Tensor x = Tensor.allocateShareable(Device.CPU, DType.FLOAT32, 2, 3);
        Tensor plain = Tensor.fromArray(new int[] {7, 8}, 2)) {
      x.copyFrom(new float[] {0, 1, 2, 3, 4, 5});
      channel.send(x);
      try (Tensor back = channel.receive()) {
        expect(x.getFloat(0, 0) == 100f, "the consumer's write is not in our tensor");
        expect(back.getFloat(0, 0) == 100f, "the tensor sent back");
      }
      channel.sendCopy(plain);
    }
    System.out.println("produce ok");
  }

  /** The peers' time limit: a peer that stops answering fails the pair instead of hanging it. */
  private static final Duration REMOTE_LIMIT = Duration.ofSeconds(120);

  private static byte[] hexKey(String hex) {
    expect(hex.length() % 2 == 0, "KEYHEX has an odd number of digits");
    byte[] key = new byte[hex.length() / 2];
    for (int i = 0; i < key.length; i++) {
      key[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
    }
    return key;
  }

  private static ChannelOptions remoteOptions(String keyHex, ChannelOptions options) {
    return options.key(hexKey(keyHex)).timeout(REMOTE_LIMIT);
  }

  static void remoteConsume(String keyHex, String scheme) {
    try (ChannelOptions options = new ChannelOptions();
        Listener listener = Listener.listen(scheme + "://127.0.0.1:0",
            remoteOptions(keyHex, options))) {
      System.out.println("ready " + listener.port());
      System.out.flush();
      try (Channel channel = listener.accept()) {
        expect(channel.isRemote(), "the accepted channel is not remote");
        try (Tensor t = channel.receive()) {
          expect(t.dtype().equals(DType.FLOAT32) && Arrays.equals(t.shape(), new long[] {2, 3}),
              "the first tensor is " + t);
          expect(Arrays.equals(t.toFloatArray(), new float[] {0, 1, 2, 3, 4, 5}),
              "values " + Arrays.toString(t.toFloatArray()));
          expect((t.flags() & Tensor.FLAG_IS_COPIED) != 0, "IS_COPIED is not set on the first");
          t.setFloat(100f, 0, 0);
          channel.send(t);
        }
        try (Tensor t = channel.receive()) {
          expect(t.dtype().equals(DType.INT32) && Arrays.equals(t.shape(), new long[] {7, 8}),
              "the second tensor is " + t);
          int[] values = t.toIntArray();
          for (int i = 0; i < 7; i++) {
            for (int j = 0; j < 8; j++) {
              expect(values[8 * i + j] == 8 * i + j, "element [" + i + ", " + j + "] is "
                  + values[8 * i + j]);
            }
          }
          expect((t.flags() & Tensor.FLAG_IS_COPIED) != 0, "IS_COPIED is not set on the second");
        }
        try {
          channel.receive().close();
          throw new IllegalStateException("a receive after the peer closed succeeded");
        } catch (DLPackException e) {
          expect(e.getStatus() == Status.PEER_CLOSED, "after the peer closed: " + e);
        }
      }
    }
    System.out.println("consume ok");
  }

  static void remoteProduce(String address, String keyHex) {
    try (ChannelOptions options = new ChannelOptions();
        Channel channel = Channel.connect(address, remoteOptions(keyHex, options));
        Tensor x = Tensor.allocate(Device.CPU, DType.FLOAT32, 2, 3)) {
      expect(channel.isRemote(), "the channel is not remote");
      x.copyFrom(new float[] {0, 1, 2, 3, 4, 5});
      channel.send(x);
      try (Tensor back = channel.receive()) {
        expect(back.getFloat(0, 0) == 100f, "the tensor sent back has " + back.getFloat(0, 0));
        expect(x.getFloat(0, 0) == 0f, "the consumer's write reached our tensor");
      }
      int[] values = new int[7 * 8];
      for (int i = 0; i < values.length; i++) {
        values[i] = i; // 8 * row + column
      }
      try (Tensor ints = Tensor.fromArray(values, 7, 8)) {
        channel.send(ints);
      }
    }
    System.out.println("produce ok");
  }

  public static void main(String[] args) {
    String role = args.length > 0 ? args[0] : "";
    boolean known = switch (role) {
      case "consume", "produce" -> args.length == 2;
      case "remote-consume" -> args.length == 2 || args.length == 3;
      case "remote-produce" -> args.length == 3;
      default -> false;
    };
    if (!known) {
      System.err.println("usage: IpcPeer consume|produce PATH | remote-consume KEYHEX [SCHEME]"
          + " | remote-produce ADDRESS KEYHEX");
      System.exit(2);
    }
    try {
      switch (role) {
        case "consume" -> consume(args[1]);
        case "produce" -> produce(args[1]);
        case "remote-consume" -> remoteConsume(args[1], args.length == 3 ? args[2] : "tcp");
        default -> remoteProduce(args[1], args[2]);
      }
    } catch (Exception e) {
      System.err.println("java " + args[0] + ": " + e);
      System.exit(1);
    }
  }
}
