// Tensor lifecycle: the block every dlbridge tensor lives in, allocation, wrap, import, sharing
// and freeing (handing tensors to other conventions is exchange.cc's).
//
// Every tensor this library hands out is a Block: the DLManagedTensorVersioned itself, a
// reference count, and its own copy of shape and strides, in one heap allocation. A block either
// owns the memory (a "root": allocated here, wrapped, or imported from a foreign producer) or
// refers to the root whose memory it views (shares and views). A root's count is one for its own
// handle plus one per block that views it; the memory is released when it reaches zero, on
// whichever thread drops the last reference.
#include <cstdlib>
#include <cstring>
#include <new>

#include "internal.hpp"

namespace {

enum class Owner : uint8_t {
  // Releasing these runs no code outside this library.
  kInline,  // CPU allocation below kLargeCpuBufferBytes: the data shares the block's allocation
  kView,    // shares the memory of `parent`
  // Releasing these calls out (a backend, a release callback, a foreign deleter), and that code
  // may free other dlbridge tensors on this thread: see release_calling_out.
  kBackend,           // allocated through a device backend
  kRelease,           // wrapped caller memory with a release callback
  kForeignVersioned,  // an imported DLManagedTensorVersioned
  kForeignLegacy,     // an imported DLManagedTensor
};

inline bool calls_out(Owner owner) { return owner > Owner::kView; }

struct Block {
  DLManagedTensorVersioned managed;
  std::atomic<int64_t> refs;
  Block* parent;
  Block* next_pending;  // in this thread's release queue (see release_calling_out)
  Owner owner;
  bool spare_size;  // allocated by allocate_block at kSpareBlockSize: may be kept as a spare
  union {
    struct {
      dlb::Backend* backend;
      DLDevice device;
      void* data;
    } allocation;
    struct {
      dlb_release_fn fn;
      void* ctx;
    } release;
    DLManagedTensorVersioned* versioned;
    DLManagedTensor* legacy;
  } source;
};

// Shape and strides follow the header, 16-byte aligned. A 0-d tensor still gets one slot for
// each, holding 1: some consumers read shape[0] and strides[0] without checking ndim, and must
// read memory of the block (and values that describe one element at offset 0).
constexpr size_t kHeaderSize = (sizeof(Block) + 15) & ~size_t{15};

std::atomic<int64_t> g_live_tensors{0};

void block_deleter(DLManagedTensorVersioned* self);

constexpr size_t block_size(int32_t ndim) {
  return kHeaderSize + 2 * sizeof(int64_t) * static_cast<size_t>(ndim > 0 ? ndim : 1);
}

// Every tensor costs its block a malloc and a free, as much as the rest of a wrap or share:
// so the blocks of tensors of up to kSpareNdim dimensions all take kSpareBlockSize bytes, and a
// thread keeps up to kSpareBlocks of those its frees gave back for its next tensors (a
// thread's own state: no lock, no atomic). Allocated CPU tensors below kLargeCpuBufferBytes
// hold their data in their block and are never kept; larger ones keep theirs apart
// (cpu_buffers.cc).
constexpr int32_t kSpareNdim = 4;
constexpr size_t kSpareBlockSize = block_size(kSpareNdim);
constexpr int32_t kSpareBlocks = 32;
// Built with AddressSanitizer the library keeps none, so that every use of a freed handle is
// reported: a kept block would still look like a tensor.
#if defined(__SANITIZE_ADDRESS__)
constexpr int32_t kSpareLimit = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int32_t kSpareLimit = 0;
#else
constexpr int32_t kSpareLimit = kSpareBlocks;
#endif
#else
constexpr int32_t kSpareLimit = kSpareBlocks;
#endif

// What a thread keeps: the release queue (see release_calling_out) and its spare blocks.
// Trivially destructible, so that an access costs one __tls_get_addr call in a shared library
// and no guard (a thread-local with a destructor costs a second call, for its guard, on every
// access). The initial-exec TLS model would make the access free, but it requires static TLS
// space for the library's whole TLS block (8 KiB with the CUDA runtime's), which a library
// dlopen'ed by Java, C# or Python cannot count on getting.
struct ThreadState {
  bool releasing;
  Block* head;
  Block* tail;
  // Spares are kept once the thread's SpareCleanup is armed (its first free of a spare-sized
  // block), which sets spare_limit, and until it ran, which sets it back to 0 for good: a
  // tensor freed after that (by another thread-local's destructor) goes back to the heap.
  bool cleanup_armed;
  int32_t spare_limit;
  int32_t spare_count;
  void* spares[kSpareBlocks];
};
thread_local ThreadState t_state;

// Frees a thread's spares when the thread ends (and the main thread's at exit), through the
// C++ runtime, which also keeps the library loaded until it ran.
struct SpareCleanup {
  ThreadState* state = nullptr;
  ~SpareCleanup() {
    if (state == nullptr) return;
    for (int32_t i = 0; i < state->spare_count; ++i) std::free(state->spares[i]);
    state->spare_count = 0;
    state->spare_limit = 0;
  }
};
thread_local SpareCleanup t_spare_cleanup;

__attribute__((noinline, cold)) void arm_spare_cleanup(ThreadState& state) {
  state.cleanup_armed = true;
  t_spare_cleanup.state = &state;
  state.spare_limit = kSpareLimit;
}

// Memory for the block of a tensor of `ndim` dimensions: a spare of this thread, or the heap.
void* allocate_block(int32_t ndim) {
  if (ndim > kSpareNdim) return std::malloc(block_size(ndim));
  ThreadState& state = t_state;
  if (state.spare_count > 0) return state.spares[--state.spare_count];
  return std::malloc(kSpareBlockSize);
}

// Most tensors have a handful of dimensions: copy those inline rather than through a memcpy
// call, which costs more than the copy on the hot wrap/import paths.
inline void copy_dims(int64_t* dst, const int64_t* src, int32_t n) {
  if (n <= 4) {
    switch (n) {
      case 4: dst[3] = src[3]; [[fallthrough]];
      case 3: dst[2] = src[2]; [[fallthrough]];
      case 2: dst[1] = src[1]; [[fallthrough]];
      case 1: dst[0] = src[0]; [[fallthrough]];
      default: break;
    }
  } else {
    std::memcpy(dst, src, sizeof(int64_t) * static_cast<size_t>(n));
  }
}

// Fills a freshly allocated block for a tensor laid out as `layout`: everything is copied, shape
// and strides into the block (strides NULL means compact). Inlined into every maker: as a call
// it costs a frame and six saved registers, more than a wrap or share spends on its own work.
__attribute__((always_inline)) inline Block* init_block(void* memory, Block* parent, Owner owner,
                                                       uint64_t flags, const DLTensor& layout) {
  // Everything is read before the block is written, which the compiler must assume could change
  // `layout`; and the fields are stored once each: reading back a field just written as part of
  // a wider store, half of it overwritten since, stalls the load (no store forwarding).
  const int32_t ndim = layout.ndim;
  const int64_t* const shape = layout.shape;
  const int64_t* const strides = layout.strides;
  void* data = layout.data;
  uint64_t byte_offset = layout.byte_offset;
  const DLDevice device = layout.device;
  const DLDataType dtype = layout.dtype;
  dlb::fold_offset(device.device_type, &data, &byte_offset);
  // Default-initialised on purpose: every member that is read is assigned below.
  auto* block = new (memory) Block;
  auto* dims = reinterpret_cast<int64_t*>(static_cast<char*>(memory) + kHeaderSize);
  if (ndim > 0) {
    copy_dims(dims, shape, ndim);
    if (strides != nullptr) {
      copy_dims(dims + ndim, strides, ndim);
    } else {
      dlb_compact_strides(ndim, shape, dims + ndim);
    }
  } else {
    dims[0] = 1;
    dims[1] = 1;
  }
  block->managed.version.major = DLB_DLPACK_PRODUCED_MAJOR;
  block->managed.version.minor = DLB_DLPACK_PRODUCED_MINOR;
  block->managed.manager_ctx = block;
  block->managed.deleter = block_deleter;
  block->managed.flags = flags;
  DLTensor& t = block->managed.dl_tensor;
  t.data = data;
  t.device = device;
  t.ndim = ndim;
  t.dtype = dtype;
  // Never NULL, even for scalars: some consumers read shape without checking ndim.
  t.shape = dims;
  t.strides = dims + (ndim > 0 ? ndim : 1);
  t.byte_offset = byte_offset;
  block->refs.store(1, std::memory_order_relaxed);
  block->parent = parent;
  block->owner = owner;
  // Every block but an allocated CPU tensor's comes from allocate_block.
  block->spare_size = owner != Owner::kInline && ndim <= kSpareNdim;
  g_live_tensors.fetch_add(1, std::memory_order_relaxed);
  return block;
}

// The layout of a tensor being made, for init_block; its shape and strides are only read.
DLTensor layout_of(void* data, DLDevice device, DLDataType dtype, int32_t ndim,
                   const int64_t* shape, const int64_t* strides, uint64_t byte_offset) {
  return DLTensor{data, device, ndim, dtype, const_cast<int64_t*>(shape),
                  const_cast<int64_t*>(strides), byte_offset};
}

void release_source(Block* block) {
  switch (block->owner) {
    case Owner::kBackend: {
      dlb::Backend* backend = block->source.allocation.backend;
      backend->ops.free(backend->ops.ctx, block->source.allocation.device,
                        block->source.allocation.data);
      dlb::release_backend(backend);
      break;
    }
    case Owner::kRelease:
      if (block->source.release.fn != nullptr) block->source.release.fn(block->source.release.ctx);
      break;
    case Owner::kForeignVersioned:
      if (block->source.versioned->deleter != nullptr) {
        block->source.versioned->deleter(block->source.versioned);
      }
      break;
    case Owner::kForeignLegacy:
      if (block->source.legacy->deleter != nullptr) block->source.legacy->deleter(block->source.legacy);
      break;
    case Owner::kInline:
    case Owner::kView:
      break;
  }
}

// Drops one reference. A count of 1 means the caller holds the only reference: nobody else can
// add one (that needs a live handle), so the atomic read-modify-write can be skipped.
bool drop_reference(Block* block) {
  return block->refs.load(std::memory_order_acquire) == 1 ||
         block->refs.fetch_sub(1, std::memory_order_acq_rel) == 1;
}

// Gives a block's memory back: to `state`'s spares when it has room, else to the heap.
void free_block(Block* block, ThreadState& state) {
  const bool spare_size = block->spare_size;
  block->~Block();
  if (spare_size) {
    if (__builtin_expect(!state.cleanup_armed, 0)) arm_spare_cleanup(state);
    if (state.spare_count < state.spare_limit) {
      // A handle freed twice then finds no deleter (dlb_tensor_free skips it) until the block
      // serves another tensor, instead of keeping the block twice.
      block->managed.deleter = nullptr;
      state.spares[state.spare_count++] = block;
      return;
    }
  }
  std::free(block);
}

void free_block(Block* block) {
  if (block->spare_size) {
    free_block(block, t_state);
  } else {
    block->~Block();
    std::free(block);
  }
}

// Releasing a block can call out to code that frees another dlbridge tensor (a chain of legacy
// exports and imports, a framework re-exporting our tensor), whose release can do the same, and
// so on: recursion would overflow the stack on deep chains. So a block whose release calls out
// while this thread is already calling out for another one only joins a queue, which the
// outermost call releases in order: the stack depth is bounded whatever the depth of the chain.
//
// `block` has no references left and calls_out(block->owner). Out of line, so that
// block_deleter keeps a one-register frame on its path for inline and view blocks.
__attribute__((noinline)) void release_calling_out(Block* block) {
  ThreadState* queue = &t_state;
  // One lookup of the thread-local's address per call: without this GCC recomputes it (another
  // __tls_get_addr call) after every call out.
  __asm__("" : "+r"(queue));
  if (queue->releasing) {
    block->next_pending = nullptr;
    if (queue->tail != nullptr) queue->tail->next_pending = block;
    else queue->head = block;
    queue->tail = block;
    return;
  }
  queue->releasing = true;
  for (;;) {
    release_source(block);
    free_block(block, *queue);
    block = queue->head;
    if (block == nullptr) break;
    queue->head = block->next_pending;
    if (queue->head == nullptr) queue->tail = nullptr;
  }
  queue->releasing = false;
}

// A view holds one reference to its root, so dropping a handle frees at most the view and then
// its root. Blocks that release nothing outside the library are freed here, on any thread and
// at any depth (a nested call does the same bounded work).
void block_deleter(DLManagedTensorVersioned* self) {
  g_live_tensors.fetch_sub(1, std::memory_order_relaxed);
  auto* block = static_cast<Block*>(self->manager_ctx);
  while (drop_reference(block)) {
    if (calls_out(block->owner)) {
      release_calling_out(block);
      return;
    }
    Block* parent = block->parent;
    free_block(block);
    if (parent == nullptr) return;
    block = parent;
  }
}

Block* block_of(DLManagedTensorVersioned* tensor) {
  return tensor != nullptr && tensor->deleter == block_deleter
             ? static_cast<Block*>(tensor->manager_ctx)
             : nullptr;
}

// Calls a foreign producer's deleter for a tensor this library refuses, then reports `status`.
template <class Managed>
int reject(Managed* src, int status) {
  if (src != nullptr && src->deleter != nullptr) src->deleter(src);
  return status;
}

// dlb_tensor_wrap and dlb_tensor_wrap_buffer: with a `buffer_size`, every byte the elements
// reach must lie in [0, *buffer_size) from data; without one, the caller vouches for the memory
// (negative strides may then reach before data, as validation allows).
// Inlined into both entry points, where GCC would otherwise split it into a second call.
__attribute__((always_inline)) inline int wrap(const DLTensor* tensor,
                                               const uint64_t* buffer_size, uint64_t flags,
                                               dlb_release_fn release, void* release_ctx,
                                               DLManagedTensorVersioned** out, dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  // Only the span check reads the geometry: without a buffer size, validation skips it.
  dlb::Geometry g{};
  int status = dlb::validate_tensor_inline(tensor, flags, buffer_size != nullptr ? &g : nullptr,
                                           error);
  if (status != DLB_OK) return status;
  if (buffer_size != nullptr) {
    status = dlb::check_buffer_span(g, *buffer_size, error);
    if (status != DLB_OK) return status;
  }
  status = dlb::check_device_memory(tensor, flags, error);
  if (status != DLB_OK) return status;
  void* memory = allocate_block(tensor->ndim);
  if (memory == nullptr) return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory wrapping a tensor");
  Block* block = init_block(memory, nullptr, Owner::kRelease, flags, *tensor);
  block->source.release.fn = release;
  block->source.release.ctx = release_ctx;
  *out = &block->managed;
  return DLB_OK;
}

// A new view block over the memory of `base` (a dlbridge tensor), laid out as `*layout`, or as
// `base` itself when `layout` is NULL: a share, whose layout is read after the allocation so that
// no field of it is held (saved and restored) across that call.
__attribute__((always_inline)) inline int make_alias(const DLManagedTensorVersioned* base,
                                                     const DLTensor* layout, uint64_t flags,
                                                     DLManagedTensorVersioned** out,
                                                     dlb_error* error) {
  // An alias adds a reference to the root; the caller's handle itself is not modified.
  Block* base_block = block_of(const_cast<DLManagedTensorVersioned*>(base));
  if (base_block == nullptr) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "tensor was not made by dlbridge; import it with dlb_tensor_import first");
  }
  Block* root = base_block->parent != nullptr ? base_block->parent : base_block;
  void* memory = allocate_block(layout != nullptr ? layout->ndim : base->dl_tensor.ndim);
  if (memory == nullptr) {
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory creating a view");
  }
  root->refs.fetch_add(1, std::memory_order_relaxed);
  // An alias is never the sole owner of its memory: IS_COPIED stays with the original.
  flags &= ~uint64_t{DLPACK_FLAG_BITMASK_IS_COPIED};
  Block* view = init_block(memory, root, Owner::kView, flags,
                           layout != nullptr ? *layout : base->dl_tensor);
  *out = &view->managed;
  return DLB_OK;
}

}  // namespace

namespace dlb {

int make_view(const DLManagedTensorVersioned* base, void* data, uint64_t byte_offset, int32_t ndim,
              const int64_t* shape, const int64_t* strides, uint64_t flags,
              DLManagedTensorVersioned** out, dlb_error* error) {
  const DLTensor layout = layout_of(data, base->dl_tensor.device, base->dl_tensor.dtype, ndim,
                                    shape, strides, byte_offset);
  return make_alias(base, &layout, flags, out, error);
}

Backend* acquire_tensor_backend(const DLManagedTensorVersioned* tensor) {
  Block* block = block_of(const_cast<DLManagedTensorVersioned*>(tensor));
  if (block != nullptr && block->parent != nullptr) block = block->parent;
  if (block != nullptr && block->owner == Owner::kBackend) {
    Backend* backend = block->source.allocation.backend;
    backend->refs.fetch_add(1, std::memory_order_relaxed);
    return backend;
  }
  return acquire_backend(tensor->dl_tensor.device.device_type);
}

int allocation_layout(DLDevice device, DLDataType dtype, int32_t ndim, const int64_t* shape,
                      const int64_t* strides, uint64_t flags, uint64_t* byte_offset,
                      uint64_t* nbytes, dlb_error* error) {
  int status = check_device(device, error);
  if (status != DLB_OK) return status;
  if ((flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "flag IS_COPIED cannot be requested for a new allocation");
  }
  Geometry g{};
  status = compute_geometry(ndim, shape, strides, dtype, flags, 0, &g, error);
  if (status != DLB_OK) return status;
  // With negative strides the first element sits after the memory the others reach back to.
  *byte_offset = g.begin_bits < 0 ? static_cast<uint64_t>((-g.begin_bits + 7) / 8) : 0;
  *nbytes = g.span_bits == 0
                ? 0
                : (*byte_offset * 8 + static_cast<uint64_t>(g.begin_bits) + g.span_bits + 7) / 8;
  return DLB_OK;
}

void* release_context(const DLManagedTensorVersioned* tensor, dlb_release_fn release) {
  Block* block = block_of(const_cast<DLManagedTensorVersioned*>(tensor));
  if (block != nullptr && block->parent != nullptr) block = block->parent;
  if (block == nullptr || block->owner != Owner::kRelease || block->source.release.fn != release) {
    return nullptr;
  }
  return block->source.release.ctx;
}

}  // namespace dlb

extern "C" {

DLB_API dlb_status dlb_tensor_allocate(DLDevice device, DLDataType dtype, int32_t ndim,
                                const int64_t* shape, const int64_t* strides, uint64_t flags,
                                DLManagedTensorVersioned** out, dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  uint64_t byte_offset = 0, nbytes = 0;
  int status = dlb::allocation_layout(device, dtype, ndim, shape, strides, flags, &byte_offset,
                                      &nbytes, error);
  if (status != DLB_OK) return status;

  if (device.device_type == kDLCPU) {
    // The first element is at an aligned address (data, once the offset is folded into it);
    // what negative strides reach before it lies in the padding after the block.
    constexpr size_t kAlign = DLB_CPU_ALIGNMENT;
    const auto out_of_memory = [&] {
      return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "cannot allocate %llu bytes on the cpu",
                       static_cast<unsigned long long>(nbytes));
    };
    const size_t header = (block_size(ndim) + kAlign - 1) & ~size_t{kAlign - 1};
    const size_t lead = (static_cast<size_t>(byte_offset) + kAlign - 1) & ~size_t{kAlign - 1};
    size_t total;
    if (__builtin_add_overflow(header + lead, nbytes - byte_offset, &total) ||
        total > SIZE_MAX - kAlign) {
      return out_of_memory();
    }
    const size_t data_bytes = total - header;
    if (data_bytes >= dlb::kLargeCpuBufferBytes) {
      // Large data lives apart from the block, in memory kept for reuse (cpu_buffers.cc).
      void* buffer = nullptr;
      char* data = dlb::take_large_cpu_buffer(data_bytes, &buffer);
      void* memory = data == nullptr ? nullptr : allocate_block(ndim);
      if (memory == nullptr) {
        if (data != nullptr) dlb::give_back_large_cpu_buffer(buffer);
        return out_of_memory();
      }
      Block* block = init_block(memory, nullptr, Owner::kRelease, flags,
                                layout_of(data + lead - byte_offset, device, dtype, ndim, shape,
                                          strides, byte_offset));
      block->source.release.fn = dlb::give_back_large_cpu_buffer;
      block->source.release.ctx = buffer;
      *out = &block->managed;
      return DLB_OK;
    }
    const size_t rounded = (total + kAlign - 1) & ~size_t{kAlign - 1};
    void* memory = std::aligned_alloc(kAlign, rounded);
    if (memory == nullptr) return out_of_memory();
    Block* block = init_block(memory, nullptr, Owner::kInline, flags,
                              layout_of(static_cast<char*>(memory) + header + lead - byte_offset,
                                        device, dtype, ndim, shape, strides, byte_offset));
    *out = &block->managed;
    return DLB_OK;
  }

  dlb::Backend* backend = dlb::acquire_backend(device.device_type);
  if (backend == nullptr) {
    dlb::DeviceTypeText name(device.device_type);
    return dlb::fail(error, DLB_ERR_UNSUPPORTED, "no backend is registered for %s", name.text);
  }
  void* data = nullptr;
  status = dlb::call_backend(backend, "allocate", error, [&](dlb_error* report) {
    return backend->ops.allocate(backend->ops.ctx, device, nbytes, &data, report);
  });
  if (status != DLB_OK) {
    dlb::release_backend(backend);
    return status;
  }
  void* memory = allocate_block(ndim);
  if (memory == nullptr) {
    backend->ops.free(backend->ops.ctx, device, data);
    dlb::release_backend(backend);
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory creating a tensor");
  }
  Block* block = init_block(memory, nullptr, Owner::kBackend, flags,
                            layout_of(data, device, dtype, ndim, shape, strides, byte_offset));
  block->source.allocation.backend = backend;
  block->source.allocation.device = device;
  block->source.allocation.data = data;
  *out = &block->managed;
  return DLB_OK;
}

DLB_API dlb_status dlb_tensor_wrap_buffer(const DLTensor* tensor, uint64_t buffer_size,
                                          uint64_t flags, dlb_release_fn release,
                                          void* release_ctx, DLManagedTensorVersioned** out,
                                          dlb_error* error) {
  return wrap(tensor, &buffer_size, flags, release, release_ctx, out, error);
}

DLB_API dlb_status dlb_tensor_wrap(const DLTensor* tensor, uint64_t flags, dlb_release_fn release,
                            void* release_ctx, DLManagedTensorVersioned** out,
                            dlb_error* error) {
  return wrap(tensor, nullptr, flags, release, release_ctx, out, error);
}

DLB_API dlb_status dlb_tensor_import(DLManagedTensorVersioned* src, DLManagedTensorVersioned** out,
                              dlb_error* error) {
  if (out != nullptr) *out = nullptr;
  if (src == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  // Only version, manager_ctx, deleter and flags are stable across majors: read nothing else.
  if (src->version.major != DLPACK_MAJOR_VERSION) {
    const unsigned major = src->version.major;
    return reject(src, dlb::fail(error, DLB_ERR_UNSUPPORTED_VERSION,
                                 "DLPack major version %u is not supported (dlbridge accepts major version %d)",
                                 major, DLPACK_MAJOR_VERSION));
  }
  if (out == nullptr) return reject(src, dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL"));
  int status = dlb::validate_tensor_inline(&src->dl_tensor, src->flags, nullptr, error);
  if (status != DLB_OK) return reject(src, status);
  if (src->deleter == block_deleter) {
    *out = src;
    return DLB_OK;
  }
  const DLTensor& t = src->dl_tensor;
  status = dlb::check_device_memory(&t, src->flags, error);
  if (status != DLB_OK) return reject(src, status);
  void* memory = allocate_block(t.ndim);
  if (memory == nullptr) {
    return reject(src, dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory importing a tensor"));
  }
  Block* block = init_block(memory, nullptr, Owner::kForeignVersioned, src->flags, t);
  block->source.versioned = src;
  *out = &block->managed;
  return DLB_OK;
}

DLB_API dlb_status dlb_tensor_import_legacy(DLManagedTensor* src, DLManagedTensorVersioned** out,
                                     dlb_error* error) {
  if (out != nullptr) *out = nullptr;
  if (src == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  if (out == nullptr) return reject(src, dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL"));
  int status = dlb::validate_tensor_inline(&src->dl_tensor, 0, nullptr, error);
  const DLTensor& t = src->dl_tensor;
  if (status == DLB_OK) status = dlb::check_device_memory(&t, 0, error);
  if (status != DLB_OK) return reject(src, status);
  void* memory = allocate_block(t.ndim);
  if (memory == nullptr) {
    return reject(src, dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory importing a tensor"));
  }
  Block* block = init_block(memory, nullptr, Owner::kForeignLegacy, 0, t);
  block->source.legacy = src;
  *out = &block->managed;
  return DLB_OK;
}

DLB_API void dlb_tensor_free(DLManagedTensorVersioned* tensor) {
  if (tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
}

DLB_API dlb_status dlb_tensor_share(const DLManagedTensorVersioned* tensor, uint64_t add_flags,
                             DLManagedTensorVersioned** out, dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (tensor == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  if ((add_flags & ~uint64_t{DLPACK_FLAG_BITMASK_READ_ONLY}) != 0) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "a share can only add the READ_ONLY flag, not 0x%llx",
                     static_cast<unsigned long long>(add_flags));
  }
  return make_alias(tensor, nullptr, tensor->flags | add_flags, out, error);
}

DLB_API int dlb_tensor_is_dlbridge(const DLManagedTensorVersioned* tensor) {
  return tensor != nullptr && tensor->deleter == block_deleter ? 1 : 0;
}

DLB_API int dlb_tensor_is_exclusive(const DLManagedTensorVersioned* tensor) {
  const Block* block = block_of(const_cast<DLManagedTensorVersioned*>(tensor));
  if (block == nullptr || block->parent != nullptr) return 0;
  // Only the caller's own handle can add references, so a count of 1 cannot grow under us.
  if (block->refs.load(std::memory_order_acquire) != 1) return 0;
  switch (block->owner) {
    case Owner::kInline:
    case Owner::kBackend:
      return 1;
    case Owner::kRelease:
      // Wrapped memory is the wrapper's alone, unless another process maps it too.
      return dlb::memory_is_exposed(block->source.release.fn, block->source.release.ctx) ? 0 : 1;
    case Owner::kForeignVersioned:
      // The producer promised with IS_COPIED that nobody else holds this memory.
      return (tensor->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0 ? 1 : 0;
    case Owner::kForeignLegacy:
    case Owner::kView:
      return 0;
  }
  return 0;
}

DLB_API int64_t dlb_tensor_live_count(void) {
  return g_live_tensors.load(std::memory_order_relaxed);
}

}  // extern "C"
