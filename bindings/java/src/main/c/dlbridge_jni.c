/* dlbridge_jni.c - the hand-written JNI entry points, where SWIG gets in the way: wrapping a
 * direct ByteBuffer without copying (its release callback runs on any thread, possibly while the
 * JVM shuts down), freeing tensors, and viewing a tensor's memory as a direct ByteBuffer. Also
 * the one function that raises DLPackException, for these and for the SWIG wrappers.
 *
 * Slots (Slots.java) number the live Tensors. A wrapped buffer's release context is its slot
 * number, and each slot has an entry here: {state, next}. The release callback never calls into
 * the JVM: it pushes the slot onto a lock-free list of released slots, which the Java side takes
 * whole (take_released) and drains, freeing the buffer it kept in the slot. Whether the release
 * runs inside the Java side's own free or later on a foreign thread (the core's reference count
 * decides), it only touches this library's own memory, even during JVM shutdown. */
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlbridge/dlbridge.h"
#include "dlbridge_jni.h"

/* Keep in step with Slots.java. */
#define SLOT_SEGMENT_BITS 12
#define SLOT_SEGMENT_SIZE (1 << SLOT_SEGMENT_BITS)
#define SLOT_MAX_SEGMENTS (1 << 16)

enum {
  SLOT_WRAPPED = 0, /* the release pushes the slot onto g_released */
  SLOT_REFUSED = 1  /* wrapped, then refused by wrap_direct: the release is not reported */
};

typedef struct slot_entry {
  int32_t state;
  int32_t next; /* the next released slot, or -1 */
} slot_entry;

static slot_entry* g_segments[SLOT_MAX_SEGMENTS];
/* The released slots not yet taken by the Java side: a stack linked through
 * slot_entry.next, -1 when empty. Only pushed to; taken whole by an exchange, so no ABA. */
static int32_t g_released = -1;
static int64_t g_released_buffers = 0;

/* java.nio.Buffer.address, read directly (what GetDirectBufferAddress returns, without its two
 * IsInstanceOf checks); NULL when this JVM has no such field, then the JNI call is used. */
static jfieldID g_buffer_address = NULL;

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  JNIEnv* env = NULL;
  (void)reserved;
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

void dlb_java_throw_status(JNIEnv* env, int32_t status, const char* message) {
  jclass cls = (*env)->FindClass(env, "org/dlbridge/DLPackException");
  jmethodID ctor;
  jstring jmsg;
  jobject ex;
  if (cls == NULL) return; /* a NoClassDefFoundError is pending */
  ctor = (*env)->GetMethodID(env, cls, "<init>", "(ILjava/lang/String;)V");
  if (ctor == NULL) return;
  jmsg = (*env)->NewStringUTF(env, message);
  if (jmsg == NULL) return;
  ex = (*env)->NewObject(env, cls, ctor, (jint)status, jmsg);
  if (ex != NULL) (*env)->Throw(env, (jthrowable)ex);
}

static slot_entry* slot_entry_of(uint32_t slot) {
  slot_entry* segment = __atomic_load_n(&g_segments[slot >> SLOT_SEGMENT_BITS], __ATOMIC_ACQUIRE);
  return &segment[slot & (SLOT_SEGMENT_SIZE - 1)];
}

/* The release callback of a wrapped ByteBuffer; `ctx` is its slot number. Runs on whichever
 * thread frees the last reference, Java or foreign, with or without a JVM: it touches nothing
 * but this library's memory. */
static void release_wrap(void* ctx) {
  slot_entry* e = slot_entry_of((uint32_t)(uintptr_t)ctx);
  int32_t head;
  if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) == SLOT_REFUSED) {
    e->state = SLOT_WRAPPED;
    return;
  }
  __atomic_add_fetch(&g_released_buffers, 1, __ATOMIC_RELAXED);
  head = __atomic_load_n(&g_released, __ATOMIC_RELAXED);
  do {
    e->next = head;
  } while (!__atomic_compare_exchange_n(&g_released, &head, (int32_t)(uintptr_t)ctx, 1,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* Takes the whole list of released slots: its first slot, or -1. */
static jint take_released(void) {
  if (__atomic_load_n(&g_released, __ATOMIC_RELAXED) < 0) return -1;
  return __atomic_exchange_n(&g_released, -1, __ATOMIC_ACQUIRE);
}

/* Wraps `buffer` (direct; the Java side checked) from `offset`, as `ndim` dims with DLPack
 * `flags` (the core says which it accepts); `capacity` is its capacity. The release context is
 * `slot`, whose entry is SLOT_WRAPPED. */
static jlong wrap_direct(JNIEnv* env, jint slot, jobject buffer, jlong offset, jlong capacity,
                         jint dtype, int32_t ndim, int64_t* dims, jlong flags_bits) {
  DLTensor t;
  uint64_t flags = (uint64_t)flags_bits;
  uint64_t nbytes = 0;
  char* base;
  DLManagedTensorVersioned* out = NULL;
  dlb_error err;
  int32_t status;
  if (g_buffer_address != NULL) {
    base = (char*)(intptr_t)(*env)->GetLongField(env, buffer, g_buffer_address);
  } else {
    base = (char*)(*env)->GetDirectBufferAddress(env, buffer);
    capacity = (*env)->GetDirectBufferCapacity(env, buffer);
  }
  if (base == NULL || capacity < 0) {
    dlb_java_throw_status(env, DLB_ERR_INVALID_ARGUMENT, "the ByteBuffer is not a direct buffer");
    return 0;
  }
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
  /* dlb_tensor_wrap validates the tensor (and copies the shape); its size is checked against the
   * buffer afterwards, so validation runs once. On error nothing changed hands. */
  status = dlb_tensor_wrap(&t, flags, release_wrap, (void*)(uintptr_t)(uint32_t)slot, &out, &err);
  if (status != DLB_OK) {
    dlb_java_throw_status(env, status, err.message);
    return 0;
  }
  /* `t`, which the core just validated and copied, is still hot on this stack. */
  status = dlb_tensor_byte_size(&t, flags, &nbytes, &err);
  if (status == DLB_OK && (uint64_t)offset + nbytes > (uint64_t)capacity) {
    status = DLB_ERR_INVALID_ARGUMENT;
    snprintf(err.message, sizeof err.message, "%s",
             "the tensor needs more bytes than the ByteBuffer has remaining");
  }
  if (status != DLB_OK) {
    /* Refused after the wrap: not a release of a buffer anyone saw wrapped. */
    __atomic_store_n(&slot_entry_of((uint32_t)slot)->state, SLOT_REFUSED, __ATOMIC_RELEASE);
    dlb_tensor_free(out); /* runs release_wrap, which resets the entry */
    dlb_java_throw_status(env, status, err.message);
    return 0;
  }
  return (jlong)(intptr_t)out;
}

/* Any rank: the shape comes in a long[]. */
JNIEXPORT jlong JNICALL Java_org_dlbridge_NativeSupport_wrapDirect(
    JNIEnv* env, jclass cls, jint slot, jobject buffer, jlong offset, jlong capacity, jint dtype,
    jlongArray shape, jlong flags) {
  int64_t dims[DLB_MAX_NDIM];
  jsize ndim;
  (void)cls;
  ndim = (*env)->GetArrayLength(env, shape);
  if (ndim > DLB_MAX_NDIM) {
    dlb_java_throw_status(env, DLB_ERR_INVALID_ARGUMENT, "too many dimensions");
    return 0;
  }
  if (ndim > 0) (*env)->GetLongArrayRegion(env, shape, 0, ndim, (jlong*)dims);
  return wrap_direct(env, slot, buffer, offset, capacity, dtype, (int32_t)ndim, dims, flags);
}

/* Rank 0 to 4, the extents as arguments: no array to read through JNI. */
JNIEXPORT jlong JNICALL Java_org_dlbridge_NativeSupport_wrapDirect4(
    JNIEnv* env, jclass cls, jint slot, jobject buffer, jlong offset, jlong capacity, jint dtype,
    jint ndim, jlong d0, jlong d1, jlong d2, jlong d3, jlong flags) {
  int64_t dims[4];
  (void)cls;
  dims[0] = d0;
  dims[1] = d1;
  dims[2] = d2;
  dims[3] = d3;
  return wrap_direct(env, slot, buffer, offset, capacity, dtype, (int32_t)ndim, dims, flags);
}

/* Frees one reference, then takes the released slots (whatever thread released them). */
JNIEXPORT jint JNICALL Java_org_dlbridge_NativeSupport_free(JNIEnv* env, jclass cls,
                                                            jlong handle) {
  (void)env;
  (void)cls;
  dlb_tensor_free((DLManagedTensorVersioned*)(intptr_t)handle);
  return take_released();
}

JNIEXPORT jint JNICALL Java_org_dlbridge_NativeSupport_takeReleased(JNIEnv* env, jclass cls) {
  (void)env;
  (void)cls;
  return take_released();
}

/* Allocates the entries of slot segment `index` and returns them as a direct
 * ByteBuffer for the Java side (zeroed: SLOT_WRAPPED). Entries live until the process ends: a release may still read
 * them on a foreign thread after the JVM is gone. */
JNIEXPORT jobject JNICALL Java_org_dlbridge_NativeSupport_slotSegment(JNIEnv* env, jclass cls,
                                                                      jint index) {
  slot_entry* segment;
  (void)cls;
  if (index < 0 || index >= SLOT_MAX_SEGMENTS) {
    dlb_java_throw_status(env, DLB_ERR_OUT_OF_MEMORY, "too many live tensors");
    return NULL;
  }
  segment = __atomic_load_n(&g_segments[index], __ATOMIC_ACQUIRE);
  if (segment == NULL) {
    segment = (slot_entry*)calloc(SLOT_SEGMENT_SIZE, sizeof *segment);
    if (segment == NULL) {
      dlb_java_throw_status(env, DLB_ERR_OUT_OF_MEMORY, "out of memory");
      return NULL;
    }
    __atomic_store_n(&g_segments[index], segment, __ATOMIC_RELEASE);
  }
  return (*env)->NewDirectByteBuffer(env, segment, (jlong)(SLOT_SEGMENT_SIZE * sizeof *segment));
}

/* A direct ByteBuffer over the elements of a live tensor, when the core's dlb_tensor_host_data
 * allows it (host-readable, C-contiguous; writable unless READ_ONLY). The buffer does not own
 * the memory: the Java side ties a reference to the buffer's lifetime. */
JNIEXPORT jobject JNICALL Java_org_dlbridge_NativeSupport_byteView(JNIEnv* env, jclass cls,
                                                                   jlong handle,
                                                                   jboolean writable) {
  const DLManagedTensorVersioned* t = (const DLManagedTensorVersioned*)(intptr_t)handle;
  void* data = NULL;
  uint64_t nbytes = 0;
  dlb_error err;
  int32_t status;
  (void)cls;
  status = dlb_tensor_host_data(t, writable ? 1 : 0, &data, &nbytes, &err);
  if (status != DLB_OK) {
    dlb_java_throw_status(env, status, err.message);
    return NULL;
  }
  if (nbytes > (uint64_t)INT32_MAX) {
    dlb_java_throw_status(env, DLB_ERR_OVERFLOW, "the tensor is larger than a ByteBuffer can address");
    return NULL;
  }
  return (*env)->NewDirectByteBuffer(env, data, (jlong)nbytes);
}

JNIEXPORT jlong JNICALL Java_org_dlbridge_NativeSupport_releasedBufferCount(JNIEnv* env,
                                                                            jclass cls) {
  (void)env;
  (void)cls;
  return (jlong)__atomic_load_n(&g_released_buffers, __ATOMIC_SEQ_CST);
}

/* The address of element `index` of `handle` (the core's checks: index count and range, host
 * memory, whole-byte elements, READ_ONLY when `writable`); NULL with the exception pending. An
 * index longer than any tensor's ndim is passed on by its count alone: the core refuses the
 * count before it reads an index. */
static void* element_data(JNIEnv* env, jlong handle, jlongArray index, int writable) {
  int64_t indices[DLB_MAX_NDIM];
  jsize n = index != NULL ? (*env)->GetArrayLength(env, index) : 0;
  void* data = NULL;
  dlb_error err;
  int32_t status;
  if (index == NULL) {
    dlb_java_throw_status(env, DLB_ERR_INVALID_ARGUMENT, "index is NULL");
    return NULL;
  }
  if (n <= DLB_MAX_NDIM && n > 0) (*env)->GetLongArrayRegion(env, index, 0, n, (jlong*)indices);
  status = dlb_tensor_element_data((const DLManagedTensorVersioned*)(intptr_t)handle, (int32_t)n,
                                   n <= DLB_MAX_NDIM ? indices : NULL, writable, &data, &err);
  if (status != DLB_OK) {
    dlb_java_throw_status(env, status, err.message);
    return NULL;
  }
  return data;
}

/* Reads the `size` bytes (1, 2, 4 or 8; the Java side matched them to the dtype) of one
 * element, as the low bits of a long. */
JNIEXPORT jlong JNICALL Java_org_dlbridge_NativeSupport_elementGet(JNIEnv* env, jclass cls,
                                                                   jlong handle,
                                                                   jlongArray index, jint size) {
  const void* data = element_data(env, handle, index, 0);
  (void)cls;
  if (data == NULL) return 0;
  switch (size) {
    case 1: return *(const int8_t*)data;
    case 2: { int16_t v; memcpy(&v, data, 2); return v; }
    case 4: { int32_t v; memcpy(&v, data, 4); return v; }
    default: { int64_t v; memcpy(&v, data, 8); return v; }
  }
}

/* Writes the low `size` bytes of `bits` into one element. */
JNIEXPORT void JNICALL Java_org_dlbridge_NativeSupport_elementSet(JNIEnv* env, jclass cls,
                                                                  jlong handle, jlongArray index,
                                                                  jint size, jlong bits) {
  void* data = element_data(env, handle, index, 1);
  (void)cls;
  if (data == NULL) return;
  switch (size) {
    case 1: { int8_t v = (int8_t)bits; memcpy(data, &v, 1); break; }
    case 2: { int16_t v = (int16_t)bits; memcpy(data, &v, 2); break; }
    case 4: { int32_t v = (int32_t)bits; memcpy(data, &v, 4); break; }
    default: { int64_t v = (int64_t)bits; memcpy(data, &v, 8); break; }
  }
}
