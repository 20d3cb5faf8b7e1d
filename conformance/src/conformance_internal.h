/* conformance_internal.h: the kit's private header, shared by its sources and not installed.
 * It declares what the parts of the kit use from one another: the flag shorthands; the values
 * and layout helpers (values.c); the fault guard's call into the subject (fault_guard.c); the
 * consumer checks and the description of the tensors the kit makes (consumer_checks.c); the
 * producer checks and their extra checks (producer_checks.c). catalogue.c runs the cases through
 * them. Everything here has hidden visibility: the library exports only dlpack_conformance.h. */
#ifndef DLPACK_CONFORMANCE_INTERNAL_H_
#define DLPACK_CONFORMANCE_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include "dlpack_conformance.h"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

#define KNOWN_FLAGS                                                                \
  (DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED |                 \
   DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED)
#define RO DLPACK_FLAG_BITMASK_READ_ONLY
#define COPIED DLPACK_FLAG_BITMASK_IS_COPIED
#define PADDED DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED

/* ---- values and layout helpers (values.c) ----------------------------------------------------- */

int is_subbyte(DLDataType t);
/* Bits one element occupies in storage. */
uint32_t storage_bits(DLDataType t, uint64_t flags);
int64_t shape_count(int32_t ndim, const int64_t* shape);
void compact_strides(int32_t ndim, const int64_t* shape, int64_t* out);
/* Copies the elements of a strided tensor starting at `first` into `out` (compact, C order). */
void gather(const unsigned char* first, DLDataType t, uint64_t flags, int32_t ndim,
            const int64_t* shape, const int64_t* strides, unsigned char* out);
/* The inverse: writes compact values into a strided layout at `first`. */
void scatter(unsigned char* first, DLDataType t, uint64_t flags, int32_t ndim,
             const int64_t* shape, const int64_t* strides, const unsigned char* values);
/* Lowest and one-past-highest element offsets a layout touches. */
void offset_range(int32_t ndim, const int64_t* shape, const int64_t* strides, int64_t* lo,
                  int64_t* hi);
/* Compares storage bytes of `count` elements; the bits after the last packed sub-byte element
 * carry nothing and are ignored. */
int values_equal(const unsigned char* a, const unsigned char* b, DLDataType t, uint64_t flags,
                 int64_t count);
void say(dlpc_result* r, int outcome, const char* fmt, ...);
char* format_dims(char* buf, size_t size, int32_t ndim, const int64_t* v);

/* ---- fault guard and threads (fault_guard.c) -------------------------------------------------- */

/* Where the last fault the guard caught happened. */
extern volatile void* g_fault_address;

typedef void (*guarded_fn)(void* arg);

/* Runs fn(arg) on this thread (other_thread == 0) or on a new one. Returns 1 if the guard
 * caught a fault. */
int call_subject(guarded_fn fn, void* arg, int other_thread);

/* ---- consumer checks (consumer_checks.c) ------------------------------------------------------ */

/* How a consumer case's tensor is made. */
typedef struct desc {
  DLDataType dtype;
  int32_t ndim;
  int64_t shape[4];
  int has_strides;
  int64_t strides[4];
  int64_t offset_elements;
  uint64_t flags;
  /* consumer-only */
  uint32_t major, minor;
  int32_t device_type;
  int null_data;       /* empty tensor with data == NULL */
  int null_shape;      /* 0-d with shape == strides == NULL */
  int misalign;        /* bytes added to a 256-aligned address */
  int protect_data;    /* data pages read-only while the consumer holds it */
  int poison_tensor;   /* dl_tensor on the inaccessible page (major != 1) */
  int patch_code;      /* > 0: the struct says this dtype code (data laid out for `dtype`) */
  int64_t patch_extent; /* != 0: the struct's last extent says this (data laid out for `shape`) */
} desc;

desc make_desc(DLDataType t, int32_t ndim, const int64_t* shape);

/* Expectation of a consumer case. */
enum { EXPECT_ACCEPT, EXPECT_REFUSE };

/* Hands a kit tensor described by `d` to the subject and checks what it does. Returns the
 * outcome; `note` (may be NULL) is appended to a PASS reason. */
int consume_case(const dlpc_subject* s, int legacy, const desc* d, int expect,
                 int release_on_thread, dlpc_result* r, const char* note);

/* ---- producer checks (producer_checks.c) ------------------------------------------------------ */

/* What a producer case looks for beyond the values. */
typedef struct produced {
  int rc;
  char message[256];
  DLManagedTensorVersioned* v;
  DLManagedTensor* l;
  DLTensor* t;
  uint64_t flags;
  unsigned char* got; /* the produced values, gathered */
  uint64_t got_size;
  int values_match;
  char problem[256]; /* first structural problem, or "" */
  int64_t live_before;
} produced;

/* Asks the subject for the tensor `d` describes and checks dtype, device, shape, strides
 * (when asked for) and values. Does not delete it. */
void produce(const dlpc_subject* s, const dlpc_case* c, int legacy, const desc* d, produced* p);

/* Calls the produced tensor's deleter once (on another thread if asked) and checks the live
 * count. Returns 0 and leaves r alone when fine; otherwise fills r with a FAIL. */
int release_produced(const dlpc_subject* s, produced* p, int other_thread, dlpc_result* r);

/* `extra` checks the produced tensor; it may fill r and return non-zero. */
typedef int (*extra_check)(const produced* p, const desc* d, int legacy, dlpc_result* r);

/* The common producer flow: produce, look, delete. */
int produce_case(const dlpc_subject* s, const dlpc_case* c, const desc* d, int other_thread,
                 extra_check extra, dlpc_result* r);

/* The extra checks of the producer cases that need one. */
int extra_version(const produced* p, const desc* d, int legacy, dlpc_result* r);
int extra_strides(const produced* p, const desc* d, int legacy, dlpc_result* r);
int extra_read_only(const produced* p, const desc* d, int legacy, dlpc_result* r);
int extra_copied(const produced* p, const desc* d, int legacy, dlpc_result* r);
int extra_alignment(const produced* p, const desc* d, int legacy, dlpc_result* r);
int extra_zero_size(const produced* p, const desc* d, int legacy, dlpc_result* r);
int extra_zero_dim(const produced* p, const desc* d, int legacy, dlpc_result* r);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif /* DLPACK_CONFORMANCE_INTERNAL_H_ */
