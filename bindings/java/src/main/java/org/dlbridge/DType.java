package org.dlbridge;

import java.nio.charset.StandardCharsets;

/**
 * A DLPack data type: a (code, bits, lanes) value. Not an enum: a newer producer may send a code
 * this class has no constant for, and such a value still round-trips. Names, sizes and validity
 * are the core's ({@code dlb_dtype_format}, {@code dlb_dtype_parse}, {@code
 * dlb_dtype_element_size}); the codes are the DLPack header's, through SWIG.
 */
public final class DType {
  /** DLPack type code: signed integers. */
  public static final int CODE_INT = DLBridgeNativeConstants.kDLInt;
  /** DLPack type code: unsigned integers. */
  public static final int CODE_UINT = DLBridgeNativeConstants.kDLUInt;
  /** DLPack type code: IEEE floating point. */
  public static final int CODE_FLOAT = DLBridgeNativeConstants.kDLFloat;
  /** DLPack type code: opaque handles (pointers). */
  public static final int CODE_OPAQUE_HANDLE = DLBridgeNativeConstants.kDLOpaqueHandle;
  /** DLPack type code: bfloat (brain floating point). */
  public static final int CODE_BFLOAT = DLBridgeNativeConstants.kDLBfloat;
  /** DLPack type code: complex numbers (two floats of half the bits). */
  public static final int CODE_COMPLEX = DLBridgeNativeConstants.kDLComplex;
  /** DLPack type code: booleans. */
  public static final int CODE_BOOL = DLBridgeNativeConstants.kDLBool;
  /** DLPack type code: the low-precision floating-point format {@code float8_e3m4}. */
  public static final int CODE_FLOAT8_E3M4 = DLBridgeNativeConstants.kDLFloat8_e3m4;
  /** DLPack type code: the low-precision floating-point format {@code float8_e4m3}. */
  public static final int CODE_FLOAT8_E4M3 = DLBridgeNativeConstants.kDLFloat8_e4m3;
  /** DLPack type code: the low-precision floating-point format {@code float8_e4m3b11fnuz}. */
  public static final int CODE_FLOAT8_E4M3B11FNUZ = DLBridgeNativeConstants.kDLFloat8_e4m3b11fnuz;
  /** DLPack type code: the low-precision floating-point format {@code float8_e4m3fn}. */
  public static final int CODE_FLOAT8_E4M3FN = DLBridgeNativeConstants.kDLFloat8_e4m3fn;
  /** DLPack type code: the low-precision floating-point format {@code float8_e4m3fnuz}. */
  public static final int CODE_FLOAT8_E4M3FNUZ = DLBridgeNativeConstants.kDLFloat8_e4m3fnuz;
  /** DLPack type code: the low-precision floating-point format {@code float8_e5m2}. */
  public static final int CODE_FLOAT8_E5M2 = DLBridgeNativeConstants.kDLFloat8_e5m2;
  /** DLPack type code: the low-precision floating-point format {@code float8_e5m2fnuz}. */
  public static final int CODE_FLOAT8_E5M2FNUZ = DLBridgeNativeConstants.kDLFloat8_e5m2fnuz;
  /** DLPack type code: the low-precision floating-point format {@code float8_e8m0fnu}. */
  public static final int CODE_FLOAT8_E8M0FNU = DLBridgeNativeConstants.kDLFloat8_e8m0fnu;
  /** DLPack type code: the low-precision floating-point format {@code float6_e2m3fn}. */
  public static final int CODE_FLOAT6_E2M3FN = DLBridgeNativeConstants.kDLFloat6_e2m3fn;
  /** DLPack type code: the low-precision floating-point format {@code float6_e3m2fn}. */
  public static final int CODE_FLOAT6_E3M2FN = DLBridgeNativeConstants.kDLFloat6_e3m2fn;
  /** DLPack type code: the low-precision floating-point format {@code float4_e2m1fn}. */
  public static final int CODE_FLOAT4_E2M1FN = DLBridgeNativeConstants.kDLFloat4_e2m1fn;
  /** DLPack type code: complex numbers of two bfloats. */
  public static final int CODE_BCOMPLEX = DLBridgeNativeConstants.kDLBcomplex;

  /** {@code int8}: (code, bits, lanes) = {@code (CODE_INT, 8, 1)}. */
  public static final DType INT8 = new DType(CODE_INT, 8, 1);
  /** {@code int16}: (code, bits, lanes) = {@code (CODE_INT, 16, 1)}. */
  public static final DType INT16 = new DType(CODE_INT, 16, 1);
  /** {@code int32}: (code, bits, lanes) = {@code (CODE_INT, 32, 1)}. */
  public static final DType INT32 = new DType(CODE_INT, 32, 1);
  /** {@code int64}: (code, bits, lanes) = {@code (CODE_INT, 64, 1)}. */
  public static final DType INT64 = new DType(CODE_INT, 64, 1);
  /** {@code uint8}: (code, bits, lanes) = {@code (CODE_UINT, 8, 1)}. */
  public static final DType UINT8 = new DType(CODE_UINT, 8, 1);
  /** {@code uint16}: (code, bits, lanes) = {@code (CODE_UINT, 16, 1)}. */
  public static final DType UINT16 = new DType(CODE_UINT, 16, 1);
  /** {@code uint32}: (code, bits, lanes) = {@code (CODE_UINT, 32, 1)}. */
  public static final DType UINT32 = new DType(CODE_UINT, 32, 1);
  /** {@code uint64}: (code, bits, lanes) = {@code (CODE_UINT, 64, 1)}. */
  public static final DType UINT64 = new DType(CODE_UINT, 64, 1);
  /** {@code float16}: (code, bits, lanes) = {@code (CODE_FLOAT, 16, 1)}. */
  public static final DType FLOAT16 = new DType(CODE_FLOAT, 16, 1);
  /** {@code float32}: (code, bits, lanes) = {@code (CODE_FLOAT, 32, 1)}. */
  public static final DType FLOAT32 = new DType(CODE_FLOAT, 32, 1);
  /** {@code float64}: (code, bits, lanes) = {@code (CODE_FLOAT, 64, 1)}. */
  public static final DType FLOAT64 = new DType(CODE_FLOAT, 64, 1);
  /** {@code bfloat16}: (code, bits, lanes) = {@code (CODE_BFLOAT, 16, 1)}. */
  public static final DType BFLOAT16 = new DType(CODE_BFLOAT, 16, 1);
  /** {@code complex64}: (code, bits, lanes) = {@code (CODE_COMPLEX, 64, 1)}. */
  public static final DType COMPLEX64 = new DType(CODE_COMPLEX, 64, 1);
  /** {@code complex128}: (code, bits, lanes) = {@code (CODE_COMPLEX, 128, 1)}. */
  public static final DType COMPLEX128 = new DType(CODE_COMPLEX, 128, 1);
  /** {@code bool}: (code, bits, lanes) = {@code (CODE_BOOL, 8, 1)}. */
  public static final DType BOOL = new DType(CODE_BOOL, 8, 1);

  private final int code;
  private final int bits;
  private final int lanes;

  private DType(int code, int bits, int lanes) {
    this.code = code;
    this.bits = bits;
    this.lanes = lanes;
  }

  /**
   * Any (code, bits, lanes); validity is checked by the core when the type is used.
   *
   * @param code a DLPack type code, such as {@link #CODE_FLOAT} (0 to 255)
   * @param bits the bits of one lane (0 to 255)
   * @param lanes the number of lanes (0 to 65535)
   * @return the dtype
   * @throws IllegalArgumentException when a value does not fit DLDataType's field
   */
  public static DType of(int code, int bits, int lanes) {
    if (code < 0 || code > 0xff || bits < 0 || bits > 0xff || lanes < 0 || lanes > 0xffff) {
      throw new IllegalArgumentException(
          "dtype (" + code + ", " + bits + ", " + lanes + ") does not fit DLDataType");
    }
    return new DType(code, bits, lanes);
  }

  /**
   * Parses a dtype name the core knows: "float32", "int4", "float8_e4m3fn", "bool",
   * "float32x4", ... Throws {@link DLPackException} with the core's message otherwise.
   *
   * @param name the dtype's name
   * @return the dtype
   */
  public static DType parse(String name) {
    int[] out = new int[1];
    DLBridgeNative.dlb_dtype_parse(name, out);
    return fromPacked(out[0]);
  }

  static DType fromPacked(int packed) {
    return new DType(packed & 0xff, (packed >>> 8) & 0xff, (packed >>> 16) & 0xffff);
  }

  int packed() {
    return code | (bits << 8) | (lanes << 16);
  }

  /**
   * The DLPack type code.
   *
   * @return one of the {@code CODE_*} constants, or a code this class does not name
   */
  public int code() {
    return code;
  }

  /**
   * The bits of one lane.
   *
   * @return the width in bits
   */
  public int bits() {
    return bits;
  }

  /**
   * The number of lanes (1 for a scalar type, more for a vector type).
   *
   * @return the lanes
   */
  public int lanes() {
    return lanes;
  }

  /**
   * Whether the core accepts this dtype (dlb_dtype_validate).
   *
   * @return true for a known code with a legal width and at least one lane
   */
  public boolean isValid() {
    try {
      DLBridgeNative.dlb_dtype_validate(packed());
      return true;
    } catch (DLPackException e) {
      return false;
    }
  }

  /**
   * Bytes one element takes on its own: ceil(bits * lanes / 8).
   *
   * @return the element size in bytes
   */
  public long elementSize() {
    return DLBridgeNative.dlb_dtype_element_size(packed());
  }

  /**
   * Equal when code, bits and lanes are equal.
   *
   * @param o the object compared
   * @return true for a DType of the same value
   */
  @Override
  public boolean equals(Object o) {
    if (!(o instanceof DType)) {
      return false;
    }
    DType d = (DType) o;
    return d.code == code && d.bits == bits && d.lanes == lanes;
  }

  /**
   * A hash of code, bits and lanes.
   *
   * @return the hash code
   */
  @Override
  public int hashCode() {
    return packed();
  }

  /**
   * The core's name ("float32", "float8_e4m3fn", "int32x4"), the inverse of {@link #parse};
   * "dtype(code=C, bits=B, lanes=L)" for a value the core does not know.
   *
   * @return the name
   */
  @Override
  public String toString() {
    if (isValid()) {
      byte[] text = new byte[DLBridgeNativeConstants.DLB_DTYPE_NAME_SIZE];
      DLBridgeNative.dlb_dtype_format(packed(), text);
      return cString(text);
    }
    return "dtype(code=" + code + ", bits=" + bits + ", lanes=" + lanes + ")";
  }

  /** The NUL-terminated ASCII text the core wrote into {@code text}. */
  static String cString(byte[] text) {
    int n = 0;
    while (n < text.length && text[n] != 0) {
      n++;
    }
    return new String(text, 0, n, StandardCharsets.UTF_8);
  }
}
