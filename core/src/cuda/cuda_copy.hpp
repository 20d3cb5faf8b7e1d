// The CUDA backend's copies: the copy_bytes and copy_tensor callbacks, and the contract between
// the copy code (cuda_copy.cc, compiled by the host compiler) and the copy kernels
// (cuda_kernels.cu, compiled by nvcc): a strided copy described in words.
#ifndef DLBRIDGE_SRC_CUDA_CUDA_COPY_HPP_
#define DLBRIDGE_SRC_CUDA_CUDA_COPY_HPP_

#include <cstdint>

#include <cuda_runtime_api.h>

#include "dlbridge/dlbridge.h"

namespace dlb {
namespace cuda {

// Copies with more dimensions than this, after merging, are staged through the host instead.
constexpr int kMaxKernelDims = 8;

// One strided copy on one device. Every element is split into words (1, 2, 4, 8 or 16 bytes:
// the widest that divides the element size, both start addresses and every stride), so that
// a float32x3 element is three 4-byte words along an extra innermost dimension. Dimensions are
// ordered outermost first by destination stride (dlb::simplify_dims), extents are > 1 except
// for a lone dimension, and strides count words and may be negative or zero.
struct CopyPlan {
  const void* src;  // the first element of the source (data + byte_offset)
  void* dst;        // the first element of the destination
  int64_t count;    // words to copy, > 0
  int32_t ndim;     // 1 to kMaxKernelDims
  int32_t word;     // bytes per word
  int64_t shape[kMaxKernelDims];
  int64_t src_stride[kMaxKernelDims];
  int64_t dst_stride[kMaxKernelDims];
};

// Plans the copy of `ndim`-dimensional elements of `unit` bytes from the layout
// (`shape`, `src_strides`) starting at `src_first` to (`shape`, `dst_strides`) at `dst_first`
// (strides in elements). Returns false when, after merging, more than kMaxKernelDims
// dimensions are left. The addresses are only used for their alignment.
bool make_copy_plan(int32_t ndim, const int64_t* shape, const int64_t* src_strides,
                    const int64_t* dst_strides, uint64_t unit, const void* src_first,
                    void* dst_first, CopyPlan* plan);

// True when the plan is one run of words in the same order on both sides (strides both 1 or
// both -1): a plain memcpy of count * word bytes from the lowest addresses, which it writes.
bool plan_is_one_run(const CopyPlan& plan, const void** src_low, void** dst_low);

// Queues the copy on `stream` of the current device. Picks a tiled transpose when the source is
// contiguous along a dimension other than the destination's innermost one, and an element-wise
// kernel otherwise. Returns the launch status (cudaSuccess once queued).
cudaError_t launch_copy(const CopyPlan& plan, cudaStream_t stream);

// The dlb_backend copy_bytes and copy_tensor callbacks of the three CUDA backends.
int cuda_copy_bytes(void*, DLDevice dst_device, void* dst, uint64_t dst_offset, DLDevice src_device,
                    const void* src, uint64_t src_offset, uint64_t nbytes, void* stream,
                    dlb_error* error);
int cuda_copy_tensor(void*, const DLTensor* dst, uint64_t dst_flags, const DLTensor* src,
                     uint64_t src_flags, void* stream, dlb_error* error);

}  // namespace cuda
}  // namespace dlb

#endif  // DLBRIDGE_SRC_CUDA_CUDA_COPY_HPP_
