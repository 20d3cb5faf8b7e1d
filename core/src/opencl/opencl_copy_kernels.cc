// The OpenCL backend's kernel copies: enqueue_kernel_copy folds a strided copy into as few
// dimensions and as wide words as the layouts allow, picks the rows or the transposing tile
// kernel, and launches it with the launch shape of the device (GPU or CPU layout).
#include "opencl_copy_internal.hpp"

namespace dlb {
namespace opencl {

namespace {

// ---- strided copies -------------------------------------------------------------------------

// The kernels take up to this many outer dimensions as arguments.
constexpr int32_t kKernelOuterDims = 8;
// Below this extent on either side a transpose tile would be mostly empty: the rows kernel
// does better.
constexpr int64_t kMinTileExtent = 8;
// Launch shapes. Work-items loop over whatever a launch does not cover, so any size fits in
// one launch.
//  - GPU layout: the rows kernel's work-group has 64 work-items, split between the innermost
//    dimension and rows, with at most 16 groups along a row and about a million work-items in
//    all; the tile kernel's groups are 32x8, at most 4096 of them.
//  - CPU layout: a work-item copies a run of 16 KiB of a row or one 32x32 block; 64Ki
//    work-items at most, in groups the implementation picks.
constexpr size_t kRowsGroup = 64;
constexpr uint64_t kRowsGroupsPerRow = 16;
constexpr uint64_t kMaxWorkItems = uint64_t{1} << 20;
constexpr uint64_t kMaxTileGroups = 4096;
constexpr size_t kTileX = 32, kTileY = 8;
constexpr int64_t kCpuRunBytes = 16384;
constexpr uint64_t kCpuMaxWorkItems = uint64_t{1} << 16;

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// One launch of a copy kernel over `outer` (up to 8 dimensions), the tile dimension `j` when
// transposing (NULL otherwise) and the innermost dimension `k`; dimensions are in words.
int launch(const Api& api, Device& device, Submission& sub, int word_log2, const StridedDim* outer,
           int32_t nouter, const StridedDim* j, const StridedDim& k, cl_mem dst, int64_t dst_base,
           cl_mem src, int64_t src_base, dlb_error* error) {
  cl_long8 outer_n, outer_src, outer_dst;
  cl_long rows = 1;
  for (int32_t a = 0; a < kKernelOuterDims; ++a) {
    outer_n.s[a] = a < nouter ? outer[a].n : 1;
    outer_src.s[a] = a < nouter ? outer[a].ss : 0;
    outer_dst.s[a] = a < nouter ? outer[a].ds : 0;
    if (a < nouter) rows *= outer[a].n;
  }
  const cl_int nouter_arg = nouter;
  const cl_long dst_pos = dst_base, src_pos = src_base;
  size_t global[2] = {1, 1}, local[2] = {1, 1};
  cl_uint work_dims = 2;
  bool pick_local = false;
  cl_long chunk = 1;
  cl_kernel kernel = j == nullptr ? device.rows[word_log2] : device.tiles[word_log2];
  if (device.cpu_layout) {
    uint64_t items;
    if (j == nullptr) {
      chunk = kCpuRunBytes >> word_log2;
      items = static_cast<uint64_t>(rows) *
              ceil_div(static_cast<uint64_t>(k.n), static_cast<uint64_t>(chunk));
    } else {
      items = static_cast<uint64_t>(rows) * ceil_div(static_cast<uint64_t>(j->n), kTileX) *
              ceil_div(static_cast<uint64_t>(k.n), kTileX);
    }
    work_dims = 1;
    global[0] = static_cast<size_t>(items < kCpuMaxWorkItems ? items : kCpuMaxWorkItems);
    pick_local = true;
  } else if (j == nullptr) {
    size_t group = kRowsGroup;
    while (group > device.rows_group_size && group > 1) group /= 2;
    size_t lx = 1;
    while (lx < group && lx * 2 <= device.max_item_sizes[0] && static_cast<int64_t>(lx) < k.n) {
      lx *= 2;
    }
    size_t ly = group / lx;
    while (ly > device.max_item_sizes[1]) ly /= 2;
    uint64_t groups_x = ceil_div(static_cast<uint64_t>(k.n), lx);
    if (groups_x > kRowsGroupsPerRow) groups_x = kRowsGroupsPerRow;
    global[0] = lx * static_cast<size_t>(groups_x);
    uint64_t groups_y = ceil_div(static_cast<uint64_t>(rows), ly);
    const uint64_t cap = kMaxWorkItems / (global[0] * ly);
    if (groups_y > cap) groups_y = cap > 0 ? cap : 1;
    global[1] = ly * static_cast<size_t>(groups_y);
    local[0] = lx;
    local[1] = ly;
  } else {
    uint64_t tiles = ceil_div(static_cast<uint64_t>(j->n), kTileX) *
                     ceil_div(static_cast<uint64_t>(k.n), kTileX);
    if (tiles > kMaxTileGroups) tiles = kMaxTileGroups;
    uint64_t row_groups = kMaxTileGroups / tiles;
    if (row_groups > static_cast<uint64_t>(rows)) row_groups = static_cast<uint64_t>(rows);
    if (row_groups == 0) row_groups = 1;
    global[0] = kTileX * static_cast<size_t>(tiles);
    global[1] = kTileY * static_cast<size_t>(row_groups);
    local[0] = kTileX;
    local[1] = kTileY;
  }
  const cl_long kn = k.n, ks = k.ss, kd = k.ds;
  const cl_long jn = j != nullptr ? j->n : 0, js = j != nullptr ? j->ss : 0,
                jd = j != nullptr ? j->ds : 0;

  std::lock_guard<std::mutex> lock(device.launch_mutex);
  cl_uint index = 0;
  cl_int code = CL_SUCCESS;
  auto set = [&](size_t size, const void* value) {
    if (code == CL_SUCCESS) code = api.clSetKernelArg(kernel, index++, size, value);
  };
  set(sizeof(cl_mem), &dst);
  set(sizeof(cl_long), &dst_pos);
  set(sizeof(cl_mem), &src);
  set(sizeof(cl_long), &src_pos);
  set(sizeof(cl_long8), &outer_n);
  set(sizeof(cl_long8), &outer_src);
  set(sizeof(cl_long8), &outer_dst);
  set(sizeof(cl_int), &nouter_arg);
  set(sizeof(cl_long), &rows);
  if (j != nullptr) {
    set(sizeof(cl_long), &jn);
    set(sizeof(cl_long), &js);
    set(sizeof(cl_long), &jd);
  }
  set(sizeof(cl_long), &kn);
  set(sizeof(cl_long), &ks);
  set(sizeof(cl_long), &kd);
  if (j == nullptr) set(sizeof(cl_long), &chunk);
  if (code != CL_SUCCESS) return cl_fail(error, "clSetKernelArg", code);
  code = api.clEnqueueNDRangeKernel(sub.queue(), kernel, work_dims, nullptr, global,
                                    pick_local ? nullptr : local, 0, nullptr, sub.track());
  if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueNDRangeKernel", code);
  return DLB_OK;
}

}  // namespace

// Queues the copy of every element of `src` to `dst` (same shape, any strides, both in buffers
// of the device's context) as copy kernels.
int enqueue_kernel_copy(Runtime& rt, Device& device, Submission& sub, const Operand& dst,
                        const Operand& src, int32_t ndim, const int64_t* shape,
                        uint64_t element_size, dlb_error* error) {
  int status = ensure_kernels(rt, device, error);
  if (status != DLB_OK) return status;
  // The widest word that divides the element and both starting positions (strides are whole
  // elements, so they follow): a float32x4 tensor moves as 16-byte words, a float16x3 one as
  // three 2-byte words.
  int word_log2 = kWordSizes - 1;
  while (word_log2 > 0) {
    const int64_t word = int64_t{1} << word_log2;
    if (static_cast<int64_t>(element_size) % word == 0 && dst.position % word == 0 &&
        src.position % word == 0) {
      break;
    }
    --word_log2;
  }
  const int64_t word = int64_t{1} << word_log2;
  const int64_t words = static_cast<int64_t>(element_size) / word;
  // The words of one element are one more dimension, so that the merging below can fold them
  // into contiguous runs.
  StridedDim dims[DLB_MAX_NDIM + 1];
  int32_t n = 0;
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] > 1)
      dims[n++] = StridedDim{shape[i], src.strides[i] * words, dst.strides[i] * words};
  }
  if (words > 1) dims[n++] = StridedDim{words, 1, 1};
  if (n == 0) dims[n++] = StridedDim{1, 1, 1};
  n = simplify_dims(dims, n);
  const StridedDim inner = dims[n - 1];

  // A transpose: the source is contiguous along another dimension than the destination.
  int32_t tile = -1;
  if (device.tiles_usable && magnitude(inner.ss) != 1 && inner.n >= kMinTileExtent) {
    for (int32_t i = 0; i < n - 1; ++i) {
      if (dims[i].n >= kMinTileExtent && magnitude(dims[i].ss) < magnitude(inner.ss) &&
          (tile < 0 || magnitude(dims[i].ss) < magnitude(dims[tile].ss))) {
        tile = i;
      }
    }
  }
  StridedDim outer[DLB_MAX_NDIM + 1];
  int32_t m = 0;
  for (int32_t i = 0; i < n - 1; ++i) {
    if (i != tile) outer[m++] = dims[i];
  }
  // Outer dimensions beyond what the kernels take (only layouts with more than 8 dimensions
  // that cannot be merged) are walked here, one launch per index.
  const int32_t excess = m > kKernelOuterDims ? m - kKernelOuterDims : 0;
  int64_t index[DLB_MAX_NDIM + 1] = {};
  int64_t dst_base = dst.position / word, src_base = src.position / word;
  const Api& api = rt.api;
  for (;;) {
    status = launch(api, device, sub, word_log2, outer + excess, m - excess,
                    tile >= 0 ? &dims[tile] : nullptr, inner, dst.mem, dst_base, src.mem, src_base,
                    error);
    if (status != DLB_OK) return status;
    int32_t a = excess - 1;
    for (; a >= 0; --a) {
      dst_base += outer[a].ds;
      src_base += outer[a].ss;
      if (++index[a] < outer[a].n) break;
      dst_base -= outer[a].ds * outer[a].n;
      src_base -= outer[a].ss * outer[a].n;
      index[a] = 0;
    }
    if (a < 0) return DLB_OK;
  }
}

}  // namespace opencl
}  // namespace dlb
