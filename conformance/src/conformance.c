/* The DLPack conformance kit: the catalogue of cases and the checks behind them.
 * Every case cites the section of the DLPack facts (shared/dlpack-abi.md, "Rules" and the
 * sections before it) whose rule it checks; README.md lists them. */
#define _GNU_SOURCE
#include "dlpack_conformance.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define KNOWN_FLAGS                                                                \
  (DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED |                 \
   DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED)
#define RO DLPACK_FLAG_BITMASK_READ_ONLY
#define COPIED DLPACK_FLAG_BITMASK_IS_COPIED
#define PADDED DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED

/* ---- the catalogue ------------------------------------------------------------------------ */

enum { PV = 1, PL = 2, CV = 4, CL = 8 };

typedef struct check_def {
  const char* name;
  unsigned roles;
  const char* rule;
  const char* passes;
} check_def;

static const check_def kChecks[] = {
  {"deleter-once", PV | PL | CV | CL, "Rules 1 (Ownership): deleter exactly once",
   "producer: one deleter call releases the export (live count -1); consumer: the deleter runs "
   "not before release, exactly once after"},
  {"deleter-other-thread", PV | PL | CV | CL, "Rules 3: a deleter may run on any thread",
   "the deleter (producer) or the release (consumer) runs on a new thread, exactly once"},
  {"version-stamp", PV, "Rules 4 (Versions): stamp exports with the version you implement",
   "version.major == 1 and flags hold only known bits"},
  {"strides-non-null", PV, "Rules 6 (Strides): non-NULL when ndim > 0 since 1.2",
   "a 1.2+ export with ndim > 0 has strides"},
  {"null-strides", CV | CL, "Rules 6 (Strides): importers accept NULL as compact row-major",
   "NULL strides (a 1.1 / legacy producer) read as C order"},
  {"negative-strides", PV | PL | CV | CL, "Rules 6 (Strides): negative strides are legal",
   "a [3,4] tensor with strides [-4,1] exported / read with its values"},
  {"strided", PV | PL | CV | CL, "Rules 6 (Strides): strides are in elements, not bytes",
   "a [4,2] view with strides [4,2] exported / read with its values"},
  {"extent-one-strides", CV | CL, "Rules 6 (Strides): strides of extent-1 dimensions are arbitrary",
   "shape [3,1] with strides [1,1000] accepted and read"},
  {"byte-offset", PV | PL | CV | CL, "Rules 8 (byte_offset): the first element is at data + byte_offset",
   "a view 5 elements into its allocation; the consumer reads from data + byte_offset"},
  {"read-only", PV | PL | CV, "Rules 5 (Flags): READ_ONLY, the consumer must not write; legacy has no flags",
   "versioned export carries READ_ONLY; a legacy read-only export is refused; the consumer's "
   "object is not writable and the (write-protected) data is unchanged"},
  {"is-copied", PV | CV, "Rules 5 (Flags): IS_COPIED set whenever the producer made a copy",
   "an export asked to be a copy carries IS_COPIED; the consumer accepts it"},
  {"subbyte-packed", PV | PL | CV | CL, "Data type codes: sub-byte types packed, ceil(numel*bits*lanes/8) bytes",
   "int4 [5] in 3 bytes, element i at bits 4*i"},
  {"subbyte-padded", PV | CV, "Flags: IS_SUBBYTE_TYPE_PADDED, each element padded to a byte",
   "uint4 [5] in 5 bytes with the flag set / read"},
  {"zero-dim", PV | PL | CV | CL, "Rules 7 (Shape): ndim == 0 is a scalar, shape/strides may be NULL",
   "a 0-d float64 with one element"},
  {"zero-size", PV | PL | CV | CL, "Rules 2 and 9: zero-size tensors are deleted too; data may be NULL",
   "[0,3]: exported and released once / accepted with NULL data and deleted once"},
  {"alignment", PV | PL | CV | CL, "Rules 8: do not rely on 256-byte alignment",
   "producer: reported only; consumer: data aligned only to the element size is accepted"},
  {"major-version", CV, "Rules 4 (Versions): major other than 1, deleter only, read nothing else",
   "major 2 refused, deleter once, dl_tensor (on an inaccessible page) never read"},
  {"unknown-flag", CV, "Rules 4 (Versions): unknown flag bits refused, deleter called",
   "flags bit 40 refused, deleter once"},
  {"unknown-dtype", CV | CL, "Rules 4 and 10: unknown dtype code refused, deleter called",
   "dtype code 99 (version 1.99) refused, deleter once"},
  {"unknown-device", CV | CL, "Rules 4 and 10: unknown device type refused, deleter called",
   "device type 99 refused, deleter once"},
  {"newer-minor", CV, "Rules 4 (Versions): a newer minor with only known values is usable",
   "version 1.99 with known values accepted"},
  {"invalid-shape", CV | CL, "Rules 7 and 2: negative extents invalid; a rejected import still deletes",
   "shape [2,-3] refused, deleter once"},
  {"struct-layout", CV | CL, "Structs: the two managed structs are laid out differently",
   "a struct ending at an inaccessible page read within its own 64 / 80 bytes"},
  {"versioned-legacy", PL | CL, "Structs / Rules 5: versioned and legacy carry the same tensor",
   "the legacy export (import) of a tensor matches the versioned one"},
  {"dtypes", PV | PL | CV | CL, "Data type codes: code, bits, lanes; native byte order",
   "every dtype the subject supports of int8 uint16 int64 float16 bfloat16 float64 complex64 bool "
   "carries its values"},
};
#define NCHECKS ((int)(sizeof(kChecks) / sizeof(kChecks[0])))

static dlpc_case g_cases[NCHECKS * 4];
static int g_case_count = 0;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void build_catalogue(void) {
  static const unsigned kBits[4] = {PV, PL, CV, CL};
  for (int c = 0; c < NCHECKS; ++c) {
    for (int k = 0; k < 4; ++k) {
      if (!(kChecks[c].roles & kBits[k])) continue;
      dlpc_case* out = &g_cases[g_case_count];
      out->id = g_case_count;
      out->check = kChecks[c].name;
      out->role = k < 2 ? DLPC_ROLE_PRODUCER : DLPC_ROLE_CONSUMER;
      out->protocol = (k % 2) ? DLPC_PROTOCOL_LEGACY : DLPC_PROTOCOL_VERSIONED;
      out->rule = kChecks[c].rule;
      out->passes = kChecks[c].passes;
      ++g_case_count;
    }
  }
}

int32_t dlpc_case_count(void) {
  pthread_once(&g_once, build_catalogue);
  return g_case_count;
}

const dlpc_case* dlpc_case_get(int32_t i) {
  pthread_once(&g_once, build_catalogue);
  return (i >= 0 && i < g_case_count) ? &g_cases[i] : NULL;
}

/* ---- values --------------------------------------------------------------------------------- */

static int is_subbyte(DLDataType t) { return (uint32_t)t.bits * t.lanes < 8; }

/* Bits one element occupies in storage. */
static uint32_t storage_bits(DLDataType t, uint64_t flags) {
  uint32_t bits = (uint32_t)t.bits * t.lanes;
  return (bits < 8 && (flags & PADDED)) ? 8 : bits;
}

static uint64_t storage_size(DLDataType t, int64_t count, uint64_t flags) {
  return ((uint64_t)count * storage_bits(t, flags) + 7) / 8;
}

static uint16_t half_of(unsigned n) {
  if (n == 0) return 0;
  int e = 0;
  while ((1u << (e + 1)) <= n) ++e;
  unsigned mantissa = (unsigned)(((double)n / (double)(1u << e) - 1.0) * 1024.0);
  return (uint16_t)(((unsigned)(e + 15) << 10) | mantissa);
}

static int dtype_supported(DLDataType t) {
  if (t.lanes != 1) return 0;
  switch (t.code) {
    case kDLInt:
    case kDLUInt: return t.bits == 4 || t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLFloat: return t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLBfloat: return t.bits == 16;
    case kDLComplex: return t.bits == 64 || t.bits == 128;
    case kDLBool: return t.bits == 8;
    default: return 0;
  }
}

uint64_t dlpc_expected_values(DLDataType t, int64_t count, uint64_t flags, void* out,
                              uint64_t capacity) {
  if (!dtype_supported(t) || count < 0) return 0;
  uint64_t size = storage_size(t, count, flags);
  unsigned char* buf = (unsigned char*)calloc(size ? size : 1, 1);
  if (!buf) return 0;
  uint32_t ebits = storage_bits(t, flags);
  for (int64_t i = 0; i < count; ++i) {
    unsigned v = (t.code == kDLBool) ? (unsigned)(i % 2) : (unsigned)(i % 7 + 1);
    if (ebits < 8) {
      buf[(i * ebits) / 8] |= (unsigned char)(v << ((i * ebits) % 8));
      continue;
    }
    unsigned char* p = buf + (size_t)i * (ebits / 8);
    if (t.code == kDLInt || t.code == kDLUInt || t.code == kDLBool) {
      uint64_t x = v;
      memcpy(p, &x, ebits / 8); /* little-endian hosts: the low bytes first */
    } else if (t.code == kDLFloat && t.bits == 16) {
      uint16_t h = half_of(v);
      memcpy(p, &h, 2);
    } else if ((t.code == kDLFloat && t.bits == 32) || (t.code == kDLComplex && t.bits == 64)) {
      float f = (float)v;
      memcpy(p, &f, 4);
    } else if ((t.code == kDLFloat && t.bits == 64) || (t.code == kDLComplex && t.bits == 128)) {
      double d = (double)v;
      memcpy(p, &d, 8);
    } else if (t.code == kDLBfloat) {
      float f = (float)v;
      uint32_t w;
      memcpy(&w, &f, 4);
      uint16_t b = (uint16_t)(w >> 16);
      memcpy(p, &b, 2);
    }
  }
  if (out) memcpy(out, buf, size < capacity ? size : capacity);
  free(buf);
  return size;
}

/* ---- layout helpers ------------------------------------------------------------------------- */

static int64_t shape_count(int32_t ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int32_t d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

static void compact_strides(int32_t ndim, const int64_t* shape, int64_t* out) {
  int64_t s = 1;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    out[d] = s;
    s *= shape[d] > 0 ? shape[d] : 1;
  }
}

/* Element offset (in elements, from the first element) of C-order element i. */
static int64_t element_offset(int32_t ndim, const int64_t* shape, const int64_t* strides, int64_t i) {
  int64_t off = 0;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    off += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return off;
}

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* Copies the elements of a strided tensor starting at `first` into `out` (compact, C order). */
static void gather(const unsigned char* first, DLDataType t, uint64_t flags, int32_t ndim,
                   const int64_t* shape, const int64_t* strides, unsigned char* out) {
  uint32_t ebits = storage_bits(t, flags);
  int64_t n = shape_count(ndim, shape);
  memset(out, 0, storage_size(t, n, flags));
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = ndim ? element_offset(ndim, shape, strides, i) : 0;
    if (ebits >= 8) {
      memcpy(out + (size_t)i * (ebits / 8), first + off * (int64_t)(ebits / 8), ebits / 8);
    } else {
      int64_t bit = off * (int64_t)ebits;
      unsigned v = (first[floor_div(bit, 8)] >> (bit - 8 * floor_div(bit, 8))) & ((1u << ebits) - 1);
      out[(i * ebits) / 8] |= (unsigned char)(v << ((i * ebits) % 8));
    }
  }
}

/* The inverse: writes compact values into a strided layout at `first`. */
static void scatter(unsigned char* first, DLDataType t, uint64_t flags, int32_t ndim,
                    const int64_t* shape, const int64_t* strides, const unsigned char* values) {
  uint32_t ebits = storage_bits(t, flags);
  int64_t n = shape_count(ndim, shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = ndim ? element_offset(ndim, shape, strides, i) : 0;
    if (ebits >= 8) {
      memcpy(first + off * (int64_t)(ebits / 8), values + (size_t)i * (ebits / 8), ebits / 8);
    } else {
      unsigned v = (values[(i * ebits) / 8] >> ((i * ebits) % 8)) & ((1u << ebits) - 1);
      int64_t bit = off * (int64_t)ebits;
      unsigned char* p = first + floor_div(bit, 8);
      unsigned shift = (unsigned)(bit - 8 * floor_div(bit, 8));
      *p = (unsigned char)((*p & ~(((1u << ebits) - 1) << shift)) | (v << shift));
    }
  }
}

/* Lowest and one-past-highest element offsets a layout touches. */
static void offset_range(int32_t ndim, const int64_t* shape, const int64_t* strides, int64_t* lo,
                         int64_t* hi) {
  *lo = 0;
  *hi = 1;
  for (int32_t d = 0; d < ndim; ++d) {
    if (shape[d] == 0) {
      *hi = 0;
      return;
    }
    int64_t reach = (shape[d] - 1) * strides[d];
    if (reach < 0) *lo += reach; else *hi += reach;
  }
}

/* Compares storage bytes of `count` elements; the bits after the last packed sub-byte element
 * carry nothing and are ignored. */
static int values_equal(const unsigned char* a, const unsigned char* b, DLDataType t, uint64_t flags,
                        int64_t count) {
  uint64_t size = storage_size(t, count, flags);
  if (size == 0) return 1;
  if (memcmp(a, b, size - 1) != 0) return 0;
  unsigned used = (unsigned)(((uint64_t)count * storage_bits(t, flags)) % 8);
  unsigned mask = used ? (1u << used) - 1 : 0xFFu;
  return ((a[size - 1] ^ b[size - 1]) & mask) == 0;
}

static void say(dlpc_result* r, int outcome, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  r->outcome = outcome;
  vsnprintf(r->reason, sizeof r->reason, fmt, ap);
  va_end(ap);
}

static char* format_dims(char* buf, size_t size, int32_t ndim, const int64_t* v) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int32_t d = 0; d < ndim && used < size; ++d)
    used += (size_t)snprintf(buf + used, size - used, d ? ",%lld" : "%lld", (long long)v[d]);
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}

/* ---- fault guard and threads ---------------------------------------------------------------- */

static int g_guard = 0;
static sigjmp_buf g_jump;
static volatile sig_atomic_t g_armed = 0;
static volatile void* g_fault_address = NULL;

void dlpc_set_fault_guard(int enabled) { g_guard = enabled; }

static void on_fault(int sig, siginfo_t* info, void* uctx) {
  (void)uctx;
  if (!g_armed) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  g_armed = 0;
  g_fault_address = info->si_addr;
  siglongjmp(g_jump, 1);
}

typedef void (*guarded_fn)(void* arg);

/* Runs fn(arg) on this thread (other_thread == 0) or on a new one. Returns 1 if the guard
 * caught a fault. */
typedef struct thread_call {
  guarded_fn fn;
  void* arg;
} thread_call;

static void* thread_main(void* p) {
  thread_call* call = (thread_call*)p;
  call->fn(call->arg);
  return NULL;
}

static int call_subject(guarded_fn fn, void* arg, int other_thread) {
  if (other_thread) {
    /* The guard covers the calling thread only; a fault on the other thread ends the process. */
    thread_call call = {fn, arg};
    pthread_t th;
    if (pthread_create(&th, NULL, thread_main, &call) != 0) {
      fn(arg);
      return 0;
    }
    pthread_join(th, NULL);
    return 0;
  }
  if (!g_guard) {
    fn(arg);
    return 0;
  }
  struct sigaction sa, old_segv, old_bus;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  int faulted = 0;
  if (sigsetjmp(g_jump, 1) == 0) {
    g_armed = 1;
    fn(arg);
    g_armed = 0;
  } else {
    faulted = 1;
  }
  sigaction(SIGSEGV, &old_segv, NULL);
  sigaction(SIGBUS, &old_bus, NULL);
  return faulted;
}

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

static desc make_desc(DLDataType t, int32_t ndim, const int64_t* shape) {
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

/* Expectation of a consumer case. */
enum { EXPECT_ACCEPT, EXPECT_REFUSE };

/* Hands a kit tensor described by `d` to the subject and checks what it does. Returns the
 * outcome; `note` (may be NULL) is appended to a PASS reason. */
static int consume_case(const dlpc_subject* s, int legacy, const desc* d, int expect,
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
static void produce(const dlpc_subject* s, const dlpc_case* c, int legacy, const desc* d, produced* p) {
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
static int release_produced(const dlpc_subject* s, produced* p, int other_thread, dlpc_result* r) {
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
typedef int (*extra_check)(const produced* p, const desc* d, int legacy, dlpc_result* r);

static int produce_case(const dlpc_subject* s, const dlpc_case* c, const desc* d, int other_thread,
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

static int extra_version(const produced* p, const desc* d, int legacy, dlpc_result* r) {
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

static int extra_strides(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  (void)legacy;
  if (p->v->version.minor >= 2 && !p->t->strides) {
    say(r, DLPC_FAIL, "version 1.%u with ndim %d but NULL strides", p->v->version.minor, p->t->ndim);
    return 1;
  }
  say(r, DLPC_PASS, "version 1.%u, strides %s", p->v->version.minor, p->t->strides ? "set" : "NULL (allowed before 1.2)");
  return 0;
}

static int extra_read_only(const produced* p, const desc* d, int legacy, dlpc_result* r) {
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

static int extra_copied(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  (void)legacy;
  if (!(p->flags & COPIED)) {
    say(r, DLPC_FAIL, "asked for a copy, flags 0x%llx lack IS_COPIED", (unsigned long long)p->flags);
    return 1;
  }
  say(r, DLPC_PASS, "IS_COPIED set, values match");
  return 0;
}

static int extra_alignment(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  (void)legacy;
  uintptr_t first = (uintptr_t)p->t->data + p->t->byte_offset;
  unsigned align = 1;
  while (align < 4096 && (first % (align * 2)) == 0) align *= 2;
  say(r, DLPC_PASS, "first element %u-byte aligned (reported only: no alignment is required)", align);
  return 0;
}

static int extra_zero_size(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  (void)legacy;
  say(r, DLPC_PASS, "exported with data %s; one deleter call released it", p->t->data ? "non-NULL" : "NULL");
  return 0;
}

static int extra_zero_dim(const produced* p, const desc* d, int legacy, dlpc_result* r) {
  (void)d;
  (void)legacy;
  say(r, DLPC_PASS, "one element, value matches; shape %s, strides %s", p->t->shape ? "set" : "NULL",
      p->t->strides ? "set" : "NULL");
  return 0;
}

/* ---- the cases ------------------------------------------------------------------------------ */

static const DLDataType kF32 = {kDLFloat, 32, 1};

static int run_dtypes(const dlpc_subject* s, const dlpc_case* c, dlpc_result* r) {
  static const DLDataType kTypes[] = {{kDLInt, 8, 1},   {kDLUInt, 16, 1},   {kDLInt, 64, 1},
                                      {kDLFloat, 16, 1}, {kDLBfloat, 16, 1}, {kDLFloat, 64, 1},
                                      {kDLComplex, 64, 1}, {kDLBool, 8, 1}};
  static const char* kNames[] = {"int8", "uint16", "int64", "float16", "bfloat16", "float64", "complex64", "bool"};
  char passed[256] = "", skipped[256] = "";
  int npass = 0;
  int64_t shape[2] = {2, 3};
  for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; ++i) {
    desc d = make_desc(kTypes[i], 2, shape);
    dlpc_result one;
    memset(&one, 0, sizeof one);
    if (c->role == DLPC_ROLE_PRODUCER)
      produce_case(s, c, &d, 0, NULL, &one);
    else
      consume_case(s, c->protocol == DLPC_PROTOCOL_LEGACY, &d, EXPECT_ACCEPT, 0, &one, NULL);
    if (one.outcome == DLPC_FAIL) {
      say(r, DLPC_FAIL, "%s: %s", kNames[i], one.reason);
      return r->outcome;
    }
    char* list = one.outcome == DLPC_PASS ? passed : skipped;
    if (one.outcome == DLPC_PASS) ++npass;
    strncat(list, list[0] ? " " : "", sizeof passed - strlen(list) - 1);
    strncat(list, kNames[i], sizeof passed - strlen(list) - 1);
  }
  if (!npass) say(r, DLPC_SKIP, "no dtype supported (%s)", skipped);
  else say(r, DLPC_PASS, "%s carry their values%s%s%s", passed, skipped[0] ? "; not supported: " : "",
           skipped, skipped[0] ? "" : "");
  return r->outcome;
}

static int run_versioned_legacy(const dlpc_subject* s, const dlpc_case* c, dlpc_result* r) {
  int64_t shape[2] = {3, 4};
  desc d = make_desc(kF32, 2, shape);
  d.has_strides = 1;
  d.strides[0] = 1;
  d.strides[1] = 3; /* column-major: a layout the two structs must both carry */
  if (c->role == DLPC_ROLE_CONSUMER) {
    if (!s->consume_legacy || !s->consume_versioned) {
      say(r, DLPC_SKIP, "the subject lacks a %s consumer", s->consume_legacy ? "versioned" : "legacy");
      return r->outcome;
    }
    dlpc_result rv, rl;
    memset(&rv, 0, sizeof rv);
    memset(&rl, 0, sizeof rl);
    consume_case(s, 0, &d, EXPECT_ACCEPT, 0, &rv, NULL);
    consume_case(s, 1, &d, EXPECT_ACCEPT, 0, &rl, NULL);
    if (rv.outcome != rl.outcome) {
      say(r, DLPC_FAIL, "versioned: %s; legacy: %s", rv.reason, rl.reason);
    } else if (rv.outcome != DLPC_PASS) {
      say(r, rv.outcome, "versioned: %s; legacy: %s", rv.reason, rl.reason);
    } else {
      say(r, DLPC_PASS, "a column-major [3,4] read the same through both structs");
    }
    return r->outcome;
  }
  if (!s->produce_legacy || !s->produce_versioned) {
    say(r, DLPC_SKIP, "the subject lacks a %s producer", s->produce_legacy ? "versioned" : "legacy");
    return r->outcome;
  }
  /* One export at a time, each checked against the same request and released before the next,
   * so the live count sees one tensor each time. */
  produced p;
  dlpc_result part[2];
  for (int legacy = 0; legacy < 2; ++legacy) {
    memset(&part[legacy], 0, sizeof part[legacy]);
    produce(s, c, legacy, &d, &p);
    if (p.rc == DLPC_UNSUPPORTED || p.rc == DLPC_REFUSED) {
      say(&part[legacy], DLPC_SKIP, "not exported: %s", p.message);
      continue;
    }
    if (p.rc != DLPC_OK) {
      say(&part[legacy], DLPC_FAIL, "export failed: %s", p.message);
      continue;
    }
    if (p.problem[0]) say(&part[legacy], DLPC_FAIL, "%s", p.problem);
    else say(&part[legacy], DLPC_PASS, "ok");
    release_produced(s, &p, 0, &part[legacy]);
  }
  if (part[0].outcome == DLPC_PASS && part[1].outcome == DLPC_PASS) {
    say(r, DLPC_PASS, "a column-major [3,4] exported the same through both structs");
  } else {
    int outcome = (part[0].outcome == DLPC_FAIL || part[1].outcome == DLPC_FAIL) ? DLPC_FAIL : DLPC_SKIP;
    say(r, outcome, "versioned: %.200s; legacy: %.200s", part[0].reason, part[1].reason);
  }
  return r->outcome;
}

int dlpc_run_case(const dlpc_subject* s, int32_t i, dlpc_result* r) {
  const dlpc_case* c = dlpc_case_get(i);
  if (!c || !s || !r) return -1;
  memset(r, 0, sizeof *r);
  if (s->struct_size < sizeof(dlpc_subject) || s->contract_version != DLPC_CONTRACT_VERSION) {
    say(r, DLPC_FAIL, "the subject's table has struct_size %llu / contract %u, the kit expects %zu / %d",
        (unsigned long long)s->struct_size, s->contract_version, sizeof(dlpc_subject), DLPC_CONTRACT_VERSION);
    return r->outcome;
  }
  int producer = c->role == DLPC_ROLE_PRODUCER;
  int legacy = c->protocol == DLPC_PROTOCOL_LEGACY;
  const char* k = c->check;
  int64_t s23[2] = {2, 3};
  desc d = make_desc(kF32, 2, s23);
  int expect = EXPECT_ACCEPT;
  int thread = 0;
  const char* note = NULL;
  extra_check extra = NULL;
  if (!strcmp(k, "deleter-once")) {
  } else if (!strcmp(k, "deleter-other-thread")) {
    thread = 1;
  } else if (!strcmp(k, "version-stamp")) {
    extra = extra_version;
  } else if (!strcmp(k, "strides-non-null")) {
    extra = extra_strides;
  } else if (!strcmp(k, "null-strides")) {
    d.minor = 1; /* a 1.1 producer may leave them NULL; kit_make leaves them NULL */
  } else if (!strcmp(k, "negative-strides")) {
    int64_t sh[2] = {3, 4};
    d = make_desc(kF32, 2, sh);
    d.has_strides = 1;
    d.strides[0] = -4;
    d.strides[1] = 1;
  } else if (!strcmp(k, "strided")) {
    int64_t sh[2] = {4, 2};
    d = make_desc(kF32, 2, sh);
    d.has_strides = 1;
    d.strides[0] = 4;
    d.strides[1] = 2;
  } else if (!strcmp(k, "extent-one-strides")) {
    int64_t sh[2] = {3, 1};
    d = make_desc(kF32, 2, sh);
    d.has_strides = 1;
    d.strides[0] = 1;
    d.strides[1] = 1000;
  } else if (!strcmp(k, "byte-offset")) {
    d.offset_elements = 5;
  } else if (!strcmp(k, "read-only")) {
    d.flags = RO;
    d.protect_data = 1;
    extra = extra_read_only;
    if (producer && legacy) {
      /* The legacy struct has no flags: a conforming producer refuses (or is asked in vain). */
      if (!s->produce_legacy) {
        say(r, DLPC_SKIP, "the subject has no legacy producer");
        return r->outcome;
      }
      produced p;
      produce(s, c, 1, &d, &p);
      if (p.rc == DLPC_REFUSED) {
        say(r, DLPC_PASS, "refused: %s", p.message);
      } else if (p.rc == DLPC_UNSUPPORTED) {
        say(r, DLPC_SKIP, "the subject cannot make a read-only tensor: %s", p.message);
      } else if (p.rc == DLPC_OK) {
        say(r, DLPC_FAIL, "a READ_ONLY tensor exported through the legacy struct, which cannot say so");
        dlpc_result rr;
        memset(&rr, 0, sizeof rr);
        release_produced(s, &p, 0, &rr);
      } else {
        say(r, DLPC_FAIL, "the export failed: %s", p.message);
      }
      return r->outcome;
    }
  } else if (!strcmp(k, "is-copied")) {
    d.flags = COPIED;
    extra = extra_copied;
  } else if (!strcmp(k, "subbyte-packed")) {
    int64_t sh[1] = {5};
    DLDataType i4 = {kDLInt, 4, 1};
    d = make_desc(i4, 1, sh);
  } else if (!strcmp(k, "subbyte-padded")) {
    int64_t sh[1] = {5};
    DLDataType u4 = {kDLUInt, 4, 1};
    d = make_desc(u4, 1, sh);
    d.flags = PADDED;
  } else if (!strcmp(k, "zero-dim")) {
    DLDataType f64 = {kDLFloat, 64, 1};
    d = make_desc(f64, 0, NULL);
    d.null_shape = 1;
    extra = extra_zero_dim;
  } else if (!strcmp(k, "zero-size")) {
    int64_t sh[2] = {0, 3};
    DLDataType i32 = {kDLInt, 32, 1};
    d = make_desc(i32, 2, sh);
    d.null_data = 1;
    extra = extra_zero_size;
    note = "NULL data";
  } else if (!strcmp(k, "alignment")) {
    d.misalign = 4;
    extra = extra_alignment;
    note = "data 4 bytes past a 256-byte boundary";
  } else if (!strcmp(k, "major-version")) {
    d.major = 2;
    d.minor = 0;
    d.poison_tensor = 1;
    expect = EXPECT_REFUSE;
    note = "dl_tensor not read";
  } else if (!strcmp(k, "unknown-flag")) {
    d.flags = (uint64_t)1 << 40;
    expect = EXPECT_REFUSE;
  } else if (!strcmp(k, "unknown-dtype")) {
    d.patch_code = 99;
    d.minor = 99;
    expect = EXPECT_REFUSE;
  } else if (!strcmp(k, "unknown-device")) {
    d.device_type = 99;
    expect = EXPECT_REFUSE;
  } else if (!strcmp(k, "newer-minor")) {
    d.minor = 99;
  } else if (!strcmp(k, "invalid-shape")) {
    d.patch_extent = -3;
    expect = EXPECT_REFUSE;
  } else if (!strcmp(k, "struct-layout")) {
    note = "struct read within its bounds";
  } else if (!strcmp(k, "versioned-legacy")) {
    return run_versioned_legacy(s, c, r);
  } else if (!strcmp(k, "dtypes")) {
    return run_dtypes(s, c, r);
  }
  if (producer) return produce_case(s, c, &d, thread, extra, r);
  return consume_case(s, legacy, &d, expect, thread, r, note);
}
