/* dlbridge_csharp.h - the C the C# binding still writes by hand: the exception hook shared with
 * SWIG's wrappers (typemaps_csharp.i's DLB_THROW_STATUS) and the array struct they take.
 * Everything else (wrapping, frees, releases on any thread) is dlbridge.i's and the shared
 * release engine's (generators/swig/native/dlbx_release.h). */
#ifndef DLBRIDGE_CSHARP_H_
#define DLBRIDGE_CSHARP_H_

#include <stdint.h>

/* An array argument as the C# wrapper passes it (DLBridge.NativeArray): the managed array,
 * pinned for the call, and its length (-1 for a null array). */
typedef struct dlb_cs_array {
  int64_t length;
  void* data;
} dlb_cs_array;

/* Records DLBridge's exception for (status, message) as the calling thread's pending exception,
 * through the callback the managed side registered (dlb_cs_register_exception); the C# wrapper
 * throws it when the call returns. Without a callback (no runtime: the native test) the status
 * and message are printed to stderr. */
__attribute__((visibility("hidden"))) void dlb_cs_throw_status(int32_t status, const char* message);

#define DLB_CS_EXPORT __attribute__((visibility("default")))

/* The managed side's exception callback: records the exception for the calling thread. */
typedef void (*dlb_cs_exception_fn)(int32_t status, const char* message);

/* Registers the exception callback (the managed side does, before its first call into
 * this library). The delegate behind it is kept alive for the life of the process. */
DLB_CS_EXPORT void dlb_cs_register_exception(dlb_cs_exception_fn callback);

#endif /* DLBRIDGE_CSHARP_H_ */
