/* bench_helpers.c - the C column of DLBridge.Bench: each entry point runs one of the bench's
 * cycles `n` times natively, straight against the core (linked statically, symbols hidden), so
 * the C# row and its C counterpart are measured in the same run and the same process. Each
 * returns 0, or the failing status. */
#include <stdint.h>
#include <stdlib.h>

#include "dlbridge/dlbridge.h"

#define EXPORT __attribute__((visibility("default")))

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

#define CHECK(call)                   \
  do {                                \
    dlb_status status_ = (call);      \
    if (status_ != DLB_OK) return status_; \
  } while (0)

/* dlb_tensor_wrap (with a release callback) + dlb_tensor_free. */
EXPORT int32_t cs_bench_wrap_free(int32_t n) {
  DLTensor t = small_tensor();
  dlb_error err;
  int32_t i;
  for (i = 0; i < n; ++i) {
    DLManagedTensorVersioned* w = NULL;
    CHECK(dlb_tensor_wrap(&t, 0, count_release, NULL, &w, &err));
    dlb_tensor_free(w);
  }
  return 0;
}

/* dlb_tensor_allocate(CPU, float32, 16x16) + dlb_tensor_free. */
EXPORT int32_t cs_bench_allocate_free(int32_t n) {
  DLDevice cpu;
  DLDataType f32;
  dlb_error err;
  int32_t i;
  cpu.device_type = kDLCPU;
  cpu.device_id = 0;
  f32.code = kDLFloat;
  f32.bits = 32;
  f32.lanes = 1;
  for (i = 0; i < n; ++i) {
    DLManagedTensorVersioned* a = NULL;
    CHECK(dlb_tensor_allocate(cpu, f32, 2, g_shape, NULL, 0, &a, &err));
    dlb_tensor_free(a);
  }
  return 0;
}

/* wrap + (export: the versioned struct is the handle itself) + dlb_tensor_import + free. */
EXPORT int32_t cs_bench_wrap_export_import_free(int32_t n) {
  DLTensor t = small_tensor();
  dlb_error err;
  int32_t i;
  for (i = 0; i < n; ++i) {
    DLManagedTensorVersioned* w = NULL;
    DLManagedTensorVersioned* imported = NULL;
    CHECK(dlb_tensor_wrap(&t, 0, count_release, NULL, &w, &err));
    CHECK(dlb_tensor_import(w, &imported, &err));
    dlb_tensor_free(imported);
  }
  return 0;
}

/* wrap + dlb_tensor_export_legacy + dlb_tensor_import_legacy + free. */
EXPORT int32_t cs_bench_wrap_legacy_free(int32_t n) {
  DLTensor t = small_tensor();
  dlb_error err;
  int32_t i;
  for (i = 0; i < n; ++i) {
    DLManagedTensorVersioned* w = NULL;
    DLManagedTensor* legacy = NULL;
    DLManagedTensorVersioned* imported = NULL;
    CHECK(dlb_tensor_wrap(&t, 0, count_release, NULL, &w, &err));
    CHECK(dlb_tensor_export_legacy(w, &legacy, &err));
    CHECK(dlb_tensor_import_legacy(legacy, &imported, &err));
    dlb_tensor_free(imported);
  }
  return 0;
}

/* How many release callbacks the C cycles have run (a sanity check). */
EXPORT int64_t cs_bench_releases(void) { return g_releases; }

/* An empty function: the floor of one P/Invoke call (kept out of the library). */
EXPORT void cs_bench_noop(void) {}
