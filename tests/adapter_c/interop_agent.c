/* interop_agent.c - the C adapter's interop agent: produces and consumes with the dlbridge C API
 * only. Linked with its own hidden copy of the static core, like any library that embeds
 * dlbridge, so its live count is its own. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlbridge/dlbridge.h"
#include "interop_agent.h"

#if defined(__GNUC__)
#define AGENT_EXPORT __attribute__((visibility("default")))
#else
#define AGENT_EXPORT
#endif

static int64_t g_releases = 0;

static void count_release(void* ctx) {
  free(ctx);
  __atomic_add_fetch(&g_releases, 1, __ATOMIC_SEQ_CST);
}

static int64_t agent_releases(void) { return __atomic_load_n(&g_releases, __ATOMIC_SEQ_CST); }

static int64_t agent_live_count(void) { return dlb_tensor_live_count(); }

static void store(void* p, int64_t code, int64_t bits, double v) {
  if (code == 2 && bits == 32) {
    float f = (float)v;
    memcpy(p, &f, 4);
  } else if (code == 2) {
    memcpy(p, &v, 8);
  } else {
    int64_t i = (int64_t)v;
    int32_t i32 = (int32_t)i;
    uint8_t u8 = (uint8_t)i;
    if (bits == 64) memcpy(p, &i, 8);
    else if (bits == 32) memcpy(p, &i32, 4);
    else memcpy(p, &u8, 1);
  }
}

static double load(const void* p, int64_t code, int64_t bits) {
  if (code == 2 && bits == 32) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  if (code == 2) {
    double d;
    memcpy(&d, p, 8);
    return d;
  }
  if (bits == 64) {
    int64_t i;
    memcpy(&i, p, 8);
    return (double)i;
  }
  if (bits == 32) {
    int32_t i;
    memcpy(&i, p, 4);
    return i;
  }
  if (code == 1) return *(const uint8_t*)p;
  return *(const int8_t*)p;
}

static int32_t fail(interop_report* r, int32_t status, const char* what, const char* detail) {
  /* Concatenated by hand: the core's messages are longer than the report's buffer. */
  size_t room = sizeof r->message - 1, n = strlen(what);
  if (n > room) n = room;
  memcpy(r->message, what, n);
  if (n + 2 <= room) {
    size_t m = strlen(detail);
    memcpy(r->message + n, ": ", 2);
    n += 2;
    if (m > room - n) m = room - n;
    memcpy(r->message + n, detail, m);
    n += m;
  }
  r->message[n] = '\0';
  r->status = status != 0 ? status : -1;
  return r->status;
}

static uint64_t first_address(const DLTensor* t) {
  return (uint64_t)(uintptr_t)t->data + t->byte_offset;
}

static void* agent_produce(const interop_case* c, int32_t legacy, interop_report* r) {
  DLDataType dtype;
  DLTensor desc;
  DLManagedTensorVersioned* base = NULL;
  DLManagedTensorVersioned* t = NULL;
  dlb_error err;
  dlb_status st;
  int64_t n = 1, i, esize = c->dtype_bits / 8;
  char* data;
  memset(r, 0, sizeof *r);
  r->write_refused = -1;
  dtype.code = (uint8_t)c->dtype_code;
  dtype.bits = (uint8_t)c->dtype_bits;
  dtype.lanes = 1;
  for (i = 0; i < c->base_ndim; ++i) n *= c->base_shape[i];
  data = (char*)malloc((size_t)(n > 0 ? n * esize : 1));
  for (i = 0; i < n; ++i) store(data + i * esize, c->dtype_code, c->dtype_bits, interop_base_value(c->dtype_code, i));
  memset(&desc, 0, sizeof desc);
  desc.data = data;
  desc.device.device_type = kDLCPU;
  desc.ndim = (int32_t)c->base_ndim;
  desc.dtype = dtype;
  desc.shape = (int64_t*)c->base_shape;
  st = dlb_tensor_wrap(&desc, 0, count_release, data, &base, &err);
  if (st != DLB_OK) {
    free(data);
    fail(r, st, "dlb_tensor_wrap", err.message);
    return NULL;
  }
  r->base = first_address(&base->dl_tensor);
  switch (c->op) {
    case INTEROP_OP_COPY: {
      DLDevice cpu;
      cpu.device_type = kDLCPU;
      cpu.device_id = 0;
      st = dlb_tensor_copy(base, cpu, &t, &err);
      if (st == DLB_OK) r->base = first_address(&t->dl_tensor);
      break;
    }
    case INTEROP_OP_NONE:
      t = base;
      base = NULL;
      break;
    case INTEROP_OP_TRANSPOSE:
      st = dlb_tensor_transpose(base, &t, &err);
      break;
    case INTEROP_OP_SLICE: {
      dlb_slice s;
      s.start = c->op_args[0];
      s.stop = c->op_args[1];
      s.step = c->op_args[2];
      st = dlb_tensor_slice(base, 1, &s, &t, &err);
      break;
    }
    case INTEROP_OP_SELECT:
      st = dlb_tensor_select(base, (int32_t)c->op_args[0], c->op_args[1], &t, &err);
      break;
    case INTEROP_OP_READ_ONLY:
      st = dlb_tensor_share(base, DLPACK_FLAG_BITMASK_READ_ONLY, &t, &err);
      break;
    default:
      st = DLB_ERR_INVALID_ARGUMENT;
      snprintf(err.message, sizeof err.message, "unknown op %lld", (long long)c->op);
  }
  dlb_tensor_free(base); /* the view keeps the memory alive on its own */
  if (st != DLB_OK) {
    fail(r, st, "op", err.message);
    return NULL;
  }
  if (legacy) {
    DLManagedTensor* out = NULL;
    st = dlb_tensor_export_legacy(t, &out, &err);
    if (st != DLB_OK) {
      dlb_tensor_free(t); /* a refused export leaves the tensor with us */
      fail(r, st, "dlb_tensor_export_legacy", err.message);
      return NULL;
    }
    r->data = first_address(&out->dl_tensor);
    return out;
  }
  r->data = first_address(&t->dl_tensor);
  return t;
}

static void* free_thread(void* t) {
  dlb_tensor_free((DLManagedTensorVersioned*)t);
  return NULL;
}

static int32_t check(DLManagedTensorVersioned* t, const interop_case* c, int32_t legacy,
                     interop_report* r) {
  char buf[160];
  int64_t shape[DLB_MAX_NDIM], strides[DLB_MAX_NDIM], idx[DLB_MAX_NDIM], n, k;
  dlb_error err;
  dlb_status st;
  int32_t d, ndim = t->dl_tensor.ndim;
  uint64_t want_flags = legacy ? 0 : (uint64_t)c->flags;
  r->data = first_address(&t->dl_tensor);
  if (ndim != c->ndim) {
    snprintf(buf, sizeof buf, "ndim %d, expected %lld", ndim, (long long)c->ndim);
    return fail(r, -1, "ndim", buf);
  }
  if ((st = dlb_tensor_get_shape(&t->dl_tensor, DLB_MAX_NDIM, shape, &err)) != DLB_OK ||
      (st = dlb_tensor_get_strides(&t->dl_tensor, DLB_MAX_NDIM, strides, &err)) != DLB_OK)
    return fail(r, st, "shape/strides", err.message);
  for (d = 0; d < ndim; ++d) {
    if (shape[d] != c->shape[d] || strides[d] != c->strides[d]) {
      snprintf(buf, sizeof buf, "dim %d: extent %lld stride %lld, expected %lld and %lld", d,
               (long long)shape[d], (long long)strides[d], (long long)c->shape[d], (long long)c->strides[d]);
      return fail(r, -1, "layout", buf);
    }
  }
  if (t->dl_tensor.dtype.code != c->dtype_code || t->dl_tensor.dtype.bits != c->dtype_bits ||
      t->dl_tensor.dtype.lanes != 1)
    return fail(r, -1, "dtype", "differs from the case");
  if (t->dl_tensor.device.device_type != kDLCPU || t->dl_tensor.device.device_id != 0)
    return fail(r, -1, "device", "not cpu:0");
  if (dlb_tensor_flags(t) != want_flags) {
    snprintf(buf, sizeof buf, "flags %llu, expected %llu", (unsigned long long)dlb_tensor_flags(t),
             (unsigned long long)want_flags);
    return fail(r, -1, "flags", buf);
  }
  n = interop_element_count(c);
  r->checksum = 0.0;
  for (k = 0; k < n; ++k) {
    void* p = NULL;
    double v, want = interop_expected_value(c, k);
    int64_t rest = k;
    for (d = ndim - 1; d >= 0; --d) {
      idx[d] = rest % shape[d];
      rest /= shape[d];
    }
    if ((st = dlb_tensor_element_data(t, ndim, idx, 0, &p, &err)) != DLB_OK)
      return fail(r, st, "dlb_tensor_element_data", err.message);
    v = load(p, c->dtype_code, c->dtype_bits);
    if (v != want) {
      snprintf(buf, sizeof buf, "element %lld is %g, expected %g", (long long)k, v, want);
      return fail(r, -1, "values", buf);
    }
    r->checksum += v * (double)(k + 1);
  }
  if ((want_flags & DLPACK_FLAG_BITMASK_IS_COPIED) && !dlb_tensor_is_exclusive(t))
    return fail(r, -1, "IS_COPIED", "the import is not exclusive to its consumer");
  if (c->flags & (int64_t)DLPACK_FLAG_BITMASK_READ_ONLY) {
    void* p = NULL;
    int64_t zero[DLB_MAX_NDIM] = {0};
    st = dlb_tensor_element_data(t, ndim, zero, 1, &p, &err);
    r->write_refused = st == DLB_ERR_READ_ONLY ? 1 : 0;
  }
  return 0;
}

static int32_t agent_consume(void* tensor, const interop_case* c, int32_t legacy,
                             int32_t free_on_new_thread, interop_report* r) {
  DLManagedTensorVersioned* t = NULL;
  dlb_error err;
  dlb_status st;
  memset(r, 0, sizeof *r);
  r->write_refused = -1;
  st = legacy ? dlb_tensor_import_legacy((DLManagedTensor*)tensor, &t, &err)
              : dlb_tensor_import((DLManagedTensorVersioned*)tensor, &t, &err);
  if (st != DLB_OK) return fail(r, st, "import", err.message);
  r->status = check(t, c, legacy, r);
  if (free_on_new_thread) {
    pthread_t th;
    if (pthread_create(&th, NULL, free_thread, t) != 0) {
      dlb_tensor_free(t);
      return fail(r, -1, "pthread_create", "failed");
    }
    pthread_join(th, NULL);
  } else {
    dlb_tensor_free(t);
  }
  return r->status;
}

static const interop_agent g_agent = {
    INTEROP_CONTRACT_VERSION, "c", agent_produce, agent_consume, agent_live_count, agent_releases,
};

AGENT_EXPORT const interop_agent* interop_agent_get(void) { return &g_agent; }
