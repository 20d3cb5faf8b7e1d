/* adapter_java.c - the Java adapter as a native library any host can load
 * (libdlbridge_adapter_java.so): JNI glue between C and the adapter's classes (the Java binding's
 * public API only). It exports dlpack_conformance_subject(), the adapter's one table: the
 * conformance kit's Java subject (JavaSubject; run the kit with --no-fault-guard) with the interop
 * matrix's exchange extension (JavaExchange); and JavaHost.runMatrix(), the Java host's native
 * half (the matrix's C runner, interop_runner.c, with Java as one side). In a JVM (the Java host
 * loads it with System.load) it uses that JVM; loaded by a native host or the kit's runner it
 * starts one (bindings/vmhost/jvm_host.c) with DLBRIDGE_JAVA_ADAPTER as class path and
 * DLBRIDGE_JAVA_JNI_LIB as the binding's JNI library, whose core is the only one (this links none).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dlpack/dlpack.h"
#include "dlpack_conformance.h"
#include "interop_runner.h"
#include "jvm_host.h"

#define ADAPTER_CLASS_PATH "DLBRIDGE_JAVA_ADAPTER"
#define ADAPTER_JNI_LIB "DLBRIDGE_JAVA_JNI_LIB"

static JavaVM* g_vm = NULL;

DLPC_EXPORT const dlpc_subject* dlpack_conformance_subject(void);

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  (void)reserved;
  g_vm = vm;
  return JNI_VERSION_1_8;
}

/* The JVM of this process: the one that loaded this library, the one already running, or a new
   one with the class path and the binding's JNI library from the environment. */
static JavaVM* adapter_vm(const char* who) {
  if (g_vm == NULL) g_vm = jvm_host_vm(who, ADAPTER_CLASS_PATH, ADAPTER_JNI_LIB);
  return g_vm;
}

/* ---- The interop matrix's producer (JavaExchange) and the Java host's native half (JavaHost) ---- */

#define SPEC_FIELDS 17 /* the int64_t fields of dlpc_exchange_case after its name */
/* spec_of() copies them as one array: they must follow each other with no gap. */
typedef char exchange_fields_are_contiguous
    [sizeof(dlpc_exchange_case) == offsetof(dlpc_exchange_case, dtype_code) + SPEC_FIELDS * sizeof(int64_t) ? 1 : -1];

static jclass g_exchange = NULL;
static jmethodID g_exchange_produce;

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

static jlong JNICALL first_element(JNIEnv* env, jclass cls, jlong address) {
  const DLManagedTensorVersioned* t = (const DLManagedTensorVersioned*)(intptr_t)address;
  (void)env;
  (void)cls;
  return (jlong)((uintptr_t)t->dl_tensor.data + t->dl_tensor.byte_offset);
}

static void* exchange_produce(void* ctx, const dlpc_exchange_case* c, int32_t legacy, dlpc_exchange_report* r) {
  /* The runner calls from its own thread, which stays attached. */
  JNIEnv* env = jvm_host_env(g_vm, NULL);
  jlongArray spec, out;
  jlong o[3] = {0, 0, 0};
  jstring reason;
  (void)ctx;
  memset(r, 0, sizeof *r);
  if (env == NULL) {
    r->status = -1;
    snprintf(r->message, sizeof r->message, "cannot attach to the JVM");
    return NULL;
  }
  spec = (*env)->NewLongArray(env, SPEC_FIELDS);
  if (spec != NULL) (*env)->SetLongArrayRegion(env, spec, 0, SPEC_FIELDS, (const jlong*)&c->dtype_code);
  out = (*env)->NewLongArray(env, 3);
  reason = (jstring)(*env)->CallStaticObjectMethod(env, g_exchange, g_exchange_produce, spec,
                                                   (jboolean)(legacy != 0), out);
  if ((*env)->ExceptionCheck(env)) {
    jvm_host_exception_text(env, "Java threw", r->message, sizeof r->message);
    o[1] = -1;
  } else {
    (*env)->GetLongArrayRegion(env, out, 0, 3, o);
  }
  if (reason != NULL) {
    take_text(env, reason, r->message, sizeof r->message);
    (*env)->DeleteLocalRef(env, reason);
    if (o[1] == 0) o[1] = -1;
  }
  (*env)->DeleteLocalRef(env, spec);
  (*env)->DeleteLocalRef(env, out);
  r->status = (int32_t)o[1];
  r->base = (uint64_t)o[2];
  return r->status == 0 ? (void*)(intptr_t)o[0] : NULL;
}

/* Finds JavaExchange and gives it its native method; 0 or -1 (described on stderr). */
static int exchange_start(JNIEnv* env) {
  JNINativeMethod natives[1];
  jclass cls = jvm_host_class(env, "org/dlbridge/conformance/JavaExchange");
  if (cls == NULL) return -1;
  natives[0].name = (char*)"firstElement";
  natives[0].signature = (char*)"(J)J";
  {
    /* JNI's fnPtr is a void*; ISO C has no cast from a function pointer to it. */
    jlong(JNICALL * fn)(JNIEnv*, jclass, jlong) = first_element;
    memcpy(&natives[0].fnPtr, &fn, sizeof natives[0].fnPtr);
  }
  if ((*env)->RegisterNatives(env, cls, natives, 1) != 0) return -1;
  g_exchange_produce = (*env)->GetStaticMethodID(env, cls, "produce", "([JZ[J)Ljava/lang/String;");
  if (g_exchange_produce == NULL) {
    (*env)->ExceptionDescribe(env);
    (*env)->ExceptionClear(env);
    return -1;
  }
  g_exchange = cls;
  return 0;
}

#define MAX_SUBJECTS 16

JNIEXPORT jint JNICALL Java_org_dlbridge_interop_JavaHost_runMatrix(JNIEnv* env, jclass cls,
                                                                     jobjectArray paths,
                                                                     jboolean self_test) {
  const dlpc_subject* subjects[MAX_SUBJECTS];
  jsize n = (*env)->GetArrayLength(env, paths), i;
  int count = 0;
  (void)cls;
  subjects[count] = interop_check_subject(dlpack_conformance_subject(), "the Java adapter");
  if (subjects[count++] == NULL) return 1;
  for (i = 0; i < n && count < MAX_SUBJECTS; ++i) {
    jstring p = (jstring)(*env)->GetObjectArrayElement(env, paths, i);
    const char* s = (*env)->GetStringUTFChars(env, p, NULL);
    subjects[count] = interop_load_subject(s);
    (*env)->ReleaseStringUTFChars(env, p, s);
    if (subjects[count++] == NULL) return 1;
  }
  return interop_run_matrix(subjects, count, "java", "java", self_test ? 1 : 0);
}

/* ---- The conformance kit's subject (JavaSubject) and the one table ---- */

/* JavaSubject.consume's numbers[]: ndim, writable, values size, address, shape, strides. */
enum { N_NDIM, N_WRITABLE, N_VALUES_SIZE, N_ADDRESS, N_SHAPE, N_STRIDES = N_SHAPE + DLPC_MAX_NDIM,
       N_COUNT = N_STRIDES + DLPC_MAX_NDIM };

/* JavaSubject's produce and consume; a consumed tensor's Tensor.close(); DLBridge.liveCount(). */
static jclass g_subject = NULL, g_string = NULL, g_object = NULL, g_dlbridge = NULL;
static jmethodID g_subject_produce, g_subject_consume, g_tensor_close, g_live_count;

static jlongArray long_array(JNIEnv* env, jsize n, const int64_t* values) {
  jlongArray a = (*env)->NewLongArray(env, n);
  if (a != NULL && values != NULL && n > 0) (*env)->SetLongArrayRegion(env, a, 0, n, (const jlong*)values);
  return a;
}

static int subject_produce(const dlpc_case_spec* spec, int legacy, void** out, char* message, size_t size) {
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
    rc = (*env)->CallStaticIntMethod(env, g_subject, g_subject_produce, (jint)spec->dtype.code,
                                     (jint)spec->dtype.bits, (jint)spec->dtype.lanes, shape, strides,
                                     (jlong)spec->offset_elements, (jlong)spec->flags, values,
                                     (jboolean)(legacy != 0), result, why);
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

static int subject_produce_versioned(void* ctx, const dlpc_case_spec* spec, DLManagedTensorVersioned** out,
                             char* message, size_t size) {
  void* t = NULL;
  int rc = subject_produce(spec, 0, &t, message, size);
  (void)ctx;
  *out = (DLManagedTensorVersioned*)t;
  return rc;
}

static int subject_produce_legacy(void* ctx, const dlpc_case_spec* spec, DLManagedTensor** out, char* message,
                          size_t size) {
  void* t = NULL;
  int rc = subject_produce(spec, 1, &t, message, size);
  (void)ctx;
  *out = (DLManagedTensor*)t;
  return rc;
}

/* The report of an accepted tensor, from what JavaSubject.consume read through the binding. */
static void subject_fill_report(JNIEnv* env, const jlong* n, jobject tensor, dlpc_consume_report* report) {
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

static int subject_consume(void* tensor, int legacy, dlpc_consume_report* report) {
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
    rc = (*env)->CallStaticIntMethod(env, g_subject, g_subject_consume, (jlong)(intptr_t)tensor,
                                     (jboolean)(legacy != 0), values, numbers, objects);
    if ((*env)->ExceptionCheck(env)) {
      jvm_host_exception_text(env, "JavaSubject.consume threw", report->message, sizeof report->message);
      rc = DLPC_ERROR;
    } else if (rc == DLPC_OK) {
      (*env)->GetLongArrayRegion(env, numbers, 0, N_COUNT, n);
      subject_fill_report(env, n, (*env)->GetObjectArrayElement(env, objects, 0), report);
    } else {
      take_text(env, (*env)->GetObjectArrayElement(env, objects, 1), report->message, sizeof report->message);
    }
  }
  (*env)->PopLocalFrame(env, NULL);
  jvm_host_detach(g_vm, attached);
  return (int)rc;
}

static int subject_consume_versioned(void* ctx, DLManagedTensorVersioned* tensor,
                                     dlpc_consume_report* report) {
  (void)ctx;
  return subject_consume(tensor, 0, report);
}

static int subject_consume_legacy(void* ctx, DLManagedTensor* tensor, dlpc_consume_report* report) {
  (void)ctx;
  return subject_consume(tensor, 1, report);
}

/* May run on a thread the JVM has not seen (the kit's): attached for the call only. */
static void subject_release(void* ctx, void* handle) {
  int attached = 0;
  JNIEnv* env = jvm_host_env(g_vm, &attached);
  (void)ctx;
  if (env == NULL) {
    fprintf(stderr, "java subject: cannot attach to the JVM to release a tensor\n");
    return;
  }
  (*env)->CallVoidMethod(env, (jobject)handle, g_tensor_close);
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionDescribe(env);
    (*env)->ExceptionClear(env);
  }
  (*env)->DeleteGlobalRef(env, (jobject)handle);
  jvm_host_detach(g_vm, attached);
}

static int64_t subject_live_count(void* ctx) {
  (void)ctx;
  return (int64_t)jvm_host_static_long(g_vm, g_dlbridge, g_live_count);
}

DLPC_EXPORT const dlpc_subject* dlpack_conformance_subject(void) {
  static const dlpc_subject subject = {
    sizeof(dlpc_subject), DLPC_CONTRACT_VERSION, "dlbridge Java binding", NULL,
    subject_produce_versioned, subject_produce_legacy, subject_consume_versioned, subject_consume_legacy,
    subject_release, subject_live_count, "java", exchange_produce, NULL,
  };
  JNIEnv* env;
  jclass tensor;
  if (g_subject != NULL) return &subject;
  if (adapter_vm("java subject") == NULL) return NULL;
  env = jvm_host_env(g_vm, NULL);
  if (env == NULL) return NULL;
  g_string = jvm_host_class(env, "java/lang/String");
  g_object = jvm_host_class(env, "java/lang/Object");
  g_dlbridge = jvm_host_class(env, "org/dlbridge/DLBridge");
  tensor = jvm_host_class(env, "org/dlbridge/Tensor");
  g_subject = jvm_host_class(env, "org/dlbridge/conformance/JavaSubject");
  if (g_string == NULL || g_object == NULL || g_dlbridge == NULL || tensor == NULL ||
      g_subject == NULL) {
    return NULL;
  }
  g_subject_produce = (*env)->GetStaticMethodID(env, g_subject, "produce",
                                                "(III[J[JJJLjava/nio/ByteBuffer;Z[J[Ljava/lang/String;)I");
  g_subject_consume = (*env)->GetStaticMethodID(env, g_subject, "consume",
                                                "(JZLjava/nio/ByteBuffer;[J[Ljava/lang/Object;)I");
  g_tensor_close = (*env)->GetMethodID(env, tensor, "close", "()V");
  g_live_count = (*env)->GetStaticMethodID(env, g_dlbridge, "liveCount", "()J");
  if (g_subject_produce == NULL || g_subject_consume == NULL || g_tensor_close == NULL ||
      g_live_count == NULL || exchange_start(env) != 0) {
    (*env)->ExceptionDescribe(env);
    (*env)->ExceptionClear(env);
    g_subject = NULL;
    return NULL;
  }
  return &subject;
}
