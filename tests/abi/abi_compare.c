/*
 * abi_compare.c - fails unless dlbridge's dlpack.h keeps every enum value, size, offset, field
 * width and signedness that Debian's DLPack 0.6 header defines.
 *
 * Built with -DDLB_ABI_HAVE_DLPACK06=0 when the system header is absent: it then reports a
 * skip (exit status 77) instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_table.h"

#ifndef DLB_ABI_HAVE_DLPACK06
#define DLB_ABI_HAVE_DLPACK06 1
#endif

#if DLB_ABI_HAVE_DLPACK06

#define ABI_TABLE_CAP 256

static const abi_entry* find_entry(const abi_entry* table, size_t count, const char* name) {
  size_t i;
  for (i = 0; i < count; i++) {
    if (strcmp(table[i].name, name) == 0) {
      return &table[i];
    }
  }
  return NULL;
}

int main(void) {
  static abi_entry legacy[ABI_TABLE_CAP];
  static abi_entry ours[ABI_TABLE_CAP];
  size_t nlegacy = abi_table_dlpack06(legacy, ABI_TABLE_CAP);
  size_t nours = abi_table_dlbridge(ours, ABI_TABLE_CAP);
  size_t i;
  size_t mismatches = 0;

  if (nlegacy > ABI_TABLE_CAP || nours > ABI_TABLE_CAP) {
    fprintf(stderr, "abi table larger than %d entries: raise ABI_TABLE_CAP\n", ABI_TABLE_CAP);
    return 1;
  }
  if (nlegacy == 0 || nlegacy != nours) {
    fprintf(stderr, "table sizes differ or are empty: dlpack 0.6 %zu, dlbridge %zu\n", nlegacy,
            nours);
    return 1;
  }
  printf("comparing %zu entries against DLPACK_VERSION %lld (/usr/include/dlpack/dlpack.h)\n",
         nlegacy, abi_dlpack06_version);

  for (i = 0; i < nlegacy; i++) {
    const abi_entry* mine = find_entry(ours, nours, legacy[i].name);
    if (mine == NULL) {
      printf("MISMATCH %-44s dlpack 0.6 %lld, dlbridge: missing\n", legacy[i].name,
             legacy[i].value);
      mismatches++;
    } else if (mine->value != legacy[i].value) {
      printf("MISMATCH %-44s dlpack 0.6 %lld, dlbridge %lld\n", legacy[i].name, legacy[i].value,
             mine->value);
      mismatches++;
    } else {
      printf("ok       %-44s %lld\n", legacy[i].name, legacy[i].value);
    }
  }

  if (mismatches != 0) {
    printf("%zu of %zu entries differ from DLPack 0.6\n", mismatches, nlegacy);
    return 1;
  }
  printf("all %zu entries match DLPack 0.6\n", nlegacy);
  return 0;
}

#else /* !DLB_ABI_HAVE_DLPACK06 */

int main(void) {
  printf(
      "SKIP: /usr/include/dlpack/dlpack.h (Debian's libdlpack-dev, DLPack 0.6) is not "
      "installed\n");
  return 77;
}

#endif
