/* The DLPack conformance kit: the consumer checks. The kit makes the tensor (its struct ends at
 * an inaccessible page), hands it to the subject and checks what the subject read, its deleter
 * calls and its release. */
#define _GNU_SOURCE
#include "conformance_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- tensors the kit makes (consumer cases) --------------------------------------------------- */

typedef struct kit_tensor {
  unsigned char* struct_map; /* two pages: the struct ends where the second (inaccessible) begins */
  size_t struct_map_size;
  unsigned char* data_map;
  size_t data_map_size;
  DLManagedTensorVersioned* v;
  DLManagedTensor* l;
  unsigned char* first; /* where element 0 is */
  int deleter_calls;
} kit_tensor;

static void kit_deleter_versioned(DLManagedTensorVersioned* self) {
  /* Reads nothing past `deleter`: self may be a major-2 struct whose dl_tensor is poisoned. */
  kit_tensor* kt = (kit_tensor*)self->manager_ctx;
  __atomic_fetch_add(&kt->deleter_calls, 1, __ATOMIC_SEQ_CST);
}

static void kit_deleter_legacy(DLManagedTensor* self) {
  kit_tensor* kt = (kit_tensor*)self->manager_ctx;
  __atomic_fetch_add(&kt->deleter_calls, 1, __ATOMIC_SEQ_CST);
}

/* Tensors left to a subject that faulted: kept reachable on purpose (the subject may still hold
 * them), not freed. */
static kit_tensor* g_abandoned[64];
static int g_abandoned_count = 0;

static void abandon(kit_tensor* kt) {
  if (g_abandoned_count < 64) g_abandoned[g_abandoned_count++] = kt;
}

static int deleter_calls(kit_tensor* kt) { return __atomic_load_n(&kt->deleter_calls, __ATOMIC_SEQ_CST); }

desc make_desc(DLDataType t, int32_t ndim, const int64_t* shape) {
  desc d;
  memset(&d, 0, sizeof d);
  d.dtype = t;
  d.ndim = ndim;
  for (int32_t i = 0; i < ndim; ++i) d.shape[i] = shape[i];
  d.major = 1;
  d.minor = 3;
  d.device_type = kDLCPU;
  return d;
}

static void kit_free(kit_tensor* kt) {
  if (kt->struct_map) munmap(kt->struct_map, kt->struct_map_size);
  if (kt->data_map) munmap(kt->data_map, kt->data_map_size);
  free(kt);
}

static kit_tensor* kit_make(const desc* d, int legacy, const unsigned char* values) {
  long page = sysconf(_SC_PAGESIZE);
  kit_tensor* kt = (kit_tensor*)calloc(1, sizeof *kt);
  if (!kt) return NULL;
  kt->struct_map_size = (size_t)page * 2;
  kt->struct_map = (unsigned char*)mmap(NULL, kt->struct_map_size, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (kt->struct_map == MAP_FAILED) {
    kt->struct_map = NULL;
    kit_free(kt);
    return NULL;
  }
  unsigned char* guard = kt->struct_map + page;
  int64_t* shape = (int64_t*)kt->struct_map;
  int64_t* strides = shape + 8;
  int64_t resolved[4];
  for (int32_t i = 0; i < d->ndim; ++i) shape[i] = d->shape[i];
  if (d->has_strides) {
    for (int32_t i = 0; i < d->ndim; ++i) strides[i] = d->strides[i];
    memcpy(resolved, d->strides, sizeof resolved);
  } else {
    compact_strides(d->ndim, d->shape, strides);
    memcpy(resolved, strides, sizeof resolved);
  }
  int64_t count = shape_count(d->ndim, d->shape);
  uint64_t esize = (storage_bits(d->dtype, d->flags) + 7) / 8;
  /* data */
  void* data = NULL;
  uint64_t byte_offset = 0;
  if (!d->null_data) {
    int64_t lo, hi;
    offset_range(d->ndim, d->shape, resolved, &lo, &hi);
    if (hi < lo) hi = lo;
    size_t need = (size_t)((hi - lo + d->offset_elements) * (int64_t)esize) + 256 + (size_t)d->misalign;
    kt->data_map_size = ((need + (size_t)page - 1) / (size_t)page) * (size_t)page;
    kt->data_map = (unsigned char*)mmap(NULL, kt->data_map_size, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (kt->data_map == MAP_FAILED) {
      kt->data_map = NULL;
      kit_free(kt);
      return NULL;
    }
    memset(kt->data_map, 0xA5, kt->data_map_size);
    unsigned char* base = kt->data_map + d->misalign;
    byte_offset = (uint64_t)(d->offset_elements * (int64_t)esize);
    kt->first = base + byte_offset + (uint64_t)(-lo * (int64_t)esize);
    data = base;
    if (d->offset_elements == 0) {
      /* Negative strides: data points at the first element itself. */
      data = kt->first;
      byte_offset = 0;
    }
    if (count > 0 && values) scatter(kt->first, d->dtype, d->flags, d->ndim, d->shape, resolved, values);
    if (d->protect_data) mprotect(kt->data_map, kt->data_map_size, PROT_READ);
  }
  DLTensor* t;
  if (legacy) {
    kt->l = (DLManagedTensor*)(guard - sizeof(DLManagedTensor));
    kt->l->manager_ctx = kt;
    kt->l->deleter = kit_deleter_legacy;
    t = &kt->l->dl_tensor;
  } else if (d->poison_tensor) {
    /* Only what every major keeps (version, manager_ctx, deleter, flags) is readable. */
    kt->v = (DLManagedTensorVersioned*)(guard - offsetof(DLManagedTensorVersioned, dl_tensor));
    kt->v->version.major = d->major;
    kt->v->version.minor = d->minor;
    kt->v->manager_ctx = kt;
    kt->v->deleter = kit_deleter_versioned;
    kt->v->flags = d->flags;
    mprotect(guard, (size_t)page, PROT_NONE);
    return kt;
  } else {
    kt->v = (DLManagedTensorVersioned*)(guard - sizeof(DLManagedTensorVersioned));
    kt->v->version.major = d->major;
    kt->v->version.minor = d->minor;
    kt->v->manager_ctx = kt;
    kt->v->deleter = kit_deleter_versioned;
    kt->v->flags = d->flags;
    t = &kt->v->dl_tensor;
  }
  t->data = data;
  t->device.device_type = (DLDeviceType)d->device_type;
  t->device.device_id = 0;
  t->ndim = d->ndim;
  t->dtype = d->dtype;
  t->shape = d->null_shape ? NULL : shape;
  t->strides = (d->has_strides && !d->null_shape) ? strides : NULL;
  if (!d->has_strides && !d->null_shape && d->ndim > 0 && !(legacy || d->minor < 2)) t->strides = strides;
  t->byte_offset = byte_offset;
  if (d->patch_code) t->dtype.code = (uint8_t)d->patch_code;
  if (d->patch_extent && d->ndim > 0) shape[d->ndim - 1] = d->patch_extent;
  mprotect(guard, (size_t)page, PROT_NONE);
  return kt;
}

/* ---- consumer cases ------------------------------------------------------------------------- */

typedef struct consume_call {
  const dlpc_subject* s;
  kit_tensor* kt;
  dlpc_consume_report* report;
  int rc;
  void* handle;
} consume_call;

static void do_consume(void* p) {
  consume_call* c = (consume_call*)p;
  if (c->kt->v)
    c->rc = c->s->consume_versioned(c->s->ctx, c->kt->v, c->report);
  else
    c->rc = c->s->consume_legacy(c->s->ctx, c->kt->l, c->report);
}

static void do_release(void* p) {
  consume_call* c = (consume_call*)p;
  c->s->release(c->s->ctx, c->handle);
}

/* Hands a kit tensor described by `d` to the subject and checks what it does. Returns the
 * outcome; `note` (may be NULL) is appended to a PASS reason. */
int consume_case(const dlpc_subject* s, int legacy, const desc* d, int expect,
                 int release_on_thread, dlpc_result* r, const char* note) {
  if (legacy ? !s->consume_legacy : !s->consume_versioned) {
    say(r, DLPC_SKIP, "the subject has no %s consumer", legacy ? "legacy" : "versioned");
    return r->outcome;
  }
  if (expect == EXPECT_ACCEPT && !s->release) {
    say(r, DLPC_SKIP, "the subject has no release entry point");
    return r->outcome;
  }
  int64_t count = shape_count(d->ndim, d->shape);
  uint64_t vsize = dlpc_expected_values(d->dtype, count, d->flags, NULL, 0);
  unsigned char* values = (unsigned char*)calloc(vsize + 1, 1);
  dlpc_expected_values(d->dtype, count, d->flags, values, vsize);
  kit_tensor* kt = kit_make(d, legacy, values);
  if (!kt) {
    free(values);
    say(r, DLPC_FAIL, "the kit could not allocate its tensor");
    return r->outcome;
  }
  dlpc_consume_report report;
  memset(&report, 0, sizeof report);
  report.struct_size = sizeof report;
  report.values_capacity = vsize + 64;
  report.values = calloc(report.values_capacity, 1);
  report.values_size = UINT64_MAX;
  report.writable = -1;
  consume_call call = {s, kt, &report, DLPC_ERROR, NULL};
  if (call_subject(do_consume, &call, 0)) {
    say(r, DLPC_FAIL, "fault at %p while consuming (the kit's struct ends at %p): the consumer read "
        "memory it must not read", (void*)g_fault_address,
        (void*)(kt->struct_map + kt->struct_map_size / 2));
    free(values);
    free(report.values);
    abandon(kt);
    return r->outcome;
  }
  report.message[sizeof report.message - 1] = '\0';
  int calls = deleter_calls(kt);
  int zero_copy_addr = count > 0 && report.first_element == (const void*)kt->first;
  char a[96], b[96];
  if (call.rc == DLPC_OK) {
    call.handle = report.handle;
    if (expect == EXPECT_REFUSE) {
      say(r, DLPC_FAIL, "accepted a tensor it must refuse");
    } else if (calls > 1) {
      say(r, DLPC_FAIL, "the deleter ran %d times before release", calls);
    } else if (calls == 1 && (zero_copy_addr || report.first_element == NULL)) {
      say(r, DLPC_FAIL, "the deleter ran before release while the consumer still uses the memory");
    } else if (report.ndim != d->ndim) {
      say(r, DLPC_FAIL, "ndim %d, sent %d", report.ndim, d->ndim);
    } else if (d->ndim <= DLPC_MAX_NDIM && memcmp(report.shape, d->shape, sizeof(int64_t) * (size_t)d->ndim)) {
      say(r, DLPC_FAIL, "shape %s, sent %s", format_dims(a, sizeof a, report.ndim, report.shape),
          format_dims(b, sizeof b, d->ndim, d->shape));
    } else if (count > 0 && report.first_element && !zero_copy_addr) {
      say(r, DLPC_FAIL, "first element at %p, the tensor's is at data + byte_offset = %p%s",
          report.first_element, (void*)kt->first,
          report.first_element == (const void*)(legacy ? kt->l->dl_tensor.data : kt->v->dl_tensor.data)
              ? " (byte_offset ignored)" : " (a copy?)");
    } else {
      r->outcome = DLPC_PASS;
      int64_t want[4];
      if (d->has_strides) memcpy(want, d->strides, sizeof want); else compact_strides(d->ndim, d->shape, want);
      if (count > 0 && report.strides_known) {
        for (int32_t i = 0; i < d->ndim; ++i) {
          if (d->shape[i] > 1 && report.strides[i] != want[i]) {
            say(r, DLPC_FAIL, "strides %s, sent %s", format_dims(a, sizeof a, d->ndim, report.strides),
                format_dims(b, sizeof b, d->ndim, want));
            break;
          }
        }
      }
      if (r->outcome == DLPC_PASS && report.values_size != UINT64_MAX &&
          (report.values_size != vsize ||
           !values_equal((const unsigned char*)report.values, values, d->dtype, d->flags, count))) {
        say(r, DLPC_FAIL, "values differ (%llu bytes read, %llu sent)",
            (unsigned long long)report.values_size, (unsigned long long)vsize);
      }
      if (r->outcome == DLPC_PASS && (d->flags & RO) && report.writable == 1)
        say(r, DLPC_FAIL, "the consumer's object is writable although the tensor is READ_ONLY");
    }
    /* Release (even after a failure above, to leave nothing behind). */
    int before = deleter_calls(kt);
    if (call_subject(do_release, &call, release_on_thread)) {
      say(r, DLPC_FAIL, "fault at %p while releasing (a write to READ_ONLY data?)", (void*)g_fault_address);
      free(values);
      free(report.values);
      abandon(kt);
      return r->outcome;
    }
    int after = deleter_calls(kt);
    if (r->outcome == DLPC_PASS) {
      if (after - before + calls != 1) {
        say(r, DLPC_FAIL, "the deleter ran %d times in all (%d at release%s), not once", after,
            after - before, release_on_thread ? ", on another thread" : "");
      } else if (d->protect_data && count > 0) {
        unsigned char* now = (unsigned char*)calloc(vsize + 1, 1);
        int64_t rs[4];
        if (d->has_strides) memcpy(rs, d->strides, sizeof rs); else compact_strides(d->ndim, d->shape, rs);
        gather(kt->first, d->dtype, d->flags, d->ndim, d->shape, rs, now);
        if (!values_equal(now, values, d->dtype, d->flags, count)) say(r, DLPC_FAIL, "READ_ONLY data was modified");
        free(now);
      }
    }
    if (r->outcome == DLPC_PASS) {
      say(r, DLPC_PASS, "accepted, %s%s%s, deleter once at release%s%s%s",
          report.values_size == UINT64_MAX ? "values not reported" : "values match",
          report.strides_known ? ", strides match" : "",
          report.writable == 0 ? ", not writable" : report.writable == 1 ? ", writable" : "",
          release_on_thread ? " (other thread)" : "", note ? "; " : "", note ? note : "");
    }
  } else if (call.rc == DLPC_REFUSED || call.rc == DLPC_UNSUPPORTED) {
    if (calls != 1) {
      say(r, DLPC_FAIL, "%s (\"%s\") but the deleter ran %d times, not once (Rules 2)",
          call.rc == DLPC_REFUSED ? "refused" : "unsupported", report.message, calls);
    } else if (expect == EXPECT_REFUSE) {
      say(r, DLPC_PASS, "refused (\"%s\"), deleter once%s%s", report.message, note ? "; " : "",
          note ? note : "");
    } else if (call.rc == DLPC_UNSUPPORTED) {
      say(r, DLPC_SKIP, "not supported by the subject: %s (deleter once)", report.message);
    } else {
      say(r, DLPC_FAIL, "refused a valid tensor: %s", report.message);
    }
  } else {
    say(r, DLPC_FAIL, "the subject failed: %s", report.message);
  }
  free(values);
  free(report.values);
  kit_free(kt);
  return r->outcome;
}
