/* typemaps_java.i - the Java side of dlbridge.i. Include this, then dlbridge.i:
 *   %module(directors="0") DLBridgeNative  ... %include "typemaps_java.i" %include "dlbridge.i"
 * Handles are Java longs (addresses); DLDevice is a long packing (device_type << 32 | device_id);
 * DLDataType is an int packing (code | bits << 8 | lanes << 16); int64_t arrays are long[]. */

%include "stdint.i"

/* Constants become compile-time Java constants, not JNI getters. */
%javaconst(1);

/* Raise org.dlbridge.DLPackException(status, message) — the one hook dlbridge.i's %exception uses. */
%{
#include <jni.h>
static void dlb_java_throw(JNIEnv* jenv, int status, const char* message) {
  jclass cls = (*jenv)->FindClass(jenv, "org/dlbridge/DLPackException");
  jmethodID ctor;
  jstring jmsg;
  jobject ex;
  if (cls == NULL) return; /* a NoClassDefFoundError is pending */
  ctor = (*jenv)->GetMethodID(jenv, cls, "<init>", "(ILjava/lang/String;)V");
  if (ctor == NULL) return;
  jmsg = (*jenv)->NewStringUTF(jenv, message);
  if (jmsg == NULL) return;
  ex = (*jenv)->NewObject(jenv, cls, ctor, (jint)status, jmsg);
  if (ex != NULL) (*jenv)->Throw(jenv, (jthrowable)ex);
}
%}
#define DLB_THROW_STATUS(status, message) dlb_java_throw(jenv, status, message)

/* The checked status: the Java method returns the new handle (long), filled by the argout below. */
%typemap(jni) dlb_status_out "jlong"
%typemap(jtype) dlb_status_out "long"
%typemap(jstype) dlb_status_out "long"
%typemap(javaout) dlb_status_out { return $jnicall; }
%typemap(out) dlb_status_out %{ $result = 0; %}
%typemap(argout) DLManagedTensorVersioned** out %{ jresult = (jlong)(intptr_t)*$1; %}

/* Opaque handles as long addresses. */
%define DLB_HANDLE_TYPEMAPS(TYPE)
%typemap(jni) TYPE "jlong"
%typemap(jtype) TYPE "long"
%typemap(jstype) TYPE "long"
%typemap(javain) TYPE "$javainput"
%typemap(javaout) TYPE { return $jnicall; }
%typemap(in) TYPE %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(out) TYPE %{ $result = (jlong)(intptr_t)$1; %}
%enddef
DLB_HANDLE_TYPEMAPS(DLB_TENSOR_HANDLE)
DLB_HANDLE_TYPEMAPS(DLB_LEGACY_HANDLE)

/* DLDevice <-> long (type << 32 | id). */
%typemap(jni) DLDevice "jlong"
%typemap(jtype) DLDevice "long"
%typemap(jstype) DLDevice "long"
%typemap(javain) DLDevice "$javainput"
%typemap(javaout) DLDevice { return $jnicall; }
%typemap(in) DLDevice %{
  $1.device_type = (DLDeviceType)(int32_t)((uint64_t)$input >> 32);
  $1.device_id = (int32_t)(uint32_t)((uint64_t)$input & 0xffffffffu);
%}
%typemap(out) DLDevice %{
  $result = (jlong)(((uint64_t)(uint32_t)$1.device_type << 32) | (uint32_t)$1.device_id);
%}

/* DLDataType <-> int (code | bits << 8 | lanes << 16). */
%typemap(jni) DLDataType "jint"
%typemap(jtype) DLDataType "int"
%typemap(jstype) DLDataType "int"
%typemap(javain) DLDataType "$javainput"
%typemap(javaout) DLDataType { return $jnicall; }
%typemap(in) DLDataType %{
  $1.code = (uint8_t)($input & 0xff);
  $1.bits = (uint8_t)(($input >> 8) & 0xff);
  $1.lanes = (uint16_t)(((uint32_t)$input >> 16) & 0xffff);
%}
%typemap(out) DLDataType %{
  $result = (jint)((uint32_t)$1.code | ((uint32_t)$1.bits << 8) | ((uint32_t)$1.lanes << 16));
%}

/* uint64_t flags as a Java long (the bits, not a BigInteger). */
%typemap(jni) uint64_t "jlong"
%typemap(jtype) uint64_t "long"
%typemap(jstype) uint64_t "long"
%typemap(javain) uint64_t "$javainput"
%typemap(javaout) uint64_t { return $jnicall; }
%typemap(in) uint64_t %{ $1 = (uint64_t)$input; %}
%typemap(out) uint64_t %{ $result = (jlong)$1; %}

/* (int32_t ndim, const int64_t* shape) <- long[]: copied in, the C side never keeps it.
 * int64_t is long on LP64 Linux and long long elsewhere; jlong is always 64 bits. */
%typemap(jni) (int32_t ndim, const int64_t* shape) "jlongArray"
%typemap(jtype) (int32_t ndim, const int64_t* shape) "long[]"
%typemap(jstype) (int32_t ndim, const int64_t* shape) "long[]"
%typemap(javain) (int32_t ndim, const int64_t* shape) "$javainput"
%typemap(in) (int32_t ndim, const int64_t* shape) (int64_t dims_tmp[DLB_MAX_NDIM * 3]) %{
  if ($input == NULL) { SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "array is null"); return $null; }
  $1 = (int32_t)(*jenv)->GetArrayLength(jenv, $input);
  if ($1 > DLB_MAX_NDIM * 3) { SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, "too many dimensions"); return $null; }
  if ($1 > 0) (*jenv)->GetLongArrayRegion(jenv, $input, 0, $1, (jlong*)dims_tmp);
  $2 = dims_tmp;
%}

/* (int64_t* out_values, int32_t n) <- long[] filled by the call. */
%typemap(jni) (int64_t* out_values, int32_t n) "jlongArray"
%typemap(jtype) (int64_t* out_values, int32_t n) "long[]"
%typemap(jstype) (int64_t* out_values, int32_t n) "long[]"
%typemap(javain) (int64_t* out_values, int32_t n) "$javainput"
%typemap(in) (int64_t* out_values, int32_t n) (int64_t vals_tmp[DLB_MAX_NDIM]) %{
  if ($input == NULL) { SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "array is null"); return $null; }
  $2 = (int32_t)(*jenv)->GetArrayLength(jenv, $input);
  if ($2 > DLB_MAX_NDIM) { SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, "too many dimensions"); return $null; }
  $1 = vals_tmp;
%}
%typemap(argout) (int64_t* out_values, int32_t n) %{
  if (result == DLB_OK && $2 > 0) (*jenv)->SetLongArrayRegion(jenv, $input, 0, $2, (jlong*)$1);
%}

/* Strings are static in the core: never freed. */
%typemap(newfree) char* "";
