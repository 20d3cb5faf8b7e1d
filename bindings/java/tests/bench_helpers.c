/* bench_helpers.c - the JNI face of the C column of org.dlbridge.Bench (bench/binding_cycles.c:
 * the same cycles every binding's bench compares against). */
#include <jni.h>
#include <stdint.h>

#include "binding_cycles.h"

/* A failed cycle becomes IllegalStateException with the core's message. */
static void check(JNIEnv* env, int32_t status, const dlb_error* err) {
  jclass cls;
  if (status == DLB_OK) return;
  cls = (*env)->FindClass(env, "java/lang/IllegalStateException");
  if (cls != NULL) (*env)->ThrowNew(env, cls, err->message);
}

JNIEXPORT void JNICALL Java_org_dlbridge_BenchNative_wrapFree(JNIEnv* env, jclass cls, jint n) {
  dlb_error err;
  (void)cls;
  check(env, bench_cycle_wrap_free(n, &err), &err);
}

JNIEXPORT void JNICALL Java_org_dlbridge_BenchNative_allocateFree(JNIEnv* env, jclass cls,
                                                                  jint n) {
  dlb_error err;
  (void)cls;
  check(env, bench_cycle_allocate_free(n, &err), &err);
}

JNIEXPORT void JNICALL Java_org_dlbridge_BenchNative_wrapExportImportFree(JNIEnv* env, jclass cls,
                                                                          jint n) {
  dlb_error err;
  (void)cls;
  check(env, bench_cycle_wrap_export_import_free(n, &err), &err);
}

JNIEXPORT void JNICALL Java_org_dlbridge_BenchNative_wrapLegacyFree(JNIEnv* env, jclass cls,
                                                                    jint n) {
  dlb_error err;
  (void)cls;
  check(env, bench_cycle_wrap_legacy_free(n, &err), &err);
}

JNIEXPORT jlong JNICALL Java_org_dlbridge_BenchNative_releases(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  return bench_cycle_releases();
}

/* An empty JNI call: the floor of one call into native code (kept out of the library). */
JNIEXPORT void JNICALL Java_org_dlbridge_BenchNative_noop(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
}
