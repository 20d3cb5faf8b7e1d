/* dlbridge's Java binding as a DLPack conformance subject: a JNI shim that exports
 * dlpack_conformance_subject() and forwards each entry point to
 * org.dlbridge.conformance.JavaSubject, written with the binding's public API. Loaded by the
 * runner (dlpack-conformance --no-fault-guard), it starts a JVM (tests/vmhost/jvm_host.c) whose
 * class path and dlbridge JNI library come from DLPC_JAVA_CLASSPATH and DLPC_JAVA_JNI_LIB.
 * It links no dlbridge core: Java's is inside the binding's JNI library, so the live count is
 * the Java binding's own. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dlpack_conformance.h"
#include "jvm_host.h"

/* JavaSubject.consume's numbers[]: ndim, writable, values size, address, shape, strides. */
enum { N_NDIM, N_WRITABLE, N_VALUES_SIZE, N_ADDRESS, N_SHAPE, N_STRIDES = N_SHAPE + DLPC_MAX_NDIM,
       N_COUNT = N_STRIDES + DLPC_MAX_NDIM };

static JavaVM* g_vm = NULL;
static jclass g_subject = NULL, g_string = NULL, g_object = NULL;
static jmethodID g_produce, g_consume, g_release, g_live;

/* Copies a Java String (may be NULL) into msg. */
static void take_text(JNIEnv* env, jobject text, char* msg, size_t size) {
  const char* s;
  if (text == NULL) return;
  s = (*env)->GetStringUTFChars(env, (jstring)text, NULL);
  if (s != NULL) {
    snprintf(msg, size, "%s", s);
    (*env)->ReleaseStringUTFChars(env, (jstring)text, s);
  }
}

static jlongArray long_array(JNIEnv* env, jsize n, const int64_t* values) {
  jlongArray a = (*env)->NewLongArray(env, n);
  if (a != NULL && values != NULL && n > 0) (*env)->SetLongArrayRegion(env, a, 0, n, (const jlong*)values);
  return a;
}

static int produce(const dlpc_case_spec* spec, int legacy, void** out, char* message, size_t size) {
  int attached = 0;
  JNIEnv* env = jvm_host_env(g_vm, &attached);
  jint rc;
  if (env == NULL) {
    snprintf(message, size, "cannot attach to the JVM");
    return DLPC_ERROR;
  }
  if ((*env)->PushLocalFrame(env, 16) != 0) {
    jvm_host_exception_text(env, "PushLocalFrame failed", message, size);
    jvm_host_detach(g_vm, attached);
    return DLPC_ERROR;
  }
  {
    jlongArray shape = long_array(env, spec->ndim, spec->shape);
    jlongArray strides = spec->strides != NULL ? long_array(env, spec->ndim, spec->strides) : NULL;
    /* The kit's values, valid for this call: a direct buffer over them (the subject wraps it
       read-only and copies out of it before returning). */
    jobject values = spec->values_size > 0
                         ? (*env)->NewDirectByteBuffer(env, (void*)spec->values, (jlong)spec->values_size)
                         : NULL;
    jlongArray result = (*env)->NewLongArray(env, 1);
    jobjectArray why = (*env)->NewObjectArray(env, 1, g_string, NULL);
    jlong address = 0;
    rc = (*env)->CallStaticIntMethod(env, g_subject, g_produce, (jint)spec->dtype.code, (jint)spec->dtype.bits,
                                     (jint)spec->dtype.lanes, shape, strides, (jlong)spec->offset_elements,
                                     (jlong)spec->flags, values, (jboolean)(legacy != 0), result, why);
    if ((*env)->ExceptionCheck(env)) {
      jvm_host_exception_text(env, "JavaSubject.produce threw", message, size);
      rc = DLPC_ERROR;
    } else if (rc == DLPC_OK) {
      (*env)->GetLongArrayRegion(env, result, 0, 1, &address);
      *out = (void*)(intptr_t)address;
    } else {
      take_text(env, (*env)->GetObjectArrayElement(env, why, 0), message, size);
    }
  }
  (*env)->PopLocalFrame(env, NULL);
  jvm_host_detach(g_vm, attached);
  return (int)rc;
}

static int produce_versioned(void* ctx, const dlpc_case_spec* spec, DLManagedTensorVersioned** out,
                             char* message, size_t size) {
  void* t = NULL;
  int rc = produce(spec, 0, &t, message, size);
  (void)ctx;
  *out = (DLManagedTensorVersioned*)t;
  return rc;
}

static int produce_legacy(void* ctx, const dlpc_case_spec* spec, DLManagedTensor** out, char* message,
                          size_t size) {
  void* t = NULL;
  int rc = produce(spec, 1, &t, message, size);
  (void)ctx;
  *out = (DLManagedTensor*)t;
  return rc;
}

/* The report of an accepted tensor, from what JavaSubject.consume read through the binding. */
static void fill_report(JNIEnv* env, const jlong* n, jobject tensor, dlpc_consume_report* report) {
  const DLManagedTensorVersioned* imported = (const DLManagedTensorVersioned*)(intptr_t)n[N_ADDRESS];
  int64_t count = 1;
  int32_t d;
  report->handle = (*env)->NewGlobalRef(env, tensor);
  report->ndim = (int32_t)n[N_NDIM];
  for (d = 0; d < report->ndim; ++d) {
    report->shape[d] = n[N_SHAPE + d];
    report->strides[d] = n[N_STRIDES + d];
    count *= report->shape[d];
  }
  report->strides_known = 1;
  report->writable = (int32_t)n[N_WRITABLE];
  report->values_size = n[N_VALUES_SIZE] < 0 ? UINT64_MAX : (uint64_t)n[N_VALUES_SIZE];
  /* Element 0 of the binding's tensor (Tensor.address(), its DLManagedTensorVersioned). */
  report->first_element =
      count > 0 ? (const char*)imported->dl_tensor.data + imported->dl_tensor.byte_offset : NULL;
}

static int consume(void* tensor, int legacy, dlpc_consume_report* report) {
  int attached = 0;
  JNIEnv* env = jvm_host_env(g_vm, &attached);
  jint rc;
  if (env == NULL) {
    /* Ownership moved here: the tensor is lost with the JVM. */
    snprintf(report->message, sizeof report->message, "cannot attach to the JVM");
    return DLPC_ERROR;
  }
  if ((*env)->PushLocalFrame(env, 16) != 0) {
    jvm_host_exception_text(env, "PushLocalFrame failed", report->message, sizeof report->message);
    jvm_host_detach(g_vm, attached);
    return DLPC_ERROR;
  }
  {
    jobject values = (*env)->NewDirectByteBuffer(env, report->values, (jlong)report->values_capacity);
    jlongArray numbers = (*env)->NewLongArray(env, N_COUNT);
    jobjectArray objects = (*env)->NewObjectArray(env, 2, g_object, NULL);
    jlong n[N_COUNT];
    rc = (*env)->CallStaticIntMethod(env, g_subject, g_consume, (jlong)(intptr_t)tensor, (jboolean)(legacy != 0),
                                     values, numbers, objects);
    if ((*env)->ExceptionCheck(env)) {
      jvm_host_exception_text(env, "JavaSubject.consume threw", report->message, sizeof report->message);
      rc = DLPC_ERROR;
    } else if (rc == DLPC_OK) {
      (*env)->GetLongArrayRegion(env, numbers, 0, N_COUNT, n);
      fill_report(env, n, (*env)->GetObjectArrayElement(env, objects, 0), report);
    } else {
      take_text(env, (*env)->GetObjectArrayElement(env, objects, 1), report->message, sizeof report->message);
    }
  }
  (*env)->PopLocalFrame(env, NULL);
  jvm_host_detach(g_vm, attached);
  return (int)rc;
}

static int consume_versioned(void* ctx, DLManagedTensorVersioned* tensor, dlpc_consume_report* report) {
  (void)ctx;
  return consume(tensor, 0, report);
}

static int consume_legacy(void* ctx, DLManagedTensor* tensor, dlpc_consume_report* report) {
  (void)ctx;
  return consume(tensor, 1, report);
}

/* May run on a thread the JVM has not seen (the kit's): attached for the call only. */
static void release(void* ctx, void* handle) {
  int attached = 0;
  JNIEnv* env = jvm_host_env(g_vm, &attached);
  (void)ctx;
  if (env == NULL) {
    fprintf(stderr, "java subject: cannot attach to the JVM to release a tensor\n");
    return;
  }
  (*env)->CallStaticVoidMethod(env, g_subject, g_release, (jobject)handle);
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionDescribe(env);
    (*env)->ExceptionClear(env);
  }
  (*env)->DeleteGlobalRef(env, (jobject)handle);
  jvm_host_detach(g_vm, attached);
}

static int64_t live_count(void* ctx) {
  (void)ctx;
  return (int64_t)jvm_host_static_long(g_vm, g_subject, g_live);
}

DLPC_EXPORT const dlpc_subject* dlpack_conformance_subject(void) {
  static const dlpc_subject subject = {
    sizeof(dlpc_subject), DLPC_CONTRACT_VERSION, "dlbridge Java binding", NULL,
    produce_versioned, produce_legacy, consume_versioned, consume_legacy, release, live_count,
  };
  JNIEnv* env;
  if (g_subject != NULL) return &subject;
  g_vm = jvm_host_vm("java subject", "DLPC_JAVA_CLASSPATH", "DLPC_JAVA_JNI_LIB");
  if (g_vm == NULL) return NULL;
  env = jvm_host_env(g_vm, NULL);
  if (env == NULL) return NULL;
  g_string = jvm_host_class(env, "java/lang/String");
  g_object = jvm_host_class(env, "java/lang/Object");
  g_subject = jvm_host_class(env, "org/dlbridge/conformance/JavaSubject");
  if (g_string == NULL || g_object == NULL || g_subject == NULL) return NULL;
  g_produce = (*env)->GetStaticMethodID(env, g_subject, "produce",
                                        "(III[J[JJJLjava/nio/ByteBuffer;Z[J[Ljava/lang/String;)I");
  g_consume = (*env)->GetStaticMethodID(env, g_subject, "consume",
                                        "(JZLjava/nio/ByteBuffer;[J[Ljava/lang/Object;)I");
  g_release = (*env)->GetStaticMethodID(env, g_subject, "release", "(Lorg/dlbridge/Tensor;)V");
  g_live = (*env)->GetStaticMethodID(env, g_subject, "liveCount", "()J");
  if (g_produce == NULL || g_consume == NULL || g_release == NULL || g_live == NULL) {
    (*env)->ExceptionDescribe(env);
    (*env)->ExceptionClear(env);
    g_subject = NULL;
    return NULL;
  }
  return &subject;
}
