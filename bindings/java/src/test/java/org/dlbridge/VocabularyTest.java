package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every DLPack device type and dtype code the core knows has an int constant (Device.TYPE_*,
 * DType.CODE_*), and codes no constant names still round-trip; the tensor rows of
 * docs/architecture.md's vocabulary table name Tensor's methods.
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

  /**
   * The tensor rows of docs/architecture.md's vocabulary table, one name per concept in every
   * language (the Go and C# vocabulary tests read the same rows).
   */
  private static final String[] TENSOR_ROWS = {
    "a tensor's element count",
    "read-only (the READ_ONLY flag)",
    "C-contiguous (row-major, no gaps)",
    "F-contiguous (column-major, no gaps)",
    "host-readable (the CPU can read the memory in place)",
    "the only holder of its memory (no live view or share)",
    "a read-only share of the same memory",
    "a copy queued on a stream",
  };

  /** The cells of one language's column of the "One vocabulary" table, keyed by concept. */
  private static Map<String, String> vocabularyColumn(String language) throws IOException {
    String page = new String(Files.readAllBytes(Paths.get(
        System.getProperty("dlbridge.test.architecture"))), StandardCharsets.UTF_8);
    int start = page.indexOf("## One vocabulary");
    assertTrue(start >= 0, "docs/architecture.md has no section \"One vocabulary\"");
    String section = page.substring(start + 1);
    int end = section.indexOf("\n## ");
    if (end >= 0) {
      section = section.substring(0, end);
    }
    int column = -1;
    Map<String, String> cells = new HashMap<>();
    for (String line : section.split("\n")) {
      if (!line.startsWith("|") || line.startsWith("|---")) {
        continue;
      }
      String[] row = line.substring(1, line.lastIndexOf('|')).split("\\|", -1);
      for (int i = 0; i < row.length; i++) {
        row[i] = row[i].trim();
      }
      if (column < 0) {
        for (int i = 0; i < row.length; i++) {
          if (row[i].equals(language)) {
            column = i;
          }
        }
        assertTrue(column >= 0, "the vocabulary table has no " + language + " column: " + line);
      } else if (column < row.length) {
        cells.put(row[0], row[column]);
      }
    }
    return cells;
  }

  @Test
  void tensorVocabularyIsTheTables() throws IOException {
    Map<String, String> cells = vocabularyColumn("Java");
    Set<String> methods = new HashSet<>();
    for (Method m : Tensor.class.getMethods()) {
      if (!Modifier.isStatic(m.getModifiers())) {
        methods.add(m.getName());
      }
    }
    Pattern name = Pattern.compile("`([A-Za-z_][A-Za-z0-9_]*)");
    List<String> problems = new ArrayList<>();
    for (String concept : TENSOR_ROWS) {
      String cell = cells.get(concept);
      if (cell == null) {
        problems.add("no row \"" + concept + "\"");
        continue;
      }
      Matcher m = name.matcher(cell);
      int named = 0;
      while (m.find()) {
        named++;
        if (!methods.contains(m.group(1))) {
          problems.add("row \"" + concept + "\": Tensor has no method " + m.group(1));
        }
      }
      if (named == 0) {
        problems.add("row \"" + concept + "\" names nothing for Java: " + cell);
      }
    }
    assertEquals(new ArrayList<String>(), problems);
  }
}
