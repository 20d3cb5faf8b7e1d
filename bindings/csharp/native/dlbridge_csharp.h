/* dlbridge_csharp.h - the C the C# binding still writes by hand: the exception hook shared with
 * SWIG's wrappers (typemaps_csharp.i's DLB_THROW_STATUS) and the array struct they take.
 * Everything else (wrapping, frees, releases on any thread) is dlbridge.i's and the shared
 * release engine's (generators/swig/native/dlbx_release.h). Its names carry the prefix of the
 * bindings' shared native layer, dlbx_ (here dlbx_csharp_, as Java's are dlbx_java_ and Go's
 * dlbx_go_): dlb_ is the core's alone. */
#ifndef DLBRIDGE_CSHARP_H_
#define DLBRIDGE_CSHARP_H_

#include <stdint.h>

/* An array argument as the C# wrapper passes it (DLBridge.NativeArray): the managed array,
 * pinned for the call, and its length (-1 for a null array). */
typedef struct dlbx_csharp_array {
  int64_t length;
  void* data;
} dlbx_csharp_array;

/* Records DLBridge's exception for (status, message) as the calling thread's pending exception,
 * through the callback the managed side registered (dlbx_csharp_register_exception); the C#
 * wrapper throws it when the call returns. Without a callback (no runtime: the native test) the
 * status and message are printed to stderr. */
__attribute__((visibility("hidden"))) void dlbx_csharp_throw_status(int32_t status,
                                                                   const char* message);

#define DLBX_CSHARP_EXPORT __attribute__((visibility("default")))

/* The managed side's exception callback: records the exception for the calling thread. */
typedef void (*dlbx_csharp_exception_fn)(int32_t status, const char* message);

/* Registers the exception callback (the managed side does, before its first call into
 * this library). The delegate behind it is kept alive for the life of the process. */
DLBX_CSHARP_EXPORT void dlbx_csharp_register_exception(dlbx_csharp_exception_fn callback);

#endif /* DLBRIDGE_CSHARP_H_ */
