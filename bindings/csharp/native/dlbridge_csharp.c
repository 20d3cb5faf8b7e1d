/* dlbridge_csharp.c - the exception hook of the C# binding (see dlbridge_csharp.h). */
#include "dlbridge_csharp.h"

#include <stdio.h>

#include "dlbridge/dlbridge.h"

static dlbx_csharp_exception_fn g_throw = NULL;

void dlbx_csharp_register_exception(dlbx_csharp_exception_fn callback) {
  __atomic_store_n(&g_throw, callback, __ATOMIC_RELEASE);
}

void dlbx_csharp_throw_status(int32_t status, const char* message) {
  dlbx_csharp_exception_fn callback = __atomic_load_n(&g_throw, __ATOMIC_ACQUIRE);
  if (callback != NULL) {
    callback(status, message);
  } else {
    fprintf(stderr, "dlbridge (no exception callback registered): %s: %s\n",
            dlb_status_name(status), message);
  }
}
