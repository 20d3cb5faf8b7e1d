/* ctest.h - the C side of the Go tests that the shared foreign producer (tests/foreign, compiled
 * into this package by foreign.c) does not cover: a versioned tensor with arbitrary fields for the
 * fuzz target, and the C column of the Go benchmark (the same cycles as loops over the dlbridge C
 * API) with the empty function that is one bare cgo call. Test-only: package internal/ctest is
 * imported by the tests and benchmarks of package dlbridge. Also compiled by Meson, with -Werror,
 * into bindings/go/tests/test_go_native (the sanitizer and valgrind passes). */
#ifndef DLBRIDGE_GO_CTEST_H_
#define DLBRIDGE_GO_CTEST_H_
#include <stdint.h>
#include "dlpack/dlpack.h"

/* How many times the deleters of tensors made by ctest_make_raw have run (atomic). */
int64_t ctest_raw_deleter_calls(void);

/* A versioned tensor with arbitrary fields (for the fuzz target): data points into a zeroed
 * buffer of `buffer_bytes` bytes (NULL when has_data is 0); shape/strides are copied (strides
 * NULL when has_strides is 0). The deleter frees everything and counts one call. */
DLManagedTensorVersioned* ctest_make_raw(uint32_t major, uint32_t minor, int32_t device_type,
                                         int32_t device_id, int32_t ndim, const int64_t* shape,
                                         int has_strides, const int64_t* strides, uint8_t code,
                                         uint8_t bits, uint16_t lanes, uint64_t byte_offset,
                                         uint64_t flags, int has_data, uint64_t buffer_bytes);

/* Benchmark loops through the dlbridge C API, the cycles of bindings/go/bench_test.go:
 * nanoseconds per cycle over `iterations`, or -1 when a call failed. */
double ctest_bench_allocate_free(int64_t iterations);
/* dlb_tensor_wrap_buffer of a 4x4 float32 buffer without a release function, then free. */
double ctest_bench_wrap_free(int64_t iterations);
/* The same with a release function (it counts its calls), as a wrap of a Go program's memory. */
double ctest_bench_wrap_release_free(int64_t iterations);
double ctest_bench_export_import_versioned(int64_t iterations);
double ctest_bench_export_import_legacy(int64_t iterations);
/* How many times the release function of ctest_bench_wrap_release_free has run. */
int64_t ctest_bench_releases(void);
/* An empty function: one bare cgo call. */
void ctest_empty(void);
#endif
