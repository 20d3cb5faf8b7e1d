/* test_helpers.c - the JNI face of the foreign DLPack producer and consumer the Java tests use
 * (tests/foreign/foreign_dlpack.c: no dlbridge inside, DLPack only). */
#include <jni.h>
#include <stdint.h>

#include "foreign_dlpack.h"

JNIEXPORT jlong JNICALL Java_org_dlbridge_NativeTestHelper_produceVersioned(
    JNIEnv* env, jclass cls, jlong n, jint major, jint minor, jlong flags) {
  (void)env;
  (void)cls;
  return foreign_dlpack_produce_versioned(n, major, minor, flags);
}

JNIEXPORT jlong JNICALL Java_org_dlbridge_NativeTestHelper_produceLegacy(JNIEnv* env, jclass cls,
                                                                         jlong n) {
  (void)env;
  (void)cls;
  return foreign_dlpack_produce_legacy(n);
}

JNIEXPORT jlong JNICALL Java_org_dlbridge_NativeTestHelper_deletedCount(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  return foreign_dlpack_deleted_count();
}

/* Frees on a new pthread, one the JVM has never seen. */
JNIEXPORT jdouble JNICALL Java_org_dlbridge_NativeTestHelper_consumeOnNewThread(
    JNIEnv* env, jclass cls, jlong address, jboolean legacy) {
  (void)env;
  (void)cls;
  return foreign_dlpack_consume_on_new_thread(address, legacy ? 1 : 0);
}

JNIEXPORT jint JNICALL Java_org_dlbridge_NativeTestHelper_versionOf(JNIEnv* env, jclass cls,
                                                                     jlong address) {
  (void)env;
  (void)cls;
  return foreign_dlpack_version_of(address);
}

/* Used to run a deleter while the JVM is exiting. */
JNIEXPORT void JNICALL Java_org_dlbridge_NativeTestHelper_freeLater(JNIEnv* env, jclass cls,
                                                                     jlong address,
                                                                     jlong delay_us) {
  (void)env;
  (void)cls;
  foreign_dlpack_free_later(address, delay_us);
}
