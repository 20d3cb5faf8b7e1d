/* dlbridge_csharp.c - the hand-written native part of the C# binding, where SWIG gets in the
 * way: the exception hook shared with SWIG's wrappers, and wrapping memory without copying
 * (a pinned managed array, or native memory) whose release may run on any thread, possibly
 * while the managed runtime shuts down or after it is gone.
 *
 * A wrapped tensor's release context is a node holding the managed side's GCHandle. The release
 * never calls into the runtime. When it runs inside the managed side's own free (dlb_cs_free, the
 * usual case: the core's reference count decides), it hands the handle straight back to that
 * call; anywhere else (a foreign thread, a consumer calling the deleter itself) it pushes the node
 * onto a lock-free stack of released nodes, which the managed side takes (dlb_cs_take_released)
 * and drains, freeing the GCHandles (which unpins the arrays). Either way it only touches this
 * library's memory. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlbridge/dlbridge.h"
#include "dlbridge_csharp.h"

static dlb_cs_exception_fn g_throw = NULL;

void dlb_cs_register_exception(dlb_cs_exception_fn callback) {
  __atomic_store_n(&g_throw, callback, __ATOMIC_RELEASE);
}

void dlb_cs_throw_status(int32_t status, const char* message) {
  dlb_cs_exception_fn callback = __atomic_load_n(&g_throw, __ATOMIC_ACQUIRE);
  if (callback != NULL) {
    callback(status, message);
  } else {
    fprintf(stderr, "dlbridge (no exception callback registered): %s: %s\n",
            dlb_status_name(status), message);
  }
}

/* ---- the release queue ---------------------------------------------------------------------- */
typedef struct release_node {
  int64_t handle;
  int32_t refused; /* wrapped, then refused by dlb_cs_wrap: the release is not reported */
  struct release_node* next;
} release_node;

/* Released nodes not yet taken: pushed lock-free by releases, taken whole by a drainer. */
static release_node* g_released = NULL;
/* Nodes a drainer took but could not hand out (capacity): written under g_drain_lock. */
static release_node* g_taken = NULL;
static pthread_mutex_t g_drain_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_released_count = 0;
/* While dlb_cs_free runs on this thread: where a release inside it puts its handle (0 until one
 * does). The handle then goes back as the call's result, without the shared queue's atomics. */
static __thread int64_t* t_released_here = NULL;

/* The release of a wrapped tensor: runs on whichever thread frees the last reference, with or
 * without a managed runtime. */
static void release_wrapped(void* ctx) {
  release_node* node = (release_node*)ctx;
  release_node* head;
  int64_t* here;
  if (node->refused) {
    free(node);
    return;
  }
  __atomic_add_fetch(&g_released_count, 1, __ATOMIC_RELAXED);
  here = t_released_here;
  if (here != NULL && *here == 0) {
    *here = node->handle;
    free(node);
    return;
  }
  head = __atomic_load_n(&g_released, __ATOMIC_RELAXED);
  do {
    node->next = head;
  } while (!__atomic_compare_exchange_n(&g_released, &head, node, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

/* Hands out nodes of `list` into `out` until it is full; returns the rest of the list. */
static release_node* hand_out(release_node* list, int64_t* out, int32_t capacity, int32_t* n) {
  while (*n < capacity && list != NULL) {
    release_node* node = list;
    list = node->next;
    out[(*n)++] = node->handle;
    free(node);
  }
  return list;
}

int32_t dlb_cs_take_released(int64_t* out, int32_t capacity) {
  int32_t n = 0;
  release_node* rest;
  if (out == NULL || capacity <= 0) return 0;
  /* Fast path, without the lock: nothing left over by an earlier take; take the whole list. */
  if (__atomic_load_n(&g_taken, __ATOMIC_ACQUIRE) == NULL) {
    if (__atomic_load_n(&g_released, __ATOMIC_RELAXED) == NULL) return 0;
    rest = hand_out(__atomic_exchange_n(&g_released, NULL, __ATOMIC_ACQUIRE), out, capacity, &n);
    if (rest == NULL) return n;
    /* More than fits: keep the rest for the next take (in front of what others left). */
    pthread_mutex_lock(&g_drain_lock);
    {
      release_node* tail = rest;
      while (tail->next != NULL) tail = tail->next;
      tail->next = __atomic_load_n(&g_taken, __ATOMIC_RELAXED);
      __atomic_store_n(&g_taken, rest, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_drain_lock);
    return n;
  }
  /* Leftovers: handed out under the lock, then the queue as above. */
  pthread_mutex_lock(&g_drain_lock);
  {
    release_node* taken = __atomic_load_n(&g_taken, __ATOMIC_RELAXED);
    if (taken == NULL) taken = __atomic_exchange_n(&g_released, NULL, __ATOMIC_ACQUIRE);
    __atomic_store_n(&g_taken, hand_out(taken, out, capacity, &n), __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_drain_lock);
  return n;
}

int64_t dlb_cs_released_count(void) {
  return __atomic_load_n(&g_released_count, __ATOMIC_SEQ_CST);
}

int64_t dlb_cs_free(int64_t tensor) {
  int64_t released = 0;
  /* Saved and restored: a deleter this free runs may itself free through here. */
  int64_t* outer = t_released_here;
  t_released_here = &released;
  dlb_tensor_free((DLManagedTensorVersioned*)(intptr_t)tensor);
  t_released_here = outer;
  return released;
}

void* const* dlb_cs_released_head(void) { return (void* const*)&g_released; }

/* ---- wrapping --------------------------------------------------------------------------------- */
int64_t dlb_cs_wrap(int64_t data, uint64_t byte_offset, int64_t device, int32_t dtype,
                    int32_t ndim, const int64_t* shape, const int64_t* strides, uint64_t flags,
                    int64_t capacity, int64_t handle) {
  DLTensor t;
  DLManagedTensorVersioned* out = NULL;
  release_node* node = NULL;
  dlb_error err;
  dlb_status status;
  t.data = (void*)(intptr_t)data;
  t.device.device_type = (DLDeviceType)(int32_t)((uint64_t)device >> 32);
  t.device.device_id = (int32_t)(uint32_t)((uint64_t)device & 0xffffffffu);
  t.ndim = ndim;
  t.dtype.code = (uint8_t)(dtype & 0xff);
  t.dtype.bits = (uint8_t)((dtype >> 8) & 0xff);
  t.dtype.lanes = (uint16_t)(((uint32_t)dtype >> 16) & 0xffff);
  t.shape = (int64_t*)(intptr_t)shape;
  t.strides = (int64_t*)(intptr_t)strides;
  t.byte_offset = byte_offset;
  if (handle != 0) {
    node = (release_node*)malloc(sizeof *node);
    if (node == NULL) {
      dlb_cs_throw_status(DLB_ERR_OUT_OF_MEMORY, "out of memory");
      return 0;
    }
    node->handle = handle;
    node->refused = 0;
    node->next = NULL;
  }
  /* The core validates the tensor (its messages) and copies shape and strides; on error nothing
   * changed hands. */
  status = dlb_tensor_wrap(&t, flags, node != NULL ? release_wrapped : NULL, node, &out, &err);
  if (status != DLB_OK) {
    free(node);
    dlb_cs_throw_status(status, err.message);
    return 0;
  }
  if (capacity >= 0) {
    /* The bytes the elements touch, by the core's rule, must lie inside the array. */
    int64_t begin = 0, size = 0;
    status = dlb_tensor_byte_span(&t, flags, &begin, &size, &err);
    if (status == DLB_OK && (begin < 0 || size > capacity || begin > capacity - size)) {
      status = DLB_ERR_INVALID_ARGUMENT;
      snprintf(err.message, sizeof err.message, "%s",
               "the tensor reaches beyond the memory it wraps");
    }
    if (status != DLB_OK) {
      /* Refused after the wrap: not a release anyone saw wrapped. */
      if (node != NULL) node->refused = 1;
      dlb_tensor_free(out); /* frees the node */
      dlb_cs_throw_status(status, err.message);
      return 0;
    }
  }
  return (int64_t)(intptr_t)out;
}
