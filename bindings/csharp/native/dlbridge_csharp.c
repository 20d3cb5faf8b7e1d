/* dlbridge_csharp.c - the exception hook of the C# binding (see dlbridge_csharp.h). */
#include "dlbridge_csharp.h"

#include <stdio.h>

#include "dlbridge/dlbridge.h"

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
