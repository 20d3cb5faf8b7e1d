/* interop_runner.c - the matrix: every ordered pair of subjects, versioned and legacy, every case.
 * Each exchange checks: the producer's export starts where the case says (byte_offset honoured)
 * with the case's flags, the consumer accepts it and sees the same first-element address (zero
 * copy), the case's layout and values (checksum), a READ_ONLY tensor not writable, the
 * producer's release ran exactly once, and both sides' live counts are back where they were.
 * Odd cases are released by the consumer on a new thread. */
#include "interop_runner.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DLB_ERR_READ_ONLY_CODE 5 /* dlbridge.h's DLB_ERR_READ_ONLY; the runner links no core */
#define VALUES_CAPACITY 1024     /* bytes: more than the largest case holds */

/* The extension ends with `releases`: a table whose struct_size does not reach it has none. */
#define EXCHANGE_SIZE (offsetof(dlpc_subject, releases) + sizeof(dlpc_releases_fn))

const dlpc_subject* interop_check_subject(const dlpc_subject* s, const char* who) {
  if (s == NULL || s->contract_version != DLPC_CONTRACT_VERSION || s->struct_size < EXCHANGE_SIZE) {
    fprintf(stderr, "%s: no table with the exchange extension (contract %u, struct_size %llu; expected %d, %zu)\n",
            who, s != NULL ? s->contract_version : 0u, s != NULL ? (unsigned long long)s->struct_size : 0ull,
            DLPC_CONTRACT_VERSION, EXCHANGE_SIZE);
    return NULL;
  }
  if (s->language == NULL || s->exchange_produce == NULL || s->consume_versioned == NULL ||
      s->consume_legacy == NULL || s->release == NULL || s->live_count == NULL) {
    fprintf(stderr, "%s: the table lacks an entry point the matrix needs\n", who);
    return NULL;
  }
  return s;
}

const dlpc_subject* interop_load_subject(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  dlpc_subject_entry_fn get;
  if (lib == NULL) {
    fprintf(stderr, "cannot load adapter %s: %s\n", path, dlerror());
    return NULL;
  }
  *(void**)(&get) = dlsym(lib, DLPC_SUBJECT_SYMBOL);
  if (get == NULL) {
    fprintf(stderr, "adapter %s exports no %s\n", path, DLPC_SUBJECT_SYMBOL);
    return NULL;
  }
  return interop_check_subject(get(), path);
}

static int64_t element_count(const dlpc_exchange_case* k) {
  int64_t n = 1, d;
  for (d = 0; d < k->ndim; ++d) n *= k->shape[d];
  return n;
}

/* Element k (C order) of what the consumer must see. */
static double expected_value(const dlpc_exchange_case* c, int64_t k) {
  int64_t pos = c->first, d;
  for (d = c->ndim - 1; d >= 0; --d) {
    pos += (k % c->shape[d]) * c->strides[d];
    k /= c->shape[d];
  }
  return interop_base_value(c->dtype_code, pos);
}

/* Element k of a report's values, stored compactly in the case's dtype. */
static double read_value(const unsigned char* values, const dlpc_exchange_case* c, int64_t k) {
  const unsigned char* p = values + k * (c->dtype_bits / 8);
  if (c->dtype_code == 2 && c->dtype_bits == 32) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  if (c->dtype_code == 2) {
    double v;
    memcpy(&v, p, 8);
    return v;
  }
  if (c->dtype_bits == 64) {
    int64_t i;
    memcpy(&i, p, 8);
    return (double)i;
  }
  if (c->dtype_bits == 32) {
    int32_t i;
    memcpy(&i, p, 4);
    return i;
  }
  return c->dtype_code == 1 ? (double)*p : (double)(int8_t)*p;
}

typedef struct release_call {
  const dlpc_subject* s;
  void* handle;
} release_call;

static void* release_on_thread(void* p) {
  release_call* r = (release_call*)p;
  r->s->release(r->s->ctx, r->handle);
  return NULL;
}

/* Drops what the consumer holds, on a new thread when `on_thread`; 0 or -1 with `reason`. */
static int release(const dlpc_subject* c, void* handle, int on_thread, char* reason, size_t reason_size) {
  release_call call;
  pthread_t th;
  call.s = c;
  call.handle = handle;
  if (!on_thread) {
    c->release(c->ctx, handle);
    return 0;
  }
  if (pthread_create(&th, NULL, release_on_thread, &call) != 0) {
    c->release(c->ctx, handle);
    snprintf(reason, reason_size, "pthread_create failed");
    return -1;
  }
  pthread_join(th, NULL);
  return 0;
}

/* The consumer's report against the case; 0 or -1 with `reason`. */
static int check_report(const dlpc_exchange_case* k, int legacy, const dlpc_consume_report* r,
                        uint64_t exported, int sabotage, char* reason, size_t reason_size) {
  int64_t n = element_count(k), i;
  double sum = 0.0, want_sum = 0.0;
  if (r->ndim != k->ndim) {
    snprintf(reason, reason_size, "consumer sees ndim %d, expected %lld", r->ndim, (long long)k->ndim);
    return -1;
  }
  for (i = 0; i < k->ndim; ++i) {
    if (r->shape[i] != k->shape[i] || !r->strides_known || r->strides[i] != k->strides[i]) {
      snprintf(reason, reason_size, "consumer sees dim %lld: extent %lld stride %lld%s, expected %lld and %lld",
               (long long)i, (long long)r->shape[i], (long long)r->strides[i],
               r->strides_known ? "" : " (unknown)", (long long)k->shape[i], (long long)k->strides[i]);
      return -1;
    }
  }
  if (n > 0 && (uint64_t)(uintptr_t)r->first_element != exported) {
    snprintf(reason, reason_size, "consumer sees data at %p, producer exported %#llx (a copy?)",
             r->first_element, (unsigned long long)exported);
    return -1;
  }
  if (r->values_size != (uint64_t)(n * (k->dtype_bits / 8))) {
    snprintf(reason, reason_size, "consumer read %llu bytes of values, expected %lld (%s)",
             (unsigned long long)r->values_size, (long long)(n * (k->dtype_bits / 8)), r->message);
    return -1;
  }
  for (i = 0; i < n; ++i) {
    double v = read_value((const unsigned char*)r->values, k, i), want = expected_value(k, i);
    if (v != want) {
      snprintf(reason, reason_size, "consumer reads element %lld as %g, expected %g", (long long)i, v, want);
      return -1;
    }
    sum += v * (double)(i + 1);
    want_sum += want * (double)(i + 1);
  }
  if (sabotage) want_sum += 1.0;
  if (sum != want_sum) {
    snprintf(reason, reason_size, "checksum %g, expected %g", sum, want_sum);
    return -1;
  }
  if ((k->flags & DLPACK_FLAG_BITMASK_READ_ONLY) && !legacy && r->writable != 0) {
    snprintf(reason, reason_size, "the consumer lets its user write to the READ_ONLY tensor (writable %d)",
             r->writable);
    return -1;
  }
  return 0;
}

/* Hands `t` to the consumer, checks its report, and lets it go. 0 or -1 with `reason`. */
static int exchange(const dlpc_subject* c, void* t, const dlpc_exchange_case* k, int legacy, int on_thread,
                    uint64_t exported, int sabotage, char* reason, size_t reason_size) {
  unsigned char values[VALUES_CAPACITY];
  dlpc_consume_report r;
  int rc, checked;
  memset(&r, 0, sizeof r);
  r.struct_size = sizeof r;
  r.values = values;
  r.values_capacity = sizeof values;
  r.values_size = UINT64_MAX;
  r.writable = -1;
  rc = legacy ? c->consume_legacy(c->ctx, (DLManagedTensor*)t, &r)
              : c->consume_versioned(c->ctx, (DLManagedTensorVersioned*)t, &r);
  if (rc != DLPC_OK) {
    snprintf(reason, reason_size, "consumer refused it (%d): %s", rc, r.message);
    return -1;
  }
  checked = check_report(k, legacy, &r, exported, sabotage, reason, reason_size);
  if (release(c, r.handle, on_thread, reason, reason_size) != 0) return -1;
  return checked;
}

/* One case of one exchange; 0 or -1 with `reason` filled. */
static int run_case(const dlpc_subject* p, const dlpc_subject* c, const dlpc_exchange_case* k, int legacy,
                    int on_thread, int sabotage, char* reason, size_t reason_size) {
  dlpc_exchange_report pr;
  int64_t p_live = p->live_count(p->ctx), c_live = c->live_count(c->ctx);
  int64_t p_rel = p->releases != NULL ? p->releases(p->ctx) : 0;
  int64_t esize = k->dtype_bits / 8;
  const DLTensor* dl = NULL;
  uint64_t exported, flags;
  void* t;
  memset(&pr, 0, sizeof pr);
  t = p->exchange_produce(p->ctx, k, legacy, &pr);
  if (legacy && k->legacy_refused) {
    if (t != NULL) {
      snprintf(reason, reason_size, "legacy export of a READ_ONLY tensor was not refused");
      ((DLManagedTensor*)t)->deleter((DLManagedTensor*)t);
      return -1;
    }
    if (pr.status != DLB_ERR_READ_ONLY_CODE) {
      snprintf(reason, reason_size, "legacy export refused with status %d, expected 5 (%s)", pr.status, pr.message);
      return -1;
    }
  } else {
    if (t == NULL) {
      snprintf(reason, reason_size, "produce failed: %s", pr.message);
      return -1;
    }
    dl = legacy ? &((DLManagedTensor*)t)->dl_tensor : &((DLManagedTensorVersioned*)t)->dl_tensor;
    flags = legacy ? 0 : ((DLManagedTensorVersioned*)t)->flags;
    exported = (uint64_t)(uintptr_t)dl->data + dl->byte_offset;
    if (exported != pr.base + (uint64_t)(k->first * esize) || flags != (uint64_t)(legacy ? 0 : k->flags)) {
      snprintf(reason, reason_size, "producer's export: first element at base%+lld bytes, flags %llu; expected base%+lld, %llu",
               (long long)(exported - pr.base), (unsigned long long)flags, (long long)(k->first * esize),
               (unsigned long long)(legacy ? 0 : k->flags));
      if (legacy) ((DLManagedTensor*)t)->deleter((DLManagedTensor*)t);
      else ((DLManagedTensorVersioned*)t)->deleter((DLManagedTensorVersioned*)t);
      return -1;
    }
    if (exchange(c, t, k, legacy, on_thread, exported, sabotage, reason, reason_size) != 0) return -1;
  }
  if (p->live_count(p->ctx) != p_live || c->live_count(c->ctx) != c_live) {
    snprintf(reason, reason_size, "live counts: producer %lld -> %lld, consumer %lld -> %lld",
             (long long)p_live, (long long)p->live_count(p->ctx), (long long)c_live,
             (long long)c->live_count(c->ctx));
    return -1;
  }
  if (p->releases != NULL && p->releases(p->ctx) != p_rel + 1) {
    snprintf(reason, reason_size, "producer's base released %lld times, expected once",
             (long long)(p->releases(p->ctx) - p_rel));
    return -1;
  }
  return 0;
}

int interop_run_matrix(const dlpc_subject* const* subjects, int count, const char* host,
                       const char* must_include, int sabotage) {
  int passed = 0, failed = 0, i, j, mode, n;
  printf("interop matrix (host: %s%s): %d cases per cell, versioned and legacy\n", host,
         sabotage ? ", SELF-TEST: every expected checksum is wrong, every cell must FAIL" : "",
         interop_case_count);
  printf("%-22s %-10s %s\n", "producer -> consumer", "versioned", "legacy");
  for (i = 0; i < count; ++i) {
    for (j = 0; j < count; ++j) {
      const dlpc_subject* p = subjects[i];
      const dlpc_subject* c = subjects[j];
      char pair[64];
      char reasons[2][800];
      int ok[2];
      if (must_include != NULL && strcmp(p->language, must_include) != 0 && strcmp(c->language, must_include) != 0)
        continue;
      for (mode = 0; mode < 2; ++mode) {
        ok[mode] = 1;
        reasons[mode][0] = '\0';
        for (n = 0; n < interop_case_count && ok[mode]; ++n) {
          char why[512];
          if (run_case(p, c, &interop_cases[n], mode, n % 2, sabotage, why, sizeof why) != 0) {
            ok[mode] = 0;
            snprintf(reasons[mode], sizeof reasons[mode], "case '%s': %s", interop_cases[n].name, why);
          }
        }
        if (sabotage ? !ok[mode] : ok[mode]) ++passed;
        else ++failed;
      }
      snprintf(pair, sizeof pair, "%s -> %s", p->language, c->language);
      printf("%-22s %-10s %s\n", pair, ok[0] ? "PASS" : "FAIL", ok[1] ? "PASS" : "FAIL");
      for (mode = 0; mode < 2; ++mode)
        if (!ok[mode]) printf("    %s: %s\n", mode ? "legacy" : "versioned", reasons[mode]);
    }
  }
  fflush(stdout);
  printf("%d passed, %d failed\n", passed, failed);
  fflush(stdout);
  return failed;
}
