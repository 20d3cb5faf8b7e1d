/* typemaps_java.i - what dlbridge.i needs from Java (see the list at the top of dlbridge.i).
 * Included by dlbridge.i when SWIG runs with -java. The module file is
 * generators/swig/dlbridge_java.i; Java's own helpers (direct buffers over native
 * memory, array copies) are bindings/java/native/java_memory.i. */

/* 5. DLPack's enums as plain int constants. Each constant is initialised from the C value at
 * class load (%javaconst(0)): SWIG would copy the C spelling of the others into Java, and the
 * header's `2U` and `(1UL << 0UL)` are not Java. The statuses are plain decimal numbers in
 * dlbridge.h: SWIG copies them, so they are compile-time constants a user can `switch` on
 * (org.dlbridge.Status). A status added to the header needs its line here; the Java test
 * StatusTest fails until it has one. */
%include "enumsimple.swg"
%javaconst(0);
%javaconst(1) DLB_OK;
%javaconst(1) DLB_ERR_INVALID_ARGUMENT;
%javaconst(1) DLB_ERR_OUT_OF_MEMORY;
%javaconst(1) DLB_ERR_UNSUPPORTED_VERSION;
%javaconst(1) DLB_ERR_UNSUPPORTED;
%javaconst(1) DLB_ERR_READ_ONLY;
%javaconst(1) DLB_ERR_LAYOUT;
%javaconst(1) DLB_ERR_OVERFLOW;
%javaconst(1) DLB_ERR_DEVICE;
%javaconst(1) DLB_ERR_DEVICE_UNAVAILABLE;
%javaconst(1) DLB_ERR_CLOSED;
%javaconst(1) DLB_ERR_NO_LISTENER;
%javaconst(1) DLB_ERR_PERMISSION;
%javaconst(1) DLB_ERR_PEER_CLOSED;
%javaconst(1) DLB_ERR_PROTOCOL;
%javaconst(1) DLB_ERR_TIMEOUT;
%javaconst(1) DLB_ERR_LIMIT;

/* 1. The one exception-throwing function: org.dlbridge.DLPackException(status, message). An
 * exception already pending (an OutOfMemoryError from the JVM) is left to propagate. */
%{
#include <jni.h>

static void dlbx_java_throw(JNIEnv* jenv, int32_t status, const char* message) {
  jclass cls;
  jmethodID ctor;
  jstring text;
  jobject ex;
  if ((*jenv)->ExceptionCheck(jenv)) return;
  cls = (*jenv)->FindClass(jenv, "org/dlbridge/DLPackException");
  if (cls == NULL) return; /* a NoClassDefFoundError is pending */
  ctor = (*jenv)->GetMethodID(jenv, cls, "<init>", "(ILjava/lang/String;)V");
  if (ctor == NULL) return;
  text = (*jenv)->NewStringUTF(jenv, message);
  if (text == NULL) return;
  ex = (*jenv)->NewObject(jenv, cls, ctor, (jint)status, text);
  if (ex != NULL) (*jenv)->Throw(jenv, (jthrowable)ex);
}
#define DLB_THROW_STATUS(status, message) dlbx_java_throw(jenv, (int32_t)(status), (message))
%}

/* 2. Arrays are Java primitive arrays (long[], int[], byte[]); jlong, jint and jbyte have the
 * widths of int64_t, int32_t and int8_t. */
%{
#define DLB_ARRAY_LENGTH(a) ((a) == NULL ? (int64_t)-1 : (int64_t)(*jenv)->GetArrayLength(jenv, (a)))
#define DLB_ARRAY_GET_I64(a, n, dst) (*jenv)->GetLongArrayRegion(jenv, (a), 0, (jsize)(n), (jlong*)(dst))
#define DLB_ARRAY_SET_I64(a, n, src) (*jenv)->SetLongArrayRegion(jenv, (a), 0, (jsize)(n), (const jlong*)(src))
#define DLB_ARRAY_GET_I32(a, n, dst) (*jenv)->GetIntArrayRegion(jenv, (a), 0, (jsize)(n), (jint*)(dst))
#define DLB_ARRAY_SET_I32(a, n, src) (*jenv)->SetIntArrayRegion(jenv, (a), 0, (jsize)(n), (const jint*)(src))
#define DLB_ARRAY_GET_I8(a, n, dst) (*jenv)->GetByteArrayRegion(jenv, (a), 0, (jsize)(n), (jbyte*)(dst))
#define DLB_ARRAY_SET_I8(a, n, src) (*jenv)->SetByteArrayRegion(jenv, (a), 0, (jsize)(n), (const jbyte*)(src))
%}

/* 3. The Java types of an array parameter group. */
%define DLB_ARRAY_TYPES_I64(PARAMS)
%typemap(jni) PARAMS "jlongArray"
%typemap(jtype) PARAMS "long[]"
%typemap(jstype) PARAMS "long[]"
%typemap(javain) PARAMS "$javainput"
%enddef
%define DLB_ARRAY_TYPES_I32(PARAMS)
%typemap(jni) PARAMS "jintArray"
%typemap(jtype) PARAMS "int[]"
%typemap(jstype) PARAMS "int[]"
%typemap(javain) PARAMS "$javainput"
%enddef
%define DLB_ARRAY_TYPES_I8(PARAMS)
%typemap(jni) PARAMS "jbyteArray"
%typemap(jtype) PARAMS "byte[]"
%typemap(jstype) PARAMS "byte[]"
%typemap(javain) PARAMS "$javainput"
%enddef
%define DLB_ARRAY_TYPES(PARAMS, KIND)
DLB_ARRAY_TYPES_##KIND(PARAMS)
%enddef

/* 4. uint64_t (flags, byte sizes) as a Java long holding the same 64 bits, not a BigInteger. */
%clear uint64_t;
%apply long long { uint64_t };

/* Text in (dtype and device names): copied into the wrapper's own buffer and the JVM's copy
 * released at once, so that no early return (a refused argument, a failed status) skips the
 * release. A text longer than the buffer is cut: no name is that long, and the core quotes at
 * most the first 64 bytes of a name it refuses, so the outcome and the message stay the core's. */
%typemap(in) const char* (char text_tmp[256]) %{
  $1 = NULL;
  if ($input) {
    const char* chars_ = (*jenv)->GetStringUTFChars(jenv, $input, 0);
    size_t length_;
    if (!chars_) return $null;
    length_ = strlen(chars_);
    if (length_ >= sizeof text_tmp) length_ = sizeof text_tmp - 1;
    memcpy(text_tmp, chars_, length_);
    text_tmp[length_] = '\0';
    (*jenv)->ReleaseStringUTFChars(jenv, $input, chars_);
    $1 = text_tmp;
  }
%}
%typemap(freearg) const char* ""

/* ---- wrapping a direct ByteBuffer ---------------------------------------------------------- */
/* dlbx_tensor_wrap's memory, (void* data, uint64_t buffer_size), is a java.nio.ByteBuffer: its
 * base address and its capacity (the core checks that the elements lie inside; the tensor starts
 * at the byte_offset the caller passes, the buffer's position). The caller passes a direct
 * buffer: org.dlbridge.Tensor.wrap checks isDirect() (DLBridgeNative is package-private). Both
 * values are read from java.nio.Buffer's fields, found once by JNI_OnLoad: the checked
 * GetDirectBufferAddress and GetDirectBufferCapacity make an IsInstanceOf call each on every
 * wrap. A JVM without those fields gets the checked calls. */
%{
static jfieldID dlbx_java_buffer_address;
static jfieldID dlbx_java_buffer_capacity;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  JNIEnv* env = NULL;
  (void)reserved;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) == JNI_OK) {
    jclass buffer = (*env)->FindClass(env, "java/nio/Buffer");
    if (buffer != NULL) {
      dlbx_java_buffer_address = (*env)->GetFieldID(env, buffer, "address", "J");
      if (dlbx_java_buffer_address != NULL) {
        dlbx_java_buffer_capacity = (*env)->GetFieldID(env, buffer, "capacity", "I");
      }
    }
    if ((*env)->ExceptionCheck(env) || dlbx_java_buffer_capacity == NULL) {
      (*env)->ExceptionClear(env);
      dlbx_java_buffer_address = NULL;
      dlbx_java_buffer_capacity = NULL;
    }
  }
  return JNI_VERSION_1_8;
}

/* The address and capacity of a direct buffer; 0 with DLPackException pending otherwise. */
static int dlbx_java_buffer_span(JNIEnv* jenv, jobject buffer, void** data, uint64_t* size) {
  jlong capacity;
  if (buffer == NULL) {
    dlbx_java_throw(jenv, DLB_ERR_INVALID_ARGUMENT, "the buffer is null");
    return 0;
  }
  if (dlbx_java_buffer_address != NULL) {
    *data = (void*)(intptr_t)(*jenv)->GetLongField(jenv, buffer, dlbx_java_buffer_address);
    capacity = (*jenv)->GetIntField(jenv, buffer, dlbx_java_buffer_capacity);
  } else {
    *data = (*jenv)->GetDirectBufferAddress(jenv, buffer);
    capacity = (*jenv)->GetDirectBufferCapacity(jenv, buffer);
    if (capacity < 0) {
      dlbx_java_throw(jenv, DLB_ERR_INVALID_ARGUMENT, "the buffer is not a direct ByteBuffer");
      return 0;
    }
  }
  *size = (uint64_t)capacity;
  return 1;
}
%}
%typemap(jni) (void* data, uint64_t buffer_size) "jobject"
%typemap(jtype) (void* data, uint64_t buffer_size) "java.nio.ByteBuffer"
%typemap(jstype) (void* data, uint64_t buffer_size) "java.nio.ByteBuffer"
%typemap(javain) (void* data, uint64_t buffer_size) "$javainput"
%typemap(in) (void* data, uint64_t buffer_size) %{
  if (!dlbx_java_buffer_span(jenv, $input, &$1, &$2)) return $null;
%}

/* The release function of dlbx_tensor_wrap (dlbridge.i): the shared engine. Java's token is a
 * slot number + 1 (org.dlbridge.Slots); tokens come back from dlbx_tensor_free, or are drained
 * with dlbx_release_drain when another thread released them. */
%{
#define DLBX_RELEASE_FN dlbx_release
%}
