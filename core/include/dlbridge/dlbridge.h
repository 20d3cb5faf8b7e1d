/*
 * dlbridge.h - the dlbridge C API: create, wrap, import, export, validate, view, copy and free
 * DLPack tensors.
 *
 * Conventions used by every function below:
 *  - Fallible functions return a dlb_status: DLB_OK (0) or one of the DLB_ERR_* codes. They
 *    take an optional `dlb_error*` as their last argument; on error its message is filled in
 *    (when non-NULL), on success it is left untouched. There is no hidden "last error" state:
 *    deleters run on foreign threads and Go moves goroutines between threads between two calls.
 *    Predicates (`dlb_*_is_*`, `dlb_dtype_bits_allowed`) return int 1 or 0 and never fail.
 *  - Outputs, the one rule: on success every output is written. On error every output the
 *    caller passed (non-NULL) is cleared: a tensor pointer to NULL, a number to 0, a DLDevice or
 *    DLDataType to all zeros, a text buffer to "" (when it has room for a byte); an array the
 *    caller passed holds nothing meaningful. No output keeps a stale value after a failure.
 *  - Sizes and byte counts are uint64_t (never size_t), element counts and offsets int64_t.
 *  - Every tensor returned by this library is a DLManagedTensorVersioned that the caller owns:
 *    release it with dlb_tensor_free() (or call its deleter) exactly once, from any thread.
 *  - Tensors handed to dlb_tensor_import* are consumed whether the call succeeds or fails: a
 *    rejected tensor's deleter has already been called when the function returns.
 *  - Functions that take a managed tensor say which of the two managed structs they take; the
 *    two have different layouts and must never be cast into each other.
 *  - Nothing here throws or longjmps; every function may be called from any thread.
 */
#ifndef DLBRIDGE_DLBRIDGE_H_
#define DLBRIDGE_DLBRIDGE_H_

#include <stddef.h>
#include <stdint.h>

#include "dlbridge/dlbridge_config.h"
#include "dlpack/dlpack.h"

/* DLB_API marks every function the library exports: nothing when linking the static library
 * (define DLB_STATIC), dllexport/dllimport on Windows, default visibility with GCC and Clang
 * (the library is built with hidden visibility, so only these functions are exported). */
#if defined(DLB_STATIC)
#define DLB_API
#elif defined(_WIN32)
#if defined(DLB_BUILDING_LIBRARY)
#define DLB_API __declspec(dllexport)
#else
#define DLB_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define DLB_API __attribute__((visibility("default")))
#else
#define DLB_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================================== */
/* Versions                                                                                   */
/* ========================================================================================== */

/* The version of the dlbridge library itself (semantic versioning). */
typedef struct dlb_library_version {
  /* major.minor.patch: DLB_VERSION_MAJOR, DLB_VERSION_MINOR and DLB_VERSION_PATCH of the build. */
  uint32_t major;
  uint32_t minor;
  uint32_t patch;
} dlb_library_version;

/* Reports the three versions this build keeps apart; each pointer may be NULL.
 *  - library: the dlbridge version (DLB_VERSION_MAJOR/MINOR/PATCH at build time);
 *  - produced: the DLPack version stamped on every tensor this library creates (1.3);
 *  - newest_accepted: the newest DLPack version whose every code and flag this library knows.
 *    Imports accept any 1.x; a newer minor is accepted only when every device type, dtype code
 *    and flag bit in the tensor is one this library understands.
 * This function's signature will never change, so a binding can always call it to find out
 * which library it loaded. Ownership: nothing is allocated. */
DLB_API void dlb_get_version(dlb_library_version* library, DLPackVersion* produced,
                             DLPackVersion* newest_accepted);

/* The library version as a static string such as "0.2.0". Never NULL; do not free. */
DLB_API const char* dlb_version_string(void);

/* ========================================================================================== */
/* Limits                                                                                     */
/* ========================================================================================== */

/* The most dimensions a tensor may have; imports of tensors with more are refused. */
#define DLB_MAX_NDIM 64
/* The largest device type a backend can be registered for. */
#define DLB_MAX_DEVICE_TYPE 255

/* ========================================================================================== */
/* Errors                                                                                     */
/* ========================================================================================== */

/* The result of every fallible function. A plain integer, not an enum: a binding must be able
 * to carry a status this header does not define yet. */
typedef int32_t dlb_status;

/* Success: every output was written. */
#define DLB_OK 0
/* A parameter or a tensor field is malformed (NULL where not allowed, negative extent, ...). */
#define DLB_ERR_INVALID_ARGUMENT 1
/* A host or device allocation failed. */
#define DLB_ERR_OUT_OF_MEMORY 2
/* A versioned tensor's major version is not 1. */
#define DLB_ERR_UNSUPPORTED_VERSION 3
/* Well-formed but not handled here: an unknown code or flag bit, a device type without a
 * backend, an operation a backend cannot do. */
#define DLB_ERR_UNSUPPORTED 4
/* A write into a tensor flagged READ_ONLY, or an export that would drop that flag. */
#define DLB_ERR_READ_ONLY 5
/* The memory layout does not allow the operation without a copy (e.g. reshape of a
 * non-contiguous tensor). */
#define DLB_ERR_LAYOUT 6
/* An element count or byte size does not fit in 64 bits. */
#define DLB_ERR_OVERFLOW 7
/* A device runtime or a plug-in backend reported a failure (and, for a channel, an operating
 * system failure that none of the channel's statuses below describes). */
#define DLB_ERR_DEVICE 8
/* The device's runtime or hardware is not available in this process (no driver, no device). */
#define DLB_ERR_DEVICE_UNAVAILABLE 9

/* A binding's object (a tensor, a channel) was used after it was closed, released or moved
 * into an export. The core itself never returns it: it cannot see a binding's objects. Bindings
 * report it with DLB_CLOSED_MESSAGE, so that every language says the same. */
#define DLB_ERR_CLOSED 10

/* The statuses of a channel (see "Sharing tensors across processes"), one per cause a program
 * can act on. */
/* Nothing listens at the address: no socket file there, or one nobody accepts on. */
#define DLB_ERR_NO_LISTENER 11
/* Not permitted: the socket's file or folder modes, a folder of another user, a peer (or a
 * listener) running as a user this end does not accept. */
#define DLB_ERR_PERMISSION 12
/* The peer closed the connection or vanished (exited, was killed), also in the middle of a
 * tensor's frames. */
#define DLB_ERR_PEER_CLOSED 13
/* The peer sent something that is not a tensor this library accepts: a malformed, truncated or
 * forged descriptor, the wrong file descriptors with it, a segment that does not match it; or the
 * channel lost its place in the stream after a timeout in the middle of a tensor. */
#define DLB_ERR_PROTOCOL 14
/* The channel's time limit (dlb_channel_set_timeout, dlb_channel_connect_with) ran out. */
#define DLB_ERR_TIMEOUT 15
/* A limit of this process or of the system was reached: open file descriptors, memory mappings,
 * file descriptors in flight on sockets. The message names the limit. */
#define DLB_ERR_LIMIT 16

/* Size of the message buffer in dlb_error, including the terminating NUL. */
#define DLB_ERROR_MESSAGE_SIZE 512

/* A caller-owned error report. Declare one on the stack, pass its address, and read `message`
 * when a call returns a status other than DLB_OK. The message is always NUL-terminated and
 * names the offending value ("ndim -1 is negative"). */
typedef struct dlb_error {
  /* The failing call's message, NUL-terminated; untouched by a call that succeeds. */
  char message[DLB_ERROR_MESSAGE_SIZE];
} dlb_error;

/* The message of the one check a binding makes itself before calling the core (with
 * DLB_ERR_INVALID_ARGUMENT): C reads a strides array through a pointer, for ndim values, so a
 * language's array of strides whose length differs from the shape's must be refused before it
 * gets there. Defined here so that every binding reports it in the same words. */
#define DLB_STRIDES_LENGTH_MESSAGE "strides must have one value per extent"

/* The message of DLB_ERR_CLOSED, in every binding: for a tensor, and for a channel (see
 * "Sharing tensors across processes"). */
#define DLB_CLOSED_MESSAGE "the tensor is closed"
#define DLB_CHANNEL_CLOSED_MESSAGE "the channel is closed"

/* The name of a status code ("DLB_ERR_READ_ONLY"), or "DLB_ERR_UNKNOWN" for a value that is not
 * one. The string is static; do not free. */
DLB_API const char* dlb_status_name(dlb_status status);

/* ========================================================================================== */
/* Data types                                                                                 */
/* ========================================================================================== */

/* Room for any name dlb_dtype_format() writes, including the NUL. */
#define DLB_DTYPE_NAME_SIZE 40

/* Parses a dtype name: int8..int64, uint8..uint64, float16/32/64, bfloat16, bool, complex32/64/128,
 * bcomplex32, handle64 (opaque handle), every float8/float6/float4 name (float8_e4m3fn, ...,
 * float4_e2m1fn), sub-byte integers (int4, uint1, ...), each optionally followed by "x<lanes>"
 * for a vector type (float32x4). On error `*out` is zeroed and the message names the problem:
 * it quotes a name it does not know, and names the code and width of one with an illegal width
 * ("dtype float with 7 bits is not a valid DLPack type").
 * Ownership: `name` is borrowed for the call. */
DLB_API dlb_status dlb_dtype_parse(const char* name, DLDataType* out, dlb_error* error);

/* Writes the name of a valid dtype (the inverse of dlb_dtype_parse) into `buffer`, which has
 * room for `buffer_size` bytes including the NUL (DLB_DTYPE_NAME_SIZE is always enough).
 * Errors: an invalid dtype (as dlb_dtype_validate), a NULL or too-small buffer. */
DLB_API dlb_status dlb_dtype_format(DLDataType dtype, char* buffer, uint64_t buffer_size,
                                    dlb_error* error);

/* The base name of a dtype code ("float", "float8_e4m3fn"), or NULL for a code this library does
 * not know. Static string. */
DLB_API const char* dlb_dtype_code_name(int32_t code);

/* 1 if `bits` is a legal lane width for `code`, 0 otherwise (also 0 for unknown codes). */
DLB_API int dlb_dtype_bits_allowed(int32_t code, int32_t bits);

/* Checks a dtype: known code, legal bits for that code, lanes >= 1. */
DLB_API dlb_status dlb_dtype_validate(DLDataType dtype, dlb_error* error);

/* Bits of one element: bits * lanes. */
DLB_API uint32_t dlb_dtype_element_bits(DLDataType dtype);

/* 1 when a lane is narrower than a byte (bits < 8): such data is packed unless the tensor carries
 * DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED. */
DLB_API int dlb_dtype_is_subbyte(DLDataType dtype);

/* Bytes that one element occupies when stored on its own: ceil(bits * lanes / 8). This is the
 * element size of padded sub-byte data and of every whole-byte type. */
DLB_API uint64_t dlb_dtype_element_size(DLDataType dtype);

/* Bytes needed to store `element_count` elements compactly. Packed sub-byte data takes
 * ceil(count * bits * lanes / 8) bytes (rounding the total, not each element); with
 * DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED in `flags`, or for whole-byte types, it takes
 * count * element_size. Errors: invalid dtype, negative count, overflow (DLB_ERR_OVERFLOW). */
DLB_API dlb_status dlb_dtype_storage_size(DLDataType dtype, int64_t element_count, uint64_t flags,
                                          uint64_t* out_bytes, dlb_error* error);

/* ========================================================================================== */
/* Devices                                                                                    */
/* ========================================================================================== */

/* Room for any text dlb_device_format() writes, including the NUL. */
#define DLB_DEVICE_NAME_SIZE 48

/* The name of a device type ("cpu", "cuda", "cuda_host", "opencl", "cuda_managed", "ext_dev",
 * ...), or NULL for a value DLPack does not define. Static string. */
DLB_API const char* dlb_device_type_name(int32_t device_type);

/* 1 if imports accept this device type: one DLPack defines, or one a backend is registered for. */
DLB_API int dlb_device_type_is_known(int32_t device_type);

/* 1 if the host CPU can read the device's memory directly: CPU, CUDA pinned, CUDA managed and
 * ROCm pinned memory. */
DLB_API int dlb_device_is_host_readable(DLDevice device);

/* Writes "cpu", "cuda:1", or "device_type_25:0" for a type without a name. */
DLB_API dlb_status dlb_device_format(DLDevice device, char* buffer, uint64_t buffer_size,
                                     dlb_error* error);

/* Parses "cpu", "cuda", "cuda:1", "opencl:0" (the id defaults to 0), and "device_type_N:ID" for
 * any device type number N, the form dlb_device_format writes for types without a name. */
DLB_API dlb_status dlb_device_parse(const char* text, DLDevice* out, dlb_error* error);

/* ========================================================================================== */
/* Device backends                                                                            */
/* ========================================================================================== */
/* A backend gives dlbridge the memory operations of one device type. The CPU backend is built
 * in and cannot be replaced; device backends (CUDA, OpenCL) register themselves when built; a
 * program can register its own backend for any other device type (ROCm, Metal, Vulkan, an
 * accelerator of its own under kDLExtDev, or a device type newer than this header) at run time.
 *
 * Offsets: dlbridge never does pointer arithmetic on the `data` of a device whose memory is an
 * opaque handle; it passes the handle plus a byte offset. Backends must do the same. */

/* The operations of one device type. Fill it, set struct_size to sizeof(dlb_backend), and pass
 * it to dlb_backend_register(); the library copies it. Callbacks may run on any thread and
 * concurrently; they must not throw or unwind. Unless said otherwise they return DLB_OK or a
 * DLB_ERR_* status with a message in `error` (never NULL; a report of the library's own, whose
 * message the library passes on to its caller). A callback that fails without writing a
 * message gets one from the library: "backend 'NAME' failed in OPERATION with STATUS and gave
 * no message" (OPERATION is the callback's member name, STATUS the dlb_status_name). */
typedef struct dlb_backend {
  /* sizeof(dlb_backend) as the caller compiled it: lets later versions append members. */
  uint64_t struct_size;
  /* The device type this backend serves. */
  int32_t device_type;
  /* A short human-readable name used in messages ("opencl"); copied at registration. */
  const char* name;
  /* Passed as the first argument of every callback. */
  void* ctx;
  /* Required. Allocates `nbytes` (possibly 0) on `device`; writes the data pointer or handle. */
  dlb_status (*allocate)(void* ctx, DLDevice device, uint64_t nbytes, void** out_data,
                  dlb_error* error);
  /* Required. Frees what allocate returned. Must not fail. */
  void (*free)(void* ctx, DLDevice device, void* data);
  /* Required. Copies `nbytes` contiguous bytes from src + src_offset to dst + dst_offset. One
   * side is on this backend's device type; the other is on the same type or is host memory
   * (kDLCPU). With a NULL `stream` the copy is complete when the call returns. */
  dlb_status (*copy_bytes)(void* ctx, DLDevice dst_device, void* dst, uint64_t dst_offset,
                    DLDevice src_device, const void* src, uint64_t src_offset, uint64_t nbytes,
                    void* stream, dlb_error* error);
  /* Optional (may be NULL). Copies the elements of `src` into `dst`: same shape and dtype, any
   * strides, each side on this device type or the host, flags telling packed from padded
   * sub-byte data. `dst` and `src` may overlap in memory (copy_into of one buffer into itself):
   * the result must be as if src were copied to a temporary first. Return DLB_ERR_UNSUPPORTED
   * for a case it does not handle: dlbridge then stages the copy through host memory using
   * copy_bytes (and synchronize, when `stream` is not NULL). */
  dlb_status (*copy_tensor)(void* ctx, const DLTensor* dst, uint64_t dst_flags, const DLTensor* src,
                     uint64_t src_flags, void* stream, dlb_error* error);
  /* Optional. Waits until the work queued on `stream` (NULL: all work on `device`) is done. */
  dlb_status (*synchronize)(void* ctx, DLDevice device, void* stream, dlb_error* error);
  /* Optional. Called exactly once, after the backend was unregistered or replaced and the last
   * tensor allocated through it was freed. Releases `ctx`. */
  void (*destroy)(void* ctx);
  /* Optional. Checks that memory entering the library (dlb_tensor_import*, dlb_tensor_wrap) on
   * this device type really is what the tensor claims: e.g. that a CUDA pointer is device
   * memory of the claimed device, that a buffer covers the bytes the strides reach. Called
   * after the tensor's fields were validated; `tensor` is the caller's, read-only, and `flags`
   * are its DLPack flags (IS_SUBBYTE_TYPE_PADDED changes its span). A status other than DLB_OK
   * rejects the import with that status and message (an import still calls the producer's
   * deleter). */
  dlb_status (*check_memory)(void* ctx, const DLTensor* tensor, uint64_t flags, dlb_error* error);
} dlb_backend;

/* Registers (or replaces) the backend for backend->device_type. Tensors already allocated
 * through a replaced backend keep using it until they are freed.
 * Errors: NULL backend, struct_size too small, a missing required callback, device type kDLCPU
 * (built in) or outside 1..DLB_MAX_DEVICE_TYPE.
 * Ownership: the struct is copied; `ctx` belongs to the library on success until `destroy` is
 * called; on error the caller still owns ctx and destroy is not called. */
DLB_API dlb_status dlb_backend_register(const dlb_backend* backend, dlb_error* error);

/* Unregisters the backend of a device type. Its destroy callback runs once the last tensor
 * allocated through it is freed (immediately if there is none).
 * Errors: kDLCPU, or no backend registered for the type. */
DLB_API dlb_status dlb_backend_unregister(int32_t device_type, dlb_error* error);

/* 1 if a backend serves this device type now (always 1 for kDLCPU). */
DLB_API int dlb_backend_is_registered(int32_t device_type);

/* ========================================================================================== */
/* Tensor lifecycle                                                                           */
/* ========================================================================================== */
/* Every tensor made by the functions below is a DLManagedTensorVersioned stamped with DLPack
 * 1.3, owned by the caller, with non-NULL shape and strides that point into the tensor's own
 * memory: ndim values each, or for a 0-d tensor one slot each holding 1 (so that a consumer
 * that reads shape[0] or strides[0] without checking ndim reads one element at offset 0).
 * For devices whose data is an address (CPU, CUDA, pinned, managed, ROCm, oneAPI) the first
 * element is at `data` and byte_offset is 0: a producer's byte_offset (wrap, import) is folded
 * into data, because PyTorch and other importers read data alone. Empty tensors with NULL data
 * keep their byte_offset. For opaque handles (OpenCL cl_mem, ...) byte_offset is kept.
 * It can be handed to any DLPack consumer as is. */

/* Alignment of the data of CPU tensors allocated by dlb_tensor_allocate. */
#define DLB_CPU_ALIGNMENT 256

/* Allocates an uninitialised tensor (like numpy.empty) on `device` through its backend.
 *  - `shape` holds `ndim` non-negative extents (may be NULL when ndim == 0). Zero-size tensors
 *    are allowed and still get a non-NULL data pointer on the CPU.
 *  - `strides` (in elements) may be NULL for compact row-major; otherwise any strides,
 *    negative and zero included: enough memory is allocated to cover them and the first
 *    element is at data (at data + byte_offset for devices whose data is a handle).
 *  - `flags` may contain READ_ONLY and IS_SUBBYTE_TYPE_PADDED; IS_COPIED is not allowed.
 * CPU data (the first element) is DLB_CPU_ALIGNMENT-aligned. CPU tensors of 4 MiB or more get
 * memory 2 MiB-aligned and advised to use transparent huge pages; when such a tensor is freed
 * its memory is kept for the next one of a size it fits (at most 8 buffers and 256 MiB, each
 * for at most a second, given to the kernel with MADV_FREE meanwhile), so that a program
 * making tensors of the same sizes again and again does not fault in fresh pages each time.
 * Ownership: on success the caller owns *out; on error nothing is allocated. */
DLB_API dlb_status dlb_tensor_allocate(DLDevice device, DLDataType dtype, int32_t ndim,
                                       const int64_t* shape, const int64_t* strides, uint64_t flags,
                                       DLManagedTensorVersioned** out, dlb_error* error);

/* Called exactly once, from whichever thread frees the last reference, to release memory that
 * was wrapped with dlb_tensor_wrap. Must not throw or unwind. */
typedef void (*dlb_release_fn)(void* release_ctx);

/* Wraps memory the caller owns, zero-copy. `tensor` describes it (data, device, ndim, dtype,
 * shape, strides (NULL means compact row-major), byte_offset); its shape and strides arrays are
 * copied, so they need only live for the call. `flags` are the DLPack flags to carry.
 * Ownership: on success the new tensor owns the memory: `release(release_ctx)` is called
 * exactly once when the last reference is freed (release may be NULL: nothing to do). On error
 * nothing changes hands: release is NOT called and the caller still owns the memory. */
DLB_API dlb_status dlb_tensor_wrap(const DLTensor* tensor, uint64_t flags, dlb_release_fn release,
                                   void* release_ctx, DLManagedTensorVersioned** out,
                                   dlb_error* error);

/* dlb_tensor_wrap for memory whose extent the caller knows: `buffer_size` bytes starting at
 * tensor->data (a pinned array, a direct buffer, a mapped segment). Before anything is built,
 * every byte the elements touch (from byte_offset, what negative strides reach before it
 * included; packed sub-byte data by its bits) must lie inside [0, buffer_size); otherwise
 * DLB_ERR_INVALID_ARGUMENT: "the tensor's elements reach bytes [B, E) of a buffer of N bytes".
 * This is the check a binding needs before it wraps a language's array: it is made here, once,
 * after the tensor was validated and before the release is attached.
 * Ownership: as dlb_tensor_wrap. On error (the buffer check included) nothing changes hands:
 * release is not called and the caller still owns the memory. */
DLB_API dlb_status dlb_tensor_wrap_buffer(const DLTensor* tensor, uint64_t buffer_size,
                                          uint64_t flags, dlb_release_fn release,
                                          void* release_ctx, DLManagedTensorVersioned** out,
                                          dlb_error* error);

/* Imports a versioned tensor from a foreign producer after validating it.
 *  - If src->version.major is not 1, the deleter is called (when non-NULL) and nothing else is
 *    read: DLB_ERR_UNSUPPORTED_VERSION.
 *  - Otherwise every field is validated (see dlb_tensor_validate) and the flags must contain
 *    only known bits.
 * No data is copied. A tensor made by dlbridge is returned as is (*out == src).
 * Ownership: src is consumed in every case. On success *out owns it (freeing *out runs src's
 * deleter exactly once); on error src's deleter has already been called exactly once. A NULL
 * src is an error with nothing to free. */
DLB_API dlb_status dlb_tensor_import(DLManagedTensorVersioned* src, DLManagedTensorVersioned** out,
                                     dlb_error* error);

/* Imports a legacy DLManagedTensor (DLPack < 1.0) and presents it as a versioned tensor with no
 * flags, without copying data. Validation as dlb_tensor_import.
 * Ownership: src is consumed in every case. On success, freeing *out (or the last reference to
 * it) calls src's own deleter exactly once; on error src's deleter has already been called. */
DLB_API dlb_status dlb_tensor_import_legacy(DLManagedTensor* src, DLManagedTensorVersioned** out,
                                            dlb_error* error);

/* Exports a tensor as a legacy DLManagedTensor for consumers that only speak DLPack < 1.0.
 * `src` may come from any producer: it is validated as dlb_tensor_import validates (unknown
 * flag bits included) and refused with that status and message.
 * Flags: the legacy struct has none, so a flag is dropped only when the legacy consumer reads
 * the same tensor without it: IS_COPIED (informational), and IS_SUBBYTE_TYPE_PADDED on a dtype
 * of 8 bits or more (where it changes no layout). Every other set bit is refused: READ_ONLY with
 * DLB_ERR_READ_ONLY, IS_SUBBYTE_TYPE_PADDED on sub-byte data with DLB_ERR_UNSUPPORTED, bits
 * unknown to DLPack 1.3 with DLB_ERR_UNSUPPORTED (by validation).
 * For address-based devices the legacy tensor's byte_offset is folded into data.
 * Ownership: on success src moves into *out: calling (*out)->deleter (or
 * dlb_tensor_free_legacy) frees src exactly once, and the caller must no longer free src. On
 * error the caller still owns src. */
DLB_API dlb_status dlb_tensor_export_legacy(DLManagedTensorVersioned* src, DLManagedTensor** out,
                                            dlb_error* error);

/* Frees a versioned tensor: calls its deleter (when non-NULL) once. NULL is a no-op. Works for
 * any producer's tensor. The caller must not use `tensor` afterwards. */
DLB_API void dlb_tensor_free(DLManagedTensorVersioned* tensor);

/* Frees a legacy tensor the same way. NULL is a no-op. */
DLB_API void dlb_tensor_free_legacy(DLManagedTensor* tensor);

/* Takes another reference to a dlbridge tensor: *out is a new DLManagedTensorVersioned over the
 * same memory, with its own copy of shape and strides, that can be given to another holder or
 * consumer. The memory is released when the last reference (the original, every share, every
 * view) is freed, on whichever thread that happens. `add_flags` may add READ_ONLY (to hand out a
 * read-only alias); other bits are refused. Flags of `tensor` carry over except IS_COPIED: a
 * share is never the sole owner of its memory.
 * Errors: a tensor not made by dlbridge (import it first).
 * Ownership: `tensor` stays owned by the caller; *out is a new tensor the caller owns. */
DLB_API dlb_status dlb_tensor_share(const DLManagedTensorVersioned* tensor, uint64_t add_flags,
                                    DLManagedTensorVersioned** out, dlb_error* error);

/* 1 if `tensor` was made by this library (allocate, wrap, import, share, view, copy). */
DLB_API int dlb_tensor_is_dlbridge(const DLManagedTensorVersioned* tensor);

/* 1 if the caller's `tensor` is the only holder of its memory: a dlbridge tensor that owns its
 * memory (allocated, copied, wrapped, or imported with IS_COPIED set by its producer), of which
 * no share or view is alive now. 0 for views and shares, for imports the producer may still
 * alias, for shareable memory another process may map (sent on a channel, or received without
 * IS_COPIED), for tensors not made by dlbridge and for NULL. The answer can only change from 0 to 1
 * when another holder frees its reference, never the other way without the caller's own call
 * (share, view, export), so a binding may hand out mutable access while it reads 1.
 * Bindings ask this instead of tracking sharing themselves. */
DLB_API int dlb_tensor_is_exclusive(const DLManagedTensorVersioned* tensor);

/* The number of tensors made by this library that have not been freed yet, across all
 * threads. Meant for leak checks in tests and bindings. */
DLB_API int64_t dlb_tensor_live_count(void);

/* An adapter with the DLPackManagedTensorAllocator signature of the DLPack C exchange API:
 * allocates a compact tensor like `prototype` (its dtype, ndim, shape and device) with
 * dlb_tensor_allocate. Returns 0, or -1 after calling SetError(error_ctx, kind, message) once
 * (kind is the status name). Ownership: on success the caller owns *out. */
DLB_API int dlb_exchange_allocator(DLTensor* prototype, DLManagedTensorVersioned** out,
                                   void* error_ctx,
                                   void (*SetError)(void* error_ctx, const char* kind,
                                                    const char* message));

/* ========================================================================================== */
/* Validation and queries                                                                     */
/* ========================================================================================== */
/* These take a borrowed DLTensor (from any producer, including the dl_tensor of either managed
 * struct) plus, where the layout depends on them, the tensor's DLPack flags. */

/* Validates a tensor the way imports do: 0 <= ndim <= DLB_MAX_NDIM; shape non-NULL when
 * ndim > 0; no negative extent; element count fits in 63 bits and the byte span (with
 * byte_offset) stays below 2^60 bytes, because positions are tracked in bits to address packed
 * sub-byte data (DLB_ERR_OVERFLOW otherwise); lanes >= 1; a known
 * dtype code with legal bits; a known device type with device_id >= 0 (0 for the CPU); data
 * non-NULL unless the tensor is empty; for address-based devices, elements that do not wrap
 * around the address space; for opaque-handle devices, no element before the handle.
 * NULL strides are accepted (compact row-major). `flags` must contain only known bits. */
DLB_API dlb_status dlb_tensor_validate(const DLTensor* tensor, uint64_t flags, dlb_error* error);

/* Number of elements: the product of the extents (1 for ndim == 0). Errors: NULL arguments,
 * malformed shape, overflow. */
DLB_API dlb_status dlb_tensor_element_count(const DLTensor* tensor, int64_t* out, dlb_error* error);

/* Bytes the elements would take stored compactly (packed-aware; see dlb_dtype_storage_size). */
DLB_API dlb_status dlb_tensor_byte_size(const DLTensor* tensor, uint64_t flags, uint64_t* out,
                                        dlb_error* error);

/* The memory the tensor's elements actually touch, relative to `data`: *out_begin is the offset
 * in bytes of the lowest byte used (byte_offset, minus what negative strides reach), *out_size
 * the number of bytes from there to the end of the highest element. 0 bytes for an empty
 * tensor. Either output may be NULL. */
DLB_API dlb_status dlb_tensor_byte_span(const DLTensor* tensor, uint64_t flags, int64_t* out_begin,
                                               int64_t* out_size, dlb_error* error);

/* Number of elements of a shape, by the rule validation applies: 0 <= ndim <= DLB_MAX_NDIM,
 * `shape` non-NULL when ndim > 0, no negative extent, and a product that fits in 63 bits
 * (DLB_ERR_OVERFLOW otherwise; a shape with an extent of 0 has 0 elements whatever the other
 * extents are). 1 for ndim == 0. Bindings call this instead of multiplying extents themselves.
 * Ownership: `shape` is borrowed for the call. */
DLB_API dlb_status dlb_shape_element_count(int32_t ndim, const int64_t* shape, int64_t* out,
                                           dlb_error* error);

/* Writes the tensor's extents into `out`, which has room for `capacity` values (capacity must
 * be at least ndim; DLB_ERR_INVALID_ARGUMENT otherwise). Nothing is written for ndim == 0. */
DLB_API dlb_status dlb_tensor_get_shape(const DLTensor* tensor, int32_t capacity, int64_t* out,
                                        dlb_error* error);

/* Writes the tensor's strides (in elements) into `out`, which has room for `capacity` values
 * (at least ndim): the tensor's own strides, or compact row-major ones synthesised from the
 * shape when strides is NULL. */
DLB_API dlb_status dlb_tensor_get_strides(const DLTensor* tensor, int32_t capacity,
                                          int64_t* out, dlb_error* error);

/* Writes compact row-major (C order) strides for `shape` into `out` (ndim values). Extents of 0
 * are treated as 1 so that strides stay meaningful. */
DLB_API void dlb_compact_strides(int32_t ndim, const int64_t* shape, int64_t* out);

/* 1 if the elements are laid out in C order without gaps. Extent-1 dimensions are ignored and
 * a tensor with any extent 0 counts as contiguous. 0 for NULL or a malformed tensor: ndim
 * outside 0..DLB_MAX_NDIM, NULL shape with ndim > 0, a negative extent anywhere, or an element
 * count that overflows (see dlb_tensor_element_count). */
DLB_API int dlb_tensor_is_c_contiguous(const DLTensor* tensor);

/* The same for Fortran (column-major) order. */
DLB_API int dlb_tensor_is_f_contiguous(const DLTensor* tensor);

/* 1 if the first element is aligned to `alignment` bytes (a power of two). For devices whose
 * data is an opaque handle only byte_offset is checked. 0 otherwise, or for a bad alignment. */
DLB_API int dlb_tensor_is_aligned(const DLTensor* tensor, uint64_t alignment);

/* 1 if the host CPU can read the tensor's memory (see dlb_device_is_host_readable). */
DLB_API int dlb_tensor_is_host_readable(const DLTensor* tensor);

/* The tensor's DLPack flags (0 for NULL). */
DLB_API uint64_t dlb_tensor_flags(const DLManagedTensorVersioned* tensor);

/* 1 if the tensor carries READ_ONLY. */
DLB_API int dlb_tensor_is_read_only(const DLManagedTensorVersioned* tensor);

/* The host address of the first element of a C-contiguous tensor whose memory the host can
 * read, and the number of bytes its elements take (packed-aware; 0 for an empty tensor). This
 * is the one check a binding makes before it hands out a typed array, slice or buffer over a
 * tensor's memory. `writable` non-zero asks for write access: refused with DLB_ERR_READ_ONLY
 * for a READ_ONLY tensor.
 * Errors: NULL tensor (DLB_ERR_INVALID_ARGUMENT); memory the host cannot read, such as CUDA
 * device memory or an OpenCL buffer (DLB_ERR_UNSUPPORTED, naming the device); a tensor that is
 * not C-contiguous (DLB_ERR_LAYOUT: copy it first).
 * Ownership: nothing is allocated; the address is valid while `tensor` (or another reference
 * to its memory) lives. */
DLB_API dlb_status dlb_tensor_host_data(const DLManagedTensorVersioned* tensor, int writable,
                                        void** out_data, uint64_t* out_size, dlb_error* error);

/* The host address of one element: `index` holds `nindex` indices, one per dimension (a
 * negative one counts from the end, as in dlb_tensor_select). The element takes whole bytes
 * (bits * lanes a multiple of 8, or sub-byte elements stored padded): packed sub-byte data has
 * no address per element. This is the one check a binding makes for element get/set; the
 * tensor need not be contiguous. `writable` non-zero asks for write access.
 * Errors: NULL tensor or NULL index with nindex > 0, an index count other than ndim, an index
 * out of range (DLB_ERR_INVALID_ARGUMENT); memory the host cannot read (DLB_ERR_UNSUPPORTED,
 * naming the device); packed sub-byte elements narrower than a byte (DLB_ERR_UNSUPPORTED, "int4
 * elements are packed below a byte: they have no address of their own"); `writable` on a
 * READ_ONLY tensor (DLB_ERR_READ_ONLY); a tensor that fails validation (its error).
 * Ownership: nothing is allocated; the address is valid while `tensor` (or another reference
 * to its memory) lives. */
DLB_API dlb_status dlb_tensor_element_data(const DLManagedTensorVersioned* tensor, int32_t nindex,
                                           const int64_t* index, int writable, void** out_data,
                                           dlb_error* error);

/* What a binding asks of dlb_tensor_host_elements (bits, combined with |). */
#define DLB_ACCESS_READ 0u
/* Writes too: refused for a READ_ONLY tensor. */
#define DLB_ACCESS_WRITE 1u
/* Any strides (the caller honours them itself, as a strided view does): no layout check. */
#define DLB_ACCESS_ANY_LAYOUT 2u

/* Typed host access: the elements of a tensor as host memory of `dtype`, for a binding that
 * hands out a typed array, slice, span or strided view over the tensor's memory. Writes the
 * address of the first element (data + byte_offset) and the number of elements (0 for an empty
 * tensor; the address may then be NULL). Checks, in this order, each with the core's one
 * message:
 *  - the tensor is valid (its validation error);
 *  - `dtype` is a valid dtype (as dlb_dtype_validate: there is no wildcard, an all-zero dtype
 *    is refused with "dtype int with 0 bits is not a valid DLPack type");
 *  - `dtype` is the tensor's dtype (code, bits and lanes), DLB_ERR_INVALID_ARGUMENT:
 *    "the tensor holds float32 elements, not int32";
 *  - each element starts on a byte of its own (DLB_ERR_UNSUPPORTED for packed sub-byte data
 *    such as int4; a packed int4x2 fills a byte and is accepted);
 *  - the host can read the memory (DLB_ERR_UNSUPPORTED, naming the device), and, with
 *    DLB_ACCESS_WRITE in `access`, it is not READ_ONLY (DLB_ERR_READ_ONLY);
 *  - unless `access` has DLB_ACCESS_ANY_LAYOUT, the tensor is C-contiguous (DLB_ERR_LAYOUT:
 *    copy it, or use dlb_tensor_copy_to_host).
 * Ownership: nothing is allocated; the address is valid while `tensor` (or another reference
 * to its memory) lives. */
DLB_API dlb_status dlb_tensor_host_elements(const DLManagedTensorVersioned* tensor,
                                            DLDataType dtype, uint32_t access, void** out_data,
                                            int64_t* out_count, dlb_error* error);

/* Typed access to one element: its host address as `dtype`, for a binding's get and set of one
 * value. The checks of dlb_tensor_host_elements (any layout: DLB_ACCESS_ANY_LAYOUT is implied;
 * DLB_ACCESS_WRITE refuses a READ_ONLY tensor), then those of dlb_tensor_element_data on
 * `index`, in that order and with their messages, validating the tensor once.
 * Ownership: nothing is allocated; the address is valid while `tensor` (or another reference
 * to its memory) lives. */
DLB_API dlb_status dlb_tensor_typed_element(const DLManagedTensorVersioned* tensor,
                                            DLDataType dtype, uint32_t access, int32_t nindex,
                                            const int64_t* index, void** out_data,
                                            dlb_error* error);

/* ========================================================================================== */
/* Zero-copy views                                                                            */
/* ========================================================================================== */
/* Views share the memory of `src`, which must be a dlbridge tensor (import foreign ones
 * first). A view keeps that memory alive on its own: `src` may be freed before the view. Flags
 * carry over except IS_COPIED (a view is never the sole owner of its memory). For address-based
 * devices (CPU, CUDA, pinned, managed, ROCm, oneAPI) a view's `data` points at its first
 * element and byte_offset is 0 (PyTorch and other importers read `data` alone). For devices
 * whose data is an opaque handle `data` is never changed and the offset goes to byte_offset. A
 * view of packed sub-byte data must start on a byte boundary, and an opaque-handle view cannot
 * start before its buffer: both are refused with DLB_ERR_LAYOUT.
 * Ownership for all of them: `src` stays owned by the caller; on success the caller also owns
 * *out; on error nothing is allocated. */

/* Marks an omitted slice bound, like Python's None. */
#define DLB_SLICE_NONE INT64_MIN

/* One dimension of a slice with Python semantics: negative start/stop count from the end,
 * out-of-range bounds are clamped, DLB_SLICE_NONE as start/stop means "from the beginning/to the
 * end" in the direction of `step`, and step may be negative but not 0. DLB_SLICE_NONE as step
 * means 1, like Python's None. */
typedef struct dlb_slice {
  /* start:stop:step, as Python writes it (DLB_SLICE_NONE where Python has None). */
  int64_t start;
  int64_t stop;
  int64_t step;
} dlb_slice;

/* Slices the first `nslices` dimensions (nslices <= ndim); later dimensions are taken whole. */
DLB_API dlb_status dlb_tensor_slice(const DLManagedTensorVersioned* src, int32_t nslices,
                                    const dlb_slice* slices, DLManagedTensorVersioned** out,
                                    dlb_error* error);

/* Selects one index along `axis`, removing that dimension (x[..., index, ...]). Negative axis and
 * index count from the end. */
DLB_API dlb_status dlb_tensor_select(const DLManagedTensorVersioned* src, int32_t axis,
                                     int64_t index, DLManagedTensorVersioned** out,
                                     dlb_error* error);

/* Gives the tensor a new shape with the same element count; one extent may be -1 (inferred).
 * Shapes exist by the rule dlb_tensor_validate uses: an extent 0 makes the count 0 whatever the
 * other extents (so (INT64_MAX, 2, 0) holds 0 elements), and a -1 beside positive extents in a
 * reshape of an empty tensor becomes 0. A -1 beside an extent 0 cannot be inferred.
 * Succeeds whenever the existing strides can express the new shape (always for contiguous
 * tensors); otherwise DLB_ERR_LAYOUT: copy first. */
DLB_API dlb_status dlb_tensor_reshape(const DLManagedTensorVersioned* src, int32_t ndim,
                                      const int64_t* shape, DLManagedTensorVersioned** out,
                                      dlb_error* error);

/* Reorders the dimensions: dimension i of the view is dimension axes[i] of src. `naxes` must
 * equal ndim and `axes` must be a permutation (negative values count from the end). */
DLB_API dlb_status dlb_tensor_permute(const DLManagedTensorVersioned* src, int32_t naxes,
                                      const int32_t* axes, DLManagedTensorVersioned** out,
                                      dlb_error* error);

/* Reverses the order of the dimensions (the matrix transpose for ndim == 2). */
DLB_API dlb_status dlb_tensor_transpose(const DLManagedTensorVersioned* src,
                                        DLManagedTensorVersioned** out, dlb_error* error);

/* ========================================================================================== */
/* Copies                                                                                     */
/* ========================================================================================== */

/* Copies `src` (any strides, any device with a backend or host-readable memory) into a new
 * compact row-major tensor on `device`. The copy carries IS_COPIED and keeps
 * IS_SUBBYTE_TYPE_PADDED; it is writable even if src was READ_ONLY. Copies between devices go
 * through their backends, staged through host memory where no direct path exists.
 * Ownership: `src` is borrowed; on success the caller owns *out. */
DLB_API dlb_status dlb_tensor_copy(const DLManagedTensorVersioned* src, DLDevice device,
                                   DLManagedTensorVersioned** out, dlb_error* error);

/* Copies the elements of `src` into the existing tensor `dst`, which must have the same shape
 * and dtype (any strides, any supported devices). Overlapping source and destination memory is
 * handled as if src were copied to a temporary first.
 * Errors: DLB_ERR_READ_ONLY when dst is READ_ONLY; DLB_ERR_INVALID_ARGUMENT on a shape or dtype
 * mismatch. Ownership: both are borrowed. */
DLB_API dlb_status dlb_tensor_copy_into(const DLManagedTensorVersioned* src,
                                        DLManagedTensorVersioned* dst, dlb_error* error);

/* Copies the elements of `src` (any strides, negative and zero included; any device with a
 * backend or host-readable memory) in C order into the caller's host buffer of `buffer_size`
 * bytes, which must be exactly the compact size of the elements (dlb_tensor_byte_size).
 * `dtype` is the element type the buffer holds, checked against the tensor's: pass the
 * tensor's own, or a DLDataType of all zeros for the raw bytes of any dtype.
 * Errors: an invalid tensor (its validation error); another dtype (DLB_ERR_INVALID_ARGUMENT,
 * "the tensor holds float32 elements, not int32"); a buffer of another size
 * (DLB_ERR_INVALID_ARGUMENT, "the buffer holds 20 bytes but the tensor's 6 float32 elements take
 * 24"); a NULL buffer for a non-empty tensor; the device's failure.
 * Ownership: both are borrowed; nothing is allocated that outlives the call. */
DLB_API dlb_status dlb_tensor_copy_to_host(const DLManagedTensorVersioned* src, DLDataType dtype,
                                           void* buffer, uint64_t buffer_size, dlb_error* error);

/* The reverse of dlb_tensor_copy_to_host: copies `buffer_size` bytes of C-ordered elements from
 * the caller's host buffer into the existing tensor `dst`, whatever its strides and device.
 * Same checks and messages, and DLB_ERR_READ_ONLY ("cannot copy into a read-only tensor") when
 * dst is READ_ONLY. A `buffer` that overlaps dst's memory is copied as if through a temporary.
 * Ownership: both are borrowed. */
DLB_API dlb_status dlb_tensor_copy_from_host(DLManagedTensorVersioned* dst, DLDataType dtype,
                                             const void* buffer, uint64_t buffer_size,
                                             dlb_error* error);

/* ========================================================================================== */
/* Streams and asynchronous copies                                                            */
/* ========================================================================================== */
/* A stream is the device runtime's own queue handle, passed as void*: a cudaStream_t for CUDA
 * (cudaStreamLegacy and cudaStreamPerThread included), a cl_command_queue for OpenCL, whatever
 * a plug-in backend defines for its device. The copy functions without _async are the same
 * calls with a NULL stream: they return when the copy is complete. */

/* Like dlb_tensor_copy, with the copy queued on `stream` (of the device that is not the host;
 * of the destination when both sides are devices). The call returns once the work is queued:
 * the caller keeps `src` alive, and reads *out only after synchronising the stream. Work the
 * library must stage through host memory (sub-byte data, two device types without a direct
 * path) completes before the call returns. A NULL stream makes the call synchronous.
 * Ownership: as dlb_tensor_copy. */
DLB_API dlb_status dlb_tensor_copy_async(const DLManagedTensorVersioned* src, DLDevice device,
                                         void* stream, DLManagedTensorVersioned** out,
                                         dlb_error* error);

/* Like dlb_tensor_copy_into (overlapping memory included), queued on `stream` as
 * dlb_tensor_copy_async describes. Ownership: both are borrowed and must stay alive until the
 * stream has finished the copy. */
DLB_API dlb_status dlb_tensor_copy_into_async(const DLManagedTensorVersioned* src,
                                              DLManagedTensorVersioned* dst, void* stream,
                                              dlb_error* error);

/* Waits on the host until the work queued on `stream` is done; with a NULL stream, until all
 * work on `device` is done. A no-op for host-only devices (kDLCPU). Errors: no backend for the
 * device type, or the runtime's failure (DLB_ERR_DEVICE). */
DLB_API dlb_status dlb_device_synchronize(DLDevice device, void* stream, dlb_error* error);

/* ========================================================================================== */
/* CUDA                                                                                       */
/* ========================================================================================== */
/* When dlbridge is built with the CUDA Toolkit, backends for kDLCUDA (device memory, any
 * device_id), kDLCUDAHost (pinned host memory, device_id 0) and kDLCUDAManaged (managed memory,
 * device_id 0) are registered on first use. The library carries the CUDA runtime statically and
 * finds the NVIDIA driver when first asked to do CUDA work: the same binary loads and does all
 * CPU work on machines without a driver or a GPU, where CUDA calls return
 * DLB_ERR_DEVICE_UNAVAILABLE with the message "no CUDA driver found" or "no CUDA device". A
 * library built without CUDA returns DLB_ERR_UNSUPPORTED from every function here.
 * Imports and wraps of CUDA tensors check, when a driver is present, that `data` is memory of
 * the claimed kind on the claimed device (device memory or managed memory for kDLCUDA, pinned
 * memory for kDLCUDAHost, managed memory for kDLCUDAManaged). Nothing here allocates anything
 * the caller must free. */

/* DLB_OK when CUDA work can run here: built with CUDA, a driver found, at least one device.
 * Otherwise DLB_ERR_UNSUPPORTED or DLB_ERR_DEVICE_UNAVAILABLE with the reason. */
DLB_API dlb_status dlb_cuda_is_available(dlb_error* error);

/* Writes the number of CUDA devices visible to this process. Without a driver or a device the
 * call fails with DLB_ERR_DEVICE_UNAVAILABLE (and *count is 0, as on every error). */
DLB_API dlb_status dlb_cuda_device_count(int32_t* count, dlb_error* error);

/* Writes the DLPack device that `pointer` lives on: {kDLCUDA, id} for device memory,
 * {kDLCUDAHost, 0} for pinned host memory, {kDLCUDAManaged, 0} for managed memory and
 * {kDLCPU, 0} for memory CUDA does not know (including NULL). */
DLB_API dlb_status dlb_cuda_pointer_device(const void* pointer, DLDevice* out, dlb_error* error);

/* The consumer_stream value that stands for "not given" (Python's None): the legacy default
 * stream. */
#define DLB_CUDA_STREAM_NONE INT64_MIN

/* The DLPack stream handshake, done by a producer for a consumer: makes the work queued so far
 * on `producer_stream` (a cudaStream_t of device `device_id`; NULL is the legacy default
 * stream) visible to work the consumer will queue on its stream, without blocking the host.
 * `consumer_stream` follows the DLPack CUDA convention:
 *   DLB_CUDA_STREAM_NONE or 1: the legacy default stream; 2: the per-thread default stream;
 *   -1: the consumer asks for no synchronisation (nothing is done); any other positive value:
 *   a cudaStream_t; 0 and other negative values are refused (DLB_ERR_INVALID_ARGUMENT).
 * It records an event on the producer's stream and makes the consumer's stream wait for it;
 * nothing is done when both name the same stream. Ownership: nothing is allocated that
 * outlives the call; the streams stay the caller's. */
DLB_API dlb_status dlb_cuda_stream_handshake(int32_t device_id, void* producer_stream,
                                             int64_t consumer_stream, dlb_error* error);

/* ========================================================================================== */
/* OpenCL                                                                                     */
/* ========================================================================================== */
/* When dlbridge is built with the OpenCL headers, a backend for kDLOpenCL is registered on first
 * use. It loads the OpenCL ICD loader (libOpenCL.so.1) at run time, so the library has no link
 * dependency on OpenCL; without a loader or a platform the functions here return
 * DLB_ERR_DEVICE_UNAVAILABLE. A tensor's `data` is a cl_mem and views move only byte_offset.
 * Device ids number the devices of all platforms in order: platform 0's devices first, then
 * platform 1's, and so on. The stream of a copy is a cl_command_queue on the tensor's context;
 * a NULL stream uses the library's own in-order queue for the device and blocks. */

/* DLB_OK when an OpenCL platform with at least one device was found; otherwise
 * DLB_ERR_UNSUPPORTED (built without OpenCL) or DLB_ERR_DEVICE_UNAVAILABLE with the reason. */
DLB_API dlb_status dlb_opencl_is_available(dlb_error* error);

/* Writes the number of OpenCL devices over all platforms (0 and DLB_ERR_DEVICE_UNAVAILABLE
 * when there is none). */
DLB_API dlb_status dlb_opencl_device_count(int32_t* count, dlb_error* error);

/* The OpenCL objects behind device `device_id`: its cl_platform_id, cl_device_id, the
 * cl_context dlbridge allocates in, and the library's in-order cl_command_queue. Each out
 * pointer may be NULL. The objects belong to the library and live until the process ends;
 * retain them (clRetainContext, ...) to keep them longer than a backend replacement. */
DLB_API dlb_status dlb_opencl_device_objects(int32_t device_id, void** platform, void** device,
                                             void** context, void** queue, dlb_error* error);

/* Writes "platform name / device name" of device `device_id` into buffer (NUL-terminated;
 * DLB_ERR_INVALID_ARGUMENT when it does not fit). */
DLB_API dlb_status dlb_opencl_device_name(int32_t device_id, char* buffer, uint64_t buffer_size,
                                          dlb_error* error);

/* The OpenCL counterpart of the stream handshake: makes the commands queued so far on
 * `producer_queue` complete before any command queued afterwards on `consumer_queue` starts,
 * without blocking the host (a marker on one queue, a barrier waiting on it on the other).
 * Nothing is done when both are the same queue. Both must belong to the same cl_context. */
DLB_API dlb_status dlb_opencl_queue_handshake(void* producer_queue, void* consumer_queue,
                                              dlb_error* error);

/* ========================================================================================== */
/* Sharing tensors across processes                                                           */
/* ========================================================================================== */
/* A tensor in shareable memory can be sent to another process over a channel (a Unix domain
 * socket) without copying: the memory's file descriptor travels with SCM_RIGHTS beside a
 * versioned descriptor of the tensor, and the receiver maps the same memory. Host memory is a
 * memfd mapped MAP_SHARED and sealed against shrinking and growing, so no process can ever see
 * the segment shrink under its mapping; it has no name in any file system (nothing in
 * /dev/shm). The memory lives while any process maps it or holds its descriptor (the kernel's
 * count): a process that exits or is killed leaks nothing once the others release it.
 * A received tensor is an ordinary dlbridge tensor (every function works on it; its deleter
 * unmaps and closes), and is itself shareable: it can be sent on.
 * Linux only; elsewhere these functions return DLB_ERR_UNSUPPORTED.
 *
 * CUDA device memory (kDLCUDA) is shareable too, in a library built with CUDA, in one of two
 * ways chosen per device when it is allocated (dlb_tensor_shareable_kind tells which):
 *  - DLB_SHAREABLE_CUDA_FD: memory from the CUDA virtual memory API (cuMemCreate) exported as a
 *    POSIX file descriptor, which travels like a memfd's. The receiver imports and maps it on
 *    the device the descriptor names. Lifetime as for host memory: the allocation lives while
 *    any process holds a handle to it, a mapping of it or its file descriptor; the sender may
 *    free its tensor or exit once it has sent. The receiver maps it read-only when it is sent
 *    READ_ONLY.
 *  - DLB_SHAREABLE_CUDA_IPC, the fallback for devices without virtual memory management or
 *    without the POSIX file descriptor handle type: cudaMalloc memory sent as a
 *    cudaIpcMemHandle_t. Weaker lifetime rule: the memory belongs to the sender's process alone.
 *    The sender must keep its tensor (or a view or share of it) until every receiver has freed
 *    what it received; if the sender frees it or exits first, even by SIGKILL, the memory is
 *    freed under the receivers, whose use of it is then undefined (CUDA's rule). The descriptor
 *    says which kind it carries, so the receiver's dlb_tensor_shareable_kind tells it which rule
 *    applies. Such memory is received writable even when READ_ONLY (the flag still travels and
 *    dlbridge honours it), and a received DLB_SHAREABLE_CUDA_IPC tensor cannot be sent on.
 * Stream order across processes: dlb_channel_send_cuda records an interprocess CUDA event on
 * the sender's stream after its work; the receiver makes its stream wait for it with
 * dlb_cuda_wait_received. That event belongs to the sender's memory (re-recorded by each
 * dlb_channel_send_cuda of it, destroyed when the sender frees its last tensor over that
 * memory): the sender must keep its tensor until the receiver has called dlb_cuda_wait_received
 * (CUDA leaves waiting on an event whose exporter destroyed it undefined).
 * The CUDA paths are compiled against the CUDA 13 headers and tested where a GPU is present;
 * see docs/ipc.md for what has been run on hardware. Without a driver, allocating shareable
 * CUDA memory and receiving it fail as every CUDA call does (DLB_ERR_DEVICE_UNAVAILABLE, "no
 * CUDA driver found"). */

/* Allocates like dlb_tensor_allocate, in memory another process can map (see above): on kDLCPU
 * a sealed memfd, zero-filled, the first element DLB_CPU_ALIGNMENT-aligned; on kDLCUDA device
 * memory of `device.device_id`, zero-filled, exported as described above (the size is rounded
 * up to the device's allocation granularity). Other devices: DLB_ERR_UNSUPPORTED.
 * Ownership: on success the caller owns *out; on error nothing is allocated or left open. */
DLB_API dlb_status dlb_tensor_allocate_shareable(DLDevice device, DLDataType dtype, int32_t ndim,
                                                 const int64_t* shape, const int64_t* strides,
                                                 uint64_t flags, DLManagedTensorVersioned** out,
                                                 dlb_error* error);

/* 1 if `tensor`'s memory is shareable: made by dlb_tensor_allocate_shareable, received from a
 * channel, or a view or share of one of those. */
DLB_API int dlb_tensor_is_shareable(const DLManagedTensorVersioned* tensor);

/* Kinds of shareable memory (see above), as dlb_tensor_shareable_kind answers. */
#define DLB_SHAREABLE_NONE 0     /* not shareable (and NULL) */
#define DLB_SHAREABLE_MEMFD 1    /* host memory in a sealed memfd */
#define DLB_SHAREABLE_CUDA_FD 2  /* CUDA memory exported as a POSIX file descriptor */
#define DLB_SHAREABLE_CUDA_IPC 3 /* CUDA memory shared by a cudaIpcMemHandle_t: the sender must
                                    outlive every receiver's use */

/* Which kind of shareable memory `tensor` is over (DLB_SHAREABLE_*). */
DLB_API int dlb_tensor_shareable_kind(const DLManagedTensorVersioned* tensor);

/* A channel: one end of a connection between two processes, or a listener that accepts them.
 * Safe to use from one thread at a time; different channels from any threads. The exception is
 * dlb_channel_shutdown, which any thread may call at any time (to stop a blocked receive).
 *
 * Statuses: every failure of a channel function is one of DLB_ERR_NO_LISTENER (connect: nothing
 * listens there), DLB_ERR_PERMISSION (modes, another user's folder, a refused user),
 * DLB_ERR_PEER_CLOSED (the peer went away), DLB_ERR_PROTOCOL (what arrived is not a valid
 * tensor), DLB_ERR_TIMEOUT, DLB_ERR_LIMIT (out of file descriptors or mappings),
 * DLB_ERR_CLOSED (shut down), DLB_ERR_OUT_OF_MEMORY, DLB_ERR_UNSUPPORTED_VERSION (a peer speaking
 * a newer descriptor major), DLB_ERR_INVALID_ARGUMENT (this caller's own arguments), or, for
 * CUDA memory, the CUDA statuses. A server loop therefore skips a refused or misbehaving peer
 * (DLB_ERR_PERMISSION, DLB_ERR_PEER_CLOSED, DLB_ERR_PROTOCOL, DLB_ERR_TIMEOUT from accept or
 * from that peer's channel) and keeps serving: see docs/ipc.md.
 *
 * Two users: a listener accepts peers of its own user, and of each uid allowed with
 * dlb_channel_allow_uid; a connecting process accepts a listener of its own user, or of the one
 * uid it names to dlb_channel_connect_with. Both checks use the credentials the kernel recorded
 * for the connection (SO_PEERCRED), so neither side can claim another user. The socket's
 * folder must still let the other user reach the socket: see dlb_channel_listen. */
typedef struct dlb_channel dlb_channel;

/* No time limit (the default of every channel). */
#define DLB_TIMEOUT_NONE (-1)
/* dlb_channel_connect_with's `listener_uid` when the listener must run as the caller's user. */
#define DLB_UID_SELF 0xFFFFFFFFu

/* Listens at `path`, a Unix domain socket the call creates with mode 0600. Its folder must be
 * one only the calling user can enter: the call creates it (mode 0700) when it does not exist,
 * and refuses one that others can enter or that another user owns (DLB_ERR_PERMISSION). A stale
 * socket file left by a process that died is replaced; a live one (something accepts on it) is
 * refused (DLB_ERR_INVALID_ARGUMENT). To serve another user, allow its uid
 * (dlb_channel_allow_uid) and give it a way in: the socket file's mode is 0600 and its folder's
 * 0700, so the program widens them itself (for example a folder of mode 0711 and a socket of
 * mode 0666, or a group); the peer-credential check still refuses every uid not allowed.
 * Ownership: on success the caller owns *out (dlb_channel_close also removes the socket file);
 * on error nothing is created. */
DLB_API dlb_status dlb_channel_listen(const char* path, dlb_channel** out, dlb_error* error);

/* Waits for the next connection on a listener and returns it as a channel. The peer's
 * credentials are checked: a peer running as another user than the caller is refused with
 * DLB_ERR_PERMISSION unless its uid was allowed with dlb_channel_allow_uid (its connection is
 * then closed, the listener stays usable: call accept again). The new channel takes the
 * listener's allowed uids and its time limit. With a time limit, DLB_ERR_TIMEOUT when no peer
 * connects in time (the listener stays usable). DLB_ERR_LIMIT when this process is out of file
 * descriptors (the peer stays queued). Ownership: on success the caller owns *out. */
DLB_API dlb_status dlb_channel_accept(dlb_channel* listener, dlb_channel** out, dlb_error* error);

/* Connects to a listener at `path`; the listener's process must run as the caller's user
 * (DLB_ERR_PERMISSION otherwise, before anything is sent or received). Nothing listening there:
 * DLB_ERR_NO_LISTENER; a socket or folder this user may not reach: DLB_ERR_PERMISSION.
 * Ownership: on success the caller owns *out. */
DLB_API dlb_status dlb_channel_connect(const char* path, dlb_channel** out, dlb_error* error);

/* dlb_channel_connect, accepting a listener that runs as `listener_uid` too (DLB_UID_SELF: the
 * caller's user only), and with a time limit of `timeout_ns` nanoseconds (DLB_TIMEOUT_NONE: none;
 * 0: do not wait) for the connection, which the channel then keeps for its sends and receives
 * (dlb_channel_set_timeout changes it). A connection waits only while the listener's queue of
 * unaccepted peers is full. Errors: as dlb_channel_connect; a negative timeout other than
 * DLB_TIMEOUT_NONE (DLB_ERR_INVALID_ARGUMENT); DLB_ERR_TIMEOUT.
 * Ownership: on success the caller owns *out. */
DLB_API dlb_status dlb_channel_connect_with(const char* path, uint32_t listener_uid,
                                            int64_t timeout_ns, dlb_channel** out,
                                            dlb_error* error);

/* Sets the channel's time limit, in nanoseconds, for each later accept, send and receive
 * (DLB_TIMEOUT_NONE: none, the default; 0: do not wait). A call that runs out of time fails with
 * DLB_ERR_TIMEOUT. When nothing of a tensor had arrived (receive) or left (send), the channel
 * stays usable; when the limit ran out in the middle of a tensor's frames, the stream has lost
 * its place, and every later send and receive fails with DLB_ERR_PROTOCOL: close the channel.
 * On a listener the limit applies to accept and passes to each channel it accepts.
 * Errors: a negative value other than DLB_TIMEOUT_NONE (DLB_ERR_INVALID_ARGUMENT); a channel
 * shut down (DLB_ERR_CLOSED). */
DLB_API dlb_status dlb_channel_set_timeout(dlb_channel* channel, int64_t timeout_ns,
                                           dlb_error* error);

/* Accepts peers running as `uid` too (the caller's own uid always is). On a listener it applies
 * to every channel it accepts from now on. A connected channel's peer was checked when it
 * connected: to accept a listener of another user, name it to dlb_channel_connect_with.
 * Errors: more than 16 other users (DLB_ERR_INVALID_ARGUMENT); a channel shut down. */
DLB_API dlb_status dlb_channel_allow_uid(dlb_channel* channel, uint32_t uid, dlb_error* error);

/* The peer's process id and user id, as the kernel reported them when the connection was made.
 * Either pointer may be NULL. Errors: a listener (no peer). */
DLB_API dlb_status dlb_channel_peer(const dlb_channel* channel, int32_t* pid, uint32_t* uid,
                                    dlb_error* error);

/* Options of dlb_channel_send. */
#define DLB_SEND_COPY 1u
/* A remote channel keeps a strided tensor's layout: its covering span travels (from its lowest
 * element to the end of its highest, the gaps between them included) and the receiver's tensor
 * has the sender's strides, where without it a strided tensor is packed once and received with
 * compact strides. A local channel shares the memory itself, so its receiver always sees the
 * sender's layout; the copy DLB_SEND_COPY makes there is compact. */
#define DLB_SEND_KEEP_LAYOUT 2u
/* More tensors follow at once (a stream, or the parts of one message): a remote channel may
 * hold this tensor's bytes, copied, and send them with the next ones as one transport message,
 * where each would otherwise cost one (see "Channels across machines"). The call returns once
 * the bytes are copied; the held tensors leave with the next send without DLB_SEND_MORE, when
 * they fill a batch (about 64 KiB, or 1 MiB for tensors of 16 KiB and more), at the channel's next
 * receive, or at its close. A send with DLB_SEND_MORE may return while a full batch still
 * travels; the next call without it (a send, a receive) returns only once every batch is sent,
 * as a send of a large tensor does. A tensor that cannot be held (device memory, or over
 * 256 KiB) goes out at once, after the held ones. A local channel sends every tensor at once
 * and ignores it. */
#define DLB_SEND_MORE 4u

/* Sends `tensor` to the peer: its memory's descriptor and the tensor's layout (dtype, shape,
 * strides, flags, offset). The memory must be shareable (else DLB_ERR_UNSUPPORTED, "the tensor's
 * memory is not shareable: allocate it as shareable memory, or send a copy"), unless `options` has DLB_SEND_COPY: a tensor that is not shareable is then
 * copied into new shareable memory first (the receiver's tensor is then marked IS_COPIED): a
 * kDLCUDA tensor into shareable memory on its device, any other into host memory; the copy is
 * complete when the call returns. A CUDA tensor is sent as it is: no stream order goes with it
 * (the caller makes sure its work on the memory is done, or uses dlb_channel_send_cuda).
 * The peer sees writes made through the tensor afterwards, and the tensor sees the peer's
 * (the same memory), unless it is READ_ONLY: the receiver then maps it read-only.
 * Errors besides the tensor's own: DLB_ERR_PEER_CLOSED (the peer went away), DLB_ERR_TIMEOUT,
 * DLB_ERR_LIMIT (the system's limit on file descriptors in flight), DLB_ERR_PROTOCOL (the
 * channel lost its place after a timeout), DLB_ERR_CLOSED.
 * Ownership: `tensor` is borrowed; it stays the caller's, and the memory lives on in the peer
 * after the caller frees it. */
DLB_API dlb_status dlb_channel_send(dlb_channel* channel, const DLManagedTensorVersioned* tensor,
                                    uint32_t options, dlb_error* error);

/* dlb_channel_send for a kDLCUDA tensor with stream order: an interprocess event is recorded on
 * `stream` (a cudaStream_t of the tensor's device; NULL is the legacy default stream) after the
 * work queued on it so far, and its handle travels with the tensor; the receiver makes its own
 * stream wait for it with dlb_cuda_wait_received, without blocking either host. The event
 * belongs to the sender's memory (see above): keep the tensor until the receiver has waited.
 * With DLB_SEND_COPY and memory that is not shareable, the copy is queued on `stream` and
 * waited for before it is sent, and no event goes with it. Errors: as dlb_channel_send, a
 * tensor that is not kDLCUDA (DLB_ERR_INVALID_ARGUMENT), CUDA failures (DLB_ERR_DEVICE), and
 * DLB_ERR_UNSUPPORTED in a library built without CUDA.
 * Ownership: `tensor` and `stream` are borrowed; nothing the caller must free is created. */
DLB_API dlb_status dlb_channel_send_cuda(dlb_channel* channel,
                                         const DLManagedTensorVersioned* tensor, void* stream,
                                         uint32_t options, dlb_error* error);

/* Waits for the next tensor from the peer and maps it. Everything that arrives is checked
 * before anything is mapped: the peer's credentials (DLB_ERR_PERMISSION), the descriptor's
 * magic, size and version (DLB_ERR_PROTOCOL; DLB_ERR_UNSUPPORTED_VERSION for another major), the
 * number of file descriptors its kind of memory comes with, the segment's real size (fstat), its
 * seals and access mode (host memory), the device (cpu:0 for host memory), the tensor's dtype
 * and layout as an import validates them and against the segment's size, then, for CUDA
 * memory, the device (one this process sees) and the allocation granularity. A refusal of what
 * the peer sent is DLB_ERR_PROTOCOL with the message the same layout gets from validation (or
 * its own), and the stream stays in step: the next receive reads the next tensor. Only the pages
 * the tensor reaches are mapped. Other errors: DLB_ERR_PEER_CLOSED (the peer closed, also in the
 * middle of a tensor), DLB_ERR_TIMEOUT, DLB_ERR_LIMIT (the file descriptor that came with the
 * tensor was dropped because this process is at its limit of open files, or no room is left to
 * map it: the tensor is lost, and the message says so), DLB_ERR_CLOSED. Nothing received is left
 * open or mapped after an error. A received CUDA tensor keeps the sender's event, if one came
 * (dlb_cuda_wait_received).
 * Ownership: on success the caller owns *out (freeing it unmaps and closes the memory). */
DLB_API dlb_status dlb_channel_receive(dlb_channel* channel, DLManagedTensorVersioned** out,
                                       dlb_error* error);

/* ---- A channel's pool: the fast way to send ------------------------------------------------
 * dlb_tensor_allocate_shareable gives every tensor a memfd of its own: the receiver maps it and
 * the sender's first write to each page faults it in. A channel's pool keeps memory for the
 * tensors sent on that channel and takes it back when the receiver is done:
 *  - dlb_channel_allocate lends a tensor from segments the pool keeps mapped and already
 *    faulted in; small tensors share segments (slots of one size class in a 2 MiB segment),
 *    a large one has a segment to itself. Its memory is not zero-filled: it holds what an earlier
 *    tensor of the pool held (fill it, as after dlb_tensor_allocate).
 *  - The first send of a segment's slot brings its memfd; later ones name the segment, and the
 *    receiver uses the mapping it kept: no file descriptor, mmap, munmap, fstat or seal check
 *    per tensor, and one file descriptor and at most two mappings (read-write, read-only) per
 *    segment in the receiver, not per tensor.
 *  - When the receiver frees its tensor (and every view and share of it), its dlbridge gives the
 *    slot back over the channel; the sender's pool reuses a slot once the receiver and the
 *    sender have both freed their tensors over it. That return is the sender's delivery
 *    acknowledgement: dlb_channel_pool_stats counts what the peer still holds, and what it lost.
 *  - Lifetimes are the memfd's (see above): a received tensor outlives the sender's pool and
 *    process; a process killed on either side leaks nothing. Slots the peer held when the
 *    channel closed are never reused.
 *  - Segments of 2 MiB and more ask for huge pages: hugetlbfs pages when the system has them
 *    reserved (vm.nr_hugepages), else transparent huge pages where shared memory may use them
 *    (/sys/kernel/mm/transparent_hugepage/shmem_enabled "advise" or "always");
 *    dlb_channel_pool_stats says which the pool got (DLB_HUGE_PAGES_*).
 *  - A pool tensor goes out only on its own channel (sending it on another one gives
 *    DLB_ERR_INVALID_ARGUMENT; send a copy there with DLB_SEND_COPY), and a tensor received from
 *    a pool is lent, not shareable: it cannot be sent on (send a copy with DLB_SEND_COPY).
 * Host memory (kDLCPU) only; Linux only (elsewhere DLB_ERR_UNSUPPORTED). */

/* The most memory a channel's pool may hold unless dlb_channel_set_pool_limit says otherwise. */
#define DLB_POOL_DEFAULT_LIMIT (1ull << 30)

/* What dlb_channel_pool_stats reports of huge pages. */
#define DLB_HUGE_PAGES_NONE 0        /* none: small pages only (or no segment of 2 MiB yet) */
#define DLB_HUGE_PAGES_TRANSPARENT 1 /* transparent huge pages were asked for (madvise) */
#define DLB_HUGE_PAGES_HUGETLB 2     /* segments of reserved hugetlbfs pages */

/* The state of a channel's pool (dlb_channel_pool_stats). */
typedef struct dlb_pool_stats {
  uint64_t segments;      /* segments the pool keeps */
  uint64_t bytes;         /* their size in all */
  uint64_t limit;         /* the most it may keep (dlb_channel_set_pool_limit) */
  uint64_t live;          /* tensors of this process over the pool's slots */
  uint64_t lent;          /* sends the peer has not given back yet */
  uint64_t returned;      /* sends the peer gave back since the channel opened */
  uint64_t lost;          /* sends the peer could not take (it ran out of file descriptors or
                             mappings), since the channel opened */
  int32_t huge_pages;     /* DLB_HUGE_PAGES_*: what the large segments got */
  int32_t reserved;       /* 0 */
} dlb_pool_stats;

/* Lends a tensor from `channel`'s pool (see above), laid out as dlb_tensor_allocate lays it out
 * (`strides` NULL: compact row-major; the first element DLB_CPU_ALIGNMENT-aligned), its memory
 * not zero-filled. Takes back, without waiting, what the peer has given back; when the pool is at
 * its limit, waits for the peer to give a slot of that size back, within the channel's time
 * limit; below its limit it waits for a return briefly (until the waits of this size since it
 * last grew add up to what growing costs, measured; docs/ipc.md "A full pool waits"), then adds
 * a segment.
 * Errors: the layout's own (as dlb_tensor_allocate); a device other than kDLCPU
 * (DLB_ERR_UNSUPPORTED); a listener (DLB_ERR_INVALID_ARGUMENT); a tensor larger than the pool's
 * limit, or a pool at its limit that holds only segments of other sizes, so that no return can
 * make room (DLB_ERR_LIMIT, naming both); DLB_ERR_TIMEOUT (the pool stayed full: the peer holds its
 * tensors), DLB_ERR_PEER_CLOSED (the pool is full and the peer is gone), DLB_ERR_OUT_OF_MEMORY,
 * DLB_ERR_CLOSED.
 * Ownership: on success the caller owns *out, a tensor like any other (views, shares, exports);
 * freeing it gives its slot back to the pool (once the peer has given it back too), also after
 * the channel was closed. On error nothing is allocated. */
DLB_API dlb_status dlb_channel_allocate(dlb_channel* channel, DLDevice device, DLDataType dtype,
                                        int32_t ndim, const int64_t* shape,
                                        const int64_t* strides, uint64_t flags,
                                        DLManagedTensorVersioned** out, dlb_error* error);

/* Sets the most memory `channel`'s pool may keep, in bytes (DLB_POOL_DEFAULT_LIMIT at first).
 * Lowering it below what the pool keeps frees nothing, but no segment is added until the pool
 * is below it. Errors: 0 (DLB_ERR_INVALID_ARGUMENT); a listener; a channel shut down. */
DLB_API dlb_status dlb_channel_set_pool_limit(dlb_channel* channel, uint64_t bytes,
                                              dlb_error* error);

/* Fills *out with the state of `channel`'s pool, after taking back, without waiting, what the
 * peer has given back. All zero (but the limit) before the first dlb_channel_allocate.
 * Errors: NULL arguments, a listener (DLB_ERR_INVALID_ARGUMENT); a channel shut down.
 * Ownership: nothing is created. */
DLB_API dlb_status dlb_channel_pool_stats(dlb_channel* channel, dlb_pool_stats* out,
                                          dlb_error* error);

/* The receiving half of dlb_channel_send_cuda, the cross-process counterpart of
 * dlb_cuda_stream_handshake: makes work the caller queues on `consumer_stream` afterwards wait
 * for the sender's work before the send, without blocking the host. `consumer_stream` follows
 * dlb_cuda_stream_handshake's convention (DLB_CUDA_STREAM_NONE or 1: legacy default; 2:
 * per-thread default; -1: nothing is done; another positive value: a cudaStream_t of the
 * tensor's device; 0 and other negative values: DLB_ERR_INVALID_ARGUMENT). `tensor` is a tensor
 * received from a channel as kDLCUDA memory, or a view or share of one (else
 * DLB_ERR_INVALID_ARGUMENT, "the tensor is not cuda memory received from a channel"); when its
 * sender attached no event (dlb_channel_send), nothing is done. May be called more than once.
 * DLB_ERR_UNSUPPORTED in a library built without CUDA.
 * Ownership: `tensor` and the stream are borrowed; the sender's event is opened for the call
 * and closed before it returns. */
DLB_API dlb_status dlb_cuda_wait_received(const DLManagedTensorVersioned* tensor,
                                          int64_t consumer_stream, dlb_error* error);

/* Shuts a channel down without freeing it: a call blocked on it (accept, receive, send) returns,
 * and that call and every later one but dlb_channel_close fail with DLB_ERR_CLOSED and
 * DLB_CHANNEL_CLOSED_MESSAGE. The one function that may run concurrently with other calls on the
 * same channel: a binding's close from another thread shuts down, then calls dlb_channel_close
 * once no call is in progress. A second call, or NULL, is a no-op. */
DLB_API void dlb_channel_shutdown(dlb_channel* channel);

/* Closes a channel (a listener also removes its socket file) and frees it; no call on it may be
 * in progress (see dlb_channel_shutdown). NULL is a no-op. Tensors already received stay valid. */
DLB_API void dlb_channel_close(dlb_channel* channel);

/* ---- Channels across machines ----------------------------------------------------------------
 * The same channel reaches another machine when its address says so:
 *   "ucx://HOST:PORT"  UCX (https://openucx.org) with the transports it picks at run time
 *                      (shared memory, TCP, RDMA verbs, CUDA-aware transports where installed);
 *   "tcp://HOST:PORT"  UCX restricted to its TCP transport;
 *   anything else      a Unix domain socket path, as above.
 * HOST is an IPv4 address, a bracketed IPv6 address or a host name; a listener binds to exactly
 * the address it is given (no wildcard unless the caller writes one, such as 0.0.0.0), PORT 0 for
 * one the system picks (dlb_channel_port says which).
 *
 * What differs from a local channel (dlb_channel_is_remote says which a channel is):
 *  - The bytes travel. A received tensor is an ordinary tensor marked DLPACK_FLAG_BITMASK_IS_COPIED in memory
 *    this library allocated on the channel's receive device (dlb_channel_options_set_receive_device:
 *    host memory by default), with the sender's dtype, shape and flags and compact row-major
 *    strides. A contiguous tensor goes straight from the sender's memory into the receiver's new
 *    tensor (UCX rendezvous: no staging copy in this library); a strided one is packed once
 *    first, except where its covering span is smaller than its packed bytes (a broadcast view,
 *    with strides of 0) or the sender asks for its layout (DLB_SEND_KEEP_LAYOUT): then the span
 *    travels straight from its memory and the receiver's tensor has the sender's strides.
 *  - Any tensor may be sent, shareable or not; dlb_channel_send returns once the bytes left the
 *    tensor (it may then be written or freed). Each send is one UCX message (or up to five,
 *    for a host tensor of more than one transport segment); a stream of small
 *    tensors sent with DLB_SEND_MORE (all but the last) travels as a few batches instead, at
 *    several times the rate (docs/remote.md). A failure of a held batch is the next call's.
 *    Tensors of device memory need a UCX that reaches that memory: CUDA memory without UCX's
 *    CUDA transports fails with DLB_ERR_DEVICE_UNAVAILABLE and a message naming what is
 *    missing (never a silent copy through host memory); with DLB_SEND_COPY the sender asks for
 *    that copy. Other device types: DLB_ERR_UNSUPPORTED, or a copy to host memory with
 *    DLB_SEND_COPY.
 *  - Peers authenticate by key: a listener needs one, and a connecting peer proves it holds the
 *    same key before either side reads a tensor descriptor (challenge and response, HMAC-SHA256,
 *    from OpenSSL's libcrypto). A peer without it is refused with DLB_ERR_PERMISSION, and nothing
 *    is allocated for it. The key authenticates; it does not encrypt: tensors cross the network in
 *    the clear, so use a network you trust (see docs/remote.md).
 *  - The receiver bounds what a peer can make it allocate: a tensor larger than the channel's
 *    maximum is refused before anything is allocated (DLB_ERR_LIMIT at the receiver's receive and
 *    at the sender's send, which knows the peer's maximum and checks it first), and a sender waits
 *    while the receiver holds its maximum of tensors received but not yet taken by a receive.
 *  - dlb_channel_allow_uid and dlb_channel_peer do not apply (DLB_ERR_INVALID_ARGUMENT); the
 *    pool (dlb_channel_allocate) lends ordinary host tensors, which need no pool to travel.
 * UCX and libcrypto are loaded when the first remote channel is made: a library without them on
 * the machine works as before, and its remote calls fail with DLB_ERR_UNSUPPORTED and a message
 * that names the package to install (dlb_remote_available asks beforehand). */

/* Settings for dlb_channel_listen_with_options and dlb_channel_connect_with_options. */
typedef struct dlb_channel_options dlb_channel_options;

/* The most bytes one received tensor may have, unless the options say otherwise (1 GiB). */
#define DLB_REMOTE_DEFAULT_MAX_TENSOR_BYTES (1ull << 30)
/* The most tensors a receiver holds received and not yet taken, unless the options say
 * otherwise. */
#define DLB_REMOTE_DEFAULT_MAX_IN_FLIGHT 64u
/* The shortest and longest key (bytes). */
#define DLB_REMOTE_MIN_KEY_BYTES 16u
#define DLB_REMOTE_MAX_KEY_BYTES 1024u

/* Options with the defaults: no key, host memory (cpu:0) as the receive device, the default
 * maximums, no time limit, the listener's user the caller's own (local channels).
 * Ownership: on success the caller owns *out (dlb_channel_options_free). */
DLB_API dlb_status dlb_channel_options_create(dlb_channel_options** out, dlb_error* error);

/* Frees options made by dlb_channel_options_create; the key's copy is wiped first. NULL is a
 * no-op. Channels made with them keep what they need. */
DLB_API void dlb_channel_options_free(dlb_channel_options* options);

/* The shared secret that remote peers prove they hold: DLB_REMOTE_MIN_KEY_BYTES to
 * DLB_REMOTE_MAX_KEY_BYTES bytes, copied (else DLB_ERR_INVALID_ARGUMENT). Ignored by local
 * channels. Ownership: `key` is borrowed. */
DLB_API dlb_status dlb_channel_options_set_key(dlb_channel_options* options, const void* key,
                                               size_t size, dlb_error* error);

/* Where a remote channel puts the tensors it receives: kDLCPU (device_id 0), kDLCUDAHost
 * (pinned host memory), kDLCUDA or kDLCUDAManaged of a device_id. Other types:
 * DLB_ERR_UNSUPPORTED. Whether this process and UCX reach that memory is checked when the channel
 * is made (DLB_ERR_DEVICE_UNAVAILABLE). Ignored by local channels (they map the sender's). */
DLB_API dlb_status dlb_channel_options_set_receive_device(dlb_channel_options* options,
                                                          DLDevice device, dlb_error* error);

/* The most bytes one tensor received on a remote channel may have (at least 1). */
DLB_API dlb_status dlb_channel_options_set_max_tensor_bytes(dlb_channel_options* options,
                                                            uint64_t bytes, dlb_error* error);

/* The most tensors a remote channel holds received and not yet taken by dlb_channel_receive
 * (1 to 65536): a sender waits (within its time limit) for the receiver to take one. */
DLB_API dlb_status dlb_channel_options_set_max_in_flight(dlb_channel_options* options,
                                                         uint32_t tensors, dlb_error* error);

/* The channel's time limit (as dlb_channel_set_timeout), for connecting and for every later call.
 * A remote accept's handshake with one peer waits at most 10 seconds even without a limit, so a
 * peer that connects and says nothing cannot hold a server loop. */
DLB_API dlb_status dlb_channel_options_set_timeout(dlb_channel_options* options,
                                                   int64_t timeout_ns, dlb_error* error);

/* The user a local listener may run as (dlb_channel_connect_with). Ignored by remote channels. */
DLB_API dlb_status dlb_channel_options_set_listener_uid(dlb_channel_options* options,
                                                        uint32_t uid, dlb_error* error);

/* dlb_channel_listen at `address` (local or remote, see above) with `options` (NULL: the
 * defaults). A remote listener without a key: DLB_ERR_INVALID_ARGUMENT. An address in use:
 * DLB_ERR_INVALID_ARGUMENT, naming it. Its accepted channels take its options.
 * Ownership: on success the caller owns *out; `options` is borrowed (copied). */
DLB_API dlb_status dlb_channel_listen_with_options(const char* address,
                                                   const dlb_channel_options* options,
                                                   dlb_channel** out, dlb_error* error);

/* dlb_channel_connect to `address` (local or remote) with `options` (NULL: the defaults). A
 * remote connect runs the key handshake before it returns: DLB_ERR_NO_LISTENER (nothing listens
 * there), DLB_ERR_PERMISSION (the listener refused this key, or did not prove it holds the same),
 * DLB_ERR_TIMEOUT. Ownership: on success the caller owns *out; `options` is borrowed. */
DLB_API dlb_status dlb_channel_connect_with_options(const char* address,
                                                    const dlb_channel_options* options,
                                                    dlb_channel** out, dlb_error* error);

/* 1 for a channel across machines (a "ucx://" or "tcp://" address), 0 for a local one or NULL. */
DLB_API int dlb_channel_is_remote(const dlb_channel* channel);

/* The port a remote listener or channel uses on this machine (a listener made with port 0 learns
 * its port here), or -1 for a local channel or NULL. */
DLB_API int32_t dlb_channel_port(const dlb_channel* channel);

/* DLB_OK when remote channels can be made in this process: UCX (libucp.so.0) and libcrypto
 * (libcrypto.so.3) load. Otherwise DLB_ERR_UNSUPPORTED, and the message names what is missing
 * and the Debian packages that bring it. Loads them the first time; later calls are cheap. */
DLB_API dlb_status dlb_remote_available(dlb_error* error);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DLBRIDGE_DLBRIDGE_H_ */
