package org.dlbridge.ipc;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.dlbridge.Channel;
import org.dlbridge.DLPackException;
import org.dlbridge.DType;
import org.dlbridge.Device;
import org.dlbridge.Listener;
import org.dlbridge.Status;
import org.dlbridge.Tensor;

/**
 * The Java peer of suite ipc-languages (tests/ipc/README.md, "The peer protocol"): {@code
 * IpcPeer consume PATH} or {@code IpcPeer produce PATH}, with the binding's public API alone.
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

  public static void main(String[] args) {
    if (args.length != 2 || !(args[0].equals("consume") || args[0].equals("produce"))) {
      System.err.println("usage: IpcPeer consume|produce PATH");
      System.exit(2);
    }
    try {
      if (args[0].equals("consume")) {
        consume(args[1]);
      } else {
        produce(args[1]);
      }
    } catch (Exception e) {
      System.err.println("java " + args[0] + ": " + e);
      System.exit(1);
    }
  }
}
