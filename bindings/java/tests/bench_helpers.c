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

/* SlotsBench's JNI global-reference token (C#'s model: a handle the VM keeps, its value the
 * token): the three steps as separate calls, and folded into calls the binding makes anyway (a
 * wrap's call makes the reference, a free's or a drain's call resolves and deletes it). */
JNIEXPORT jlong JNICALL Java_org_dlbridge_SlotsBench_newGlobal(JNIEnv* env, jclass cls,
                                                              jobject owner) {
  (void)cls;
  return (jlong)(intptr_t)(*env)->NewGlobalRef(env, owner);
}

JNIEXPORT jobject JNICALL Java_org_dlbridge_SlotsBench_resolveGlobal(JNIEnv* env, jclass cls,
                                                                    jlong token) {
  (void)cls;
  return (*env)->NewLocalRef(env, (jobject)(intptr_t)token);
}

JNIEXPORT void JNICALL Java_org_dlbridge_SlotsBench_deleteGlobal(JNIEnv* env, jclass cls,
                                                                jlong token) {
  (void)cls;
  (*env)->DeleteGlobalRef(env, (jobject)(intptr_t)token);
}

/* The release folded into one call: the owner is resolved (a local reference made and dropped,
 * as a drain that hands it to Java would) and the global reference deleted. */
JNIEXPORT jboolean JNICALL Java_org_dlbridge_SlotsBench_resolveAndDeleteGlobal(JNIEnv* env,
                                                                              jclass cls,
                                                                              jlong token) {
  jobject global = (jobject)(intptr_t)token;
  jobject owner = (*env)->NewLocalRef(env, global);
  jboolean found = owner != NULL;
  (void)cls;
  (*env)->DeleteLocalRef(env, owner);
  (*env)->DeleteGlobalRef(env, global);
  return found;
}

/* The two empty calls those folded steps ride on, with the same arguments: subtracted. */
JNIEXPORT jlong JNICALL Java_org_dlbridge_SlotsBench_noopObject(JNIEnv* env, jclass cls,
                                                               jobject owner) {
  (void)env;
  (void)cls;
  return owner != NULL;
}

JNIEXPORT jboolean JNICALL Java_org_dlbridge_SlotsBench_noopLong(JNIEnv* env, jclass cls,
                                                                jlong token) {
  (void)env;
  (void)cls;
  return token != 0;
}
