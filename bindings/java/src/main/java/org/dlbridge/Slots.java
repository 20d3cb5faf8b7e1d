package org.dlbridge;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The slot table behind every {@link Tensor} (and every {@link Tensor#asByteBuffer()} buffer).
 * A slot is an int that three things share:
 *
 * <ul>
 *   <li>the cleanup record: while its owner is open, the slot holds the owner's
 *       {@link Tensor.State}, a phantom reference this class's thread takes from {@link #QUEUE}
 *       to free owners nobody closed (a {@code java.lang.ref.Cleaner} without its list lock and
 *       its {@code Reference.clear()}: closing an owner simply drops the State from the slot);
 *   <li>the release context of a wrapped ByteBuffer (the slot number, no allocation);
 *   <li>the keeper of a wrapped buffer: once the wrapping Tensor is closed or exported, the slot
 *       holds the buffer itself until the native release callback has run, whenever and on
 *       whichever thread the core's reference count lets it run. The callback never calls into
 *       the JVM: it pushes the slot onto a native list that {@link NativeSupport#free} and
 *       {@link NativeSupport#takeReleased} return, and {@link #drain} frees those slots. Java
 *       tracks no sharing of its own: every release is reported the same way.
 * </ul>
 *
 * Each slot also has a native entry {state, next} (dlbridge_jni.c), read here through a direct
 * ByteBuffer. Slots come in segments that are never moved or freed, so a slot's references stay
 * put while the table grows. Free slots form a lock-free stack.
 */
final class Slots {
  // Keep in step with dlbridge_jni.c.
  private static final int SEGMENT_BITS = 12;
  private static final int SEGMENT_SIZE = 1 << SEGMENT_BITS;
  private static final int MASK = SEGMENT_SIZE - 1;
  private static final int MAX_SEGMENTS = 1 << 16;
  private static final int ENTRY_BYTES = 8;

  /** How often, at most, the cleanup thread idles before taking foreign releases itself. */
  private static final long DRAIN_INTERVAL_MS = 1000;

  private static final VarHandle REFS = MethodHandles.arrayElementVarHandle(Object[].class);
  private static final VarHandle ENTRY =
      MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.nativeOrder());

  /** Where the GC leaves the States of owners that became unreachable while open. */
  static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();

  private static final Object GROW_LOCK = new Object();
  // Segment tables, replaced by longer copies as the table grows (the segments themselves are
  // shared, so no write to a slot is lost). Slot s lives at [s >>> SEGMENT_BITS][s & MASK].
  private static volatile Object[][] refs = new Object[0][];
  private static volatile int[][] links = new int[0][];
  private static volatile ByteBuffer[] entries = new ByteBuffer[0];
  /** The free stack: (tag << 32) | (top slot + 1), 0 when empty; the tag defeats ABA. */
  private static final AtomicLong FREE = new AtomicLong();

  static {
    // A daemon in the root thread group with no context class loader: it never keeps a JVM
    // (or mvn exec:java, which waits on its own group) from exiting, and pins no application's
    // class loader or thread group. It ends when interrupted.
    ThreadGroup root = Thread.currentThread().getThreadGroup();
    while (root.getParent() != null) {
      root = root.getParent();
    }
    Thread t = new Thread(root, Slots::cleanLoop, "dlbridge-cleaner");
    t.setDaemon(true);
    t.setContextClassLoader(null);
    t.start();
  }

  private Slots() {}

  /** A free slot, its reference null. */
  static int acquire() {
    for (;;) {
      long h = FREE.get();
      int top = (int) h - 1;
      if (top < 0) {
        grow();
        continue;
      }
      int next = links[top >>> SEGMENT_BITS][top & MASK];
      if (FREE.compareAndSet(h, nextTag(h) | (next + 1L))) {
        return top;
      }
    }
  }

  /** Stores the slot's reference, publishing what was written before (the cleaner reads it). */
  static void set(int slot, Object ref) {
    REFS.setRelease(refs[slot >>> SEGMENT_BITS], slot & MASK, ref);
  }

  static Object get(int slot) {
    return REFS.getAcquire(refs[slot >>> SEGMENT_BITS], slot & MASK);
  }

  /** Drops the slot's reference and returns it to the free stack. */
  static void release(int slot) {
    set(slot, null);
    push(slot, slot);
  }

  /**
   * Frees the slots on a list that {@link NativeSupport#free} or
   * {@link NativeSupport#takeReleased} returned: their buffers' release callbacks have run, so
   * the buffers may go.
   */
  static void drain(int head) {
    while (head >= 0) {
      ByteBuffer segment = entries[head >>> SEGMENT_BITS];
      int offset = (head & MASK) * ENTRY_BYTES;
      int next = (int) ENTRY.get(segment, offset + 4);
      release(head);
      head = next;
    }
  }

  /** Pushes the chain first..last (linked through links) onto the free stack. */
  private static void push(int first, int last) {
    int[] lastLinks = links[last >>> SEGMENT_BITS];
    int i = last & MASK;
    for (;;) {
      long h = FREE.get();
      lastLinks[i] = (int) h - 1;
      if (FREE.compareAndSet(h, nextTag(h) | (first + 1L))) {
        return;
      }
    }
  }

  /** Slots taken (for tests: exact only while no other thread acquires or releases). */
  static int inUse() {
    synchronized (GROW_LOCK) {
      int free = 0;
      int top = (int) FREE.get() - 1;
      while (top >= 0) {
        free++;
        top = links[top >>> SEGMENT_BITS][top & MASK];
      }
      return (refs.length << SEGMENT_BITS) - free;
    }
  }

  private static long nextTag(long h) {
    return ((h >>> 32) + 1) << 32;
  }

  private static void grow() {
    synchronized (GROW_LOCK) {
      if ((int) FREE.get() != 0) {
        return; // another thread grew the table, or slots came back
      }
      int k = refs.length;
      if (k == MAX_SEGMENTS) {
        throw new OutOfMemoryError("too many live dlbridge tensors");
      }
      ByteBuffer segment = NativeSupport.slotSegment(k);
      int base = k << SEGMENT_BITS;
      int[] segmentLinks = new int[SEGMENT_SIZE];
      for (int i = 0; i < SEGMENT_SIZE - 1; i++) {
        segmentLinks[i] = base + i + 1;
      }
      ByteBuffer[] newEntries = Arrays.copyOf(entries, k + 1);
      newEntries[k] = segment;
      entries = newEntries;
      int[][] newLinks = Arrays.copyOf(links, k + 1);
      newLinks[k] = segmentLinks;
      links = newLinks;
      Object[][] newRefs = Arrays.copyOf(refs, k + 1);
      newRefs[k] = new Object[SEGMENT_SIZE];
      refs = newRefs;
      push(base, base + SEGMENT_SIZE - 1); // slots may have come back meanwhile
    }
  }

  /** Frees owners nobody closed, and takes releases made on foreign threads now and then. */
  private static void cleanLoop() {
    for (;;) {
      try {
        Reference<?> ref = QUEUE.remove(DRAIN_INTERVAL_MS);
        if (ref instanceof Tensor.State) {
          ((Tensor.State) ref).clean();
        }
        // Releases made on foreign threads are otherwise taken by the next free on any Java
        // thread; this bounds how long their buffers stay held when Java frees nothing.
        drain(NativeSupport.takeReleased());
      } catch (InterruptedException e) {
        return; // asked to stop: tensors not yet cleaned are freed by the process exit
      } catch (Throwable t) {
        // Like java.lang.ref.Cleaner: a failed cleanup must not stop the others.
      }
    }
  }
}
