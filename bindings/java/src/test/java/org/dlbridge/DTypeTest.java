package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** DType names, parsing and sizes come from the core, for every DLPack dtype code. */
class DTypeTest {
  @Test
  void everyCodeHasTheCoreName() {
    String[][] cases = {
      {"int8", "0"}, {"uint16", "1"}, {"float32", "2"}, {"handle64", "3"}, {"bfloat16", "4"},
      {"complex64", "5"}, {"bool", "6"}, {"float8_e3m4", "7"}, {"float8_e4m3", "8"},
      {"float8_e4m3b11fnuz", "9"}, {"float8_e4m3fn", "10"}, {"float8_e4m3fnuz", "11"},
      {"float8_e5m2", "12"}, {"float8_e5m2fnuz", "13"}, {"float8_e8m0fnu", "14"},
      {"float6_e2m3fn", "15"}, {"float6_e3m2fn", "16"}, {"float4_e2m1fn", "17"},
      {"bcomplex32", "18"},
    };
    for (String[] c : cases) {
      DType d = DType.parse(c[0]);
      assertEquals(Integer.parseInt(c[1]), d.code(), c[0]);
      assertEquals(c[0], d.toString());
      assertTrue(d.isValid());
    }
    assertEquals(19, cases.length);
    assertEquals(DType.CODE_BCOMPLEX, DType.parse("bcomplex32").code());
    assertEquals(DType.CODE_FLOAT4_E2M1FN, DType.parse("float4_e2m1fn").code());
  }

  @Test
  void vectorsSubByteAndSizes() {
    DType v = DType.parse("float32x4");
    assertEquals(4, v.lanes());
    assertEquals("float32x4", v.toString());
    assertEquals(16, v.elementSize());
    assertEquals(1, DType.parse("int4").elementSize());
    assertEquals(DType.FLOAT32, DType.parse("float32"));
  }

  @Test
  void unknownCodesArePreservedAndNamedPlainly() {
    DType odd = DType.of(200, 8, 1);
    assertFalse(odd.isValid());
    assertEquals("dtype(code=200, bits=8, lanes=1)", odd.toString());
    assertEquals(200, odd.code());
    DLPackException e = assertThrows(DLPackException.class, () -> DType.parse("float7"));
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    assertEquals("DLB_ERR_INVALID_ARGUMENT", e.getStatusName());
  }
}
