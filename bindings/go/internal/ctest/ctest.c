/* ctest.c - see ctest.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in C99 */
#include "ctest.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlbridge/dlbridge.h"

static int64_t g_raw_deleter_calls = 0;

int64_t ctest_raw_deleter_calls(void) {
  return __atomic_load_n(&g_raw_deleter_calls, __ATOMIC_SEQ_CST);
}

typedef struct raw_parts {
  void* data;
  int64_t* shape;
  int64_t* strides;
} raw_parts;

static void delete_raw(DLManagedTensorVersioned* self) {
  raw_parts* parts = (raw_parts*)self->manager_ctx;
  free(parts->data);
  free(parts->shape);
  free(parts->strides);
  free(parts);
  free(self);
  __atomic_fetch_add(&g_raw_deleter_calls, 1, __ATOMIC_SEQ_CST);
}

DLManagedTensorVersioned* ctest_make_raw(uint32_t major, uint32_t minor, int32_t device_type,
                                         int32_t device_id, int32_t ndim, const int64_t* shape,
                                         int has_strides, const int64_t* strides, uint8_t code,
                                         uint8_t bits, uint16_t lanes, uint64_t byte_offset,
                                         uint64_t flags, int has_data, uint64_t buffer_bytes) {
  DLManagedTensorVersioned* m = (DLManagedTensorVersioned*)calloc(1, sizeof *m);
  raw_parts* parts = (raw_parts*)calloc(1, sizeof *parts);
  size_t n = ndim > 0 ? (size_t)ndim : 1;
  if (m == NULL || parts == NULL) abort();
  parts->data = has_data ? calloc(1, (size_t)(buffer_bytes > 0 ? buffer_bytes : 1)) : NULL;
  parts->shape = (int64_t*)calloc(n, sizeof(int64_t));
  if (ndim > 0 && shape != NULL) memcpy(parts->shape, shape, (size_t)ndim * sizeof(int64_t));
  if (has_strides) {
    parts->strides = (int64_t*)calloc(n, sizeof(int64_t));
    if (ndim > 0 && strides != NULL) memcpy(parts->strides, strides, (size_t)ndim * sizeof(int64_t));
  }
  m->version.major = major;
  m->version.minor = minor;
  m->manager_ctx = parts;
  m->deleter = delete_raw;
  m->flags = flags;
  m->dl_tensor.data = parts->data;
  m->dl_tensor.device.device_type = (DLDeviceType)device_type;
  m->dl_tensor.device.device_id = device_id;
  m->dl_tensor.ndim = ndim;
  m->dl_tensor.dtype.code = code;
  m->dl_tensor.dtype.bits = bits;
  m->dl_tensor.dtype.lanes = lanes;
  m->dl_tensor.shape = parts->shape;
  m->dl_tensor.strides = parts->strides;
  m->dl_tensor.byte_offset = byte_offset;
  return m;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static const DLDevice bench_cpu = {kDLCPU, 0};
static const DLDataType bench_f32 = {kDLFloat, 32, 1};
static const int64_t bench_shape[2] = {4, 4};

double ctest_bench_allocate_free(int64_t iterations) {
  int64_t i;
  double start = now_ns();
  for (i = 0; i < iterations; ++i) {
    DLManagedTensorVersioned* t = NULL;
    if (dlb_tensor_allocate(bench_cpu, bench_f32, 2, bench_shape, NULL, 0, &t, NULL) != DLB_OK) return -1;
    dlb_tensor_free(t);
  }
  return (now_ns() - start) / (double)iterations;
}

static int64_t g_bench_releases = 0;
static void bench_release(void* ctx) {
  (void)ctx;
  __atomic_fetch_add(&g_bench_releases, 1, __ATOMIC_RELAXED);
}
int64_t ctest_bench_releases(void) { return __atomic_load_n(&g_bench_releases, __ATOMIC_SEQ_CST); }

static double wrap_free(int64_t iterations, dlb_release_fn release) {
  static float data[16];
  DLTensor desc;
  int64_t i;
  double start;
  memset(&desc, 0, sizeof desc);
  desc.data = data;
  desc.device = bench_cpu;
  desc.ndim = 2;
  desc.dtype = bench_f32;
  desc.shape = (int64_t*)bench_shape;
  start = now_ns();
  for (i = 0; i < iterations; ++i) {
    DLManagedTensorVersioned* t = NULL;
    if (dlb_tensor_wrap_buffer(&desc, sizeof data, 0, release, data, &t, NULL) != DLB_OK) return -1;
    dlb_tensor_free(t);
  }
  return (now_ns() - start) / (double)iterations;
}

double ctest_bench_wrap_free(int64_t iterations) { return wrap_free(iterations, NULL); }

double ctest_bench_wrap_release_free(int64_t iterations) {
  return wrap_free(iterations, bench_release);
}

/* One cycle: allocate, export (hand the pointer over), import it back, free. */
double ctest_bench_export_import_versioned(int64_t iterations) {
  int64_t i;
  double start = now_ns();
  for (i = 0; i < iterations; ++i) {
    DLManagedTensorVersioned *t = NULL, *back = NULL;
    if (dlb_tensor_allocate(bench_cpu, bench_f32, 2, bench_shape, NULL, 0, &t, NULL) != DLB_OK) return -1;
    if (dlb_tensor_import(t, &back, NULL) != DLB_OK) return -1;
    dlb_tensor_free(back);
  }
  return (now_ns() - start) / (double)iterations;
}

double ctest_bench_export_import_legacy(int64_t iterations) {
  int64_t i;
  double start = now_ns();
  for (i = 0; i < iterations; ++i) {
    DLManagedTensorVersioned *t = NULL, *back = NULL;
    DLManagedTensor* legacy = NULL;
    if (dlb_tensor_allocate(bench_cpu, bench_f32, 2, bench_shape, NULL, 0, &t, NULL) != DLB_OK) return -1;
    if (dlb_tensor_export_legacy(t, &legacy, NULL) != DLB_OK) return -1;
    if (dlb_tensor_import_legacy(legacy, &back, NULL) != DLB_OK) return -1;
    dlb_tensor_free(back);
  }
  return (now_ns() - start) / (double)iterations;
}

void ctest_empty(void) {}
