/* bench_helpers.c - the C side of org.dlbridge.Bench: each entry point runs one of the bench's
 * cycles `n` times natively, straight against the core (linked statically, symbols hidden), so
 * the Java row and its C counterpart are measured in the same run and the same process. */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>

#include "dlbridge/dlbridge.h"

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

static void fail(JNIEnv* env, const dlb_error* err) {
  jclass cls = (*env)->FindClass(env, "java/lang/IllegalStateException");
  if (cls != NULL) (*env)->ThrowNew(env, cls, err->message);
}

#define CHECK(call)            \
  do {                         \
    if ((call) != DLB_OK) {    \
      fail(env, &err);         \
      return;                  \
    }                          \
  } while (0)

/* dlb_tensor_wrap (with a release callback) + dlb_tensor_free. */
JNIEXPORT void JNICALL Java_org_dlbridge_BenchNative_wrapFree(JNIEnv* env, jclass cls, jint n) {
  DLTensor t = small_tensor();
  dlb_error err;
  jint i;
  (void)cls;
  for (i = 0; i < n; ++i) {
    DLManagedTensorVersioned* w = NULL;
    CHECK(dlb_tensor_wrap(&t, 0, count_release, NULL, &w, &err));
    dlb_tensor_free(w);
  }
}

/* dlb_tensor_allocate(CPU, float32, 16x16) + dlb_tensor_free. */
JNIEXPORT void JNICALL Java_org_dlbridge_BenchNative_allocateFree(JNIEnv* env, jclass cls,
                                                                  jint n) {
  DLDevice cpu;
  DLDataType f32;
  dlb_error err;
  jint i;
  (void)cls;
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
}

/* wrap + (export: the versioned struct is the handle itself) + dlb_tensor_import + free. */
JNIEXPORT void JNICALL Java_org_dlbridge_BenchNative_wrapExportImportFree(JNIEnv* env, jclass cls,
                                                                          jint n) {
  DLTensor t = small_tensor();
  dlb_error err;
  jint i;
  (void)cls;
  for (i = 0; i < n; ++i) {
    DLManagedTensorVersioned* w = NULL;
    DLManagedTensorVersioned* imported = NULL;
    CHECK(dlb_tensor_wrap(&t, 0, count_release, NULL, &w, &err));
    CHECK(dlb_tensor_import(w, &imported, &err));
    dlb_tensor_free(imported);
  }
}

/* wrap + dlb_tensor_export_legacy + dlb_tensor_import_legacy + free. */
JNIEXPORT void JNICALL Java_org_dlbridge_BenchNative_wrapLegacyFree(JNIEnv* env, jclass cls,
                                                                    jint n) {
  DLTensor t = small_tensor();
  dlb_error err;
  jint i;
  (void)cls;
  for (i = 0; i < n; ++i) {
    DLManagedTensorVersioned* w = NULL;
    DLManagedTensor* legacy = NULL;
    DLManagedTensorVersioned* imported = NULL;
    CHECK(dlb_tensor_wrap(&t, 0, count_release, NULL, &w, &err));
    CHECK(dlb_tensor_export_legacy(w, &legacy, &err));
    CHECK(dlb_tensor_import_legacy(legacy, &imported, &err));
    dlb_tensor_free(imported);
  }
}

/* How many release callbacks the C cycles have run (a sanity check). */
JNIEXPORT jlong JNICALL Java_org_dlbridge_BenchNative_releases(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  return (jlong)g_releases;
}

/* An empty JNI call: the floor of one call into native code (kept out of the library). */
JNIEXPORT void JNICALL Java_org_dlbridge_BenchNative_noop(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
}
