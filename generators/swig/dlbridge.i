/* dlbridge.i - the language-neutral SWIG interface to the dlbridge C API.
 *
 * One file for every SWIG binding (Java, C#, Go). The language is chosen by the typemaps file
 * included first, generators/swig/typemaps_<lang>.i, which must define:
 *   - DLB_THROW_STATUS(status, message): raise the language's exception carrying the core's
 *     status code and message (used once, below, where every fallible call is checked);
 *   - typemaps for DLB_TENSOR_HANDLE (a DLManagedTensorVersioned* / DLManagedTensor* passed
 *     around as an opaque 64-bit address), DLDevice and DLDataType by value, and the int64_t
 *     array pairs (int32_t ndim, const int64_t* shape) and (int64_t* out_values, int32_t n).
 *
 * Conventions:
 *   - Every fallible function's trailing `dlb_error* error` is hidden; a non-zero status becomes
 *     the language's exception with the core's message (see %exception below).
 *   - Functions that hand back a newly owned tensor are marked %newobject; the handle they return
 *     must be released exactly once (dlb_tensor_free, or by moving it into another owner).
 *   - DLPack codes (device types, dtype codes, flags) are plain integer constants, never enums:
 *     a newer producer may send a value this file has never heard of.
 */

%{
#include <stdint.h>
#include <string.h>
#include "dlbridge/dlbridge.h"
/* A status return whose out-parameter is the value the target language sees. */
typedef int dlb_status_out;
/* Opaque tensor addresses. */
typedef DLManagedTensorVersioned* DLB_TENSOR_HANDLE;
typedef DLManagedTensor* DLB_LEGACY_HANDLE;
%}

typedef int dlb_status_out;

/* ---- errors: one place ------------------------------------------------------------------- */
/* The hidden error argument: a wrapper-local dlb_error, cleared before the call. */
%typemap(in, numinputs=0) dlb_error* error %{
  dlb_error dlb_err_;
  dlb_err_.message[0] = '\0';
  $1 = &dlb_err_;
%}
/* Functions with a hidden error argument return a status; a non-zero one becomes the
 * language's exception with the core's message. Nothing else in the bindings checks statuses. */
%define DLB_CHECKED(FN)
%exception FN {
  $action
  if (result != DLB_OK) {
    DLB_THROW_STATUS((int)result, dlb_err_.message);
    return $null;
  }
}
%enddef

/* The hidden out-handle: its value (the new tensor, or 0) becomes the call's result through the
 * target's argout typemap for DLManagedTensorVersioned** out. */
%typemap(in, numinputs=0) DLManagedTensorVersioned** out (DLManagedTensorVersioned* out_tmp = NULL) %{
  $1 = &out_tmp;
%}

/* ---- constants ----------------------------------------------------------------------------- */
#define DLB_OK 0
#define DLB_ERR_INVALID_ARGUMENT 1
#define DLB_ERR_OUT_OF_MEMORY 2
#define DLB_ERR_UNSUPPORTED_VERSION 3
#define DLB_ERR_UNSUPPORTED 4
#define DLB_ERR_READ_ONLY 5
#define DLB_ERR_LAYOUT 6
#define DLB_ERR_OVERFLOW 7
#define DLB_ERR_DEVICE 8
#define DLB_ERR_DEVICE_UNAVAILABLE 9
#define DLB_MAX_NDIM 64
#define DLB_CPU_ALIGNMENT 256
%constant int DLB_FLAG_READ_ONLY = 1;
%constant int DLB_FLAG_IS_COPIED = 2;
%constant int DLB_FLAG_IS_SUBBYTE_TYPE_PADDED = 4;

/* ---- versions and names ------------------------------------------------------------------- */
const char* dlb_version_string(void);
const char* dlb_status_name(int status);
int64_t dlb_tensor_live_count(void);
int dlb_device_type_is_known(int32_t device_type);

/* ---- tensor lifecycle ------------------------------------------------------------------------
 * The wrappers below are thin shims with one shape each: handle in, handle out, status checked.
 * They exist so that every target sees the same small surface. */
%newobject dlbx_allocate;
%newobject dlbx_import;
%newobject dlbx_import_legacy;
%newobject dlbx_export_legacy;
%newobject dlbx_share;
%newobject dlbx_select;
%newobject dlbx_reshape;
%newobject dlbx_permute;
%newobject dlbx_transpose;
%newobject dlbx_slice;
%newobject dlbx_copy;
DLB_CHECKED(dlbx_allocate)
DLB_CHECKED(dlbx_import)
DLB_CHECKED(dlbx_import_legacy)
DLB_CHECKED(dlbx_export_legacy)
DLB_CHECKED(dlbx_share)
DLB_CHECKED(dlbx_select)
DLB_CHECKED(dlbx_reshape)
DLB_CHECKED(dlbx_permute)
DLB_CHECKED(dlbx_transpose)
DLB_CHECKED(dlbx_slice)
DLB_CHECKED(dlbx_copy)
DLB_CHECKED(dlbx_copy_into)
DLB_CHECKED(dlbx_get_shape)
DLB_CHECKED(dlbx_get_strides)

%inline %{
/* Each returns the handle through the hidden `out`; the typemaps turn it into the result. */
static dlb_status_out dlbx_allocate(DLDevice device, DLDataType dtype, int32_t ndim,
                                    const int64_t* shape, uint64_t flags,
                                    DLManagedTensorVersioned** out, dlb_error* error) {
  return dlb_tensor_allocate(device, dtype, ndim, shape, NULL, flags, out, error);
}
static dlb_status_out dlbx_import(DLB_TENSOR_HANDLE src, DLManagedTensorVersioned** out,
                                  dlb_error* error) {
  return dlb_tensor_import(src, out, error);
}
static dlb_status_out dlbx_import_legacy(DLB_LEGACY_HANDLE src, DLManagedTensorVersioned** out,
                                         dlb_error* error) {
  return dlb_tensor_import_legacy(src, out, error);
}
static dlb_status_out dlbx_export_legacy(DLB_TENSOR_HANDLE src, DLManagedTensorVersioned** out,
                                         dlb_error* error) {
  DLManagedTensor* legacy = NULL;
  int status = dlb_tensor_export_legacy(src, &legacy, error);
  /* The legacy address travels in the same opaque handle slot. */
  *out = (DLManagedTensorVersioned*)(void*)legacy;
  return status;
}
static dlb_status_out dlbx_share(DLB_TENSOR_HANDLE src, uint64_t add_flags,
                                 DLManagedTensorVersioned** out, dlb_error* error) {
  return dlb_tensor_share(src, add_flags, out, error);
}
static dlb_status_out dlbx_select(DLB_TENSOR_HANDLE src, int32_t axis, int64_t index,
                                  DLManagedTensorVersioned** out, dlb_error* error) {
  return dlb_tensor_select(src, axis, index, out, error);
}
static dlb_status_out dlbx_reshape(DLB_TENSOR_HANDLE src, int32_t ndim, const int64_t* shape,
                                   DLManagedTensorVersioned** out, dlb_error* error) {
  return dlb_tensor_reshape(src, ndim, shape, out, error);
}
/* axes as int64 values (one array typemap for every target); narrowed here. */
static dlb_status_out dlbx_permute(DLB_TENSOR_HANDLE src, int32_t ndim, const int64_t* shape,
                                   DLManagedTensorVersioned** out, dlb_error* error) {
  int32_t axes[DLB_MAX_NDIM];
  int32_t i;
  if (ndim < 0 || ndim > DLB_MAX_NDIM) {
    return dlb_tensor_permute(src, ndim, NULL, out, error);
  }
  for (i = 0; i < ndim; ++i) axes[i] = (int32_t)shape[i];
  return dlb_tensor_permute(src, ndim, axes, out, error);
}
static dlb_status_out dlbx_transpose(DLB_TENSOR_HANDLE src, DLManagedTensorVersioned** out,
                                     dlb_error* error) {
  return dlb_tensor_transpose(src, out, error);
}
/* slices as (start, stop, step) triples of int64; INT64_MIN is DLB_SLICE_NONE. */
static dlb_status_out dlbx_slice(DLB_TENSOR_HANDLE src, int32_t ndim, const int64_t* shape,
                                 DLManagedTensorVersioned** out, dlb_error* error) {
  dlb_slice slices[DLB_MAX_NDIM];
  int32_t n = ndim / 3, i;
  if (ndim % 3 != 0 || n > DLB_MAX_NDIM) {
    return dlb_tensor_slice(src, -1, NULL, out, error);
  }
  for (i = 0; i < n; ++i) {
    slices[i].start = shape[3 * i];
    slices[i].stop = shape[3 * i + 1];
    slices[i].step = shape[3 * i + 2];
  }
  return dlb_tensor_slice(src, n, slices, out, error);
}
static dlb_status_out dlbx_copy(DLB_TENSOR_HANDLE src, DLDevice device,
                                DLManagedTensorVersioned** out, dlb_error* error) {
  return dlb_tensor_copy(src, device, out, error);
}
static dlb_status_out dlbx_copy_into(DLB_TENSOR_HANDLE src, DLB_TENSOR_HANDLE dst,
                                     DLManagedTensorVersioned** out, dlb_error* error) {
  *out = NULL;
  return dlb_tensor_copy_into(src, dst, error);
}
/* The shape / strides of a tensor into a caller array of ndim values. */
static dlb_status_out dlbx_get_shape(DLB_TENSOR_HANDLE t, int64_t* out_values, int32_t n,
                                     DLManagedTensorVersioned** out, dlb_error* error) {
  *out = NULL;
  if (t == NULL || n != t->dl_tensor.ndim) {
    strcpy(error->message, "shape buffer does not match ndim");
    return DLB_ERR_INVALID_ARGUMENT;
  }
  if (n > 0) memcpy(out_values, t->dl_tensor.shape, (size_t)n * sizeof(int64_t));
  return DLB_OK;
}
static dlb_status_out dlbx_get_strides(DLB_TENSOR_HANDLE t, int64_t* out_values, int32_t n,
                                       DLManagedTensorVersioned** out, dlb_error* error) {
  *out = NULL;
  if (t == NULL || n != t->dl_tensor.ndim) {
    strcpy(error->message, "strides buffer does not match ndim");
    return DLB_ERR_INVALID_ARGUMENT;
  }
  return n > 0 ? dlb_tensor_get_strides(&t->dl_tensor, n, out_values, error) : DLB_OK;
}
/* Plain queries on a live handle (never fail). */
static int32_t dlbx_ndim(DLB_TENSOR_HANDLE t) { return t->dl_tensor.ndim; }
static DLDataType dlbx_dtype(DLB_TENSOR_HANDLE t) { return t->dl_tensor.dtype; }
static DLDevice dlbx_device(DLB_TENSOR_HANDLE t) { return t->dl_tensor.device; }
static uint64_t dlbx_flags(DLB_TENSOR_HANDLE t) { return t->flags; }
static int dlbx_is_host_readable(DLB_TENSOR_HANDLE t) {
  return dlb_tensor_is_host_readable(&t->dl_tensor);
}
static int dlbx_is_c_contiguous(DLB_TENSOR_HANDLE t) {
  return dlb_tensor_is_c_contiguous(&t->dl_tensor);
}
static void dlbx_free(DLB_TENSOR_HANDLE t) { dlb_tensor_free(t); }
static void dlbx_legacy_free(DLB_LEGACY_HANDLE t) { dlb_tensor_free_legacy(t); }
/* An empty function: the floor of one call through the binding. */
static void dlbx_noop(void) {}
%}
