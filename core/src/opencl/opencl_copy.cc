// Copies for the OpenCL backend.
//
// Every copy runs as OpenCL commands on one in-order queue: the caller's queue when it belongs
// to the buffers' context (the call then returns once the work is queued), otherwise the
// library's queue for the device (the call then waits for its last command). Dense copies with
// the same layout on both sides are one clEnqueueCopyBuffer/ReadBuffer/WriteBuffer; anything
// else runs a copy kernel, with one transfer to or from a temporary buffer when the other side
// is host memory. What the kernels cannot do is declined with DLB_ERR_UNSUPPORTED, and the
// core then stages the copy through host memory with copy_bytes.
#include "opencl_copy.hpp"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace dlb {
namespace opencl {

namespace {

int64_t magnitude(int64_t v) { return v < 0 ? -v : v; }

// Where the commands of one operation go and how the operation ends.
class Submission {
 public:
  explicit Submission(const Api& api) : api_(api) {}
  Submission(const Submission&) = delete;
  Submission& operator=(const Submission&) = delete;
  ~Submission() {
    if (last_ != nullptr) api_.clReleaseEvent(last_);
    // Releasing flushes the queue; OpenCL deletes it once its commands are done.
    if (owns_queue_) api_.clReleaseCommandQueue(queue_);
  }

  // Picks the queue for work on buffers of `context`, a context that holds `device`:
  //  - the caller's queue when it belongs to that context: the work is queued and the call
  //    returns without waiting;
  //  - otherwise (no queue, or one of another context, which cannot touch these buffers) the
  //    library's queue for the device, or a temporary queue for a context the library did not
  //    make; the call then waits until the work is done.
  int open(Runtime& rt, Device& device, cl_context context, void* stream, dlb_error* error) {
    if (stream != nullptr) {
      cl_context stream_context = nullptr;
      const cl_int code =
          api_.clGetCommandQueueInfo(static_cast<cl_command_queue>(stream), CL_QUEUE_CONTEXT,
                                     sizeof(stream_context), &stream_context, nullptr);
      if (code != CL_SUCCESS) return cl_fail(error, "clGetCommandQueueInfo", code);
      if (stream_context == context) {
        queue_ = static_cast<cl_command_queue>(stream);
        blocking_ = false;
        return DLB_OK;
      }
    }
    int status = ensure_context(rt, device, error);
    if (status != DLB_OK) return status;
    blocking_ = true;
    if (context == device.context) {
      queue_ = device.queue;
      return DLB_OK;
    }
    cl_int code = CL_SUCCESS;
    queue_ = api_.clCreateCommandQueue(context, device.id, 0, &code);
    if (queue_ == nullptr || code != CL_SUCCESS) {
      queue_ = nullptr;
      return cl_fail(error, "clCreateCommandQueue", code);
    }
    owns_queue_ = true;
    return DLB_OK;
  }

  cl_command_queue queue() const { return queue_; }

  // The event argument for the next command. A blocking operation waits for its last command,
  // which on an in-order queue means all of them; the library's queue is shared between threads,
  // so waiting for the whole queue (clFinish) would wait for other callers' work too.
  cl_event* track() {
    queued_ = true;
    if (!blocking_) return nullptr;
    if (last_ != nullptr) {
      api_.clReleaseEvent(last_);
      last_ = nullptr;
    }
    return &last_;
  }

  // Ends a successful operation: waits for it (blocking) or makes sure the caller's queue
  // starts on it (non-blocking).
  int complete(dlb_error* error) {
    if (!queued_) return DLB_OK;
    if (blocking_) {
      if (last_ == nullptr) return DLB_OK;
      const cl_int code = api_.clWaitForEvents(1, &last_);
      if (code != CL_SUCCESS) return cl_fail(error, "clWaitForEvents", code);
      return DLB_OK;
    }
    const cl_int code = api_.clFlush(queue_);
    if (code != CL_SUCCESS) return cl_fail(error, "clFlush", code);
    return DLB_OK;
  }

  // After a failure part-way: waits for whatever was queued, so that no command still reads
  // or writes host memory that the caller frees when the error comes back.
  void abandon() {
    if (queued_ && queue_ != nullptr) api_.clFinish(queue_);
  }

 private:
  const Api& api_;
  cl_command_queue queue_ = nullptr;
  bool blocking_ = true;
  bool owns_queue_ = false;
  bool queued_ = false;
  cl_event last_ = nullptr;
};

// A temporary device buffer, released when the operation ends. Commands already queued on it
// keep it alive: OpenCL deletes a released buffer only once they are done.
struct TempBuffer {
  const Api& api;
  cl_mem mem = nullptr;
  explicit TempBuffer(const Api& a) : api(a) {}
  TempBuffer(const TempBuffer&) = delete;
  TempBuffer& operator=(const TempBuffer&) = delete;
  ~TempBuffer() {
    if (mem != nullptr) api.clReleaseMemObject(mem);
  }
};

int mem_context(const Api& api, const void* mem, cl_context* out, dlb_error* error) {
  const cl_int code = api.clGetMemObjectInfo(static_cast<cl_mem>(const_cast<void*>(mem)),
                                             CL_MEM_CONTEXT, sizeof(*out), out, nullptr);
  if (code != CL_SUCCESS) return cl_fail(error, "clGetMemObjectInfo", code);
  return DLB_OK;
}

// The buffer whose memory a cl_mem is (itself, or the parent of a sub-buffer) and where in it the
// cl_mem starts: two cl_mem objects overlap only through a common root.
struct Root {
  cl_mem mem;
  uint64_t offset;
};

int root_of(const Api& api, const void* handle, Root* out, dlb_error* error) {
  cl_mem mem = static_cast<cl_mem>(const_cast<void*>(handle));
  cl_mem parent = nullptr;
  cl_int code =
      api.clGetMemObjectInfo(mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof(parent), &parent, nullptr);
  if (code != CL_SUCCESS) return cl_fail(error, "clGetMemObjectInfo", code);
  *out = Root{mem, 0};
  if (parent == nullptr) return DLB_OK;
  size_t offset = 0;
  code = api.clGetMemObjectInfo(mem, CL_MEM_OFFSET, sizeof(offset), &offset, nullptr);
  if (code != CL_SUCCESS) return cl_fail(error, "clGetMemObjectInfo", code);
  *out = Root{parent, offset};
  return DLB_OK;
}

bool ranges_overlap(const Root& a, uint64_t a_begin, uint64_t a_size, const Root& b,
                    uint64_t b_begin, uint64_t b_size) {
  if (a.mem != b.mem) return false;
  const uint64_t a0 = a.offset + a_begin, b0 = b.offset + b_begin;
  return a0 < b0 + b_size && b0 < a0 + a_size;
}

// Copies between two buffers of one context, through a temporary buffer when their ranges
// overlap (OpenCL refuses overlapping copies).
int enqueue_buffer_copy(const Api& api, Submission& sub, cl_context context, cl_mem dst,
                        uint64_t dst_offset, cl_mem src, uint64_t src_offset, uint64_t nbytes,
                        bool overlap, dlb_error* error) {
  if (!overlap) {
    const cl_int code = api.clEnqueueCopyBuffer(sub.queue(), src, dst, src_offset, dst_offset,
                                                nbytes, 0, nullptr, sub.track());
    if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueCopyBuffer", code);
    return DLB_OK;
  }
  TempBuffer temp(api);
  int status = create_buffer(api, context, nbytes, &temp.mem, error);
  if (status != DLB_OK) return status;
  cl_int code = api.clEnqueueCopyBuffer(sub.queue(), src, temp.mem, src_offset, 0, nbytes, 0,
                                        nullptr, sub.track());
  if (code == CL_SUCCESS) {
    code = api.clEnqueueCopyBuffer(sub.queue(), temp.mem, dst, 0, dst_offset, nbytes, 0, nullptr,
                                   sub.track());
  }
  if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueCopyBuffer", code);
  return DLB_OK;
}

// Buffers of two contexts share no queue: their bytes go through host memory, and the copy
// completes before the call returns.
int copy_across_contexts(DLDevice dst_device, void* dst, uint64_t dst_offset, DLDevice src_device,
                         const void* src, uint64_t src_offset, uint64_t nbytes, dlb_error* error) {
  void* host = std::malloc(static_cast<size_t>(nbytes));
  if (host == nullptr) {
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY,
                     "out of memory staging %llu bytes between two OpenCL contexts",
                     static_cast<unsigned long long>(nbytes));
  }
  const DLDevice cpu{kDLCPU, 0};
  int status = copy_bytes(cpu, host, 0, src_device, src, src_offset, nbytes, nullptr, error);
  if (status == DLB_OK) {
    status = copy_bytes(dst_device, dst, dst_offset, cpu, host, 0, nbytes, nullptr, error);
  }
  std::free(host);
  return status;
}

int copy_between_buffers(Runtime& rt, Device& device, DLDevice dst_device, void* dst,
                         uint64_t dst_offset, DLDevice src_device, const void* src,
                         uint64_t src_offset, uint64_t nbytes, void* stream, dlb_error* error) {
  const Api& api = rt.api;
  cl_context dst_context = nullptr, src_context = nullptr;
  int status = mem_context(api, dst, &dst_context, error);
  if (status == DLB_OK) status = mem_context(api, src, &src_context, error);
  if (status != DLB_OK) return status;
  if (dst_context != src_context) {
    return copy_across_contexts(dst_device, dst, dst_offset, src_device, src, src_offset, nbytes,
                                error);
  }
  Root dst_root{}, src_root{};
  status = root_of(api, dst, &dst_root, error);
  if (status == DLB_OK) status = root_of(api, src, &src_root, error);
  if (status != DLB_OK) return status;
  const bool overlap = ranges_overlap(dst_root, dst_offset, nbytes, src_root, src_offset, nbytes);
  if (overlap && dst_root.offset + dst_offset == src_root.offset + src_offset) return DLB_OK;
  Submission sub(api);
  status = sub.open(rt, device, dst_context, stream, error);
  if (status != DLB_OK) return status;
  status = enqueue_buffer_copy(api, sub, dst_context, static_cast<cl_mem>(dst), dst_offset,
                               static_cast<cl_mem>(const_cast<void*>(src)), src_offset, nbytes,
                               overlap, error);
  if (status != DLB_OK) {
    sub.abandon();
    return status;
  }
  return sub.complete(error);
}

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

// One side of a kernel copy: the buffer, the byte position of element (0, ..., 0) in it, and
// the strides in elements.
struct Operand {
  cl_mem mem;
  int64_t position;
  const int64_t* strides;
};

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

// True when the elements fill [begin, begin + count * element size) exactly once: sorted by
// stride, the dimensions form a compact layout (in any order and direction).
bool is_dense(int32_t ndim, const int64_t* shape, const int64_t* strides) {
  StridedDim dims[DLB_MAX_NDIM];
  int32_t n = 0;
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] > 1) dims[n++] = StridedDim{shape[i], magnitude(strides[i]), 0};
  }
  for (int32_t i = 1; i < n; ++i) {
    const StridedDim key = dims[i];
    int32_t k = i - 1;
    while (k >= 0 && dims[k].ss > key.ss) {
      dims[k + 1] = dims[k];
      --k;
    }
    dims[k + 1] = key;
  }
  int64_t expected = 1;
  for (int32_t i = 0; i < n; ++i) {
    if (dims[i].ss != expected) return false;
    expected *= dims[i].n;
  }
  return true;
}

bool same_strides(int32_t ndim, const int64_t* shape, const int64_t* a, const int64_t* b) {
  for (int32_t i = 0; i < ndim; ++i) {
    if (shape[i] > 1 && a[i] != b[i]) return false;
  }
  return true;
}

// One side of a tensor copy: its strides in elements and the bytes its elements touch.
struct Side {
  const DLTensor* t;
  int64_t strides[DLB_MAX_NDIM];
  int64_t begin;  // first byte touched, relative to data (byte_offset included)
  uint64_t span;  // bytes from there to the end of the last element
};

void describe(const DLTensor* t, const Geometry& g, Side* side) {
  side->t = t;
  dlb_tensor_get_strides(t, DLB_MAX_NDIM, side->strides, nullptr);
  side->begin = g.begin_bits / 8;  // unpacked data starts on a byte
  // The span ends at the last element's value bits: padded sub-byte data fills its byte.
  side->span = (g.span_bits + 7) / 8;
}

int create_temp(const Api& api, const Device& device, uint64_t nbytes, TempBuffer* temp,
                dlb_error* error) {
  if (nbytes > device.max_alloc) {
    return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                     "a temporary buffer of %llu bytes exceeds the largest OpenCL allocation of "
                     "the device (%llu bytes)",
                     static_cast<unsigned long long>(nbytes),
                     static_cast<unsigned long long>(device.max_alloc));
  }
  return create_buffer(api, device.context, nbytes, &temp->mem, error);
}

cl_mem mem_of(const DLTensor* t) { return static_cast<cl_mem>(t->data); }

// Both sides on the device, in the device's context.
int device_to_device(Runtime& rt, Device& device, Submission& sub, const Side& d, const Side& s,
                     uint64_t element_size, dlb_error* error) {
  const Api& api = rt.api;
  const DLTensor* dst = d.t;
  const DLTensor* src = s.t;
  Root dst_root{}, src_root{};
  int status = root_of(api, dst->data, &dst_root, error);
  if (status == DLB_OK) status = root_of(api, src->data, &src_root, error);
  if (status != DLB_OK) return status;
  const bool same = same_strides(src->ndim, src->shape, d.strides, s.strides);
  const bool overlap = ranges_overlap(dst_root, static_cast<uint64_t>(d.begin), d.span, src_root,
                                      static_cast<uint64_t>(s.begin), s.span);
  if (overlap && same && dst_root.offset + dst->byte_offset == src_root.offset + src->byte_offset) {
    return DLB_OK;  // every element onto itself
  }
  // Overlapping memory: the source is copied aside first, so the result is as if through a
  // temporary.
  TempBuffer temp(api);
  cl_mem src_mem = mem_of(src);
  int64_t src_begin = s.begin;
  if (overlap) {
    status = create_temp(api, device, s.span, &temp, error);
    if (status != DLB_OK) return status;
    const cl_int code =
        api.clEnqueueCopyBuffer(sub.queue(), src_mem, temp.mem, static_cast<size_t>(s.begin), 0,
                                static_cast<size_t>(s.span), 0, nullptr, sub.track());
    if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueCopyBuffer", code);
    src_mem = temp.mem;
    src_begin = 0;
  }
  if (same && is_dense(dst->ndim, dst->shape, d.strides)) {
    const cl_int code = api.clEnqueueCopyBuffer(
        sub.queue(), src_mem, mem_of(dst), static_cast<size_t>(src_begin),
        static_cast<size_t>(d.begin), static_cast<size_t>(d.span), 0, nullptr, sub.track());
    if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueCopyBuffer", code);
    return DLB_OK;
  }
  const Operand to{mem_of(dst), static_cast<int64_t>(dst->byte_offset), d.strides};
  const Operand from{src_mem, static_cast<int64_t>(src->byte_offset) - s.begin + src_begin,
                     s.strides};
  return enqueue_kernel_copy(rt, device, sub, to, from, src->ndim, src->shape, element_size, error);
}

// Dense host memory to the device: one write, through a temporary buffer and a kernel when the
// layouts differ.
int host_to_device(Runtime& rt, Device& device, Submission& sub, const Side& d, const Side& s,
                   uint64_t element_size, dlb_error* error) {
  const Api& api = rt.api;
  const DLTensor* dst = d.t;
  const DLTensor* src = s.t;
  const char* host = static_cast<const char*>(src->data) + s.begin;
  if (same_strides(src->ndim, src->shape, d.strides, s.strides)) {
    const cl_int code =
        api.clEnqueueWriteBuffer(sub.queue(), mem_of(dst), CL_FALSE, static_cast<size_t>(d.begin),
                                 static_cast<size_t>(d.span), host, 0, nullptr, sub.track());
    if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueWriteBuffer", code);
    return DLB_OK;
  }
  TempBuffer temp(api);
  int status = create_temp(api, device, s.span, &temp, error);
  if (status != DLB_OK) return status;
  const cl_int code =
      api.clEnqueueWriteBuffer(sub.queue(), temp.mem, CL_FALSE, 0, static_cast<size_t>(s.span),
                               host, 0, nullptr, sub.track());
  if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueWriteBuffer", code);
  const Operand to{mem_of(dst), static_cast<int64_t>(dst->byte_offset), d.strides};
  const Operand from{temp.mem, static_cast<int64_t>(src->byte_offset) - s.begin, s.strides};
  return enqueue_kernel_copy(rt, device, sub, to, from, src->ndim, src->shape, element_size, error);
}

// The device to dense host memory: one read, after a kernel into a temporary buffer when the
// layouts differ.
int device_to_host(Runtime& rt, Device& device, Submission& sub, const Side& d, const Side& s,
                   uint64_t element_size, dlb_error* error) {
  const Api& api = rt.api;
  const DLTensor* dst = d.t;
  const DLTensor* src = s.t;
  char* host = static_cast<char*>(dst->data) + d.begin;
  if (same_strides(src->ndim, src->shape, d.strides, s.strides)) {
    const cl_int code =
        api.clEnqueueReadBuffer(sub.queue(), mem_of(src), CL_FALSE, static_cast<size_t>(s.begin),
                                static_cast<size_t>(s.span), host, 0, nullptr, sub.track());
    if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueReadBuffer", code);
    return DLB_OK;
  }
  TempBuffer temp(api);
  int status = create_temp(api, device, d.span, &temp, error);
  if (status != DLB_OK) return status;
  const Operand to{temp.mem, static_cast<int64_t>(dst->byte_offset) - d.begin, d.strides};
  const Operand from{mem_of(src), static_cast<int64_t>(src->byte_offset), s.strides};
  status =
      enqueue_kernel_copy(rt, device, sub, to, from, src->ndim, src->shape, element_size, error);
  if (status != DLB_OK) return status;
  const cl_int code =
      api.clEnqueueReadBuffer(sub.queue(), temp.mem, CL_FALSE, 0, static_cast<size_t>(d.span), host,
                              0, nullptr, sub.track());
  if (code != CL_SUCCESS) return cl_fail(error, "clEnqueueReadBuffer", code);
  return DLB_OK;
}

}  // namespace

int copy_bytes(DLDevice dst_device, void* dst, uint64_t dst_offset, DLDevice src_device,
               const void* src, uint64_t src_offset, uint64_t nbytes, void* stream,
               dlb_error* error) {
  const bool dst_on_device = dst_device.device_type == kDLOpenCL;
  const bool src_on_device = src_device.device_type == kDLOpenCL;
  if (!dst_on_device && !src_on_device) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "neither side of the copy is an opencl buffer");
  }
  Runtime* rt = nullptr;
  Device* device = nullptr;
  int status =
      find_device(dst_on_device ? dst_device.device_id : src_device.device_id, &rt, &device, error);
  if (status != DLB_OK) return status;
  if (dst_on_device && src_on_device) {
    Device* src_dev = nullptr;
    status = find_device(src_device.device_id, &rt, &src_dev, error);
    if (status != DLB_OK) return status;
  }
  if (nbytes == 0) return DLB_OK;  // OpenCL refuses empty transfers
  if (dst_on_device && src_on_device) {
    return copy_between_buffers(*rt, *device, dst_device, dst, dst_offset, src_device, src,
                                src_offset, nbytes, stream, error);
  }
  const Api& api = rt->api;
  cl_context context = nullptr;
  status = mem_context(api, dst_on_device ? dst : src, &context, error);
  if (status != DLB_OK) return status;
  Submission sub(api);
  status = sub.open(*rt, *device, context, stream, error);
  if (status != DLB_OK) return status;
  // Non-blocking transfers: a blocking operation waits for the event instead. On a caller's
  // queue the host memory must stay untouched until the queue is synchronised, as for any
  // asynchronous copy (the core keeps its staging buffers until then).
  cl_int code;
  if (dst_on_device) {
    code = api.clEnqueueWriteBuffer(sub.queue(), static_cast<cl_mem>(dst), CL_FALSE,
                                    static_cast<size_t>(dst_offset), static_cast<size_t>(nbytes),
                                    static_cast<const char*>(src) + src_offset, 0, nullptr,
                                    sub.track());
  } else {
    code =
        api.clEnqueueReadBuffer(sub.queue(), static_cast<cl_mem>(const_cast<void*>(src)), CL_FALSE,
                                static_cast<size_t>(src_offset), static_cast<size_t>(nbytes),
                                static_cast<char*>(dst) + dst_offset, 0, nullptr, sub.track());
  }
  if (code != CL_SUCCESS) {
    sub.abandon();
    return cl_fail(error, dst_on_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", code);
  }
  return sub.complete(error);
}

int copy_tensor(const DLTensor* dst, uint64_t dst_flags, const DLTensor* src, uint64_t src_flags,
                void* stream, dlb_error* error) {
  Geometry gd{}, gs{};
  int status = validate_tensor(dst, dst_flags, &gd, error);
  if (status == DLB_OK) status = validate_tensor(src, src_flags, &gs, error);
  if (status != DLB_OK) return status;
  // The kernels move whole bytes: padded sub-byte data (one byte per element, padding bits
  // included, as the core's host copy does) is theirs, packed data the host's bit copy.
  if (gs.packed || gd.packed) {
    return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                     "opencl copies of packed sub-byte data are staged through the host");
  }
  const bool dst_on_device = dst->device.device_type == kDLOpenCL;
  const bool src_on_device = src->device.device_type == kDLOpenCL;
  if (!dst_on_device && !src_on_device) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "neither side of the copy is an opencl buffer");
  }
  if (gs.element_count == 0) return DLB_OK;
  Side d{}, s{};
  describe(dst, gd, &d);
  describe(src, gs, &s);
  // Host memory moves in one transfer, so the host side must fill its span.
  const Side* host = !src_on_device ? &s : !dst_on_device ? &d : nullptr;
  if (host != nullptr && !is_dense(host->t->ndim, host->t->shape, host->strides)) {
    return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                     "opencl copies with a non-contiguous host side are staged through the host");
  }
  Runtime* rt = nullptr;
  Device* device = nullptr;
  const DLTensor* device_side = dst_on_device ? dst : src;
  status = find_device(device_side->device.device_id, &rt, &device, error);
  if (status == DLB_OK) status = ensure_context(*rt, *device, error);
  if (status != DLB_OK) return status;
  const Api& api = rt->api;
  // The kernels live in the library's context of the device: both buffers and the queue must
  // belong to it. Anything else goes through the host with copy_bytes.
  for (const DLTensor* t : {dst, src}) {
    if (t->device.device_type != kDLOpenCL) continue;
    cl_context context = nullptr;
    status = mem_context(api, t->data, &context, error);
    if (status != DLB_OK) return status;
    if (context != device->context) {
      return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                       "opencl buffers of two contexts, or of a context dlbridge did not create, "
                       "are copied through the host");
    }
  }
  if (stream != nullptr) {
    cl_context stream_context = nullptr;
    const cl_int code =
        api.clGetCommandQueueInfo(static_cast<cl_command_queue>(stream), CL_QUEUE_CONTEXT,
                                  sizeof(stream_context), &stream_context, nullptr);
    if (code != CL_SUCCESS) return cl_fail(error, "clGetCommandQueueInfo", code);
    if (stream_context != device->context) {
      return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                       "the queue belongs to another OpenCL context than the buffers: the copy "
                       "is staged through the host");
    }
  }
  Submission sub(api);
  status = sub.open(*rt, *device, device->context, stream, error);
  if (status != DLB_OK) return status;
  const uint64_t element_size = gs.unit_bits / 8;
  if (src_on_device && dst_on_device) {
    status = device_to_device(*rt, *device, sub, d, s, element_size, error);
  } else if (dst_on_device) {
    status = host_to_device(*rt, *device, sub, d, s, element_size, error);
  } else {
    status = device_to_host(*rt, *device, sub, d, s, element_size, error);
  }
  if (status != DLB_OK) {
    sub.abandon();
    return status;
  }
  return sub.complete(error);
}

int create_buffer(const Api& api, cl_context context, uint64_t nbytes, cl_mem* out,
                  dlb_error* error) {
  cl_int code = CL_SUCCESS;
  *out =
      api.clCreateBuffer(context, CL_MEM_READ_WRITE, static_cast<size_t>(nbytes), nullptr, &code);
  if (*out != nullptr && code == CL_SUCCESS) return DLB_OK;
  *out = nullptr;
  const int status = cl_fail(error, "clCreateBuffer", code);
  const bool exhausted = code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
                         code == CL_OUT_OF_HOST_MEMORY;
  return exhausted ? DLB_ERR_OUT_OF_MEMORY : status;
}

}  // namespace opencl
}  // namespace dlb
