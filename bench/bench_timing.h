/* Timing helpers shared by the C bench programs: a monotonic clock and the median of a set of
 * measurements (medians resist the outliers a shared machine produces). */
#ifndef DLBRIDGE_BENCH_BENCH_TIMING_H_
#define DLBRIDGE_BENCH_BENCH_TIMING_H_

#include <stdlib.h>
#include <time.h>

static inline double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a;
  double y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Sorts `values` in place and returns their median. */
static inline double median(double* values, int count) {
  qsort(values, (size_t)count, sizeof(double), compare_doubles);
  if (count % 2 == 1) return values[count / 2];
  return 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

#endif /* DLBRIDGE_BENCH_BENCH_TIMING_H_ */
