// Suite 'core': the transpose kernels of the host copies (core/src/copy_transpose*.cc), every
// one of them on this machine. The instruction set is chosen by the CPU at run time, so the
// tests force each one the CPU has (portable, SSE2, AVX2) and each store kind (plain, and
// streaming, which copies choose above a size), and compare every result with a naive
// element loop: first the kernels alone, on blocks of every element size whose edges fall
// everywhere relative to the register and line tiles, then whole copies through the C API.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "copy_transpose.hpp"
#include "support.hpp"

using test::cpu;
using test::dtype;
using test::fresh_error;
using test::msg;

namespace {

constexpr dlb::CopyIsa kAllIsas[] = {dlb::CopyIsa::kPortable, dlb::CopyIsa::kSse2,
                                     dlb::CopyIsa::kAvx2};

const char* isa_name(dlb::CopyIsa isa) {
  switch (isa) {
    case dlb::CopyIsa::kPortable: return "portable";
    case dlb::CopyIsa::kSse2: return "sse2";
    case dlb::CopyIsa::kAvx2: return "avx2";
  }
  return "?";
}

// The instruction sets this CPU runs; the others are reported, not silently skipped.
std::vector<dlb::CopyIsa> supported_isas() {
  std::vector<dlb::CopyIsa> out;
  for (dlb::CopyIsa isa : kAllIsas) {
    if (dlb::copy_isa_supported(isa)) {
      out.push_back(isa);
    } else {
      MESSAGE("this CPU cannot run the " << isa_name(isa) << " kernels: not covered here");
    }
  }
  return out;
}

// Makes host copies use one instruction set and streaming threshold for a scope.
struct ForcedKernels {
  ForcedKernels(dlb::CopyIsa isa, uint64_t threshold) {
    REQUIRE(dlb::force_copy_kernels(isa, threshold));
  }
  ForcedKernels(const ForcedKernels&) = delete;
  ForcedKernels& operator=(const ForcedKernels&) = delete;
  ~ForcedKernels() { dlb::restore_copy_kernels(); }
};

// Streaming thresholds that make every copy stream, or none.
constexpr uint64_t kAlwaysStream = 0;
constexpr uint64_t kNeverStream = UINT64_MAX;

// Bytes that differ from element to element and from byte to byte, so that an element put in
// the wrong place, or a byte of it, shows.
void fill_pattern(std::vector<unsigned char>& bytes, uint32_t seed) {
  uint32_t state = seed * 2654435761u + 12345u;
  for (unsigned char& b : bytes) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<unsigned char>(state >> 24);
  }
}

// The naive reference: one memcpy per element.
void reference_block(char* d, const char* s, const dlb::StridedDim& j, const dlb::StridedDim& k,
                     size_t size) {
  for (int64_t a = 0; a < j.n; ++a) {
    for (int64_t b = 0; b < k.n; ++b) std::memcpy(d + a * j.ds + b * k.ds, s + a * j.ss + b * k.ss, size);
  }
}

// A 64-byte aligned buffer filled with a sentinel.
struct AlignedBytes {
  char* data;
  explicit AlignedBytes(size_t size) : data(static_cast<char*>(std::aligned_alloc(64, size))) {
    REQUIRE(data != nullptr);
    std::memset(data, 0xA5, size);
  }
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  ~AlignedBytes() { std::free(data); }
};

// One kernel run: a source of k.n rows of j.n elements (plus src_pad), copied into a
// destination of j.n rows of k.n elements (plus dst_pad) that starts dst_shift bytes past a
// 64-byte boundary. The destination buffer is filled with a sentinel first and must end up
// exactly as the reference leaves it: elements copied, every other byte untouched.
struct BlockCase {
  size_t size;
  int64_t nj, nk;
  int64_t src_pad = 0;       // elements after each source row
  int64_t dst_pad = 0;       // elements after each destination row
  int64_t dst_shift = 0;     // bytes from a 64-byte boundary to the first destination element
  bool src_reversed = false; // source rows in descending addresses (negative row stride)
  bool dst_reversed = false; // destination rows in descending addresses
};

std::string describe(const BlockCase& c, dlb::CopyIsa isa, bool stream) {
  return std::string(isa_name(isa)) + (stream ? " streaming" : " plain") + " size " +
         std::to_string(c.size) + " block " + std::to_string(c.nj) + "x" + std::to_string(c.nk) +
         " src_pad " + std::to_string(c.src_pad) + " dst_pad " + std::to_string(c.dst_pad) +
         " dst_shift " + std::to_string(c.dst_shift) + (c.src_reversed ? " src reversed" : "") +
         (c.dst_reversed ? " dst reversed" : "");
}

void run_block(const BlockCase& c, dlb::CopyIsa isa, bool stream) {
  const int64_t e = static_cast<int64_t>(c.size);
  const int64_t src_row = (c.nj + c.src_pad) * e, dst_row = (c.nk + c.dst_pad) * e;
  std::vector<unsigned char> src(static_cast<size_t>(src_row * c.nk));
  fill_pattern(src, static_cast<uint32_t>(c.nj * 131 + c.nk * 7 + e));
  // 64 bytes of room on each side of the destination rows; both buffers 64-byte aligned, so
  // that the same offset in each has the same alignment.
  const size_t dst_bytes = static_cast<size_t>(dst_row * c.nj + 3 * 64) / 64 * 64 + 64;
  AlignedBytes got(dst_bytes), want(dst_bytes);
  auto first_element = [&](AlignedBytes& buffer) {
    char* p = buffer.data + 64 + c.dst_shift;
    return c.dst_reversed ? p + (c.nj - 1) * dst_row : p;
  };
  const char* s = reinterpret_cast<const char*>(src.data());
  if (c.src_reversed) s += (c.nk - 1) * src_row;
  const dlb::StridedDim j{c.nj, e, c.dst_reversed ? -dst_row : dst_row};
  const dlb::StridedDim k{c.nk, c.src_reversed ? -src_row : src_row, e};
  reference_block(first_element(want), s, j, k, c.size);
  dlb::transpose_block(first_element(got), s, j, k, c.size, isa, stream);
  size_t first_difference = dst_bytes;
  for (size_t i = 0; i < dst_bytes && first_difference == dst_bytes; ++i) {
    if (got.data[i] != want.data[i]) first_difference = i;
  }
  CHECK_MESSAGE(first_difference == dst_bytes,
                describe(c, isa, stream) << ": first wrong byte at " << first_difference);
}

// The extents that put a block's edges before, on and after each tile boundary of element
// size `size`: register tiles are up to 32 x 16 elements, line tiles 64 / size square, bands
// four lines wide.
std::vector<int64_t> extents_for(size_t size) {
  const int64_t line = 64 / static_cast<int64_t>(size);
  return {1, 3, line - 1, line, line + 1, 2 * line + 5, 4 * line + 3, 9 * line + 1};
}

// Every element as the naive loop finds it through both tensors' strides and byte_offset.
void check_same_elements(const DLTensor* want, const DLTensor* got, const std::string& what) {
  REQUIRE(want->ndim == got->ndim);
  const size_t size = (static_cast<size_t>(want->dtype.bits) * want->dtype.lanes + 7) / 8;
  std::vector<int64_t> ws(static_cast<size_t>(want->ndim)), gs(ws.size()), index(ws.size(), 0);
  REQUIRE(dlb_tensor_get_strides(want, want->ndim, ws.data(), nullptr) == DLB_OK);
  REQUIRE(dlb_tensor_get_strides(got, got->ndim, gs.data(), nullptr) == DLB_OK);
  int64_t count = 0;
  REQUIRE(dlb_tensor_element_count(want, &count, nullptr) == DLB_OK);
  const char* w = static_cast<const char*>(want->data) + want->byte_offset;
  const char* g = static_cast<const char*>(got->data) + got->byte_offset;
  int64_t wrong = 0, first_wrong = -1;
  for (int64_t i = 0; i < count; ++i) {
    int64_t wo = 0, go = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      wo += index[d] * ws[d];
      go += index[d] * gs[d];
    }
    if (std::memcmp(w + wo * static_cast<int64_t>(size), g + go * static_cast<int64_t>(size), size) != 0) {
      if (wrong++ == 0) first_wrong = i;
    }
    for (int32_t d = want->ndim - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < want->shape[d]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
  CHECK_MESSAGE(wrong == 0, what << ": " << wrong << " wrong elements, the first at " << first_wrong);
}

// Owns a tensor for the duration of a test case.
struct Owned {
  DLManagedTensorVersioned* t = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { dlb_tensor_free(t); }
  DLManagedTensorVersioned** out() { return &t; }
  DLTensor* dl() { return &t->dl_tensor; }
};

// A compact CPU tensor of `shape` holding the byte pattern.
void patterned(Owned& out, DLDataType type, std::vector<int64_t> shape) {
  dlb_error err = fresh_error();
  REQUIRE(dlb_tensor_allocate(cpu(), type, static_cast<int32_t>(shape.size()), shape.data(), nullptr,
                              0, out.out(), &err) == DLB_OK);
  uint64_t bytes = 0;
  REQUIRE(dlb_tensor_byte_size(out.dl(), 0, &bytes, &err) == DLB_OK);
  std::vector<unsigned char> pattern(static_cast<size_t>(bytes));
  fill_pattern(pattern, static_cast<uint32_t>(bytes));
  std::memcpy(out.dl()->data, pattern.data(), pattern.size());
}

// dlb_tensor_copy of `view`: a compact copy with the same elements.
void check_copy(DLManagedTensorVersioned* view, const std::string& what) {
  Owned copy;
  dlb_error err = fresh_error();
  REQUIRE_MESSAGE(dlb_tensor_copy(view, cpu(), copy.out(), &err) == DLB_OK, what << ": " << msg(err));
  CHECK(dlb_tensor_is_c_contiguous(copy.dl()) == 1);
  check_same_elements(&view->dl_tensor, copy.dl(), what + " (copy)");
}

// dlb_tensor_copy_into of `src` into `dst`: dst then holds src's elements.
void check_copy_into(DLManagedTensorVersioned* src, DLManagedTensorVersioned* dst,
                     const std::string& what) {
  dlb_error err = fresh_error();
  REQUIRE_MESSAGE(dlb_tensor_copy_into(src, dst, &err) == DLB_OK, what << ": " << msg(err));
  check_same_elements(&src->dl_tensor, &dst->dl_tensor, what + " (copy_into)");
}

}  // namespace

TEST_CASE("the kernels in use are ones this CPU runs, and only those can be forced") {
  const dlb::CopyIsa active = dlb::active_copy_isa();
  CHECK(dlb::copy_isa_supported(active));
  // The default is the strongest the CPU runs.
  for (int stronger = static_cast<int>(active) + 1; stronger <= static_cast<int>(dlb::CopyIsa::kAvx2); ++stronger) {
    CHECK_FALSE(dlb::copy_isa_supported(static_cast<dlb::CopyIsa>(stronger)));
  }
  CHECK(dlb::copy_isa_supported(dlb::CopyIsa::kPortable));
  CHECK_FALSE(dlb::force_copy_kernels(static_cast<dlb::CopyIsa>(3), 0));
  CHECK_FALSE(dlb::force_copy_kernels(static_cast<dlb::CopyIsa>(-1), 0));
  CHECK(dlb::active_copy_isa() == active);
  {
    ForcedKernels forced(dlb::CopyIsa::kPortable, 12345);
    CHECK(dlb::active_copy_isa() == dlb::CopyIsa::kPortable);
    CHECK(dlb::streaming_threshold() == 12345);
  }
  CHECK(dlb::active_copy_isa() == active);
  CHECK(dlb::streaming_threshold() == (uint64_t{8} << 20));
}

TEST_CASE("every transpose kernel copies blocks of every element size and edge exactly") {
  for (dlb::CopyIsa isa : supported_isas()) {
    for (size_t size : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
      const int64_t e = static_cast<int64_t>(size);
      const int64_t line = 64 / e;
      for (int64_t nj : extents_for(size)) {
        for (int64_t nk : extents_for(size)) {
          for (bool stream : {false, true}) {
            // Destination rows a whole number of lines long (streaming can write whole lines),
            // starting on a line or one element past it.
            const int64_t to_line = (line - nk % line) % line;
            run_block({size, nj, nk, 0, to_line, 0}, isa, stream);
            run_block({size, nj, nk, 3, to_line, e}, isa, stream);
          }
        }
      }
    }
  }
}

TEST_CASE("the transpose kernels: odd strides, reversed rows, misaligned and padded rows") {
  for (dlb::CopyIsa isa : supported_isas()) {
    for (size_t size : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
      const int64_t e = static_cast<int64_t>(size);
      const int64_t line = 64 / e;
      const int64_t nj = 3 * line + 7, nk = 5 * line + 2;
      const int64_t to_line = (line - nk % line) % line;
      for (bool stream : {false, true}) {
        // Rows a line apart but starting anywhere within a line: the columns before the first
        // line boundary go the plain way.
        for (int64_t shift = e; shift < 64; shift += 64 / 4) run_block({size, nj, nk, 1, to_line, shift}, isa, stream);
        // Rows that do not start at the same offset within a line: no streaming possible.
        run_block({size, nj, nk, 0, to_line + 1, 0}, isa, stream);
        run_block({size, nj, nk, 5, 3, 2 * e}, isa, stream);
        // Descending rows on either side.
        run_block({size, nj, nk, 2, to_line, 0, true, false}, isa, stream);
        run_block({size, nj, nk, 0, to_line, 0, false, true}, isa, stream);
        run_block({size, nj, nk, 0, to_line + line, e, true, true}, isa, stream);
      }
    }
  }
}

TEST_CASE("band tiles across whole and partial bands, source rows a power of two apart") {
  // The band tiles of 1- and 2-byte elements (and of 4-byte ones with AVX2) read their source
  // lines into a buffer and prefetch the next tile's lines, the next column of tiles or the
  // first of the next band, when they stream or the block has 4 MiB or more: blocks several
  // tiles wide, with whole bands of 4 lines and a partial one, whose source rows are a power of
  // two apart as in the benchmarks' transposes, small ones streamed and plain, and one of over
  // 4 MiB plain.
  for (dlb::CopyIsa isa : supported_isas()) {
    for (size_t size : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
      const int64_t e = static_cast<int64_t>(size);
      const int64_t line = 64 / e;
      const int64_t nj = 5 * line + 3, nk = 2 * 4 * line + 2 * line + 7;
      const int64_t src_pad = 1024 / e - nj;  // source rows 1024 bytes apart
      const int64_t to_line = (line - nk % line) % line;
      for (bool stream : {false, true}) {
        run_block({size, nj, nk, src_pad, to_line, 0}, isa, stream);
        run_block({size, nj, nk, src_pad, to_line, e}, isa, stream);
        run_block({size, nj, nk, src_pad, to_line, 0, true, false}, isa, stream);
      }
      // Over 4 MiB: about 2 KiB of columns by 2100 rows, source rows 4096 bytes apart.
      const int64_t big_nj = 2048 / e + 3, big_nk = 2048 + 2 * line + 5;
      const int64_t big_to_line = (line - big_nk % line) % line;
      run_block({size, big_nj, big_nk, 4096 / e - big_nj, big_to_line, 0}, isa, false);
    }
  }
}

TEST_CASE("blocks the register kernels do not take go the portable way, exactly") {
  // 3- and 16-byte elements, and layouts contiguous on neither side.
  for (dlb::CopyIsa isa : supported_isas()) {
    for (size_t size : {size_t{3}, size_t{16}}) {
      run_block({size, 37, 41, 2, 1, 0}, isa, true);
      run_block({size, 1, 19, 0, 0, 0, true, false}, isa, false);
    }
    std::vector<unsigned char> src(4 * 40 * 50), got(4 * 40 * 50, 0xA5), want = got;
    fill_pattern(src, 7);
    // Every second element of every second row: neither side contiguous.
    const dlb::StridedDim j{20, 8, 4 * 50 * 2}, k{25, 4 * 40 * 2, 8};
    reference_block(reinterpret_cast<char*>(want.data()), reinterpret_cast<const char*>(src.data()), j, k, 4);
    dlb::transpose_block(reinterpret_cast<char*>(got.data()), reinterpret_cast<const char*>(src.data()), j, k, 4, isa, true);
    CHECK_MESSAGE(got == want, isa_name(isa));
  }
}

TEST_CASE("copies of transposed views use every kernel exactly, new tensors and existing ones") {
  dlb_error err = fresh_error();
  for (dlb::CopyIsa isa : supported_isas()) {
    for (uint64_t threshold : {kNeverStream, kAlwaysStream}) {
      ForcedKernels forced(isa, threshold);
      const std::string mode = std::string(isa_name(isa)) + (threshold == 0 ? " streaming" : " plain");
      const std::pair<DLDataType, const char*> types[] = {
          {dtype(kDLUInt, 8), "uint8"}, {dtype(kDLFloat, 16), "float16"}, {dtype(kDLFloat, 32), "float32"},
          {dtype(kDLFloat, 64), "float64"}, {dtype(kDLComplex, 64), "complex64"}};
      for (const auto& [type, name] : types) {
        const std::string what = mode + " " + name;
        Owned base;
        patterned(base, type, {131, 77});
        // x.T
        Owned t;
        REQUIRE(dlb_tensor_transpose(base.t, t.out(), &err) == DLB_OK);
        check_copy(t.t, what + " x.T");
        // x[::-1, :].T and x[:, ::-1].T: descending source rows, then descending columns.
        for (int axis = 0; axis < 2; ++axis) {
          dlb_slice s[2] = {{DLB_SLICE_NONE, DLB_SLICE_NONE, 1}, {DLB_SLICE_NONE, DLB_SLICE_NONE, 1}};
          s[axis].step = -1;
          Owned reversed, rt;
          REQUIRE(dlb_tensor_slice(base.t, 2, s, reversed.out(), &err) == DLB_OK);
          REQUIRE(dlb_tensor_transpose(reversed.t, rt.out(), &err) == DLB_OK);
          check_copy(rt.t, what + (axis == 0 ? " x[::-1, :].T" : " x[:, ::-1].T"));
        }
        // x.T[3:-2, 1:]: a view whose first element is not the buffer's, rows not whole.
        dlb_slice inner[2] = {{3, -2, 1}, {1, DLB_SLICE_NONE, 1}};
        Owned view;
        REQUIRE(dlb_tensor_slice(t.t, 2, inner, view.out(), &err) == DLB_OK);
        check_copy(view.t, what + " x.T[3:-2, 1:]");
        // copy_into: x into an existing tensor's transpose, and x.T into a compact tensor.
        Owned target_base, target;
        patterned(target_base, type, {77, 131});
        REQUIRE(dlb_tensor_transpose(target_base.t, target.out(), &err) == DLB_OK);
        check_copy_into(base.t, target.t, what + " x into y.T");
        Owned compact;
        patterned(compact, type, {77, 131});
        check_copy_into(t.t, compact.t, what + " x.T into y");
      }
    }
  }
}

TEST_CASE("transposed copies from and into memory at any byte_offset, and batched transposes") {
  dlb_error err = fresh_error();
  for (dlb::CopyIsa isa : supported_isas()) {
    for (uint64_t threshold : {kNeverStream, kAlwaysStream}) {
      ForcedKernels forced(isa, threshold);
      const std::string mode = std::string(isa_name(isa)) + (threshold == 0 ? " streaming" : " plain");
      // A float32 (200, 150) matrix at byte_offset 4 of a wrapped buffer, read transposed, and a
      // float32 destination (150, 200) at byte_offset 8 whose rows are padded to 208 elements.
      std::vector<unsigned char> src_bytes(4 + 4 * 200 * 150), dst_bytes(8 + 4 * 208 * 150 + 64, 0xA5);
      fill_pattern(src_bytes, 99);
      int64_t shape_t[2] = {150, 200}, strides_t[2] = {1, 150};
      DLTensor src_desc{src_bytes.data(), cpu(), 2, dtype(kDLFloat, 32), shape_t, strides_t, 4};
      Owned src;
      REQUIRE(dlb_tensor_wrap(&src_desc, 0, nullptr, nullptr, src.out(), &err) == DLB_OK);
      check_copy(src.t, mode + " transposed view at byte_offset 4");
      int64_t dst_strides[2] = {208, 1};
      DLTensor dst_desc{dst_bytes.data(), cpu(), 2, dtype(kDLFloat, 32), shape_t, dst_strides, 8};
      Owned dst;
      REQUIRE(dlb_tensor_wrap(&dst_desc, 0, nullptr, nullptr, dst.out(), &err) == DLB_OK);
      std::vector<unsigned char> before = dst_bytes;
      check_copy_into(src.t, dst.t, mode + " into padded rows at byte_offset 8");
      // Nothing outside the destination's elements changed.
      size_t touched_outside = 0;
      for (size_t i = 0; i < dst_bytes.size(); ++i) {
        const int64_t offset = static_cast<int64_t>(i) - 8;
        const bool element = offset >= 0 && offset / 4 / 208 < 150 && offset / 4 % 208 < 200;
        if (!element && dst_bytes[i] != before[i]) ++touched_outside;
      }
      CHECK_MESSAGE(touched_outside == 0, mode << ": bytes outside the destination changed");

      // Batched: x.permute(0, 2, 1) of (3, 70, 90) uint16, and of (2, 33, 65, 2) float32 as
      // permute(0, 2, 1, 3): the trailing pair moves as one 8-byte element.
      Owned batch, permuted;
      patterned(batch, dtype(kDLUInt, 16), {3, 70, 90});
      const int32_t axes[3] = {0, 2, 1};
      REQUIRE(dlb_tensor_permute(batch.t, 3, axes, permuted.out(), &err) == DLB_OK);
      check_copy(permuted.t, mode + " uint16 permute(0, 2, 1)");
      Owned pairs, pairs_permuted;
      patterned(pairs, dtype(kDLFloat, 32), {2, 33, 65, 2});
      const int32_t pair_axes[4] = {0, 2, 1, 3};
      REQUIRE(dlb_tensor_permute(pairs.t, 4, pair_axes, pairs_permuted.out(), &err) == DLB_OK);
      check_copy(pairs_permuted.t, mode + " float32 pairs permute(0, 2, 1, 3)");
      // Three uint8 channels (not a power-of-two width) stay elements of their own.
      Owned pixels, pixels_permuted;
      patterned(pixels, dtype(kDLUInt, 8), {45, 67, 3});
      const int32_t pixel_axes[3] = {1, 0, 2};
      REQUIRE(dlb_tensor_permute(pixels.t, 3, pixel_axes, pixels_permuted.out(), &err) == DLB_OK);
      check_copy(pixels_permuted.t, mode + " uint8 pixels permute(1, 0, 2)");
    }
  }
}
