/* table.c - the Go agent's interop_agent table: C functions that call the Go entry points
 * exported by agent.go (cgo cannot put a Go function into a C function pointer directly). */
#include "_cgo_export.h"

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

const interop_agent* dlbx_interop_go_agent(void) { return &go_agent; }
