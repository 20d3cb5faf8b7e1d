// The index arithmetic of the CUDA copy kernels, as __host__ __device__ functions: the kernels
// in cuda_kernels.cu use them on the GPU, and tests run them on the host to check every layout
// on machines without a GPU.
#ifndef DLBRIDGE_SRC_CUDA_CUDA_KERNELS_HPP_
#define DLBRIDGE_SRC_CUDA_CUDA_KERNELS_HPP_

#include <cstdint>

#include <cuda_runtime.h>

#include "cuda_copy.hpp"

namespace dlb {
namespace cuda {

// Division by a divisor fixed at launch as a multiply-high and a shift (Granlund and
// Montgomery): a hardware 32-bit division is about 20 instructions, which would make index
// arithmetic, not memory bandwidth, the limit of the element-wise kernel. Exact for every
// 32-bit dividend.
struct FastDivisor {
  uint32_t divisor;
  uint32_t multiplier;
  uint32_t shift;
};

inline FastDivisor make_fast_divisor(uint32_t divisor) {
  FastDivisor d{divisor, 0, 0};
  if (divisor > 1) {
    uint32_t shift = 0;
    while ((uint64_t{1} << shift) < divisor) ++shift;  // ceil(log2(divisor))
    d.shift = shift;
    d.multiplier = static_cast<uint32_t>(
        ((uint64_t{1} << 32) * ((uint64_t{1} << shift) - divisor)) / divisor + 1);
  }
  return d;
}

__host__ __device__ inline uint32_t fast_divide(uint32_t n, FastDivisor d) {
#if defined(__CUDA_ARCH__)
  const uint32_t high = __umulhi(n, d.multiplier);
#else
  const uint32_t high = static_cast<uint32_t>((uint64_t{n} * d.multiplier) >> 32);
#endif
  return static_cast<uint32_t>((uint64_t{high} + n) >> d.shift);
}

// ---- element-wise kernel: one word per thread and iteration ------------------------------

struct ElementwiseArgs {
  const void* src;
  void* dst;
  int64_t count;
  int32_t ndim;
  FastDivisor extent[kMaxKernelDims];  // used when count < 2^31 (the 32-bit kernel)
  int64_t shape[kMaxKernelDims];
  int64_t src_stride[kMaxKernelDims];
  int64_t dst_stride[kMaxKernelDims];
};

// Indexes below this use 32-bit arithmetic: a grid-stride loop index stays below 2^32.
constexpr int64_t kIndex32Limit = int64_t{1} << 31;

inline ElementwiseArgs make_elementwise_args(const CopyPlan& plan) {
  ElementwiseArgs a{};
  a.src = plan.src;
  a.dst = plan.dst;
  a.count = plan.count;
  a.ndim = plan.ndim;
  for (int32_t i = 0; i < plan.ndim; ++i) {
    a.shape[i] = plan.shape[i];
    a.src_stride[i] = plan.src_stride[i];
    a.dst_stride[i] = plan.dst_stride[i];
    if (plan.count < kIndex32Limit) a.extent[i] = make_fast_divisor(static_cast<uint32_t>(plan.shape[i]));
  }
  return a;
}

// Word offsets of element `index` (row-major over the plan's dimensions) on both sides.
__host__ __device__ inline void elementwise_offsets32(const ElementwiseArgs& a, uint32_t index,
                                                      int64_t* src_offset, int64_t* dst_offset) {
  int64_t so = 0, doff = 0;
  uint32_t rest = index;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int32_t d = kMaxKernelDims - 1; d > 0; --d) {
    if (d >= a.ndim) continue;
    const uint32_t quotient = fast_divide(rest, a.extent[d]);
    const int64_t coordinate = rest - quotient * a.extent[d].divisor;
    so += coordinate * a.src_stride[d];
    doff += coordinate * a.dst_stride[d];
    rest = quotient;
  }
  *src_offset = so + static_cast<int64_t>(rest) * a.src_stride[0];
  *dst_offset = doff + static_cast<int64_t>(rest) * a.dst_stride[0];
}

__host__ __device__ inline void elementwise_offsets64(const ElementwiseArgs& a, int64_t index,
                                                      int64_t* src_offset, int64_t* dst_offset) {
  int64_t so = 0, doff = 0;
  int64_t rest = index;
  for (int32_t d = a.ndim - 1; d > 0; --d) {
    const int64_t quotient = rest / a.shape[d];
    const int64_t coordinate = rest - quotient * a.shape[d];
    so += coordinate * a.src_stride[d];
    doff += coordinate * a.dst_stride[d];
    rest = quotient;
  }
  *src_offset = so + rest * a.src_stride[0];
  *dst_offset = doff + rest * a.dst_stride[0];
}

// ---- tiled transpose: the source is contiguous along `rows`, the destination along `cols` ---

constexpr int kTile = 32;       // a kTile x kTile tile per block
constexpr int kTileRows = 8;    // threads per block: kTile x kTileRows

struct TransposeArgs {
  const void* src;
  void* dst;
  int64_t rows;  // the dimension along which the source is contiguous
  int64_t cols;  // the destination's innermost dimension
  int64_t src_row_stride, src_col_stride, dst_row_stride, dst_col_stride;
  int64_t batch;  // product of the other dimensions' extents
  int32_t batch_ndim;
  int64_t batch_shape[kMaxKernelDims];
  int64_t batch_src_stride[kMaxKernelDims];
  int64_t batch_dst_stride[kMaxKernelDims];
};

// The dimension a tiled transpose reads along, or -1 when the element-wise kernel fits
// better: the source must be contiguous (stride +-1 word) along a dimension other than the
// destination's innermost one, and both must be long enough to fill tiles.
inline int32_t transpose_row_dimension(const CopyPlan& plan) {
  const int32_t inner = plan.ndim - 1;
  if (plan.ndim < 2 || plan.shape[inner] < kTile / 4) return -1;
  if (plan.src_stride[inner] == 1 || plan.src_stride[inner] == -1) return -1;
  for (int32_t i = 0; i < inner; ++i) {
    if ((plan.src_stride[i] == 1 || plan.src_stride[i] == -1) && plan.shape[i] >= kTile / 4) return i;
  }
  return -1;
}

inline TransposeArgs make_transpose_args(const CopyPlan& plan, int32_t row_dim) {
  TransposeArgs a{};
  const int32_t inner = plan.ndim - 1;
  a.src = plan.src;
  a.dst = plan.dst;
  a.rows = plan.shape[row_dim];
  a.cols = plan.shape[inner];
  a.src_row_stride = plan.src_stride[row_dim];
  a.dst_row_stride = plan.dst_stride[row_dim];
  a.src_col_stride = plan.src_stride[inner];
  a.dst_col_stride = plan.dst_stride[inner];
  a.batch = 1;
  for (int32_t i = 0; i < inner; ++i) {
    if (i == row_dim) continue;
    a.batch_shape[a.batch_ndim] = plan.shape[i];
    a.batch_src_stride[a.batch_ndim] = plan.src_stride[i];
    a.batch_dst_stride[a.batch_ndim] = plan.dst_stride[i];
    ++a.batch_ndim;
    a.batch *= plan.shape[i];
  }
  return a;
}

// Word offsets of the start of batch entry `b` on both sides.
__host__ __device__ inline void batch_offsets(const TransposeArgs& a, int64_t b,
                                              int64_t* src_offset, int64_t* dst_offset) {
  int64_t so = 0, doff = 0;
  for (int32_t d = a.batch_ndim - 1; d >= 0; --d) {
    const int64_t quotient = b / a.batch_shape[d];
    const int64_t coordinate = b - quotient * a.batch_shape[d];
    so += coordinate * a.batch_src_stride[d];
    doff += coordinate * a.batch_dst_stride[d];
    b = quotient;
  }
  *src_offset = so;
  *dst_offset = doff;
}

}  // namespace cuda
}  // namespace dlb

#endif  // DLBRIDGE_SRC_CUDA_CUDA_KERNELS_HPP_
