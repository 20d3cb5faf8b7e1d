// fuzz_validate_diff: a differential target. On every DLTensor the input describes, malformed
// ones included, the fast validation path (dlb::validate_tensor) and the slow one
// (dlb::validate_tensor_slow) must agree on status, message and geometry, and every query
// (element count, byte size, byte span, contiguity) must agree with validation and with a
// naive reference computed here in 128-bit arithmetic. Shapes that validation accepts as empty
// must also be accepted by allocate and by reshape (one rule for which shapes exist).
//
// Input: ndim byte, per-dimension extent and stride codes, dtype, device, flags, byte_offset
// and data codes (see read_tensor); a value code of 0xFF is followed by a raw 64-bit value.
#include "fuzz_common.h"

#include "../../core/src/internal.hpp"

namespace {

__extension__ typedef __int128 int128;

constexpr int kMaxDims = 70;  // above DLB_MAX_NDIM on purpose

struct Input {
  DLTensor t{};
  uint64_t flags = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

int64_t small_or_raw(fuzz::Reader& in, int64_t lo) {
  const uint8_t c = in.u8();
  return c == 0xFF ? in.i64() : lo + static_cast<int64_t>(c % 16);
}

void read_tensor(fuzz::Reader& in, Input* x) {
  DLTensor& t = x->t;
  const uint8_t n = in.u8();
  t.ndim = n < 0xF0 ? n % 6 : n == 0xF0 ? -1 - static_cast<int32_t>(in.u8() % 4)
                              : n == 0xF1 ? 60 + in.u8() % (kMaxDims - 59)
                                          : in.i32();
  const int32_t dims = t.ndim > 0 ? (t.ndim < kMaxDims ? t.ndim : kMaxDims) : 0;
  for (int32_t i = 0; i < dims; ++i) {
    x->shape[i] = small_or_raw(in, -1);
    x->strides[i] = small_or_raw(in, -8);
  }
  const uint8_t mode = in.u8();
  t.shape = (mode & 1) != 0 && dims == t.ndim ? nullptr : x->shape;
  t.strides = (mode & 2) != 0 ? nullptr : x->strides;
  if (t.ndim > kMaxDims) t.shape = nullptr;  // never read past our arrays
  if (t.ndim > kMaxDims) t.strides = nullptr;
  static const DLDataType kTypes[] = {{kDLFloat, 32, 1}, {kDLInt, 8, 1},  {kDLInt, 4, 1},
                                      {kDLUInt, 1, 1},   {kDLFloat6_e2m3fn, 6, 1},
                                      {kDLComplex, 128, 1}, {kDLFloat, 32, 3}, {kDLUInt, 2, 3},
                                      {kDLBool, 8, 1},   {kDLFloat, 64, 1000}};
  const uint8_t d = in.u8();
  t.dtype = d < 0xF0 ? kTypes[d % (sizeof kTypes / sizeof kTypes[0])]
                     : DLDataType{in.u8(), in.u8(), in.u16()};
  const uint8_t dev = in.u8();
  t.device.device_type = static_cast<DLDeviceType>(dev < 0xF0 ? dev % 22 : in.i32());
  t.device.device_id = (mode & 4) != 0 ? in.i32() : 0;
  const uint8_t f = in.u8();
  x->flags = f < 0xF0 ? f % 8 : in.u64();
  const uint8_t off = in.u8();
  t.byte_offset = off < 0xF0 ? off % 64 : in.u64();
  static const uintptr_t kData[] = {0, 0x1000, uintptr_t{1} << 40, UINTPTR_MAX - 0xFFF};
  const uint8_t p = in.u8();
  t.data = reinterpret_cast<void*>(p < 0xF0 ? kData[p % 4] : static_cast<uintptr_t>(in.u64()));
}

// The type of dlb_tensor_byte_span's size output, whichever integer the header gives it.
template <class F>
struct SpanSize;
template <class R, class A, class B, class C, class S, class E>
struct SpanSize<R (*)(A, B, C, S*, E)> {
  using type = S;
};

// ---- the naive reference ----------------------------------------------------------------

// ndim in range, shape present, no negative extent, count within 63 bits (0 if any extent is 0).
bool naive_count(const DLTensor& t, int128* count) {
  if (t.ndim < 0 || t.ndim > DLB_MAX_NDIM || (t.ndim > 0 && t.shape == nullptr)) return false;
  bool empty = false;
  for (int32_t i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0) return false;
    empty = empty || t.shape[i] == 0;
  }
  if (empty) {
    *count = 0;
    return true;
  }
  int128 c = 1;
  for (int32_t i = 0; i < t.ndim; ++i) {
    c *= t.shape[i];
    if (c > INT64_MAX) return false;
  }
  *count = c;
  return true;
}

int64_t stride_of(const DLTensor& t, int32_t i) {
  if (t.strides != nullptr) return t.strides[i];
  int64_t s = 1;
  for (int32_t k = t.ndim - 1; k > i; --k) s *= t.shape[k] > 1 ? t.shape[k] : 1;
  return s;
}

bool naive_contiguous(const DLTensor& t, bool c_order) {
  int128 count;
  if (!naive_count(t, &count)) return false;
  if (count == 0) return true;
  int128 expected = 1;
  for (int32_t k = 0; k < t.ndim; ++k) {
    const int32_t i = c_order ? t.ndim - 1 - k : k;
    if (t.shape[i] == 1) continue;
    if (stride_of(t, i) != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  Input x;
  read_tensor(in, &x);
  const DLTensor& t = x.t;

  // Fast and slow validation agree on everything.
  dlb::Geometry fast{}, slow{};
  dlb_error fast_err, slow_err;
  fuzz::error_reset(&fast_err);
  fuzz::error_reset(&slow_err);
  const int fs = dlb::validate_tensor(&t, x.flags, &fast, &fast_err);
  const int ss = dlb::validate_tensor_slow(&t, x.flags, &slow, &slow_err);
  FUZZ_CHECK_MSG(fs == ss, fs, fast_err);
  FUZZ_CHECK(std::strcmp(fast_err.message, slow_err.message) == 0);
  if (fs == DLB_OK) {
    FUZZ_CHECK(fuzz::error_untouched(fast_err));
    FUZZ_CHECK(fast.element_count == slow.element_count);
    FUZZ_CHECK(fast.element_bits == slow.element_bits);
    FUZZ_CHECK(fast.unit_bits == slow.unit_bits);
    FUZZ_CHECK(fast.packed == slow.packed);
    FUZZ_CHECK(fast.begin_bits == slow.begin_bits);
    FUZZ_CHECK(fast.span_bits == slow.span_bits);
  } else {
    FUZZ_CHECK(fuzz::error_filled(fast_err));
  }
  FUZZ_CHECK(dlb_tensor_validate(&t, x.flags, nullptr) == fs);

  // Element count: the naive rule, and validation's.
  int128 naive = 0;
  const bool shape_ok = naive_count(t, &naive);
  int64_t count = -1;
  dlb_error err;
  const int cs = dlb_tensor_element_count(&t, &count, &err);
  FUZZ_CHECK_MSG((cs == DLB_OK) == shape_ok, cs, err);
  if (shape_ok) FUZZ_CHECK(count == static_cast<int64_t>(naive));
  if (fs == DLB_OK) FUZZ_CHECK(shape_ok && count == fast.element_count);

  // Byte size: compact storage of that count.
  uint64_t bytes = 0;
  const int bs = dlb_tensor_byte_size(&t, x.flags, &bytes, &err);
  const bool dtype_ok = dlb::dtype_is_valid(t.dtype);
  if (shape_ok && dtype_ok) {
    const int128 bits = int128{t.dtype.bits} * t.dtype.lanes;
    const bool packed = t.dtype.bits < 8 && (x.flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) == 0;
    const int128 want = packed ? (naive * bits + 7) / 8 : naive * ((bits + 7) / 8);
    if (bs == DLB_OK) FUZZ_CHECK(static_cast<int128>(bytes) == want);
    else FUZZ_CHECK_MSG(bs == DLB_ERR_OVERFLOW && want > INT64_MAX, bs, err);
  } else {
    FUZZ_CHECK(bs != DLB_OK);
  }

  // Byte span: from the lowest to past the highest bit any element touches.
  int64_t begin = 0;
  SpanSize<decltype(&dlb_tensor_byte_span)>::type span = 0;
  const int ps = dlb_tensor_byte_span(&t, x.flags, &begin, &span, &err);
  if (fs == DLB_OK) FUZZ_CHECK_MSG(ps == DLB_OK, ps, err);
  if (ps == DLB_OK) {
    FUZZ_CHECK(shape_ok && dtype_ok);
    const int128 bits = int128{t.dtype.bits} * t.dtype.lanes;
    const bool packed = t.dtype.bits < 8 && (x.flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) == 0;
    const int128 unit = packed ? bits : 8 * ((bits + 7) / 8);
    if (naive == 0) {
      FUZZ_CHECK(span == 0);
    } else {
      int128 lo = 0, hi = 0;
      for (int32_t i = 0; i < t.ndim; ++i) {
        if (t.shape[i] <= 1) continue;
        const int128 reach = int128{stride_of(t, i)} * (t.shape[i] - 1);
        if (reach < 0) lo += reach;
        else hi += reach;
      }
      const int128 first = int128{t.byte_offset} * 8 + lo * unit;
      const int128 end = int128{t.byte_offset} * 8 + hi * unit + bits;
      const int128 b = first >= 0 ? first / 8 : -((-first + 7) / 8);
      const int128 e = end >= 0 ? (end + 7) / 8 : -((-end) / 8);
      FUZZ_CHECK(begin == static_cast<int64_t>(b));
      FUZZ_CHECK(static_cast<int128>(span) == e - b);
      if (fs == DLB_OK) FUZZ_CHECK(fast.begin_bits == first && static_cast<int128>(fast.span_bits) == end - first);
    }
  }

  // Contiguity: 0 for malformed shapes, the naive definition otherwise.
  FUZZ_CHECK(dlb_tensor_is_c_contiguous(&t) == (naive_contiguous(t, true) ? 1 : 0));
  FUZZ_CHECK(dlb_tensor_is_f_contiguous(&t) == (naive_contiguous(t, false) ? 1 : 0));

  // Strides: what get_strides writes is what the reference uses.
  if (shape_ok && t.ndim > 0) {
    int64_t got[DLB_MAX_NDIM];
    FUZZ_CHECK(dlb_tensor_get_strides(&t, DLB_MAX_NDIM, got, nullptr) == DLB_OK);
    for (int32_t i = 0; i < t.ndim; ++i) {
      if (t.strides != nullptr) FUZZ_CHECK(got[i] == t.strides[i]);
      else if (naive > 0) FUZZ_CHECK(got[i] == stride_of(t, i));
    }
  }

  // Empty shapes exist for allocate and reshape as they do for validation.
  if (shape_ok && naive == 0 && dtype_ok) {
    DLManagedTensorVersioned* allocated = nullptr;
    const int as = dlb_tensor_allocate(DLDevice{kDLCPU, 0}, t.dtype, t.ndim, t.shape, nullptr, 0,
                                       &allocated, &err);
    FUZZ_CHECK_MSG(as == DLB_OK, as, err);
    const int64_t zero = 0;
    DLManagedTensorVersioned* empty = nullptr;
    FUZZ_CHECK(dlb_tensor_allocate(DLDevice{kDLCPU, 0}, t.dtype, 1, &zero, nullptr, 0, &empty,
                                   nullptr) == DLB_OK);
    DLManagedTensorVersioned* reshaped = nullptr;
    const int rs = dlb_tensor_reshape(empty, t.ndim, t.shape, &reshaped, &err);
    FUZZ_CHECK_MSG(rs == DLB_OK, rs, err);
    FUZZ_CHECK(dlb_tensor_validate(&reshaped->dl_tensor, reshaped->flags, &err) == DLB_OK);
    FUZZ_CHECK(reshaped->dl_tensor.shape != nullptr && reshaped->dl_tensor.strides != nullptr);
    dlb_tensor_free(reshaped);
    dlb_tensor_free(empty);
    dlb_tensor_free(allocated);
  }
  return 0;
}
