/*
 * abi_table_impl.h - the body shared by abi_table_dlpack06.c and abi_table_dlbridge.c.
 *
 * Include it after a dlpack.h, with ABI_TABLE_FUNCTION defined to the function's name. It
 * expands abi_entries.inc into code that fills the table.
 */
#include <string.h>

#include "abi_table.h"

size_t ABI_TABLE_FUNCTION(abi_entry* out, size_t cap) {
  size_t n = 0;

#define ABI_PUT(entry_name, entry_value)       \
  do {                                         \
    if (n < cap) {                             \
      out[n].name = (entry_name);              \
      out[n].value = (long long)(entry_value); \
    }                                          \
    n++;                                       \
  } while (0)

/* Signedness of a member: store 0, subtract 1, and see whether it wrapped to a positive value.
 * (Comparing an unsigned value with "< 0" would trip -Wtype-limits.) */
#define ABI_MEMBER_IS_SIGNED(type, member, result) \
  do {                                             \
    type probe_;                                   \
    memset(&probe_, 0, sizeof probe_);             \
    probe_.member -= 1;                            \
    (result) = probe_.member > 0 ? 0 : 1;          \
  } while (0)

#define ABI_VALUE(constant) ABI_PUT(#constant, constant);
#define ABI_SIZE(type) ABI_PUT("sizeof(" #type ")", sizeof(type));
#define ABI_ENUM_SIGNED(type) ABI_PUT("is_signed(" #type ")", ((type)-1 > (type)0) ? 0 : 1);
#define ABI_FIELD(type, member)                                        \
  ABI_PUT("offsetof(" #type ", " #member ")", offsetof(type, member)); \
  ABI_PUT("sizeof(" #type "." #member ")", sizeof(((type*)0)->member));
#define ABI_INT_FIELD(type, member)                          \
  ABI_FIELD(type, member) {                                  \
    int is_signed_;                                          \
    ABI_MEMBER_IS_SIGNED(type, member, is_signed_);          \
    ABI_PUT("is_signed(" #type "." #member ")", is_signed_); \
  }

#include "abi_entries.inc"

#undef ABI_VALUE
#undef ABI_SIZE
#undef ABI_ENUM_SIGNED
#undef ABI_FIELD
#undef ABI_INT_FIELD
#undef ABI_MEMBER_IS_SIGNED
#undef ABI_PUT

  return n;
}
