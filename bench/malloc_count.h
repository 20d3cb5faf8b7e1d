/*
 * malloc_count.h - counts the heap allocations the whole bench process makes (libdlbridge
 * included), so each benchmark row can report allocations per cycle.
 */
#ifndef DLBRIDGE_BENCH_MALLOC_COUNT_H_
#define DLBRIDGE_BENCH_MALLOC_COUNT_H_

/* 1 when this build interposes the malloc family; 0 when it cannot (not glibc, or a sanitizer
 * that brings its own allocator), in which case the counters stay at zero. */
int malloc_count_available(void);

/* Starts counting from zero. Counting is off unless started, so timed loops pay only one
 * predictable branch per call. Single-threaded use only. */
void malloc_count_start(void);

/* Stops counting and reports the calls seen since malloc_count_start(). */
void malloc_count_stop(unsigned long* allocations, unsigned long* frees);

#endif /* DLBRIDGE_BENCH_MALLOC_COUNT_H_ */
