/*
 * dlpack.h - the DLPack tensor-exchange ABI, version 1.3 (plus the codes added after 1.3).
 *
 * Written for dlbridge from the published facts of the standard; it is meant to be a drop-in
 * replacement for the upstream header: the same names, the same values, the same include guard,
 * usable from C99 and C++.
 *
 * The ABI in one paragraph: a producer describes memory with a DLTensor (data pointer, device,
 * dtype, shape and strides in elements, byte offset of the first element) and hands it over
 * inside a managed struct whose `deleter` the consumer calls exactly once when it no longer
 * needs the memory. There are two managed structs with *different layouts*: the legacy
 * DLManagedTensor and the versioned DLManagedTensorVersioned (which also carries flags such as
 * READ_ONLY). Never read one as the other.
 */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_

#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif

/* ------------------------------------------------------------------------------------------ */
/* Version                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* The major version changes when the layout of the managed structs changes incompatibly. A
 * consumer must check DLManagedTensorVersioned.version.major before reading anything else. */
#define DLPACK_MAJOR_VERSION 1
/* The minor version changes when codes or flags are added; layouts stay compatible. */
#define DLPACK_MINOR_VERSION 3

#ifdef _WIN32
#ifdef DLPACK_EXPORTS
#define DLPACK_DLL __declspec(dllexport)
#else
#define DLPACK_DLL __declspec(dllimport)
#endif
#else
#define DLPACK_DLL
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version a DLManagedTensorVersioned was produced against. */
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/* ------------------------------------------------------------------------------------------ */
/* Devices                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Where a tensor's memory lives. Stored as a 32-bit integer; a newer producer may send a value
 * this list does not name, so consumers must treat unknown values as an error, not as UB. */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  /* Host memory allocated by ordinary means (malloc, new, mmap). device_id is 0. */
  kDLCPU = 1,
  /* CUDA device memory. device_id is the CUDA ordinal. */
  kDLCUDA = 2,
  /* Page-locked (pinned) host memory from cudaMallocHost; readable by the CPU. device_id is 0. */
  kDLCUDAHost = 3,
  /* OpenCL: `data` is a cl_mem handle, so offsets go through byte_offset only. */
  kDLOpenCL = 4,
  /* Vulkan buffer (an opaque handle). */
  kDLVulkan = 7,
  /* Metal: `data` is an MTLBuffer handle. */
  kDLMetal = 8,
  /* Verilog simulator buffer. */
  kDLVPI = 9,
  /* ROCm/HIP device memory. */
  kDLROCM = 10,
  /* Pinned host memory from hipMallocHost; readable by the CPU. */
  kDLROCMHost = 11,
  /* Reserved for implementation-defined devices (extensions, tests, plug-ins). */
  kDLExtDev = 12,
  /* CUDA unified (managed) memory from cudaMallocManaged; readable by the CPU. device_id is 0. */
  kDLCUDAManaged = 13,
  /* Unified shared memory from oneAPI (SYCL). */
  kDLOneAPI = 14,
  /* WebGPU buffer. */
  kDLWebGPU = 15,
  /* Qualcomm Hexagon DSP. */
  kDLHexagon = 16,
  /* Microsoft MAIA. */
  kDLMAIA = 17,
  /* AWS Trainium. */
  kDLTrn = 18,
  /* Google TPU device memory (added after 1.3). */
  kDLTPU = 19,
  /* Host memory associated with a TPU (added after 1.3). */
  kDLTPUHost = 20
} DLDeviceType;

/* A device: its type and the ordinal of the device of that type. */
typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/* ------------------------------------------------------------------------------------------ */
/* Data types                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* The kind of number in one lane; stored in DLDataType.code as a uint8_t. */
typedef enum {
  /* Signed two's-complement integer. */
  kDLInt = 0U,
  /* Unsigned integer. */
  kDLUInt = 1U,
  /* IEEE 754 binary floating point (16, 32 or 64 bits). */
  kDLFloat = 2U,
  /* An opaque handle (a pointer-sized value a consumer must not interpret). */
  kDLOpaqueHandle = 3U,
  /* bfloat16: the upper 16 bits of an IEEE float32. */
  kDLBfloat = 4U,
  /* Complex number: two floats, real part first; `bits` counts both parts. */
  kDLComplex = 5U,
  /* Boolean stored in one byte per element (bits 8). */
  kDLBool = 6U,
  /* 8-bit floats (bits 8), named after their exponent/mantissa split and special values. */
  kDLFloat8_e3m4 = 7U,
  kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U,
  kDLFloat8_e4m3fn = 10U,
  kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U,
  kDLFloat8_e5m2fnuz = 13U,
  kDLFloat8_e8m0fnu = 14U,
  /* 6-bit floats (bits 6); packed unless IS_SUBBYTE_TYPE_PADDED is set. */
  kDLFloat6_e2m3fn = 15U,
  kDLFloat6_e3m2fn = 16U,
  /* 4-bit float (bits 4); packed unless IS_SUBBYTE_TYPE_PADDED is set. */
  kDLFloat4_e2m1fn = 17U,
  /* Complex number of two bfloat16 parts (added after 1.3). */
  kDLBcomplex = 18U
} DLDataTypeCode;

/* An element type: `lanes` values of `bits` bits each, of kind `code`. float32 is {2, 32, 1};
 * float32x4 is {2, 32, 4}. Data is always in the machine's native byte order.
 * Sub-byte types (bits < 8) are packed, little bit-endian: element i of a word is
 * (word >> (i * bits)) & mask, unless the tensor carries DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
 * in which case each element occupies one byte. */
typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

/* ------------------------------------------------------------------------------------------ */
/* Tensors                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* A non-owning description of an N-dimensional array.
 *  - The first element is at (char*)data + byte_offset. For devices whose `data` is an opaque
 *    handle (OpenCL, Metal, Vulkan, ...) byte_offset is the only way to offset; never do
 *    arithmetic on `data`. Consumers must not assume any alignment.
 *  - `shape` has `ndim` non-negative extents; ndim == 0 is a scalar with one element and
 *    shape/strides may then be NULL. Any extent 0 makes the tensor empty; `data` may be NULL then.
 *  - `strides` are counted in elements, not bytes, and may be negative. Since DLPack 1.2 a
 *    producer must set them when ndim > 0; consumers still accept NULL, meaning compact
 *    row-major (C order).
 */
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

/* The legacy managed tensor (DLPack 0.2 to 0.8). It carries no version and no flags.
 * The consumer calls deleter(self) exactly once when done; deleter may be NULL. */
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  /* The producer's context for the deleter; may be NULL. */
  void* manager_ctx;
  /* Frees manager_ctx's resources and the struct itself. May run on any thread. */
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

/* Flag bits of DLManagedTensorVersioned.flags. */

/* The consumer must not write through this tensor. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
/* The producer made a copy for this exchange: the consumer is the only owner of the memory. */
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
/* Sub-byte elements are each padded to a whole byte instead of being packed. */
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

/* The versioned managed tensor (DLPack 1.0 and later). Everything up to and including `flags`
 * keeps its place in every future major version, so a consumer can always read `version`, call
 * `deleter`, and read `flags`. Its layout differs from DLManagedTensor: dl_tensor comes last. */
typedef struct DLManagedTensorVersioned {
  /* The DLPack version this struct was produced against. Check version.major first. */
  DLPackVersion version;
  /* The producer's context for the deleter; may be NULL. */
  void* manager_ctx;
  /* Frees manager_ctx's resources and the struct itself; call exactly once. May be NULL. */
  void (*deleter)(struct DLManagedTensorVersioned* self);
  /* DLPACK_FLAG_BITMASK_* bits. */
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* ------------------------------------------------------------------------------------------ */
/* C exchange API (DLPack 1.3)                                                                */
/* ------------------------------------------------------------------------------------------ */
/* A framework exposes one static, process-lifetime DLPackExchangeAPI table so that C code can
 * exchange tensors with it without Python calls. Every entry returns 0 on success and -1 on
 * error, and never throws. In Python the table is found as type(x).__dlpack_c_exchange_api__,
 * a capsule named "dlpack_exchange_api". */

/* Allocates a new tensor like `prototype` (only its dtype, ndim, shape and device are read) in
 * the framework's allocator. On failure calls SetError(error_ctx, kind, message) once. */
typedef int (*DLPackManagedTensorAllocator)(DLTensor* prototype, DLManagedTensorVersioned** out,
                                            void* error_ctx,
                                            void (*SetError)(void* error_ctx, const char* kind,
                                                             const char* message));

/* Exports a framework object as an owning DLManagedTensorVersioned, without stream sync. */
typedef int (*DLPackManagedTensorFromPyObjectNoSync)(void* py_object,
                                                     DLManagedTensorVersioned** out);

/* Imports a DLManagedTensorVersioned, taking ownership, as a new framework object. */
typedef int (*DLPackManagedTensorToPyObjectNoSync)(DLManagedTensorVersioned* tensor,
                                                   void** out_py_object);

/* Fills the caller's DLTensor without transferring ownership; valid until control returns to
 * the framework. */
typedef int (*DLPackDLTensorFromPyObjectNoSync)(void* py_object, DLTensor* out);

/* Reports the framework's current work stream for a device (NULL for the CPU). */
typedef int (*DLPackCurrentWorkStream)(DLDeviceType device_type, int32_t device_id,
                                       void** out_current_stream);

/* The first member of every exchange table: its version, and a table for an older major
 * version (or NULL) so that older consumers can still find one they understand. */
typedef struct DLPackExchangeAPIHeader {
  DLPackVersion version;
  struct DLPackExchangeAPIHeader* prev_api;
} DLPackExchangeAPIHeader;

/* The exchange table. Only dltensor_from_py_object_no_sync may be NULL. */
typedef struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;
  DLPackManagedTensorAllocator managed_tensor_allocator;
  DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync;
  DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync;
  DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync;
  DLPackCurrentWorkStream current_work_stream;
} DLPackExchangeAPI;

/* ------------------------------------------------------------------------------------------ */
/* Layout checks (64-bit targets)                                                             */
/* ------------------------------------------------------------------------------------------ */
/* The sizes and offsets every DLPack implementation shares. A compiler that lays these structs
 * out differently cannot exchange tensors with anyone, so refuse to compile. */
#if defined(__cplusplus) && __cplusplus >= 201103L
#define DLPACK_LAYOUT_CHECK_(cond, name) static_assert(cond, #name)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define DLPACK_LAYOUT_CHECK_(cond, name) _Static_assert(cond, #name)
#else
#define DLPACK_LAYOUT_CHECK_(cond, name) typedef char dlpack_layout_check_##name[(cond) ? 1 : -1]
#endif

#if UINTPTR_MAX == UINT64_MAX
DLPACK_LAYOUT_CHECK_(sizeof(DLPackVersion) == 8, version_size);
DLPACK_LAYOUT_CHECK_(sizeof(DLDeviceType) == 4, device_type_size);
DLPACK_LAYOUT_CHECK_(sizeof(DLDevice) == 8, device_size);
DLPACK_LAYOUT_CHECK_(offsetof(DLDevice, device_id) == 4, device_id_offset);
DLPACK_LAYOUT_CHECK_(sizeof(DLDataType) == 4, dtype_size);
DLPACK_LAYOUT_CHECK_(offsetof(DLDataType, bits) == 1, dtype_bits_offset);
DLPACK_LAYOUT_CHECK_(offsetof(DLDataType, lanes) == 2, dtype_lanes_offset);
DLPACK_LAYOUT_CHECK_(sizeof(DLTensor) == 48, tensor_size);
DLPACK_LAYOUT_CHECK_(offsetof(DLTensor, device) == 8, tensor_device_offset);
DLPACK_LAYOUT_CHECK_(offsetof(DLTensor, ndim) == 16, tensor_ndim_offset);
DLPACK_LAYOUT_CHECK_(offsetof(DLTensor, dtype) == 20, tensor_dtype_offset);
DLPACK_LAYOUT_CHECK_(offsetof(DLTensor, shape) == 24, tensor_shape_offset);
DLPACK_LAYOUT_CHECK_(offsetof(DLTensor, strides) == 32, tensor_strides_offset);
DLPACK_LAYOUT_CHECK_(offsetof(DLTensor, byte_offset) == 40, tensor_byte_offset_offset);
DLPACK_LAYOUT_CHECK_(sizeof(DLManagedTensor) == 64, managed_size);
DLPACK_LAYOUT_CHECK_(offsetof(DLManagedTensor, manager_ctx) == 48, managed_ctx_offset);
DLPACK_LAYOUT_CHECK_(offsetof(DLManagedTensor, deleter) == 56, managed_deleter_offset);
DLPACK_LAYOUT_CHECK_(sizeof(DLManagedTensorVersioned) == 80, versioned_size);
DLPACK_LAYOUT_CHECK_(offsetof(DLManagedTensorVersioned, manager_ctx) == 8, versioned_ctx_offset);
DLPACK_LAYOUT_CHECK_(offsetof(DLManagedTensorVersioned, deleter) == 16,
                     versioned_deleter_offset);
DLPACK_LAYOUT_CHECK_(offsetof(DLManagedTensorVersioned, flags) == 24, versioned_flags_offset);
DLPACK_LAYOUT_CHECK_(offsetof(DLManagedTensorVersioned, dl_tensor) == 32,
                     versioned_tensor_offset);
DLPACK_LAYOUT_CHECK_(sizeof(DLPackExchangeAPIHeader) == 16, exchange_header_size);
DLPACK_LAYOUT_CHECK_(sizeof(DLPackExchangeAPI) == 56, exchange_api_size);
#endif

#undef DLPACK_LAYOUT_CHECK_

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DLPACK_DLPACK_H_ */
