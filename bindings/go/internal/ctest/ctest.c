/* ctest.c - see ctest.h. */
#define _POSIX_C_SOURCE 200809L
#include "ctest.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlbridge/dlbridge.h"

static int64_t g_deleter_calls = 0;

int64_t ctest_deleter_calls(void) { return __atomic_load_n(&g_deleter_calls, __ATOMIC_SEQ_CST); }

typedef struct owned {
  void* data;
  int64_t* shape;
  int64_t* strides;
} owned;

static void release_owned(void* ctx) {
  owned* o = (owned*)ctx;
  free(o->data);
  free(o->shape);
  free(o->strides);
  free(o);
  __atomic_fetch_add(&g_deleter_calls, 1, __ATOMIC_SEQ_CST);
}

static void delete_versioned(DLManagedTensorVersioned* self) {
  release_owned(self->manager_ctx);
  free(self);
}

static void delete_legacy(DLManagedTensor* self) {
  release_owned(self->manager_ctx);
  free(self);
}

static owned* make_floats(int64_t n) {
  owned* o = (owned*)calloc(1, sizeof *o);
  float* f = (float*)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  int64_t i;
  for (i = 0; i < n; ++i) f[i] = (float)i;
  o->data = f;
  o->shape = (int64_t*)malloc(sizeof(int64_t));
  o->shape[0] = n;
  o->strides = (int64_t*)malloc(sizeof(int64_t));
  o->strides[0] = 1;
  return o;
}

static void fill_floats(DLTensor* t, owned* o) {
  t->data = o->data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = 1;
  t->dtype.code = kDLFloat;
  t->dtype.bits = 32;
  t->dtype.lanes = 1;
  t->shape = o->shape;
  t->strides = o->strides;
  t->byte_offset = 0;
}

DLManagedTensorVersioned* ctest_make_versioned(int64_t n, uint32_t major, uint32_t minor, uint64_t flags) {
  DLManagedTensorVersioned* m = (DLManagedTensorVersioned*)calloc(1, sizeof *m);
  owned* o = make_floats(n);
  m->version.major = major;
  m->version.minor = minor;
  m->manager_ctx = o;
  m->deleter = delete_versioned;
  m->flags = flags;
  fill_floats(&m->dl_tensor, o);
  return m;
}

DLManagedTensor* ctest_make_legacy(int64_t n) {
  DLManagedTensor* m = (DLManagedTensor*)calloc(1, sizeof *m);
  owned* o = make_floats(n);
  m->manager_ctx = o;
  m->deleter = delete_legacy;
  fill_floats(&m->dl_tensor, o);
  return m;
}

DLManagedTensorVersioned* ctest_make_raw(uint32_t major, uint32_t minor, int32_t device_type,
                                         int32_t device_id, int32_t ndim, const int64_t* shape,
                                         int has_strides, const int64_t* strides, uint8_t code,
                                         uint8_t bits, uint16_t lanes, uint64_t byte_offset,
                                         uint64_t flags, int has_data, uint64_t buffer_bytes) {
  DLManagedTensorVersioned* m = (DLManagedTensorVersioned*)calloc(1, sizeof *m);
  owned* o = (owned*)calloc(1, sizeof *o);
  size_t n = ndim > 0 ? (size_t)ndim : 1;
  o->data = has_data ? calloc(1, (size_t)(buffer_bytes > 0 ? buffer_bytes : 1)) : NULL;
  o->shape = (int64_t*)calloc(n, sizeof(int64_t));
  if (ndim > 0 && shape != NULL) memcpy(o->shape, shape, (size_t)ndim * sizeof(int64_t));
  if (has_strides) {
    o->strides = (int64_t*)calloc(n, sizeof(int64_t));
    if (ndim > 0 && strides != NULL) memcpy(o->strides, strides, (size_t)ndim * sizeof(int64_t));
  }
  m->version.major = major;
  m->version.minor = minor;
  m->manager_ctx = o;
  m->deleter = delete_versioned;
  m->flags = flags;
  m->dl_tensor.data = o->data;
  m->dl_tensor.device.device_type = (DLDeviceType)device_type;
  m->dl_tensor.device.device_id = device_id;
  m->dl_tensor.ndim = ndim;
  m->dl_tensor.dtype.code = code;
  m->dl_tensor.dtype.bits = bits;
  m->dl_tensor.dtype.lanes = lanes;
  m->dl_tensor.shape = o->shape;
  m->dl_tensor.strides = o->strides;
  m->dl_tensor.byte_offset = byte_offset;
  return m;
}

typedef struct consumer_job {
  DLManagedTensorVersioned* versioned;
  DLManagedTensor* legacy;
  double sum;
} consumer_job;

static double sum_floats(const DLTensor* t) {
  const float* f = (const float*)((const char*)t->data + t->byte_offset);
  double s = 0;
  int64_t i;
  for (i = 0; i < t->shape[0]; ++i) s += f[i];
  return s;
}

static void* consume(void* arg) {
  consumer_job* job = (consumer_job*)arg;
  if (job->versioned != NULL) {
    job->sum = sum_floats(&job->versioned->dl_tensor);
    if (job->versioned->deleter != NULL) job->versioned->deleter(job->versioned);
  } else {
    job->sum = sum_floats(&job->legacy->dl_tensor);
    if (job->legacy->deleter != NULL) job->legacy->deleter(job->legacy);
  }
  return NULL;
}

static double consume_on_thread(consumer_job* job) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, consume, job) != 0) {
    consume(job);
    return -1;
  }
  pthread_join(thread, NULL);
  return job->sum;
}

double ctest_consume_versioned_on_thread(DLManagedTensorVersioned* tensor) {
  consumer_job job = {tensor, NULL, 0};
  return consume_on_thread(&job);
}

double ctest_consume_legacy_on_thread(DLManagedTensor* tensor) {
  consumer_job job = {NULL, tensor, 0};
  return consume_on_thread(&job);
}

void* ctest_malloc(uint64_t bytes) { return malloc((size_t)(bytes > 0 ? bytes : 1)); }
void ctest_free(void* p) { free(p); }

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static const DLDevice cpu = {kDLCPU, 0};
static const DLDataType f32 = {kDLFloat, 32, 1};

double ctest_bench_allocate_free(int64_t iterations) {
  int64_t shape[2] = {4, 4};
  int64_t i;
  double start = now_ns();
  for (i = 0; i < iterations; ++i) {
    DLManagedTensorVersioned* t = NULL;
    if (dlb_tensor_allocate(cpu, f32, 2, shape, NULL, 0, &t, NULL) != DLB_OK) return -1;
    dlb_tensor_free(t);
  }
  return (now_ns() - start) / (double)iterations;
}

double ctest_bench_wrap_free(int64_t iterations) {
  static float data[16];
  int64_t shape[2] = {4, 4};
  DLTensor desc;
  int64_t i;
  double start;
  memset(&desc, 0, sizeof desc);
  desc.data = data;
  desc.device = cpu;
  desc.ndim = 2;
  desc.dtype = f32;
  desc.shape = shape;
  start = now_ns();
  for (i = 0; i < iterations; ++i) {
    DLManagedTensorVersioned* t = NULL;
    if (dlb_tensor_wrap(&desc, 0, NULL, NULL, &t, NULL) != DLB_OK) return -1;
    dlb_tensor_free(t);
  }
  return (now_ns() - start) / (double)iterations;
}

/* One cycle: allocate, export (hand the pointer over), import it back, free. */
double ctest_bench_export_import_versioned(int64_t iterations) {
  int64_t shape[2] = {4, 4};
  int64_t i;
  double start = now_ns();
  for (i = 0; i < iterations; ++i) {
    DLManagedTensorVersioned *t = NULL, *back = NULL;
    if (dlb_tensor_allocate(cpu, f32, 2, shape, NULL, 0, &t, NULL) != DLB_OK) return -1;
    if (dlb_tensor_import(t, &back, NULL) != DLB_OK) return -1;
    dlb_tensor_free(back);
  }
  return (now_ns() - start) / (double)iterations;
}

double ctest_bench_export_import_legacy(int64_t iterations) {
  int64_t shape[2] = {4, 4};
  int64_t i;
  double start = now_ns();
  for (i = 0; i < iterations; ++i) {
    DLManagedTensorVersioned *t = NULL, *back = NULL;
    DLManagedTensor* legacy = NULL;
    if (dlb_tensor_allocate(cpu, f32, 2, shape, NULL, 0, &t, NULL) != DLB_OK) return -1;
    if (dlb_tensor_export_legacy(t, &legacy, NULL) != DLB_OK) return -1;
    if (dlb_tensor_import_legacy(legacy, &back, NULL) != DLB_OK) return -1;
    dlb_tensor_free(back);
  }
  return (now_ns() - start) / (double)iterations;
}

void ctest_empty(void) {}
