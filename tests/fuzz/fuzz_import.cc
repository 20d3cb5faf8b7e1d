// fuzz_import.cc - libFuzzer target for dlb_tensor_import / dlb_tensor_import_legacy.
//
// Each input describes a foreign producer's tensor: which managed struct (versioned or legacy),
// its version, flags, ndim, extents, strides (or NULL), dtype, device, byte_offset, and a real
// heap buffer (or NULL data). The producer's deleter counts its calls and frees everything it
// allocated. The target then checks the contract of dlbridge.h:
//  - an import consumes its argument: a rejected tensor's deleter has run exactly once when the
//    call returns, the status is not DLB_OK, the message is filled in and *out is NULL;
//  - a versioned tensor whose major version is not 1 is refused with
//    DLB_ERR_UNSUPPORTED_VERSION without reading anything past `deleter` (under ASan the rest of
//    the struct, the shape and strides arrays and the buffer are poisoned);
//  - import accepts exactly what dlb_tensor_validate accepts, and obviously valid CPU tensors
//    are accepted;
//  - an accepted tensor keeps the producer's fields; queries (element count, byte size, byte
//    span, strides, contiguity, alignment) agree with values computed here;
//  - views (slice, select, reshape, permute, transpose) have the expected shapes and address
//    the same bytes as the source; shares and the legacy export round trip work;
//  - copies are made only when the buffer really covers the tensor's byte span (so any read
//    outside it is a dlbridge bug that ASan reports), and hold the same bytes;
//  - the producer's deleter runs exactly once, only after the last view or share is freed;
//  - dlb_tensor_live_count() is back to its starting value after every input.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "fuzz_common.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DLB_FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(DLB_FUZZ_ASAN)
#define DLB_FUZZ_ASAN 1
#endif

#ifdef DLB_FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#define FUZZ_POISON(addr, size) ASAN_POISON_MEMORY_REGION((addr), (size))
#define FUZZ_UNPOISON(addr, size) ASAN_UNPOISON_MEMORY_REGION((addr), (size))
#else
#define FUZZ_POISON(addr, size) ((void)(addr), (void)(size))
#define FUZZ_UNPOISON(addr, size) ((void)(addr), (void)(size))
#endif

namespace {

using fuzz::Reader;

// Bits of the first input byte.
constexpr uint8_t kModeLegacy = 1u << 0;       // DLManagedTensor instead of the versioned struct
constexpr uint8_t kModeNullStrides = 1u << 1;  // strides == NULL
constexpr uint8_t kModeNullData = 1u << 2;     // data == NULL
constexpr uint8_t kModeNullShape = 1u << 3;    // shape == NULL
constexpr uint8_t kModeNullDeleter = 1u << 4;  // deleter == NULL (the producer frees later)
constexpr uint8_t kModeNullError = 1u << 5;    // pass no dlb_error to the import
constexpr uint8_t kModeRawVersion = 1u << 6;   // read major and minor as raw 32-bit values
constexpr uint8_t kModeNullImport = 1u << 7;   // also check that importing NULL is refused

constexpr uint64_t kKnownFlags = DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED |
                                 DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
constexpr uint64_t kMaxCopyBytes = uint64_t{1} << 20;  // copies allocate this much at most
constexpr int64_t kMaxVerifyElements = 4096;           // element-by-element comparisons
constexpr int kMaxViews = 16;

int64_t g_deleter_calls = 0;

// Everything the fake producer allocated for one tensor; it is the manager_ctx.
struct Producer {
  DLManagedTensorVersioned* versioned;
  DLManagedTensor* legacy;
  int64_t* shape;
  size_t shape_bytes;
  int64_t* strides;
  size_t strides_bytes;
  uint8_t* buffer;
  size_t buffer_alloc;
  bool poisoned;
};

void producer_destroy(Producer* p) {
  if (p->poisoned) {
    if (p->versioned != nullptr) FUZZ_UNPOISON(p->versioned, sizeof *p->versioned);
    if (p->shape != nullptr) FUZZ_UNPOISON(p->shape, p->shape_bytes);
    if (p->strides != nullptr) FUZZ_UNPOISON(p->strides, p->strides_bytes);
    if (p->buffer != nullptr) FUZZ_UNPOISON(p->buffer, p->buffer_alloc);
  }
  std::free(p->versioned);
  std::free(p->legacy);
  std::free(p->shape);
  std::free(p->strides);
  std::free(p->buffer);
  std::free(p);
}

void versioned_deleter(DLManagedTensorVersioned* self) {
  FUZZ_CHECK(self != nullptr);
  Producer* p = static_cast<Producer*>(self->manager_ctx);
  FUZZ_CHECK(p != nullptr && p->versioned == self);
  g_deleter_calls++;
  producer_destroy(p);
}

void legacy_deleter(DLManagedTensor* self) {
  FUZZ_CHECK(self != nullptr);
  Producer* p = static_cast<Producer*>(self->manager_ctx);
  FUZZ_CHECK(p != nullptr && p->legacy == self);
  g_deleter_calls++;
  producer_destroy(p);
}

// The producer's buffer: what copies may read and write.
struct Region {
  const uint8_t* begin;
  uint64_t size;
};

// ---- input decoding ---------------------------------------------------------------------------

int64_t decode_extent(Reader& in) {
  const uint8_t b = in.u8();
  if (b < 0xE0) return b & 7;                                // mostly small extents, 0 included
  if (b < 0xF0) return -static_cast<int64_t>(b & 0x0F) - 1;  // negative: invalid
  return in.i64();                                           // anything
}

int64_t decode_stride(Reader& in) {
  const uint8_t b = in.u8();
  if (b < 0xE0) return static_cast<int64_t>(b % 17) - 8;  // -8..8, negative and zero included
  return in.i64();
}

// Valid dtypes, so that most inputs get past dtype validation.
const DLDataType kDtypes[] = {
    {kDLInt, 8, 1},           {kDLInt, 16, 1},           {kDLInt, 32, 1},
    {kDLInt, 64, 1},          {kDLUInt, 8, 1},           {kDLUInt, 16, 1},
    {kDLUInt, 32, 1},         {kDLUInt, 64, 1},          {kDLInt, 4, 1},
    {kDLUInt, 1, 1},          {kDLUInt, 2, 1},           {kDLFloat, 16, 1},
    {kDLFloat, 32, 1},        {kDLFloat, 64, 1},         {kDLBfloat, 16, 1},
    {kDLComplex, 64, 1},      {kDLComplex, 128, 1},      {kDLBool, 8, 1},
    {kDLOpaqueHandle, 64, 1}, {kDLFloat8_e4m3fn, 8, 1},  {kDLFloat8_e5m2, 8, 1},
    {kDLFloat6_e2m3fn, 6, 1}, {kDLFloat6_e3m2fn, 6, 1},  {kDLFloat4_e2m1fn, 4, 1},
    {kDLBcomplex, 32, 1},     {kDLFloat8_e8m0fnu, 8, 1}, {kDLComplex, 32, 1},
};

DLDataType decode_dtype(Reader& in) {
  DLDataType dt;
  const uint8_t pick = in.u8();
  if (pick < 0xC0) {
    dt = kDtypes[pick % (sizeof kDtypes / sizeof kDtypes[0])];
  } else {
    dt.code = in.u8();
    dt.bits = in.u8();
    dt.lanes = 1;
  }
  const uint8_t lanes = in.u8();
  if (lanes >= 0xC0) dt.lanes = lanes == 0xFF ? in.u16() : static_cast<uint16_t>(lanes - 0xC0);
  return dt;
}

// ---- arithmetic oracles -----------------------------------------------------------------------

bool mul_i64(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool add_i64(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

// Product of the extents; false on a negative extent or overflow.
bool element_count(int32_t ndim, const int64_t* shape, int64_t* out) {
  int64_t n = 1;
  bool empty = false;
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] < 0) return false;
    if (shape[i] == 0) empty = true;
  }
  if (empty) {
    *out = 0;
    return true;
  }
  for (int32_t i = 0; i < ndim; i++) {
    if (!mul_i64(n, shape[i], &n)) return false;
  }
  *out = n;
  return true;
}

// Row-major strides, extents of 0 counting as 1 (as dlb_compact_strides documents). Returns
// the first dimension (counting down) whose stride no longer fits in 64 bits, or -1: that can
// only happen for an empty tensor, whose strides do not matter.
int32_t compact_strides(int32_t ndim, const int64_t* shape, int64_t* out) {
  int64_t s = 1;
  for (int32_t i = ndim - 1; i >= 0; i--) {
    out[i] = s;
    if (!mul_i64(s, shape[i] > 1 ? shape[i] : 1, &s)) {
      for (int32_t j = i - 1; j >= 0; j--) out[j] = 0;
      return i - 1;
    }
  }
  return -1;
}

// Bytes per element when lanes are whole bytes; false for sub-byte lanes.
bool whole_byte_element(DLDataType dt, int64_t* bytes) {
  if (dt.bits == 0 || dt.bits % 8 != 0) return false;
  *bytes = static_cast<int64_t>(dt.bits / 8) * dt.lanes;
  return true;
}

// Byte offset (from data, byte_offset included) of the element at idx.
bool element_offset(const DLTensor& t, const int64_t* strides, const int64_t* idx,
                    int64_t elem_bytes, int64_t* out) {
  if (t.byte_offset > static_cast<uint64_t>(INT64_MAX)) return false;
  int64_t elems = 0;
  for (int32_t i = 0; i < t.ndim; i++) {
    int64_t term;
    if (!mul_i64(idx[i], strides[i], &term) || !add_i64(elems, term, &elems)) return false;
  }
  int64_t bytes;
  if (!mul_i64(elems, elem_bytes, &bytes)) return false;
  return add_i64(bytes, static_cast<int64_t>(t.byte_offset), out);
}

// C-order (reverse=false) or Fortran-order (reverse=true) contiguity as dlbridge.h defines it.
bool contiguous(int32_t ndim, const int64_t* shape, const int64_t* strides, bool fortran) {
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] == 0) return true;
  }
  int64_t expect = 1;
  for (int32_t k = 0; k < ndim; k++) {
    const int32_t i = fortran ? k : ndim - 1 - k;
    if (shape[i] == 1) continue;
    if (strides[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

// Python's slice.indices(): the first index and the number of elements. `step` is not 0 and
// not DLB_SLICE_NONE (which means 1, like Python's None).
void python_slice(int64_t start, int64_t stop, int64_t step, int64_t length, int64_t* first,
                  int64_t* count) {
  const bool neg = step < 0;
  auto adjust = [&](int64_t v, int64_t dflt) {
    if (v == DLB_SLICE_NONE) return dflt;
    if (v < 0) {
      v += length;
      if (v < 0) v = neg ? -1 : 0;
    } else if (v >= length) {
      v = neg ? length - 1 : length;
    }
    return v;
  };
  const int64_t b = adjust(start, neg ? length - 1 : 0);
  const int64_t e = adjust(stop, neg ? -1 : length);
  *first = b;
  if (neg) {
    *count = e < b ? (b - e - 1) / (-step) + 1 : 0;
  } else {
    *count = b < e ? (e - b - 1) / step + 1 : 0;
  }
}

// Unravels a row-major linear index over shape.
void unravel(int64_t linear, int32_t ndim, const int64_t* shape, int64_t* idx) {
  for (int32_t i = ndim - 1; i >= 0; i--) {
    idx[i] = linear % shape[i];
    linear /= shape[i];
  }
}

// ---- checks on accepted tensors ---------------------------------------------------------------

bool get_strides(const DLManagedTensorVersioned* t, int64_t* out) {
  dlb_error err;
  const int s = dlb_tensor_get_strides(&t->dl_tensor, DLB_MAX_NDIM, out, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  return true;
}

int64_t count_of(const DLManagedTensorVersioned* t) {
  int64_t n = -1;
  dlb_error err;
  const int s = dlb_tensor_element_count(&t->dl_tensor, &n, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  return n;
}

// Whether [data + begin, data + begin + size) of t lies inside the producer's buffer.
bool covered(const DLManagedTensorVersioned* t, const Region& r) {
  int64_t begin = 0;
  int64_t size = 0;
  if (dlb_tensor_byte_span(&t->dl_tensor, t->flags, &begin, &size, nullptr) != DLB_OK) {
    return false;
  }
  if (size == 0) return true;
  if (t->dl_tensor.data == nullptr || r.begin == nullptr) return false;
  const uintptr_t data = reinterpret_cast<uintptr_t>(t->dl_tensor.data);
  const uintptr_t base = reinterpret_cast<uintptr_t>(r.begin);
  if (data < base || data - base > r.size) return false;
  const int64_t data_off = static_cast<int64_t>(data - base);
  int64_t lo;
  if (!add_i64(data_off, begin, &lo) || lo < 0) return false;
  if (static_cast<uint64_t>(size) > r.size) return false;
  return static_cast<uint64_t>(lo) <= r.size - size;
}

// Every query of dlbridge.h on a tensor that must be valid, against the oracles above.
void check_queries(const DLManagedTensorVersioned* t) {
  const DLTensor& d = t->dl_tensor;
  dlb_error err;
  int s = dlb_tensor_validate(&d, t->flags, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  FUZZ_CHECK(d.ndim >= 0 && d.ndim <= DLB_MAX_NDIM);
  FUZZ_CHECK(d.ndim == 0 || d.shape != nullptr);

  int64_t numel = -1;
  FUZZ_CHECK(element_count(d.ndim, d.shape, &numel));
  FUZZ_CHECK(count_of(t) == numel);

  // The compact size may overflow even for a valid tensor (zero strides broadcast a small
  // buffer to many elements); then both report DLB_ERR_OVERFLOW.
  uint64_t bytes = 0, expect_bytes = 0;
  s = dlb_tensor_byte_size(&d, t->flags, &bytes, &err);
  const int s2 = dlb_dtype_storage_size(d.dtype, numel, t->flags, &expect_bytes, nullptr);
  FUZZ_CHECK_MSG(s == s2, s, err);
  FUZZ_CHECK_MSG(s == DLB_OK || s == DLB_ERR_OVERFLOW, s, err);
  if (s == DLB_OK) FUZZ_CHECK(bytes == expect_bytes);

  int64_t strides[DLB_MAX_NDIM] = {};
  int64_t compact[DLB_MAX_NDIM] = {};
  int64_t theirs[DLB_MAX_NDIM] = {};
  get_strides(t, strides);
  const int32_t overflowed = compact_strides(d.ndim, d.shape, compact);
  FUZZ_CHECK(overflowed < 0 || numel == 0);
  dlb_compact_strides(d.ndim, d.shape, theirs);
  for (int32_t i = overflowed + 1; i < d.ndim; i++) {
    FUZZ_CHECK(theirs[i] == compact[i]);
    FUZZ_CHECK(strides[i] == (d.strides != nullptr ? d.strides[i] : compact[i]));
  }

  int64_t begin = 0;
  int64_t span = 0;
  s = dlb_tensor_byte_span(&d, t->flags, &begin, &span, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  FUZZ_CHECK(dlb_tensor_byte_span(&d, t->flags, nullptr, nullptr, nullptr) == DLB_OK);
  if (numel == 0) FUZZ_CHECK(span == 0);
  int64_t elem_bytes;
  if (numel > 0 && whole_byte_element(d.dtype, &elem_bytes)) {
    int64_t lo = 0, hi = 0;
    bool ok = true;
    for (int32_t i = 0; i < d.ndim && ok; i++) {
      int64_t reach;
      ok = mul_i64(strides[i], d.shape[i] - 1, &reach);
      if (ok) ok = reach < 0 ? add_i64(lo, reach, &lo) : add_i64(hi, reach, &hi);
    }
    int64_t want_begin, want_size, lo_bytes;
    ok = ok && mul_i64(lo, elem_bytes, &lo_bytes) &&
         d.byte_offset <= static_cast<uint64_t>(INT64_MAX) &&
         add_i64(static_cast<int64_t>(d.byte_offset), lo_bytes, &want_begin) &&
         mul_i64(hi - lo + 1, elem_bytes, &want_size);
    if (ok && (begin != want_begin || span != want_size)) {
      std::fprintf(stderr, "byte_span: begin %lld size %llu, want begin %lld size %lld\n",
                   static_cast<long long>(begin), static_cast<unsigned long long>(span),
                   static_cast<long long>(want_begin), static_cast<long long>(want_size));
      FUZZ_CHECK(begin == want_begin);
      FUZZ_CHECK(span == want_size);
    }
  }

  FUZZ_CHECK(dlb_tensor_is_c_contiguous(&d) ==
             (contiguous(d.ndim, d.shape, strides, false) ? 1 : 0));
  FUZZ_CHECK(dlb_tensor_is_f_contiguous(&d) ==
             (contiguous(d.ndim, d.shape, strides, true) ? 1 : 0));
  if (d.strides == nullptr) FUZZ_CHECK(dlb_tensor_is_c_contiguous(&d) == 1);

  FUZZ_CHECK(dlb_tensor_is_aligned(&d, 1) == 1);
  FUZZ_CHECK(dlb_tensor_is_aligned(&d, 0) == 0);
  FUZZ_CHECK(dlb_tensor_is_aligned(&d, 3) == 0);
  (void)dlb_tensor_is_aligned(&d, 64);
  FUZZ_CHECK(dlb_tensor_is_host_readable(&d) == dlb_device_is_host_readable(d.device));
  FUZZ_CHECK(dlb_tensor_flags(t) == t->flags);
  FUZZ_CHECK(dlb_tensor_is_read_only(t) ==
             ((t->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0 ? 1 : 0));
  FUZZ_CHECK(dlb_tensor_is_dlbridge(t) == 1);
}

// Compares every element of a (strided) tensor with the elements of another of the same shape.
void check_same_elements(const DLManagedTensorVersioned* a, const DLManagedTensorVersioned* b) {
  int64_t elem_bytes;
  if (!whole_byte_element(a->dl_tensor.dtype, &elem_bytes)) return;
  const int64_t numel = count_of(a);
  if (numel == 0 || numel > kMaxVerifyElements) return;
  int64_t sa[DLB_MAX_NDIM] = {}, sb[DLB_MAX_NDIM] = {}, idx[DLB_MAX_NDIM] = {};
  get_strides(a, sa);
  get_strides(b, sb);
  const auto* pa = static_cast<const uint8_t*>(a->dl_tensor.data);
  const auto* pb = static_cast<const uint8_t*>(b->dl_tensor.data);
  for (int64_t k = 0; k < numel; k++) {
    unravel(k, a->dl_tensor.ndim, a->dl_tensor.shape, idx);
    int64_t oa, ob;
    FUZZ_CHECK(element_offset(a->dl_tensor, sa, idx, elem_bytes, &oa));
    FUZZ_CHECK(element_offset(b->dl_tensor, sb, idx, elem_bytes, &ob));
    FUZZ_CHECK(std::memcmp(pa + oa, pb + ob, static_cast<size_t>(elem_bytes)) == 0);
  }
}

// A view's element at vidx must sit at the same address as the source's element that `map`
// gives for it. Checks the first and last elements and a few picked by the input.
template <typename Map>
void check_mapping(const DLManagedTensorVersioned* view, const DLManagedTensorVersioned* src,
                   Reader& in, Map map) {
  // Address-based devices: the offset is folded into data. Opaque handles: data never moves.
  if (fuzz::address_based(view->dl_tensor.device.device_type)) {
    if (view->dl_tensor.data != nullptr) FUZZ_CHECK(view->dl_tensor.byte_offset == 0);
  } else {
    FUZZ_CHECK(view->dl_tensor.data == src->dl_tensor.data);
  }
  int64_t elem_bytes;
  if (!whole_byte_element(src->dl_tensor.dtype, &elem_bytes)) return;
  const int64_t numel = count_of(view);
  if (numel == 0) return;
  int64_t sv[DLB_MAX_NDIM] = {}, ss[DLB_MAX_NDIM] = {}, vidx[DLB_MAX_NDIM] = {},
          sidx[DLB_MAX_NDIM] = {};
  get_strides(view, sv);
  get_strides(src, ss);
  for (int sample = 0; sample < 4; sample++) {
    int64_t linear = sample == 0   ? 0
                     : sample == 1 ? numel - 1
                                   : static_cast<int64_t>(in.u16()) % numel;
    unravel(linear, view->dl_tensor.ndim, view->dl_tensor.shape, vidx);
    map(vidx, sidx);
    int64_t ov, os;
    FUZZ_CHECK(element_offset(view->dl_tensor, sv, vidx, elem_bytes, &ov));
    FUZZ_CHECK(element_offset(src->dl_tensor, ss, sidx, elem_bytes, &os));
    // Compare addresses (wrapping arithmetic: nothing is dereferenced).
    const uintptr_t av =
        reinterpret_cast<uintptr_t>(view->dl_tensor.data) + static_cast<uintptr_t>(ov);
    const uintptr_t as =
        reinterpret_cast<uintptr_t>(src->dl_tensor.data) + static_cast<uintptr_t>(os);
    FUZZ_CHECK(av == as);
  }
}

// A refused call: not DLB_OK, *out set to NULL, a message filled in.
#define CHECK_FAILURE(status, out, err)              \
  do {                                               \
    FUZZ_CHECK_MSG((status) != DLB_OK, status, err); \
    FUZZ_CHECK((out) == nullptr);                    \
    FUZZ_CHECK(fuzz::error_filled(err));             \
  } while (0)

// Copies t to the CPU (when its span is inside the producer's buffer), compares, copies back.
void exercise_copy(DLManagedTensorVersioned* t, const Region& region) {
  uint64_t bytes = 0;
  if (dlb_tensor_byte_size(&t->dl_tensor, t->flags, &bytes, nullptr) != DLB_OK) return;
  if (bytes > kMaxCopyBytes) return;
  const bool host = dlb_device_is_host_readable(t->dl_tensor.device) != 0;
  const bool backend = dlb_backend_is_registered(t->dl_tensor.device.device_type) != 0;
  const bool inside = covered(t, region);
  // Memory that is neither host-readable nor served by a backend must never be read, so the
  // copy is safe to attempt even when the buffer does not cover it: it has to fail.
  if (!inside && (host || backend)) return;

  const DLDevice cpu = {kDLCPU, 0};
  DLManagedTensorVersioned* copy = reinterpret_cast<DLManagedTensorVersioned*>(&bytes);
  dlb_error err;
  fuzz::error_reset(&err);
  int s = dlb_tensor_copy(t, cpu, &copy, &err);
  if (!host && !backend) {
    // Nothing to read in an empty tensor: copying one needs no backend.
    if (s == DLB_OK && count_of(t) == 0) {
      dlb_tensor_free(copy);
    } else {
      CHECK_FAILURE(s, copy, err);
    }
    return;
  }
  if (host) FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  if (s != DLB_OK) {
    CHECK_FAILURE(s, copy, err);
    return;
  }
  FUZZ_CHECK(copy != nullptr && copy != t);
  FUZZ_CHECK(fuzz::error_untouched(err));
  FUZZ_CHECK((copy->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
  FUZZ_CHECK((copy->flags & DLPACK_FLAG_BITMASK_READ_ONLY) == 0);
  FUZZ_CHECK((copy->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) ==
             (t->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED));
  FUZZ_CHECK(copy->version.major == 1);
  FUZZ_CHECK(copy->dl_tensor.device.device_type == kDLCPU);
  FUZZ_CHECK(copy->dl_tensor.ndim == t->dl_tensor.ndim);
  FUZZ_CHECK(std::memcmp(&copy->dl_tensor.dtype, &t->dl_tensor.dtype, sizeof(DLDataType)) == 0);
  for (int32_t i = 0; i < t->dl_tensor.ndim; i++) {
    FUZZ_CHECK(copy->dl_tensor.shape[i] == t->dl_tensor.shape[i]);
  }
  FUZZ_CHECK(dlb_tensor_is_c_contiguous(&copy->dl_tensor) == 1);
  check_queries(copy);
  if (host) check_same_elements(t, copy);

  // A dlbridge tensor is imported as is.
  DLManagedTensorVersioned* same = nullptr;
  s = dlb_tensor_import(copy, &same, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  FUZZ_CHECK(same == copy);

  // And back into the producer's memory, which READ_ONLY forbids.
  if (host && inside) {
    fuzz::error_reset(&err);
    s = dlb_tensor_copy_into(copy, t, &err);
    if ((t->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0) {
      FUZZ_CHECK(s != DLB_OK);
      FUZZ_CHECK(fuzz::error_filled(err));
    } else {
      FUZZ_CHECK_MSG(s == DLB_OK, s, err);
      check_same_elements(t, copy);
    }
  }
  dlb_tensor_free(copy);
}

struct ViewList {
  DLManagedTensorVersioned* items[kMaxViews];
  int count = 0;
  void add(DLManagedTensorVersioned* t) {
    FUZZ_CHECK(count < kMaxViews);
    items[count++] = t;
  }
  void free_all() {
    for (int i = 0; i < count; i++) dlb_tensor_free(items[i]);
    count = 0;
  }
};

// Views that start somewhere else may be refused with DLB_ERR_LAYOUT when the start cannot be
// expressed: inside a byte of packed sub-byte data, or before an opaque handle (byte_offset is
// unsigned, and only plain addresses can absorb a negative offset).
bool offset_may_be_refused(const DLManagedTensorVersioned* t) {
  const bool packed =
      t->dl_tensor.dtype.bits < 8 && (t->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) == 0;
  switch (t->dl_tensor.device.device_type) {
    case kDLCPU:
    case kDLCUDA:
    case kDLCUDAHost:
    case kDLROCM:
    case kDLROCMHost:
    case kDLCUDAManaged:
    case kDLOneAPI:
      return packed;
    default:
      return true;
  }
}

void exercise_slice(DLManagedTensorVersioned* src, Reader& in, ViewList& views) {
  const int32_t ndim = src->dl_tensor.ndim;
  const uint8_t nb = in.u8();
  const int32_t nslices = nb == 0xFF ? ndim + 1 : static_cast<int32_t>(nb % (ndim + 1));
  dlb_slice slices[DLB_MAX_NDIM + 1] = {};
  bool expect_ok = nslices <= ndim;
  for (int32_t i = 0; i < nslices; i++) {
    auto bound = [&in]() {
      const uint8_t b = in.u8();
      return b == 0x80 ? DLB_SLICE_NONE : static_cast<int64_t>(static_cast<int8_t>(b));
    };
    slices[i].start = bound();
    slices[i].stop = bound();
    // Steps: DLB_SLICE_NONE (means 1), the extremes, 0 (refused), or small ones.
    const uint8_t st = in.u8();
    switch (st) {
      case 0x80:
        slices[i].step = DLB_SLICE_NONE;
        break;
      case 0x81:
        slices[i].step = INT64_MIN + 1;
        break;
      case 0x7E:
        slices[i].step = INT64_MAX;
        break;
      case 0x7F:
        slices[i].step = 0;
        break;
      default:
        slices[i].step = static_cast<int64_t>(st % 8) - 3;
        break;
    }
    if (slices[i].step == 0) expect_ok = false;
  }
  DLManagedTensorVersioned* view = reinterpret_cast<DLManagedTensorVersioned*>(&views);
  dlb_error err;
  fuzz::error_reset(&err);
  const int s = dlb_tensor_slice(src, nslices, slices, &view, &err);
  if (!expect_ok) {
    CHECK_FAILURE(s, view, err);
    return;
  }
  if (s == DLB_ERR_LAYOUT && offset_may_be_refused(src)) {
    CHECK_FAILURE(s, view, err);
    return;
  }
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  views.add(view);
  FUZZ_CHECK(view->dl_tensor.ndim == ndim);
  // Views carry the flags over, except IS_COPIED: an alias is never the sole owner.
  FUZZ_CHECK(view->flags == (src->flags & ~uint64_t{DLPACK_FLAG_BITMASK_IS_COPIED}));
  int64_t first[DLB_MAX_NDIM + 1] = {}, step[DLB_MAX_NDIM + 1] = {};
  for (int32_t i = 0; i < ndim; i++) {
    int64_t count = src->dl_tensor.shape[i];
    first[i] = 0;
    step[i] = 1;
    if (i < nslices) {
      step[i] = slices[i].step == DLB_SLICE_NONE ? 1 : slices[i].step;
      python_slice(slices[i].start, slices[i].stop, step[i], src->dl_tensor.shape[i], &first[i],
                   &count);
    }
    FUZZ_CHECK(view->dl_tensor.shape[i] == count);
  }
  check_queries(view);
  check_mapping(view, src, in, [&](const int64_t* v, int64_t* s_idx) {
    for (int32_t i = 0; i < ndim; i++) s_idx[i] = first[i] + v[i] * step[i];
  });
}

void exercise_select(DLManagedTensorVersioned* src, Reader& in, ViewList& views) {
  const int32_t ndim = src->dl_tensor.ndim;
  const int32_t axis = in.i8();
  const int64_t index = in.i8();
  const int32_t a = axis < 0 ? axis + ndim : axis;
  bool expect_ok = a >= 0 && a < ndim;
  int64_t i_norm = index;
  if (expect_ok) {
    const int64_t extent = src->dl_tensor.shape[a];
    i_norm = index < 0 ? index + extent : index;
    expect_ok = i_norm >= 0 && i_norm < extent;
  }
  DLManagedTensorVersioned* view = reinterpret_cast<DLManagedTensorVersioned*>(&views);
  dlb_error err;
  fuzz::error_reset(&err);
  const int s = dlb_tensor_select(src, axis, index, &view, &err);
  if (!expect_ok || (s == DLB_ERR_LAYOUT && offset_may_be_refused(src))) {
    CHECK_FAILURE(s, view, err);
    return;
  }
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  views.add(view);
  FUZZ_CHECK(view->dl_tensor.ndim == ndim - 1);
  for (int32_t i = 0, j = 0; i < ndim; i++) {
    if (i == a) continue;
    FUZZ_CHECK(view->dl_tensor.shape[j++] == src->dl_tensor.shape[i]);
  }
  check_queries(view);
  check_mapping(view, src, in, [&](const int64_t* v, int64_t* s_idx) {
    for (int32_t i = 0, j = 0; i < ndim; i++) s_idx[i] = i == a ? i_norm : v[j++];
  });
}

void exercise_reshape(DLManagedTensorVersioned* src, Reader& in, ViewList& views) {
  const int64_t numel = count_of(src);
  const int32_t n = in.u8() % 5;
  int64_t shape[4] = {};
  for (int32_t i = 0; i < n; i++) {
    const uint8_t b = in.u8();
    shape[i] = b == 0xFF ? -1 : b == 0xFE ? -2 : (b & 7);
  }
  if (n == 1 && shape[0] >= 0 && (in.u8() & 1) != 0) shape[0] = numel;  // plain flatten

  int minus_ones = 0;
  bool bad_extent = false;
  int64_t known = 1;  // product of the given extents (at most 4 of them, each <= 7, or numel)
  for (int32_t i = 0; i < n; i++) {
    if (shape[i] == -1) {
      minus_ones++;
    } else if (shape[i] < 0) {
      bad_extent = true;
    } else {
      known *= shape[i];
    }
  }
  // must_fail: the shape cannot hold numel elements. ambiguous: -1 next to a 0 extent.
  bool must_fail = bad_extent || minus_ones > 1;
  const bool ambiguous = !must_fail && minus_ones == 1 && known == 0;
  if (!must_fail && !ambiguous) {
    must_fail = minus_ones == 1 ? numel % known != 0 : known != numel;
  }
  int64_t want[4] = {};
  for (int32_t i = 0; i < n; i++) want[i] = shape[i] == -1 && known > 0 ? numel / known : shape[i];

  DLManagedTensorVersioned* view = reinterpret_cast<DLManagedTensorVersioned*>(&views);
  dlb_error err;
  fuzz::error_reset(&err);
  const int s = dlb_tensor_reshape(src, n, shape, &view, &err);
  if (must_fail) {
    CHECK_FAILURE(s, view, err);
    return;
  }
  if (s != DLB_OK) {
    CHECK_FAILURE(s, view, err);
    if (!ambiguous) {
      // Contiguous tensors can always be reshaped; others may need a copy first.
      FUZZ_CHECK_MSG(dlb_tensor_is_c_contiguous(&src->dl_tensor) == 0, s, err);
      FUZZ_CHECK_MSG(s == DLB_ERR_LAYOUT, s, err);
    }
    return;
  }
  views.add(view);
  FUZZ_CHECK(view->dl_tensor.ndim == n);
  if (!ambiguous) {
    for (int32_t i = 0; i < n; i++) FUZZ_CHECK(view->dl_tensor.shape[i] == want[i]);
  }
  FUZZ_CHECK(count_of(view) == numel);
  check_queries(view);
  // A reshape keeps the row-major order of the elements.
  const int32_t sdim = src->dl_tensor.ndim;
  const int64_t* vshape = view->dl_tensor.shape;
  check_mapping(view, src, in, [&](const int64_t* v, int64_t* s_idx) {
    int64_t linear = 0;
    for (int32_t i = 0; i < n; i++) linear = linear * vshape[i] + v[i];
    unravel(linear, sdim, src->dl_tensor.shape, s_idx);
  });
}

void exercise_permute(DLManagedTensorVersioned* src, Reader& in, ViewList& views) {
  const int32_t ndim = src->dl_tensor.ndim;
  const uint8_t how = in.u8();
  int32_t axes[DLB_MAX_NDIM + 1] = {};
  for (int32_t i = 0; i < ndim; i++) axes[i] = i;
  for (int32_t i = ndim - 1; i > 0; i--) {
    const int32_t j = static_cast<int32_t>(in.u8() % (i + 1));
    const int32_t tmp = axes[i];
    axes[i] = axes[j];
    axes[j] = tmp;
  }
  int32_t perm[DLB_MAX_NDIM + 1] = {};
  std::memcpy(perm, axes, sizeof(int32_t) * static_cast<size_t>(ndim));
  bool expect_ok = true;
  int32_t naxes = ndim;
  if ((how & 1) != 0 && ndim > 0) {
    for (int32_t i = 0; i < ndim; i++) axes[i] -= ndim;  // negative axes count from the end
  }
  if ((how & 2) != 0 && ndim >= 2) {
    axes[0] = axes[1];  // not a permutation
    expect_ok = false;
  }
  if ((how & 4) != 0) {
    axes[ndim] = 0;  // one axis too many
    naxes = ndim + 1;
    expect_ok = false;
  }
  if ((how & 8) != 0 && ndim > 0) {
    axes[0] = ndim;  // out of range
    expect_ok = false;
  }
  DLManagedTensorVersioned* view = reinterpret_cast<DLManagedTensorVersioned*>(&views);
  dlb_error err;
  fuzz::error_reset(&err);
  const int s = dlb_tensor_permute(src, naxes, axes, &view, &err);
  if (!expect_ok) {
    CHECK_FAILURE(s, view, err);
    return;
  }
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  views.add(view);
  FUZZ_CHECK(view->dl_tensor.ndim == ndim);
  for (int32_t i = 0; i < ndim; i++)
    FUZZ_CHECK(view->dl_tensor.shape[i] == src->dl_tensor.shape[perm[i]]);
  check_queries(view);
  check_mapping(view, src, in, [&](const int64_t* v, int64_t* s_idx) {
    for (int32_t i = 0; i < ndim; i++) s_idx[perm[i]] = v[i];
  });
}

void exercise_transpose(DLManagedTensorVersioned* src, Reader& in, ViewList& views) {
  const int32_t ndim = src->dl_tensor.ndim;
  DLManagedTensorVersioned* view = nullptr;
  dlb_error err;
  const int s = dlb_tensor_transpose(src, &view, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  views.add(view);
  FUZZ_CHECK(view->dl_tensor.ndim == ndim);
  for (int32_t i = 0; i < ndim; i++) {
    FUZZ_CHECK(view->dl_tensor.shape[i] == src->dl_tensor.shape[ndim - 1 - i]);
  }
  check_queries(view);
  check_mapping(view, src, in, [&](const int64_t* v, int64_t* s_idx) {
    for (int32_t i = 0; i < ndim; i++) s_idx[ndim - 1 - i] = v[i];
  });
}

// `a` (handed out by dlbridge) starts where `b` does: the same data and byte_offset, or, for an
// address-based device with non-NULL data, data + byte_offset folded into a.data.
bool same_origin(const DLTensor& a, const DLTensor& b) {
  if (a.data == b.data && a.byte_offset == b.byte_offset) return true;
  return fuzz::address_based(b.device.device_type) && b.data != nullptr && a.byte_offset == 0 &&
         reinterpret_cast<uintptr_t>(a.data) == reinterpret_cast<uintptr_t>(b.data) + b.byte_offset;
}

bool same_tensor_fields(const DLTensor& a, const DLTensor& b) {
  if (!same_origin(a, b) || a.ndim != b.ndim) return false;
  if (a.device.device_type != b.device.device_type || a.device.device_id != b.device.device_id) {
    return false;
  }
  if (std::memcmp(&a.dtype, &b.dtype, sizeof a.dtype) != 0) return false;
  for (int32_t i = 0; i < a.ndim; i++) {
    if (a.shape[i] != b.shape[i]) return false;
  }
  return true;
}

// share -> export as legacy -> import the legacy tensor again.
void exercise_share_and_legacy(DLManagedTensorVersioned* src, Reader& in, ViewList& views) {
  static const uint64_t kAdd[] = {0, DLPACK_FLAG_BITMASK_READ_ONLY, DLPACK_FLAG_BITMASK_IS_COPIED,
                                  DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED};
  const uint64_t add = kAdd[in.u8() % 4];
  DLManagedTensorVersioned* share = reinterpret_cast<DLManagedTensorVersioned*>(&views);
  dlb_error err;
  fuzz::error_reset(&err);
  int s = dlb_tensor_share(src, add, &share, &err);
  if (add != 0 && add != DLPACK_FLAG_BITMASK_READ_ONLY) {
    CHECK_FAILURE(s, share, err);
    return;
  }
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  FUZZ_CHECK(share != nullptr && share != src);
  FUZZ_CHECK(share->flags == ((src->flags | add) & ~uint64_t{DLPACK_FLAG_BITMASK_IS_COPIED}));
  FUZZ_CHECK(same_tensor_fields(share->dl_tensor, src->dl_tensor));
  check_queries(share);

  DLManagedTensor* legacy = reinterpret_cast<DLManagedTensor*>(&views);
  fuzz::error_reset(&err);
  s = dlb_tensor_export_legacy(share, &legacy, &err);
  const uint64_t special =
      DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
  const bool read_only = (share->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  const bool padded_subbyte = (share->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) != 0 &&
                              dlb_dtype_is_subbyte(share->dl_tensor.dtype) != 0;
  if (read_only) FUZZ_CHECK_MSG(s != DLB_OK, s, err);
  if (read_only && !padded_subbyte) FUZZ_CHECK_MSG(s == DLB_ERR_READ_ONLY, s, err);
  if (padded_subbyte && !read_only) FUZZ_CHECK_MSG(s == DLB_ERR_UNSUPPORTED, s, err);
  if ((share->flags & special) == 0) FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  if (s != DLB_OK) {
    FUZZ_CHECK(legacy == nullptr);
    FUZZ_CHECK(fuzz::error_filled(err));
    views.add(share);  // still ours
    return;
  }
  FUZZ_CHECK(legacy != nullptr);
  FUZZ_CHECK(same_tensor_fields(legacy->dl_tensor, src->dl_tensor));

  DLManagedTensorVersioned* back = nullptr;
  s = dlb_tensor_import_legacy(legacy, &back, &err);
  FUZZ_CHECK_MSG(s == DLB_OK, s, err);
  FUZZ_CHECK(back != nullptr);
  FUZZ_CHECK(back->flags == 0);
  FUZZ_CHECK(same_tensor_fields(back->dl_tensor, src->dl_tensor));
  check_queries(back);
  views.add(back);
}

// True when a CPU tensor is plainly valid by the facts page, so import must accept it.
bool obviously_valid(const DLTensor& t, uint64_t flags) {
  if (t.ndim < 0 || t.ndim > DLB_MAX_NDIM) return false;
  if (t.ndim > 0 && t.shape == nullptr) return false;
  if (t.device.device_type != kDLCPU || t.device.device_id != 0) return false;
  if ((flags & ~kKnownFlags) != 0) return false;
  if (dlb_dtype_validate(t.dtype, nullptr) != DLB_OK) return false;
  if (t.dtype.bits < 8 && t.strides != nullptr) return false;  // strided packed sub-byte data
  if (t.byte_offset > (uint64_t{1} << 32)) return false;
  int64_t numel = 1;
  for (int32_t i = 0; i < t.ndim; i++) {
    if (t.shape[i] < 0 || t.shape[i] > 7) return false;
    if (t.strides != nullptr && (t.strides[i] < -8 || t.strides[i] > 8)) return false;
    numel *= t.shape[i];
    if (numel > (int64_t{1} << 24)) return false;
  }
  if (static_cast<uint64_t>(numel) * t.dtype.bits * t.dtype.lanes > (uint64_t{1} << 40)) {
    return false;
  }
  return t.data != nullptr || numel == 0;
}

// True when the tensor breaks a rule that needs no arithmetic, so import must refuse it.
bool obviously_invalid(const DLTensor& t, uint64_t flags) {
  if (t.ndim < 0 || t.ndim > DLB_MAX_NDIM) return true;
  if (t.ndim > 0 && t.shape == nullptr) return true;
  if ((flags & ~kKnownFlags) != 0) return true;
  if (t.dtype.lanes == 0) return true;
  if (dlb_dtype_validate(t.dtype, nullptr) != DLB_OK) return true;
  if (!dlb_device_type_is_known(t.device.device_type)) return true;
  if (t.device.device_id < 0) return true;
  if (t.device.device_type == kDLCPU && t.device.device_id != 0) return true;
  bool empty = false;
  for (int32_t i = 0; i < t.ndim; i++) {
    if (t.shape[i] < 0) return true;
    if (t.shape[i] == 0) empty = true;
  }
  return t.data == nullptr && !empty;
}

void check_null_imports() {
  dlb_error err;
  fuzz::error_reset(&err);
  DLManagedTensorVersioned* out = reinterpret_cast<DLManagedTensorVersioned*>(&err);
  int s = dlb_tensor_import(nullptr, &out, &err);
  CHECK_FAILURE(s, out, err);
  fuzz::error_reset(&err);
  out = reinterpret_cast<DLManagedTensorVersioned*>(&err);
  s = dlb_tensor_import_legacy(nullptr, &out, &err);
  CHECK_FAILURE(s, out, err);
  dlb_tensor_free(nullptr);
  dlb_tensor_free_legacy(nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in(data, size);
  const int64_t live_before = dlb_tensor_live_count();
  const int64_t deletes_before = g_deleter_calls;

  const uint8_t mode = in.u8();
  const bool legacy = (mode & kModeLegacy) != 0;
  if ((mode & kModeNullImport) != 0) check_null_imports();

  uint32_t major = 1;
  uint32_t minor = 0;
  if ((mode & kModeRawVersion) != 0) {
    major = in.u32();
    minor = in.u32();
  } else {
    minor = in.u8();
  }
  const uint8_t flag_byte = in.u8();
  const uint64_t flags = legacy ? 0 : flag_byte == 0xFF ? in.u64() : (flag_byte & 0x0F);

  const int32_t ndim = in.i8();
  const size_t dims = ndim > 0 ? static_cast<size_t>(ndim) : 0;

  auto* p = static_cast<Producer*>(std::calloc(1, sizeof(Producer)));
  FUZZ_CHECK(p != nullptr);
  // Arrays get exactly ndim entries (1 byte when ndim <= 0), so reading past them is caught.
  if ((mode & kModeNullShape) == 0) {
    p->shape_bytes = dims > 0 ? dims * sizeof(int64_t) : 1;
    p->shape = static_cast<int64_t*>(std::malloc(p->shape_bytes));
    FUZZ_CHECK(p->shape != nullptr);
    for (size_t i = 0; i < dims; i++) p->shape[i] = decode_extent(in);
  }
  if ((mode & kModeNullStrides) == 0) {
    p->strides_bytes = dims > 0 ? dims * sizeof(int64_t) : 1;
    p->strides = static_cast<int64_t*>(std::malloc(p->strides_bytes));
    FUZZ_CHECK(p->strides != nullptr);
    for (size_t i = 0; i < dims; i++) p->strides[i] = decode_stride(in);
  }

  DLTensor t;
  std::memset(&t, 0, sizeof t);
  t.ndim = ndim;
  t.shape = p->shape;
  t.strides = p->strides;
  t.dtype = decode_dtype(in);
  const uint8_t dev = in.u8();
  const int32_t device_type = dev < 0x80 ? kDLCPU : dev < 0xFF ? dev - 0x80 : in.i32();
  t.device.device_type = static_cast<DLDeviceType>(device_type);
  const uint8_t id = in.u8();
  t.device.device_id = id < 0xF0 ? 0 : in.i8();
  const uint8_t off = in.u8();
  t.byte_offset = off < 0xF0 ? (off & 0x3F) : in.u64();
  const size_t buffer_size = in.u16() & 0x1FFF;
  const size_t pre = in.u16() % (buffer_size + 1);
  Region region = {nullptr, 0};
  if ((mode & kModeNullData) == 0) {
    p->buffer_alloc = buffer_size > 0 ? buffer_size : 1;
    p->buffer = static_cast<uint8_t*>(std::malloc(p->buffer_alloc));
    FUZZ_CHECK(p->buffer != nullptr);
    for (size_t i = 0; i < p->buffer_alloc; i++) p->buffer[i] = static_cast<uint8_t>(i * 131 + 7);
    region.begin = p->buffer;
    region.size = buffer_size;
    t.data = p->buffer + pre;
  }

  const bool has_deleter = (mode & kModeNullDeleter) == 0;
  if (legacy) {
    p->legacy = static_cast<DLManagedTensor*>(std::calloc(1, sizeof(DLManagedTensor)));
    FUZZ_CHECK(p->legacy != nullptr);
    p->legacy->dl_tensor = t;
    p->legacy->manager_ctx = p;
    p->legacy->deleter = has_deleter ? legacy_deleter : nullptr;
  } else {
    p->versioned =
        static_cast<DLManagedTensorVersioned*>(std::calloc(1, sizeof(DLManagedTensorVersioned)));
    FUZZ_CHECK(p->versioned != nullptr);
    p->versioned->version.major = major;
    p->versioned->version.minor = minor;
    p->versioned->manager_ctx = p;
    p->versioned->deleter = has_deleter ? versioned_deleter : nullptr;
    p->versioned->flags = flags;
    p->versioned->dl_tensor = t;
  }

  // What validation alone says about these fields (read before the import consumes them).
  dlb_error verr;
  fuzz::error_reset(&verr);
  const int vstatus = dlb_tensor_validate(&t, flags, &verr);
  if (vstatus == DLB_OK) {
    FUZZ_CHECK(fuzz::error_untouched(verr));
  } else {
    FUZZ_CHECK(fuzz::error_filled(verr));
  }
  if (obviously_valid(t, flags)) FUZZ_CHECK_MSG(vstatus == DLB_OK, vstatus, verr);
  if (obviously_invalid(t, flags)) FUZZ_CHECK(vstatus != DLB_OK);

  const bool wrong_major = !legacy && major != 1;
  if (wrong_major) {
    // Only version, manager_ctx and deleter may be read: poison the rest.
    p->poisoned = true;
    const size_t keep = offsetof(DLManagedTensorVersioned, flags);
    FUZZ_POISON(reinterpret_cast<uint8_t*>(p->versioned) + keep,
                sizeof(DLManagedTensorVersioned) - keep);
    if (p->shape != nullptr) FUZZ_POISON(p->shape, p->shape_bytes);
    if (p->strides != nullptr) FUZZ_POISON(p->strides, p->strides_bytes);
    if (p->buffer != nullptr) FUZZ_POISON(p->buffer, p->buffer_alloc);
  }

  dlb_error err;
  fuzz::error_reset(&err);
  dlb_error* errp = (mode & kModeNullError) != 0 ? nullptr : &err;
  DLManagedTensorVersioned* out = reinterpret_cast<DLManagedTensorVersioned*>(&err);
  const int status = legacy ? dlb_tensor_import_legacy(p->legacy, &out, errp)
                            : dlb_tensor_import(p->versioned, &out, errp);

  if (wrong_major) {
    FUZZ_CHECK_MSG(status == DLB_ERR_UNSUPPORTED_VERSION, status, err);
  } else {
    FUZZ_CHECK_MSG((status == DLB_OK) == (vstatus == DLB_OK), status, err);
  }

  if (status != DLB_OK) {
    FUZZ_CHECK(out == nullptr);
    if (errp != nullptr) FUZZ_CHECK(fuzz::error_filled(err));
    FUZZ_CHECK(g_deleter_calls == deletes_before + (has_deleter ? 1 : 0));
    FUZZ_CHECK(dlb_tensor_live_count() == live_before);
    if (!has_deleter) producer_destroy(p);  // nobody else will
    return 0;
  }

  // Accepted: nothing deleted yet, the producer's fields kept.
  FUZZ_CHECK(out != nullptr);
  if (errp != nullptr) FUZZ_CHECK(fuzz::error_untouched(err));
  FUZZ_CHECK(g_deleter_calls == deletes_before);
  FUZZ_CHECK(dlb_tensor_live_count() == live_before + 1);
  FUZZ_CHECK(out->version.major == 1);
  FUZZ_CHECK(out->flags == flags);
  FUZZ_CHECK(same_tensor_fields(out->dl_tensor, t));
  check_queries(out);

  const uint8_t ops = in.remaining() > 0 ? in.u8() : 0x7F;
  ViewList views;
  if ((ops & 0x01) != 0) exercise_slice(out, in, views);
  if ((ops & 0x02) != 0) exercise_select(out, in, views);
  if ((ops & 0x04) != 0) exercise_reshape(out, in, views);
  if ((ops & 0x08) != 0) exercise_permute(out, in, views);
  if ((ops & 0x10) != 0) exercise_transpose(out, in, views);
  if ((ops & 0x20) != 0) exercise_share_and_legacy(out, in, views);
  if ((ops & 0x40) != 0) {
    exercise_copy(out, region);
    for (int i = 0; i < views.count; i++) exercise_copy(views.items[i], region);
  }
  FUZZ_CHECK(g_deleter_calls == deletes_before);

  if ((ops & 0x80) != 0) {
    // Free the import first: the views and shares keep the producer's memory alive.
    dlb_tensor_free(out);
    if (views.count > 0) FUZZ_CHECK(g_deleter_calls == deletes_before);
    views.free_all();
  } else {
    views.free_all();
    FUZZ_CHECK(g_deleter_calls == deletes_before);
    dlb_tensor_free(out);
  }
  FUZZ_CHECK(g_deleter_calls == deletes_before + (has_deleter ? 1 : 0));
  FUZZ_CHECK(dlb_tensor_live_count() == live_before);
  if (!has_deleter) producer_destroy(p);
  return 0;
}
