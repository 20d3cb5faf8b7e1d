// The host copy kernels: strided copies between host layouts, sub-byte (packed) copies, and
// copies whose source and destination overlap.
//
// The host kernel first simplifies the layout (drops extent-1 dimensions, orders dimensions
// by the destination's strides, merges dimensions that are contiguous in both tensors, and
// takes a short innermost dimension contiguous in both as one wider element), then picks one
// of two loops for the innermost work: a row copy (a memcpy of whole rows, or a strided row
// copy specialised per element size), or, when the source is contiguous along a different
// dimension than the destination (a transpose), the 2-d block copies of copy_transpose.cc.
#include <cstdlib>
#include <cstring>

#include "copy_transpose.hpp"
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

// Copies a j.n x k.n block where the destination is contiguous along k and the source along j,
// or nearly so. Reversing a dimension on both sides changes nothing copied, so the block is
// turned until the destination steps forward along k and the source along j, which is what
// the register transposes need.
void tile_copy(char* d, const char* s, Dim j, Dim k, size_t size, bool stream, dlb::CopyIsa isa) {
  if (k.ds < 0) {
    d += (k.n - 1) * k.ds;
    s += (k.n - 1) * k.ss;
    k.ds = -k.ds;
    k.ss = -k.ss;
  }
  if (j.ss < 0) {
    d += (j.n - 1) * j.ds;
    s += (j.n - 1) * j.ss;
    j.ds = -j.ds;
    j.ss = -j.ss;
  }
  dlb::transpose_block(d, s, j, k, size, isa, stream);
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
  int64_t e = static_cast<int64_t>(size);
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] == 1) continue;
    dims[n++] = Dim{shape[i], src_strides[i] * e, dst_strides[i] * e};
  }
  if (n == 0) {
    std::memcpy(d, s, size);
    return;
  }
  n = dlb::simplify_dims(dims, n);
  uint64_t bytes = size;
  for (int32_t i = 0; i < n; ++i) bytes *= static_cast<uint64_t>(dims[i].n);
  // A few elements contiguous in both layouts (the two floats of a complex64 stored as a
  // trailing dimension, an RGB pixel) move as one wider element: a transpose of them then
  // still gets the register kernels.
  if (n >= 2 && dims[n - 1].ss == e && dims[n - 1].ds == e && dims[n - 1].n * e <= 8 &&
      (dims[n - 1].n * e & (dims[n - 1].n * e - 1)) == 0) {
    e *= dims[n - 1].n;
    size = static_cast<size_t>(e);
    --n;
  }
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
  const dlb::CopyIsa isa = dlb::active_copy_isa();
  const bool stream = bytes >= dlb::streaming_threshold();
  int64_t index[DLB_MAX_NDIM] = {};
  int64_t doff = 0, soff = 0;
  for (;;) {
    if (tile >= 0) tile_copy(d + doff, s + soff, dims[tile], inner, size, stream, isa);
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

}  // namespace

namespace dlb {

// Copies between two host-readable tensors given as host pointers (device ignored).
int host_copy(const DLTensor* dst, const dlb::Geometry& gd, const DLTensor* src,
              const dlb::Geometry& gs, uint64_t src_flags, dlb_error* error) {
  if (gs.element_count == 0) return DLB_OK;
  int64_t src_strides[DLB_MAX_NDIM], dst_strides[DLB_MAX_NDIM];
  dlb_tensor_get_strides(src, DLB_MAX_NDIM, src_strides, nullptr);
  dlb_tensor_get_strides(dst, DLB_MAX_NDIM, dst_strides, nullptr);

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

}  // namespace dlb
