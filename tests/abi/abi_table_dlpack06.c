/*
 * abi_table_dlpack06.c - the comparison table as seen through Debian's DLPack 0.6 header.
 *
 * This file must never see dlbridge's core/include: meson gives it no dlbridge include
 * directory, and the header is named by its absolute path (DLB_ABI_DLPACK06_HEADER, set by
 * tests/abi/meson.build to /usr/include/dlpack/dlpack.h).
 */
#ifndef DLB_ABI_DLPACK06_HEADER
#error "DLB_ABI_DLPACK06_HEADER must name the DLPack 0.6 header"
#endif

#include DLB_ABI_DLPACK06_HEADER

/* Make sure the system header is what got included, not dlbridge's own 1.x header. */
#ifndef DLPACK_VERSION
#error "the included dlpack.h defines no DLPACK_VERSION: it is not the DLPack 0.x header"
#endif
#ifdef DLPACK_MAJOR_VERSION
#error "the included dlpack.h is a DLPack 1.x header, not the system's 0.6 one"
#endif

const long long abi_dlpack06_version = DLPACK_VERSION;

#define ABI_TABLE_FUNCTION abi_table_dlpack06
#include "abi_table_impl.h"
