// Copies: the host strided-copy kernels and the routing of copies between devices.
//
// The host kernel first simplifies the layout (drops extent-1 dimensions, orders dimensions
// by the destination's strides, merges dimensions that are contiguous in both tensors), then
// picks one of three loops for the innermost work: a memcpy of whole rows, a strided row copy
// specialised per element size, or a cache-blocked 2-d tile copy when the source is contiguous
// along a different dimension than the destination (a transpose).
#include <cstdlib>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "internal.hpp"

namespace {

using Dim = dlb::StridedDim;  // strides in bytes here

int64_t magnitude(int64_t v) { return v < 0 ? -v : v; }

template <size_t E>
void row_copy(char* d, const char* s, int64_t n, int64_t ds, int64_t ss) {
  constexpr int64_t e = static_cast<int64_t>(E);
  if (ds == e && ss == e) {
    std::memcpy(d, s, static_cast<size_t>(n) * E);
  } else if (ds == e && ss == 2 * e) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * e, s + 2 * i * e, E);
  } else if (ds == e) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * e, s + i * ss, E);
  } else {
    for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * ds, s + i * ss, E);
  }
}

void row_copy_any(char* d, const char* s, int64_t n, int64_t ds, int64_t ss, size_t size) {
  if (ds == static_cast<int64_t>(size) && ss == ds) {
    std::memcpy(d, s, static_cast<size_t>(n) * size);
    return;
  }
  for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * ds, s + i * ss, size);
}

// Copies an nj x nk block where the destination is contiguous along k and the source along j:
// blocking keeps both the rows read and the rows written in cache.
template <size_t E>
void tile_copy(char* d, const char* s, const Dim& j, const Dim& k) {
  constexpr int64_t kBlock = E >= 8 ? 16 : 32;
  for (int64_t j0 = 0; j0 < j.n; j0 += kBlock) {
    const int64_t j1 = j0 + kBlock < j.n ? j0 + kBlock : j.n;
    for (int64_t k0 = 0; k0 < k.n; k0 += kBlock) {
      const int64_t k1 = k0 + kBlock < k.n ? k0 + kBlock : k.n;
      for (int64_t jj = j0; jj < j1; ++jj) {
        char* drow = d + jj * j.ds;
        const char* srow = s + jj * j.ss;
        for (int64_t kk = k0; kk < k1; ++kk) std::memcpy(drow + kk * k.ds, srow + kk * k.ss, E);
      }
    }
  }
}

#if defined(__SSE2__)
// Above this many output bytes, transposes bypass the cache with streaming stores: the output
// will not fit in cache anyway, and streaming avoids reading every destination line first.
constexpr uint64_t kStreamingThreshold = uint64_t{8} << 20;

template <bool kStream>
inline void store4(char* p, __m128 v) {
  if (kStream) _mm_stream_ps(reinterpret_cast<float*>(p), v);
  else _mm_storeu_ps(reinterpret_cast<float*>(p), v);
}

template <bool kStream>
inline void store8(char* p, __m128d v) {
  if (kStream) _mm_stream_pd(reinterpret_cast<double*>(p), v);
  else _mm_storeu_pd(reinterpret_cast<double*>(p), v);
}

// Transposes 4-byte elements in register-sized 4x4 blocks, 16 destination columns (one cache
// line) at a time. Requires k.ds == 4 and j.ss == 4. The shuffles move bits without arithmetic,
// so any 4-byte payload (NaNs included) is copied exactly.
template <bool kStream>
void transpose4(char* d, const char* s, const Dim& j, const Dim& k) {
  const int64_t nk = k.n & ~int64_t{15}, nj = j.n & ~int64_t{3};
  for (int64_t k0 = 0; k0 < nk; k0 += 16) {
    for (int64_t j0 = 0; j0 < nj; j0 += 4) {
      for (int64_t kk = k0; kk < k0 + 16; kk += 4) {
        const char* sp = s + kk * k.ss + j0 * 4;
        __m128 r0 = _mm_loadu_ps(reinterpret_cast<const float*>(sp));
        __m128 r1 = _mm_loadu_ps(reinterpret_cast<const float*>(sp + k.ss));
        __m128 r2 = _mm_loadu_ps(reinterpret_cast<const float*>(sp + 2 * k.ss));
        __m128 r3 = _mm_loadu_ps(reinterpret_cast<const float*>(sp + 3 * k.ss));
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        char* dp = d + j0 * j.ds + kk * 4;
        store4<kStream>(dp, r0);
        store4<kStream>(dp + j.ds, r1);
        store4<kStream>(dp + 2 * j.ds, r2);
        store4<kStream>(dp + 3 * j.ds, r3);
      }
    }
    for (int64_t jj = nj; jj < j.n; ++jj) {
      for (int64_t kk = k0; kk < k0 + 16; ++kk) std::memcpy(d + jj * j.ds + kk * 4, s + jj * 4 + kk * k.ss, 4);
    }
  }
  for (int64_t kk = nk; kk < k.n; ++kk) {
    for (int64_t jj = 0; jj < j.n; ++jj) std::memcpy(d + jj * j.ds + kk * 4, s + jj * 4 + kk * k.ss, 4);
  }
  if (kStream) _mm_sfence();
}

// The same for 8-byte elements: 2x2 blocks, 8 destination columns at a time.
template <bool kStream>
void transpose8(char* d, const char* s, const Dim& j, const Dim& k) {
  const int64_t nk = k.n & ~int64_t{7}, nj = j.n & ~int64_t{1};
  for (int64_t k0 = 0; k0 < nk; k0 += 8) {
    for (int64_t j0 = 0; j0 < nj; j0 += 2) {
      for (int64_t kk = k0; kk < k0 + 8; kk += 2) {
        const char* sp = s + kk * k.ss + j0 * 8;
        const __m128d r0 = _mm_loadu_pd(reinterpret_cast<const double*>(sp));
        const __m128d r1 = _mm_loadu_pd(reinterpret_cast<const double*>(sp + k.ss));
        char* dp = d + j0 * j.ds + kk * 8;
        store8<kStream>(dp, _mm_unpacklo_pd(r0, r1));
        store8<kStream>(dp + j.ds, _mm_unpackhi_pd(r0, r1));
      }
    }
    for (int64_t jj = nj; jj < j.n; ++jj) {
      for (int64_t kk = k0; kk < k0 + 8; ++kk) std::memcpy(d + jj * j.ds + kk * 8, s + jj * 8 + kk * k.ss, 8);
    }
  }
  for (int64_t kk = nk; kk < k.n; ++kk) {
    for (int64_t jj = 0; jj < j.n; ++jj) std::memcpy(d + jj * j.ds + kk * 8, s + jj * 8 + kk * k.ss, 8);
  }
  if (kStream) _mm_sfence();
}

// Picks a register transpose when the layout is a plain 2-d transpose of 4- or 8-byte
// elements; returns false to fall back to the generic tile copy.
bool transpose_simd(char* d, const char* s, const Dim& j, const Dim& k, size_t size, bool large) {
  const int64_t e = static_cast<int64_t>(size);
  if ((size != 4 && size != 8) || k.ds != e || j.ss != e) return false;
  // Streaming stores need 16-byte aligned destinations.
  const bool stream = large && (reinterpret_cast<uintptr_t>(d) % 16) == 0 && j.ds % 16 == 0;
  if (size == 4) {
    if (stream) transpose4<true>(d, s, j, k);
    else transpose4<false>(d, s, j, k);
  } else {
    if (stream) transpose8<true>(d, s, j, k);
    else transpose8<false>(d, s, j, k);
  }
  return true;
}
#else
constexpr uint64_t kStreamingThreshold = 0;
bool transpose_simd(char*, const char*, const Dim&, const Dim&, size_t, bool) { return false; }
#endif

void tile_copy_any(char* d, const char* s, const Dim& j, const Dim& k, size_t size, bool large) {
  if (transpose_simd(d, s, j, k, size, large)) return;
  switch (size) {
    case 1: tile_copy<1>(d, s, j, k); return;
    case 2: tile_copy<2>(d, s, j, k); return;
    case 4: tile_copy<4>(d, s, j, k); return;
    case 8: tile_copy<8>(d, s, j, k); return;
    case 16: tile_copy<16>(d, s, j, k); return;
    default:
      for (int64_t jj = 0; jj < j.n; ++jj) {
        row_copy_any(d + jj * j.ds, s + jj * j.ss, k.n, k.ds, k.ss, size);
      }
  }
}

void row_dispatch(char* d, const char* s, const Dim& r, size_t size) {
  switch (size) {
    case 1: row_copy<1>(d, s, r.n, r.ds, r.ss); return;
    case 2: row_copy<2>(d, s, r.n, r.ds, r.ss); return;
    case 4: row_copy<4>(d, s, r.n, r.ds, r.ss); return;
    case 8: row_copy<8>(d, s, r.n, r.ds, r.ss); return;
    case 16: row_copy<16>(d, s, r.n, r.ds, r.ss); return;
    default: row_copy_any(d, s, r.n, r.ds, r.ss, size); return;
  }
}

}  // namespace

int32_t dlb::simplify_dims(Dim* dims, int32_t n) {
  for (int32_t i = 1; i < n; ++i) {
    Dim key = dims[i];
    int32_t k = i - 1;
    while (k >= 0 && (magnitude(dims[k].ds) < magnitude(key.ds) ||
                      (magnitude(dims[k].ds) == magnitude(key.ds) &&
                       magnitude(dims[k].ss) < magnitude(key.ss)))) {
      dims[k + 1] = dims[k];
      --k;
    }
    dims[k + 1] = key;
  }
  int32_t out = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (out > 0) {
      Dim& inner = dims[out - 1];
      // `inner` is currently the outer neighbour of dims[i]; merge when dims[i] continues it.
      if (inner.ss == dims[i].ss * dims[i].n && inner.ds == dims[i].ds * dims[i].n) {
        inner.n *= dims[i].n;
        inner.ss = dims[i].ss;
        inner.ds = dims[i].ds;
        continue;
      }
    }
    dims[out++] = dims[i];
  }
  return out;
}

namespace {

// Copies elements of whole-byte size `size` between two host layouts of the same shape.
void strided_copy(char* d, const char* s, int32_t ndim, const int64_t* shape,
                  const int64_t* src_strides, const int64_t* dst_strides, size_t size) {
  Dim dims[DLB_MAX_NDIM];
  int32_t n = 0;
  const int64_t e = static_cast<int64_t>(size);
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] == 1) continue;
    dims[n++] = Dim{shape[i], src_strides[i] * e, dst_strides[i] * e};
  }
  if (n == 0) {
    std::memcpy(d, s, size);
    return;
  }
  n = dlb::simplify_dims(dims, n);
  const Dim inner = dims[n - 1];
  // A transpose: the source is contiguous along another dimension than the innermost one.
  int32_t tile = -1;
  if (magnitude(inner.ss) != e) {
    for (int32_t i = 0; i < n - 1; ++i) {
      if (magnitude(dims[i].ss) < magnitude(inner.ss) &&
          (tile < 0 || magnitude(dims[i].ss) < magnitude(dims[tile].ss))) {
        tile = i;
      }
    }
  }
  Dim outer[DLB_MAX_NDIM];
  int32_t m = 0;
  for (int32_t i = 0; i < n - 1; ++i) {
    if (i != tile) outer[m++] = dims[i];
  }
  int64_t count = 1;
  for (int32_t i = 0; i < n; ++i) count *= dims[i].n;
  const bool large = kStreamingThreshold > 0 && static_cast<uint64_t>(count) * size >= kStreamingThreshold;
  int64_t index[DLB_MAX_NDIM] = {};
  int64_t doff = 0, soff = 0;
  for (;;) {
    if (tile >= 0) tile_copy_any(d + doff, s + soff, dims[tile], inner, size, large);
    else row_dispatch(d + doff, s + soff, inner, size);
    int32_t k = m - 1;
    for (; k >= 0; --k) {
      doff += outer[k].ds;
      soff += outer[k].ss;
      if (++index[k] < outer[k].n) break;
      doff -= outer[k].ds * outer[k].n;
      soff -= outer[k].ss * outer[k].n;
      index[k] = 0;
    }
    if (k < 0) break;
  }
}

// ---- sub-byte (packed) data: a bit-addressed element loop -----------------------------------

// Copies `nbits` bits from bit position sbit of s to bit position dbit of d (positions may be
// negative relative to the pointers; little bit-endian, as DLPack packs sub-byte data).
void copy_bits(unsigned char* d, int64_t dbit, const unsigned char* s, int64_t sbit, uint64_t nbits) {
  while (nbits > 0) {
    const unsigned chunk = nbits > 32 ? 32 : static_cast<unsigned>(nbits);
    const unsigned char* sp = s + (sbit >> 3);
    const unsigned sshift = static_cast<unsigned>(sbit & 7);
    uint64_t value = 0;
    const unsigned sbytes = (sshift + chunk + 7) / 8;
    for (unsigned i = 0; i < sbytes; ++i) value |= uint64_t{sp[i]} << (8 * i);
    value = (value >> sshift) & ((uint64_t{1} << chunk) - 1);
    unsigned char* dp = d + (dbit >> 3);
    const unsigned dshift = static_cast<unsigned>(dbit & 7);
    const unsigned dbytes = (dshift + chunk + 7) / 8;
    uint64_t word = 0;
    for (unsigned i = 0; i < dbytes; ++i) word |= uint64_t{dp[i]} << (8 * i);
    const uint64_t mask = ((uint64_t{1} << chunk) - 1) << dshift;
    word = (word & ~mask) | (value << dshift);
    for (unsigned i = 0; i < dbytes; ++i) dp[i] = static_cast<unsigned char>(word >> (8 * i));
    nbits -= chunk;
    sbit += chunk;
    dbit += chunk;
  }
}

void zero_bits(unsigned char* d, int64_t dbit, uint64_t nbits) {
  static const unsigned char kZeros[8] = {};
  while (nbits > 0) {
    const uint64_t chunk = nbits > 32 ? 32 : nbits;
    copy_bits(d, dbit, kZeros, 0, chunk);
    nbits -= chunk;
    dbit += static_cast<int64_t>(chunk);
  }
}

void bit_copy(const DLTensor* dst, const dlb::Geometry& gd, const int64_t* dst_strides,
              const DLTensor* src, const dlb::Geometry& gs, const int64_t* src_strides) {
  auto* d = static_cast<unsigned char*>(dst->data);
  const auto* s = static_cast<const unsigned char*>(src->data);
  const int32_t ndim = src->ndim;
  // Strides of extent-1 dimensions are arbitrary (and may be huge): never step along them.
  int64_t dst_steps[DLB_MAX_NDIM], src_steps[DLB_MAX_NDIM];
  for (int32_t k = 0; k < ndim; ++k) {
    const bool moves = src->shape[k] > 1;
    dst_steps[k] = moves ? dst_strides[k] : 0;
    src_steps[k] = moves ? src_strides[k] : 0;
  }
  dst_strides = dst_steps;
  src_strides = src_steps;
  const uint64_t bits = gs.element_bits;
  int64_t index[DLB_MAX_NDIM] = {};
  int64_t dbit = static_cast<int64_t>(dst->byte_offset * 8);
  int64_t sbit = static_cast<int64_t>(src->byte_offset * 8);
  for (;;) {
    copy_bits(d, dbit, s, sbit, bits);
    if (gd.unit_bits > bits) zero_bits(d, dbit + static_cast<int64_t>(bits), gd.unit_bits - bits);
    int32_t k = ndim - 1;
    for (; k >= 0; --k) {
      dbit += dst_strides[k] * static_cast<int64_t>(gd.unit_bits);
      sbit += src_strides[k] * static_cast<int64_t>(gs.unit_bits);
      if (++index[k] < src->shape[k]) break;
      dbit -= dst_strides[k] * static_cast<int64_t>(gd.unit_bits) * src->shape[k];
      sbit -= src_strides[k] * static_cast<int64_t>(gs.unit_bits) * src->shape[k];
      index[k] = 0;
    }
    if (k < 0) break;
  }
}

struct HostRange {
  uintptr_t begin;
  uintptr_t end;
};

HostRange host_range(const DLTensor* t, const dlb::Geometry& g) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(t->data);
  const int64_t begin = g.begin_bits >> 3;
  const int64_t end = (g.begin_bits + static_cast<int64_t>(g.span_bits) + 7) >> 3;
  return HostRange{base + static_cast<uintptr_t>(begin), base + static_cast<uintptr_t>(end)};
}

bool same_layout(const DLTensor* a, const DLTensor* b, const dlb::Geometry& ga,
                 const dlb::Geometry& gb, const int64_t* sa, const int64_t* sb) {
  if (static_cast<const char*>(a->data) + a->byte_offset !=
          static_cast<const char*>(b->data) + b->byte_offset ||
      ga.unit_bits != gb.unit_bits) {
    return false;
  }
  for (int32_t i = 0; i < a->ndim; ++i) {
    if (a->shape[i] > 1 && sa[i] != sb[i]) return false;
  }
  return true;
}

// Copies between two host-readable tensors given as host pointers (device ignored).
int host_copy(const DLTensor* dst, const dlb::Geometry& gd, const DLTensor* src,
              const dlb::Geometry& gs, uint64_t src_flags, dlb_error* error) {
  if (gs.element_count == 0) return DLB_OK;
  int64_t src_strides[DLB_MAX_NDIM], dst_strides[DLB_MAX_NDIM];
  dlb_tensor_get_strides(src, src_strides, nullptr);
  dlb_tensor_get_strides(dst, dst_strides, nullptr);

  const HostRange rs = host_range(src, gs), rd = host_range(dst, gd);
  if (rs.begin < rd.end && rd.begin < rs.end) {
    if (same_layout(src, dst, gs, gd, src_strides, dst_strides)) return DLB_OK;
    // Overlapping memory: copy the source aside first.
    uint64_t nbytes = 0;
    int status = dlb_dtype_storage_size(src->dtype, gs.element_count, src_flags, &nbytes, error);
    if (status != DLB_OK) return status;
    void* scratch = std::malloc(nbytes);
    if (scratch == nullptr) {
      return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY,
                       "out of memory staging an overlapping copy of %llu bytes",
                       static_cast<unsigned long long>(nbytes));
    }
    int64_t compact[DLB_MAX_NDIM];
    dlb_compact_strides(src->ndim, src->shape, compact);
    DLTensor staged = *src;
    staged.data = scratch;
    staged.strides = compact;
    staged.byte_offset = 0;
    dlb::Geometry gstaged = gs;
    gstaged.begin_bits = 0;
    gstaged.span_bits = nbytes * 8;
    status = host_copy(&staged, gstaged, src, gs, src_flags, error);
    if (status == DLB_OK) status = host_copy(dst, gd, &staged, gstaged, src_flags, error);
    std::free(scratch);
    return status;
  }

  if (gs.packed || gd.packed) {
    bit_copy(dst, gd, dst_strides, src, gs, src_strides);
    return DLB_OK;
  }
  strided_copy(static_cast<char*>(dst->data) + dst->byte_offset,
               static_cast<const char*>(src->data) + src->byte_offset, src->ndim, src->shape,
               src_strides, dst_strides, static_cast<size_t>(gs.unit_bits / 8));
  return DLB_OK;
}

// Host memory that holds a device tensor's span while a copy is staged; freed on every path.
struct Staging {
  void* memory = nullptr;
  ~Staging() { std::free(memory); }
};

// Where a device tensor's span starts, as the (pointer, offset) pair copy_bytes takes.
void span_origin(const DLTensor* t, const dlb::Geometry& g, void** base, uint64_t* offset) {
  const int64_t begin = g.begin_bits >> 3;
  if (begin >= 0) {
    *base = t->data;
    *offset = static_cast<uint64_t>(begin);
  } else {  // only pointer-addressable devices get here (validation refuses the others)
    *base = static_cast<char*>(t->data) + begin;
    *offset = 0;
  }
}

uint64_t span_bytes(const dlb::Geometry& g) {
  const int64_t begin = g.begin_bits >> 3;
  const int64_t end = (g.begin_bits + static_cast<int64_t>(g.span_bits) + 7) >> 3;
  return static_cast<uint64_t>(end - begin);
}

// Describes the span of `t`, once copied to host memory at `memory`, as a host tensor.
void host_view(const DLTensor* t, const dlb::Geometry& g, void* memory, DLTensor* out,
               dlb::Geometry* gout) {
  *out = *t;
  const int64_t begin = g.begin_bits >> 3;
  out->data = memory;
  out->device = DLDevice{kDLCPU, 0};
  out->byte_offset = static_cast<uint64_t>(static_cast<int64_t>(t->byte_offset) - begin);
  *gout = g;
  gout->begin_bits = g.begin_bits - begin * 8;
}

}  // namespace

namespace dlb {

int copy_elements(const DLManagedTensorVersioned* dst_tensor, const Geometry& gd,
                  const DLManagedTensorVersioned* src_tensor, const Geometry& gs, void* stream,
                  dlb_error* error) {
  const DLTensor* dst = &dst_tensor->dl_tensor;
  const DLTensor* src = &src_tensor->dl_tensor;
  const uint64_t dst_flags = dst_tensor->flags, src_flags = src_tensor->flags;
  int status = DLB_OK;
  if (gs.element_count == 0) return DLB_OK;

  const bool src_host = dlb_device_is_host_readable(src->device) != 0;
  const bool dst_host = dlb_device_is_host_readable(dst->device) != 0;
  if (src_host && dst_host) {
    // Pinned or managed memory read by the host: what is queued on the stream comes first. The
    // stream belongs to the destination's device, or to the source's when that is the CPU.
    const DLDevice queued = dst->device.device_type != kDLCPU ? dst->device : src->device;
    if (stream != nullptr && queued.device_type != kDLCPU) {
      status = dlb_device_synchronize(queued, stream, error);
      if (status != DLB_OK) return status;
    }
    return host_copy(dst, gd, src, gs, src_flags, error);
  }

  Backend* src_backend = src_host ? nullptr : acquire_tensor_backend(src_tensor);
  Backend* dst_backend = dst_host ? nullptr : acquire_tensor_backend(dst_tensor);
  struct Release {
    Backend* a;
    Backend* b;
    ~Release() {
      release_backend(a);
      release_backend(b);
    }
  } release{src_backend, dst_backend};
  const DLTensor* missing = !src_host && src_backend == nullptr   ? src
                            : !dst_host && dst_backend == nullptr ? dst
                                                                  : nullptr;
  if (missing != nullptr) {
    DeviceTypeText name(missing->device.device_type);
    return fail(error, DLB_ERR_UNSUPPORTED, "no backend is registered for %s", name.text);
  }

  // Host-readable sides are presented to backends as plain host memory.
  DLTensor src_desc = *src, dst_desc = *dst;
  if (src_host) src_desc.device = DLDevice{kDLCPU, 0};
  if (dst_host) dst_desc.device = DLDevice{kDLCPU, 0};

  // A direct path: one backend sees both sides.
  Backend* direct = nullptr;
  if (src_host) direct = dst_backend;
  else if (dst_host || src_backend == dst_backend) direct = src_backend;
  if (direct != nullptr && direct->ops.copy_tensor != nullptr) {
    // A backend that declines explains why in its own report; the caller's stays untouched
    // unless the copy really fails.
    dlb_error declined;
    declined.message[0] = '\0';
    status = direct->ops.copy_tensor(direct->ops.ctx, &dst_desc, dst_flags, &src_desc, src_flags,
                                     stream, &declined);
    if (status != DLB_ERR_UNSUPPORTED) {
      return status == DLB_OK ? DLB_OK : backend_failed(direct, "copy_tensor", status, declined, error);
    }
  }

  // Staging through host memory with copy_bytes. The caller's stream belongs to the
  // destination's device (to the source's when the destination is host memory): only that
  // backend gets it, the other side runs synchronously. Work queued on the stream must be
  // finished before the host reads a staging buffer or frees one.
  void* const src_stream = dst_host ? stream : nullptr;
  auto finish = [error](Backend* backend, DLDevice device, void* queue) {
    if (queue == nullptr || backend->ops.synchronize == nullptr) return DLB_OK;
    return call_backend(backend, "synchronize", error, [&](dlb_error* report) {
      return backend->ops.synchronize(backend->ops.ctx, device, queue, report);
    });
  };
  auto copy_bytes = [error](Backend* backend, DLDevice dst_device, void* dst, uint64_t dst_offset,
                            DLDevice src_device, const void* src, uint64_t src_offset,
                            uint64_t nbytes, void* queue) {
    return call_backend(backend, "copy_bytes", error, [&](dlb_error* report) {
      return backend->ops.copy_bytes(backend->ops.ctx, dst_device, dst, dst_offset, src_device,
                                     src, src_offset, nbytes, queue, report);
    });
  };
  Staging src_stage, dst_stage;
  DLTensor host_src = src_desc;
  Geometry host_src_geometry = gs;
  if (!src_host) {
    const uint64_t nbytes = span_bytes(gs);
    src_stage.memory = std::malloc(nbytes);
    if (src_stage.memory == nullptr) {
      return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory staging %llu bytes",
                  static_cast<unsigned long long>(nbytes));
    }
    void* base;
    uint64_t offset;
    span_origin(src, gs, &base, &offset);
    status = copy_bytes(src_backend, DLDevice{kDLCPU, 0}, src_stage.memory, 0, src->device, base,
                        offset, nbytes, src_stream);
    if (status == DLB_OK) status = finish(src_backend, src->device, src_stream);
    if (status != DLB_OK) return status;
    host_view(src, gs, src_stage.memory, &host_src, &host_src_geometry);
  }
  if (dst_host) return host_copy(&dst_desc, gd, &host_src, host_src_geometry, src_flags, error);

  const uint64_t nbytes = span_bytes(gd);
  dst_stage.memory = std::malloc(nbytes);
  if (dst_stage.memory == nullptr) {
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory staging %llu bytes",
                static_cast<unsigned long long>(nbytes));
  }
  void* base;
  uint64_t offset;
  span_origin(dst, gd, &base, &offset);
  // Unless the destination covers its span completely, keep the bytes between its elements.
  const bool covers_span = !gd.packed && dlb_tensor_is_c_contiguous(dst) &&
                           gd.span_bits == static_cast<uint64_t>(gd.element_count) * gd.unit_bits;
  if (!covers_span) {
    status = copy_bytes(dst_backend, DLDevice{kDLCPU, 0}, dst_stage.memory, 0, dst->device, base,
                        offset, nbytes, stream);
    if (status == DLB_OK) status = finish(dst_backend, dst->device, stream);
    if (status != DLB_OK) return status;
  }
  DLTensor host_dst;
  Geometry host_dst_geometry;
  host_view(dst, gd, dst_stage.memory, &host_dst, &host_dst_geometry);
  status = host_copy(&host_dst, host_dst_geometry, &host_src, host_src_geometry, src_flags, error);
  if (status != DLB_OK) return status;
  status = copy_bytes(dst_backend, dst->device, base, offset, DLDevice{kDLCPU, 0},
                      dst_stage.memory, 0, nbytes, stream);
  if (status == DLB_OK) status = finish(dst_backend, dst->device, stream);
  return status;
}

}  // namespace dlb

extern "C" {

DLB_API int dlb_tensor_copy_async(const DLManagedTensorVersioned* src, DLDevice device,
                                  void* stream, DLManagedTensorVersioned** out,
                                  dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (src == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  dlb::Geometry gs, gd;
  int status = dlb::validate_tensor(&src->dl_tensor, src->flags, &gs, error);
  if (status != DLB_OK) return status;
  const DLTensor& t = src->dl_tensor;
  const uint64_t keep = src->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
  DLManagedTensorVersioned* copy = nullptr;
  status = dlb_tensor_allocate(device, t.dtype, t.ndim, t.shape, nullptr, keep, &copy, error);
  if (status != DLB_OK) return status;
  status = dlb::validate_tensor(&copy->dl_tensor, copy->flags, &gd, error);
  if (status == DLB_OK) status = dlb::copy_elements(copy, gd, src, gs, stream, error);
  if (status != DLB_OK) {
    dlb_tensor_free(copy);
    return status;
  }
  copy->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
  *out = copy;
  return DLB_OK;
}

DLB_API int dlb_tensor_copy(const DLManagedTensorVersioned* src, DLDevice device,
                            DLManagedTensorVersioned** out, dlb_error* error) {
  return dlb_tensor_copy_async(src, device, nullptr, out, error);
}

DLB_API int dlb_tensor_copy_into(const DLManagedTensorVersioned* src,
                                 DLManagedTensorVersioned* dst, dlb_error* error) {
  return dlb_tensor_copy_into_async(src, dst, nullptr, error);
}

DLB_API int dlb_tensor_copy_into_async(const DLManagedTensorVersioned* src,
                                       DLManagedTensorVersioned* dst, void* stream,
                                       dlb_error* error) {
  if (src == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "source tensor is NULL");
  if (dst == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "destination tensor is NULL");
  if ((dst->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0) {
    return dlb::fail(error, DLB_ERR_READ_ONLY, "cannot copy into a read-only tensor");
  }
  dlb::Geometry gs, gd;
  int status = dlb::validate_tensor(&src->dl_tensor, src->flags, &gs, error);
  if (status == DLB_OK) status = dlb::validate_tensor(&dst->dl_tensor, dst->flags, &gd, error);
  if (status != DLB_OK) return status;
  const DLTensor& s = src->dl_tensor;
  const DLTensor& d = dst->dl_tensor;
  if (s.dtype.code != d.dtype.code || s.dtype.bits != d.dtype.bits || s.dtype.lanes != d.dtype.lanes) {
    dlb::DTypeText a(s.dtype), b(d.dtype);
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "dtype mismatch: source is %s, destination is %s", a.text, b.text);
  }
  bool same_shape = s.ndim == d.ndim;
  for (int32_t i = 0; same_shape && i < s.ndim; ++i) same_shape = s.shape[i] == d.shape[i];
  if (!same_shape) {
    dlb::DimsText a(s.ndim, s.shape), b(d.ndim, d.shape);
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "shape mismatch: source is %s, destination is %s", a.text, b.text);
  }
  return dlb::copy_elements(dst, gd, src, gs, stream, error);
}

DLB_API int dlb_device_synchronize(DLDevice device, void* stream, dlb_error* error) {
  int status = dlb::check_device(device, error);
  if (status != DLB_OK) return status;
  if (device.device_type == kDLCPU) return DLB_OK;
  dlb::Backend* backend = dlb::acquire_backend(device.device_type);
  if (backend == nullptr) {
    dlb::DeviceTypeText name(device.device_type);
    return dlb::fail(error, DLB_ERR_UNSUPPORTED, "no backend is registered for %s", name.text);
  }
  if (backend->ops.synchronize != nullptr) {
    status = dlb::call_backend(backend, "synchronize", error, [&](dlb_error* report) {
      return backend->ops.synchronize(backend->ops.ctx, device, stream, report);
    });
  }
  dlb::release_backend(backend);
  return status;
}

}  // extern "C"
