/* java_memory.i - what JNI, not the core, must do for Java: native memory seen from Java, and
 * Java arrays pinned for the core's copies. Included by the module file after dlbridge.i, so the
 * helpers below cross like every other function (addresses as long, DLDataType packed, a
 * dlb_status becoming DLPackException). No rule lives here: each helper calls the core's
 * functions (with a Java array pinned, or for one element), or makes a buffer over memory the
 * core handed out (dlb_tensor_host_data, dlb_tensor_host_elements, the release engine's
 * counter). */

%{
#include <stdio.h>
%}

/* The JNIEnv of the call: not a Java parameter. */
%typemap(in, numinputs=0) JNIEnv* jenv %{ $1 = jenv; %}

/* ---- a direct ByteBuffer over native memory ------------------------------------------------ */
/* `size` bytes at `address`, not owned by the buffer: the caller ties the memory's lifetime to
 * the buffer (org.dlbridge.Lifecycle). A ByteBuffer holds at most 2^31 - 1 bytes. */
%typemap(jni) jobject dlbx_java_buffer "jobject"
%typemap(jtype) jobject dlbx_java_buffer "java.nio.ByteBuffer"
%typemap(jstype) jobject dlbx_java_buffer "java.nio.ByteBuffer"
%typemap(javaout) jobject dlbx_java_buffer { return $jnicall; }
%inline %{
static jobject dlbx_java_buffer(JNIEnv* jenv, void* address, int64_t size) {
  if (size < 0 || size > INT32_MAX) {
    char message[128];
    snprintf(message, sizeof message, "%lld bytes do not fit in a ByteBuffer (at most %d)",
             (long long)size, INT32_MAX);
    dlbx_java_throw(jenv, DLB_ERR_OVERFLOW, message);
    return NULL;
  }
  return (*jenv)->NewDirectByteBuffer(jenv, address, (jlong)size);
}
%}

/* ---- one element ------------------------------------------------------------------------------ */
/* The element at `index` (one per dimension, negative counting from the end) as `dtype`: one
 * core call, dlb_tensor_typed_element (the dtype, the device, READ_ONLY when writing, then the
 * index, with its messages, the tensor validated once); then the element's bytes (1, 2, 4 or 8:
 * the dtype's, which the check made the tensor's), read sign-extended into *out or written from
 * the low bytes of `bits`. One JNI call per element. */
%{
static dlb_status dlbx_java_element(const DLManagedTensorVersioned* tensor, DLDataType dtype,
                                    int32_t nindex, const int64_t* index, int writable,
                                    void** address, uint64_t* size, dlb_error* error) {
  dlb_status status = dlb_tensor_typed_element(
      tensor, dtype, writable ? DLB_ACCESS_WRITE : DLB_ACCESS_READ, nindex, index, address, error);
  if (status != DLB_OK) return status;
  *size = dlb_dtype_element_size(dtype);
  if (*size != 1 && *size != 2 && *size != 4 && *size != 8) {
    *address = NULL;
    snprintf(error->message, sizeof error->message,
             "elements of %llu bytes have no Java primitive type", (unsigned long long)*size);
    return DLB_ERR_UNSUPPORTED;
  }
  return DLB_OK;
}
%}
%inline %{
static dlb_status dlbx_java_get(const DLManagedTensorVersioned* tensor, DLDataType dtype,
                                int32_t nindex, const int64_t* index, int64_t* out,
                                dlb_error* error) {
  void* address = NULL;
  uint64_t size = 0;
  dlb_status status = dlbx_java_element(tensor, dtype, nindex, index, 0, &address, &size, error);
  if (status != DLB_OK) return status;
  switch (size) {
    case 1: *out = *(const int8_t*)address; break;
    case 2: { int16_t v; memcpy(&v, address, 2); *out = v; break; }
    case 4: { int32_t v; memcpy(&v, address, 4); *out = v; break; }
    default: memcpy(out, address, 8); break;
  }
  return DLB_OK;
}
static dlb_status dlbx_java_set(DLManagedTensorVersioned* tensor, DLDataType dtype,
                                int32_t nindex, const int64_t* index, int64_t bits,
                                dlb_error* error) {
  void* address = NULL;
  uint64_t size = 0;
  dlb_status status = dlbx_java_element(tensor, dtype, nindex, index, 1, &address, &size, error);
  if (status != DLB_OK) return status;
  switch (size) {
    case 1: { int8_t v = (int8_t)bits; memcpy(address, &v, 1); break; }
    case 2: { int16_t v = (int16_t)bits; memcpy(address, &v, 2); break; }
    case 4: { int32_t v = (int32_t)bits; memcpy(address, &v, 4); break; }
    default: memcpy(address, &bits, 8); break;
  }
  return DLB_OK;
}
%}

/* ---- Java arrays in and out of any tensor ---------------------------------------------------- */
/* One core call each, dlb_tensor_copy_to_host or dlb_tensor_copy_from_host, with the array pinned
 * (GetPrimitiveArrayCritical: no copy of the array, no JNI call until it is released; a device
 * tensor's copy holds the GC off for as long as it takes). The buffer's size is the array's length
 * times its element's: the core checks it, and the dtype, with its own messages. A null array
 * passes (NULL, 0) to the core, which refuses it for a non-empty tensor. */
%{
static dlb_status dlbx_java_copy(JNIEnv* jenv, DLManagedTensorVersioned* tensor, DLDataType dtype,
                                 jarray array, uint64_t element_size, int into_array,
                                 dlb_error* error) {
  void* elements = NULL;
  uint64_t size = 0;
  dlb_status status;
  if (array != NULL) {
    size = (uint64_t)(*jenv)->GetArrayLength(jenv, array) * element_size;
    elements = (*jenv)->GetPrimitiveArrayCritical(jenv, array, NULL);
    if (elements == NULL) { /* the JVM's OutOfMemoryError is pending and propagates */
      snprintf(error->message, sizeof error->message, "%s", "cannot pin the Java array");
      return DLB_ERR_OUT_OF_MEMORY;
    }
  }
  status = into_array ? dlb_tensor_copy_to_host(tensor, dtype, elements, size, error)
                      : dlb_tensor_copy_from_host(tensor, dtype, elements, size, error);
  if (elements != NULL) {
    (*jenv)->ReleasePrimitiveArrayCritical(jenv, array, elements, into_array ? 0 : JNI_ABORT);
  }
  return status;
}
%}

/* dlbx_java_to_NAME(tensor, dtype, array) and dlbx_java_from_NAME(tensor, dtype, array) for each
 * primitive array type (JNI has no typed view of a generic array: the element size must come
 * from the array's own type). */
%define DLBX_JAVA_ARRAY(NAME, JARRAY, JTYPE)
%inline %{
static dlb_status dlbx_java_to_##NAME(JNIEnv* jenv, const DLManagedTensorVersioned* src,
                                      DLDataType dtype, JARRAY array, dlb_error* error) {
  return dlbx_java_copy(jenv, (DLManagedTensorVersioned*)(intptr_t)src, dtype, array,
                        sizeof(JTYPE), 1, error);
}
static dlb_status dlbx_java_from_##NAME(JNIEnv* jenv, DLManagedTensorVersioned* dst,
                                        DLDataType dtype, JARRAY array, dlb_error* error) {
  return dlbx_java_copy(jenv, dst, dtype, array, sizeof(JTYPE), 0, error);
}
%}
%enddef
DLBX_JAVA_ARRAY(bytes, jbyteArray, jbyte)
DLBX_JAVA_ARRAY(shorts, jshortArray, jshort)
DLBX_JAVA_ARRAY(chars, jcharArray, jchar)
DLBX_JAVA_ARRAY(ints, jintArray, jint)
DLBX_JAVA_ARRAY(longs, jlongArray, jlong)
DLBX_JAVA_ARRAY(floats, jfloatArray, jfloat)
DLBX_JAVA_ARRAY(doubles, jdoubleArray, jdouble)
