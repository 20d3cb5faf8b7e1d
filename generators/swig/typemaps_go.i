/* typemaps_go.i - what dlbridge.i needs from Go (see the list at the top of dlbridge.i).
 * Included by dlbridge.i when SWIG runs with -go (always with -cgo -intgosize 64). The module
 * file is generators/swig/dlbridge_go.i; generators/swig/generate_go.sh runs SWIG and writes
 * the result into bindings/go/internal/capi (committed: Go users never need SWIG).
 *
 * Go has no exceptions, and nothing may live in thread-local state (a goroutine moves between
 * threads between two cgo calls). So a failure travels in the wrapper's own result: every
 * fallible function returns a 64-bit integer that is 0 or a tensor's address on success, and
 * on failure the negated address of a malloc'd error record (status + message) that the Go
 * side reads and frees with dlbx_go_error_status/message/free. Addresses of user memory are
 * below 2^63, so the sign tells the two apart. The idiomatic package turns the record into a
 * *dlbridge.Error in one function (bindings/go/errors.go). */

/* 1. DLB_THROW_STATUS: the record's negated address becomes the wrapper's result. SWIG's Go
 * module does not expand $null (the value dlbridge.i returns after DLB_THROW_STATUS), so the
 * generator script replaces it with the same variable, _swig_go_result. */
%{
#include <stdlib.h>
typedef struct dlbx_go_error {
  int32_t status;
  char message[DLB_ERROR_MESSAGE_SIZE];
} dlbx_go_error;
/* When malloc itself fails: a static record that dlbx_go_error_free never frees. */
static dlbx_go_error dlbx_go_out_of_memory = {DLB_ERR_OUT_OF_MEMORY,
                                              "out of memory while reporting an error"};
static long long dlbx_go_error_new(int32_t status, const char* message) {
  dlbx_go_error* e = (dlbx_go_error*)malloc(sizeof *e);
  if (e == NULL) return -(long long)(intptr_t)&dlbx_go_out_of_memory;
  e->status = status;
  strncpy(e->message, message != NULL ? message : "", sizeof e->message - 1);
  e->message[sizeof e->message - 1] = '\0';
  return -(long long)(intptr_t)e;
}
#define DLB_THROW_STATUS(status, message) \
  (_swig_go_result = dlbx_go_error_new((int32_t)(status), (message)))
%}
%inline %{
/* The error record behind a negative result (see the top of typemaps_go.i). */
static int32_t dlbx_go_error_status(int64_t result) {
  return ((const dlbx_go_error*)(intptr_t)-result)->status;
}
static const char* dlbx_go_error_message(int64_t result) {
  return ((const dlbx_go_error*)(intptr_t)-result)->message;
}
static void dlbx_go_error_free(int64_t result) {
  dlbx_go_error* e = (dlbx_go_error*)(intptr_t)-result;
  if (e != &dlbx_go_out_of_memory) free(e);
}
%}

/* Tensor outputs. In Go, $result in an argout typemap names the C result, not the wrapper's
 * return value, and argout runs after the out typemap: the tensor's address is stored into
 * _swig_go_result here. A multi-argument typemap (the output plus the hidden error that always
 * follows it) takes precedence over dlbridge.i's single-argument ones; the hidden error part
 * repeats dlbridge.i's (the out typemap of dlb_status reads dlb_err_). */
%define DLB_GO_TENSOR_OUT(TYPE)
%typemap(in, numinputs=0) (TYPE** out, dlb_error* error) (TYPE* out_tmp = NULL) %{
  $1 = &out_tmp;
  dlb_error dlb_err_;
  dlb_err_.message[0] = '\0';
  $2 = &dlb_err_;
%}
%typemap(argout) (TYPE** out, dlb_error* error) %{
  _swig_go_result = (long long)(intptr_t)*$1;
%}
%enddef
DLB_GO_TENSOR_OUT(DLManagedTensorVersioned)
DLB_GO_TENSOR_OUT(DLManagedTensor)
DLB_GO_TENSOR_OUT(dlb_channel)
DLB_GO_TENSOR_OUT(dlb_channel_options)

/* Text in (dtype and device names, socket paths, channel addresses): Go passes its string with a
 * NUL appended, and C reads the Go memory for the duration of the call. SWIG's default copies
 * into malloc'd memory that the early return after a failed status would leak. */
%typemap(goin) const char* name, const char* text, const char* path, const char* address %{ $result = $input + "\x00" %}
%typemap(in) const char* name, const char* text, const char* path, const char* address %{
  if ($input.n < 1 || $input.p[$input.n - 1] != '\0') {
    DLB_THROW_STATUS(DLB_ERR_INVALID_ARGUMENT, "a string argument must end with a NUL byte");
    return $null;
  }
  $1 = ($1_ltype)$input.p;
%}
%typemap(freearg) const char* name, const char* text, const char* path, const char* address ""

/* 2. Arrays are Go slices (SWIG's _goslice_: array, len, cap); a nil slice is a null array. */
%{
#define DLB_ARRAY_LENGTH(a) ((a).array == NULL ? (int64_t)-1 : (int64_t)(a).len)
#define DLB_ARRAY_GET_I64(a, n, dst) memcpy((dst), (a).array, (size_t)(n) * sizeof(int64_t))
#define DLB_ARRAY_SET_I64(a, n, src) memcpy((a).array, (src), (size_t)(n) * sizeof(int64_t))
#define DLB_ARRAY_GET_I32(a, n, dst) memcpy((dst), (a).array, (size_t)(n) * sizeof(int32_t))
#define DLB_ARRAY_SET_I32(a, n, src) memcpy((a).array, (src), (size_t)(n) * sizeof(int32_t))
#define DLB_ARRAY_GET_I8(a, n, dst) memcpy((dst), (a).array, (size_t)(n))
#define DLB_ARRAY_SET_I8(a, n, src) memcpy((a).array, (src), (size_t)(n))
%}

/* 3. The Go types of an array parameter group: []int64, []int32 and []byte, never *int (Go's
 * int is 64 bits under -intgosize 64 while C writes int32_t). */
%define DLB_ARRAY_TYPES_I64(PARAMS)
%typemap(gotype) PARAMS "[]int64"
%enddef
%define DLB_ARRAY_TYPES_I32(PARAMS)
%typemap(gotype) PARAMS "[]int32"
%enddef
%define DLB_ARRAY_TYPES_I8(PARAMS)
%typemap(gotype) PARAMS "[]byte"
%enddef
%define DLB_ARRAY_TYPES(PARAMS, KIND)
DLB_ARRAY_TYPES_##KIND(PARAMS)
%enddef

/* 4. Go has uint64: nothing to do. 5. SWIG's Go module gives every enumerator as a plain
 * `int` variable read from C at package initialisation (KDLCPU, KDLFloat, ...). */

/* The release function of dlbx_tensor_wrap (dlbridge.i): the shared engine. A release on the
 * thread of the package's own free comes back as dlbx_tensor_free's result; one on any other
 * thread (a consumer's) is queued, and the package drains the queue (bindings/go/lifecycle.go).
 * Measured against a cgo callback into Go (the token handed to an exported Go function that
 * runs the release): a wrap + close cycle with a release function took 140 ns here against
 * 195 ns through the callback, best of six alternated runs (docs/go.md). */
%{
#define DLBX_RELEASE_FN dlbx_release
%}
