/* test_jni_native.c - drives the JNI library (libdlbridge_jni: SWIG's wrappers over dlbridge.i,
 * typemaps_java.i and java_memory.i, with the shared release engine) without a JVM, through a
 * fake JNIEnv that implements only the functions the wrappers call. It checks statuses, the
 * exception each failure raises (class, status, message verbatim), array conversions, pinned
 * arrays (released on every path, no JNI call while one is held) and ownership (the live count
 * returns to its start; a wrapped buffer's token comes back exactly once: from the free that
 * released it, or drained after a release on a foreign thread).
 * Built and run by Meson in suites `java` and `jni`; scripts/test.sh runs suite `jni` under
 * ASan+UBSan, valgrind and TSan. Prints "N passed, N failed" last. */
#define _POSIX_C_SOURCE 200809L /* strdup in C99 */
#include <jni.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlbridge/dlbridge.h"

/* ---- the fake JVM objects ------------------------------------------------------------------ */
enum kind { K_ARRAY, K_STRING, K_CLASS, K_BUFFER, K_EXCEPTION };

typedef struct fake {
  enum kind kind;
  jsize length; /* elements of an array, capacity of a buffer */
  size_t elem;  /* bytes per array element */
  void* data;   /* array elements, string bytes, class name, buffer address */
  int32_t status;
  char* message;
  struct fake* next_alloc;
} fake;

static fake* g_objects = NULL; /* every fake object, freed at the end */
static fake* g_pending = NULL; /* the pending exception */
static char g_pending_class[128];
/* Arrays pinned by GetPrimitiveArrayCritical and not yet released: no other JNI call may be
 * made meanwhile, and every pin must be released. */
static int g_critical = 0;

#define NO_CRITICAL() \
  do {                \
    if (g_critical) { \
      fprintf(stderr, "a JNI call inside a critical region\n"); \
      abort();        \
    }                 \
  } while (0)

static fake* new_fake(enum kind kind, jsize length, size_t elem) {
  fake* f = (fake*)calloc(1, sizeof *f);
  f->kind = kind;
  f->length = length;
  f->elem = elem;
  if (elem > 0) f->data = calloc((size_t)(length > 0 ? length : 1), elem);
  f->next_alloc = g_objects;
  g_objects = f;
  return f;
}

static void free_fakes(void) {
  while (g_objects != NULL) {
    fake* f = g_objects;
    g_objects = f->next_alloc;
    if (f->kind != K_BUFFER) free(f->data);
    free(f->message);
    free(f);
  }
}

static jarray array(jsize n, size_t elem, const void* values) {
  fake* f = new_fake(K_ARRAY, n, elem);
  if (n > 0 && values != NULL) memcpy(f->data, values, (size_t)n * elem);
  return (jarray)f;
}
static jlongArray longs(jsize n, const int64_t* values) {
  return (jlongArray)array(n, sizeof(int64_t), values);
}
static jintArray ints(jsize n, const int32_t* values) {
  return (jintArray)array(n, sizeof(int32_t), values);
}
static jfloatArray floats(jsize n, const float* values) {
  return (jfloatArray)array(n, sizeof(float), values);
}
static int64_t* longs_of(jlongArray a) { return (int64_t*)((fake*)a)->data; }
static int32_t* ints_of(jintArray a) { return (int32_t*)((fake*)a)->data; }
static float* floats_of(jfloatArray a) { return (float*)((fake*)a)->data; }
static jobject buffer(void* address, jsize capacity) {
  fake* f = new_fake(K_BUFFER, capacity, 0);
  f->data = address;
  return (jobject)f;
}

/* ---- the fake JNIEnv ----------------------------------------------------------------------- */
static jsize JNICALL f_GetArrayLength(JNIEnv* env, jarray a) {
  (void)env;
  NO_CRITICAL();
  return ((fake*)a)->length;
}
static void region(jarray a, jsize start, jsize n, size_t elem, void* buf, int get) {
  fake* f = (fake*)a;
  NO_CRITICAL();
  if (start < 0 || n < 0 || start + n > f->length || f->elem != elem) abort();
  if (get) {
    memcpy(buf, (char*)f->data + (size_t)start * elem, (size_t)n * elem);
  } else {
    memcpy((char*)f->data + (size_t)start * elem, buf, (size_t)n * elem);
  }
}
static void JNICALL f_GetLongArrayRegion(JNIEnv* env, jlongArray a, jsize s, jsize n, jlong* b) {
  (void)env;
  region(a, s, n, sizeof *b, b, 1);
}
static void JNICALL f_SetLongArrayRegion(JNIEnv* env, jlongArray a, jsize s, jsize n,
                                         const jlong* b) {
  (void)env;
  region(a, s, n, sizeof *b, (void*)(intptr_t)b, 0);
}
static void JNICALL f_GetIntArrayRegion(JNIEnv* env, jintArray a, jsize s, jsize n, jint* b) {
  (void)env;
  region(a, s, n, sizeof *b, b, 1);
}
static void JNICALL f_SetIntArrayRegion(JNIEnv* env, jintArray a, jsize s, jsize n,
                                        const jint* b) {
  (void)env;
  region(a, s, n, sizeof *b, (void*)(intptr_t)b, 0);
}
static void JNICALL f_SetByteArrayRegion(JNIEnv* env, jbyteArray a, jsize s, jsize n,
                                         const jbyte* b) {
  (void)env;
  region(a, s, n, sizeof *b, (void*)(intptr_t)b, 0);
}
static void* JNICALL f_GetPrimitiveArrayCritical(JNIEnv* env, jarray a, jboolean* copy) {
  (void)env;
  NO_CRITICAL();
  if (copy != NULL) *copy = JNI_FALSE;
  g_critical++;
  return ((fake*)a)->data;
}
static void JNICALL f_ReleasePrimitiveArrayCritical(JNIEnv* env, jarray a, void* p, jint mode) {
  (void)env;
  (void)mode;
  if (g_critical == 0 || p != ((fake*)a)->data) abort();
  g_critical--;
}

static jclass JNICALL f_FindClass(JNIEnv* env, const char* name) {
  fake* f = new_fake(K_CLASS, 0, 0);
  (void)env;
  NO_CRITICAL();
  f->data = strdup(name);
  return (jclass)f;
}
static jmethodID JNICALL f_GetMethodID(JNIEnv* env, jclass cls, const char* name,
                                       const char* sig) {
  (void)env;
  (void)cls;
  NO_CRITICAL();
  /* The one constructor the library may call: DLPackException(int, String). */
  if (strcmp(name, "<init>") != 0 || strcmp(sig, "(ILjava/lang/String;)V") != 0) abort();
  return (jmethodID)(uintptr_t)1;
}
/* java.nio.Buffer's fields, as JNI_OnLoad asks for them. */
#define FIELD_ADDRESS ((jfieldID)(uintptr_t)1)
#define FIELD_CAPACITY ((jfieldID)(uintptr_t)2)
static int g_fields_asked = 0;
static jfieldID JNICALL f_GetFieldID(JNIEnv* env, jclass cls, const char* name, const char* sig) {
  (void)env;
  NO_CRITICAL();
  g_fields_asked++;
  if (strcmp((const char*)((fake*)cls)->data, "java/nio/Buffer") != 0) abort();
  if (strcmp(name, "address") == 0 && strcmp(sig, "J") == 0) return FIELD_ADDRESS;
  if (strcmp(name, "capacity") == 0 && strcmp(sig, "I") == 0) return FIELD_CAPACITY;
  abort();
}
static int g_field_reads = 0;
static jlong JNICALL f_GetLongField(JNIEnv* env, jobject obj, jfieldID id) {
  (void)env;
  NO_CRITICAL();
  if (id != FIELD_ADDRESS || ((fake*)obj)->kind != K_BUFFER) abort();
  g_field_reads++;
  return (jlong)(intptr_t)((fake*)obj)->data;
}
static jint JNICALL f_GetIntField(JNIEnv* env, jobject obj, jfieldID id) {
  (void)env;
  NO_CRITICAL();
  if (id != FIELD_CAPACITY || ((fake*)obj)->kind != K_BUFFER) abort();
  g_field_reads++;
  return ((fake*)obj)->length;
}
static jstring JNICALL f_NewStringUTF(JNIEnv* env, const char* text) {
  fake* f = new_fake(K_STRING, (jsize)strlen(text), 0);
  (void)env;
  NO_CRITICAL();
  f->data = strdup(text);
  return (jstring)f;
}
/* Strings taken and not yet released: every wrapper must give back what it took, on every path. */
static int g_strings_held = 0;
static const char* JNICALL f_GetStringUTFChars(JNIEnv* env, jstring s, jboolean* copy) {
  (void)env;
  NO_CRITICAL();
  if (copy != NULL) *copy = JNI_FALSE;
  g_strings_held++;
  return (const char*)((fake*)s)->data;
}
static void JNICALL f_ReleaseStringUTFChars(JNIEnv* env, jstring s, const char* chars) {
  (void)env;
  (void)s;
  (void)chars;
  g_strings_held--;
}
static jobject JNICALL f_NewObject(JNIEnv* env, jclass cls, jmethodID ctor, ...) {
  va_list ap;
  fake* ex = new_fake(K_EXCEPTION, 0, 0);
  (void)env;
  (void)ctor;
  NO_CRITICAL();
  ex->data = strdup((const char*)((fake*)cls)->data);
  va_start(ap, ctor);
  ex->status = va_arg(ap, jint);
  ex->message = strdup((const char*)((fake*)va_arg(ap, jstring))->data);
  va_end(ap);
  return (jobject)ex;
}
static jint JNICALL f_Throw(JNIEnv* env, jthrowable t) {
  (void)env;
  NO_CRITICAL();
  if (g_pending != NULL) abort(); /* a second exception over a pending one */
  g_pending = (fake*)t;
  snprintf(g_pending_class, sizeof g_pending_class, "%s", (const char*)g_pending->data);
  return 0;
}
static void JNICALL f_ExceptionClear(JNIEnv* env) {
  (void)env;
  g_pending = NULL;
}
static jboolean JNICALL f_ExceptionCheck(JNIEnv* env) {
  (void)env;
  NO_CRITICAL();
  return g_pending != NULL;
}
static jobject JNICALL f_NewDirectByteBuffer(JNIEnv* env, void* address, jlong capacity) {
  (void)env;
  NO_CRITICAL();
  return buffer(address, (jsize)capacity);
}
/* The checked calls: NULL and -1 for an object that is not a direct buffer. */
static void* JNICALL f_GetDirectBufferAddress(JNIEnv* env, jobject b) {
  (void)env;
  NO_CRITICAL();
  return ((fake*)b)->kind == K_BUFFER ? ((fake*)b)->data : NULL;
}
static jlong JNICALL f_GetDirectBufferCapacity(JNIEnv* env, jobject b) {
  (void)env;
  NO_CRITICAL();
  return ((fake*)b)->kind == K_BUFFER ? ((fake*)b)->length : -1;
}

static struct JNINativeInterface_ g_functions;
static JNIEnv g_env_value = &g_functions;
static JNIEnv* const env = &g_env_value;

static jint JNICALL f_GetEnv(JavaVM* vm, void** out, jint version) {
  (void)vm;
  (void)version;
  *out = env;
  return JNI_OK;
}
static struct JNIInvokeInterface_ g_invoke;
static JavaVM g_vm_value = &g_invoke;

static void init_env(void) {
  g_functions.GetArrayLength = f_GetArrayLength;
  g_functions.GetLongArrayRegion = f_GetLongArrayRegion;
  g_functions.SetLongArrayRegion = f_SetLongArrayRegion;
  g_functions.GetIntArrayRegion = f_GetIntArrayRegion;
  g_functions.SetIntArrayRegion = f_SetIntArrayRegion;
  g_functions.SetByteArrayRegion = f_SetByteArrayRegion;
  g_functions.GetPrimitiveArrayCritical = f_GetPrimitiveArrayCritical;
  g_functions.ReleasePrimitiveArrayCritical = f_ReleasePrimitiveArrayCritical;
  g_functions.FindClass = f_FindClass;
  g_functions.GetMethodID = f_GetMethodID;
  g_functions.GetFieldID = f_GetFieldID;
  g_functions.GetLongField = f_GetLongField;
  g_functions.GetIntField = f_GetIntField;
  g_functions.NewStringUTF = f_NewStringUTF;
  g_functions.GetStringUTFChars = f_GetStringUTFChars;
  g_functions.ReleaseStringUTFChars = f_ReleaseStringUTFChars;
  g_functions.NewObject = f_NewObject;
  g_functions.Throw = f_Throw;
  g_functions.ExceptionClear = f_ExceptionClear;
  g_functions.ExceptionCheck = f_ExceptionCheck;
  g_functions.NewDirectByteBuffer = f_NewDirectByteBuffer;
  g_functions.GetDirectBufferAddress = f_GetDirectBufferAddress;
  g_functions.GetDirectBufferCapacity = f_GetDirectBufferCapacity;
  g_invoke.GetEnv = f_GetEnv;
}

/* ---- the library's entry points (SWIG's names mangle '_' as '_1') ---------------------------- */
#define SWIG_FN(name) Java_org_dlbridge_DLBridgeJNI_##name
JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM*, void*);
JNIEXPORT jstring JNICALL SWIG_FN(dlb_1status_1name)(JNIEnv*, jclass, jint);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1dtype_1parse)(JNIEnv*, jclass, jstring, jintArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1dtype_1format)(JNIEnv*, jclass, jint, jbyteArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1allocate)(JNIEnv*, jclass, jlong, jint, jlongArray,
                                                       jlongArray, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1import_1legacy)(JNIEnv*, jclass, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1export_1legacy)(JNIEnv*, jclass, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1share)(JNIEnv*, jclass, jlong, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1live_1count)(JNIEnv*, jclass);
JNIEXPORT jint JNICALL SWIG_FN(dlb_1tensor_1is_1read_1only)(JNIEnv*, jclass, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1flags)(JNIEnv*, jclass, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1element_1count)(JNIEnv*, jclass, jlong, jlongArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1byte_1size)(JNIEnv*, jclass, jlong, jlong,
                                                         jlongArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1get_1shape)(JNIEnv*, jclass, jlong, jlongArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1get_1strides)(JNIEnv*, jclass, jlong, jlongArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1slice)(JNIEnv*, jclass, jlong, jlongArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1reshape)(JNIEnv*, jclass, jlong, jlongArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1permute)(JNIEnv*, jclass, jlong, jintArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1transpose)(JNIEnv*, jclass, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1host_1data)(JNIEnv*, jclass, jlong, jint,
                                                         jlongArray, jlongArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1host_1elements)(JNIEnv*, jclass, jlong, jint, jlong,
                                                             jlongArray, jlongArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1element_1data)(JNIEnv*, jclass, jlong, jlongArray,
                                                            jint, jlongArray);
JNIEXPORT jint JNICALL SWIG_FN(dlbx_1tensor_1ndim)(JNIEnv*, jclass, jlong);
JNIEXPORT jint JNICALL SWIG_FN(dlbx_1tensor_1dtype)(JNIEnv*, jclass, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1tensor_1device)(JNIEnv*, jclass, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1tensor_1wrap)(JNIEnv*, jclass, jobject, jlongArray,
                                                    jlongArray, jlong, jint, jlong, jlong, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1tensor_1wrap_1compact)(JNIEnv*, jclass, jobject, jint, jlong,
                                                            jlong, jlong, jlong, jlong, jint, jlong,
                                                            jlong, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1tensor_1allocate_1compact)(JNIEnv*, jclass, jlong, jint, jint,
                                                                jlong, jlong, jlong, jlong, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1tensor_1free)(JNIEnv*, jclass, jlong);
JNIEXPORT jint JNICALL SWIG_FN(dlbx_1release_1drain)(JNIEnv*, jclass, jlongArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1release_1queued)(JNIEnv*, jclass);
JNIEXPORT jobject JNICALL SWIG_FN(dlbx_1java_1buffer)(JNIEnv*, jclass, jlong, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1java_1get)(JNIEnv*, jclass, jlong, jint, jlongArray,
                                                 jlongArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1java_1set)(JNIEnv*, jclass, jlong, jint, jlongArray, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1java_1to_1floats)(JNIEnv*, jclass, jlong, jint, jfloatArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1java_1from_1floats)(JNIEnv*, jclass, jlong, jint,
                                                          jfloatArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1java_1to_1ints)(JNIEnv*, jclass, jlong, jint, jintArray);
JNIEXPORT jlong JNICALL SWIG_FN(kDLFloat_1get)(JNIEnv*, jclass);
JNIEXPORT jlong JNICALL SWIG_FN(DLB_1SLICE_1NONE_1get)(JNIEnv*, jclass);
JNIEXPORT jstring JNICALL SWIG_FN(DLB_1CLOSED_1MESSAGE_1get)(JNIEnv*, jclass);

/* ---- checks -------------------------------------------------------------------------------- */
static int g_passed = 0, g_failed = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      g_passed++;                                                              \
    } else {                                                                   \
      g_failed++;                                                              \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* Nothing pending (and nothing pinned) after a call that must succeed. */
#define CHECK_OK() CHECK(g_pending == NULL && g_critical == 0)

/* The pending exception is DLPackException(status, message); clears it. */
static void check_thrown(int line, int32_t status, const char* message) {
  if (g_pending == NULL) {
    g_failed++;
    fprintf(stderr, "line %d: no exception pending\n", line);
    return;
  }
  if (strcmp(g_pending_class, "org/dlbridge/DLPackException") != 0 ||
      g_pending->status != status || strcmp(g_pending->message, message) != 0 || g_critical) {
    g_failed++;
    fprintf(stderr, "line %d: threw %s(%d, \"%s\"), expected DLPackException(%d, \"%s\")\n", line,
            g_pending_class, g_pending->status, g_pending->message, status, message);
  } else {
    g_passed++;
  }
  g_pending = NULL;
}
#define CHECK_THROWN(status, message) check_thrown(__LINE__, (status), (message))

static const jlong CPU = (jlong)kDLCPU << 32;
static jint f32(void) { return kDLFloat | (32 << 8) | (1 << 16); }
static jint i32(void) { return kDLInt | (32 << 8) | (1 << 16); }

/* ---- the SWIG wrappers of the core ---------------------------------------------------------- */
static void test_swig_calls(void) {
  const int64_t shape23[2] = {2, 3};
  const int64_t bad_shape[2] = {2, -1};
  jlongArray out2 = longs(2, NULL);
  jlongArray one = longs(1, NULL);
  jlong t, view, legacy, back;

  CHECK(SWIG_FN(kDLFloat_1get)(env, NULL) == kDLFloat);
  CHECK(SWIG_FN(DLB_1SLICE_1NONE_1get)(env, NULL) == DLB_SLICE_NONE);
  CHECK(strcmp((const char*)((fake*)SWIG_FN(DLB_1CLOSED_1MESSAGE_1get)(env, NULL))->data,
               "the tensor is closed") == 0);
  CHECK(strcmp((const char*)((fake*)SWIG_FN(dlb_1status_1name)(env, NULL, DLB_ERR_READ_ONLY))->data,
               "DLB_ERR_READ_ONLY") == 0);

  t = SWIG_FN(dlb_1tensor_1allocate)(env, NULL, CPU, f32(), longs(2, shape23), NULL, 0);
  CHECK_OK();
  CHECK(t != 0);
  CHECK(SWIG_FN(dlbx_1tensor_1ndim)(env, NULL, t) == 2);
  CHECK(SWIG_FN(dlbx_1tensor_1dtype)(env, NULL, t) == f32());
  CHECK(SWIG_FN(dlbx_1tensor_1device)(env, NULL, t) == CPU);
  CHECK(SWIG_FN(dlb_1tensor_1get_1shape)(env, NULL, t, out2) == 0);
  CHECK(longs_of(out2)[0] == 2 && longs_of(out2)[1] == 3);
  SWIG_FN(dlb_1tensor_1get_1strides)(env, NULL, t, out2);
  CHECK(longs_of(out2)[0] == 3 && longs_of(out2)[1] == 1);
  SWIG_FN(dlb_1tensor_1element_1count)(env, NULL, t, one);
  CHECK(longs_of(one)[0] == 6);
  SWIG_FN(dlb_1tensor_1byte_1size)(env, NULL, t, 0, one);
  CHECK(longs_of(one)[0] == 24);
  CHECK_OK();

  /* A capacity below ndim: the core refuses it. */
  SWIG_FN(dlb_1tensor_1get_1shape)(env, NULL, t, one);
  CHECK(g_pending != NULL && g_pending->status == DLB_ERR_INVALID_ARGUMENT);
  g_pending = NULL;
  /* An output array without room. */
  SWIG_FN(dlb_1tensor_1element_1count)(env, NULL, t, longs(0, NULL));
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "an output array needs room for one value");

  /* Strides as long as the shape, or refused before the core sees them. */
  {
    const int64_t strides[2] = {1, 2};
    jlong f = SWIG_FN(dlb_1tensor_1allocate)(env, NULL, CPU, f32(), longs(2, shape23),
                                             longs(2, strides), 0);
    CHECK_OK();
    SWIG_FN(dlb_1tensor_1get_1strides)(env, NULL, f, out2);
    CHECK(longs_of(out2)[0] == 1 && longs_of(out2)[1] == 2);
    CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, f) == 0);
    CHECK(SWIG_FN(dlb_1tensor_1allocate)(env, NULL, CPU, f32(), longs(2, shape23),
                                         longs(1, strides), 0) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "strides must have one value per extent");
  }

  /* Compact ranks 0 to 4 without a Java array (dlbridge.i's dlbx_tensor_allocate_compact, behind
   * Tensor.allocate): extents past the rank are not read; a rank it cannot carry reaches the core
   * without a shape, which refuses it. */
  {
#define ALLOCATE_COMPACT(ndim, e0, e1, e2, e3, flags)                                              \
  SWIG_FN(dlbx_1tensor_1allocate_1compact)(env, NULL, CPU, f32(), (ndim), (e0), (e1), (e2), (e3), \
                                           (flags))
    jlong c = ALLOCATE_COMPACT(2, 2, 3, 99, 99, (jlong)DLPACK_FLAG_BITMASK_READ_ONLY);
    CHECK_OK();
    CHECK(SWIG_FN(dlbx_1tensor_1ndim)(env, NULL, c) == 2);
    SWIG_FN(dlb_1tensor_1get_1strides)(env, NULL, c, out2);
    CHECK(longs_of(out2)[0] == 3 && longs_of(out2)[1] == 1);
    CHECK(SWIG_FN(dlb_1tensor_1is_1read_1only)(env, NULL, c) == 1);
    CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, c) == 0);
    c = ALLOCATE_COMPACT(0, 7, 7, 7, 7, 0);
    CHECK_OK();
    CHECK(SWIG_FN(dlbx_1tensor_1ndim)(env, NULL, c) == 0);
    CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, c) == 0);
    CHECK(ALLOCATE_COMPACT(2, 2, -3, 0, 0, 0) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "shape[1] is -3; extents must not be negative");
    CHECK(ALLOCATE_COMPACT(5, 1, 1, 1, 1, 0) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "shape is NULL but ndim is 5");
    CHECK(ALLOCATE_COMPACT(65, 1, 1, 1, 1, 0) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "ndim 65 exceeds the maximum of 64");
    CHECK(ALLOCATE_COMPACT(-1, 1, 1, 1, 1, 0) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "ndim -1 is negative");
#undef ALLOCATE_COMPACT
  }

  /* Core errors arrive verbatim, and the output handle is 0. */
  CHECK(SWIG_FN(dlb_1tensor_1allocate)(env, NULL, CPU, f32(), longs(2, bad_shape), NULL, 0) == 0);
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "shape[1] is -1; extents must not be negative");
  CHECK(SWIG_FN(dlb_1tensor_1allocate)(env, NULL, CPU, f32(), NULL, NULL, 0) == 0);
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "shape is null");
  {
    jlongArray too_long = longs(DLB_MAX_NDIM + 1, NULL);
    CHECK(SWIG_FN(dlb_1tensor_1reshape)(env, NULL, t, too_long) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "ndim 65 exceeds the maximum of 64");
  }

  /* Views: slices as triples, axes as ints, reshape. */
  {
    const int64_t triples[6] = {1, DLB_SLICE_NONE, 1, 0, 3, 2};
    jlong s = SWIG_FN(dlb_1tensor_1slice)(env, NULL, t, longs(6, triples));
    CHECK_OK();
    SWIG_FN(dlb_1tensor_1get_1shape)(env, NULL, s, out2);
    CHECK(longs_of(out2)[0] == 1 && longs_of(out2)[1] == 2);
    SWIG_FN(dlbx_1tensor_1free)(env, NULL, s);
    CHECK(SWIG_FN(dlb_1tensor_1slice)(env, NULL, t, longs(4, triples)) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "slices must be (start, stop, step) triples");
  }
  {
    const int32_t axes[2] = {1, 0};
    jlongArray data = longs(1, NULL);
    view = SWIG_FN(dlb_1tensor_1permute)(env, NULL, t, ints(2, axes));
    CHECK_OK();
    SWIG_FN(dlb_1tensor_1get_1shape)(env, NULL, view, out2);
    CHECK(longs_of(out2)[0] == 3 && longs_of(out2)[1] == 2);
    /* A view is not C-contiguous: no buffer over it. */
    SWIG_FN(dlb_1tensor_1host_1elements)(env, NULL, view, f32(), DLB_ACCESS_READ, data, one);
    CHECK_THROWN(DLB_ERR_LAYOUT, "the tensor is not C-contiguous: copy it to a contiguous tensor first");
    SWIG_FN(dlbx_1tensor_1free)(env, NULL, view);
  }
  {
    const int64_t six[1] = {6};
    view = SWIG_FN(dlb_1tensor_1reshape)(env, NULL, t, longs(1, six));
    CHECK_OK();
    SWIG_FN(dlbx_1tensor_1free)(env, NULL, view);
  }

  /* A direct buffer over host memory, as the core hands it out. */
  {
    jlongArray data = longs(1, NULL);
    fake* b;
    SWIG_FN(dlb_1tensor_1host_1elements)(env, NULL, t, f32(), DLB_ACCESS_WRITE, data, one);
    CHECK_OK();
    CHECK(longs_of(one)[0] == 6);
    b = (fake*)SWIG_FN(dlbx_1java_1buffer)(env, NULL, longs_of(data)[0], 6 * 4);
    CHECK_OK();
    CHECK(b != NULL && b->kind == K_BUFFER && b->length == 24 &&
          b->data == (void*)(intptr_t)longs_of(data)[0]);
    SWIG_FN(dlb_1tensor_1host_1elements)(env, NULL, t, i32(), DLB_ACCESS_READ, data, one);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "the tensor holds float32 elements, not int32");
    /* More than a ByteBuffer holds, or a negative size: refused, no buffer made. */
    CHECK(SWIG_FN(dlbx_1java_1buffer)(env, NULL, longs_of(data)[0], (jlong)INT32_MAX + 1) == NULL);
    CHECK_THROWN(DLB_ERR_OVERFLOW, "2147483648 bytes do not fit in a ByteBuffer (at most 2147483647)");
    CHECK(SWIG_FN(dlbx_1java_1buffer)(env, NULL, longs_of(data)[0], -1) == NULL);
    CHECK_THROWN(DLB_ERR_OVERFLOW, "-1 bytes do not fit in a ByteBuffer (at most 2147483647)");
    /* The raw bytes (dlb_tensor_host_data). */
    SWIG_FN(dlb_1tensor_1host_1data)(env, NULL, t, 1, data, one);
    CHECK_OK();
    CHECK(longs_of(one)[0] == 24);
  }

  /* Elements: one through a transposed view, written and read back; the core's checks. */
  {
    const int32_t axes[2] = {1, 0};
    const int64_t at_2_1[2] = {2, 1};
    const int64_t at_1_2[2] = {1, 2};
    const int64_t at_1[1] = {1};
    const int64_t two[1] = {2};
    jlongArray value = longs(1, NULL);
    jlongArray address = longs(1, NULL);
    jlong tt = SWIG_FN(dlb_1tensor_1permute)(env, NULL, t, ints(2, axes));
    jlong ro = SWIG_FN(dlb_1tensor_1share)(env, NULL, t, DLPACK_FLAG_BITMASK_READ_ONLY);
    CHECK_OK();
    SWIG_FN(dlbx_1java_1set)(env, NULL, tt, f32(), longs(2, at_2_1), 0x40490fdb);
    CHECK_OK();
    SWIG_FN(dlbx_1java_1get)(env, NULL, t, f32(), longs(2, at_1_2), value);
    CHECK_OK();
    CHECK(longs_of(value)[0] == 0x40490fdb);
    /* The address dlb_tensor_element_data gives is the one written. */
    SWIG_FN(dlb_1tensor_1element_1data)(env, NULL, t, longs(2, at_1_2), 0, address);
    CHECK(*(const int32_t*)(intptr_t)longs_of(address)[0] == 0x40490fdb);
    SWIG_FN(dlbx_1java_1set)(env, NULL, t, f32(), longs(2, at_1_2), -2);
    SWIG_FN(dlbx_1java_1get)(env, NULL, t, f32(), longs(2, at_1_2), value);
    CHECK(longs_of(value)[0] == -2);
    /* Each width: the dtype's bytes, sign-extended on the way out, truncated on the way in. */
    {
      const jint i8 = kDLInt | (8 << 8) | (1 << 16);
      const jint i16 = kDLInt | (16 << 8) | (1 << 16);
      const jint i64 = kDLInt | (64 << 8) | (1 << 16);
      const jint u8 = kDLUInt | (8 << 8) | (1 << 16);
      jlong b = SWIG_FN(dlb_1tensor_1allocate)(env, NULL, CPU, i8, longs(1, two), NULL, 0);
      jlong h = SWIG_FN(dlb_1tensor_1allocate)(env, NULL, CPU, i16, longs(1, two), NULL, 0);
      jlong q = SWIG_FN(dlb_1tensor_1allocate)(env, NULL, CPU, i64, longs(1, two), NULL, 0);
      jlong c128 = SWIG_FN(dlb_1tensor_1allocate)(env, NULL, CPU,
                                                  kDLComplex | (128 << 8) | (1 << 16),
                                                  longs(1, two), NULL, 0);
      CHECK_OK();
      SWIG_FN(dlbx_1java_1set)(env, NULL, b, i8, longs(1, at_1), 0x17f);
      SWIG_FN(dlbx_1java_1get)(env, NULL, b, i8, longs(1, at_1), value);
      CHECK(longs_of(value)[0] == 0x7f);
      SWIG_FN(dlbx_1java_1set)(env, NULL, b, i8, longs(1, at_1), -3);
      SWIG_FN(dlbx_1java_1get)(env, NULL, b, i8, longs(1, at_1), value);
      CHECK(longs_of(value)[0] == -3);
      SWIG_FN(dlbx_1java_1set)(env, NULL, h, i16, longs(1, at_1), 0x18000);
      SWIG_FN(dlbx_1java_1get)(env, NULL, h, i16, longs(1, at_1), value);
      CHECK(longs_of(value)[0] == -32768);
      SWIG_FN(dlbx_1java_1set)(env, NULL, q, i64, longs(1, at_1), INT64_MIN + 5);
      SWIG_FN(dlbx_1java_1get)(env, NULL, q, i64, longs(1, at_1), value);
      CHECK(longs_of(value)[0] == INT64_MIN + 5);
      CHECK_OK();
      SWIG_FN(dlbx_1java_1get)(env, NULL, b, u8, longs(1, at_1), value);
      CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "the tensor holds int8 elements, not uint8");
      SWIG_FN(dlbx_1java_1get)(env, NULL, c128, kDLComplex | (128 << 8) | (1 << 16),
                               longs(1, at_1), value);
      CHECK_THROWN(DLB_ERR_UNSUPPORTED, "elements of 16 bytes have no Java primitive type");
      SWIG_FN(dlbx_1tensor_1free)(env, NULL, b);
      SWIG_FN(dlbx_1tensor_1free)(env, NULL, h);
      SWIG_FN(dlbx_1tensor_1free)(env, NULL, q);
      SWIG_FN(dlbx_1tensor_1free)(env, NULL, c128);
    }
    /* The core's checks, in its order: the dtype (as a typed view of any layout), then the
     * index; READ_ONLY for a write. Nothing is written on a refusal. */
    longs_of(value)[0] = 77;
    SWIG_FN(dlbx_1java_1get)(env, NULL, tt, i32(), longs(1, at_1), value);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "the tensor holds float32 elements, not int32");
    SWIG_FN(dlbx_1java_1get)(env, NULL, tt, f32(), longs(1, at_1), value);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "1 indices given for a tensor with 2 dimensions");
    SWIG_FN(dlbx_1java_1get)(env, NULL, tt, f32(), longs(2, (const int64_t[]){0, 2}), value);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "index 2 is out of range for axis 1 with extent 2");
    CHECK(longs_of(value)[0] == 77);
    SWIG_FN(dlbx_1java_1set)(env, NULL, ro, f32(), longs(2, at_1_2), 1);
    CHECK_THROWN(DLB_ERR_READ_ONLY, "the tensor is read-only");
    SWIG_FN(dlbx_1java_1get)(env, NULL, ro, f32(), longs(2, at_1_2), value);
    CHECK_OK();
    CHECK(longs_of(value)[0] == -2);
    SWIG_FN(dlbx_1java_1get)(env, NULL, tt, f32(), longs(DLB_MAX_NDIM + 1, NULL), value);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "65 indices given for a tensor with 2 dimensions");
    SWIG_FN(dlbx_1java_1get)(env, NULL, tt, f32(), NULL, value);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "index is null");
    SWIG_FN(dlbx_1java_1get)(env, NULL, tt, f32(), longs(2, at_2_1), longs(0, NULL));
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "an output array needs room for one value");
    SWIG_FN(dlbx_1tensor_1free)(env, NULL, ro);
    SWIG_FN(dlbx_1tensor_1free)(env, NULL, tt);
  }

  /* dtype names: the core's. */
  {
    jbyteArray text = (jbyteArray)array(DLB_DTYPE_NAME_SIZE, 1, NULL);
    jintArray packed = ints(1, NULL);
    SWIG_FN(dlb_1dtype_1format)(env, NULL, f32(), text);
    CHECK_OK();
    CHECK(strcmp((const char*)((fake*)text)->data, "float32") == 0);
    SWIG_FN(dlb_1dtype_1parse)(env, NULL, f_NewStringUTF(env, "float8_e4m3fn"), packed);
    CHECK_OK();
    CHECK(ints_of(packed)[0] == (kDLFloat8_e4m3fn | (8 << 8) | (1 << 16)));
    SWIG_FN(dlb_1dtype_1parse)(env, NULL, f_NewStringUTF(env, "float7"), packed);
    CHECK(g_pending != NULL && g_pending->status == DLB_ERR_INVALID_ARGUMENT);
    CHECK(ints_of(packed)[0] == (kDLFloat8_e4m3fn | (8 << 8) | (1 << 16))); /* not written */
    g_pending = NULL;
    /* Refused before the call (no room for the output): the string is released all the same. */
    SWIG_FN(dlb_1dtype_1parse)(env, NULL, f_NewStringUTF(env, "float32"), ints(0, NULL));
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "an output array needs room for one value");
    {
      char long_name[300];
      memset(long_name, 'x', sizeof long_name - 1);
      long_name[sizeof long_name - 1] = '\0';
      SWIG_FN(dlb_1dtype_1parse)(env, NULL, f_NewStringUTF(env, long_name), packed);
      CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT,
                   "unknown dtype name 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'");
    }
    CHECK(g_strings_held == 0);
  }

  /* Legacy round trip: export moves the tensor, import takes it back. */
  legacy = SWIG_FN(dlb_1tensor_1export_1legacy)(env, NULL, t);
  CHECK_OK();
  CHECK(legacy != 0);
  back = SWIG_FN(dlb_1tensor_1import_1legacy)(env, NULL, legacy);
  CHECK_OK();
  /* A read-only share cannot be exported as legacy; the caller keeps it. */
  {
    jlong ro = SWIG_FN(dlb_1tensor_1share)(env, NULL, back, DLPACK_FLAG_BITMASK_READ_ONLY);
    CHECK_OK();
    CHECK(SWIG_FN(dlb_1tensor_1export_1legacy)(env, NULL, ro) == 0);
    CHECK_THROWN(DLB_ERR_READ_ONLY,
                 "cannot export a read-only tensor as a legacy DLManagedTensor, which has no "
                 "READ_ONLY flag");
    SWIG_FN(dlbx_1tensor_1free)(env, NULL, ro);
  }
  SWIG_FN(dlbx_1tensor_1free)(env, NULL, back);
}

/* ---- Java arrays in and out (java_memory.i): pinned, one core call, released on every path --- */
static void test_array_copies(void) {
  const int64_t shape23[2] = {2, 3};
  const int32_t axes[2] = {1, 0};
  const float values[6] = {0, 1, 2, 3, 4, 5};
  jlong t = SWIG_FN(dlb_1tensor_1allocate)(env, NULL, CPU, f32(), longs(2, shape23), NULL, 0);
  jlong tt = SWIG_FN(dlb_1tensor_1permute)(env, NULL, t, ints(2, axes));
  jlong ro = SWIG_FN(dlb_1tensor_1share)(env, NULL, t, DLPACK_FLAG_BITMASK_READ_ONLY);
  jfloatArray out = floats(6, NULL);
  CHECK_OK();

  CHECK(SWIG_FN(dlbx_1java_1from_1floats)(env, NULL, t, f32(), floats(6, values)) == 0);
  CHECK_OK();
  /* Any layout, C order. */
  SWIG_FN(dlbx_1java_1to_1floats)(env, NULL, tt, f32(), out);
  CHECK_OK();
  CHECK(floats_of(out)[0] == 0 && floats_of(out)[1] == 3 && floats_of(out)[2] == 1 &&
        floats_of(out)[5] == 5);
  SWIG_FN(dlbx_1java_1from_1floats)(env, NULL, tt, f32(), floats(6, values));
  CHECK_OK();
  SWIG_FN(dlbx_1java_1to_1floats)(env, NULL, t, f32(), out);
  CHECK(floats_of(out)[1] == 2 && floats_of(out)[3] == 1);

  /* The core's checks and messages; the pin is released before the exception is raised. */
  SWIG_FN(dlbx_1java_1to_1ints)(env, NULL, t, i32(), ints(6, NULL));
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "the tensor holds float32 elements, not int32");
  SWIG_FN(dlbx_1java_1from_1floats)(env, NULL, t, f32(), floats(5, values));
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT,
               "the buffer holds 20 bytes but the tensor's 6 float32 elements take 24");
  SWIG_FN(dlbx_1java_1to_1floats)(env, NULL, t, f32(), NULL);
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT,
               "the buffer holds 0 bytes but the tensor's 6 float32 elements take 24");
  SWIG_FN(dlbx_1java_1from_1floats)(env, NULL, ro, f32(), floats(6, values));
  CHECK_THROWN(DLB_ERR_READ_ONLY, "cannot copy into a read-only tensor");

  SWIG_FN(dlbx_1tensor_1free)(env, NULL, ro);
  SWIG_FN(dlbx_1tensor_1free)(env, NULL, tt);
  SWIG_FN(dlbx_1tensor_1free)(env, NULL, t);
}

/* ---- wrap with a token, free, drain --------------------------------------------------------- */
/* A foreign consumer: calls the DLPack deleter on a thread the JVM never saw. */
static void* free_on_thread(void* handle) {
  DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)handle;
  t->deleter(t);
  return NULL;
}

static jlong wrap(jobject buf, jsize ndim, const int64_t* shape, jlong offset, jint dtype,
                  jlong flags, jlong token) {
  return SWIG_FN(dlbx_1tensor_1wrap)(env, NULL, buf, longs(ndim, shape), NULL, CPU, dtype, offset,
                                     flags, token);
}

/* Wraps, frees, drains: with the checked JNI calls before JNI_OnLoad, then with the fields it
 * found. */
static void test_wrap_and_release(void) {
  static float data[6];
  const int64_t shape23[2] = {2, 3};
  const int64_t shape6[1] = {6};
  const int64_t bad[2] = {2, -3};
  jobject buf = buffer(data, (jsize)sizeof data);
  const int64_t* queued = (const int64_t*)(intptr_t)SWIG_FN(dlbx_1release_1queued)(env, NULL);
  jlongArray drained = longs(DLB_MAX_NDIM, NULL);
  jlong w, share, view;
  pthread_t th;

  CHECK(queued != NULL && *queued == 0);
  CHECK(SWIG_FN(dlbx_1release_1drain)(env, NULL, drained) == 0);

  /* A sole owner: the release runs inside the free, which hands the token back. */
  w = wrap(buf, 2, shape23, 0, f32(), 0, 5);
  CHECK_OK();
  CHECK(w != 0 && ((DLManagedTensorVersioned*)(intptr_t)w)->dl_tensor.data == (void*)data);
  CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, w) == 5);
  CHECK(*queued == 0);

  /* Shared: the release waits for the last reference, freed on a thread the JVM never saw; the
   * token is queued and drained exactly once. */
  w = wrap(buf, 1, shape6, 0, f32(), (jlong)DLPACK_FLAG_BITMASK_READ_ONLY, 7);
  CHECK_OK();
  share = SWIG_FN(dlb_1tensor_1share)(env, NULL, w, 0);
  CHECK(SWIG_FN(dlb_1tensor_1is_1read_1only)(env, NULL, share) == 1);
  CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, w) == 0);
  CHECK(pthread_create(&th, NULL, free_on_thread, (void*)(intptr_t)share) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK(*queued == 1);
  CHECK(SWIG_FN(dlbx_1release_1drain)(env, NULL, drained) == 1);
  CHECK(longs_of(drained)[0] == 7);
  CHECK(SWIG_FN(dlbx_1release_1drain)(env, NULL, drained) == 0);
  CHECK(*queued == 0);

  /* A view outlives its base: the view's free, on this thread, hands back the base's token. */
  w = wrap(buf, 2, shape23, 0, f32(), 0, 8);
  view = SWIG_FN(dlb_1tensor_1transpose)(env, NULL, w);
  CHECK_OK();
  CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, w) == 0);
  CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, view) == 8);
  CHECK(*queued == 0);

  /* Beyond the buffer: refused by the core before anything is built, with its message; no
   * token comes back, nothing is queued. */
  CHECK(wrap(buf, 2, shape23, 8, f32(), 0, 9) == 0);
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT,
               "the tensor's elements reach bytes [8, 32) of a buffer of 24 bytes");
  CHECK(*queued == 0);
  CHECK(wrap(buf, 2, bad, 0, f32(), 0, 9) == 0);
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "shape[1] is -3; extents must not be negative");
  /* The flags reach the core: uint4 padded takes a byte per element (24 fit the 24-byte
   * buffer, 25 do not), packed half a byte (48 fit). */
  {
    const jint u4 = kDLUInt | (4 << 8) | (1 << 16);
    const jlong padded = (jlong)DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
    const int64_t n24[1] = {24}, n25[1] = {25}, n48[1] = {48};
    w = wrap(buf, 1, n24, 0, u4, padded, 9);
    CHECK_OK();
    CHECK(SWIG_FN(dlb_1tensor_1flags)(env, NULL, w) == padded);
    CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, w) == 9);
    CHECK(wrap(buf, 1, n25, 0, u4, padded, 9) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT,
                 "the tensor's elements reach bytes [0, 25) of a buffer of 24 bytes");
    w = wrap(buf, 1, n48, 0, u4, 0, 9);
    CHECK_OK();
    CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, w) == 9);
  }
  /* Token 0: memory nothing needs to release; its free hands back nothing. */
  w = wrap(buf, 1, shape6, 0, f32(), 0, 0);
  CHECK_OK();
  CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, w) == 0);
  CHECK(*queued == 0);
  /* Ranks 0 to 4 without a Java array (dlbridge.i's dlbx_tensor_wrap_compact): the same call,
   * the same checks; a rank it cannot carry reaches the core without a shape. */
  {
    jlongArray out2 = longs(2, NULL);
#define WRAP_COMPACT(ndim, e0, e1, e2, e3, offset)                                           \
  SWIG_FN(dlbx_1tensor_1wrap_1compact)(env, NULL, buf, (ndim), (e0), (e1), (e2), (e3), CPU, \
                                       f32(), (offset), 0, 4)
    w = WRAP_COMPACT(2, 3, 2, 99, 99, 0);
    CHECK_OK();
    SWIG_FN(dlb_1tensor_1get_1shape)(env, NULL, w, out2);
    CHECK(longs_of(out2)[0] == 3 && longs_of(out2)[1] == 2);
    CHECK(((DLManagedTensorVersioned*)(intptr_t)w)->dl_tensor.data == (void*)data);
    CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, w) == 4);
    w = WRAP_COMPACT(0, 0, 0, 0, 0, 20);
    CHECK_OK();
    CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, w) == 4);
    CHECK(WRAP_COMPACT(2, 2, 3, 0, 0, 8) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT,
                 "the tensor's elements reach bytes [8, 32) of a buffer of 24 bytes");
    CHECK(WRAP_COMPACT(1, -6, 0, 0, 0, 0) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "shape[0] is -6; extents must not be negative");
    CHECK(WRAP_COMPACT(5, 1, 1, 1, 1, 0) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "shape is NULL but ndim is 5");
    CHECK(WRAP_COMPACT(65, 1, 1, 1, 1, 0) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "ndim 65 exceeds the maximum of 64");
#undef WRAP_COMPACT
    CHECK(*queued == 0);
  }
  /* Not a buffer, or none. */
  CHECK(wrap((jobject)longs(6, NULL), 1, shape6, 0, f32(), 0, 9) == 0);
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "the buffer is not a direct ByteBuffer");
  CHECK(wrap(NULL, 1, shape6, 0, f32(), 0, 9) == 0);
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "the buffer is null");
}

int main(void) {
  int64_t live0;
  init_env();
  live0 = SWIG_FN(dlb_1tensor_1live_1count)(env, NULL);
  test_swig_calls();
  test_array_copies();
  /* Without JNI_OnLoad: the checked GetDirectBufferAddress/Capacity. */
  test_wrap_and_release();
  CHECK(g_field_reads == 0);
  /* JNI_OnLoad finds java.nio.Buffer's fields; wraps then read them. */
  CHECK(JNI_OnLoad(&g_vm_value, NULL) == JNI_VERSION_1_8);
  CHECK(g_fields_asked == 2);
  {
    static float data[4];
    const int64_t shape4[1] = {4};
    jlong w = wrap(buffer(data, (jsize)sizeof data), 1, shape4, 0, f32(), 0, 3);
    CHECK_OK();
    CHECK(g_field_reads == 2);
    CHECK(((DLManagedTensorVersioned*)(intptr_t)w)->dl_tensor.data == (void*)data);
    CHECK(SWIG_FN(dlbx_1tensor_1free)(env, NULL, w) == 3);
    CHECK(wrap(buffer(data, (jsize)sizeof data), 1, shape4, 4, f32(), 0, 3) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT,
                 "the tensor's elements reach bytes [4, 20) of a buffer of 16 bytes");
  }
  CHECK(SWIG_FN(dlb_1tensor_1live_1count)(env, NULL) == live0);
  CHECK(g_pending == NULL && g_critical == 0);
  free_fakes();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
