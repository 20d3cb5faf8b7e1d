/* agent_java.c - the JNI shim of the interop matrix. It is two things:
 *  - the Java agent: interop_agent_get() presents org.dlbridge.interop.JavaAgent (which uses the
 *    Java binding's public API) as an interop_agent. In a JVM it uses that JVM; loaded by a
 *    native host it starts one (JNI_CreateJavaVM) with the class path in INTEROP_JAVA_CLASSPATH
 *    and the binding's JNI library in INTEROP_JAVA_JNI_LIB.
 *  - the Java host's native half: JavaHost.runMatrix() loads agent libraries and runs the
 *    matrix (interop_runner.c) with Java as one of the agents.
 * It links no dlbridge core: Java's is inside the binding's JNI library. Starting or finding the
 * JVM is tests/vmhost/jvm_host.c's, shared with the conformance kit's Java subject. */
#include <jni.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlpack/dlpack.h"
#include "interop_runner.h"
#include "jvm_host.h"

#if defined(__GNUC__)
#define SHIM_EXPORT __attribute__((visibility("default")))
#else
#define SHIM_EXPORT
#endif

#define SPEC_FIELDS 17 /* the int64_t fields of interop_case after its name */
/* spec_of() copies them as one array: they must follow each other with no gap. */
typedef char interop_spec_fields_are_contiguous
    [sizeof(interop_case) == offsetof(interop_case, dtype_code) + SPEC_FIELDS * sizeof(int64_t) ? 1 : -1];

static JavaVM* g_vm = NULL;
static jclass g_agent = NULL;
static jmethodID g_produce, g_consume, g_live;

SHIM_EXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  (void)reserved;
  g_vm = vm;
  return JNI_VERSION_1_8;
}

/* The runner calls the agent from its own thread, which stays attached. */
static JNIEnv* env_here(void) { return jvm_host_env(g_vm, NULL); }

static jlong JNICALL first_element(JNIEnv* env, jclass cls, jlong address) {
  const DLManagedTensorVersioned* t = (const DLManagedTensorVersioned*)(intptr_t)address;
  (void)env;
  (void)cls;
  return (jlong)((uintptr_t)t->dl_tensor.data + t->dl_tensor.byte_offset);
}

/* Copies a returned reason (a Java String, or null for success) into the report. */
static int32_t take_reason(JNIEnv* env, jstring reason, interop_report* r) {
  if ((*env)->ExceptionCheck(env)) {
    jvm_host_exception_text(env, "Java threw", r->message, sizeof r->message);
    if (r->status == 0) r->status = -1;
    return r->status;
  }
  if (reason != NULL) {
    const char* s = (*env)->GetStringUTFChars(env, reason, NULL);
    snprintf(r->message, sizeof r->message, "%.*s", (int)(sizeof r->message - 1), s != NULL ? s : "?");
    if (s != NULL) (*env)->ReleaseStringUTFChars(env, reason, s);
    (*env)->DeleteLocalRef(env, reason);
    if (r->status == 0) r->status = -1;
  }
  return r->status;
}

static jlongArray spec_of(JNIEnv* env, const interop_case* c) {
  jlongArray spec = (*env)->NewLongArray(env, SPEC_FIELDS);
  if (spec != NULL) (*env)->SetLongArrayRegion(env, spec, 0, SPEC_FIELDS, (const jlong*)&c->dtype_code);
  return spec;
}

static void* java_produce(const interop_case* c, int32_t legacy, interop_report* r) {
  JNIEnv* env = env_here();
  jlongArray spec, out;
  jlong o[3] = {0, 0, 0};
  jstring reason;
  memset(r, 0, sizeof *r);
  r->write_refused = -1;
  if (env == NULL) {
    r->status = -1;
    snprintf(r->message, sizeof r->message, "cannot attach to the JVM");
    return NULL;
  }
  spec = spec_of(env, c);
  out = (*env)->NewLongArray(env, 3);
  reason = (jstring)(*env)->CallStaticObjectMethod(env, g_agent, g_produce, spec, (jboolean)(legacy != 0), out);
  if (!(*env)->ExceptionCheck(env)) (*env)->GetLongArrayRegion(env, out, 0, 3, o);
  r->status = (int32_t)o[1];
  take_reason(env, reason, r);
  (*env)->DeleteLocalRef(env, spec);
  (*env)->DeleteLocalRef(env, out);
  r->base = (uint64_t)o[2];
  if (r->status != 0 || o[0] == 0) return NULL;
  if (legacy) {
    const DLManagedTensor* t = (const DLManagedTensor*)(intptr_t)o[0];
    r->data = (uint64_t)(uintptr_t)t->dl_tensor.data + t->dl_tensor.byte_offset;
  } else {
    const DLManagedTensorVersioned* t = (const DLManagedTensorVersioned*)(intptr_t)o[0];
    r->data = (uint64_t)(uintptr_t)t->dl_tensor.data + t->dl_tensor.byte_offset;
  }
  return (void*)(intptr_t)o[0];
}

static int32_t java_consume(void* tensor, const interop_case* c, int32_t legacy,
                            int32_t free_on_new_thread, interop_report* r) {
  JNIEnv* env = env_here();
  jlongArray spec, out;
  jdoubleArray sum;
  jlong o[3] = {-1, 0, -1};
  jdouble s = 0.0;
  jstring reason;
  memset(r, 0, sizeof *r);
  r->write_refused = -1;
  if (env == NULL) {
    r->status = -1;
    snprintf(r->message, sizeof r->message, "cannot attach to the JVM");
    return r->status;
  }
  spec = spec_of(env, c);
  out = (*env)->NewLongArray(env, 3);
  sum = (*env)->NewDoubleArray(env, 1);
  reason = (jstring)(*env)->CallStaticObjectMethod(env, g_agent, g_consume, (jlong)(intptr_t)tensor, spec,
                                                   (jboolean)(legacy != 0), (jboolean)(free_on_new_thread != 0),
                                                   out, sum);
  if (!(*env)->ExceptionCheck(env)) {
    (*env)->GetLongArrayRegion(env, out, 0, 3, o);
    (*env)->GetDoubleArrayRegion(env, sum, 0, 1, &s);
  }
  r->status = (int32_t)o[0];
  r->data = (uint64_t)o[1];
  r->write_refused = (int32_t)o[2];
  r->checksum = s;
  take_reason(env, reason, r);
  (*env)->DeleteLocalRef(env, spec);
  (*env)->DeleteLocalRef(env, out);
  (*env)->DeleteLocalRef(env, sum);
  return r->status;
}

static int64_t java_live_count(void) { return (int64_t)jvm_host_static_long(g_vm, g_agent, g_live); }

static const interop_agent g_java_agent = {
    INTEROP_CONTRACT_VERSION, "java", java_produce, java_consume, java_live_count, NULL,
};

SHIM_EXPORT const interop_agent* interop_agent_get(void) {
  JNIEnv* env;
  jclass cls;
  JNINativeMethod natives[1];
  if (g_agent != NULL) return &g_java_agent;
  /* Loaded by a native host: a JVM with the class path and the binding's JNI library from the
     environment. */
  if (g_vm == NULL) g_vm = jvm_host_vm("java agent", "INTEROP_JAVA_CLASSPATH", "INTEROP_JAVA_JNI_LIB");
  if (g_vm == NULL) return NULL;
  env = env_here();
  if (env == NULL) return NULL;
  cls = jvm_host_class(env, "org/dlbridge/interop/JavaAgent");
  if (cls == NULL) return NULL;
  natives[0].name = (char*)"firstElement";
  natives[0].signature = (char*)"(J)J";
  {
    /* JNI's fnPtr is a void*; ISO C has no cast from a function pointer to it. */
    jlong(JNICALL * fn)(JNIEnv*, jclass, jlong) = first_element;
    memcpy(&natives[0].fnPtr, &fn, sizeof natives[0].fnPtr);
  }
  if ((*env)->RegisterNatives(env, cls, natives, 1) != 0) return NULL;
  g_produce = (*env)->GetStaticMethodID(env, cls, "produce", "([JZ[J)Ljava/lang/String;");
  g_consume = (*env)->GetStaticMethodID(env, cls, "consume", "(J[JZZ[J[D)Ljava/lang/String;");
  g_live = (*env)->GetStaticMethodID(env, cls, "liveCount", "()J");
  if (g_produce == NULL || g_consume == NULL || g_live == NULL) {
    (*env)->ExceptionDescribe(env);
    (*env)->ExceptionClear(env);
    return NULL;
  }
  g_agent = cls;
  return &g_java_agent;
}

#define MAX_AGENTS 16

SHIM_EXPORT jint JNICALL Java_org_dlbridge_interop_JavaHost_runMatrix(JNIEnv* env, jclass cls,
                                                                     jobjectArray paths,
                                                                     jboolean self_test) {
  const interop_agent* agents[MAX_AGENTS];
  jsize n = (*env)->GetArrayLength(env, paths), i;
  int count = 0;
  (void)cls;
  agents[count] = interop_agent_get();
  if (agents[count++] == NULL) {
    fprintf(stderr, "the Java agent did not start\n");
    return 1;
  }
  for (i = 0; i < n && count < MAX_AGENTS; ++i) {
    jstring p = (jstring)(*env)->GetObjectArrayElement(env, paths, i);
    const char* s = (*env)->GetStringUTFChars(env, p, NULL);
    agents[count] = interop_load_agent(s);
    (*env)->ReleaseStringUTFChars(env, p, s);
    if (agents[count++] == NULL) return 1;
  }
  return interop_run_matrix(agents, count, "java", "java", self_test ? 1 : 0);
}
