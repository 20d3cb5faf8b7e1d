/*
 * abi_table.h - the record type shared by the two halves of the DLPack 0.6 comparison.
 *
 * The two dlpack.h headers (Debian's DLPack 0.6 one and dlbridge's own) use the same include
 * guard, so they cannot meet in one translation unit. Each half is compiled on its own and
 * fills a table of named integers (enum values, sizes, offsets, field widths, signedness);
 * abi_compare.c then matches the two tables name by name.
 */
#ifndef DLB_TESTS_ABI_TABLE_H_
#define DLB_TESTS_ABI_TABLE_H_

#include <stddef.h>

typedef struct abi_entry {
  const char* name;
  long long value;
} abi_entry;

/* Both fill `out` with up to `cap` entries and return how many entries exist (which may be
 * more than cap: the caller then retries with a larger array). */
size_t abi_table_dlpack06(abi_entry* out, size_t cap);
size_t abi_table_dlbridge(abi_entry* out, size_t cap);

/* The DLPACK_VERSION macro of the 0.6 header (60 for Debian 12's libdlpack-dev). */
extern const long long abi_dlpack06_version;

#endif /* DLB_TESTS_ABI_TABLE_H_ */
