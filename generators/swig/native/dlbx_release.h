/* dlbx_release.h - the one release engine of the SWIG bindings (Java, C# and Go): "a release on
 * any thread parks a token that the managed side drains; no foreign thread ever enters the VM".
 *
 * A binding wraps memory it must keep alive (a pinned array, a direct buffer) with a token: a
 * non-zero 64-bit value of its own choosing that names what to let go of (a slot number, a
 * GCHandle). dlbridge.i's dlbx_tensor_wrap attaches dlbx_release with the token as its context.
 * When the core releases the memory (the last reference freed, on whichever thread, during a
 * runtime's shutdown too), dlbx_release touches only this file's memory:
 *  - inside dlbx_tensor_free on the same thread (the usual case: the binding's own close), the
 *    token is handed back as that call's result, without touching shared memory;
 *  - anywhere else it is queued: a bounded ring that any number of threads push to without
 *    locks or allocation, and, only when the ring is full, a lock-free overflow list of
 *    allocated nodes. The managed side takes tokens with dlbx_release_drain.
 * Every token pushed is drained exactly once.
 *
 * Compiled into each binding's native library with hidden visibility, so each binding has its
 * own queue even when several share a process. */
#ifndef DLBRIDGE_SWIG_DLBX_RELEASE_H_
#define DLBRIDGE_SWIG_DLBX_RELEASE_H_

#include <stdint.h>

#include "dlbridge/dlbridge.h"

#if defined(__GNUC__)
#define DLBX_HIDDEN __attribute__((visibility("hidden")))
#else
#define DLBX_HIDDEN
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The dlb_release_fn of every wrap made with a token: `ctx` is the token. */
DLBX_HIDDEN void dlbx_release(void* ctx);

/* Frees one reference to `tensor` (dlb_tensor_free; NULL is a no-op) and returns the token of
 * the wrapped memory this call released on this thread, or 0 when it released none. A second
 * token released in the same call (a deleter that frees another wrap) is queued.
 * Ownership: a returned token is the caller's to act on, and is not queued. */
DLBX_HIDDEN int64_t dlbx_tensor_free(DLManagedTensorVersioned* tensor);

/* Moves up to `capacity` queued tokens into `out` and returns how many. Safe from any number of
 * threads at once; a token is returned by exactly one call. */
DLBX_HIDDEN int32_t dlbx_release_drain(int32_t capacity, int64_t* out);

/* The number of tokens queued now, as a counter the managed side may read directly (an aligned
 * int64_t that lives as long as the process): a non-zero value means "drain". A snapshot only:
 * other threads push and drain meanwhile. Reading it costs a load, where asking through a call
 * would cost a transition into native code on every close. */
DLBX_HIDDEN const int64_t* dlbx_release_queued(void);

#ifdef __cplusplus
}
#endif

#endif /* DLBRIDGE_SWIG_DLBX_RELEASE_H_ */
