/* dlbridge_jni.c - the hand-written JNI entry points, where SWIG gets in the way: wrapping a
 * direct ByteBuffer without copying (its release callback runs on any thread, possibly while the
 * JVM shuts down) and viewing a tensor's memory as a direct ByteBuffer. */
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlbridge/dlbridge.h"

static JavaVM* g_vm = NULL;
/* Set once the library is being unloaded: releases after that leak the global ref on purpose. */
static volatile int g_unloading = 0;
static int64_t g_released_buffers = 0;

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

/* The release context of a wrapped ByteBuffer (one malloc per wrap). While the wrapping Tensor
 * is the memory's only owner, the Java side keeps the buffer reachable (the Tensor's state holds
 * it until the deleter has run, synchronously, inside close() or the Cleaner), so `ref` stays
 * NULL and the release needs no JNIEnv at all. Before the memory gains another owner (a view, a
 * share, an asByteBuffer() buffer, an export, address()), Tensor "pins" it: `ref` becomes a JNI
 * global ref, written under the tensor's lock before that owner exists, and the release deletes
 * it on whichever thread drops the last reference. */
typedef struct wrap_ctx {
  jobject ref;
  int refused; /* wrapped, then refused by wrapDirect: its release is not counted */
} wrap_ctx;

/* java.nio.Buffer.address, read directly (what GetDirectBufferAddress returns, without its two
 * IsInstanceOf checks); NULL when this JVM has no such field, then the JNI call is used. */
static jfieldID g_buffer_address = NULL;
/* Tensor.State.wrapCtx, where wrapDirect leaves the wrap_ctx address. */
static jfieldID g_state_wrap_ctx = NULL;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  JNIEnv* env = NULL;
  (void)reserved;
  g_vm = vm;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) == JNI_OK) {
    jclass buffer_cls = (*env)->FindClass(env, "java/nio/Buffer");
    if (buffer_cls != NULL) {
      g_buffer_address = (*env)->GetFieldID(env, buffer_cls, "address", "J");
    }
    if ((*env)->ExceptionCheck(env)) {
      (*env)->ExceptionClear(env);
      g_buffer_address = NULL;
    }
  }
  return JNI_VERSION_1_8;
}

/* The release callback of a wrapped ByteBuffer. Runs on whichever thread frees the last
 * reference, Java or foreign. It must never unwind, and when the JVM is gone or going, leaking
 * the global ref is the only safe choice. */
static void release_wrap(void* p) {
  wrap_ctx* ctx = (wrap_ctx*)p;
  jobject ref;
  JNIEnv* env = NULL;
  jint rc;
  int attached = 0;
  if (ctx == NULL) return;
  ref = ctx->ref;
  if (ctx->refused) {
    free(ctx);
    return;
  }
  free(ctx);
  if (ref == NULL) {
    /* Never pinned: the Java side held the buffer until now. */
    __atomic_add_fetch(&g_released_buffers, 1, __ATOMIC_SEQ_CST);
    return;
  }
  if (g_vm == NULL || __atomic_load_n(&g_unloading, __ATOMIC_SEQ_CST)) return;
  rc = (*g_vm)->GetEnv(g_vm, (void**)&env, JNI_VERSION_1_8);
  if (rc == JNI_EDETACHED) {
    /* A foreign thread: attach as a daemon so it never holds the JVM open. Fails once the JVM
     * has begun to shut down; then there is nothing to release into. */
    if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void**)&env, NULL) != JNI_OK) return;
    attached = 1;
  } else if (rc != JNI_OK) {
    return;
  }
  (*env)->DeleteGlobalRef(env, ref);
  __atomic_add_fetch(&g_released_buffers, 1, __ATOMIC_SEQ_CST);
  /* Daemon-attached threads stay attached: detaching a thread that a foreign runtime reuses would
   * only make the next release pay for attaching again. */
  (void)attached;
}

/* Wraps `buffer` (direct; the Java side checked) from `offset`, as `ndim` dims; `capacity` is
 * its capacity. The wrap_ctx address goes to state.wrapCtx for a later pin. */
static jlong wrap_direct(JNIEnv* env, jobject state, jobject buffer, jlong offset, jlong capacity,
                         jint dtype, int32_t ndim, int64_t* dims, jboolean read_only) {
  DLTensor t;
  uint64_t flags = read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  uint64_t nbytes = 0;
  char* base;
  wrap_ctx* ctx;
  DLManagedTensorVersioned* out = NULL;
  dlb_error err;
  int status;
  if (g_buffer_address != NULL) {
    base = (char*)(intptr_t)(*env)->GetLongField(env, buffer, g_buffer_address);
  } else {
    base = (char*)(*env)->GetDirectBufferAddress(env, buffer);
    capacity = (*env)->GetDirectBufferCapacity(env, buffer);
  }
  if (base == NULL || capacity < 0) {
    throw_status(env, DLB_ERR_INVALID_ARGUMENT, "the ByteBuffer is not a direct buffer");
    return 0;
  }
  if (g_state_wrap_ctx == NULL) {
    jclass state_cls = (*env)->GetObjectClass(env, state);
    jfieldID f = (*env)->GetFieldID(env, state_cls, "wrapCtx", "J");
    if (f == NULL) return 0; /* NoSuchFieldError pending */
    g_state_wrap_ctx = f;
  }
  memset(&t, 0, sizeof t);
  t.data = base;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype.code = (uint8_t)(dtype & 0xff);
  t.dtype.bits = (uint8_t)((dtype >> 8) & 0xff);
  t.dtype.lanes = (uint16_t)(((uint32_t)dtype >> 16) & 0xffff);
  t.shape = ndim > 0 ? dims : NULL;
  t.strides = NULL;
  t.byte_offset = (uint64_t)offset;
  ctx = (wrap_ctx*)malloc(sizeof *ctx);
  if (ctx == NULL) {
    throw_status(env, DLB_ERR_OUT_OF_MEMORY, "out of memory");
    return 0;
  }
  ctx->ref = NULL;
  ctx->refused = 0;
  /* dlb_tensor_wrap validates the tensor (and copies the shape); its size is checked against the
   * buffer afterwards, so validation runs once. */
  status = dlb_tensor_wrap(&t, flags, release_wrap, ctx, &out, &err);
  if (status != DLB_OK) {
    /* On error nothing changed hands: the context is still ours. */
    free(ctx);
    throw_status(env, status, err.message);
    return 0;
  }
  status = dlb_tensor_byte_size(&out->dl_tensor, flags, &nbytes, &err);
  if (status == DLB_OK && (uint64_t)offset + nbytes > (uint64_t)capacity) {
    status = DLB_ERR_INVALID_ARGUMENT;
    snprintf(err.message, sizeof err.message, "%s",
             "the tensor needs more bytes than the ByteBuffer has remaining");
  }
  if (status != DLB_OK) {
    /* Refused after the wrap: not a release of a buffer anyone saw wrapped. */
    ctx->refused = 1;
    dlb_tensor_free(out); /* runs release_wrap, which frees ctx */
    throw_status(env, status, err.message);
    return 0;
  }
  (*env)->SetLongField(env, state, g_state_wrap_ctx, (jlong)(intptr_t)ctx);
  return (jlong)(intptr_t)out;
}

/* Any rank: the shape comes in a long[]. */
JNIEXPORT jlong JNICALL Java_org_dlbridge_NativeSupport_wrapDirect(
    JNIEnv* env, jclass cls, jobject state, jobject buffer, jlong offset, jlong capacity,
    jint dtype, jlongArray shape, jboolean read_only) {
  int64_t dims[DLB_MAX_NDIM];
  jsize ndim;
  (void)cls;
  ndim = (*env)->GetArrayLength(env, shape);
  if (ndim > DLB_MAX_NDIM) {
    throw_status(env, DLB_ERR_INVALID_ARGUMENT, "too many dimensions");
    return 0;
  }
  if (ndim > 0) (*env)->GetLongArrayRegion(env, shape, 0, ndim, (jlong*)dims);
  return wrap_direct(env, state, buffer, offset, capacity, dtype, (int32_t)ndim, dims, read_only);
}

/* Rank 0 to 4, the extents as arguments: no array to read through JNI. */
JNIEXPORT jlong JNICALL Java_org_dlbridge_NativeSupport_wrapDirect4(
    JNIEnv* env, jclass cls, jobject state, jobject buffer, jlong offset, jlong capacity,
    jint dtype, jint ndim, jlong d0, jlong d1, jlong d2, jlong d3, jboolean read_only) {
  int64_t dims[4];
  (void)cls;
  dims[0] = d0;
  dims[1] = d1;
  dims[2] = d2;
  dims[3] = d3;
  return wrap_direct(env, state, buffer, offset, capacity, dtype, (int32_t)ndim, dims, read_only);
}

/* Makes the wrap_ctx at `ctx` hold a global ref to `buffer` (once; the caller holds the tensor's
 * lock). Returns false with an OutOfMemoryError pending when the JVM has no room for the ref. */
JNIEXPORT jboolean JNICALL Java_org_dlbridge_NativeSupport_pin(JNIEnv* env, jclass cls, jlong p,
                                                               jobject buffer) {
  wrap_ctx* ctx = (wrap_ctx*)(intptr_t)p;
  (void)cls;
  if (ctx->ref != NULL) return JNI_TRUE;
  ctx->ref = (*env)->NewGlobalRef(env, buffer);
  return ctx->ref != NULL ? JNI_TRUE : JNI_FALSE;
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
