package org.dlbridge;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The slot table behind every {@link Tensor} (and every buffer a tensor's memory is seen
 * through). A slot is an int that holds one reference:
 *
 * <ul>
 *   <li>while its owner is open, the owner's {@link Lifecycle.State}, the phantom reference
 *       that frees an owner nobody closed (a {@code java.lang.ref.Cleaner} without its list lock
 *       and its {@code Reference.clear()}: closing simply drops the State from the slot);
 *   <li>once a wrapping tensor is closed or exported, its wrapped buffer, until the release
 *       engine hands back the slot's token ({@link Lifecycle#token}): the buffer stays reachable
 *       for as long as any reference to its memory lives, on whichever thread it is freed.
 * </ul>
 *
 * Slots come in segments that are never moved or freed, so a slot's reference stays put while
 * the table grows. Free slots form a lock-free stack.
 */
final class Slots {
  private static final int SEGMENT_BITS = 12;
  private static final int SEGMENT_SIZE = 1 << SEGMENT_BITS;
  private static final int MASK = SEGMENT_SIZE - 1;
  /** 2^31 - 1 slots at most: a slot's token (slot + 1) stays a positive int. */
  private static final int MAX_SEGMENTS = 1 << (31 - SEGMENT_BITS);

  private static final VarHandle REFS = MethodHandles.arrayElementVarHandle(Object[].class);

  private static final Object GROW_LOCK = new Object();
  // Segment tables, replaced by longer copies as the table grows (the segments themselves are
  // shared, so no write to a slot is lost). Slot s lives at [s >>> SEGMENT_BITS][s & MASK].
  private static volatile Object[][] refs = new Object[0][];
  private static volatile int[][] links = new int[0][];
  /** The free stack: (tag << 32) | (top slot + 1), 0 when empty; the tag defeats ABA. */
  private static final AtomicLong FREE = new AtomicLong();

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
    int[] slotLinks = links[slot >>> SEGMENT_BITS];
    int i = slot & MASK;
    for (;;) {
      long h = FREE.get();
      slotLinks[i] = (int) h - 1;
      if (FREE.compareAndSet(h, nextTag(h) | (slot + 1L))) {
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
      int base = k << SEGMENT_BITS;
      int[] segmentLinks = new int[SEGMENT_SIZE];
      for (int i = 0; i < SEGMENT_SIZE - 1; i++) {
        segmentLinks[i] = base + i + 1;
      }
      int[][] newLinks = Arrays.copyOf(links, k + 1);
      newLinks[k] = segmentLinks;
      links = newLinks;
      Object[][] newRefs = Arrays.copyOf(refs, k + 1);
      newRefs[k] = new Object[SEGMENT_SIZE];
      refs = newRefs;
      // Push the new segment's chain, base .. base + SEGMENT_SIZE - 1, onto the free stack
      // (slots may have come back meanwhile: its last link points at the current top).
      int last = SEGMENT_SIZE - 1;
      for (;;) {
        long h = FREE.get();
        segmentLinks[last] = (int) h - 1;
        if (FREE.compareAndSet(h, nextTag(h) | (base + 1L))) {
          return;
        }
      }
    }
  }
}
