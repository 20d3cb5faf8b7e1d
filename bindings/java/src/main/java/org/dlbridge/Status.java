package org.dlbridge;

/**
 * The core's status codes ({@link DLPackException#getStatus()}), as compile-time constants a
 * {@code switch} can use. The values are dlbridge.h's, through SWIG: never copied by hand.
 *
 * <pre>{@code
 * try {
 *   t.copyFrom(values);
 * } catch (DLPackException e) {
 *   switch (e.getStatus()) {
 *     case Status.READ_ONLY -> ...;
 *     case Status.CLOSED -> ...;
 *     default -> throw e;
 *   }
 * }
 * }</pre>
 *
 * A status is a plain int, not an enum: a newer library may report one this class has no
 * constant for; {@link #name(int)} still names every status the loaded library knows.
 */
public final class Status {
  /** Success; never the status of a {@link DLPackException}. */
  public static final int OK = DLBridgeNativeConstants.DLB_OK;
  /** A parameter or a tensor field is malformed (negative extent, wrong array type, ...). */
  public static final int INVALID_ARGUMENT = DLBridgeNativeConstants.DLB_ERR_INVALID_ARGUMENT;
  /** A host or device allocation failed. */
  public static final int OUT_OF_MEMORY = DLBridgeNativeConstants.DLB_ERR_OUT_OF_MEMORY;
  /** A versioned tensor's major version is not 1. */
  public static final int UNSUPPORTED_VERSION = DLBridgeNativeConstants.DLB_ERR_UNSUPPORTED_VERSION;
  /** Well-formed but not handled here: an unknown code or flag, a device without a backend. */
  public static final int UNSUPPORTED = DLBridgeNativeConstants.DLB_ERR_UNSUPPORTED;
  /** A write into a READ_ONLY tensor, or an export that would drop that flag. */
  public static final int READ_ONLY = DLBridgeNativeConstants.DLB_ERR_READ_ONLY;
  /** The memory layout does not allow the operation without a copy. */
  public static final int LAYOUT = DLBridgeNativeConstants.DLB_ERR_LAYOUT;
  /** An element count or byte size does not fit (in 64 bits, in a Java array or buffer). */
  public static final int OVERFLOW = DLBridgeNativeConstants.DLB_ERR_OVERFLOW;
  /** A device runtime or a plug-in backend reported a failure. */
  public static final int DEVICE = DLBridgeNativeConstants.DLB_ERR_DEVICE;
  /** The device's runtime or hardware is not available in this process. */
  public static final int DEVICE_UNAVAILABLE = DLBridgeNativeConstants.DLB_ERR_DEVICE_UNAVAILABLE;
  /** A tensor was used after it was closed or exported. */
  public static final int CLOSED = DLBridgeNativeConstants.DLB_ERR_CLOSED;
  /** A channel's connect found nothing listening at the address (no socket file, or none alive). */
  public static final int NO_LISTENER = DLBridgeNativeConstants.DLB_ERR_NO_LISTENER;
  /**
   * Not permitted: a socket's file or folder modes, another user's folder, a peer (or a listener)
   * running as a user this end does not accept.
   */
  public static final int PERMISSION = DLBridgeNativeConstants.DLB_ERR_PERMISSION;
  /** The channel's peer closed the connection or went away, also in the middle of a tensor. */
  public static final int PEER_CLOSED = DLBridgeNativeConstants.DLB_ERR_PEER_CLOSED;
  /**
   * The peer sent what is not a tensor this library accepts (a malformed, truncated or forged
   * descriptor), or the channel lost its place in the stream after a time limit ran out in the
   * middle of a tensor (close it).
   */
  public static final int PROTOCOL = DLBridgeNativeConstants.DLB_ERR_PROTOCOL;
  /** The channel's time limit ({@link Channel#setTimeout}, {@link Listener#setTimeout}) ran out. */
  public static final int TIMEOUT = DLBridgeNativeConstants.DLB_ERR_TIMEOUT;
  /** A limit of this process or of the system: open file descriptors, mappings, fds in flight. */
  public static final int LIMIT = DLBridgeNativeConstants.DLB_ERR_LIMIT;

  private Status() {}

  /**
   * The core's name of a status.
   *
   * @param status a status code
   * @return its name ("DLB_ERR_READ_ONLY"), "DLB_ERR_UNKNOWN" for a value the library does not know
   */
  public static String name(int status) {
    return DLBridgeNative.dlb_status_name(status);
  }
}
