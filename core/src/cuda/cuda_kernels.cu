// The CUDA copy kernels: a tiled transpose for layouts where source and destination are
// contiguous along different dimensions, and an element-wise gather/scatter for the rest.
// Dense copies never get here: they are one cudaMemcpyAsync.
#include <cstdint>
#include <type_traits>

#include "cuda_kernels.hpp"

namespace dlb {
namespace cuda {
namespace {

// The type a thread moves at once: plain integers up to 8 bytes, the 16-byte aligned uint4 above.
template <int Bytes>
using WordOf = std::conditional_t<
    Bytes == 1, uint8_t,
    std::conditional_t<Bytes == 2, uint16_t,
                       std::conditional_t<Bytes == 4, uint32_t, std::conditional_t<Bytes == 8, uint64_t, uint4>>>>;

template <typename W>
__global__ void copy_elementwise32(ElementwiseArgs a) {
  const W* src = static_cast<const W*>(a.src);
  W* dst = static_cast<W*>(a.dst);
  const uint32_t count = static_cast<uint32_t>(a.count);
  const uint32_t step = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
    int64_t so, doff;
    elementwise_offsets32(a, i, &so, &doff);
    dst[doff] = src[so];
  }
}

template <typename W>
__global__ void copy_elementwise64(ElementwiseArgs a) {
  const W* src = static_cast<const W*>(a.src);
  W* dst = static_cast<W*>(a.dst);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.count;
       i += step) {
    int64_t so, doff;
    elementwise_offsets64(a, i, &so, &doff);
    dst[doff] = src[so];
  }
}

// Reads a kTile x kTile tile with consecutive threads along the source's contiguous
// dimension, and writes it with consecutive threads along the destination's: both sides move
// whole memory transactions. The extra column keeps the transposed reads of shared memory
// free of bank conflicts. Every loop bound depends only on the block, so all threads reach
// every __syncthreads.
template <typename W>
__global__ void copy_transpose(TransposeArgs a) {
  __shared__ W tile[kTile][kTile + 1];
  const W* src = static_cast<const W*>(a.src);
  W* dst = static_cast<W*>(a.dst);
  const int64_t row_tiles = (a.rows + kTile - 1) / kTile;
  const int64_t col_tiles = (a.cols + kTile - 1) / kTile;
  for (int64_t b = blockIdx.z; b < a.batch; b += gridDim.z) {
    int64_t src_base, dst_base;
    batch_offsets(a, b, &src_base, &dst_base);
    for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
      for (int64_t ct = blockIdx.x; ct < col_tiles; ct += gridDim.x) {
        const int64_t row0 = rt * kTile, col0 = ct * kTile;
        const int64_t r = row0 + threadIdx.x;
        for (int k = threadIdx.y; k < kTile; k += kTileRows) {
          const int64_t c = col0 + k;
          if (r < a.rows && c < a.cols) {
            tile[k][threadIdx.x] = src[src_base + r * a.src_row_stride + c * a.src_col_stride];
          }
        }
        __syncthreads();
        const int64_t c = col0 + threadIdx.x;
        for (int k = threadIdx.y; k < kTile; k += kTileRows) {
          const int64_t row = row0 + k;
          if (row < a.rows && c < a.cols) {
            dst[dst_base + row * a.dst_row_stride + c * a.dst_col_stride] = tile[threadIdx.x][k];
          }
        }
        __syncthreads();
      }
    }
  }
}

constexpr int64_t kMaxGridYZ = 65535;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // grid-stride loops cover the rest
constexpr int kThreads = 256;

int64_t at_most(int64_t value, int64_t limit) { return value < limit ? value : limit; }

template <int Bytes>
cudaError_t launch_words(const CopyPlan& plan, cudaStream_t stream) {
  using W = WordOf<Bytes>;
  const int32_t row_dim = transpose_row_dimension(plan);
  if (row_dim >= 0) {
    const TransposeArgs a = make_transpose_args(plan, row_dim);
    const dim3 block(kTile, kTileRows);
    const dim3 grid(static_cast<unsigned>(at_most((a.cols + kTile - 1) / kTile, kMaxBlocks)),
                    static_cast<unsigned>(at_most((a.rows + kTile - 1) / kTile, kMaxGridYZ)),
                    static_cast<unsigned>(at_most(a.batch, kMaxGridYZ)));
    copy_transpose<W><<<grid, block, 0, stream>>>(a);
  } else {
    const ElementwiseArgs a = make_elementwise_args(plan);
    const unsigned blocks =
        static_cast<unsigned>(at_most((plan.count + kThreads - 1) / kThreads, kMaxBlocks));
    if (plan.count < kIndex32Limit) {
      copy_elementwise32<W><<<blocks, kThreads, 0, stream>>>(a);
    } else {
      copy_elementwise64<W><<<blocks, kThreads, 0, stream>>>(a);
    }
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_copy(const CopyPlan& plan, cudaStream_t stream) {
  switch (plan.word) {
    case 1:
      return launch_words<1>(plan, stream);
    case 2:
      return launch_words<2>(plan, stream);
    case 4:
      return launch_words<4>(plan, stream);
    case 8:
      return launch_words<8>(plan, stream);
    default:
      return launch_words<16>(plan, stream);
  }
}

}  // namespace cuda
}  // namespace dlb
