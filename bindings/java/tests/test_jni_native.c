/* test_jni_native.c - drives the JNI library (libdlbridge_jni: SWIG's wrappers and the
 * hand-written dlbridge_jni.c) without a JVM, through a fake JNIEnv that implements only the
 * functions the wrappers call. It checks statuses, the exception each failure raises (class,
 * status, message verbatim), array conversions and ownership (the live count returns to its
 * start; a wrapped buffer's release is reported exactly once, also from a foreign thread).
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
enum kind { K_LONGS, K_INTS, K_BYTES, K_STRING, K_CLASS, K_BUFFER, K_EXCEPTION };

typedef struct fake {
  enum kind kind;
  jsize length; /* elements of an array, capacity of a buffer */
  void* data;   /* array elements, string bytes, class name, buffer address */
  int32_t status;
  char* message;
  struct fake* next_alloc;
} fake;

static fake* g_objects = NULL; /* every fake object, freed at the end */
static fake* g_pending = NULL; /* the pending exception */
static char g_pending_class[128];

static fake* new_fake(enum kind kind, jsize length, size_t elem) {
  fake* f = (fake*)calloc(1, sizeof *f);
  f->kind = kind;
  f->length = length;
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

static jlongArray longs(jsize n, const int64_t* values) {
  fake* f = new_fake(K_LONGS, n, sizeof(int64_t));
  if (n > 0 && values != NULL) memcpy(f->data, values, (size_t)n * sizeof(int64_t));
  return (jlongArray)f;
}
static jintArray ints(jsize n, const int32_t* values) {
  fake* f = new_fake(K_INTS, n, sizeof(int32_t));
  if (n > 0 && values != NULL) memcpy(f->data, values, (size_t)n * sizeof(int32_t));
  return (jintArray)f;
}
static int64_t* longs_of(jlongArray a) { return (int64_t*)((fake*)a)->data; }
static int32_t* ints_of(jintArray a) { return (int32_t*)((fake*)a)->data; }
static jobject buffer(void* address, jsize capacity) {
  fake* f = new_fake(K_BUFFER, capacity, 0);
  f->data = address;
  return (jobject)f;
}

/* ---- the fake JNIEnv ----------------------------------------------------------------------- */
static jsize JNICALL f_GetArrayLength(JNIEnv* env, jarray a) {
  (void)env;
  return ((fake*)a)->length;
}
#define REGION(NAME, JTYPE, ARRAY, GET)                                                     \
  static void JNICALL f_##NAME(JNIEnv* env, ARRAY a, jsize start, jsize n, GET JTYPE* buf) { \
    (void)env;                                                                              \
    if (start < 0 || n < 0 || start + n > ((fake*)a)->length) abort();                      \
    REGION_COPY                                                                             \
  }
#define REGION_COPY memcpy(buf, (JTYPE_PTR)((fake*)a)->data + start, (size_t)n * sizeof *buf);
#define JTYPE_PTR jlong*
REGION(GetLongArrayRegion, jlong, jlongArray, )
#undef JTYPE_PTR
#define JTYPE_PTR jint*
REGION(GetIntArrayRegion, jint, jintArray, )
#undef JTYPE_PTR
#undef REGION_COPY
#define REGION_COPY memcpy((JTYPE_PTR)((fake*)a)->data + start, buf, (size_t)n * sizeof *buf);
#define JTYPE_PTR jlong*
REGION(SetLongArrayRegion, jlong, jlongArray, const)
#undef JTYPE_PTR
#define JTYPE_PTR jint*
REGION(SetIntArrayRegion, jint, jintArray, const)
#undef JTYPE_PTR
#define JTYPE_PTR jbyte*
REGION(SetByteArrayRegion, jbyte, jbyteArray, const)
#undef JTYPE_PTR

static jclass JNICALL f_FindClass(JNIEnv* env, const char* name) {
  fake* f = new_fake(K_CLASS, 0, 0);
  (void)env;
  f->data = strdup(name);
  return (jclass)f;
}
static jmethodID JNICALL f_GetMethodID(JNIEnv* env, jclass cls, const char* name,
                                       const char* sig) {
  (void)env;
  (void)cls;
  /* The one constructor the library may call: DLPackException(int, String). */
  if (strcmp(name, "<init>") != 0 || strcmp(sig, "(ILjava/lang/String;)V") != 0) abort();
  return (jmethodID)(uintptr_t)1;
}
static jstring JNICALL f_NewStringUTF(JNIEnv* env, const char* text) {
  fake* f = new_fake(K_STRING, (jsize)strlen(text), 0);
  (void)env;
  f->data = strdup(text);
  return (jstring)f;
}
/* Strings taken and not yet released: every wrapper must give back what it took, on every path. */
static int g_strings_held = 0;
static const char* JNICALL f_GetStringUTFChars(JNIEnv* env, jstring s, jboolean* copy) {
  (void)env;
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
  ex->data = strdup((const char*)((fake*)cls)->data);
  va_start(ap, ctor);
  ex->status = va_arg(ap, jint);
  ex->message = strdup((const char*)((fake*)va_arg(ap, jstring))->data);
  va_end(ap);
  return (jobject)ex;
}
static jint JNICALL f_Throw(JNIEnv* env, jthrowable t) {
  (void)env;
  if (g_pending != NULL) abort(); /* a second exception over a pending one */
  g_pending = (fake*)t;
  snprintf(g_pending_class, sizeof g_pending_class, "%s", (const char*)g_pending->data);
  return 0;
}
static jint JNICALL f_ThrowNew(JNIEnv* env, jclass cls, const char* message) {
  fake* ex = new_fake(K_EXCEPTION, 0, 0);
  ex->data = strdup((const char*)((fake*)cls)->data);
  ex->status = -1;
  ex->message = strdup(message);
  return f_Throw(env, (jthrowable)ex);
}
static void JNICALL f_ExceptionClear(JNIEnv* env) {
  (void)env;
  g_pending = NULL;
}
static jboolean JNICALL f_ExceptionCheck(JNIEnv* env) {
  (void)env;
  return g_pending != NULL;
}
static jobject JNICALL f_NewDirectByteBuffer(JNIEnv* env, void* address, jlong capacity) {
  (void)env;
  return buffer(address, (jsize)capacity);
}
static void* JNICALL f_GetDirectBufferAddress(JNIEnv* env, jobject b) {
  (void)env;
  return ((fake*)b)->data;
}
static jlong JNICALL f_GetDirectBufferCapacity(JNIEnv* env, jobject b) {
  (void)env;
  return ((fake*)b)->length;
}

static struct JNINativeInterface_ g_functions;
static JNIEnv g_env_value = &g_functions;
static JNIEnv* const env = &g_env_value;

static void init_env(void) {
  g_functions.GetArrayLength = f_GetArrayLength;
  g_functions.GetLongArrayRegion = f_GetLongArrayRegion;
  g_functions.SetLongArrayRegion = f_SetLongArrayRegion;
  g_functions.GetIntArrayRegion = f_GetIntArrayRegion;
  g_functions.SetIntArrayRegion = f_SetIntArrayRegion;
  g_functions.SetByteArrayRegion = f_SetByteArrayRegion;
  g_functions.FindClass = f_FindClass;
  g_functions.GetMethodID = f_GetMethodID;
  g_functions.NewStringUTF = f_NewStringUTF;
  g_functions.GetStringUTFChars = f_GetStringUTFChars;
  g_functions.ReleaseStringUTFChars = f_ReleaseStringUTFChars;
  g_functions.NewObject = f_NewObject;
  g_functions.Throw = f_Throw;
  g_functions.ThrowNew = f_ThrowNew;
  g_functions.ExceptionClear = f_ExceptionClear;
  g_functions.ExceptionCheck = f_ExceptionCheck;
  g_functions.NewDirectByteBuffer = f_NewDirectByteBuffer;
  g_functions.GetDirectBufferAddress = f_GetDirectBufferAddress;
  g_functions.GetDirectBufferCapacity = f_GetDirectBufferCapacity;
}

/* ---- the library's entry points (SWIG's names mangle '_' as '_1') ---------------------------- */
#define SWIG_FN(name) Java_org_dlbridge_DLBridgeJNI_##name
JNIEXPORT jstring JNICALL SWIG_FN(dlb_1status_1name)(JNIEnv*, jclass, jint);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1dtype_1parse)(JNIEnv*, jclass, jstring, jintArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1dtype_1format)(JNIEnv*, jclass, jint, jbyteArray);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1allocate)(JNIEnv*, jclass, jlong, jint, jlongArray,
                                                       jlongArray, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1import_1legacy)(JNIEnv*, jclass, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1export_1legacy)(JNIEnv*, jclass, jlong);
JNIEXPORT void JNICALL SWIG_FN(dlb_1tensor_1free)(JNIEnv*, jclass, jlong);
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
JNIEXPORT jlong JNICALL SWIG_FN(dlb_1tensor_1copy)(JNIEnv*, jclass, jlong, jlong);
JNIEXPORT jint JNICALL SWIG_FN(dlbx_1tensor_1ndim)(JNIEnv*, jclass, jlong);
JNIEXPORT jint JNICALL SWIG_FN(dlbx_1tensor_1dtype)(JNIEnv*, jclass, jlong);
JNIEXPORT jlong JNICALL SWIG_FN(dlbx_1tensor_1device)(JNIEnv*, jclass, jlong);
JNIEXPORT jint JNICALL SWIG_FN(kDLFloat_1get)(JNIEnv*, jclass);
JNIEXPORT jlong JNICALL SWIG_FN(DLB_1SLICE_1NONE_1get)(JNIEnv*, jclass);

#define HAND_FN(name) Java_org_dlbridge_NativeSupport_##name
JNIEXPORT jlong JNICALL HAND_FN(wrapDirect)(JNIEnv*, jclass, jint, jobject, jlong, jlong, jint,
                                            jlongArray, jlong);
JNIEXPORT jlong JNICALL HAND_FN(wrapDirect4)(JNIEnv*, jclass, jint, jobject, jlong, jlong, jint,
                                             jint, jlong, jlong, jlong, jlong, jlong);
JNIEXPORT jint JNICALL HAND_FN(free)(JNIEnv*, jclass, jlong);
JNIEXPORT jint JNICALL HAND_FN(takeReleased)(JNIEnv*, jclass);
JNIEXPORT jobject JNICALL HAND_FN(slotSegment)(JNIEnv*, jclass, jint);
JNIEXPORT jobject JNICALL HAND_FN(byteView)(JNIEnv*, jclass, jlong, jboolean);
JNIEXPORT jlong JNICALL HAND_FN(elementGet)(JNIEnv*, jclass, jlong, jlongArray, jint);
JNIEXPORT void JNICALL HAND_FN(elementSet)(JNIEnv*, jclass, jlong, jlongArray, jint, jlong);
JNIEXPORT jlong JNICALL HAND_FN(releasedBufferCount)(JNIEnv*, jclass);

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

/* Nothing pending after a call that must succeed. */
#define CHECK_OK() CHECK(g_pending == NULL)

/* The pending exception is DLPackException(status, message); clears it. */
static void check_thrown(int line, int32_t status, const char* message) {
  if (g_pending == NULL) {
    g_failed++;
    fprintf(stderr, "line %d: no exception pending\n", line);
    return;
  }
  if (strcmp(g_pending_class, "org/dlbridge/DLPackException") != 0 ||
      g_pending->status != status || strcmp(g_pending->message, message) != 0) {
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

/* ---- the SWIG wrappers ------------------------------------------------------------------- */
static void test_swig_calls(void) {
  const int64_t shape23[2] = {2, 3};
  const int64_t bad_shape[2] = {2, -1};
  jlongArray out2 = longs(2, NULL);
  jlongArray one = longs(1, NULL);
  jlong t, view, legacy, back;

  CHECK(SWIG_FN(kDLFloat_1get)(env, NULL) == kDLFloat);
  CHECK(SWIG_FN(DLB_1SLICE_1NONE_1get)(env, NULL) == DLB_SLICE_NONE);
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
    SWIG_FN(dlb_1tensor_1free)(env, NULL, f);
    CHECK(SWIG_FN(dlb_1tensor_1allocate)(env, NULL, CPU, f32(), longs(2, shape23),
                                         longs(1, strides), 0) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "strides must have one value per extent");
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
    SWIG_FN(dlb_1tensor_1free)(env, NULL, s);
    CHECK(SWIG_FN(dlb_1tensor_1slice)(env, NULL, t, longs(4, triples)) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "slices must be (start, stop, step) triples");
  }
  {
    const int32_t axes[2] = {1, 0};
    view = SWIG_FN(dlb_1tensor_1permute)(env, NULL, t, ints(2, axes));
    CHECK_OK();
    SWIG_FN(dlb_1tensor_1get_1shape)(env, NULL, view, out2);
    CHECK(longs_of(out2)[0] == 3 && longs_of(out2)[1] == 2);
    /* A view is not C-contiguous: no ByteBuffer over it. */
    CHECK(HAND_FN(byteView)(env, NULL, view, JNI_FALSE) == NULL);
    CHECK_THROWN(DLB_ERR_LAYOUT, "the tensor is not C-contiguous: copy it to a contiguous tensor first");
    SWIG_FN(dlb_1tensor_1free)(env, NULL, view);
  }
  {
    const int64_t six[1] = {6};
    view = SWIG_FN(dlb_1tensor_1reshape)(env, NULL, t, longs(1, six));
    CHECK_OK();
    SWIG_FN(dlb_1tensor_1free)(env, NULL, view);
  }

  /* ByteBuffer view of host memory. */
  {
    fake* b = (fake*)HAND_FN(byteView)(env, NULL, t, JNI_TRUE);
    CHECK_OK();
    CHECK(b != NULL && b->length == 24);
  }

  /* Elements: one through a transposed view, written and read back; the core's checks. */
  {
    const int32_t axes[2] = {1, 0};
    const int64_t at_2_1[2] = {2, 1};
    const int64_t at_1[1] = {1};
    jlong tt = SWIG_FN(dlb_1tensor_1permute)(env, NULL, t, ints(2, axes));
    CHECK_OK();
    HAND_FN(elementSet)(env, NULL, tt, longs(2, at_2_1), 4, 0x40490fdb);
    CHECK_OK();
    CHECK(HAND_FN(elementGet)(env, NULL, t, longs(2, (const int64_t[]){1, 2}), 4) == 0x40490fdb);
    CHECK_OK();
    CHECK(HAND_FN(elementGet)(env, NULL, tt, longs(1, at_1), 4) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "1 indices given for a tensor with 2 dimensions");
    CHECK(HAND_FN(elementGet)(env, NULL, tt, longs(DLB_MAX_NDIM + 1, NULL), 4) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "65 indices given for a tensor with 2 dimensions");
    CHECK(HAND_FN(elementGet)(env, NULL, tt, NULL, 4) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "index is NULL");
    SWIG_FN(dlb_1tensor_1free)(env, NULL, tt);
  }

  /* dtype names: the core's. */
  {
    jbyteArray text = (jbyteArray)new_fake(K_BYTES, DLB_DTYPE_NAME_SIZE, 1);
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
    SWIG_FN(dlb_1tensor_1free)(env, NULL, ro);
  }
  SWIG_FN(dlb_1tensor_1free)(env, NULL, back);
}

/* ---- the hand-written entry points: wrap, free, released slots --------------------------- */
/* A foreign consumer: calls the DLPack deleter on a thread the JVM never saw. */
static void* free_on_thread(void* handle) {
  DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)handle;
  t->deleter(t);
  return NULL;
}

static void test_wrap_and_release(void) {
  static float data[6];
  jobject buf = buffer(data, (jsize)sizeof data);
  jlong released0 = HAND_FN(releasedBufferCount)(env, NULL);
  jlong w, share;
  pthread_t th;

  CHECK(HAND_FN(slotSegment)(env, NULL, 0) != NULL);
  CHECK(HAND_FN(takeReleased)(env, NULL) == -1);

  /* A sole owner: the release runs inside the free, which reports the slot. */
  w = HAND_FN(wrapDirect4)(env, NULL, 5, buf, 0, sizeof data, f32(), 2, 2, 3, 0, 0, 0);
  CHECK_OK();
  CHECK(w != 0);
  CHECK(HAND_FN(free)(env, NULL, w) == 5);
  CHECK(HAND_FN(releasedBufferCount)(env, NULL) == released0 + 1);

  /* Shared: the release waits for the last reference, freed on a thread the JVM never saw. */
  {
    const int64_t shape[1] = {6};
    w = HAND_FN(wrapDirect)(env, NULL, 7, buf, 0, sizeof data, f32(), longs(1, shape), (jlong)DLPACK_FLAG_BITMASK_READ_ONLY);
  }
  CHECK_OK();
  share = SWIG_FN(dlb_1tensor_1share)(env, NULL, w, 0);
  CHECK(SWIG_FN(dlb_1tensor_1is_1read_1only)(env, NULL, share) == 1);
  CHECK(HAND_FN(free)(env, NULL, w) == -1);
  CHECK(pthread_create(&th, NULL, free_on_thread, (void*)(intptr_t)share) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK(HAND_FN(takeReleased)(env, NULL) == 7);
  CHECK(HAND_FN(takeReleased)(env, NULL) == -1);
  CHECK(HAND_FN(releasedBufferCount)(env, NULL) == released0 + 2);

  /* Refused after the wrap (buffer too small): no release is reported, nothing leaks. */
  CHECK(HAND_FN(wrapDirect4)(env, NULL, 9, buf, 8, sizeof data, f32(), 2, 2, 3, 0, 0,
                             0) == 0);
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT,
               "the tensor needs more bytes than the ByteBuffer has remaining");
  CHECK(HAND_FN(takeReleased)(env, NULL) == -1);
  CHECK(HAND_FN(releasedBufferCount)(env, NULL) == released0 + 2);
  /* Refused by the core: its message. */
  CHECK(HAND_FN(wrapDirect4)(env, NULL, 9, buf, 0, sizeof data, f32(), 2, 2, -3, 0, 0,
                             0) == 0);
  CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT, "shape[1] is -3; extents must not be negative");
  /* The slot works again after a refusal. */
  w = HAND_FN(wrapDirect4)(env, NULL, 9, buf, 0, sizeof data, f32(), 1, 6, 0, 0, 0, 0);
  CHECK_OK();
  CHECK(HAND_FN(free)(env, NULL, w) == 9);
  /* The flags reach the core: uint4 padded takes a byte per element (24 fit the 24-byte
   * buffer, 25 do not), packed half a byte (48 fit). */
  {
    const jint u4 = kDLUInt | (4 << 8) | (1 << 16);
    const jlong padded = (jlong)DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
    w = HAND_FN(wrapDirect4)(env, NULL, 9, buf, 0, sizeof data, u4, 1, 24, 0, 0, 0, padded);
    CHECK_OK();
    CHECK(SWIG_FN(dlb_1tensor_1flags)(env, NULL, w) == padded);
    CHECK(HAND_FN(free)(env, NULL, w) == 9);
    CHECK(HAND_FN(wrapDirect4)(env, NULL, 9, buf, 0, sizeof data, u4, 1, 25, 0, 0, 0, padded) == 0);
    CHECK_THROWN(DLB_ERR_INVALID_ARGUMENT,
                 "the tensor needs more bytes than the ByteBuffer has remaining");
    w = HAND_FN(wrapDirect4)(env, NULL, 9, buf, 0, sizeof data, u4, 1, 48, 0, 0, 0, 0);
    CHECK_OK();
    CHECK(HAND_FN(free)(env, NULL, w) == 9);
  }
}

int main(void) {
  int64_t live0;
  init_env();
  live0 = SWIG_FN(dlb_1tensor_1live_1count)(env, NULL);
  test_swig_calls();
  test_wrap_and_release();
  CHECK(SWIG_FN(dlb_1tensor_1live_1count)(env, NULL) == live0);
  CHECK(g_pending == NULL);
  free_fakes();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
