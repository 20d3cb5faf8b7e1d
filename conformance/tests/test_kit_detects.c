/* The kit's own test: a subject that breaks one rule at a time must fail exactly the case that
 * checks that rule, with a reason naming what it saw, and must pass that case when it breaks
 * nothing. (A kit that passes every subject proves nothing about the subjects it passes.)
 * Prints one line per expectation and "N passed, N failed" last. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlpack_conformance.h"

enum {
  NONE,
  CONSUME_IGNORE_OFFSET,       /* reads data, not data + byte_offset */
  CONSUME_READ_BEFORE_VERSION, /* reads dl_tensor before checking the major version */
  CONSUME_NO_DELETE_ON_REFUSE, /* refuses without calling the deleter */
  CONSUME_WRITE,               /* writes to the data whatever the flags say */
  CONSUME_ACCEPT_UNKNOWN_FLAGS,
  CONSUME_DELETE_EARLY,        /* calls the deleter at once but keeps using the memory */
  PRODUCE_NO_READ_ONLY_FLAG,
  PRODUCE_NULL_STRIDES,
  PRODUCE_LEAK,                /* its deleter does not release the export */
  PRODUCE_VERSION_2,
};
static const char* kModeName[] = {
  "none", "consumer ignores byte_offset", "consumer reads dl_tensor of major 2",
  "consumer refuses without deleting", "consumer writes READ_ONLY data",
  "consumer accepts unknown flags", "consumer deletes before it is done",
  "producer drops READ_ONLY", "producer sends NULL strides in 1.3", "producer's deleter leaks",
  "producer stamps major 2",
};
static int g_mode = NONE;
static int64_t g_live = 0;

/* ---- a small C producer of compact float32 tensors ------------------------------------------- */

typedef struct exported {
  DLManagedTensorVersioned v;
  DLManagedTensor l;
  int64_t shape[8];
  int64_t strides[8];
  float data[64];
} exported;

static void release_export(exported* e) {
  if (g_mode != PRODUCE_LEAK) --g_live;
  free(e);
}
static void delete_v(DLManagedTensorVersioned* self) { release_export((exported*)self->manager_ctx); }
static void delete_l(DLManagedTensor* self) { release_export((exported*)self->manager_ctx); }

static int simple_layout(const dlpc_case_spec* spec) {
  return spec->dtype.code == kDLFloat && spec->dtype.bits == 32 && spec->dtype.lanes == 1 &&
         !spec->strides && spec->offset_elements == 0 && spec->values_size <= sizeof(float) * 64 &&
         spec->ndim <= 8 && spec->values_size > 0;
}

static exported* make_export(const dlpc_case_spec* spec, DLTensor* t, exported* e) {
  int64_t stride = 1;
  for (int32_t d = spec->ndim - 1; d >= 0; --d) {
    e->shape[d] = spec->shape[d];
    e->strides[d] = stride;
    stride *= spec->shape[d];
  }
  memcpy(e->data, spec->values, spec->values_size);
  t->data = e->data;
  t->device.device_type = kDLCPU;
  t->ndim = spec->ndim;
  t->dtype = spec->dtype;
  t->shape = e->shape;
  t->strides = g_mode == PRODUCE_NULL_STRIDES ? NULL : e->strides;
  ++g_live;
  return e;
}

static int produce_v(void* ctx, const dlpc_case_spec* spec, DLManagedTensorVersioned** out, char* msg,
                     size_t size) {
  (void)ctx;
  if (!simple_layout(spec)) {
    snprintf(msg, size, "only compact float32");
    return DLPC_UNSUPPORTED;
  }
  exported* e = (exported*)calloc(1, sizeof *e);
  make_export(spec, &e->v.dl_tensor, e);
  e->v.version.major = g_mode == PRODUCE_VERSION_2 ? 2 : 1;
  e->v.version.minor = 3;
  e->v.manager_ctx = e;
  e->v.deleter = delete_v;
  e->v.flags = spec->flags & (g_mode == PRODUCE_NO_READ_ONLY_FLAG ? ~(uint64_t)DLPACK_FLAG_BITMASK_READ_ONLY
                                                                  : ~(uint64_t)0);
  *out = &e->v;
  return DLPC_OK;
}

static int produce_l(void* ctx, const dlpc_case_spec* spec, DLManagedTensor** out, char* msg, size_t size) {
  (void)ctx;
  if (!simple_layout(spec) || spec->flags) {
    snprintf(msg, size, "only compact float32 without flags");
    return spec->flags & DLPACK_FLAG_BITMASK_READ_ONLY ? DLPC_REFUSED : DLPC_UNSUPPORTED;
  }
  exported* e = (exported*)calloc(1, sizeof *e);
  make_export(spec, &e->l.dl_tensor, e);
  e->l.manager_ctx = e;
  e->l.deleter = delete_l;
  *out = &e->l;
  return DLPC_OK;
}

static int64_t live_count(void* ctx) {
  (void)ctx;
  return g_live;
}

/* ---- a small C consumer of float32 tensors -------------------------------------------------- */

typedef struct held {
  DLManagedTensorVersioned* v;
  DLManagedTensor* l;
} held;

static void drop(DLManagedTensorVersioned* v, DLManagedTensor* l) {
  if (v && v->deleter) v->deleter(v);
  if (l && l->deleter) l->deleter(l);
}

static int consume(DLManagedTensorVersioned* v, DLManagedTensor* l, dlpc_consume_report* r) {
  if (v && g_mode == CONSUME_READ_BEFORE_VERSION) r->ndim = v->dl_tensor.ndim; /* the bug */
  if (v && v->version.major != 1) {
    drop(v, NULL);
    snprintf(r->message, sizeof r->message, "major %u", v->version.major);
    return DLPC_REFUSED;
  }
  uint64_t flags = v ? v->flags : 0;
  const DLTensor* t = v ? &v->dl_tensor : &l->dl_tensor;
  const char* why = NULL;
  if ((flags & ~(uint64_t)7) && g_mode != CONSUME_ACCEPT_UNKNOWN_FLAGS) why = "unknown flags";
  else if (t->device.device_type != kDLCPU) why = "not a CPU tensor";
  else if (t->dtype.code > 17) why = "unknown dtype";
  else if (t->ndim < 0 || t->ndim > DLPC_MAX_NDIM) why = "bad ndim";
  for (int32_t d = 0; !why && d < t->ndim; ++d)
    if (t->shape[d] < 0) why = "negative extent";
  if (why) {
    if (g_mode != CONSUME_NO_DELETE_ON_REFUSE) drop(v, l);
    snprintf(r->message, sizeof r->message, "%s", why);
    return DLPC_REFUSED;
  }
  if (!(t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1)) {
    drop(v, l);
    snprintf(r->message, sizeof r->message, "only float32");
    return DLPC_UNSUPPORTED;
  }
  int64_t count = 1;
  r->ndim = t->ndim;
  for (int32_t d = t->ndim - 1; d >= 0; --d) {
    r->shape[d] = t->shape[d];
    r->strides[d] = t->strides ? t->strides[d] : count;
    count *= t->shape[d];
  }
  r->strides_known = 1;
  float* first = (float*)((char*)t->data + (g_mode == CONSUME_IGNORE_OFFSET ? 0 : t->byte_offset));
  r->first_element = count ? first : NULL;
  r->writable = (flags & DLPACK_FLAG_BITMASK_READ_ONLY) ? 0 : 1;
  if (g_mode == CONSUME_WRITE && count) ((volatile float*)first)[0] = first[0]; /* the bug: a store */
  float* out = (float*)r->values;
  for (int64_t i = 0; i < count && (uint64_t)(i + 1) * 4 <= r->values_capacity; ++i) {
    int64_t off = 0, rest = i;
    for (int32_t d = t->ndim - 1; d >= 0; --d) {
      off += (rest % t->shape[d]) * r->strides[d];
      rest /= t->shape[d];
    }
    out[i] = first[off];
  }
  r->values_size = (uint64_t)count * 4;
  held* h = (held*)calloc(1, sizeof *h);
  h->v = v;
  h->l = l;
  r->handle = h;
  if (g_mode == CONSUME_DELETE_EARLY) {
    drop(v, l);
    h->v = NULL;
    h->l = NULL;
  }
  return DLPC_OK;
}

static int consume_v(void* ctx, DLManagedTensorVersioned* t, dlpc_consume_report* r) {
  (void)ctx;
  return consume(t, NULL, r);
}
static int consume_l(void* ctx, DLManagedTensor* t, dlpc_consume_report* r) {
  (void)ctx;
  return consume(NULL, t, r);
}
static void release(void* ctx, void* handle) {
  (void)ctx;
  held* h = (held*)handle;
  drop(h->v, h->l);
  free(h);
}

static const dlpc_subject kSubject = {
  sizeof(dlpc_subject), DLPC_CONTRACT_VERSION, "rule breaker", NULL,
  produce_v, produce_l, consume_v, consume_l, release, live_count,
  NULL, NULL, NULL, /* no part in the exchange matrix */
};

/* ---- the expectations --------------------------------------------------------------------- */

static const char* kColumn[] = {"producer/versioned", "producer/legacy", "consumer/versioned",
                                "consumer/legacy"};

static int find(const char* check, const char* column) {
  for (int32_t i = 0; i < dlpc_case_count(); ++i) {
    const dlpc_case* c = dlpc_case_get(i);
    if (!strcmp(c->check, check) && !strcmp(kColumn[c->role * 2 + c->protocol], column)) return i;
  }
  return -1;
}

typedef struct expectation {
  int mode;
  const char* check;
  const char* column;
  const char* reason; /* a piece of the FAIL reason */
} expectation;

int main(void) {
  static const expectation kExpect[] = {
    {CONSUME_IGNORE_OFFSET, "byte-offset", "consumer/legacy", "(byte_offset ignored)"},
    {CONSUME_READ_BEFORE_VERSION, "major-version", "consumer/versioned", "read memory it must not read"},
    {CONSUME_NO_DELETE_ON_REFUSE, "unknown-device", "consumer/legacy", "the deleter ran 0 times"},
    {CONSUME_NO_DELETE_ON_REFUSE, "invalid-shape", "consumer/versioned", "the deleter ran 0 times"},
    {CONSUME_WRITE, "read-only", "consumer/versioned", "fault at"},
    {CONSUME_ACCEPT_UNKNOWN_FLAGS, "unknown-flag", "consumer/versioned", "accepted a tensor it must refuse"},
    {CONSUME_DELETE_EARLY, "deleter-once", "consumer/legacy", "the deleter ran before release"},
    {PRODUCE_NO_READ_ONLY_FLAG, "read-only", "producer/versioned", "lack READ_ONLY"},
    {PRODUCE_NULL_STRIDES, "strides-non-null", "producer/versioned", "NULL strides"},
    {PRODUCE_LEAK, "deleter-once", "producer/versioned", "live count"},
    {PRODUCE_LEAK, "deleter-other-thread", "producer/legacy", "live count"},
    {PRODUCE_VERSION_2, "version-stamp", "producer/versioned", "version 2.3"},
  };
  dlpc_set_fault_guard(1);
  int passed = 0, failed = 0;
  for (size_t k = 0; k < sizeof kExpect / sizeof kExpect[0]; ++k) {
    const expectation* e = &kExpect[k];
    int i = find(e->check, e->column);
    if (i < 0) {
      printf("FAILED  no case %s %s\n", e->check, e->column);
      ++failed;
      continue;
    }
    dlpc_result r;
    /* The honest subject passes the case... */
    g_mode = NONE;
    g_live = 0;
    dlpc_run_case(&kSubject, i, &r);
    int ok = r.outcome == DLPC_PASS;
    if (!ok) printf("FAILED  %s %s without a broken rule: %s\n", e->check, e->column, r.reason);
    /* ...and the one that breaks the rule fails it, for the right reason. */
    g_mode = e->mode;
    g_live = 0;
    dlpc_run_case(&kSubject, i, &r);
    if (r.outcome != DLPC_FAIL || !strstr(r.reason, e->reason)) {
      printf("FAILED  %s %s with \"%s\": %s (expected FAIL with \"%s\")\n", e->check, e->column,
             kModeName[e->mode], r.reason, e->reason);
      ok = 0;
    }
    if (ok) {
      printf("ok      %s %s fails with \"%s\": %s\n", e->check, e->column, kModeName[e->mode], r.reason);
      ++passed;
    } else {
      ++failed;
    }
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
