package org.dlbridge;

/**
 * A DLPack data type: a (code, bits, lanes) value. Not an enum: a newer producer may send a code
 * this class has no constant for, and such a value still round-trips.
 */
public final class DType {
  public static final int CODE_INT = 0;
  public static final int CODE_UINT = 1;
  public static final int CODE_FLOAT = 2;
  public static final int CODE_OPAQUE_HANDLE = 3;
  public static final int CODE_BFLOAT = 4;
  public static final int CODE_COMPLEX = 5;
  public static final int CODE_BOOL = 6;

  public static final DType INT8 = new DType(CODE_INT, 8, 1);
  public static final DType INT16 = new DType(CODE_INT, 16, 1);
  public static final DType INT32 = new DType(CODE_INT, 32, 1);
  public static final DType INT64 = new DType(CODE_INT, 64, 1);
  public static final DType UINT8 = new DType(CODE_UINT, 8, 1);
  public static final DType UINT16 = new DType(CODE_UINT, 16, 1);
  public static final DType UINT32 = new DType(CODE_UINT, 32, 1);
  public static final DType UINT64 = new DType(CODE_UINT, 64, 1);
  public static final DType FLOAT16 = new DType(CODE_FLOAT, 16, 1);
  public static final DType FLOAT32 = new DType(CODE_FLOAT, 32, 1);
  public static final DType FLOAT64 = new DType(CODE_FLOAT, 64, 1);
  public static final DType BFLOAT16 = new DType(CODE_BFLOAT, 16, 1);
  public static final DType COMPLEX64 = new DType(CODE_COMPLEX, 64, 1);
  public static final DType COMPLEX128 = new DType(CODE_COMPLEX, 128, 1);
  public static final DType BOOL = new DType(CODE_BOOL, 8, 1);

  private final int code;
  private final int bits;
  private final int lanes;

  private DType(int code, int bits, int lanes) {
    this.code = code;
    this.bits = bits;
    this.lanes = lanes;
  }

  /** Any (code, bits, lanes); validity is checked by the core when the type is used. */
  public static DType of(int code, int bits, int lanes) {
    if (code < 0 || code > 0xff || bits < 0 || bits > 0xff || lanes < 0 || lanes > 0xffff) {
      throw new IllegalArgumentException(
          "dtype (" + code + ", " + bits + ", " + lanes + ") does not fit DLDataType");
    }
    return new DType(code, bits, lanes);
  }

  static DType fromPacked(int packed) {
    return new DType(packed & 0xff, (packed >>> 8) & 0xff, (packed >>> 16) & 0xffff);
  }

  int packed() {
    return code | (bits << 8) | (lanes << 16);
  }

  public int code() {
    return code;
  }

  public int bits() {
    return bits;
  }

  public int lanes() {
    return lanes;
  }

  /** Bytes one element takes on its own: ceil(bits * lanes / 8). */
  public long elementSize() {
    return ((long) bits * lanes + 7) / 8;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof DType)) {
      return false;
    }
    DType d = (DType) o;
    return d.code == code && d.bits == bits && d.lanes == lanes;
  }

  @Override
  public int hashCode() {
    return packed();
  }

  @Override
  public String toString() {
    String base;
    switch (code) {
      case CODE_INT: base = "int"; break;
      case CODE_UINT: base = "uint"; break;
      case CODE_FLOAT: base = "float"; break;
      case CODE_OPAQUE_HANDLE: base = "handle"; break;
      case CODE_BFLOAT: base = "bfloat"; break;
      case CODE_COMPLEX: base = "complex"; break;
      case CODE_BOOL: return lanes == 1 && bits == 8 ? "bool" : "bool" + bits + "x" + lanes;
      default: base = "code" + code + "_"; break;
    }
    return base + bits + (lanes == 1 ? "" : "x" + lanes);
  }
}
