// Shareable host memory: a sealed memfd wrapped as a tensor (dlb_tensor_allocate_shareable), the
// mapping of a received one, and what the rest of the library asks about such memory.
#if defined(__linux__)
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <new>

#include "cuda.hpp"
#include "ipc.hpp"

namespace dlb {
namespace ipc {

// The release function of every tensor over a segment: how the library recognises one.
void release_segment(void* ctx);
void release_segment(void* ctx) {
  auto* segment = static_cast<Segment*>(ctx);
  munmap(segment->base, segment->mapped);
  close(segment->fd);
  segment->exposed.~atomic();
  std::free(segment);
}

namespace {

// The seals every segment carries: no process can shrink or grow it, nor change the seals.
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

// Wraps the mapping `base` of `mapped` bytes at `offset` into the memfd `fd` of `size` bytes as a
// tensor described by `desc` (whose byte_offset counts from `base`). Ownership: the mapping and
// `fd` move into the tensor on success; on error they are released here.
int wrap_segment(OwnedFd& fd, void* base, uint64_t mapped, uint64_t offset, uint64_t size,
                 bool exposed, DLTensor* desc, uint64_t flags, DLManagedTensorVersioned** out,
                 dlb_error* error) {
  auto* segment = static_cast<Segment*>(std::malloc(sizeof(Segment)));
  if (segment == nullptr) {
    munmap(base, mapped);
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory sharing a tensor");
  }
  segment->fd = fd.release();
  segment->base = base;
  segment->mapped = mapped;
  segment->offset = offset;
  segment->size = size;
  new (&segment->exposed) std::atomic<bool>(exposed);
  desc->data = base;
  const int status =
      dlb_tensor_wrap_buffer(desc, mapped, flags, release_segment, segment, out, error);
  if (status != DLB_OK) release_segment(segment);
  return status;
}

}  // namespace

int create_sealed_memfd(uint64_t size, bool huge_pages, OwnedFd* out, dlb_error* error,
                        const char* name) {
#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004U
#endif
  OwnedFd fd(memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING |
                                    (huge_pages ? MFD_HUGETLB : 0)));
  if (fd.get() < 0) return os_fail(error, errno, DLB_ERR_DEVICE, "memfd_create");
  if (ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "cannot allocate %llu bytes of shareable memory: %s",
                static_cast<unsigned long long>(size), std::strerror(errno));
  }
  if (fcntl(fd.get(), F_ADD_SEALS, kSeals) != 0) {
    return os_fail(error, errno, DLB_ERR_DEVICE, "sealing the shareable memory");
  }
  out->reset(fd.release());
  return DLB_OK;
}

Segment* segment_of(const DLManagedTensorVersioned* tensor) {
  return static_cast<Segment*>(release_context(tensor, release_segment));
}

int map_received_segment(OwnedFd& fd, const Wire& wire, const Geometry& g,
                         DLManagedTensorVersioned** out, dlb_error* error) {
  // Only the pages the elements reach (check_memfd bounded them by the segment's size): a
  // tensor over a small part of a huge segment costs its own pages of address space.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t begin = g.span_bits == 0 ? 0 : static_cast<uint64_t>(g.begin_bits >> 3);
  const uint64_t end = g.span_bits == 0 ? 1 : (static_cast<uint64_t>(g.begin_bits) + g.span_bits + 7) >> 3;
  const uint64_t offset = begin / page * page;
  const uint64_t mapped = std::min((end + page - 1) / page * page, wire.segment_size) - offset;
  const bool read_only = (wire.flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  void* base = mmap(nullptr, mapped, read_only ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED,
                    fd.get(), static_cast<off_t>(offset));
  if (base == MAP_FAILED) {
    const int saved = errno;
    if (saved == ENOMEM) {
      return fail(error, DLB_ERR_LIMIT,
                  "cannot map %llu bytes of the received segment: this process has no room left "
                  "for the mapping (its address space or the system's limit of mappings per "
                  "process, vm.max_map_count); the tensor is lost",
                  static_cast<unsigned long long>(mapped));
    }
    return os_fail(error, saved, DLB_ERR_PROTOCOL, "mmap of the received segment");
  }
  DLTensor desc = described_tensor(wire, nullptr, wire.byte_offset - offset);
  // A copy made for this exchange (IS_COPIED) was dropped by its sender: it is ours alone.
  const bool exposed = (wire.flags & DLPACK_FLAG_BITMASK_IS_COPIED) == 0;
  return wrap_segment(fd, base, mapped, offset, wire.segment_size, exposed, &desc, wire.flags, out,
                      error);
}

}  // namespace ipc

bool memory_is_exposed(dlb_release_fn release, void* ctx) {
  if (release == ipc::release_segment) {
    return static_cast<ipc::Segment*>(ctx)->exposed.load(std::memory_order_acquire);
  }
  return ipc::pool_memory_is_exposed(release, ctx) || ipc::lent_memory_is_exposed(release, ctx) ||
         ipc::cuda_memory_is_exposed(release, ctx);
}

}  // namespace dlb

extern "C" {

DLB_API dlb_status dlb_tensor_allocate_shareable(DLDevice device, DLDataType dtype, int32_t ndim,
                                                 const int64_t* shape, const int64_t* strides,
                                                 uint64_t flags, DLManagedTensorVersioned** out,
                                                 dlb_error* error) {
  using dlb::fail;
  if (out == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  uint64_t byte_offset = 0, nbytes = 0;
  int status = dlb::allocation_layout(device, dtype, ndim, shape, strides, flags, &byte_offset,
                                      &nbytes, error);
  if (status != DLB_OK) return status;
  if (device.device_type == kDLCUDA) {
    return dlb::ipc::cuda_allocate_shareable(device, dtype, ndim, shape, strides, flags,
                                             byte_offset, nbytes, out, error);
  }
  if (device.device_type != kDLCPU) {
    dlb::DeviceTypeText name(device.device_type);
    return fail(error, DLB_ERR_UNSUPPORTED, "shareable memory on %s is not supported", name.text);
  }
  // The first element on a DLB_CPU_ALIGNMENT boundary of the (page-aligned) mapping; what
  // negative strides reach before it lies in the lead.
  const uint64_t lead = (byte_offset + DLB_CPU_ALIGNMENT - 1) & ~uint64_t{DLB_CPU_ALIGNMENT - 1};
  const uint64_t size = lead + (nbytes - byte_offset) > 0 ? lead + (nbytes - byte_offset) : 1;
  dlb::ipc::OwnedFd fd;
  status = dlb::ipc::create_sealed_memfd(size, false, &fd, error);
  if (status != DLB_OK) return status;
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) {
    if (errno == ENOMEM) {
      return fail(error, DLB_ERR_OUT_OF_MEMORY, "cannot map %llu bytes of shareable memory",
                  static_cast<unsigned long long>(size));
    }
    return dlb::ipc::os_fail(error, errno, DLB_ERR_DEVICE, "mmap of the shareable memory");
  }
  DLTensor desc{};
  desc.device = device;
  desc.ndim = ndim;
  desc.dtype = dtype;
  desc.shape = const_cast<int64_t*>(shape);
  desc.strides = const_cast<int64_t*>(strides);
  desc.byte_offset = lead;  // the first element, from the mapping's start
  return dlb::ipc::wrap_segment(fd, base, size, 0, size, false, &desc, flags, out, error);
}

DLB_API int dlb_tensor_shareable_kind(const DLManagedTensorVersioned* tensor) {
  if (tensor == nullptr) return DLB_SHAREABLE_NONE;
  if (dlb::ipc::segment_of(tensor) != nullptr || dlb::ipc::pool_slot_of(tensor) != nullptr) {
    return DLB_SHAREABLE_MEMFD;
  }
  switch (dlb::ipc::cuda_handle_kind(tensor)) {
    case dlb::ipc::kHandleCudaFd:
      return DLB_SHAREABLE_CUDA_FD;
    case dlb::ipc::kHandleCudaIpc:
      return DLB_SHAREABLE_CUDA_IPC;
    default:
      return DLB_SHAREABLE_NONE;
  }
}

DLB_API int dlb_tensor_is_shareable(const DLManagedTensorVersioned* tensor) {
  return dlb_tensor_shareable_kind(tensor) != DLB_SHAREABLE_NONE;
}

}  // extern "C"

#endif  // __linux__
