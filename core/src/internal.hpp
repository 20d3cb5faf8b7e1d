// Internal declarations shared by the core's translation units. Nothing here is exported.
#ifndef DLBRIDGE_SRC_INTERNAL_HPP_
#define DLBRIDGE_SRC_INTERNAL_HPP_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dlbridge/dlbridge.h"

namespace dlb {

// ---- errors -------------------------------------------------------------------------------

// Formats a message into `error` (when non-NULL) and returns `status`, so that error paths read
// `return fail(error, DLB_ERR_..., "...", ...);`.
int fail(dlb_error* error, int status, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

// Appends "(2, 3)" for a shape or strides array to buffer[pos..size); returns the new position.
size_t format_dims(char* buffer, size_t size, size_t pos, int32_t ndim, const int64_t* dims);

// A short "(2, 3)" rendering kept on the stack for messages.
struct DimsText {
  char text[160];
  DimsText(int32_t ndim, const int64_t* dims);
};

// Name of a device type for messages: "cuda", or "device type 25" for one without a name.
struct DeviceTypeText {
  char text[32];
  explicit DeviceTypeText(int32_t device_type);
};

// Name of a dtype for messages: "float32", or "code 99 bits 8 lanes 1" for an invalid one.
struct DTypeText {
  char text[DLB_DTYPE_NAME_SIZE + 16];
  explicit DTypeText(DLDataType dtype);
};

// ---- dtypes -------------------------------------------------------------------------------

// The dtype codes this library knows, their names and their legal lane widths; indexed by
// DLDataTypeCode. Kept here so that validation, which runs on every import, inlines the check.
struct CodeInfo {
  const char* name;
  uint64_t widths;   // bit i set: a lane of i bits (i < 64) is legal
  bool allows_64;    // 64-bit lanes are legal
  bool allows_128;   // 128-bit lanes are legal
  bool fixed_width;  // the name already implies the width (bool, float8_*, ...)
};

constexpr uint64_t width_bit(int width) { return uint64_t{1} << width; }

// Indexed by DLDataTypeCode.
inline constexpr CodeInfo kCodes[] = {
    {"int", width_bit(1) | width_bit(2) | width_bit(4) | width_bit(8) | width_bit(16) | width_bit(32), true, false, false},
    {"uint", width_bit(1) | width_bit(2) | width_bit(4) | width_bit(8) | width_bit(16) | width_bit(32), true, false, false},
    {"float", width_bit(16) | width_bit(32), true, false, false},
    {"handle", width_bit(8) | width_bit(16) | width_bit(32), true, false, false},
    {"bfloat", width_bit(16), false, false, false},
    {"complex", width_bit(32), true, true, false},
    {"bool", width_bit(8), false, false, true},
    {"float8_e3m4", width_bit(8), false, false, true},
    {"float8_e4m3", width_bit(8), false, false, true},
    {"float8_e4m3b11fnuz", width_bit(8), false, false, true},
    {"float8_e4m3fn", width_bit(8), false, false, true},
    {"float8_e4m3fnuz", width_bit(8), false, false, true},
    {"float8_e5m2", width_bit(8), false, false, true},
    {"float8_e5m2fnuz", width_bit(8), false, false, true},
    {"float8_e8m0fnu", width_bit(8), false, false, true},
    {"float6_e2m3fn", width_bit(6), false, false, true},
    {"float6_e3m2fn", width_bit(6), false, false, true},
    {"float4_e2m1fn", width_bit(4), false, false, true},
    {"bcomplex", width_bit(32), false, false, false},
};
inline constexpr unsigned kCodeCount = sizeof(kCodes) / sizeof(kCodes[0]);

inline bool width_allowed(const CodeInfo& info, unsigned bits) {
  if (bits < 64) return ((info.widths >> bits) & 1u) != 0;
  if (bits == 64) return info.allows_64;
  return bits == 128 && info.allows_128;
}

// dlb_dtype_validate without the message: known code, legal bits, lanes >= 1.
inline bool dtype_is_valid(DLDataType dtype) {
  return dtype.code < kCodeCount && width_allowed(kCodes[dtype.code], dtype.bits) &&
         dtype.lanes != 0;
}

// ---- devices and backends -----------------------------------------------------------------

// True for devices whose `data` is a real address on which offsets may be computed; false for
// opaque handles (OpenCL cl_mem, Metal, Vulkan, WebGPU, ...) and implementation-defined types.
// Inline (a bit test): every validation and every new tensor asks.
inline constexpr uint32_t kPointerAddressableDeviceTypes =
    (1u << kDLCPU) | (1u << kDLCUDA) | (1u << kDLCUDAHost) | (1u << kDLROCM) |
    (1u << kDLROCMHost) | (1u << kDLCUDAManaged) | (1u << kDLOneAPI);
inline bool is_pointer_addressable(int32_t device_type) {
  return device_type >= 0 && device_type < 32 &&
         ((kPointerAddressableDeviceTypes >> device_type) & 1u) != 0;
}

// Tensors handed out for devices whose data is an address carry their offset in data, with
// byte_offset 0: PyTorch and other importers read data alone. Opaque handles keep byte_offset;
// empty tensors with NULL data address nothing and keep theirs. Validation guarantees that the
// sum does not wrap for tensors with elements.
inline void fold_offset(int32_t device_type, void** data, uint64_t* byte_offset) {
  if (*byte_offset != 0 && *data != nullptr && is_pointer_addressable(device_type)) {
    *data = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(*data) + *byte_offset);
    *byte_offset = 0;
  }
}

// The device types DLPack defines: 1 to 20 except 5 and 6 (regardless of registered backends).
inline constexpr uint32_t kStandardDeviceTypes = 0x1FFF9Eu;
inline bool is_standard_device_type(int32_t device_type) {
  return device_type >= 0 && device_type < 32 &&
         ((kStandardDeviceTypes >> device_type) & 1u) != 0;
}

// A registered backend. Reference-counted: the registry holds one reference while it is
// registered, every tensor allocated through it holds one, and every in-flight operation holds
// one, so unregistering never pulls a backend from under a user.
struct Backend {
  dlb_backend ops;
  char name[32];
  std::atomic<int64_t> refs;
};

// Returns a new reference to the backend serving `device_type` (not kDLCPU), or NULL.
Backend* acquire_backend(int32_t device_type);
void release_backend(Backend* backend);

// Every backend callback that can fail is called through call_backend: the backend gets a
// fresh report; its message is passed on as it is, and when it failed without one the caller's
// report names the backend and the operation: "backend 'NAME' failed in OPERATION with
// STATUS_NAME and gave no message".
int backend_failed(const Backend* backend, const char* operation, int status,
                   const dlb_error& report, dlb_error* error);
template <class Call>
int call_backend(const Backend* backend, const char* operation, dlb_error* error, Call&& call) {
  dlb_error report;
  report.message[0] = '\0';
  const int status = call(&report);
  return status == DLB_OK ? DLB_OK : backend_failed(backend, operation, status, report, error);
}

// Registers a backend without first registering the built-in ones (they use it themselves).
int register_backend(const dlb_backend* backend, dlb_error* error);

// The built-in device backends register themselves through these, once, the first time the
// registry is used. A backend built out of the library (-Dcuda=disabled) registers nothing.
// Registration touches no driver: the runtimes are loaded at the first real device call.
void register_cuda_backends();
void register_opencl_backend();

// Runs the backend's check_memory for a tensor entering the library (an unchecked device
// type, or one without a backend, passes). CPU tensors, the hot path, return at once.
int check_backend_memory(const DLTensor* tensor, uint64_t flags, dlb_error* error);
inline int check_device_memory(const DLTensor* tensor, uint64_t flags, dlb_error* error) {
  return tensor->device.device_type == kDLCPU ? DLB_OK : check_backend_memory(tensor, flags, error);
}

// ---- large CPU buffers (cpu_buffers.cc) ----------------------------------------------------

// CPU tensors of at least this many data bytes take their memory from take_large_cpu_buffer.
inline constexpr size_t kLargeCpuBufferBytes = size_t{4} << 20;
// At least `bytes` bytes, DLB_CPU_ALIGNMENT-aligned, within a 2 MiB-aligned buffer advised to use
// transparent huge pages: one kept since a tensor freed it when one fits, else a new one; NULL
// when there is no memory. The caller owns it through *release_ctx, and gives it back with
// give_back_large_cpu_buffer(*release_ctx) (a dlb_release_fn), from any thread.
char* take_large_cpu_buffer(size_t bytes, void** release_ctx);
void give_back_large_cpu_buffer(void* release_ctx);

// ---- tensor geometry ----------------------------------------------------------------------

// The one rule for which shapes exist, shared by validation, allocation, views and reshape:
// writes the product of `n` non-negative extents, which is 0 when any extent is 0 whatever the
// product of the others; returns false when a product without a 0 overflows 63 bits.
inline bool shape_product(int32_t n, const int64_t* shape, int64_t* out) {
  int64_t count = 1;
  bool empty = false, overflow = false;
  for (int32_t i = 0; i < n; ++i) {
    empty |= shape[i] == 0;
    overflow |= __builtin_mul_overflow(count, shape[i], &count);
  }
  *out = empty ? 0 : count;
  return empty || !overflow;
}

// The element layout facts every operation needs, computed once from a validated tensor.
struct Geometry {
  int64_t element_count;  // product of extents
  uint64_t element_bits;  // bits * lanes
  uint64_t unit_bits;     // bits from one element to the next: element_bits when packed,
                          // 8 * ceil(element_bits / 8) otherwise
  bool packed;            // sub-byte data stored without padding
  int64_t begin_bits;     // first bit touched, relative to data (byte_offset included)
  uint64_t span_bits;     // bits from begin_bits to the end of the last element (0 if empty)
};

// A rank and its shape array: 0 <= ndim <= DLB_MAX_NDIM ("ndim -1 is negative", "ndim 65
// exceeds the maximum of 64") and a shape where ndim > 0 ("shape is NULL but ndim is 2"). The one
// check behind validation, allocation and reshape.
int check_rank(int32_t ndim, const int64_t* shape, dlb_error* error);

// Every byte the elements of a validated tensor (geometry `g`) reach lies in [0, buffer_size)
// from its data pointer, else DLB_ERR_INVALID_ARGUMENT: "the tensor's elements reach bytes
// [B, E) of a buffer of N bytes". The one span check of dlb_tensor_wrap_buffer and the channel.
int check_buffer_span(const Geometry& g, uint64_t buffer_size, dlb_error* error);

// Every element starts on a byte of its own: whole-byte elements, padded sub-byte ones, and
// packed vectors of sub-byte lanes that fill whole bytes (int4x2). What element addresses and
// typed host access need.
inline bool has_byte_addresses(const Geometry& g) { return !g.packed || g.element_bits % 8 == 0; }

// Checks a device: a known type, device_id >= 0, and 0 for the CPU.
int check_device(DLDevice device, dlb_error* error);

// The host may touch the tensor's memory: the device is host-readable (else
// DLB_ERR_UNSUPPORTED naming it) and, when `writable`, the tensor is not READ_ONLY (else
// DLB_ERR_READ_ONLY). The one check behind dlb_tensor_host_data and dlb_tensor_element_data.
int check_host_access(const DLManagedTensorVersioned& tensor, int writable, dlb_error* error);

// The caller's element type is the tensor's (code, bits and lanes), else DLB_ERR_INVALID_ARGUMENT:
// "the tensor holds float32 elements, not int32". A `wanted` of all zeros accepts any dtype.
int check_element_type(DLDataType actual, DLDataType wanted, dlb_error* error);

// DLB_ERR_UNSUPPORTED for elements packed below a byte, which have no address of their own.
int refuse_packed(DLDataType dtype, dlb_error* error);

// Typed host access, in this order: a tensor (not NULL), valid (`geometry` filled), of
// `dtype`, whose elements take whole bytes, that the host may read (and write, with
// DLB_ACCESS_WRITE in `access`). The checks behind dlb_tensor_host_elements and
// dlb_tensor_typed_element.
int check_typed_host_access(const DLManagedTensorVersioned* tensor, DLDataType dtype,
                            uint32_t access, Geometry* geometry, dlb_error* error);

// Validates `tensor` (see dlb_tensor_validate) and fills `geometry` when it is not NULL.
int validate_tensor(const DLTensor* tensor, uint64_t flags, Geometry* geometry,
                    dlb_error* error);

// validate_tensor without the common case: the general fast path, which falls back to
// validate_tensor_slow for anything unusual.
int validate_tensor_general(const DLTensor* tensor, uint64_t flags, Geometry* geometry,
                            dlb_error* error);

// The slow path of validate_tensor, which the fast path falls back to for anything unusual;
// also the reference the differential fuzz target (tests/fuzz/fuzz_validate_diff) checks the
// fast path against. `tensor` must not be NULL. Never inlined: inlined into validate_tensor it
// made GCC spill the fast path's values to the stack and reload them (a byte stored, four bytes
// loaded: a store-forwarding stall), which cost every wrap and import about 3 ns.
int validate_tensor_slow(const DLTensor* tensor, uint64_t flags, Geometry* geometry,
                         dlb_error* error) __attribute__((noinline, cold));

// Checks ndim, shape, dtype and flags and computes the geometry of a tensor whose data pointer
// is not known yet (allocation); `strides` may be NULL.
int compute_geometry(int32_t ndim, const int64_t* shape, const int64_t* strides,
                     DLDataType dtype, uint64_t flags, uint64_t byte_offset, Geometry* geometry,
                     dlb_error* error);

bool is_subbyte_packed(DLDataType dtype, uint64_t flags);

// Every flag bit DLPack 1.3 defines.
constexpr uint64_t kKnownFlags = DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED |
                                 DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;

// Per dtype code, bit w / 8 set when one lane of w bits, w a multiple of 8, is legal: the
// common case of validation asks one table look-up for what width_allowed answers in three
// branches. Derived from kCodes, so that both read one table.
struct ByteWidths {
  uint32_t mask[kCodeCount];
};
constexpr ByteWidths make_byte_widths() {
  ByteWidths table{};
  for (unsigned code = 0; code < kCodeCount; ++code) {
    const CodeInfo& info = kCodes[code];
    for (unsigned bits = 8; bits < 64; bits += 8) {
      if (((info.widths >> bits) & 1u) != 0) table.mask[code] |= uint32_t{1} << (bits / 8);
    }
    if (info.allows_64) table.mask[code] |= uint32_t{1} << 8;
    if (info.allows_128) table.mask[code] |= uint32_t{1} << 16;
  }
  return table;
}
inline constexpr ByteWidths kByteWidths = make_byte_widths();

// A DLDevice read as one 64-bit word: {kDLCPU, 0}.
constexpr uint64_t kCpuDeviceWord = uint64_t{kDLCPU};

// The common case of validation, decided with few branches: a tensor on the CPU (one compare
// of the device as a word) or another device with addresses, of one lane of whole bytes, with known flags, a modest
// byte_offset and compact row-major strides (given or NULL), neither empty nor reaching 2^50
// elements. Returns false for everything else, valid or not, which the general path then
// decides; what it accepts, the general and slow paths accept with the same geometry
// (tests/fuzz/fuzz_validate_diff checks the three against each other). Fills `geometry` when
// it is not NULL.
inline bool validate_common(const DLTensor& t, uint64_t flags, Geometry* geometry) {
  uint64_t device;
  std::memcpy(&device, &t.device, sizeof device);
  if (device != kCpuDeviceWord) {
    const int32_t type = t.device.device_type;
    if (type == kDLCPU || !is_pointer_addressable(type) || t.device.device_id < 0) return false;
  }
  uint32_t dtype;
  std::memcpy(&dtype, &t.dtype, sizeof dtype);
  // One lane (the upper 16 bits) of a multiple of 8 bits (bits 8..10 clear).
  if ((dtype & 0xFFFF0700u) != 0x00010000u) return false;
  const uint32_t code = dtype & 0xFFu;
  const uint32_t bits = (dtype >> 8) & 0xFFu;
  if (code >= kCodeCount || ((kByteWidths.mask[code] >> (bits / 8)) & 1u) == 0) return false;
  const uint64_t byte_offset = t.byte_offset;
  if ((flags & ~kKnownFlags) != 0 || byte_offset > (uint64_t{1} << 56)) return false;
  const int32_t ndim = t.ndim;
  const int64_t* const shape = t.shape;
  const int64_t* const strides = t.strides;
  if (static_cast<uint32_t>(ndim) > DLB_MAX_NDIM || (shape == nullptr && ndim != 0)) return false;
  // The count of the dimensions after i is the compact stride of dimension i; a negative
  // extent sets the sign bit of `signs`.
  int64_t count = 1, signs = 0;
  if (strides == nullptr) {
    for (int32_t i = ndim - 1; i >= 0; --i) {
      signs |= shape[i];
      if (__builtin_mul_overflow(count, shape[i], &count)) return false;
    }
  } else {
    for (int32_t i = ndim - 1; i >= 0; --i) {
      if (strides[i] != count) return false;
      signs |= shape[i];
      if (__builtin_mul_overflow(count, shape[i], &count)) return false;
    }
  }
  constexpr int64_t kCommonCount = int64_t{1} << 50;
  if (signs < 0 || count == 0 || count > kCommonCount || t.data == nullptr) return false;
  // Below 2^50 elements of at most 128 bits and 2^56 bytes of offset, nothing here overflows.
  const uint64_t end = byte_offset + static_cast<uint64_t>(count) * (bits / 8);
  uintptr_t last;
  if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(t.data), end, &last)) return false;
  if (geometry == nullptr) return true;
  Geometry& g = *geometry;
  g.element_count = count;
  g.element_bits = bits;
  g.unit_bits = bits;
  g.packed = false;
  g.begin_bits = static_cast<int64_t>(byte_offset * 8);
  g.span_bits = static_cast<uint64_t>(count) * bits;
  return true;
}

// validate_tensor for the per-tensor paths (wrap, import), inlined there: the common case
// costs neither a call nor the callee-saved registers that a function of its own pushed and
// popped (its fallback needs all four arguments kept).
inline int validate_tensor_inline(const DLTensor* tensor, uint64_t flags, Geometry* geometry,
                                  dlb_error* error) {
  if (tensor != nullptr && validate_common(*tensor, flags, geometry)) return DLB_OK;
  return validate_tensor_general(tensor, flags, geometry, error);
}

// ---- dlbridge-made tensors ----------------------------------------------------------------

// Makes a new dlbridge tensor (its own block) that shares the memory of `base`, a dlbridge
// tensor, with the given layout. `shape`/`strides` are copied. Offsets are applied with
// apply_offset() beforehand.
int make_view(const DLManagedTensorVersioned* base, void* data, uint64_t byte_offset, int32_t ndim,
              const int64_t* shape, const int64_t* strides, uint64_t flags,
              DLManagedTensorVersioned** out, dlb_error* error);

// Moves the first element of a view by `delta_elements` elements of `geometry`: adjusts
// byte_offset (and, for pointer-addressable devices only, data when the offset would go
// negative). Refuses offsets that do not fall on a byte for packed sub-byte data.
int apply_offset(const DLTensor* tensor, const Geometry& geometry, int64_t delta_elements,
                 void** data, uint64_t* byte_offset, dlb_error* error);

// A new reference to the backend that serves `tensor`: the one that allocated it, which stays
// in charge of its memory even after another backend replaced it in the registry; otherwise
// the one registered for its device type now. NULL if there is none.
Backend* acquire_tensor_backend(const DLManagedTensorVersioned* tensor);

// The memory dlb_tensor_allocate reserves for a tensor: checks the device, the flags (no
// IS_COPIED) and the layout, and writes the offset of the first element from the start of the
// memory (what negative strides reach before it) and the bytes to reserve.
int allocation_layout(DLDevice device, DLDataType dtype, int32_t ndim, const int64_t* shape,
                      const int64_t* strides, uint64_t flags, uint64_t* byte_offset,
                      uint64_t* nbytes, dlb_error* error);

// The release context of the memory behind `tensor` (itself, or the tensor its view or share
// came from) when that memory was wrapped with `release`; NULL otherwise. How a part of the
// library recognises memory it wrapped itself (shareable segments).
void* release_context(const DLManagedTensorVersioned* tensor, dlb_release_fn release);

// True when memory wrapped with `release` and `ctx` may be reached by another process (a shared
// segment that was sent, or received without IS_COPIED): such memory is never exclusive to a
// tensor of this process. ipc/segment.cc answers it.
bool memory_is_exposed(dlb_release_fn release, void* ctx);

// ---- copies -------------------------------------------------------------------------------

// Copies the elements of `src` into `dst` (same shape and dtype, both validated: `gd` and `gs`
// are their geometries), routing through backends and host staging as needed. A non-NULL
// `stream` lets the backend queue the work (see dlb_tensor_copy_async).
int copy_elements(const DLManagedTensorVersioned* dst, const Geometry& gd,
                  const DLManagedTensorVersioned* src, const Geometry& gs, void* stream,
                  dlb_error* error);

// Copies between two host-readable tensors given as host pointers (device ignored), with the
// host kernels of copy_host.cc; source and destination may overlap.
int host_copy(const DLTensor* dst, const Geometry& gd, const DLTensor* src, const Geometry& gs,
              uint64_t src_flags, dlb_error* error);

// One dimension of a strided copy, strides in bytes (or in any unit both sides share).
struct StridedDim {
  int64_t n;   // extent
  int64_t ss;  // source stride
  int64_t ds;  // destination stride
};

// Orders dimensions outermost first by destination stride and merges the ones that are
// contiguous in both layouts. Extent-1 dimensions must already be dropped. Returns the number
// of dimensions left. Device backends use it to plan their copy kernels.
int32_t simplify_dims(StridedDim* dims, int32_t n);

}  // namespace dlb

#endif  // DLBRIDGE_SRC_INTERNAL_HPP_
