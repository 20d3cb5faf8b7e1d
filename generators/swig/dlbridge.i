/* dlbridge.i - the language-neutral SWIG interface to the dlbridge C API, generated from the
 * public headers themselves: constants and signatures cannot drift from the C library.
 *
 * A binding's module file (generators/swig/dlbridge_<lang>.i) is `%module(...) Name`, the
 * language's pragmas and `%include "dlbridge.i"`, then what only that language's native side
 * must add (Java: bindings/java/native/java_memory.i, direct buffers and pinned arrays). This
 * file includes generators/swig/typemaps_<lang>.i for the
 * language SWIG is run for (SWIGJAVA, SWIGCSHARP, SWIGGO). A typemaps file must provide exactly:
 *
 *   1. DLB_THROW_STATUS(status, message): a C macro, usable inside any wrapper, that raises the
 *      language's exception carrying the core's dlb_status (int32_t) and message (const char*,
 *      copied). The wrapper returns right after it. Used for core failures and for arguments
 *      the typemaps below refuse (DLB_ERR_INVALID_ARGUMENT).
 *   2. Array access, C macros over the language's array argument `a` (the $input of an array
 *      parameter), for KIND in I8 (int8_t), I32 (int32_t), I64 (int64_t):
 *        DLB_ARRAY_LENGTH(a)              number of elements as int64_t, -1 for a null array;
 *        DLB_ARRAY_GET_<KIND>(a, n, dst)  copy elements [0, n) of `a` into the C array dst;
 *        DLB_ARRAY_SET_<KIND>(a, n, src)  copy n elements of the C array src into `a`.
 *   3. %define DLB_ARRAY_TYPES(PARAMS, KIND): the language-side types (Java: jni/jtype/jstype/
 *      javain; C#: ctype/imtype/cstype/csin; Go: gotype/imtype/goin) of the parameter group
 *      PARAMS, which the target language sees as ONE array of KIND (caller-allocated; for
 *      outputs the wrapper writes into it). The C side (in/argout) is written here.
 *   4. A 64-bit integer for uint64_t where the language's `unsigned long long` is not one
 *      (Java: BigInteger otherwise); int64_t is mapped here (see "Integers").
 *   5. DLPack's enums (device types, dtype codes) as plain integer constants, never enums.
 * Everything else is language-neutral and lives here: integer, handle, DLDevice and DLDataType
 * conversions, status checking, outputs.
 *
 * What the target language sees:
 *   - Every fallible function (return type dlb_status) loses its trailing `dlb_error* error`;
 *     a status other than DLB_OK becomes the language's exception with the core's message. The
 *     function returns a 64-bit integer: the address of the tensor it made when it has a
 *     `DLManagedTensorVersioned** out` / `DLManagedTensor** out` output, otherwise 0.
 *   - Tensors (DLManagedTensorVersioned*, DLManagedTensor*), streams and other void* are
 *     opaque 64-bit addresses. Functions taking `const DLTensor*` take a versioned tensor's
 *     address and read its dl_tensor.
 *   - DLDevice is a 64-bit integer (device_type << 32 | device_id), DLDataType a 32-bit integer
 *     (code | bits << 8 | lanes << 16). The codes are never enums: a newer producer may send a
 *     value no constant names.
 *   - Scalar outputs (int32_t* count, int64_t* out, uint64_t* out, void** ..., DLDevice* out,
 *     DLDataType* out) are arrays of at least one element the caller passes; text outputs
 *     (char* buffer, uint64_t buffer_size) a byte array that receives the NUL-terminated text.
 *   - Arrays in: (int32_t ndim, const int64_t* shape) and shape + strides (strides may be null,
 *     else as long as shape), (int32_t nslices, const dlb_slice* slices) as a flat int64 array
 *     of (start, stop, step) triples, (int32_t naxes, const int32_t* axes), (int32_t nindex,
 *     const int64_t* index) as an int64 array of one index per dimension, and
 *     (int32_t capacity, int64_t* out) as an int64 array the call fills.
 */

%{
#include <stdint.h>
#include <string.h>
#include "dlbridge/dlbridge.h"
#include "dlbx_pack.h"
#include "dlbx_release.h"
%}

/* ---- Integers --------------------------------------------------------------------------- */
/* int64_t is `long` on LP64 targets: SWIGWORDSIZE64 makes stdint.i say so, so that the C it
 * generates uses the header's own types. The typemaps of `long long` then make every 64-bit
 * integer 64 bits wide in every language (SWIG's Java and C# map C `long` to 32 bits). */
#if !defined(SWIGWORDSIZE64) && !defined(SWIGWORDSIZE32)
#define SWIGWORDSIZE64
#endif
%include "stdint.i"
%apply long long { int64_t };
%apply unsigned long long { uint64_t };

/* ---- the language ---------------------------------------------------------------------- */
#if defined(SWIGJAVA)
%include "typemaps_java.i"
#elif defined(SWIGCSHARP)
%include "typemaps_csharp.i"
#elif defined(SWIGGO)
%include "typemaps_go.i"
#else
#error "dlbridge.i: no typemaps file for this SWIG target"
#endif

/* ---- errors: the status return type is the check ----------------------------------------- */
/* The hidden error argument: a wrapper-local dlb_error. */
%typemap(in, numinputs=0) dlb_error* error %{
  dlb_error dlb_err_;
  dlb_err_.message[0] = '\0';
  $1 = &dlb_err_;
%}
/* Every function returning dlb_status also takes the hidden error (the header's rule), so the
 * check needs no list of names. The language sees a 64-bit integer: 0, or the new tensor. */
%apply long long { dlb_status };
%typemap(out) dlb_status %{
  if ($1 != DLB_OK) {
    DLB_THROW_STATUS($1, dlb_err_.message);
    return $null;
  }
  $result = 0;
%}
/* dlb_status_name's argument is a plain status value. */
%apply int32_t { dlb_status status };

/* ---- handles ---------------------------------------------------------------------------- */
%define DLB_ADDRESS(TYPE)
%apply long long { TYPE };
%typemap(in) TYPE %{ $1 = ($1_ltype)(intptr_t)$input; %}
%typemap(out) TYPE %{ $result = (int64_t)(intptr_t)$1; %}
%enddef
DLB_ADDRESS(DLManagedTensorVersioned*)
DLB_ADDRESS(const DLManagedTensorVersioned*)
DLB_ADDRESS(DLManagedTensor*)
DLB_ADDRESS(void*)
DLB_ADDRESS(const void*)
/* A borrowed DLTensor: the caller passes a versioned tensor, whose dl_tensor is read. */
%apply long long { const DLTensor* };
%typemap(in) const DLTensor* %{
  $1 = $input ? &((DLManagedTensorVersioned*)(intptr_t)$input)->dl_tensor : NULL;
%}

/* Tensor outputs: hidden; the new tensor's address is the call's result (0 on error). */
%define DLB_TENSOR_OUT(TYPE)
%typemap(in, numinputs=0) TYPE** out (TYPE* out_tmp = NULL) %{ $1 = &out_tmp; %}
%typemap(argout) TYPE** out %{ $result = (int64_t)(intptr_t)*$1; %}
%enddef
DLB_TENSOR_OUT(DLManagedTensorVersioned)
DLB_TENSOR_OUT(DLManagedTensor)
/* Channels between processes are opaque addresses too, made the same way. */
DLB_ADDRESS(dlb_channel*)
DLB_ADDRESS(const dlb_channel*)
DLB_TENSOR_OUT(dlb_channel)
/* A channel's options (remote channels' key, receive device, limits) likewise. */
DLB_ADDRESS(dlb_channel_options*)
DLB_ADDRESS(const dlb_channel_options*)
DLB_TENSOR_OUT(dlb_channel_options)

/* ---- DLDevice and DLDataType by value ------------------------------------------------------ */
/* The packing is dlbx_pack.h's (generators/swig/native), shared with every native file. */
%apply long long { DLDevice };
%typemap(in) DLDevice %{ $1 = dlbx_unpack_device((int64_t)$input); %}
%typemap(out) DLDevice %{ $result = dlbx_pack_device($1); %}
%apply int { DLDataType };
%typemap(in) DLDataType %{ $1 = dlbx_unpack_dtype((int32_t)$input); %}
%typemap(out) DLDataType %{ $result = dlbx_pack_dtype($1); %}

/* ---- arrays in ------------------------------------------------------------------------------ */
/* Refuses an array argument that is null or longer than `max` (DLB_ERR_INVALID_ARGUMENT), given
 * its length (DLB_ARRAY_LENGTH, read once: in JNI it is a call); `null_value` is the wrapper's
 * $null. */
%{
#define DLB_CHECK_LENGTH(length, max, what, null_value)                                \
  do {                                                                                 \
    if ((length) < 0 || (length) > (max)) {                                            \
      DLB_THROW_STATUS(DLB_ERR_INVALID_ARGUMENT,                                       \
                       (length) < 0 ? what " is null" : what " has too many values");  \
      return null_value;                                                               \
    }                                                                                  \
  } while (0)
%}

/* A shape longer than DLPack allows is refused before it is copied into the buffer, with the
 * core's own check and message ("ndim 65 exceeds the maximum of 64", as every binding that calls
 * the core directly reports it): dlb_shape_element_count checks ndim before it reads the shape. */
%{
#define DLB_CHECK_SHAPE_LENGTH(length, null_value)                                          \
  do {                                                                                      \
    if ((length) > DLB_MAX_NDIM) {                                                          \
      dlb_error error_;                                                                     \
      int64_t count_;                                                                       \
      dlb_status status_ = dlb_shape_element_count(                                         \
          (length) > INT32_MAX ? INT32_MAX : (int32_t)(length), NULL, &count_, &error_);    \
      DLB_THROW_STATUS(status_, error_.message);                                            \
      return null_value;                                                                    \
    }                                                                                       \
  } while (0)
%}

/* The shape's length also becomes dlbx_shape_ndim_, a name the strides typemap below can use
 * (SWIG renames a typemap's own locals). */
DLB_ARRAY_TYPES((int32_t ndim, const int64_t* shape), I64)
%typemap(in) (int32_t ndim, const int64_t* shape)
    (int64_t shape_tmp[DLB_MAX_NDIM], int64_t shape_length) %{
  shape_length = DLB_ARRAY_LENGTH($input);
  DLB_CHECK_SHAPE_LENGTH(shape_length, $null);
  DLB_CHECK_LENGTH(shape_length, DLB_MAX_NDIM, "shape", $null);
  $1 = (int32_t)shape_length;
  if ($1 > 0) DLB_ARRAY_GET_I64($input, $1, shape_tmp);
  $2 = shape_tmp;
  const int32_t dlbx_shape_ndim_ = $1;
  (void)dlbx_shape_ndim_;
%}

/* Strides travel with the shape they describe: null (compact row-major) or one per extent. They
 * come after their shape in every function that takes them, wherever that pair sits among the
 * arguments, so the shape's typemap has set dlbx_shape_ndim_ by then; strides without a shape
 * before them do not compile. The message is dlbridge.h's, a constant of every generated module
 * too. */
DLB_ARRAY_TYPES(const int64_t* strides, I64)
%typemap(in) const int64_t* strides (int64_t strides_tmp[DLB_MAX_NDIM], int64_t strides_length) %{
  $1 = NULL;
  strides_length = DLB_ARRAY_LENGTH($input);
  if (strides_length >= 0) {
    if (strides_length != (int64_t)dlbx_shape_ndim_) {
      DLB_THROW_STATUS(DLB_ERR_INVALID_ARGUMENT, DLB_STRIDES_LENGTH_MESSAGE);
      return $null;
    }
    if (dlbx_shape_ndim_ > 0) DLB_ARRAY_GET_I64($input, dlbx_shape_ndim_, strides_tmp);
    $1 = strides_tmp;
  }
%}

/* (start, stop, step) triples; DLB_SLICE_NONE marks an omitted bound. */
DLB_ARRAY_TYPES((int32_t nslices, const dlb_slice* slices), I64)
%typemap(in) (int32_t nslices, const dlb_slice* slices)
    (int64_t triples_tmp[3 * DLB_MAX_NDIM], dlb_slice slices_tmp[DLB_MAX_NDIM],
     int64_t triples_length) %{
  triples_length = DLB_ARRAY_LENGTH($input);
  DLB_CHECK_LENGTH(triples_length, 3 * DLB_MAX_NDIM, "slices", $null);
  if (triples_length % 3 != 0) {
    DLB_THROW_STATUS(DLB_ERR_INVALID_ARGUMENT, "slices must be (start, stop, step) triples");
    return $null;
  }
  $1 = (int32_t)(triples_length / 3);
  if ($1 > 0) DLB_ARRAY_GET_I64($input, 3 * $1, triples_tmp);
  {
    int32_t i_;
    for (i_ = 0; i_ < $1; ++i_) {
      slices_tmp[i_].start = triples_tmp[3 * i_];
      slices_tmp[i_].stop = triples_tmp[3 * i_ + 1];
      slices_tmp[i_].step = triples_tmp[3 * i_ + 2];
    }
  }
  $2 = slices_tmp;
%}

/* One index per dimension (dlb_tensor_element_data). An index longer than any tensor's rank is
 * not copied: its count alone reaches the core, which refuses it by the count before it reads an
 * index, with its message ("65 indices given for a tensor with 2 dimensions"). */
DLB_ARRAY_TYPES((int32_t nindex, const int64_t* index), I64)
%typemap(in) (int32_t nindex, const int64_t* index)
    (int64_t index_tmp[DLB_MAX_NDIM], int64_t index_length) %{
  index_length = DLB_ARRAY_LENGTH($input);
  DLB_CHECK_LENGTH(index_length, INT32_MAX, "index", $null);
  $1 = (int32_t)index_length;
  if ($1 > 0 && $1 <= DLB_MAX_NDIM) DLB_ARRAY_GET_I64($input, $1, index_tmp);
  $2 = index_tmp;
%}

DLB_ARRAY_TYPES((int32_t naxes, const int32_t* axes), I32)
%typemap(in) (int32_t naxes, const int32_t* axes) (int32_t axes_tmp[DLB_MAX_NDIM], int64_t axes_length) %{
  axes_length = DLB_ARRAY_LENGTH($input);
  DLB_CHECK_LENGTH(axes_length, DLB_MAX_NDIM, "axes", $null);
  $1 = (int32_t)axes_length;
  if ($1 > 0) DLB_ARRAY_GET_I32($input, $1, axes_tmp);
  $2 = axes_tmp;
%}

/* A channel's key (dlb_channel_options_set_key) as a byte array. A key that fits the longest
 * the core takes is copied into the wrapper's buffer, which is wiped when the call returns
 * (dlbx_wipe_key_ below), so that no copy of the secret outlives the call; a longer one is not
 * copied, and its length alone reaches the core, which refuses it by the length before it reads
 * a byte ("a key of 2000 bytes: ..."). A null array reaches the core as NULL ("key is NULL").
 * The buffer has a fixed name (SWIG renames a typemap's own locals) for the wipe to find. */
DLB_ARRAY_TYPES((const void* key, size_t size), I8)
%typemap(in) (const void* key, size_t size) (int64_t key_length) %{
  unsigned char dlbx_key_[DLB_REMOTE_MAX_KEY_BYTES];
  key_length = DLB_ARRAY_LENGTH($input);
  $1 = NULL;
  $2 = 0;
  if (key_length >= 0) {
    if (key_length > 0 && key_length <= DLB_REMOTE_MAX_KEY_BYTES) {
      DLB_ARRAY_GET_I8($input, key_length, (int8_t*)dlbx_key_);
    }
    $1 = dlbx_key_;
    $2 = (size_t)key_length;
  }
%}
/* The wipe follows the call whatever it returned: a failed status returns from the wrapper
 * before any freearg code would run. */
%{
static void dlbx_wipe_key_(unsigned char* bytes, size_t size) {
  volatile unsigned char* p = bytes;
  size_t i;
  for (i = 0; i < size; ++i) p[i] = 0;
}
%}
%exception dlb_channel_options_set_key %{
  $action
  dlbx_wipe_key_(dlbx_key_, sizeof dlbx_key_);
%}

/* ---- arrays out ----------------------------------------------------------------------------- */
/* (capacity, out): the caller's array; the core checks that it has room. No tensor has more than
 * DLB_MAX_NDIM values to write, so a longer array offers that many; what the core does not
 * write comes back as zeros. */
DLB_ARRAY_TYPES((int32_t capacity, int64_t* out), I64)
%typemap(in) (int32_t capacity, int64_t* out) (int64_t values_tmp[DLB_MAX_NDIM], int64_t out_length) %{
  out_length = DLB_ARRAY_LENGTH($input);
  DLB_CHECK_LENGTH(out_length, INT64_MAX, "the output array", $null);
  $1 = (int32_t)(out_length > DLB_MAX_NDIM ? DLB_MAX_NDIM : out_length);
  memset(values_tmp, 0, (size_t)$1 * sizeof values_tmp[0]);
  $2 = values_tmp;
%}
%typemap(argout) (int32_t capacity, int64_t* out) %{
  if ($1 > 0) DLB_ARRAY_SET_I64($input, $1, $2);
%}

/* Text: written into a byte array (NUL-terminated; the core refuses one that is too small). */
DLB_ARRAY_TYPES((char* buffer, uint64_t buffer_size), I8)
%typemap(in) (char* buffer, uint64_t buffer_size)
    (char text_tmp[DLB_ERROR_MESSAGE_SIZE], int64_t text_length) %{
  text_length = DLB_ARRAY_LENGTH($input);
  DLB_CHECK_LENGTH(text_length, INT64_MAX, "the text buffer", $null);
  /* No text the core writes is longer than a message: a larger array offers that much. */
  $2 = (uint64_t)(text_length > DLB_ERROR_MESSAGE_SIZE ? DLB_ERROR_MESSAGE_SIZE : text_length);
  $1 = text_tmp;
%}
%typemap(argout) (char* buffer, uint64_t buffer_size) %{
  if ($2 > 0) DLB_ARRAY_SET_I8($input, (int64_t)strlen($1) + 1, (const int8_t*)$1);
%}

/* One scalar output: an array of at least one element, written on success. */
%define DLB_SCALAR_OUT(PARAM, CTYPE, KIND, TO_KIND)
DLB_ARRAY_TYPES(PARAM, KIND)
%typemap(in) PARAM (CTYPE value_tmp) %{
  if (DLB_ARRAY_LENGTH($input) < 1) {
    DLB_THROW_STATUS(DLB_ERR_INVALID_ARGUMENT, "an output array needs room for one value");
    return $null;
  }
  memset(&value_tmp, 0, sizeof value_tmp);
  $1 = &value_tmp;
%}
%typemap(argout) PARAM %{
  {
    CTYPE value_ = *$1;
    TO_KIND;
  }
%}
%enddef
%define DLB_OUT_I32(PARAM) DLB_SCALAR_OUT(PARAM, int32_t, I32,
    DLB_ARRAY_SET_I32($input, 1, &value_)) %enddef
%define DLB_OUT_I64(PARAM) DLB_SCALAR_OUT(PARAM, int64_t, I64,
    DLB_ARRAY_SET_I64($input, 1, &value_)) %enddef
%define DLB_OUT_U64(PARAM) DLB_SCALAR_OUT(PARAM, uint64_t, I64,
    int64_t bits_ = (int64_t)value_; DLB_ARRAY_SET_I64($input, 1, &bits_)) %enddef
%define DLB_OUT_ADDRESS(PARAM) DLB_SCALAR_OUT(PARAM, void*, I64,
    int64_t bits_ = (int64_t)(intptr_t)value_; DLB_ARRAY_SET_I64($input, 1, &bits_)) %enddef
DLB_OUT_I32(int32_t* count)
DLB_OUT_I64(int64_t* out)
DLB_OUT_I64(int64_t* out_begin)
DLB_OUT_I64(int64_t* out_size)
DLB_OUT_I64(int64_t* out_count)
DLB_OUT_U64(uint64_t* out)
DLB_OUT_U64(uint64_t* out_bytes)
DLB_OUT_U64(uint64_t* out_size)
DLB_OUT_I32(int32_t* pid)
DLB_SCALAR_OUT(uint32_t* uid, uint32_t, I32,
    int32_t bits_ = (int32_t)value_; DLB_ARRAY_SET_I32($input, 1, &bits_))
DLB_OUT_ADDRESS(void** out_data)
DLB_OUT_ADDRESS(void** platform)
DLB_OUT_ADDRESS(void** device)
DLB_OUT_ADDRESS(void** context)
DLB_OUT_ADDRESS(void** queue)
DLB_SCALAR_OUT(DLDevice* out, DLDevice, I64,
    int64_t packed_ = dlbx_pack_device(value_); DLB_ARRAY_SET_I64($input, 1, &packed_))
DLB_SCALAR_OUT(DLDataType* out, DLDataType, I32,
    int32_t packed_ = dlbx_pack_dtype(value_); DLB_ARRAY_SET_I32($input, 1, &packed_))

/* ---- what does not cross ------------------------------------------------------------------- */
/* No struct becomes a class: tensors are addresses, devices and dtypes integers. */
%rename("$ignore", %$isclass) "";
/* Callbacks into the target language: a backend's function table and the DLPack exchange
 * allocator's SetError. dlb_tensor_wrap and dlb_tensor_wrap_buffer take a release function:
 * languages reach them through dlbx_tensor_wrap below, with a release token instead. */
%ignore dlb_backend_register;
%ignore dlb_backend_unregister;
%ignore dlb_exchange_allocator;
%ignore dlb_tensor_wrap;
%ignore dlb_tensor_wrap_buffer;
/* Struct outputs: dlb_version_string gives the library version; a channel's pool statistics
 * come through dlbx_channel_pool_stats (below) as an array. */
%ignore dlb_get_version;
%ignore dlb_channel_pool_stats;
/* An output array sized by ndim, not by a capacity; the core applies it inside allocate. */
%ignore dlb_compact_strides;

/* Functions that hand the caller a new tensor to free exactly once (dlb_tensor_free). */
%newobject dlb_tensor_allocate;
%newobject dlb_tensor_import;
%newobject dlb_tensor_import_legacy;
%newobject dlb_tensor_export_legacy;
%newobject dlb_tensor_share;
%newobject dlb_tensor_slice;
%newobject dlb_tensor_select;
%newobject dlb_tensor_reshape;
%newobject dlb_tensor_permute;
%newobject dlb_tensor_transpose;
%newobject dlb_tensor_copy;
%newobject dlb_tensor_copy_async;
%newobject dlb_tensor_allocate_shareable;
%newobject dlb_channel_listen;
%newobject dlb_channel_accept;
%newobject dlb_channel_connect;
%newobject dlb_channel_connect_with;
%newobject dlb_channel_listen_with_options;
%newobject dlb_channel_connect_with_options;
%newobject dlb_channel_options_create;
%newobject dlb_channel_receive;
%newobject dlb_channel_allocate;

/* ---- the headers ---------------------------------------------------------------------------- */
#define DLB_API
/* Constants SWIG cannot evaluate (INT64_MIN), declared before their #define is seen: their
 * values still come from the C header, at build time. */
%constant int64_t DLB_SLICE_NONE = DLB_SLICE_NONE;
%constant int64_t DLB_CUDA_STREAM_NONE = DLB_CUDA_STREAM_NONE;
%include "dlpack/dlpack.h"
%include "dlbridge/dlbridge.h"

/* ---- wrapping a language's memory ----------------------------------------------------------- */
/* dlb_tensor_wrap_buffer takes a C function and its context, which no target language can pass.
 * A language passes a release token instead (see generators/swig/native/dlbx_release.h): a
 * non-zero 64-bit value naming what it must let go of when the memory is released, or 0 for
 * memory nothing needs to release. The release function is the language's DLBX_RELEASE_FN
 * (its typemaps file: the shared engine dlbx_release, or the language's own). */
%inline %{
/* dlb_tensor_wrap_buffer over the fields of a DLTensor: `data` (an address or a device handle)
 * of which `buffer_size` bytes may be reached, shape and strides (null: compact row-major) as
 * arrays, device and dtype packed. A `buffer_size` of DLBX_SIZE_UNKNOWN (all bits set) is memory
 * whose extent the caller vouches for (native memory from another library): dlb_tensor_wrap,
 * without the buffer check. Ownership: on success the new tensor owns the memory and
 * `release_token` comes back exactly once through the release engine when its last reference
 * is freed; on error nothing changed hands and the token is the caller's. */
#define DLBX_SIZE_UNKNOWN UINT64_MAX
static dlb_status dlbx_tensor_wrap(void* data, uint64_t buffer_size, int32_t ndim,
                                   const int64_t* shape, const int64_t* strides, DLDevice device,
                                   DLDataType dtype, uint64_t byte_offset, uint64_t flags,
                                   int64_t release_token, DLManagedTensorVersioned** out,
                                   dlb_error* error) {
  DLTensor t;
  t.data = data;
  t.device = device;
  t.ndim = ndim;
  t.dtype = dtype;
  t.shape = (int64_t*)(intptr_t)shape;
  t.strides = (int64_t*)(intptr_t)strides;
  t.byte_offset = byte_offset;
  dlb_release_fn release = release_token != 0 ? DLBX_RELEASE_FN : NULL;
  void* release_ctx = (void*)(intptr_t)release_token;
  if (buffer_size == DLBX_SIZE_UNKNOWN) {
    return dlb_tensor_wrap(&t, flags, release, release_ctx, out, error);
  }
  return dlb_tensor_wrap_buffer(&t, buffer_size, flags, release, release_ctx, out, error);
}
%}
%newobject dlbx_tensor_wrap;

/* ---- compact tensors of up to four dimensions, the extents by value -------------------------- */
/* dlb_tensor_allocate and dlbx_tensor_wrap for the commonest tensors, compact row-major ones of
 * at most DLBX_EXTENTS_BY_VALUE dimensions, with the extents as scalar arguments. An array
 * argument is what costs a managed call most: JNI measures and copies a long[] (four JNIEnv
 * calls, about 20 ns of a 75 ns wrap + close), and a Go slice escapes to the heap and is checked
 * by cgo (about 80 ns of an allocate or wrap + close); docs/java.md and docs/go.md have the
 * numbers. A binding calls these behind its one Allocate and Wrap for those tensors and the
 * general calls for every other. They check nothing themselves: the first `ndim` extents are the
 * shape, and an `ndim` outside 0..DLBX_EXTENTS_BY_VALUE reaches the core without a shape, which
 * refuses it with its own message ("shape is NULL but ndim is 5", "ndim 65 exceeds the maximum of
 * 64"). Ownership as the general calls. */
%inline %{
#define DLBX_EXTENTS_BY_VALUE 4
static dlb_status dlbx_tensor_allocate_compact(DLDevice device, DLDataType dtype, int32_t ndim,
                                               int64_t e0, int64_t e1, int64_t e2, int64_t e3,
                                               uint64_t flags, DLManagedTensorVersioned** out,
                                               dlb_error* error) {
  const int64_t shape[DLBX_EXTENTS_BY_VALUE] = {e0, e1, e2, e3};
  return dlb_tensor_allocate(device, dtype, ndim,
                             ndim >= 0 && ndim <= DLBX_EXTENTS_BY_VALUE ? shape : NULL, NULL,
                             flags, out, error);
}
static dlb_status dlbx_tensor_wrap_compact(void* data, uint64_t buffer_size, int32_t ndim,
                                           int64_t e0, int64_t e1, int64_t e2, int64_t e3,
                                           DLDevice device, DLDataType dtype,
                                           uint64_t byte_offset, uint64_t flags,
                                           int64_t release_token, DLManagedTensorVersioned** out,
                                           dlb_error* error) {
  const int64_t shape[DLBX_EXTENTS_BY_VALUE] = {e0, e1, e2, e3};
  return dlbx_tensor_wrap(data, buffer_size, ndim,
                          ndim >= 0 && ndim <= DLBX_EXTENTS_BY_VALUE ? shape : NULL, NULL, device,
                          dtype, byte_offset, flags, release_token, out, error);
}
%}
%newobject dlbx_tensor_allocate_compact;
%newobject dlbx_tensor_wrap_compact;

/* ---- a channel's pool statistics ------------------------------------------------------------ */
/* dlb_channel_pool_stats fills a struct, which no target language receives: the fields come as
 * one int64 array instead, at the indices DLBX_POOL_STATS_* name (the unsigned counts as their
 * bits: none comes near 2^63). A binding reads them by these constants, so no language knows the
 * order or the count by itself. Ownership: nothing is created; errors are the core's, and an
 * array shorter than DLBX_POOL_STATS_FIELDS (DLB_ERR_INVALID_ARGUMENT) before the core is asked. */
%inline %{
#define DLBX_POOL_STATS_SEGMENTS 0
#define DLBX_POOL_STATS_BYTES 1
#define DLBX_POOL_STATS_LIMIT 2
#define DLBX_POOL_STATS_LIVE 3
#define DLBX_POOL_STATS_LENT 4
#define DLBX_POOL_STATS_RETURNED 5
#define DLBX_POOL_STATS_LOST 6
#define DLBX_POOL_STATS_HUGE_PAGES 7
#define DLBX_POOL_STATS_FIELDS 8
static dlb_status dlbx_channel_pool_stats(dlb_channel* channel, int32_t capacity, int64_t* out,
                                          dlb_error* error) {
#define DLBX_TEXT_OF_(value) #value
#define DLBX_TEXT_OF(value) DLBX_TEXT_OF_(value)
  static const char too_short[] =
      "the pool statistics need an array of " DLBX_TEXT_OF(DLBX_POOL_STATS_FIELDS) " values";
  dlb_pool_stats stats;
  dlb_status status;
  if (capacity < DLBX_POOL_STATS_FIELDS) {
    memcpy(error->message, too_short, sizeof too_short);
    return DLB_ERR_INVALID_ARGUMENT;
  }
  status = dlb_channel_pool_stats(channel, &stats, error);
  if (status != DLB_OK) return status;
  out[DLBX_POOL_STATS_SEGMENTS] = (int64_t)stats.segments;
  out[DLBX_POOL_STATS_BYTES] = (int64_t)stats.bytes;
  out[DLBX_POOL_STATS_LIMIT] = (int64_t)stats.limit;
  out[DLBX_POOL_STATS_LIVE] = (int64_t)stats.live;
  out[DLBX_POOL_STATS_LENT] = (int64_t)stats.lent;
  out[DLBX_POOL_STATS_RETURNED] = (int64_t)stats.returned;
  out[DLBX_POOL_STATS_LOST] = (int64_t)stats.lost;
  out[DLBX_POOL_STATS_HUGE_PAGES] = stats.huge_pages;
  return DLB_OK;
}
%}

/* The managed side of the release engine (dlbx_release.h). */
DLB_ADDRESS(const int64_t*)
int64_t dlbx_tensor_free(DLManagedTensorVersioned* tensor);
int32_t dlbx_release_drain(int32_t capacity, int64_t* out);
const int64_t* dlbx_release_queued(void);

/* ---- shims: what C cannot call directly ----------------------------------------------------- */
%inline %{
/* Fields of the managed struct: C reads them in place, a target language holds only the
 * address. The core has accessors for the flags (dlb_tensor_flags) and the shape and strides
 * (dlb_tensor_get_shape/get_strides), not for these three plain fields. */
static int32_t dlbx_tensor_ndim(const DLManagedTensorVersioned* tensor) {
  return tensor->dl_tensor.ndim;
}
static DLDataType dlbx_tensor_dtype(const DLManagedTensorVersioned* tensor) {
  return tensor->dl_tensor.dtype;
}
static DLDevice dlbx_tensor_device(const DLManagedTensorVersioned* tensor) {
  return tensor->dl_tensor.device;
}
%}
