package interop

// The agent's interop_agent table: C functions that call the Go entry points this package
// exports (cgo cannot put a Go function into a C function pointer directly). They live in this
// file's preamble because a file with //export may only declare C functions, not define them.

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../tests/interop
#include <stdint.h>
#include "interop_agent.h"

extern void* goInteropProduce(interop_case* c, int32_t legacy, interop_report* report);
extern int32_t goInteropConsume(void* tensor, interop_case* c, int32_t legacy,
                                int32_t free_on_new_thread, interop_report* report);
extern int64_t goInteropLiveCount(void);
extern int64_t goInteropReleases(void);

static void* go_produce(const interop_case* c, int32_t legacy, interop_report* report) {
  return goInteropProduce((interop_case*)c, legacy, report);
}

static int32_t go_consume(void* tensor, const interop_case* c, int32_t legacy,
                          int32_t free_on_new_thread, interop_report* report) {
  return goInteropConsume(tensor, (interop_case*)c, legacy, free_on_new_thread, report);
}

static int64_t go_live_count(void) { return goInteropLiveCount(); }

static int64_t go_releases(void) { return goInteropReleases(); }

static const interop_agent go_agent = {
    INTEROP_CONTRACT_VERSION, "go", go_produce, go_consume, go_live_count, go_releases,
};

static const interop_agent* go_agent_table(void) { return &go_agent; }
*/
import "C"

import "unsafe"

// Table returns the agent's interop_agent table (a const interop_agent*, static C memory).
func Table() unsafe.Pointer { return unsafe.Pointer(C.go_agent_table()) }
