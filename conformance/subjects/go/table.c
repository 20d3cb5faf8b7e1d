/* table.c - the Go subject's dlpc_subject table: C functions that call the Go entry points
 * exported by subject.go (cgo cannot put a Go function into a C function pointer), and the
 * conversions between the report's void* handle and the cgo.Handle (an integer) that Go keeps. */
#include <stdint.h>

#include "_cgo_export.h"

static int produce_versioned(void* ctx, const dlpc_case_spec* spec, DLManagedTensorVersioned** out,
                             char* message, size_t size) {
  (void)ctx;
  return dlpcGoProduce((dlpc_case_spec*)spec, 0, (void**)out, message, size);
}

static int produce_legacy(void* ctx, const dlpc_case_spec* spec, DLManagedTensor** out, char* message,
                          size_t size) {
  (void)ctx;
  return dlpcGoProduce((dlpc_case_spec*)spec, 1, (void**)out, message, size);
}

static int consume(void* tensor, int legacy, dlpc_consume_report* report) {
  uintptr_t handle = 0;
  int rc = dlpcGoConsume(tensor, legacy, report, &handle);
  if (rc == DLPC_OK) report->handle = (void*)handle;
  return rc;
}

static int consume_versioned(void* ctx, DLManagedTensorVersioned* tensor, dlpc_consume_report* report) {
  (void)ctx;
  return consume(tensor, 0, report);
}

static int consume_legacy(void* ctx, DLManagedTensor* tensor, dlpc_consume_report* report) {
  (void)ctx;
  return consume(tensor, 1, report);
}

static void release(void* ctx, void* handle) {
  (void)ctx;
  dlpcGoRelease((uintptr_t)handle);
}

static int64_t live_count(void* ctx) {
  (void)ctx;
  return dlpcGoLiveCount();
}

DLPC_EXPORT const dlpc_subject* dlpack_conformance_subject(void) {
  static const dlpc_subject subject = {
    sizeof(dlpc_subject), DLPC_CONTRACT_VERSION, "dlbridge Go binding (package dlbridge)", NULL,
    produce_versioned, produce_legacy, consume_versioned, consume_legacy, release, live_count,
  };
  return &subject;
}
