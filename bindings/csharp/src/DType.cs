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

    public DType(int code, int bits, int lanes = 1) {
      Packed = (code & 0xff) | ((bits & 0xff) << 8) | ((lanes & 0xffff) << 16);
    }

    public int Code { get { return Packed & 0xff; } }
    public int Bits { get { return (Packed >> 8) & 0xff; } }
    public int Lanes { get { return (Packed >> 16) & 0xffff; } }

    // Every DLPack dtype code of the header (DLDataTypeCode), as constants: SWIG copies the values
    // from dlpack.h into the generated module. A code not listed here is still a DType.
    public const int CodeInt = (int)DLBridgeNative.kDLInt;
    public const int CodeUInt = (int)DLBridgeNative.kDLUInt;
    public const int CodeFloat = (int)DLBridgeNative.kDLFloat;
    public const int CodeOpaqueHandle = (int)DLBridgeNative.kDLOpaqueHandle;
    public const int CodeBfloat = (int)DLBridgeNative.kDLBfloat;
    public const int CodeComplex = (int)DLBridgeNative.kDLComplex;
    public const int CodeBool = (int)DLBridgeNative.kDLBool;
    public const int CodeFloat8E3M4 = (int)DLBridgeNative.kDLFloat8_e3m4;
    public const int CodeFloat8E4M3 = (int)DLBridgeNative.kDLFloat8_e4m3;
    public const int CodeFloat8E4M3B11Fnuz = (int)DLBridgeNative.kDLFloat8_e4m3b11fnuz;
    public const int CodeFloat8E4M3Fn = (int)DLBridgeNative.kDLFloat8_e4m3fn;
    public const int CodeFloat8E4M3Fnuz = (int)DLBridgeNative.kDLFloat8_e4m3fnuz;
    public const int CodeFloat8E5M2 = (int)DLBridgeNative.kDLFloat8_e5m2;
    public const int CodeFloat8E5M2Fnuz = (int)DLBridgeNative.kDLFloat8_e5m2fnuz;
    public const int CodeFloat8E8M0Fnu = (int)DLBridgeNative.kDLFloat8_e8m0fnu;
    public const int CodeFloat6E2M3Fn = (int)DLBridgeNative.kDLFloat6_e2m3fn;
    public const int CodeFloat6E3M2Fn = (int)DLBridgeNative.kDLFloat6_e3m2fn;
    public const int CodeFloat4E2M1Fn = (int)DLBridgeNative.kDLFloat4_e2m1fn;
    public const int CodeBcomplex = (int)DLBridgeNative.kDLBcomplex;

    public static readonly DType Int8 = new DType(CodeInt, 8);
    public static readonly DType Int16 = new DType(CodeInt, 16);
    public static readonly DType Int32 = new DType(CodeInt, 32);
    public static readonly DType Int64 = new DType(CodeInt, 64);
    public static readonly DType UInt8 = new DType(CodeUInt, 8);
    public static readonly DType UInt16 = new DType(CodeUInt, 16);
    public static readonly DType UInt32 = new DType(CodeUInt, 32);
    public static readonly DType UInt64 = new DType(CodeUInt, 64);
    public static readonly DType Float16 = new DType(CodeFloat, 16);
    public static readonly DType Float32 = new DType(CodeFloat, 32);
    public static readonly DType Float64 = new DType(CodeFloat, 64);
    public static readonly DType BFloat16 = new DType(CodeBfloat, 16);
    public static readonly DType Bool = new DType(CodeBool, 8);
    public static readonly DType Complex64 = new DType(CodeComplex, 64);
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

    public bool Equals(DType other) { return Packed == other.Packed; }
    public override bool Equals(object obj) { return obj is DType && Equals((DType)obj); }
    public override int GetHashCode() { return Packed; }
    public static bool operator ==(DType a, DType b) { return a.Packed == b.Packed; }
    public static bool operator !=(DType a, DType b) { return a.Packed != b.Packed; }
  }
}
