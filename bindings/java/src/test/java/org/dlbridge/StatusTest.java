package org.dlbridge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Status: compile-time constants a switch can use, one for every status the core names. */
class StatusTest extends LeakChecked {
  /** Compiles only because the constants are constant expressions. */
  private static String react(DLPackException e) {
    switch (e.getStatus()) {
      case Status.READ_ONLY:
        return "read-only";
      case Status.CLOSED:
        return "closed";
      case Status.INVALID_ARGUMENT:
        return "invalid";
      default:
        return "other";
    }
  }

  @Test
  void aSwitchTellsTheStatusesApart() {
    Tensor t = Tensor.fromArray(new float[] {1, 2}, 2);
    try (Tensor ro = t.shareReadOnly()) {
      assertEquals("read-only", react(assertThrowsDLPack(() -> ro.copyFrom(new float[2]))));
      assertEquals("invalid", react(assertThrowsDLPack(() -> t.copyFrom(new int[2]))));
    }
    t.close();
    assertEquals("closed", react(assertThrowsDLPack(t::shape)));
    // The same values through Java 17's switch expression.
    int kind = switch (assertThrowsDLPack(t::shape).getStatus()) {
      case Status.CLOSED -> 1;
      case Status.OK -> 0;
      default -> -1;
    };
    assertEquals(1, kind);
  }

  /**
   * Every status the loaded core names (dlb_status_name of 0..255) has a constant, named as the
   * core names it without its DLB_ / DLB_ERR_ prefix, and no constant is left over.
   */
  @Test
  void everyStatusOfTheCoreHasItsConstant() throws IllegalAccessException {
    List<String> named = new ArrayList<>();
    for (int v = 0; v < 256; v++) {
      String name = Status.name(v);
      if (!name.equals("DLB_ERR_UNKNOWN")) {
        named.add(name);
        String field = name.startsWith("DLB_ERR_") ? name.substring(8) : name.substring(4);
        Field f = null;
        try {
          f = Status.class.getField(field);
        } catch (NoSuchFieldException e) {
          // reported below
        }
        assertNotNull(f, "no Status." + field + " for " + name + " (" + v + ")");
        assertTrue(Modifier.isFinal(f.getModifiers()) && Modifier.isStatic(f.getModifiers()));
        assertEquals(v, f.getInt(null), field);
      }
    }
    int constants = 0;
    for (Field f : Status.class.getFields()) {
      if (f.getType() == int.class) {
        constants++;
      }
    }
    assertEquals(named.size(), constants, named.toString());
    assertEquals(17, constants); // OK .. LIMIT, as dlbridge.h defines them today
    assertEquals("DLB_ERR_CLOSED", Status.name(Status.CLOSED));
    assertEquals("DLB_ERR_NO_LISTENER DLB_ERR_PERMISSION DLB_ERR_PEER_CLOSED DLB_ERR_PROTOCOL "
        + "DLB_ERR_TIMEOUT DLB_ERR_LIMIT", String.join(" ", Status.name(Status.NO_LISTENER),
            Status.name(Status.PERMISSION), Status.name(Status.PEER_CLOSED),
            Status.name(Status.PROTOCOL), Status.name(Status.TIMEOUT), Status.name(Status.LIMIT)));
    assertEquals("DLB_ERR_UNKNOWN", Status.name(99));
  }

  private static DLPackException assertThrowsDLPack(
      org.junit.jupiter.api.function.Executable call) {
    return org.junit.jupiter.api.Assertions.assertThrows(DLPackException.class, call);
  }
}
