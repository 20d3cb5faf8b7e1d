/* dlbridge_jni.c - the hand-written JNI entry points, where SWIG gets in the way: wrapping a
 * direct ByteBuffer without copying (its release callback runs on any thread, possibly while the
 * JVM shuts down) and viewing a tensor's memory as a direct ByteBuffer. */
#include <jni.h>
#include <stdint.h>
#include <string.h>

#include "dlbridge/dlbridge.h"

static JavaVM* g_vm = NULL;
/* Set once the library is being unloaded: releases after that leak the global ref on purpose. */
static volatile int g_unloading = 0;
static int64_t g_released_buffers = 0;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  (void)reserved;
  g_vm = vm;
  return JNI_VERSION_1_8;
}

JNIEXPORT void JNICALL JNI_OnUnload(JavaVM* vm, void* reserved) {
  (void)vm;
  (void)reserved;
  __atomic_store_n(&g_unloading, 1, __ATOMIC_SEQ_CST);
}

static void throw_status(JNIEnv* env, int status, const char* message) {
  jclass cls = (*env)->FindClass(env, "org/dlbridge/DLPackException");
  jmethodID ctor;
  jstring jmsg;
  jobject ex;
  if (cls == NULL) return;
  ctor = (*env)->GetMethodID(env, cls, "<init>", "(ILjava/lang/String;)V");
  if (ctor == NULL) return;
  jmsg = (*env)->NewStringUTF(env, message);
  if (jmsg == NULL) return;
  ex = (*env)->NewObject(env, cls, ctor, (jint)status, jmsg);
  if (ex != NULL) (*env)->Throw(env, (jthrowable)ex);
}

/* Called from a JVM shutdown hook: from then on releases leak their global ref instead of
 * calling into a VM that may be torn down under them (the process is ending anyway). */
JNIEXPORT void JNICALL Java_org_dlbridge_NativeLoader_markShutdown(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  __atomic_store_n(&g_unloading, 1, __ATOMIC_SEQ_CST);
}

/* The release callback of a wrapped ByteBuffer: deletes the global ref that kept it reachable.
 * Runs on whichever thread frees the last reference, Java or foreign. It must never unwind, and
 * when the JVM is gone or going, leaking the reference is the only safe choice. */
static void release_global_ref(void* ctx) {
  JNIEnv* env = NULL;
  jint rc;
  int attached = 0;
  if (ctx == NULL || g_vm == NULL || __atomic_load_n(&g_unloading, __ATOMIC_SEQ_CST)) return;
  rc = (*g_vm)->GetEnv(g_vm, (void**)&env, JNI_VERSION_1_8);
  if (rc == JNI_EDETACHED) {
    /* A foreign thread: attach as a daemon so it never holds the JVM open. Fails once the JVM
     * has begun to shut down; then there is nothing to release into. */
    if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void**)&env, NULL) != JNI_OK) return;
    attached = 1;
  } else if (rc != JNI_OK) {
    return;
  }
  (*env)->DeleteGlobalRef(env, (jobject)ctx);
  __atomic_add_fetch(&g_released_buffers, 1, __ATOMIC_SEQ_CST);
  /* Daemon-attached threads stay attached: detaching a thread that a foreign runtime reuses would
   * only make the next release pay for attaching again. */
  (void)attached;
}

JNIEXPORT jlong JNICALL Java_org_dlbridge_NativeSupport_wrapDirect(
    JNIEnv* env, jclass cls, jobject buffer, jlong offset, jint dtype, jlongArray shape,
    jboolean read_only) {
  DLTensor t;
  int64_t dims[DLB_MAX_NDIM];
  jsize ndim;
  uint64_t flags = read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  uint64_t nbytes = 0;
  jlong capacity;
  char* base;
  jobject ref;
  DLManagedTensorVersioned* out = NULL;
  dlb_error err;
  int status;
  (void)cls;
  base = (char*)(*env)->GetDirectBufferAddress(env, buffer);
  capacity = (*env)->GetDirectBufferCapacity(env, buffer);
  if (base == NULL || capacity < 0) {
    throw_status(env, DLB_ERR_INVALID_ARGUMENT, "the ByteBuffer is not a direct buffer");
    return 0;
  }
  ndim = (*env)->GetArrayLength(env, shape);
  if (ndim > DLB_MAX_NDIM) {
    throw_status(env, DLB_ERR_INVALID_ARGUMENT, "too many dimensions");
    return 0;
  }
  if (ndim > 0) (*env)->GetLongArrayRegion(env, shape, 0, ndim, (jlong*)dims);
  memset(&t, 0, sizeof t);
  t.data = base;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = (int32_t)ndim;
  t.dtype.code = (uint8_t)(dtype & 0xff);
  t.dtype.bits = (uint8_t)((dtype >> 8) & 0xff);
  t.dtype.lanes = (uint16_t)(((uint32_t)dtype >> 16) & 0xffff);
  t.shape = ndim > 0 ? dims : NULL;
  t.strides = NULL;
  t.byte_offset = (uint64_t)offset;
  status = dlb_tensor_validate(&t, flags, &err);
  if (status == DLB_OK) status = dlb_tensor_byte_size(&t, flags, &nbytes, &err);
  if (status != DLB_OK) {
    throw_status(env, status, err.message);
    return 0;
  }
  if ((uint64_t)offset + nbytes > (uint64_t)capacity) {
    throw_status(env, DLB_ERR_INVALID_ARGUMENT,
                 "the tensor needs more bytes than the ByteBuffer has remaining");
    return 0;
  }
  ref = (*env)->NewGlobalRef(env, buffer);
  if (ref == NULL) return 0; /* OutOfMemoryError pending */
  status = dlb_tensor_wrap(&t, flags, release_global_ref, ref, &out, &err);
  if (status != DLB_OK) {
    /* On error nothing changed hands: the reference is still ours. */
    (*env)->DeleteGlobalRef(env, ref);
    throw_status(env, status, err.message);
    return 0;
  }
  return (jlong)(intptr_t)out;
}

/* A direct ByteBuffer over the elements of a live, host-readable, C-contiguous tensor. The
 * buffer does not own the memory: the Java side ties a reference to the buffer's lifetime. */
JNIEXPORT jobject JNICALL Java_org_dlbridge_NativeSupport_byteView(JNIEnv* env, jclass cls,
                                                                   jlong handle) {
  DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)(intptr_t)handle;
  uint64_t nbytes = 0;
  dlb_error err;
  int status;
  (void)cls;
  if (!dlb_tensor_is_host_readable(&t->dl_tensor)) {
    throw_status(env, DLB_ERR_UNSUPPORTED, "the tensor's memory is not readable by the host");
    return NULL;
  }
  if (!dlb_tensor_is_c_contiguous(&t->dl_tensor)) {
    throw_status(env, DLB_ERR_LAYOUT, "the tensor is not C-contiguous");
    return NULL;
  }
  status = dlb_tensor_byte_size(&t->dl_tensor, t->flags, &nbytes, &err);
  if (status != DLB_OK) {
    throw_status(env, status, err.message);
    return NULL;
  }
  if (nbytes > (uint64_t)INT32_MAX) {
    throw_status(env, DLB_ERR_OVERFLOW, "the tensor is larger than a ByteBuffer can address");
    return NULL;
  }
  return (*env)->NewDirectByteBuffer(env, (char*)t->dl_tensor.data + t->dl_tensor.byte_offset,
                                     (jlong)nbytes);
}

JNIEXPORT jlong JNICALL Java_org_dlbridge_NativeSupport_releasedBufferCount(JNIEnv* env,
                                                                            jclass cls) {
  (void)env;
  (void)cls;
  return (jlong)__atomic_load_n(&g_released_buffers, __ATOMIC_SEQ_CST);
}

/* An empty hand-written JNI call, the floor for the bench. */
JNIEXPORT void JNICALL Java_org_dlbridge_NativeSupport_noop(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
}
