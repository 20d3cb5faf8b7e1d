package org.dlbridge;

/**
 * A dlbridge C call failed. {@link #getStatus()} is the core's status code (one of the
 * {@code DLB_ERR_*} constants of {@link DLBridgeNativeConstants}, generated from the C header)
 * and {@link #getMessage()} the core's message, verbatim.
 */
public class DLPackException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;

  /** Called from native code with the core's status and message. */
  public DLPackException(int status, String message) {
    super(message);
    this.status = status;
  }

  /** The core's status code (never DLB_OK). */
  public int getStatus() {
    return status;
  }

  /** True when {@code call} returns, false when it throws a DLPackException. */
  static boolean succeeds(Runnable call) {
    try {
      call.run();
      return true;
    } catch (DLPackException e) {
      return false;
    }
  }

  /** The core's name for the status, such as {@code "DLB_ERR_READ_ONLY"}. */
  public String getStatusName() {
    return DLBridgeNative.dlb_status_name(status);
  }
}
