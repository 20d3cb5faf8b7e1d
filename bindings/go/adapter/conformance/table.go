package conformance

// The table: C functions that call the Go entry points this package exports (cgo cannot put a
// Go function into a C function pointer). They live here because a file with //export may only
// declare C functions, not define them. A consumer's handle is a cgo.Handle.

/*
#include <stdint.h>
#include "dlpack_conformance.h"

extern int dlpcGoProduce(dlpc_case_spec* spec, int legacy, void** out, char* message, size_t size);
extern int dlpcGoConsume(void* tensor, int legacy, dlpc_consume_report* r, uintptr_t* handle);
extern void dlpcGoRelease(uintptr_t h);
extern int64_t dlpcGoLiveCount(void);
extern void* goExchangeProduce(dlpc_exchange_case* c, int32_t legacy, dlpc_exchange_report* report);
extern int64_t goExchangeReleases(void);

static int produce_versioned(void* ctx, const dlpc_case_spec* spec, DLManagedTensorVersioned** out,
                             char* message, size_t size) {
  return dlpcGoProduce((dlpc_case_spec*)spec, 0, (void**)out, message, size);
}

static int produce_legacy(void* ctx, const dlpc_case_spec* spec, DLManagedTensor** out,
                          char* message, size_t size) {
  return dlpcGoProduce((dlpc_case_spec*)spec, 1, (void**)out, message, size);
}

static int consume(void* tensor, int legacy, dlpc_consume_report* report) {
  uintptr_t handle = 0;
  int rc = dlpcGoConsume(tensor, legacy, report, &handle);
  if (rc == DLPC_OK) report->handle = (void*)handle;
  return rc;
}

static int consume_versioned(void* ctx, DLManagedTensorVersioned* t, dlpc_consume_report* r) {
  return consume(t, 0, r);
}

static int consume_legacy(void* ctx, DLManagedTensor* t, dlpc_consume_report* r) {
  return consume(t, 1, r);
}

static void release(void* ctx, void* handle) { dlpcGoRelease((uintptr_t)handle); }

static int64_t live_count(void* ctx) { return dlpcGoLiveCount(); }

static void* exchange_produce(void* ctx, const dlpc_exchange_case* c, int32_t legacy,
                              dlpc_exchange_report* report) {
  return goExchangeProduce((dlpc_exchange_case*)c, legacy, report);
}

static int64_t releases(void* ctx) { return goExchangeReleases(); }

static const dlpc_subject* go_subject_table(void) {
  static const dlpc_subject subject = {
    sizeof(dlpc_subject), DLPC_CONTRACT_VERSION, "dlbridge Go binding (package dlbridge)", NULL,
    produce_versioned, produce_legacy, consume_versioned, consume_legacy, release, live_count,
    "go", exchange_produce, releases,
  };
  return &subject;
}
*/
import "C"

import "unsafe"

// Table returns the subject's dlpc_subject table (static C memory).
func Table() unsafe.Pointer { return unsafe.Pointer(C.go_subject_table()) }
