package org.dlbridge;

/**
 * A dlbridge C call failed. {@link #getStatus()} is the core's status code (one of the
 * {@code DLB_ERR_*} constants on this class) and {@link #getMessage()} the core's message,
 * verbatim.
 */
public class DLPackException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public static final int DLB_ERR_INVALID_ARGUMENT = 1;
  public static final int DLB_ERR_OUT_OF_MEMORY = 2;
  public static final int DLB_ERR_UNSUPPORTED_VERSION = 3;
  public static final int DLB_ERR_UNSUPPORTED = 4;
  public static final int DLB_ERR_READ_ONLY = 5;
  public static final int DLB_ERR_LAYOUT = 6;
  public static final int DLB_ERR_OVERFLOW = 7;
  public static final int DLB_ERR_DEVICE = 8;
  public static final int DLB_ERR_DEVICE_UNAVAILABLE = 9;

  private final int status;

  /** Called from native code with the core's status and message. */
  public DLPackException(int status, String message) {
    super(message);
    this.status = status;
  }

  /** The core's status code (never 0). */
  public int getStatus() {
    return status;
  }

  /** The core's name for the status, such as {@code "DLB_ERR_READ_ONLY"}. */
  public String getStatusName() {
    return DLBridgeNative.dlb_status_name(status);
  }
}
