/* typemaps_java.i - what dlbridge.i needs from Java (see the list at the top of dlbridge.i).
 * Included by dlbridge.i when SWIG runs with -java. The module file is
 * bindings/java/src/main/swig/dlbridge_java.i. */

/* 5. DLPack's enums as plain int constants. Each constant is initialised from the C value at
 * class load (%javaconst(0)): SWIG would copy the C spelling of the others into Java, and the
 * header's `2U` and `(1UL << 0UL)` are not Java. */
%include "enumsimple.swg"
%javaconst(0);

/* 1. The one exception-throwing function, shared with the hand-written JNI (dlbridge_jni.c):
 * org.dlbridge.DLPackException(status, message). */
%{
#include <jni.h>
#include "dlbridge_jni.h"
#define DLB_THROW_STATUS(status, message) dlb_java_throw_status(jenv, (int32_t)(status), (message))
%}

/* 2. Arrays are Java primitive arrays (long[], int[], byte[]); jlong, jint and jbyte have the
 * widths of int64_t, int32_t and int8_t. */
%{
#define DLB_ARRAY_LENGTH(a) ((a) == NULL ? (int64_t)-1 : (int64_t)(*jenv)->GetArrayLength(jenv, (a)))
#define DLB_ARRAY_GET_I64(a, n, dst) (*jenv)->GetLongArrayRegion(jenv, (a), 0, (jsize)(n), (jlong*)(dst))
#define DLB_ARRAY_SET_I64(a, n, src) (*jenv)->SetLongArrayRegion(jenv, (a), 0, (jsize)(n), (const jlong*)(src))
#define DLB_ARRAY_GET_I32(a, n, dst) (*jenv)->GetIntArrayRegion(jenv, (a), 0, (jsize)(n), (jint*)(dst))
#define DLB_ARRAY_SET_I32(a, n, src) (*jenv)->SetIntArrayRegion(jenv, (a), 0, (jsize)(n), (const jint*)(src))
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

/* The release function of dlbx_tensor_wrap (dlbridge.i): the shared engine: Java drains the tokens (slots). */
%{
#define DLBX_RELEASE_FN dlbx_release
%}
