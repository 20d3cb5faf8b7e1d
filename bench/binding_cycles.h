/* binding_cycles.h - the C column of every binding's bench (Java, C#): each function runs one
 * of the benches' cycles `n` times straight against the core, so that a binding's row and its C
 * counterpart are measured in the same run and the same process. The core is linked into the
 * helper module that holds these (statically, symbols hidden). */
#ifndef DLBRIDGE_BENCH_BINDING_CYCLES_H
#define DLBRIDGE_BENCH_BINDING_CYCLES_H

#include <stdint.h>

#include "dlbridge/dlbridge.h"

#define BENCH_CYCLE_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* Each returns DLB_OK, or the first failing status with `error` filled (error may be NULL). */

/* dlb_tensor_wrap of a 16x16 float32 buffer (with a release callback) + dlb_tensor_free. */
BENCH_CYCLE_API int32_t bench_cycle_wrap_free(int32_t n, dlb_error* error);
/* dlb_tensor_allocate(CPU, float32, 16x16) + dlb_tensor_free. */
BENCH_CYCLE_API int32_t bench_cycle_allocate_free(int32_t n, dlb_error* error);
/* wrap + (export: the versioned struct is the handle itself) + dlb_tensor_import + free. */
BENCH_CYCLE_API int32_t bench_cycle_wrap_export_import_free(int32_t n, dlb_error* error);
/* wrap + dlb_tensor_export_legacy + dlb_tensor_import_legacy + free. */
BENCH_CYCLE_API int32_t bench_cycle_wrap_legacy_free(int32_t n, dlb_error* error);
/* How many release callbacks the cycles have run (a sanity check). */
BENCH_CYCLE_API int64_t bench_cycle_releases(void);
/* An empty function: the floor of one call from a runtime into native code. */
BENCH_CYCLE_API void bench_cycle_noop(void);

#ifdef __cplusplus
}
#endif

#endif
