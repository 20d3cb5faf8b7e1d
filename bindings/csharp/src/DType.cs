using System;
using System.Text;

namespace DLBridge {
  /// <summary>A DLPack data type: code, bits and lanes over the integer codes (never a closed
  /// enum: a newer producer may send a code this version has no name for). Names, sizes and
  /// validity come from the core.</summary>
  public readonly struct DType : IEquatable<DType> {
    /// <summary>code | bits &lt;&lt; 8 | lanes &lt;&lt; 16, as the native layer passes it.</summary>
    internal readonly int Packed;

    internal DType(int packed) {
      Packed = packed;
    }

    /// <summary>A dtype from DLPack's <paramref name="code"/> (a <c>Code*</c> constant or any other), <paramref name="bits"/> per lane and <paramref name="lanes"/>; not checked here (see <see cref="Validate"/>).</summary>
    public DType(int code, int bits, int lanes = 1) {
      Packed = (code & 0xff) | ((bits & 0xff) << 8) | ((lanes & 0xffff) << 16);
    }

    /// <summary>DLPack's type code (DLDataTypeCode: <see cref="CodeFloat"/>, ...), 0 to 255.</summary>
    public int Code { get { return Packed & 0xff; } }
    /// <summary>Bits of one lane, 0 to 255.</summary>
    public int Bits { get { return (Packed >> 8) & 0xff; } }
    /// <summary>Lanes of a vector type (1 for scalars), 0 to 65535.</summary>
    public int Lanes { get { return (Packed >> 16) & 0xffff; } }

    // Every DLPack dtype code of the header (DLDataTypeCode), as constants: SWIG copies the values
    // from dlpack.h into the generated module. A code not listed here is still a DType.
    /// <summary>kDLInt: signed integers.</summary>
    public const int CodeInt = (int)DLBridgeNative.kDLInt;
    /// <summary>kDLUInt: unsigned integers.</summary>
    public const int CodeUInt = (int)DLBridgeNative.kDLUInt;
    /// <summary>kDLFloat: IEEE floating point.</summary>
    public const int CodeFloat = (int)DLBridgeNative.kDLFloat;
    /// <summary>kDLOpaqueHandle: an opaque handle the producer defines.</summary>
    public const int CodeOpaqueHandle = (int)DLBridgeNative.kDLOpaqueHandle;
    /// <summary>kDLBfloat: bfloat16.</summary>
    public const int CodeBfloat = (int)DLBridgeNative.kDLBfloat;
    /// <summary>kDLComplex: complex numbers (bits counts both parts).</summary>
    public const int CodeComplex = (int)DLBridgeNative.kDLComplex;
    /// <summary>kDLBool: booleans.</summary>
    public const int CodeBool = (int)DLBridgeNative.kDLBool;
    /// <summary>kDLFloat8_e3m4: 8-bit float, 3 exponent and 4 mantissa bits.</summary>
    public const int CodeFloat8E3M4 = (int)DLBridgeNative.kDLFloat8_e3m4;
    /// <summary>kDLFloat8_e4m3: 8-bit float, 4 exponent and 3 mantissa bits.</summary>
    public const int CodeFloat8E4M3 = (int)DLBridgeNative.kDLFloat8_e4m3;
    /// <summary>kDLFloat8_e4m3b11fnuz: 8-bit float e4m3, exponent bias 11, finite, unsigned zero.</summary>
    public const int CodeFloat8E4M3B11Fnuz = (int)DLBridgeNative.kDLFloat8_e4m3b11fnuz;
    /// <summary>kDLFloat8_e4m3fn: 8-bit float e4m3, finite (no infinities).</summary>
    public const int CodeFloat8E4M3Fn = (int)DLBridgeNative.kDLFloat8_e4m3fn;
    /// <summary>kDLFloat8_e4m3fnuz: 8-bit float e4m3, finite, unsigned zero.</summary>
    public const int CodeFloat8E4M3Fnuz = (int)DLBridgeNative.kDLFloat8_e4m3fnuz;
    /// <summary>kDLFloat8_e5m2: 8-bit float, 5 exponent and 2 mantissa bits.</summary>
    public const int CodeFloat8E5M2 = (int)DLBridgeNative.kDLFloat8_e5m2;
    /// <summary>kDLFloat8_e5m2fnuz: 8-bit float e5m2, finite, unsigned zero.</summary>
    public const int CodeFloat8E5M2Fnuz = (int)DLBridgeNative.kDLFloat8_e5m2fnuz;
    /// <summary>kDLFloat8_e8m0fnu: 8-bit exponent-only scale, finite, no sign.</summary>
    public const int CodeFloat8E8M0Fnu = (int)DLBridgeNative.kDLFloat8_e8m0fnu;
    /// <summary>kDLFloat6_e2m3fn: 6-bit float, 2 exponent and 3 mantissa bits (a sub-byte type).</summary>
    public const int CodeFloat6E2M3Fn = (int)DLBridgeNative.kDLFloat6_e2m3fn;
    /// <summary>kDLFloat6_e3m2fn: 6-bit float, 3 exponent and 2 mantissa bits (a sub-byte type).</summary>
    public const int CodeFloat6E3M2Fn = (int)DLBridgeNative.kDLFloat6_e3m2fn;
    /// <summary>kDLFloat4_e2m1fn: 4-bit float, 2 exponent and 1 mantissa bit (a sub-byte type).</summary>
    public const int CodeFloat4E2M1Fn = (int)DLBridgeNative.kDLFloat4_e2m1fn;
    /// <summary>kDLBcomplex: complex numbers of two bfloat16 parts.</summary>
    public const int CodeBcomplex = (int)DLBridgeNative.kDLBcomplex;

    /// <summary>int8 (sbyte).</summary>
    public static readonly DType Int8 = new DType(CodeInt, 8);
    /// <summary>int16 (short).</summary>
    public static readonly DType Int16 = new DType(CodeInt, 16);
    /// <summary>int32 (int).</summary>
    public static readonly DType Int32 = new DType(CodeInt, 32);
    /// <summary>int64 (long).</summary>
    public static readonly DType Int64 = new DType(CodeInt, 64);
    /// <summary>uint8 (byte).</summary>
    public static readonly DType UInt8 = new DType(CodeUInt, 8);
    /// <summary>uint16 (ushort).</summary>
    public static readonly DType UInt16 = new DType(CodeUInt, 16);
    /// <summary>uint32 (uint).</summary>
    public static readonly DType UInt32 = new DType(CodeUInt, 32);
    /// <summary>uint64 (ulong).</summary>
    public static readonly DType UInt64 = new DType(CodeUInt, 64);
    /// <summary>float16 (IEEE half; no C# array type maps to it).</summary>
    public static readonly DType Float16 = new DType(CodeFloat, 16);
    /// <summary>float32 (float).</summary>
    public static readonly DType Float32 = new DType(CodeFloat, 32);
    /// <summary>float64 (double).</summary>
    public static readonly DType Float64 = new DType(CodeFloat, 64);
    /// <summary>bfloat16.</summary>
    public static readonly DType BFloat16 = new DType(CodeBfloat, 16);
    /// <summary>bool, one byte per element (bool).</summary>
    public static readonly DType Bool = new DType(CodeBool, 8);
    /// <summary>complex64: two float32 parts.</summary>
    public static readonly DType Complex64 = new DType(CodeComplex, 64);
    /// <summary>complex128: two float64 parts.</summary>
    public static readonly DType Complex128 = new DType(CodeComplex, 128);

    /// <summary>Parses a name the core knows ("float32", "int4", "float32x4"); throws
    /// <see cref="DLPackArgumentException"/> with the core's message otherwise.</summary>
    public static DType Parse(string name) {
      int[] outValue = new int[1];
      DLBridgeNative.dlb_dtype_parse(name, outValue);
      return new DType(outValue[0]);
    }

    /// <summary>Throws the core's refusal (<see cref="IDLPackError"/>) unless it accepts this
    /// dtype.</summary>
    public void Validate() {
      DLBridgeNative.dlb_dtype_validate(Packed);
    }

    /// <summary>True when the core accepts this dtype (<see cref="Validate"/> would not throw).</summary>
    public bool IsValid {
      get {
        try {
          Validate();
          return true;
        } catch (Exception e) when (e is IDLPackError) {
          return false;
        }
      }
    }

    /// <summary>Bytes one element takes on its own (ceil(bits * lanes / 8)).</summary>
    public long ElementSize { get { return (long)DLBridgeNative.dlb_dtype_element_size(Packed); } }

    /// <summary>Bits of one element (bits * lanes).</summary>
    public int ElementBits { get { return (int)DLBridgeNative.dlb_dtype_element_bits(Packed); } }

    /// <summary>True for elements narrower than a byte (int4, float4_e2m1fn, ...), which DLPack packs unless a tensor is flagged IS_SUBBYTE_TYPE_PADDED.</summary>
    public bool IsSubByte { get { return DLBridgeNative.dlb_dtype_is_subbyte(Packed) != 0; } }

    /// <summary>The core's name ("float32"); throws for an invalid dtype.</summary>
    public string Name {
      get {
        byte[] buffer = new byte[DLBridgeNative.DLB_DTYPE_NAME_SIZE];
        DLBridgeNative.dlb_dtype_format(Packed, buffer);
        return Text(buffer);
      }
    }

    /// <summary>The core's name, or "dtype(code=C, bits=B, lanes=L)" for one it refuses.</summary>
    public override string ToString() {
      return IsValid ? Name : "dtype(code=" + Code + ", bits=" + Bits + ", lanes=" + Lanes + ")";
    }

    internal static string Text(byte[] buffer) {
      int n = Array.IndexOf(buffer, (byte)0);
      return Encoding.UTF8.GetString(buffer, 0, n < 0 ? buffer.Length : n);
    }

    /// <summary>True when code, bits and lanes are all equal.</summary>
    public bool Equals(DType other) { return Packed == other.Packed; }
    /// <summary>True when <paramref name="obj"/> is an equal DType.</summary>
    public override bool Equals(object obj) { return obj is DType && Equals((DType)obj); }
    /// <summary>A hash of code, bits and lanes.</summary>
    public override int GetHashCode() { return Packed; }
    /// <summary>True when code, bits and lanes are all equal.</summary>
    public static bool operator ==(DType a, DType b) { return a.Packed == b.Packed; }
    /// <summary>True when code, bits or lanes differ.</summary>
    public static bool operator !=(DType a, DType b) { return a.Packed != b.Packed; }
  }
}
