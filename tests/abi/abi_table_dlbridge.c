/*
 * abi_table_dlbridge.c - the comparison table as seen through dlbridge's own dlpack.h.
 */
#include <dlpack/dlpack.h>

#if !defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION != 1
#error "expected dlbridge's DLPack 1.x header (core/include/dlpack/dlpack.h)"
#endif

#define ABI_TABLE_FUNCTION abi_table_dlbridge
#include "abi_table_impl.h"
