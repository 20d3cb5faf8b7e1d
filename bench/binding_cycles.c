/* binding_cycles.c - see binding_cycles.h. */
#include "binding_cycles.h"

#include <stdlib.h>

static float g_data[256]; /* 16x16 float32, the bench's 1 KiB buffer */
static int64_t g_shape[2] = {16, 16};
static int64_t g_releases = 0;

static void count_release(void* ctx) {
  (void)ctx;
  g_releases++;
}

static DLTensor small_tensor(void) {
  DLTensor t;
  t.data = g_data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = 2;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = g_shape;
  t.strides = NULL;
  t.byte_offset = 0;
  return t;
}

#define CHECK(call)                        \
  do {                                     \
    dlb_status status_ = (call);           \
    if (status_ != DLB_OK) return status_; \
  } while (0)

int32_t bench_cycle_wrap_free(int32_t n, dlb_error* error) {
  DLTensor t = small_tensor();
  int32_t i;
  for (i = 0; i < n; ++i) {
    DLManagedTensorVersioned* w = NULL;
    CHECK(dlb_tensor_wrap_buffer(&t, sizeof g_data, 0, count_release, NULL, &w, error));
    dlb_tensor_free(w);
  }
  return DLB_OK;
}

int32_t bench_cycle_allocate_free(int32_t n, dlb_error* error) {
  DLDevice cpu;
  DLDataType f32;
  int32_t i;
  cpu.device_type = kDLCPU;
  cpu.device_id = 0;
  f32.code = kDLFloat;
  f32.bits = 32;
  f32.lanes = 1;
  for (i = 0; i < n; ++i) {
    DLManagedTensorVersioned* a = NULL;
    CHECK(dlb_tensor_allocate(cpu, f32, 2, g_shape, NULL, 0, &a, error));
    dlb_tensor_free(a);
  }
  return DLB_OK;
}

int32_t bench_cycle_wrap_export_import_free(int32_t n, dlb_error* error) {
  DLTensor t = small_tensor();
  int32_t i;
  for (i = 0; i < n; ++i) {
    DLManagedTensorVersioned* w = NULL;
    DLManagedTensorVersioned* imported = NULL;
    CHECK(dlb_tensor_wrap_buffer(&t, sizeof g_data, 0, count_release, NULL, &w, error));
    CHECK(dlb_tensor_import(w, &imported, error));
    dlb_tensor_free(imported);
  }
  return DLB_OK;
}

int32_t bench_cycle_wrap_legacy_free(int32_t n, dlb_error* error) {
  DLTensor t = small_tensor();
  int32_t i;
  for (i = 0; i < n; ++i) {
    DLManagedTensorVersioned* w = NULL;
    DLManagedTensor* legacy = NULL;
    DLManagedTensorVersioned* imported = NULL;
    CHECK(dlb_tensor_wrap_buffer(&t, sizeof g_data, 0, count_release, NULL, &w, error));
    CHECK(dlb_tensor_export_legacy(w, &legacy, error));
    CHECK(dlb_tensor_import_legacy(legacy, &imported, error));
    dlb_tensor_free(imported);
  }
  return DLB_OK;
}

int64_t bench_cycle_releases(void) { return g_releases; }

void bench_cycle_noop(void) {}
