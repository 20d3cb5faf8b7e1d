/* ctest.h - a foreign DLPack producer and consumer with no dlbridge inside (the C side of the
 * Go tests), and the C column of the Go benchmark (loops over the dlbridge C API). Test-only:
 * package internal/ctest is imported by the tests and benchmarks of package dlbridge. */
#ifndef DLBRIDGE_GO_CTEST_H_
#define DLBRIDGE_GO_CTEST_H_
#include <stdint.h>
#include "dlpack/dlpack.h"

/* How many times the deleters of tensors made here have run (process-wide, atomic). */
int64_t ctest_deleter_calls(void);

/* A 1-D float32 CPU tensor of n elements 0, 1, ..., n-1, stamped with the given version; its
 * deleter frees everything and counts one call. */
DLManagedTensorVersioned* ctest_make_versioned(int64_t n, uint32_t major, uint32_t minor, uint64_t flags);
/* The same as a legacy DLManagedTensor. */
DLManagedTensor* ctest_make_legacy(int64_t n);

/* A versioned tensor with arbitrary fields (for the fuzz target): data points into a zeroed
 * buffer of `buffer_bytes` bytes (NULL when has_data is 0); shape/strides are copied (strides
 * NULL when has_strides is 0). The deleter frees everything and counts one call. */
DLManagedTensorVersioned* ctest_make_raw(uint32_t major, uint32_t minor, int32_t device_type,
                                         int32_t device_id, int32_t ndim, const int64_t* shape,
                                         int has_strides, const int64_t* strides, uint8_t code,
                                         uint8_t bits, uint16_t lanes, uint64_t byte_offset,
                                         uint64_t flags, int has_data, uint64_t buffer_bytes);

/* A consumer: on a new thread, sums the float32 elements of a compact 1-D CPU tensor and calls
 * its deleter; returns the sum after joining (-1 when the thread could not start: the deleter
 * then runs here). */
double ctest_consume_versioned_on_thread(DLManagedTensorVersioned* tensor);
double ctest_consume_legacy_on_thread(DLManagedTensor* tensor);

/* C memory for wrap tests. */
void* ctest_malloc(uint64_t bytes);
void ctest_free(void* p);

/* Benchmark loops through the dlbridge C API: nanoseconds per cycle over `iterations`. */
double ctest_bench_allocate_free(int64_t iterations);
double ctest_bench_wrap_free(int64_t iterations);
double ctest_bench_export_import_versioned(int64_t iterations);
double ctest_bench_export_import_legacy(int64_t iterations);
/* An empty function: one bare cgo call. */
void ctest_empty(void);
#endif
