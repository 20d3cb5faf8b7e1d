// fuzz_views_copies: arbitrary layouts (shapes, strides negative and zero included, byte
// offsets, every element size, packed and padded sub-byte types) wrapped over a host buffer and
// taken through slice, select, reshape, permute, transpose, copy and copy_into, compared element
// by element with a naive reference: the reference keeps, for every element of the current view
// in row-major order, its bit position in the buffer, and derives each operation from index
// arithmetic alone. copy_into into a second layout over the same buffer (overlapping memory) is
// checked on the whole buffer, so bits between elements must be left alone too.
//
// Input: dtype, flags, layout of the wrapped tensor, a seed for the buffer's bytes, then
// operations, one code byte each followed by their arguments (see the switch below).
#include "fuzz_common.h"

#include <vector>

namespace {

const DLDataType kTypes[] = {
    {kDLInt, 8, 1},       {kDLInt, 16, 1},     {kDLFloat, 32, 1},        {kDLInt, 64, 1},
    {kDLComplex, 128, 1}, {kDLFloat, 32, 3},   {kDLInt, 8, 3},           {kDLBool, 8, 1},
    {kDLUInt, 1, 1},      {kDLUInt, 2, 1},     {kDLInt, 4, 1},           {kDLFloat4_e2m1fn, 4, 1},
    {kDLFloat6_e2m3fn, 6, 1}, {kDLUInt, 2, 3}, {kDLInt, 4, 2},           {kDLBfloat, 16, 1},
};

struct Layout {
  int64_t elem_bits;  // bits * lanes
  int64_t unit_bits;  // from one element to the next
  bool packed;
  int64_t value_bits() const { return packed ? elem_bits : unit_bits; }
};

// The reference: shape and the bit position of every element, row-major.
struct Ref {
  std::vector<int64_t> shape;
  std::vector<int64_t> pos;
};

int64_t count_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

// Row-major index -> multi-index.
void unflatten(int64_t k, const std::vector<int64_t>& shape, std::vector<int64_t>* idx) {
  idx->assign(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    (*idx)[d] = k % shape[d];
    k /= shape[d];
  }
}
int64_t flatten(const std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  int64_t k = 0;
  for (size_t d = 0; d < shape.size(); ++d) k = k * shape[d] + idx[d];
  return k;
}

bool get_bit(const uint8_t* buf, int64_t bit) { return ((buf[bit >> 3] >> (bit & 7)) & 1) != 0; }
void set_bit(uint8_t* buf, int64_t bit, bool v) {
  if (v) buf[bit >> 3] = static_cast<uint8_t>(buf[bit >> 3] | (1u << (bit & 7)));
  else buf[bit >> 3] = static_cast<uint8_t>(buf[bit >> 3] & ~(1u << (bit & 7)));
}
bool same_bits(const uint8_t* a, int64_t pa, const uint8_t* b, int64_t pb, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (get_bit(a, pa + i) != get_bit(b, pb + i)) return false;
  }
  return true;
}

// Bit position, relative to `base`, of every element of a host tensor, from its own fields.
std::vector<int64_t> positions(const DLTensor& t, const uint8_t* base, const Layout& l) {
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim), idx, out;
  const int64_t n = count_of(shape);
  const int64_t origin = (reinterpret_cast<intptr_t>(t.data) - reinterpret_cast<intptr_t>(base)) * 8 +
                         static_cast<int64_t>(t.byte_offset) * 8;
  out.reserve(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    unflatten(k, shape, &idx);
    int64_t off = 0;
    for (int32_t d = 0; d < t.ndim; ++d) off += idx[static_cast<size_t>(d)] * t.strides[d];
    out.push_back(origin + off * l.unit_bits);
  }
  return out;
}

// A dlbridge view must match the reference exactly, and obey the layout contract.
void check_view(const DLManagedTensorVersioned* v, const Ref& ref, const uint8_t* buf,
                const Layout& l) {
  const DLTensor& t = v->dl_tensor;
  FUZZ_CHECK(t.shape != nullptr && t.strides != nullptr);
  if (t.ndim == 0) FUZZ_CHECK(t.shape[0] == 1 && t.strides[0] == 1);
  FUZZ_CHECK(t.ndim == static_cast<int32_t>(ref.shape.size()));
  for (int32_t d = 0; d < t.ndim; ++d) FUZZ_CHECK(t.shape[d] == ref.shape[static_cast<size_t>(d)]);
  FUZZ_CHECK(dlb_tensor_validate(&t, v->flags, nullptr) == DLB_OK);
  FUZZ_CHECK((v->flags & DLPACK_FLAG_BITMASK_IS_COPIED) == 0);
  if (ref.pos.empty()) return;
  FUZZ_CHECK(t.byte_offset == 0);  // CPU: the offset is folded into data
  FUZZ_CHECK(positions(t, buf, l) == ref.pos);
}

// CPython's slice.indices(), as an explicit list.
std::vector<int64_t> slice_indices(int64_t n, int64_t start, int64_t stop, int64_t step) {
  const bool none_start = start == DLB_SLICE_NONE, none_stop = stop == DLB_SLICE_NONE;
  auto norm = [&](int64_t v, bool none, bool is_start) {
    if (none) return step > 0 ? (is_start ? 0 : n) : (is_start ? n - 1 : -1);
    if (v < 0) {
      v += n;
      if (v < 0) v = step > 0 ? 0 : -1;
    } else if (v >= n) {
      v = step > 0 ? n : n - 1;
    }
    return v;
  };
  const int64_t b = norm(start, none_start, true), e = norm(stop, none_stop, false);
  std::vector<int64_t> out;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out.push_back(i);
  return out;
}

// A new reference from per-dimension index lists (a general "take" along every dimension).
Ref take(const Ref& r, const std::vector<std::vector<int64_t>>& lists) {
  Ref out;
  for (const auto& list : lists) out.shape.push_back(static_cast<int64_t>(list.size()));
  const int64_t n = count_of(out.shape);
  std::vector<int64_t> idx, src(r.shape.size());
  for (int64_t k = 0; k < n; ++k) {
    unflatten(k, out.shape, &idx);
    for (size_t d = 0; d < idx.size(); ++d) src[d] = lists[d][static_cast<size_t>(idx[d])];
    out.pos.push_back(r.pos[static_cast<size_t>(flatten(src, r.shape))]);
  }
  return out;
}

int64_t slice_code(fuzz::Reader& in) {
  const uint8_t c = in.u8();
  return c >= 0xF0 ? DLB_SLICE_NONE : static_cast<int64_t>(c % 17) - 8;
}

// Strides for `shape` that never alias: compact strides of a random order of the dimensions,
// each negated at random.
std::vector<int64_t> injective_strides(fuzz::Reader& in, const std::vector<int64_t>& shape) {
  const size_t n = shape.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[in.u8() % i]);
  std::vector<int64_t> strides(n);
  int64_t s = 1;
  for (size_t k = n; k-- > 0;) {
    strides[order[k]] = (in.u8() & 1) != 0 ? -s : s;
    s *= shape[order[k]] > 1 ? shape[order[k]] : 1;
  }
  return strides;
}

// Lowest and highest element offsets (in elements) that `strides` reach for `shape`.
void reach(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, int64_t* lo,
           int64_t* hi) {
  *lo = *hi = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] <= 1) continue;
    const int64_t r = strides[d] * (shape[d] - 1);
    if (r < 0) *lo += r;
    else *hi += r;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const int64_t live_before = dlb_tensor_live_count();
  const DLDataType dtype = kTypes[in.u8() % (sizeof kTypes / sizeof kTypes[0])];
  const uint8_t mode = in.u8();
  const uint64_t flags = (mode & 1) != 0 ? DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED : 0;
  Layout l;
  l.elem_bits = int64_t{dtype.bits} * dtype.lanes;
  l.packed = dtype.bits < 8 && flags == 0;
  l.unit_bits = l.packed ? l.elem_bits : 8 * ((l.elem_bits + 7) / 8);

  // The wrapped tensor.
  std::vector<int64_t> shape(in.u8() % 5), strides;
  for (int64_t& e : shape) e = in.u8() % 6;
  const bool null_strides = (mode & 2) != 0;
  if (null_strides) {
    int64_t s = 1;
    strides.assign(shape.size(), 0);
    for (size_t d = shape.size(); d-- > 0;) {
      strides[d] = s;
      s *= shape[d] > 1 ? shape[d] : 1;
    }
  } else {
    for (size_t d = 0; d < shape.size(); ++d) strides.push_back(static_cast<int64_t>(in.u8() % 13) - 6);
  }
  const uint64_t byte_offset = in.u8() % 16;
  int64_t lo, hi;
  reach(shape, strides, &lo, &hi);
  const int64_t count = count_of(shape);
  const int64_t lead = count == 0 ? 0 : (-lo * l.unit_bits + 7) / 8;
  const int64_t body = count == 0 ? 0 : (hi * l.unit_bits + l.unit_bits + 7) / 8;
  const size_t buf_size = static_cast<size_t>(lead + static_cast<int64_t>(byte_offset) + body + 4);
  std::vector<uint8_t> buf(buf_size);
  const uint8_t seed = in.u8();
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 167 + seed) ^ static_cast<uint8_t>(i >> 3);

  DLTensor desc{};
  desc.data = buf.data() + lead;
  desc.device = DLDevice{kDLCPU, 0};
  desc.ndim = static_cast<int32_t>(shape.size());
  desc.dtype = dtype;
  desc.shape = shape.empty() ? nullptr : shape.data();
  desc.strides = null_strides || shape.empty() ? nullptr : strides.data();
  desc.byte_offset = byte_offset;
  int released = 0;
  DLManagedTensorVersioned* root = nullptr;
  dlb_error err;
  int st = dlb_tensor_wrap(&desc, flags, [](void* ctx) { ++*static_cast<int*>(ctx); }, &released,
                           &root, &err);
  FUZZ_CHECK_MSG(st == DLB_OK, st, err);

  Ref ref;
  ref.shape = shape;
  {
    std::vector<int64_t> idx;
    for (int64_t k = 0; k < count; ++k) {
      unflatten(k, shape, &idx);
      int64_t off = 0;
      for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * strides[d];
      ref.pos.push_back((lead + static_cast<int64_t>(byte_offset)) * 8 + off * l.unit_bits);
    }
  }
  DLManagedTensorVersioned* view = root;
  check_view(view, ref, buf.data(), l);
  bool root_alive = true;

  for (int op = 0; op < 8 && in.remaining() > 0; ++op) {
    const uint8_t code = in.u8();
    const int32_t ndim = static_cast<int32_t>(ref.shape.size());
    DLManagedTensorVersioned* next = nullptr;
    Ref want;
    bool expect_ok = true;
    int expect_status = DLB_OK;
    switch (code % 8) {
      case 0: {  // slice
        const int32_t n = ndim == 0 ? 0 : static_cast<int32_t>(in.u8() % (ndim + 1));
        std::vector<dlb_slice> s(static_cast<size_t>(n));
        std::vector<std::vector<int64_t>> lists;
        bool zero_step = false;
        for (int32_t d = 0; d < ndim; ++d) {
          std::vector<int64_t> list;
          if (d < n) {
            dlb_slice& x = s[static_cast<size_t>(d)];
            x.start = slice_code(in);
            x.stop = slice_code(in);
            const uint8_t c = in.u8();
            x.step = c >= 0xF0 ? DLB_SLICE_NONE : static_cast<int64_t>(c % 9) - 4;
            zero_step = zero_step || x.step == 0;
            if (x.step != 0) {
              list = slice_indices(ref.shape[static_cast<size_t>(d)], x.start, x.stop,
                                   x.step == DLB_SLICE_NONE ? 1 : x.step);
            }
          } else {
            for (int64_t i = 0; i < ref.shape[static_cast<size_t>(d)]; ++i) list.push_back(i);
          }
          lists.push_back(list);
        }
        st = dlb_tensor_slice(view, n, s.data(), &next, &err);
        if (zero_step) {
          expect_ok = false;
          expect_status = DLB_ERR_INVALID_ARGUMENT;
          break;
        }
        want = take(ref, lists);
        break;
      }
      case 1: {  // select
        const int32_t axis = static_cast<int32_t>(in.u8() % (2 * ndim + 1)) - ndim;
        const int64_t index = static_cast<int64_t>(in.u8() % 13) - 6;
        st = dlb_tensor_select(view, axis, index, &next, &err);
        const int32_t a = axis < 0 ? axis + ndim : axis;
        if (a < 0 || a >= ndim) {
          expect_ok = false;
          expect_status = DLB_ERR_INVALID_ARGUMENT;
          break;
        }
        const int64_t extent = ref.shape[static_cast<size_t>(a)];
        const int64_t i = index < 0 ? index + extent : index;
        if (i < 0 || i >= extent) {
          expect_ok = false;
          expect_status = DLB_ERR_INVALID_ARGUMENT;
          break;
        }
        std::vector<std::vector<int64_t>> lists;
        for (int32_t d = 0; d < ndim; ++d) {
          std::vector<int64_t> list;
          if (d == a) list.push_back(i);
          else for (int64_t k = 0; k < ref.shape[static_cast<size_t>(d)]; ++k) list.push_back(k);
          lists.push_back(list);
        }
        want = take(ref, lists);
        want.shape.erase(want.shape.begin() + a);
        break;
      }
      case 2: {  // reshape, with an optional -1
        std::vector<int64_t> target(in.u8() % 5);
        for (int64_t& e : target) e = in.u8() % 7;
        const uint8_t infer = in.u8();
        if (!target.empty() && (infer & 0x80) != 0) target[infer % target.size()] = -1;
        st = dlb_tensor_reshape(view, static_cast<int32_t>(target.size()), target.data(), &next, &err);
        // The reference: one -1 resolves when the others multiply to a non-zero divisor.
        const int64_t n = count_of(ref.shape);
        int64_t known = 1;
        size_t inferred = target.size();
        for (size_t d = 0; d < target.size(); ++d) {
          if (target[d] == -1) inferred = d;
          else known *= target[d];
        }
        if (inferred < target.size()) {
          if (known != 0 && n % known == 0) target[inferred] = n / known;
        }
        if (count_of(target) != n || (inferred < target.size() && target[inferred] == -1)) {
          expect_ok = false;
          expect_status = DLB_ERR_INVALID_ARGUMENT;
          break;
        }
        // Must succeed when the elements lie in row-major order without gaps.
        bool compact = true;
        for (size_t k = 1; k < ref.pos.size(); ++k) {
          compact = compact && ref.pos[k] == ref.pos[0] + static_cast<int64_t>(k) * l.unit_bits;
        }
        if (!compact && st == DLB_ERR_LAYOUT) {
          expect_ok = false;
          expect_status = DLB_ERR_LAYOUT;
          break;
        }
        want.shape = target;
        want.pos = ref.pos;
        break;
      }
      case 3:
      case 4: {  // permute (3: a random permutation, sometimes broken) or transpose (4)
        std::vector<int32_t> axes(static_cast<size_t>(ndim));
        for (int32_t d = 0; d < ndim; ++d) axes[static_cast<size_t>(d)] = ndim - 1 - d;
        bool broken = false;
        if (code % 8 == 3) {
          for (size_t i = axes.size(); i > 1; --i) std::swap(axes[i - 1], axes[in.u8() % i]);
          const uint8_t c = in.u8();
          if (ndim > 1 && (c & 0xC0) == 0xC0) {
            axes[0] = axes[1];
            broken = true;
          }
          st = dlb_tensor_permute(view, ndim, axes.data(), &next, &err);
        } else {
          st = dlb_tensor_transpose(view, &next, &err);
        }
        if (broken) {
          expect_ok = false;
          expect_status = DLB_ERR_INVALID_ARGUMENT;
          break;
        }
        // Reference: element idx of the result is element src[axes[d]] = idx[d] of the source.
        want.shape.resize(static_cast<size_t>(ndim));
        for (int32_t d = 0; d < ndim; ++d) {
          want.shape[static_cast<size_t>(d)] = ref.shape[static_cast<size_t>(axes[static_cast<size_t>(d)])];
        }
        std::vector<int64_t> idx, src(static_cast<size_t>(ndim));
        for (int64_t k = 0; k < count_of(want.shape); ++k) {
          unflatten(k, want.shape, &idx);
          for (int32_t d = 0; d < ndim; ++d) src[static_cast<size_t>(axes[static_cast<size_t>(d)])] = idx[static_cast<size_t>(d)];
          want.pos.push_back(ref.pos[static_cast<size_t>(flatten(src, ref.shape))]);
        }
        break;
      }
      case 5: {  // copy: a compact tensor with the same values
        DLManagedTensorVersioned* copy = nullptr;
        st = dlb_tensor_copy(view, DLDevice{kDLCPU, 0}, &copy, &err);
        FUZZ_CHECK_MSG(st == DLB_OK, st, err);
        FUZZ_CHECK((copy->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
        FUZZ_CHECK(dlb_tensor_is_c_contiguous(&copy->dl_tensor) == 1);
        FUZZ_CHECK(copy->dl_tensor.byte_offset == 0);
        FUZZ_CHECK(copy->dl_tensor.shape != nullptr && copy->dl_tensor.strides != nullptr);
        const auto* cbase = static_cast<const uint8_t*>(copy->dl_tensor.data);
        for (size_t k = 0; k < ref.pos.size(); ++k) {
          FUZZ_CHECK(same_bits(cbase, static_cast<int64_t>(k) * l.unit_bits, buf.data(), ref.pos[k],
                               l.value_bits()));
        }
        dlb_tensor_free(copy);
        continue;
      }
      case 6: {  // copy_into a new tensor of another (non-aliasing) layout
        const std::vector<int64_t> dstrides = injective_strides(in, ref.shape);
        DLManagedTensorVersioned* dst = nullptr;
        st = dlb_tensor_allocate(DLDevice{kDLCPU, 0}, dtype, ndim, ref.shape.data(),
                                 dstrides.data(), flags, &dst, &err);
        FUZZ_CHECK_MSG(st == DLB_OK, st, err);
        FUZZ_CHECK(dst->dl_tensor.byte_offset == 0);
        st = dlb_tensor_copy_into(view, dst, &err);
        FUZZ_CHECK_MSG(st == DLB_OK, st, err);
        const auto* dbase = static_cast<const uint8_t*>(dst->dl_tensor.data);
        std::vector<int64_t> idx;
        for (size_t k = 0; k < ref.pos.size(); ++k) {
          unflatten(static_cast<int64_t>(k), ref.shape, &idx);
          int64_t off = 0;
          for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * dstrides[d];
          FUZZ_CHECK(same_bits(dbase, off * l.unit_bits, buf.data(), ref.pos[k], l.value_bits()));
        }
        dlb_tensor_free(dst);
        continue;
      }
      default: {  // copy_into another layout over the same buffer: overlapping memory
        std::vector<int64_t> dstrides = injective_strides(in, ref.shape);
        const uint8_t where = in.u8();
        int64_t dlo, dhi;
        reach(ref.shape, dstrides, &dlo, &dhi);
        const int64_t bits = static_cast<int64_t>(buf.size()) * 8;
        const int64_t first = (-dlo * l.unit_bits + 7) / 8;  // lowest origin byte that fits
        const int64_t room = bits - dhi * l.unit_bits - l.unit_bits;  // bits left for the origin
        const int64_t last = room / 8;
        if (ref.pos.empty() || room < 0 || last < first) continue;
        const int64_t origin = first + where % (last - first + 1);
        DLTensor d{};
        d.data = buf.data() + origin;
        d.device = DLDevice{kDLCPU, 0};
        d.ndim = ndim;
        d.dtype = dtype;
        d.shape = ref.shape.data();
        d.strides = ndim > 0 ? dstrides.data() : nullptr;
        DLManagedTensorVersioned* dst = nullptr;
        st = dlb_tensor_wrap(&d, flags, nullptr, nullptr, &dst, &err);
        FUZZ_CHECK_MSG(st == DLB_OK, st, err);
        std::vector<uint8_t> expected = buf;
        std::vector<int64_t> idx;
        for (size_t k = 0; k < ref.pos.size(); ++k) {
          unflatten(static_cast<int64_t>(k), ref.shape, &idx);
          int64_t off = 0;
          for (size_t dd = 0; dd < idx.size(); ++dd) off += idx[dd] * dstrides[dd];
          for (int64_t b = 0; b < l.value_bits(); ++b) {
            set_bit(expected.data(), origin * 8 + off * l.unit_bits + b, get_bit(buf.data(), ref.pos[k] + b));
          }
        }
        st = dlb_tensor_copy_into(view, dst, &err);
        FUZZ_CHECK_MSG(st == DLB_OK, st, err);
        FUZZ_CHECK(buf == expected);
        dlb_tensor_free(dst);
        continue;
      }
    }
    // A view op: packed data must start on a byte.
    if (expect_ok && l.packed && !want.pos.empty() && want.pos[0] % 8 != 0) {
      expect_ok = false;
      expect_status = DLB_ERR_LAYOUT;
    }
    if (!expect_ok) {
      FUZZ_CHECK_MSG(st == expect_status, st, err);
      FUZZ_CHECK(next == nullptr && fuzz::error_filled(err));
      continue;
    }
    FUZZ_CHECK_MSG(st == DLB_OK, st, err);
    check_view(next, want, buf.data(), l);
    // The source may go first: a view keeps the memory alive on its own.
    if (view != root || (code & 0x80) != 0) {
      dlb_tensor_free(view);
      if (view == root) root_alive = false;
    }
    view = next;
    ref = want;
  }
  dlb_tensor_free(view);
  if (root_alive && view != root) dlb_tensor_free(root);
  FUZZ_CHECK(released == 1);
  FUZZ_CHECK(dlb_tensor_live_count() == live_before);
  return 0;
}
