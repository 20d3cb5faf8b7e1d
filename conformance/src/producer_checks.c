/* The DLPack conformance kit: the producer checks. The subject exports the tensor the kit
 * describes; the kit checks the struct and the values read through it, then calls its deleter
 * once and checks the subject's live count. */
#define _GNU_SOURCE
#include "conformance_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- producer cases ------------------------------------------------------------------------- */

typedef struct produce_call {
  const dlpc_subject* s;
  dlpc_case_spec* spec;
  DLManagedTensorVersioned* v;
  DLManagedTensor* l;
  char message[256];
  int rc;
} produce_call;

static void do_produce(void* p) {
  produce_call* c = (produce_call*)p;
  if (c->l == (DLManagedTensor*)1) {
    c->l = NULL;
    c->rc = c->s->produce_legacy(c->s->ctx, c->spec, &c->l, c->message, sizeof c->message);
  } else {
    c->rc = c->s->produce_versioned(c->s->ctx, c->spec, &c->v, c->message, sizeof c->message);
  }
}

static void do_delete(void* p) {
  produce_call* c = (produce_call*)p;
  if (c->v && c->v->deleter) c->v->deleter(c->v);
  if (c->l && c->l->deleter) c->l->deleter(c->l);
}

/* Asks the subject for the tensor `d` describes and checks dtype, device, shape, strides
 * (when asked for) and values. Does not delete it. */
void produce(const dlpc_subject* s, const dlpc_case* c, int legacy, const desc* d, produced* p) {
  memset(p, 0, sizeof *p);
  int64_t count = shape_count(d->ndim, d->shape);
  uint64_t vsize = dlpc_expected_values(d->dtype, count, d->flags, NULL, 0);
  unsigned char* values = (unsigned char*)calloc(vsize + 1, 1);
  dlpc_expected_values(d->dtype, count, d->flags, values, vsize);
  dlpc_case_spec spec;
  memset(&spec, 0, sizeof spec);
  spec.struct_size = sizeof spec;
  spec.case_id = c->id;
  spec.check = c->check;
  spec.dtype = d->dtype;
  spec.ndim = d->ndim;
  spec.shape = d->ndim ? d->shape : NULL;
  spec.strides = d->has_strides ? d->strides : NULL;
  spec.offset_elements = d->offset_elements;
  spec.flags = d->flags;
  spec.values = values;
  spec.values_size = vsize;
  p->live_before = s->live_count ? s->live_count(s->ctx) : -1;
  produce_call call;
  memset(&call, 0, sizeof call);
  call.s = s;
  call.spec = &spec;
  if (legacy) call.l = (DLManagedTensor*)1;
  if (call_subject(do_produce, &call, 0)) {
    p->rc = DLPC_ERROR;
    snprintf(p->message, sizeof p->message, "fault at %p while producing", (void*)g_fault_address);
    free(values);
    return;
  }
  p->rc = call.rc;
  memcpy(p->message, call.message, sizeof p->message);
  p->message[sizeof p->message - 1] = '\0';
  if (p->rc != DLPC_OK) {
    free(values);
    return;
  }
  p->v = call.v;
  p->l = call.l;
  if (legacy ? !p->l : !p->v) {
    p->rc = DLPC_ERROR;
    snprintf(p->message, sizeof p->message, "returned DLPC_OK without a tensor");
    free(values);
    return;
  }
  p->t = legacy ? &p->l->dl_tensor : &p->v->dl_tensor;
  p->flags = legacy ? 0 : p->v->flags;
  DLTensor* t = p->t;
  char a[96], b[96];
  if (!legacy && p->v->version.major != 1) {
    snprintf(p->problem, sizeof p->problem, "version %u.%u", p->v->version.major, p->v->version.minor);
  } else if (t->device.device_type != kDLCPU || t->device.device_id != 0) {
    snprintf(p->problem, sizeof p->problem, "device (%d, %d), asked for the CPU (1, 0)",
             (int)t->device.device_type, t->device.device_id);
  } else if (t->dtype.code != d->dtype.code || t->dtype.bits != d->dtype.bits ||
             t->dtype.lanes != d->dtype.lanes) {
    snprintf(p->problem, sizeof p->problem, "dtype (%u, %u, %u), asked for (%u, %u, %u)", t->dtype.code,
             t->dtype.bits, t->dtype.lanes, d->dtype.code, d->dtype.bits, d->dtype.lanes);
  } else if (t->ndim != d->ndim) {
    snprintf(p->problem, sizeof p->problem, "ndim %d, asked for %d", t->ndim, d->ndim);
  } else if (t->ndim > 0 && !t->shape) {
    snprintf(p->problem, sizeof p->problem, "NULL shape with ndim %d", t->ndim);
  } else if (t->ndim > 0 && memcmp(t->shape, d->shape, sizeof(int64_t) * (size_t)d->ndim)) {
    snprintf(p->problem, sizeof p->problem, "shape %s, asked for %s", format_dims(a, sizeof a, t->ndim, t->shape),
             format_dims(b, sizeof b, d->ndim, d->shape));
  } else if ((p->flags & PADDED) != (d->flags & PADDED) && is_subbyte(d->dtype)) {
    snprintf(p->problem, sizeof p->problem, "IS_SUBBYTE_TYPE_PADDED %s, asked %s",
             (p->flags & PADDED) ? "set" : "clear", (d->flags & PADDED) ? "set" : "clear");
  } else if (count > 0 && !t->data) {
    snprintf(p->problem, sizeof p->problem, "NULL data in a tensor of %lld elements", (long long)count);
  }
  int64_t strides[4] = {0, 0, 0, 0};
  if (!p->problem[0] && t->ndim > 0) {
    if (t->strides) memcpy(strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    else compact_strides(t->ndim, t->shape, strides);
    if (d->has_strides && count > 0) {
      for (int32_t i = 0; i < d->ndim; ++i) {
        if (d->shape[i] > 1 && strides[i] != d->strides[i]) {
          snprintf(p->problem, sizeof p->problem, "strides %s, asked for %s",
                   format_dims(a, sizeof a, t->ndim, strides), format_dims(b, sizeof b, d->ndim, d->strides));
          break;
        }
      }
    }
  }
  if (!p->problem[0]) {
    p->got_size = vsize;
    p->got = (unsigned char*)calloc(vsize + 1, 1);
    if (count > 0)
      gather((const unsigned char*)t->data + t->byte_offset, d->dtype, d->flags, d->ndim, d->shape, strides, p->got);
    p->values_match = values_equal(p->got, values, d->dtype, d->flags, count);
    if (!p->values_match) snprintf(p->problem, sizeof p->problem, "values read through data + byte_offset and the strides differ");
  }
  free(values);
}

/* Calls the produced tensor's deleter once (on another thread if asked) and checks the live
 * count. Returns 0 and leaves r alone when fine; otherwise fills r with a FAIL. */
int release_produced(const dlpc_subject* s, produced* p, int other_thread, dlpc_result* r) {
  produce_call call;
  memset(&call, 0, sizeof call);
  call.v = p->v;
  call.l = p->l;
  int64_t live_after_produce = s->live_count ? s->live_count(s->ctx) : -1;
  if (call_subject(do_delete, &call, other_thread)) {
    say(r, DLPC_FAIL, "fault at %p in the producer's deleter", (void*)g_fault_address);
    return 1;
  }
  free(p->got);
  p->got = NULL;
  if (!s->live_count) return 0;
  int64_t live = s->live_count(s->ctx);
  if (live_after_produce != p->live_before + 1) {
    say(r, DLPC_FAIL, "live count went from %lld to %lld on export, not +1", (long long)p->live_before,
        (long long)live_after_produce);
    return 1;
  }
  if (live != p->live_before) {
    say(r, DLPC_FAIL, "after one deleter call the live count is %lld, was %lld before the export",
        (long long)live, (long long)p->live_before);
    return 1;
  }
  return 0;
}

/* The common producer flow: produce, look, delete. `extra` checks the produced tensor; it may
 * fill r and return non-zero. */
int produce_case(const dlpc_subject* s, const dlpc_case* c, const desc* d, int other_thread,
                 extra_check extra, dlpc_result* r) {
  int legacy = c->protocol == DLPC_PROTOCOL_LEGACY;
  if (legacy ? !s->produce_legacy : !s->produce_versioned) {
    say(r, DLPC_SKIP, "the subject has no %s producer", legacy ? "legacy" : "versioned");
    return r->outcome;
  }
  produced p;
  produce(s, c, legacy, d, &p);
  if (p.rc == DLPC_UNSUPPORTED || p.rc == DLPC_REFUSED) {
    say(r, DLPC_SKIP, "the subject cannot export this: %s", p.message);
    return r->outcome;
  }
  if (p.rc != DLPC_OK) {
    say(r, DLPC_FAIL, "the export failed: %s", p.message);
    return r->outcome;
  }
  r->outcome = DLPC_PASS;
  if (p.problem[0]) say(r, DLPC_FAIL, "%s", p.problem);
  else if (extra && extra(&p, d, legacy, r)) { /* r filled */ }
  if (release_produced(s, &p, other_thread, r)) return r->outcome;
  if (r->outcome == DLPC_PASS && !r->reason[0]) {
    say(r, DLPC_PASS, "as asked, values match; one deleter call%s released it%s",
        other_thread ? " on another thread" : "", s->live_count ? " (live count back)" : " (no live count: not verified)");
  }
  return r->outcome;
}

int extra_version(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  (void)legacy;
  if (p->flags & ~(uint64_t)KNOWN_FLAGS) {
    say(r, DLPC_FAIL, "flags 0x%llx hold bits unknown to DLPack 1.3", (unsigned long long)p->flags);
    return 1;
  }
  say(r, DLPC_PASS, "version %u.%u, flags 0x%llx", p->v->version.major, p->v->version.minor,
      (unsigned long long)p->flags);
  return 0;
}

int extra_strides(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  (void)legacy;
  if (p->v->version.minor >= 2 && !p->t->strides) {
    say(r, DLPC_FAIL, "version 1.%u with ndim %d but NULL strides", p->v->version.minor, p->t->ndim);
    return 1;
  }
  say(r, DLPC_PASS, "version 1.%u, strides %s", p->v->version.minor, p->t->strides ? "set" : "NULL (allowed before 1.2)");
  return 0;
}

int extra_read_only(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  if (legacy) {
    say(r, DLPC_FAIL, "exported a READ_ONLY tensor through the legacy struct, which cannot say so");
    return 1;
  }
  if (!(p->flags & RO)) {
    say(r, DLPC_FAIL, "asked for a read-only export, flags 0x%llx lack READ_ONLY", (unsigned long long)p->flags);
    return 1;
  }
  say(r, DLPC_PASS, "READ_ONLY set, values match");
  return 0;
}

int extra_copied(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  (void)legacy;
  if (!(p->flags & COPIED)) {
    say(r, DLPC_FAIL, "asked for a copy, flags 0x%llx lack IS_COPIED", (unsigned long long)p->flags);
    return 1;
  }
  say(r, DLPC_PASS, "IS_COPIED set, values match");
  return 0;
}

int extra_alignment(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  (void)legacy;
  uintptr_t first = (uintptr_t)p->t->data + p->t->byte_offset;
  unsigned align = 1;
  while (align < 4096 && (first % (align * 2)) == 0) align *= 2;
  say(r, DLPC_PASS, "first element %u-byte aligned (reported only: no alignment is required)", align);
  return 0;
}

int extra_zero_size(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  (void)legacy;
  say(r, DLPC_PASS, "exported with data %s; one deleter call released it", p->t->data ? "non-NULL" : "NULL");
  return 0;
}

int extra_zero_dim(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  (void)legacy;
  say(r, DLPC_PASS, "one element, value matches; shape %s, strides %s", p->t->shape ? "set" : "NULL",
      p->t->strides ? "set" : "NULL");
  return 0;
}
