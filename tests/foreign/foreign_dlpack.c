/* foreign_dlpack.c - see foreign_dlpack.h. */
#define _POSIX_C_SOURCE 200809L /* nanosleep in C99 */
#include "foreign_dlpack.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlpack/dlpack.h"

static int64_t g_deleted = 0;

typedef struct producer_ctx {
  int64_t shape[1];
  int64_t strides[1];
  float data[1];
} producer_ctx;

static producer_ctx* make_ctx(int64_t n) {
  producer_ctx* ctx = (producer_ctx*)malloc(sizeof(producer_ctx) + (size_t)(n > 0 ? n : 1) * sizeof(float));
  int64_t i;
  ctx->shape[0] = n;
  ctx->strides[0] = 1;
  for (i = 0; i < n; ++i) ctx->data[i] = (float)i;
  return ctx;
}

static void fill(DLTensor* t, producer_ctx* ctx) {
  t->data = ctx->data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = 1;
  t->dtype.code = kDLFloat;
  t->dtype.bits = 32;
  t->dtype.lanes = 1;
  t->shape = ctx->shape;
  t->strides = ctx->strides;
  t->byte_offset = 0;
}

static void versioned_deleter(DLManagedTensorVersioned* self) {
  free(self->manager_ctx);
  free(self);
  __atomic_add_fetch(&g_deleted, 1, __ATOMIC_SEQ_CST);
}

static void legacy_deleter(DLManagedTensor* self) {
  free(self->manager_ctx);
  free(self);
  __atomic_add_fetch(&g_deleted, 1, __ATOMIC_SEQ_CST);
}

int64_t foreign_dlpack_produce_versioned(int64_t n, int32_t major, int32_t minor, int64_t flags) {
  DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)calloc(1, sizeof *t);
  producer_ctx* ctx = make_ctx(n);
  t->version.major = (uint32_t)major;
  t->version.minor = (uint32_t)minor;
  t->manager_ctx = ctx;
  t->deleter = versioned_deleter;
  t->flags = (uint64_t)flags;
  fill(&t->dl_tensor, ctx);
  return (int64_t)(intptr_t)t;
}

int64_t foreign_dlpack_produce_legacy(int64_t n) {
  DLManagedTensor* t = (DLManagedTensor*)calloc(1, sizeof *t);
  producer_ctx* ctx = make_ctx(n);
  t->manager_ctx = ctx;
  t->deleter = legacy_deleter;
  fill(&t->dl_tensor, ctx);
  return (int64_t)(intptr_t)t;
}

int64_t foreign_dlpack_deleted_count(void) { return __atomic_load_n(&g_deleted, __ATOMIC_SEQ_CST); }

/* Sums a float32 tensor the way a consumer would. */
static double sum_floats(const DLTensor* t) {
  const char* base = (const char*)t->data + t->byte_offset;
  int64_t n = 1, i;
  int32_t d;
  double s = 0;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  for (i = 0; i < n; ++i) s += ((const float*)base)[i];
  return s;
}

typedef struct job {
  void* tensor;
  int legacy;
} job;

static void* free_on_thread(void* arg) {
  job* j = (job*)arg;
  if (j->legacy) {
    DLManagedTensor* t = (DLManagedTensor*)j->tensor;
    if (t->deleter) t->deleter(t);
  } else {
    DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)j->tensor;
    if (t->deleter) t->deleter(t);
  }
  return NULL;
}

double foreign_dlpack_consume_on_new_thread(int64_t address, int32_t legacy) {
  job j;
  pthread_t th;
  const DLTensor* t;
  double s;
  j.tensor = (void*)(intptr_t)address;
  j.legacy = legacy ? 1 : 0;
  t = legacy ? &((DLManagedTensor*)j.tensor)->dl_tensor
             : &((DLManagedTensorVersioned*)j.tensor)->dl_tensor;
  s = (t->dtype.code == kDLFloat && t->dtype.bits == 32) ? sum_floats(t) : 0.0 / 0.0;
  if (pthread_create(&th, NULL, free_on_thread, &j) != 0) return -1.0;
  pthread_join(th, NULL);
  return s;
}

int32_t foreign_dlpack_version_of(int64_t address) {
  const DLManagedTensorVersioned* t = (const DLManagedTensorVersioned*)(intptr_t)address;
  return (int32_t)(t->version.major * 1000 + t->version.minor);
}

typedef struct late_job {
  void* tensor;
  long delay_us;
} late_job;

static void* free_later(void* arg) {
  late_job* j = (late_job*)arg;
  DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)j->tensor;
  struct timespec delay;
  delay.tv_sec = j->delay_us / 1000000;
  delay.tv_nsec = (j->delay_us % 1000000) * 1000;
  nanosleep(&delay, NULL);
  if (t->deleter) t->deleter(t);
  free(j);
  return NULL;
}

void foreign_dlpack_free_later(int64_t address, int64_t delay_us) {
  pthread_t th;
  late_job* j = (late_job*)malloc(sizeof *j);
  j->tensor = (void*)(intptr_t)address;
  j->delay_us = (long)delay_us;
  if (pthread_create(&th, NULL, free_later, j) == 0) pthread_detach(th);
}
