package org.dlbridge;

/**
 * One dimension's part of a {@link Tensor#slice(Slice...)}, with Python's slice semantics:
 * {@code Slice.of(1, 4)} is {@code 1:4}, {@code Slice.of(4, 0, -1)} is {@code 4:0:-1},
 * {@code Slice.from(2)} is {@code 2:}, {@code Slice.until(3)} is {@code :3}, {@link #ALL} is
 * {@code :}. Negative bounds count from the end; bounds past the end are clamped. The core checks
 * the step (never 0) when the slice is applied. Immutable.
 */
public final class Slice {
  /** {@code :}, the whole dimension. */
  public static final Slice ALL = new Slice(Tensor.NONE, Tensor.NONE, 1);

  private final long start;
  private final long stop;
  private final long step;

  private Slice(long start, long stop, long step) {
    this.start = start;
    this.stop = stop;
    this.step = step;
  }

  /**
   * {@code start:stop}.
   *
   * @param start the first index (negative counts from the end)
   * @param stop the index the slice stops before (negative counts from the end)
   * @return the slice
   */
  public static Slice of(long start, long stop) {
    return new Slice(start, stop, 1);
  }

  /**
   * {@code start:stop:step}; {@link Tensor#NONE} for an omitted bound.
   *
   * @param start the first index, or {@link Tensor#NONE}
   * @param stop the index the slice stops before, or {@link Tensor#NONE}
   * @param step the distance between indices (never 0; negative goes backwards)
   * @return the slice
   */
  public static Slice of(long start, long stop, long step) {
    return new Slice(start, stop, step);
  }

  /**
   * {@code start:}.
   *
   * @param start the first index (negative counts from the end)
   * @return the slice
   */
  public static Slice from(long start) {
    return new Slice(start, Tensor.NONE, 1);
  }

  /**
   * {@code :stop}.
   *
   * @param stop the index the slice stops before (negative counts from the end)
   * @return the slice
   */
  public static Slice until(long stop) {
    return new Slice(Tensor.NONE, stop, 1);
  }

  /**
   * {@code ::step}, the whole dimension every {@code step} elements (backwards if negative).
   *
   * @param step the distance between indices (never 0)
   * @return the slice
   */
  public static Slice every(long step) {
    return new Slice(Tensor.NONE, Tensor.NONE, step);
  }

  /**
   * The start bound.
   *
   * @return the first index, or {@link Tensor#NONE} when omitted
   */
  public long start() {
    return start;
  }

  /**
   * The stop bound.
   *
   * @return the index the slice stops before, or {@link Tensor#NONE} when omitted
   */
  public long stop() {
    return stop;
  }

  /**
   * The step.
   *
   * @return the distance between indices
   */
  public long step() {
    return step;
  }

  /**
   * Python's spelling: "1:4", "::-1", ":".
   *
   * @return the slice as Python writes it
   */
  @Override
  public String toString() {
    String s = (start == Tensor.NONE ? "" : Long.toString(start)) + ":"
        + (stop == Tensor.NONE ? "" : Long.toString(stop));
    return step == 1 ? s : s + ":" + step;
  }

  /**
   * Equal when start, stop and step are equal.
   *
   * @param o the object compared
   * @return true for a Slice of the same value
   */
  @Override
  public boolean equals(Object o) {
    return o instanceof Slice && ((Slice) o).start == start && ((Slice) o).stop == stop
        && ((Slice) o).step == step;
  }

  /**
   * A hash of start, stop and step.
   *
   * @return the hash code
   */
  @Override
  public int hashCode() {
    return Long.hashCode(start) * 961 + Long.hashCode(stop) * 31 + Long.hashCode(step);
  }
}
