/* exchange.c - the C adapter's producer of the interop matrix (the exchange extension of its
 * dlpc_subject, conformance_subject.c): makes each case with the dlbridge C API only. The
 * matrix's consumer is the subject's consume entry points. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlbridge/dlbridge.h"
#include "interop_runner.h"

static int64_t g_releases = 0;

static void count_release(void* ctx) {
  free(ctx);
  __atomic_add_fetch(&g_releases, 1, __ATOMIC_SEQ_CST);
}

int64_t c_adapter_releases(void* ctx) {
  (void)ctx;
  return __atomic_load_n(&g_releases, __ATOMIC_SEQ_CST);
}

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

static void fail(dlpc_exchange_report* r, int32_t status, const char* what, const char* detail) {
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
}

static uint64_t first_address(const DLTensor* t) {
  return (uint64_t)(uintptr_t)t->data + t->byte_offset;
}

void* c_adapter_exchange_produce(void* ctx, const dlpc_exchange_case* c, int32_t legacy, dlpc_exchange_report* r) {
  DLDataType dtype;
  DLTensor desc;
  DLManagedTensorVersioned* base = NULL;
  DLManagedTensorVersioned* t = NULL;
  dlb_error err;
  dlb_status st;
  int64_t n = 1, i, esize = c->dtype_bits / 8;
  char* data;
  (void)ctx;
  memset(r, 0, sizeof *r);
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
    case DLPC_EXCHANGE_OP_COPY: {
      DLDevice cpu;
      cpu.device_type = kDLCPU;
      cpu.device_id = 0;
      st = dlb_tensor_copy(base, cpu, &t, &err);
      if (st == DLB_OK) r->base = first_address(&t->dl_tensor);
      break;
    }
    case DLPC_EXCHANGE_OP_NONE:
      t = base;
      base = NULL;
      break;
    case DLPC_EXCHANGE_OP_TRANSPOSE:
      st = dlb_tensor_transpose(base, &t, &err);
      break;
    case DLPC_EXCHANGE_OP_SLICE: {
      dlb_slice s;
      s.start = c->op_args[0];
      s.stop = c->op_args[1];
      s.step = c->op_args[2];
      st = dlb_tensor_slice(base, 1, &s, &t, &err);
      break;
    }
    case DLPC_EXCHANGE_OP_SELECT:
      st = dlb_tensor_select(base, (int32_t)c->op_args[0], c->op_args[1], &t, &err);
      break;
    case DLPC_EXCHANGE_OP_READ_ONLY:
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
    return out;
  }
  return t;
}
