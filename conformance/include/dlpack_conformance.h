/* dlpack_conformance.h: the DLPack conformance kit and the contract a library implements to be
 * tested by it.
 *
 * The kit checks a DLPack producer or consumer against the rules of DLPack 1.3 (the ABI and the
 * rules of ownership, versions, flags, strides, shapes, offsets, sub-byte data), not against any
 * particular implementation. It depends on nothing but the DLPack header.
 *
 * A SUBJECT is the library under test. It exports one C function,
 *
 *     const dlpc_subject* dlpack_conformance_subject(void);
 *
 * returning a static table of optional entry points (any may be NULL: the cases that need it are
 * reported SKIP). The runner `dlpack-conformance --subject libfoo.so` dlopens the library, finds
 * that symbol and runs every case. A host that cannot be dlopened (a Python framework, a JVM) fills
 * a dlpc_subject itself and calls dlpc_run_case for each case (see subjects/python/).
 *
 * Two roles:
 *  - PRODUCER: the kit describes a tensor (dlpc_case_spec: dtype, shape, requested strides,
 *    offset, flags, and its values) and the subject exports one as a DLManagedTensorVersioned or a
 *    legacy DLManagedTensor. The kit checks the struct (version, flags, strides, values read
 *    through data + byte_offset and the strides), then calls its deleter exactly once, on the
 *    calling thread or on another thread, and asks the subject's live count whether its memory
 *    was released exactly once.
 *  - CONSUMER: the kit makes a tensor and hands it over (ownership moves to the subject in every
 *    case). The subject imports it as it would any foreign tensor and reports what it read
 *    (dlpc_consume_report). The kit counts its own deleter's calls: never before the subject
 *    releases an accepted tensor, exactly once after; exactly once before the call returns when the
 *    subject refuses. Managed structs made by the kit end at a page boundary followed by an
 *    inaccessible page, and a tensor whose major version is not 1 has its dl_tensor on that page:
 *    a consumer that reads what it must not read faults (the runner turns the fault into a FAIL).
 *
 * Ownership and threads: every pointer the kit passes stays valid for the call only, except the
 * managed tensors, whose ownership moves as described at each entry point. Entry points are called
 * from one thread at a time; `release` and the deleters of produced tensors may be called from a
 * thread other than the one that made them.
 */
#ifndef DLPACK_CONFORMANCE_H_
#define DLPACK_CONFORMANCE_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define DLPC_EXPORT __declspec(dllexport)
#else
#define DLPC_EXPORT __attribute__((visibility("default")))
#endif

/* Version of this contract. Structs grow only at their end; each starts with struct_size, which
 * the writer sets to sizeof(the struct) it was compiled with, and a reader uses only fields that
 * lie within it. */
#define DLPC_CONTRACT_VERSION 1

/* The name of the symbol a subject library exports. */
#define DLPC_SUBJECT_SYMBOL "dlpack_conformance_subject"

/* Largest ndim a report carries. */
#define DLPC_MAX_NDIM 8

/* Return codes of the subject's entry points. */
#define DLPC_OK 0          /* produced / accepted */
#define DLPC_UNSUPPORTED 1 /* the subject cannot express this case (a dtype, layout or flag it does not
                              support): reported SKIP with the message */
#define DLPC_REFUSED 2     /* consumer: the tensor was refused as invalid */
#define DLPC_ERROR 3       /* the subject failed: reported FAIL with the message */

/* What the kit asks a producer to export. The tensor is on the CPU (device_type 1, id 0). */
typedef struct dlpc_case_spec {
  uint64_t struct_size;
  int32_t case_id;   /* index in the catalogue (dlpc_case_get) */
  const char* check; /* the check's name, e.g. "negative-strides" */
  DLDataType dtype;
  int32_t ndim;
  const int64_t* shape;   /* ndim extents (NULL when ndim == 0) */
  const int64_t* strides; /* NULL: any layout (compact row-major expected); otherwise the element
                             strides the exported tensor must have (negative ones included) */
  int64_t offset_elements; /* > 0: export a view whose first element lies this many elements past the
                              start of its allocation (expressed through data or byte_offset) */
  uint64_t flags; /* DLPack flags asked for: READ_ONLY (a read-only export), IS_COPIED (an export that
                     is a copy the consumer solely owns), IS_SUBBYTE_TYPE_PADDED (sub-byte elements
                     padded to a byte each) */
  const void* values;   /* the elements in C order, compact, in the tensor's storage format (packed
                           sub-byte unless IS_SUBBYTE_TYPE_PADDED): what the export must hold */
  uint64_t values_size; /* bytes at `values` */
} dlpc_case_spec;

/* What a consumer reports about a tensor it accepted. The kit sets struct_size, values and
 * values_capacity before the call; the subject fills the rest. */
typedef struct dlpc_consume_report {
  uint64_t struct_size;
  /* The object the subject now holds (its array, its tensor): passed back to release(). */
  void* handle;
  /* Address of element 0 as the subject sees it (data + byte_offset folded in), or NULL when the
     tensor is empty or the subject cannot say. */
  const void* first_element;
  int32_t ndim;
  int64_t shape[DLPC_MAX_NDIM];
  /* 1 if strides[] holds the element strides the subject resolved (NULL strides resolved to
     compact row-major), 0 if the subject cannot say. */
  int32_t strides_known;
  int64_t strides[DLPC_MAX_NDIM];
  /* 1: the subject's object lets its user write to the memory; 0: it does not; -1: unknown. */
  int32_t writable;
  /* The elements as the subject reads them, copied in C order, compact, in the tensor's storage
     format (as dlpc_case_spec.values), into the kit's buffer of values_capacity bytes;
     values_size = bytes written, or UINT64_MAX when the subject did not read them. */
  void* values;
  uint64_t values_capacity;
  uint64_t values_size;
  char message[256]; /* why the tensor was refused or unsupported (NUL-terminated) */
} dlpc_consume_report;

/* Producer: export the tensor `spec` describes. On DLPC_OK *out is a new tensor the kit owns (it
 * calls its deleter exactly once). Otherwise *out is ignored and `message` (of message_size bytes)
 * says why. */
typedef int (*dlpc_produce_versioned_fn)(void* ctx, const dlpc_case_spec* spec,
                                         DLManagedTensorVersioned** out, char* message,
                                         size_t message_size);
typedef int (*dlpc_produce_legacy_fn)(void* ctx, const dlpc_case_spec* spec, DLManagedTensor** out,
                                      char* message, size_t message_size);

/* Consumer: import `tensor` as the subject imports any foreign tensor. Ownership moves to the
 * subject in every case:
 *  - DLPC_OK: accepted; the subject holds it through report->handle until release(ctx, handle);
 *  - DLPC_REFUSED (invalid tensor) or DLPC_UNSUPPORTED (valid, but not something the subject can
 *    hold): the tensor's deleter has been called exactly once before returning;
 *  - DLPC_ERROR: a failure of the subject itself (FAIL). */
typedef int (*dlpc_consume_versioned_fn)(void* ctx, DLManagedTensorVersioned* tensor,
                                         dlpc_consume_report* report);
typedef int (*dlpc_consume_legacy_fn)(void* ctx, DLManagedTensor* tensor, dlpc_consume_report* report);

/* Consumer: drop the object an accepted tensor became (its deleter must then run exactly once,
 * now or when the subject's runtime collects the object, before release returns). May be called
 * from a thread other than the one that called consume. */
typedef void (*dlpc_release_fn)(void* ctx, void* handle);

/* Producer: the number of tensors the subject exported whose deleter has not run yet (it must
 * drop by exactly one when the kit calls a deleter). NULL: the deleter checks are SKIP. */
typedef int64_t (*dlpc_live_count_fn)(void* ctx);

/* ---- Optional extension: the exchange matrix --------------------------------------------- */
/* A project that tests several implementations of its own against each other (dlbridge's
 * tests/interop: every binding produces, every binding consumes) uses the same table: the
 * matrix's producer makes a tensor by an operation on a base buffer, and its consumer is the
 * subject's consume_versioned / consume_legacy and release above, whose reports the matrix
 * checks. The kit itself never calls these. */

/* What the producer does to its freshly made, compact base tensor before exporting it. */
#define DLPC_EXCHANGE_OP_NONE 0      /* export the base itself */
#define DLPC_EXCHANGE_OP_TRANSPOSE 1 /* reverse the dimensions (a strided view) */
#define DLPC_EXCHANGE_OP_SLICE 2     /* slice dimension 0 with op_args = start, stop, step (Python;
                                        INT64_MIN for an omitted bound) */
#define DLPC_EXCHANGE_OP_SELECT 3    /* select index op_args[1] along axis op_args[0] */
#define DLPC_EXCHANGE_OP_READ_ONLY 4 /* a READ_ONLY share of the base */
#define DLPC_EXCHANGE_OP_COPY 5      /* a compact CPU copy of the base (IS_COPIED; new memory) */
#define DLPC_EXCHANGE_MAX_NDIM 2

/* One exchange. The base tensor (dtype code/bits, base_shape, C order) holds at flat index i
 * the value dlpc_exchange_base_value(dtype_code, i) (the matrix's runner defines it); the
 * exported tensor is the base after `op` and must have ndim/shape/strides (in elements), its
 * first element at base element `first`, DLPack flags `flags` (versioned; a legacy tensor has
 * none), CPU device 0. Everything after the name is int64_t, so any language can mirror it as a
 * plain struct. */
typedef struct dlpc_exchange_case {
  const char* name;
  int64_t dtype_code;
  int64_t dtype_bits;
  int64_t base_ndim;
  int64_t base_shape[DLPC_EXCHANGE_MAX_NDIM];
  int64_t op;
  int64_t op_args[3];
  int64_t ndim;
  int64_t shape[DLPC_EXCHANGE_MAX_NDIM];
  int64_t strides[DLPC_EXCHANGE_MAX_NDIM];
  int64_t first;
  int64_t flags;
  /* 1: a legacy export of this case must be refused with the status of a READ_ONLY refusal (the
   * legacy struct cannot carry READ_ONLY). */
  int64_t legacy_refused;
} dlpc_exchange_case;

/* What the producer reports besides the tensor. */
typedef struct dlpc_exchange_report {
  /* 0 when the tensor was made and exported; otherwise the status of the refused call (the
   * project's own codes), or -1; `message` says why. */
  int32_t status;
  /* Address of element 0 of the base tensor (of the copy for DLPC_EXCHANGE_OP_COPY). */
  uint64_t base;
  char message[256];
} dlpc_exchange_report;

/* Makes case `c` and exports it: a DLManagedTensorVersioned* (legacy == 0) or a DLManagedTensor*
 * (legacy == 1) that the caller owns. NULL when refused or failed: the report says why, and the
 * subject has freed what it made. */
typedef void* (*dlpc_exchange_produce_fn)(void* ctx, const dlpc_exchange_case* c, int32_t legacy,
                                          dlpc_exchange_report* report);

/* How many base buffers the exchange producer has released so far. */
typedef int64_t (*dlpc_releases_fn)(void* ctx);

/* The subject's table. Any entry point may be NULL. */
typedef struct dlpc_subject {
  uint64_t struct_size;      /* sizeof(dlpc_subject) */
  uint32_t contract_version; /* DLPC_CONTRACT_VERSION */
  const char* name;          /* e.g. "dlbridge 0.2.0" */
  void* ctx;                 /* passed to every entry point */
  dlpc_produce_versioned_fn produce_versioned;
  dlpc_produce_legacy_fn produce_legacy;
  dlpc_consume_versioned_fn consume_versioned;
  dlpc_consume_legacy_fn consume_legacy;
  dlpc_release_fn release;
  dlpc_live_count_fn live_count;
  /* The exchange matrix's extension, read only when struct_size reaches past it. */
  const char* language;                      /* the matrix's name for the subject: "c", "rust" */
  dlpc_exchange_produce_fn exchange_produce; /* NULL: no part in the matrix */
  dlpc_releases_fn releases;                 /* NULL: the producer cannot observe its releases */
} dlpc_subject;

/* The size of a table without the extension: the smallest struct_size the kit accepts. */
#define DLPC_SUBJECT_BASE_SIZE (offsetof(dlpc_subject, live_count) + sizeof(dlpc_live_count_fn))

/* The entry point of a subject library. */
typedef const dlpc_subject* (*dlpc_subject_entry_fn)(void);

/* ---------------------------------------------------------------------------------------- */
/* The kit (libdlpack_conformance)                                                          */
/* ---------------------------------------------------------------------------------------- */

#define DLPC_ROLE_PRODUCER 0
#define DLPC_ROLE_CONSUMER 1
#define DLPC_PROTOCOL_VERSIONED 0
#define DLPC_PROTOCOL_LEGACY 1

/* One case of the catalogue: a check, applied to one role and one protocol. */
typedef struct dlpc_case {
  int32_t id;
  const char* check;   /* e.g. "deleter-once" */
  int32_t role;        /* DLPC_ROLE_* */
  int32_t protocol;    /* DLPC_PROTOCOL_* */
  const char* rule;    /* the rule's section in the DLPack facts, e.g. "Rules 1 (Ownership)" */
  const char* passes;  /* what a conforming subject does */
} dlpc_case;

#define DLPC_PASS 0
#define DLPC_FAIL 1
#define DLPC_SKIP 2

typedef struct dlpc_result {
  int32_t outcome;   /* DLPC_PASS, DLPC_FAIL, DLPC_SKIP */
  char reason[512];  /* what was seen (NUL-terminated) */
} dlpc_result;

/* Number of cases in the catalogue, and case i (0 <= i < count; NULL otherwise). */
DLPC_EXPORT int32_t dlpc_case_count(void);
DLPC_EXPORT const dlpc_case* dlpc_case_get(int32_t i);

/* Runs case i against `subject` and fills *result. Returns result->outcome (or -1 for a bad i or
 * NULL argument). Tensors the kit makes or receives are released before it returns, except when
 * a fault is caught (see dlpc_set_fault_guard): that memory is leaked on purpose. */
DLPC_EXPORT int dlpc_run_case(const dlpc_subject* subject, int32_t i, dlpc_result* result);

/* 1: while the subject runs, a SIGSEGV/SIGBUS (a read of poisoned memory, a write to a READ_ONLY
 * tensor's protected page) jumps back into the kit and fails the case instead of killing the
 * process. Only for subjects written in C or C++; never for a managed runtime (Python, a JVM),
 * whose state a jump out of a signal handler would corrupt. Default 0. Not thread-safe. */
DLPC_EXPORT void dlpc_set_fault_guard(int enabled);

/* The storage bytes of the kit's values for a tensor of `count` elements of `dtype` with
 * `flags`: element i (C order) holds i % 7 + 1 (bool: i % 2), in the dtype's format. Writes
 * min(capacity, size) bytes to `out` (may be NULL) and returns the size, 0 for an unsupported
 * dtype. Used by hosts that build specs themselves. */
DLPC_EXPORT uint64_t dlpc_expected_values(DLDataType dtype, int64_t count, uint64_t flags, void* out,
                                          uint64_t capacity);

#ifdef __cplusplus
}
#endif

#endif /* DLPACK_CONFORMANCE_H_ */
