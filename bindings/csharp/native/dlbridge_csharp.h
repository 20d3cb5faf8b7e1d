/* dlbridge_csharp.h - shared by the SWIG wrapper (through typemaps_csharp.i) and
 * dlbridge_csharp.c, the hand-written native part of the C# binding. */
#ifndef DLBRIDGE_CSHARP_H_
#define DLBRIDGE_CSHARP_H_

#include <stdint.h>

/* An array argument as the C# wrapper passes it (DLBridge.NativeArray): the managed array,
 * pinned for the call, and its length (-1 for a null array). */
typedef struct dlb_cs_array {
  int64_t length;
  void* data;
} dlb_cs_array;

/* Records DLBridge.DLPackException(status, message) as the calling thread's pending exception,
 * through the callback the managed side registered (dlb_cs_register_exception). Without one
 * (no runtime), the status and message are printed to stderr. */
__attribute__((visibility("hidden"))) void dlb_cs_throw_status(int32_t status, const char* message);

#define DLB_CS_EXPORT __attribute__((visibility("default")))

/* The managed side's exception callback: records the exception for the calling thread. */
typedef void (*dlb_cs_exception_fn)(int32_t status, const char* message);

/* Registers the exception callback (DLBridge.NativeExceptions does, at type initialisation). */
DLB_CS_EXPORT void dlb_cs_register_exception(dlb_cs_exception_fn callback);

/* Wraps memory without copying: `data` (+ byte_offset) on `device` (packed as in dlbridge.i:
 * type << 32 | id), `ndim` extents in `shape`, `strides` NULL (row-major) or ndim values,
 * dtype packed (code | bits << 8 | lanes << 16), DLPack `flags`. `capacity` is the number of
 * bytes at `data` the tensor may reach (a pinned array's size), or -1 for memory whose extent
 * the caller vouches for. `handle` is the managed side's GCHandle for what must be released (0:
 * nothing). Returns the new tensor's address, or 0 after raising the exception (the core's
 * status and message).
 * Ownership: on success the tensor holds `handle`; when its last reference is freed, on any
 * thread, `handle` goes back to the managed side: as the result of the dlb_cs_free that freed
 * it, otherwise queued for dlb_cs_take_released (the queue is this library's own memory:
 * nothing calls into a runtime from a deleter). On error nothing is queued and the caller keeps
 * `handle`. */
DLB_CS_EXPORT int64_t dlb_cs_wrap(int64_t data, uint64_t byte_offset, int64_t device,
                                  int32_t dtype, int32_t ndim, const int64_t* shape,
                                  const int64_t* strides, uint64_t flags, int64_t capacity,
                                  int64_t handle);

/* Frees one reference to a tensor (dlb_tensor_free). Returns the handle of wrapped memory
 * released during this call on this thread, or 0 when none was: the tensor's own when this was
 * its last reference, or one that a deleter run by this free released (the core finishes frees
 * made inside deleters at the end of the outermost free, so they release here).
 * Ownership: a returned handle is the caller's to let go of and is not queued. Every other
 * release (a second one in the same call, other threads, deleters called directly) is queued
 * for dlb_cs_take_released. */
DLB_CS_EXPORT int64_t dlb_cs_free(int64_t tensor);

/* The address of the queue's head (NULL when empty): the managed side reads it to know, without
 * a call, whether there is anything to take. Valid for the life of the process. */
DLB_CS_EXPORT void* const* dlb_cs_released_head(void);

/* Moves up to `capacity` released handles into `out`; returns how many. Safe from any number
 * of threads at once. */
DLB_CS_EXPORT int32_t dlb_cs_take_released(int64_t* out, int32_t capacity);

/* The number of wrapped handles released so far (over the whole process). */
DLB_CS_EXPORT int64_t dlb_cs_released_count(void);

#endif /* DLBRIDGE_CSHARP_H_ */
