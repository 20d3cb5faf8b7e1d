package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every DLPack device type and dtype code the core knows has an int constant (Device.TYPE_*,
 * DType.CODE_*), and codes no constant names still round-trip.
 */
class VocabularyTest {
  /** The values of the public static int fields of {@code cls} whose names start with prefix. */
  private static Map<Integer, String> constants(Class<?> cls, String prefix)
      throws IllegalAccessException {
    Map<Integer, String> out = new HashMap<>();
    for (Field f : cls.getFields()) {
      if (f.getType() == int.class && f.getName().startsWith(prefix)) {
        out.put(f.getInt(null), f.getName());
      }
    }
    return out;
  }

  @Test
  void everyDeviceTypeHasAConstant() throws IllegalAccessException {
    Map<Integer, String> types = constants(Device.class, "TYPE_");
    int named = 0;
    for (int v = 0; v < 256; v++) {
      String name = DLBridgeNative.dlb_device_type_name(v);
      if (name != null) {
        named++;
        assertTrue(types.containsKey(v), "no Device.TYPE_ constant for " + name + " (" + v + ")");
      }
    }
    assertEquals(named, types.size());
    assertEquals(18, named); // CPU .. TPUHost, as dlpack.h defines them today
    assertEquals(Device.of(77, 2), Device.parse("device_type_77:2"));
  }

  @Test
  void everyDtypeCodeHasAConstant() throws IllegalAccessException {
    Map<Integer, String> codes = constants(DType.class, "CODE_");
    int named = 0;
    for (int c = 0; c < 256; c++) {
      String name = DLBridgeNative.dlb_dtype_code_name(c);
      if (name != null) {
        named++;
        assertTrue(codes.containsKey(c), "no DType.CODE_ constant for " + name + " (" + c + ")");
      }
    }
    assertEquals(named, codes.size());
    assertEquals(19, named); // int .. bcomplex
    assertEquals(250, DType.of(250, 8, 1).code());
  }
}
