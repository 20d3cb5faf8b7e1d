// Suite 'cuda', part that needs no GPU: the copy planning of the CUDA backend and the index
// arithmetic of its kernels, run on the host. An emulator executes each planned kernel the way
// the GPU would (thread by thread, a tiled transpose in its two phases around __syncthreads)
// over host memory, and the result is compared byte for byte with a reference element loop,
// for fixed layouts and thousands of random ones: every word size, negative, zero and
// permuted strides, byte offsets that force narrow words, multi-lane elements.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cuda/cuda_kernels.hpp"

using dlb::cuda::CopyPlan;

namespace {

// One side of a copy: a buffer, the first element's byte position in it, strides in elements.
struct Side {
  std::vector<unsigned char> memory;
  int64_t first = 0;
  std::vector<int64_t> strides;
};

// Places a layout in a buffer big enough for every element it reaches, with `pad` spare bytes
// before and after (pad also shifts the start off word boundaries when odd).
Side make_side(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, uint64_t unit,
               int64_t pad) {
  Side side;
  side.strides = strides;
  int64_t low = 0, high = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) continue;
    const int64_t reach = (shape[i] - 1) * strides[i] * static_cast<int64_t>(unit);
    (reach < 0 ? low : high) += reach;
  }
  side.first = pad - low;
  side.memory.assign(static_cast<size_t>(high - low + static_cast<int64_t>(unit) + 2 * pad), 0);
  return side;
}

// The reference: element by element in row-major order of the shape.
void reference_copy(const std::vector<int64_t>& shape, uint64_t unit, const Side& src, Side* dst) {
  int64_t count = 1;
  for (int64_t n : shape) count *= n;
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t so = src.first, doff = dst->first;
    for (size_t i = 0; i < shape.size(); ++i) {
      so += index[i] * src.strides[i] * static_cast<int64_t>(unit);
      doff += index[i] * dst->strides[i] * static_cast<int64_t>(unit);
    }
    std::memcpy(&dst->memory[static_cast<size_t>(doff)], &src.memory[static_cast<size_t>(so)], unit);
    for (size_t i = shape.size(); i-- > 0;) {
      if (++index[i] < shape[i]) break;
      index[i] = 0;
    }
  }
}

void copy_word(const CopyPlan& plan, int64_t dst_word, int64_t src_word) {
  std::memcpy(static_cast<char*>(plan.dst) + dst_word * plan.word,
              static_cast<const char*>(plan.src) + src_word * plan.word, static_cast<size_t>(plan.word));
}

// Runs the element-wise kernel's loop as `threads` GPU threads would, in both index widths.
void emulate_elementwise(const CopyPlan& plan, bool force64) {
  const dlb::cuda::ElementwiseArgs a = dlb::cuda::make_elementwise_args(plan);
  const int64_t threads = 97;  // a grid smaller than the work: exercises the grid-stride loop
  for (int64_t t = 0; t < threads; ++t) {
    for (int64_t i = t; i < a.count; i += threads) {
      int64_t so, doff;
      if (!force64 && a.count < dlb::cuda::kIndex32Limit) {
        dlb::cuda::elementwise_offsets32(a, static_cast<uint32_t>(i), &so, &doff);
      } else {
        dlb::cuda::elementwise_offsets64(a, i, &so, &doff);
      }
      copy_word(plan, doff, so);
    }
  }
}

// Runs the tiled transpose kernel block by block, each block's two phases in order, with a
// grid of 2 x 2 x 2 blocks so that every grid-stride loop turns.
void emulate_transpose(const CopyPlan& plan, int32_t row_dim) {
  using dlb::cuda::kTile;
  using dlb::cuda::kTileRows;
  const dlb::cuda::TransposeArgs a = dlb::cuda::make_transpose_args(plan, row_dim);
  const int64_t grid = 2;
  const int64_t row_tiles = (a.rows + kTile - 1) / kTile, col_tiles = (a.cols + kTile - 1) / kTile;
  std::vector<int64_t> tile(kTile * (kTile + 1), -1);  // holds source word offsets
  for (int64_t bz = 0; bz < grid; ++bz)
    for (int64_t by = 0; by < grid; ++by)
      for (int64_t bx = 0; bx < grid; ++bx)
        for (int64_t b = bz; b < a.batch; b += grid) {
          int64_t src_base, dst_base;
          dlb::cuda::batch_offsets(a, b, &src_base, &dst_base);
          for (int64_t rt = by; rt < row_tiles; rt += grid) {
            for (int64_t ct = bx; ct < col_tiles; ct += grid) {
              const int64_t row0 = rt * kTile, col0 = ct * kTile;
              for (int ty = 0; ty < kTileRows; ++ty)
                for (int tx = 0; tx < kTile; ++tx) {
                  const int64_t r = row0 + tx;
                  for (int k = ty; k < kTile; k += kTileRows) {
                    const int64_t c = col0 + k;
                    if (r < a.rows && c < a.cols) {
                      tile[k * (kTile + 1) + tx] = src_base + r * a.src_row_stride + c * a.src_col_stride;
                    }
                  }
                }
              for (int ty = 0; ty < kTileRows; ++ty)
                for (int tx = 0; tx < kTile; ++tx) {
                  const int64_t c = col0 + tx;
                  for (int k = ty; k < kTile; k += kTileRows) {
                    const int64_t row = row0 + k;
                    if (row < a.rows && c < a.cols) {
                      copy_word(plan, dst_base + row * a.dst_row_stride + c * a.dst_col_stride,
                                tile[tx * (kTile + 1) + k]);
                    }
                  }
                }
            }
          }
        }
}

// Plans and emulates one copy, compares with the reference. Returns the kernel chosen
// (0 memcpy, 1 element-wise, 2 transpose) so that tests can check the dispatch.
int check_copy(const std::vector<int64_t>& shape, const std::vector<int64_t>& src_strides,
               const std::vector<int64_t>& dst_strides, uint64_t unit, int64_t src_pad, int64_t dst_pad) {
  Side src = make_side(shape, src_strides, unit, src_pad);
  for (size_t i = 0; i < src.memory.size(); ++i) src.memory[i] = static_cast<unsigned char>(i * 7 + 3);
  Side expected = make_side(shape, dst_strides, unit, dst_pad);
  std::memset(expected.memory.data(), 0xEE, expected.memory.size());
  Side actual = expected;
  int64_t count = 1;
  for (int64_t n : shape) count *= n;
  if (count == 0) return 0;  // the backend never sees empty copies
  reference_copy(shape, unit, src, &expected);

  CopyPlan plan;
  REQUIRE(dlb::cuda::make_copy_plan(static_cast<int32_t>(shape.size()), shape.data(), src.strides.data(),
                                    actual.strides.data(), unit, src.memory.data() + src.first,
                                    actual.memory.data() + actual.first, &plan));
  CHECK(plan.count * plan.word == count * static_cast<int64_t>(unit));
  CHECK(reinterpret_cast<uintptr_t>(plan.src) % static_cast<uintptr_t>(plan.word) == 0);
  CHECK(reinterpret_cast<uintptr_t>(plan.dst) % static_cast<uintptr_t>(plan.word) == 0);
  int kernel;
  const void* src_low;
  void* dst_low;
  if (dlb::cuda::plan_is_one_run(plan, &src_low, &dst_low)) {
    std::memcpy(dst_low, src_low, static_cast<size_t>(plan.count * plan.word));
    kernel = 0;
  } else if (dlb::cuda::transpose_row_dimension(plan) >= 0) {
    emulate_transpose(plan, dlb::cuda::transpose_row_dimension(plan));
    kernel = 2;
  } else {
    emulate_elementwise(plan, false);
    CHECK(actual.memory == expected.memory);
    std::memset(actual.memory.data(), 0xEE, actual.memory.size());
    emulate_elementwise(plan, true);
    kernel = 1;
  }
  CHECK(actual.memory == expected.memory);
  return kernel;
}

std::vector<int64_t> compact(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  return strides;
}

}  // namespace

TEST_CASE("fast division is exact") {
  std::mt19937 rng(7);
  std::vector<uint32_t> divisors = {1, 2, 3, 5, 7, 31, 32, 33, 1000, 65535, 65536, 65537, 0x7FFFFFFFu,
                                    0x80000000u, 0x80000001u, 0xFFFFFFFFu};
  for (int i = 0; i < 200; ++i) divisors.push_back(rng() | 1u);
  for (uint32_t d : divisors) {
    CAPTURE(d);
    const dlb::cuda::FastDivisor fd = dlb::cuda::make_fast_divisor(d);
    std::vector<uint32_t> values = {0, 1, d - 1, d, d + 1, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
    for (int k = 0; k < 500; ++k) values.push_back(rng());
    for (uint32_t n : values) {
      CAPTURE(n);
      CHECK(dlb::cuda::fast_divide(n, fd) == n / d);
    }
  }
}

TEST_CASE("plans: word size, merging and the kernel chosen") {
  alignas(64) static unsigned char src[4096], dst[4096];
  CopyPlan plan;
  // Compact float32 6x4 both sides: one run of 16-byte words.
  const int64_t shape[] = {6, 4}, rowmajor[] = {4, 1}, colmajor[] = {1, 6};
  REQUIRE(dlb::cuda::make_copy_plan(2, shape, rowmajor, rowmajor, 4, src, dst, &plan));
  CHECK(plan.ndim == 1);
  CHECK(plan.word == 16);
  CHECK(plan.count == 6);
  // A byte offset of 2 on one side: 2-byte words.
  REQUIRE(dlb::cuda::make_copy_plan(2, shape, rowmajor, rowmajor, 4, src + 2, dst, &plan));
  CHECK(plan.word == 2);
  CHECK(plan.ndim == 1);
  CHECK(plan.count == 48);
  // Rows of 3 uint8 out of 4 (x[:, :3]): 1-byte words, two dimensions.
  const int64_t rows3[] = {6, 3}, stride4[] = {4, 1}, stride3[] = {3, 1};
  REQUIRE(dlb::cuda::make_copy_plan(2, rows3, stride4, stride3, 1, src, dst, &plan));
  CHECK(plan.word == 1);
  CHECK(plan.ndim == 2);
  // Rows of 8 uint8 out of 16: 8-byte words.
  const int64_t rows8[] = {6, 8}, stride16[] = {16, 1}, stride8[] = {8, 1};
  REQUIRE(dlb::cuda::make_copy_plan(2, rows8, stride16, stride8, 1, src, dst, &plan));
  CHECK(plan.word == 8);
  CHECK(plan.ndim == 2);
  CHECK(plan.shape[1] == 1);
  CHECK(plan.src_stride[0] == 2);
  CHECK(plan.dst_stride[0] == 1);
  // A transpose keeps two dimensions, the destination's innermost last.
  REQUIRE(dlb::cuda::make_copy_plan(2, shape, colmajor, rowmajor, 4, src, dst, &plan));
  CHECK(plan.ndim == 2);
  CHECK(plan.word == 4);
  CHECK(plan.dst_stride[1] == 1);
  CHECK(plan.src_stride[1] == 6);
  CHECK(dlb::cuda::transpose_row_dimension(plan) == -1);  // 4 columns: too narrow for tiles
  const int64_t wide[] = {64, 64}, wide_rows[] = {64, 1}, wide_cols[] = {1, 64};
  REQUIRE(dlb::cuda::make_copy_plan(2, wide, wide_cols, wide_rows, 8, src, dst, &plan));
  CHECK(dlb::cuda::transpose_row_dimension(plan) == 0);
  // 0-d: one element.
  REQUIRE(dlb::cuda::make_copy_plan(0, nullptr, nullptr, nullptr, 8, src, dst, &plan));
  CHECK(plan.ndim == 1);
  CHECK(plan.count == 1);
  CHECK(plan.word == 8);
  // More than 8 dimensions that cannot merge: refused (the backend then stages on the host).
  int64_t many_shape[10], many_src[10], many_dst[10];
  int64_t step = 1, src_step = 1;
  for (int i = 9; i >= 0; --i) {
    many_shape[i] = 2;
    many_dst[i] = step;
    many_src[i] = src_step;  // gaps everywhere in the source: nothing merges
    step *= 2;
    src_step *= 5;
  }
  CHECK_FALSE(dlb::cuda::make_copy_plan(10, many_shape, many_src, many_dst, 1, src, dst, &plan));
}

TEST_CASE("fixed layouts: contiguous, transposed, sliced, negative, broadcast, multi-lane") {
  for (uint64_t unit : {1u, 2u, 3u, 4u, 6u, 8u, 12u, 16u}) {
    CAPTURE(unit);
    const std::vector<int64_t> s2 = {37, 70};
    CHECK(check_copy(s2, compact(s2), compact(s2), unit, 0, 0) == 0);
    // transposed source (column-major) into row-major
    const int transposed = check_copy(s2, {1, 37}, compact(s2), unit, 0, 0);
    CHECK(transposed == (unit == 3 || unit == 6 || unit == 12 ? 1 : 2));
    // odd padding: narrower words
    check_copy(s2, {1, 37}, compact(s2), unit, 1, 3);
    // x[::-1, ::2] into compact
    check_copy(s2, {-140, 2}, compact(s2), unit, 0, 0);
    // broadcast source (stride 0) along rows
    check_copy(s2, {0, 1}, compact(s2), unit, 0, 0);
    // scatter into a strided destination with negative strides
    check_copy(s2, compact(s2), {-1, -74}, unit, 0, 0);
    // 3-d permutation (2, 0, 1)
    const std::vector<int64_t> s3 = {9, 40, 33};
    check_copy(s3, {33, 9 * 33, 1}, compact(s3), unit, 0, 0);
    check_copy(s3, {1, 9, 360}, compact(s3), unit, 8, 8);
    // 0-d and single element
    check_copy({}, {}, {}, unit, 0, 0);
    check_copy({1, 1}, {5, 9}, {1, 1}, unit, 0, 0);
    // both reversed the same way: one run from the low end (elements of one word)
    const int reversed = check_copy({50}, {-1}, {-1}, unit, 0, 0);
    CHECK(reversed == (unit == 3 || unit == 6 || unit == 12 ? 1 : 0));
  }
}

TEST_CASE("random layouts") {
  std::mt19937 rng(12345);
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint32_t>(hi - lo + 1));
  };
  const uint64_t units[] = {1, 2, 4, 8, 16, 3, 6, 12};
  int kernels[3] = {0, 0, 0};
  for (int iteration = 0; iteration < 3000; ++iteration) {
    const int ndim = static_cast<int>(pick(1, 4));
    std::vector<int64_t> shape(static_cast<size_t>(ndim));
    for (auto& n : shape) n = pick(1, ndim <= 2 ? 80 : 20);
    // A layout: a random order of the dimensions in memory, random steps (slices), random signs.
    auto random_strides = [&](bool allow_zero) {
      std::vector<size_t> order(static_cast<size_t>(ndim));
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<int64_t> strides(static_cast<size_t>(ndim));
      int64_t step = pick(1, 2);
      for (size_t k = order.size(); k-- > 0;) {
        const size_t d = order[k];
        strides[d] = step * (pick(0, 3) == 0 ? -1 : 1);
        if (allow_zero && pick(0, 9) == 0) strides[d] = 0;
        step *= shape[d] * pick(1, 2);
      }
      return strides;
    };
    const uint64_t unit = units[pick(0, 7)];
    const std::vector<int64_t> src_strides = random_strides(true);
    const std::vector<int64_t> dst_strides = pick(0, 2) == 0 ? compact(shape) : random_strides(false);
    CAPTURE(iteration);
    kernels[check_copy(shape, src_strides, dst_strides, unit, pick(0, 3) == 0 ? pick(1, 15) : 0,
                       pick(0, 3) == 0 ? pick(1, 15) : 0)]++;
  }
  // The random layouts exercised every path.
  CHECK(kernels[0] > 0);
  CHECK(kernels[1] > 100);
  CHECK(kernels[2] > 100);
}
