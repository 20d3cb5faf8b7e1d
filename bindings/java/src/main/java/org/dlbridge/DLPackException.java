package org.dlbridge;

/**
 * A dlbridge call failed. {@link #getStatus()} is the core's status code, one of the {@link
 * Status} constants (a {@code switch} can use them), and {@link #getMessage()} the core's
 * message, verbatim: every language binding reports the same status and words for the same
 * mistake. Using a closed tensor gives {@link Status#CLOSED}, "the tensor is closed".
 */
public class DLPackException extends RuntimeException {
  /** The serialized form's version. */
  private static final long serialVersionUID = 1L;

  /** The core's status code, one of the {@link Status} constants. */
  private final int status;

  /**
   * Called from native code with the core's status and message.
   *
   * @param status the core's status code, one of the {@link Status} constants
   * @param message the core's message, verbatim
   */
  public DLPackException(int status, String message) {
    super(message);
    this.status = status;
  }

  /**
   * The core's status code.
   *
   * @return one of the {@link Status} constants (never {@link Status#OK})
   */
  public int getStatus() {
    return status;
  }

  /**
   * The core's name for the status.
   *
   * @return the name, such as {@code "DLB_ERR_READ_ONLY"}
   */
  public String getStatusName() {
    return Status.name(status);
  }
}
