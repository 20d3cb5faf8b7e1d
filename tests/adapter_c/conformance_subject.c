/* conformance_subject.c - the C adapter's one table (dlpack_conformance_subject): the conformance
 * kit's subject for dlbridge's C core through its public API, and with the exchange extension
 * (exchange.c) the interop matrix's C side.
 * Producer: dlb_tensor_allocate with the layout the kit asks for, filled from the kit's values
 * with dlb_tensor_copy_into, then handed out (legacy through dlb_tensor_export_legacy).
 * Consumer: dlb_tensor_import / dlb_tensor_import_legacy, read back with
 * dlb_tensor_copy_to_host, released with dlb_tensor_free. */
#include <stdio.h>
#include <string.h>

#include <dlbridge/dlbridge.h>

#include "dlpack_conformance.h"

/* exchange.c */
void* c_adapter_exchange_produce(void* ctx, const dlpc_exchange_case* c, int32_t legacy,
                                 dlpc_exchange_report* report);
int64_t c_adapter_releases(void* ctx);

static int fail(dlb_status status, const dlb_error* err, char* message, size_t size) {
  snprintf(message, size, "%s: %s", dlb_status_name(status), err->message);
  return status == DLB_ERR_UNSUPPORTED ? DLPC_UNSUPPORTED : DLPC_ERROR;
}

/* A dlbridge tensor laid out as `spec` asks, holding its values, with its flags. */
static int make(const dlpc_case_spec* spec, DLManagedTensorVersioned** out, char* message, size_t size) {
  dlb_error err;
  DLDevice cpu = {kDLCPU, 0};
  uint64_t layout_flags = spec->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
  /* The kit's values, compact, wrapped without a copy (borrowed for this call). */
  DLTensor values;
  memset(&values, 0, sizeof values);
  values.data = (void*)spec->values;
  values.device = cpu;
  values.ndim = spec->ndim;
  values.dtype = spec->dtype;
  values.shape = (int64_t*)spec->shape;
  DLManagedTensorVersioned* src = NULL;
  dlb_status st = dlb_tensor_wrap(&values, layout_flags | DLPACK_FLAG_BITMASK_READ_ONLY, NULL, NULL, &src, &err);
  if (st != DLB_OK) return fail(st, &err, message, size);
  DLManagedTensorVersioned* dst = NULL;
  if (spec->offset_elements > 0) {
    /* A view offset_elements into a larger allocation. */
    int64_t count = 0;
    dlb_shape_element_count(spec->ndim, spec->shape, &count, NULL);
    int64_t total = spec->offset_elements + count;
    DLManagedTensorVersioned* base = NULL;
    st = dlb_tensor_allocate(cpu, spec->dtype, 1, &total, NULL, layout_flags, &base, &err);
    if (st == DLB_OK) {
      dlb_slice tail = {spec->offset_elements, DLB_SLICE_NONE, 1};
      DLManagedTensorVersioned* flat = NULL;
      st = dlb_tensor_slice(base, 1, &tail, &flat, &err);
      if (st == DLB_OK) {
        st = dlb_tensor_reshape(flat, spec->ndim, spec->shape, &dst, &err);
        dlb_tensor_free(flat);
      }
      dlb_tensor_free(base);
    }
  } else {
    st = dlb_tensor_allocate(cpu, spec->dtype, spec->ndim, spec->shape, spec->strides, layout_flags, &dst, &err);
  }
  if (st == DLB_OK) st = dlb_tensor_copy_into(src, dst, &err);
  dlb_tensor_free(src);
  if (st != DLB_OK) {
    dlb_tensor_free(dst);
    return fail(st, &err, message, size);
  }
  DLManagedTensorVersioned* result = dst;
  if (spec->flags & DLPACK_FLAG_BITMASK_READ_ONLY) {
    st = dlb_tensor_share(dst, DLPACK_FLAG_BITMASK_READ_ONLY, &result, &err);
    dlb_tensor_free(dst);
  } else if (spec->flags & DLPACK_FLAG_BITMASK_IS_COPIED) {
    /* An export that is a copy: dlb_tensor_copy marks it IS_COPIED. */
    st = dlb_tensor_copy(dst, cpu, &result, &err);
    dlb_tensor_free(dst);
  }
  if (st != DLB_OK) return fail(st, &err, message, size);
  *out = result;
  return DLPC_OK;
}

static int produce_versioned(void* ctx, const dlpc_case_spec* spec, DLManagedTensorVersioned** out,
                             char* message, size_t size) {
  (void)ctx;
  return make(spec, out, message, size);
}

static int produce_legacy(void* ctx, const dlpc_case_spec* spec, DLManagedTensor** out, char* message,
                          size_t size) {
  (void)ctx;
  DLManagedTensorVersioned* t = NULL;
  int rc = make(spec, &t, message, size);
  if (rc != DLPC_OK) return rc;
  dlb_error err;
  dlb_status st = dlb_tensor_export_legacy(t, out, &err);
  if (st != DLB_OK) {
    dlb_tensor_free(t);
    snprintf(message, size, "%s: %s", dlb_status_name(st), err.message);
    /* READ_ONLY (and packed-padded) tensors cannot travel in the legacy struct: refused. */
    return (st == DLB_ERR_READ_ONLY || st == DLB_ERR_UNSUPPORTED) ? DLPC_REFUSED : DLPC_ERROR;
  }
  return DLPC_OK;
}

/* Fills the report from an imported tensor; on success the report holds it. */
static int report_on(DLManagedTensorVersioned* t, dlpc_consume_report* report) {
  dlb_error err;
  const DLTensor* dl = &t->dl_tensor;
  report->handle = t;
  report->ndim = dl->ndim;
  int64_t count = 0;
  dlb_tensor_element_count(dl, &count, NULL);
  if (dl->ndim > DLPC_MAX_NDIM) return DLPC_ERROR;
  dlb_tensor_get_shape(dl, DLPC_MAX_NDIM, report->shape, NULL);
  report->strides_known = dlb_tensor_get_strides(dl, DLPC_MAX_NDIM, report->strides, NULL) == DLB_OK;
  report->first_element = count > 0 ? (const char*)dl->data + dl->byte_offset : NULL;
  report->writable = !dlb_tensor_is_read_only(t);
  /* The values in C order, whatever the layout: one copy into the kit's buffer (any dtype). */
  uint64_t bytes = 0;
  const DLDataType any = {0, 0, 0};
  dlb_status st = dlb_tensor_byte_size(dl, t->flags, &bytes, &err);
  if (st == DLB_OK && bytes <= report->values_capacity) {
    st = dlb_tensor_copy_to_host(t, any, report->values, bytes, &err);
    if (st == DLB_OK) report->values_size = bytes;
  }
  if (st != DLB_OK) {
    snprintf(report->message, sizeof report->message, "reading back: %.200s", err.message);
    report->values_size = UINT64_MAX;
  }
  return DLPC_OK;
}

static int import_failed(dlb_status st, const dlb_error* err, dlpc_consume_report* report) {
  snprintf(report->message, sizeof report->message, "%s: %.200s", dlb_status_name(st), err->message);
  return DLPC_REFUSED;
}

static int consume_versioned(void* ctx, DLManagedTensorVersioned* tensor, dlpc_consume_report* report) {
  (void)ctx;
  dlb_error err;
  DLManagedTensorVersioned* t = NULL;
  dlb_status st = dlb_tensor_import(tensor, &t, &err);
  if (st != DLB_OK) return import_failed(st, &err, report);
  return report_on(t, report);
}

static int consume_legacy(void* ctx, DLManagedTensor* tensor, dlpc_consume_report* report) {
  (void)ctx;
  dlb_error err;
  DLManagedTensorVersioned* t = NULL;
  dlb_status st = dlb_tensor_import_legacy(tensor, &t, &err);
  if (st != DLB_OK) return import_failed(st, &err, report);
  return report_on(t, report);
}

static void release(void* ctx, void* handle) {
  (void)ctx;
  dlb_tensor_free((DLManagedTensorVersioned*)handle);
}

static int64_t live_count(void* ctx) {
  (void)ctx;
  return dlb_tensor_live_count();
}

DLPC_EXPORT const dlpc_subject* dlpack_conformance_subject(void) {
  static dlpc_subject subject = {
    sizeof(dlpc_subject), DLPC_CONTRACT_VERSION, "dlbridge C core", NULL,
    produce_versioned, produce_legacy, consume_versioned, consume_legacy, release, live_count,
    "c", c_adapter_exchange_produce, c_adapter_releases,
  };
  return &subject;
}
