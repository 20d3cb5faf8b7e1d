// Planning of CUDA copies, on the host: the word size, the merged dimensions. Kept apart from
// the CUDA calls so that tests can check plans on machines without a GPU.
#include "cuda_copy_plan.hpp"

#include "../internal.hpp"

namespace dlb {
namespace cuda {

bool make_copy_plan(int32_t ndim, const int64_t* shape, const int64_t* src_strides,
                    const int64_t* dst_strides, uint64_t unit, const void* src_first,
                    void* dst_first, CopyPlan* plan) {
  // The widest word that keeps every access aligned: it must divide the element size, both
  // start addresses and every byte stride.
  uint64_t alignment = unit | reinterpret_cast<uintptr_t>(src_first) |
                       reinterpret_cast<uintptr_t>(dst_first);
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] == 1) continue;
    alignment |= static_cast<uint64_t>(src_strides[i]) * unit;
    alignment |= static_cast<uint64_t>(dst_strides[i]) * unit;
  }
  int64_t word = 16;
  while (word > 1 && (alignment % static_cast<uint64_t>(word)) != 0) word /= 2;
  const int64_t words_per_element = static_cast<int64_t>(unit) / word;

  StridedDim dims[DLB_MAX_NDIM + 1];
  int32_t n = 0;
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] == 1) continue;
    dims[n++] = StridedDim{shape[i], src_strides[i] * words_per_element,
                           dst_strides[i] * words_per_element};
  }
  if (words_per_element > 1) dims[n++] = StridedDim{words_per_element, 1, 1};
  if (n == 0) dims[n++] = StridedDim{1, 1, 1};  // one element of one word
  n = simplify_dims(dims, n);
  if (n > kMaxKernelDims) return false;

  // Runs contiguous on both sides may allow wider words than one element: a row of uint8
  // moves 16 bytes per thread instead of one, when the run length, every other stride and
  // both addresses allow it.
  StridedDim& inner = dims[n - 1];
  while (word < 16 && inner.ss == 1 && inner.ds == 1 && inner.n % 2 == 0) {
    const uint64_t wider = static_cast<uint64_t>(word) * 2;
    bool fits = (reinterpret_cast<uintptr_t>(src_first) % wider) == 0 &&
                (reinterpret_cast<uintptr_t>(dst_first) % wider) == 0;
    for (int32_t i = 0; fits && i < n - 1; ++i) fits = dims[i].ss % 2 == 0 && dims[i].ds % 2 == 0;
    if (!fits) break;
    for (int32_t i = 0; i < n - 1; ++i) {
      dims[i].ss /= 2;
      dims[i].ds /= 2;
    }
    inner.n /= 2;
    word *= 2;
  }

  plan->src = src_first;
  plan->dst = dst_first;
  plan->ndim = n;
  plan->word = static_cast<int32_t>(word);
  plan->count = 1;
  for (int32_t i = 0; i < n; ++i) {
    plan->shape[i] = dims[i].n;
    plan->src_stride[i] = dims[i].ss;
    plan->dst_stride[i] = dims[i].ds;
    plan->count *= dims[i].n;
  }
  return true;
}

bool plan_is_one_run(const CopyPlan& plan, const void** src_low, void** dst_low) {
  if (plan.ndim != 1) return false;
  const int64_t ss = plan.src_stride[0], ds = plan.dst_stride[0];
  if (plan.shape[0] == 1 || (ss == 1 && ds == 1)) {
    *src_low = plan.src;
    *dst_low = plan.dst;
    return true;
  }
  if (ss == -1 && ds == -1) {
    const int64_t back = (plan.shape[0] - 1) * plan.word;
    *src_low = static_cast<const char*>(plan.src) - back;
    *dst_low = static_cast<char*>(plan.dst) - back;
    return true;
  }
  return false;
}

}  // namespace cuda
}  // namespace dlb
