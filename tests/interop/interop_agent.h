/*
 * interop_agent.h - the contract of the cross-language interop matrix (tests/interop/).
 *
 * Every language takes part as an *agent*: a native library (C shared library, Rust cdylib, Go
 * c-shared, ...) that exports one function, interop_agent_get(), returning the table below. Its
 * entry points produce and consume DLPack tensors with that language's PUBLIC dlbridge binding
 * API only; the DLPack structs are the only thing that crosses between two agents. A *host* (the
 * C host, the Java host through the Java adapter's JNI library, ...) loads agents and runs every
 * ordered pair.
 *
 * Each agent may link its own (static, hidden) copy of the dlbridge core, so live counts are per
 * agent: the host compares each side's own live_count() before and after an exchange.
 *
 * Everything in interop_case is int64_t after the name, so any language can mirror it as a
 * plain struct (or read it through its C interop) without layout surprises.
 */
#ifndef DLBRIDGE_INTEROP_AGENT_H_
#define DLBRIDGE_INTEROP_AGENT_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever interop_agent, interop_case or interop_report change. */
#define INTEROP_CONTRACT_VERSION 1
#define INTEROP_MAX_NDIM 2
#define INTEROP_MESSAGE_SIZE 256

/* What the producer does to its freshly made, compact base tensor before exporting it. */
#define INTEROP_OP_NONE 0      /* export the base itself */
#define INTEROP_OP_TRANSPOSE 1 /* reverse the dimensions (a strided view) */
#define INTEROP_OP_SLICE 2     /* slice dimension 0 with op_args = start, stop, step (Python) */
#define INTEROP_OP_SELECT 3    /* select index op_args[1] along axis op_args[0] */
#define INTEROP_OP_READ_ONLY 4 /* a READ_ONLY share of the base */
#define INTEROP_OP_COPY 5      /* a compact CPU copy of the base (IS_COPIED; new memory) */

/* One exchange. The base tensor holds base_value(dtype_code, i) at flat C-order index i
 * (see interop_base_value); the exported tensor is the base after `op`. What the consumer must
 * see: ndim/shape/strides (in elements, relative to the base memory), the first element at base
 * element `first`, DLPack flags `flags` (versioned; a legacy tensor has none), CPU device 0, and
 * element k (C order, multi-index m) equal to base_value(first + sum(m[d] * strides[d])).
 * For INTEROP_OP_COPY the exported memory is the copy's, and `base` in the producer's report is
 * the copy's first element. A versioned tensor with IS_COPIED must be exclusive to its consumer. */
typedef struct interop_case {
  const char* name;
  int64_t dtype_code;
  int64_t dtype_bits;
  int64_t base_ndim;
  int64_t base_shape[INTEROP_MAX_NDIM];
  int64_t op;
  int64_t op_args[3];
  int64_t ndim;
  int64_t shape[INTEROP_MAX_NDIM];
  int64_t strides[INTEROP_MAX_NDIM];
  int64_t first;
  int64_t flags;
  /* 1: a legacy export of this case must be refused with DLB_ERR_READ_ONLY (5): the legacy
   * struct cannot carry READ_ONLY. */
  int64_t legacy_refused;
} interop_case;

/* What one side saw. The host compares the producer's and the consumer's reports. */
typedef struct interop_report {
  /* 0 when every check passed; otherwise a dlb_status of a refused call, or -1 for a failed
   * check. `message` says which. */
  int32_t status;
  /* Consumer: 1 when a write into a READ_ONLY tensor was refused with DLB_ERR_READ_ONLY, 0
   * when it was allowed, -1 when no write was tried (every case but READ_ONLY). */
  int32_t write_refused;
  /* Address of the first element (data + byte_offset): the producer's as exported, the
   * consumer's as its binding shows the imported tensor. Equal when no copy was made. */
  uint64_t data;
  /* Producer: address of element 0 of its base tensor (of the copy for INTEROP_OP_COPY). */
  uint64_t base;
  /* Consumer: sum over k of value_k * (k + 1), elements in C order, as read. */
  double checksum;
  char message[INTEROP_MESSAGE_SIZE];
} interop_report;

typedef struct interop_agent {
  uint32_t contract_version; /* INTEROP_CONTRACT_VERSION */
  const char* name;          /* "c", "rust", ... */
  /* Makes case `c` with the binding's public API and exports it: a DLManagedTensorVersioned*
   * (legacy == 0) or a DLManagedTensor* (legacy == 1) that the caller owns. Fills report's
   * status, data, base (and message). NULL when the export was refused (status says why; the
   * agent has freed what it made). */
  void* (*produce)(const interop_case* c, int32_t legacy, interop_report* report);
  /* Imports `tensor` (a DLManagedTensorVersioned* or, legacy, a DLManagedTensor*) with the
   * binding's public API, consuming it in every case; checks it against `c`; for a READ_ONLY
   * case tries a write; then frees it (on a new thread when free_on_new_thread != 0, joined
   * before returning). Fills the report; returns report->status. */
  int32_t (*consume)(void* tensor, const interop_case* c, int32_t legacy,
                     int32_t free_on_new_thread, interop_report* report);
  /* dlb_tensor_live_count() of this agent's copy of the core. */
  int64_t (*live_count)(void);
  /* How many base buffers this agent's producer has released so far (its counting release
   * callback), or NULL when the binding cannot observe it. */
  int64_t (*releases)(void);
} interop_agent;

/* The one symbol every agent library exports. */
typedef const interop_agent* (*interop_agent_get_fn)(void);
const interop_agent* interop_agent_get(void);

/* ---- the case table and its rules (interop_cases.c; agents in other languages mirror the
 * three small rules below) ---- */

extern const interop_case interop_cases[];
extern const int interop_case_count;

/* Element i of every base tensor: integers i*3-4, unsigned i*3+1, floats (i*3-4)/2 (exact in
 * every dtype used). */
double interop_base_value(int64_t dtype_code, int64_t i);
/* Number of elements of the exported tensor. */
int64_t interop_element_count(const interop_case* c);
/* Expected value of element k (C order) of the exported tensor. */
double interop_expected_value(const interop_case* c, int64_t k);
/* Sum over k of interop_expected_value(c, k) * (k + 1). */
double interop_expected_checksum(const interop_case* c);

#ifdef __cplusplus
}
#endif

#endif /* DLBRIDGE_INTEROP_AGENT_H_ */
