// Shareable CUDA memory (dlbridge.h, "Sharing tensors across processes"): allocation, what a
// sender puts on the wire, import on the receiving side, and the cross-process event handshake.
//
// The preferred memory comes from the CUDA virtual memory API (cuMemCreate, exported as a POSIX
// file descriptor). Those are driver API functions: the library does not link libcuda (it must
// load where there is no driver), so their entry points come from the statically linked runtime
// (cudaGetDriverEntryPointByVersion), once, after ready() found a driver. Devices without
// virtual memory management or the POSIX handle type get cudaMalloc memory shared by a
// cudaIpcMemHandle_t instead, with the weaker lifetime the header states.
//
// Written against the CUDA 13 headers and compiled in every CUDA build; not yet run on a GPU
// (docs/ipc.md, "Verified how far").
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include "../internal.hpp"
#include "../ipc/cuda.hpp"
#include "cuda_runtime.hpp"

namespace {

using dlb::fail;
using dlb::cuda::cuda_fail;
using dlb::cuda::DeviceScope;
using dlb::cuda::ready;
using dlb::cuda::runtime;
using dlb::ipc::kHandleCudaFd;
using dlb::ipc::kHandleCudaIpc;

static_assert(sizeof(cudaIpcMemHandle_t) == dlb::ipc::kCudaHandleSize, "cudaIpcMemHandle_t size");
static_assert(sizeof(cudaIpcEventHandle_t) == dlb::ipc::kCudaHandleSize, "cudaIpcEventHandle_t size");

// ---- driver entry points ------------------------------------------------------------------

struct Driver {
  bool found;
  char reason[160];  // why not, when not found
  PFN_cuGetErrorName_v6000 get_error_name;
  PFN_cuDeviceGet_v2000 device_get;
  PFN_cuDeviceGetAttribute_v2000 device_get_attribute;
  PFN_cuMemGetAllocationGranularity_v10020 granularity;
  PFN_cuMemCreate_v10020 create;
  PFN_cuMemRelease_v10020 release;
  PFN_cuMemAddressReserve_v10020 address_reserve;
  PFN_cuMemAddressFree_v10020 address_free;
  PFN_cuMemMap_v10020 map;
  PFN_cuMemUnmap_v10020 unmap;
  PFN_cuMemSetAccess_v10020 set_access;
  PFN_cuMemExportToShareableHandle_v10020 export_handle;
  PFN_cuMemImportFromShareableHandle_v10020 import_handle;
  PFN_cuMemGetAllocationPropertiesFromHandle_v10020 properties;
  PFN_cuMemGetAddressRange_v3020 address_range;
};

// The ABI version the entry points are asked for. The typedefs above describe the functions as
// CUDA 12.0 has them (unchanged since 10.2 for the memory functions), and a driver that runs
// this CUDA 13 runtime provides that version.
constexpr unsigned int kDriverAbi = 12000;

template <class F>
bool entry_point(const char* name, F* out, Driver* d) {
  void* pointer = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(name, &pointer, kDriverAbi, cudaEnableDefault, &query);
  if (e != cudaSuccess || query != cudaDriverEntryPointSuccess || pointer == nullptr) {
    cudaGetLastError();
    std::snprintf(d->reason, sizeof d->reason, "the CUDA driver does not provide %s (%s)", name,
                  e != cudaSuccess ? cudaGetErrorName(e)
                  : query == cudaDriverEntryPointVersionNotSufficent ? "version not sufficient"
                                                                     : "symbol not found");
    return false;
  }
  *out = reinterpret_cast<F>(pointer);
  return true;
}

// Only after ready() succeeded: the lookup starts the runtime.
const Driver& driver() {
  static const Driver table = [] {
    Driver d{};
    d.found = entry_point("cuGetErrorName", &d.get_error_name, &d) &&
              entry_point("cuDeviceGet", &d.device_get, &d) &&
              entry_point("cuDeviceGetAttribute", &d.device_get_attribute, &d) &&
              entry_point("cuMemGetAllocationGranularity", &d.granularity, &d) &&
              entry_point("cuMemCreate", &d.create, &d) &&
              entry_point("cuMemRelease", &d.release, &d) &&
              entry_point("cuMemAddressReserve", &d.address_reserve, &d) &&
              entry_point("cuMemAddressFree", &d.address_free, &d) &&
              entry_point("cuMemMap", &d.map, &d) && entry_point("cuMemUnmap", &d.unmap, &d) &&
              entry_point("cuMemSetAccess", &d.set_access, &d) &&
              entry_point("cuMemExportToShareableHandle", &d.export_handle, &d) &&
              entry_point("cuMemImportFromShareableHandle", &d.import_handle, &d) &&
              entry_point("cuMemGetAllocationPropertiesFromHandle", &d.properties, &d) &&
              entry_point("cuMemGetAddressRange", &d.address_range, &d);
    return d;
  }();
  return table;
}

// Reports a failed driver call: "<what> failed: CUDA_ERROR_X (code)".
__attribute__((format(printf, 3, 4))) int cu_fail(dlb_error* error, CUresult result,
                                                  const char* what, ...) {
  char text[256];
  va_list args;
  va_start(args, what);
  std::vsnprintf(text, sizeof text, what, args);
  va_end(args);
  const char* name = nullptr;
  const Driver& d = driver();
  if (d.get_error_name == nullptr || d.get_error_name(result, &name) != CUDA_SUCCESS ||
      name == nullptr) {
    name = "an unknown CUresult";
  }
  const int status = result == CUDA_ERROR_OUT_OF_MEMORY ? DLB_ERR_OUT_OF_MEMORY : DLB_ERR_DEVICE;
  return fail(error, status, "%s failed: %s (%d)", text, name, static_cast<int>(result));
}

CUmemAllocationProp allocation_prop(int32_t device_id) {
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_id;
  return prop;
}

// Whether cuda:`device_id` can export cuMemCreate memory as a POSIX file descriptor. The
// environment variable DLB_CUDA_SHAREABLE=ipc-handle makes every device take the fallback (for
// testing it on GPUs that have both).
bool posix_fd_supported(int32_t device_id) {
  const char* forced = std::getenv("DLB_CUDA_SHAREABLE");
  if (forced != nullptr && std::strcmp(forced, "ipc-handle") == 0) return false;
  const Driver& d = driver();
  if (!d.found) return false;
  CUdevice device = 0;
  int vmm = 0, posix = 0;
  return d.device_get(&device, device_id) == CUDA_SUCCESS &&
         d.device_get_attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                device) == CUDA_SUCCESS &&
         d.device_get_attribute(&posix, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                                device) == CUDA_SUCCESS &&
         vmm != 0 && posix != 0;
}

// ---- the memory record --------------------------------------------------------------------

// One process's hold on shareable CUDA memory: the release context of the tensors over it. Each
// step of building it is marked, so that one release undoes exactly what was done.
struct CudaSegment {
  uint32_t handle = 0;  // kHandleCudaFd or kHandleCudaIpc
  bool received = false;
  int32_t device_id = 0;
  void* base = nullptr;
  uint64_t size = 0;  // bytes reserved and mapped (kHandleCudaFd), or allocated
  // kHandleCudaFd
  CUmemGenericAllocationHandle allocation = 0;
  bool has_allocation = false;
  bool reserved = false;
  bool mapped = false;
  int fd = -1;  // the exported (or received) descriptor
  // kHandleCudaIpc
  bool allocated = false;  // cudaMalloc (sender) or cudaIpcOpenMemHandle (receiver)
  cudaIpcMemHandle_t memory_handle{};
  // Set once sent, or when received from a sender that keeps the memory.
  std::atomic<bool> exposed{false};
  // The sender's interprocess event, made at the first dlb_channel_send_cuda.
  std::mutex event_mutex;
  cudaEvent_t event = nullptr;
  // The receiver's copy of the sender's event handle.
  bool has_event = false;
  cudaIpcEventHandle_t event_handle{};
};

void release_cuda_segment(void* ctx) {
  auto* s = static_cast<CudaSegment*>(ctx);
  // Errors are ignored, as in cuda_free: at process exit the runtime may already be gone.
  {
    DeviceScope scope;
    if (scope.enter(s->device_id, nullptr) == DLB_OK) {
      if (s->event != nullptr) cudaEventDestroy(s->event);
      if (s->allocated) {
        if (s->received) {
          cudaIpcCloseMemHandle(s->base);
        } else {
          cudaFree(s->base);
        }
      }
    }
    if (s->has_allocation || s->reserved || s->mapped) {
      const Driver& d = driver();
      const CUdeviceptr base = reinterpret_cast<CUdeviceptr>(s->base);
      if (s->mapped) d.unmap(base, static_cast<size_t>(s->size));
      if (s->reserved) d.address_free(base, static_cast<size_t>(s->size));
      if (s->has_allocation) d.release(s->allocation);
    }
    cudaGetLastError();
  }
  if (s->fd >= 0) close(s->fd);
  delete s;
}

CudaSegment* segment_of(const DLManagedTensorVersioned* tensor) {
  return static_cast<CudaSegment*>(dlb::release_context(tensor, release_cuda_segment));
}

// Makes the current device's primary context current for the driver calls that follow (the
// runtime creates it at its first call that needs one; cudaFree(NULL) is such a call).
int make_context_current(dlb_error* error) {
  const cudaError_t e = cudaFree(nullptr);
  return e == cudaSuccess ? DLB_OK : cuda_fail(error, e, "initialising the CUDA context");
}

// `status` when this process does not see cuda:`device_id`: the caller's own argument
// (DLB_ERR_INVALID_ARGUMENT), or a device a peer named (DLB_ERR_DEVICE_UNAVAILABLE: the
// descriptor may be right, this process just cannot reach the device).
int check_device_exists(int32_t device_id, const char* what, int status, dlb_error* error) {
  const int32_t count = runtime().device_count;
  if (device_id < 0 || device_id >= count) {
    return fail(error, status, "%s cuda device %d, but this process sees %d",
                what, static_cast<int>(device_id), static_cast<int>(count));
  }
  return DLB_OK;
}

// cuMemCreate memory of at least `bytes`, rounded up to the granularity, mapped read-write on
// the device and exported as a POSIX file descriptor.
int allocate_posix_fd(CudaSegment* s, uint64_t bytes, dlb_error* error) {
  const Driver& d = driver();
  const CUmemAllocationProp prop = allocation_prop(s->device_id);
  size_t granularity = 0;
  CUresult r = d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS || granularity == 0) {
    return cu_fail(error, r, "cuMemGetAllocationGranularity for cuda:%d", static_cast<int>(s->device_id));
  }
  const uint64_t wanted = bytes == 0 ? 1 : bytes;
  if (wanted > UINT64_MAX - granularity) {
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "cannot allocate %llu bytes of shareable cuda memory",
                static_cast<unsigned long long>(bytes));
  }
  const uint64_t size = (wanted + granularity - 1) / granularity * granularity;
  r = d.create(&s->allocation, static_cast<size_t>(size), &prop, 0);
  if (r != CUDA_SUCCESS) {
    return cu_fail(error, r, "cuMemCreate of %llu bytes on cuda:%d",
                   static_cast<unsigned long long>(size), static_cast<int>(s->device_id));
  }
  s->has_allocation = true;
  s->size = size;
  CUdeviceptr base = 0;
  r = d.address_reserve(&base, static_cast<size_t>(size), granularity, 0, 0);
  if (r != CUDA_SUCCESS) return cu_fail(error, r, "cuMemAddressReserve of %llu bytes",
                                        static_cast<unsigned long long>(size));
  s->reserved = true;
  s->base = reinterpret_cast<void*>(base);
  r = d.map(base, static_cast<size_t>(size), 0, s->allocation, 0);
  if (r != CUDA_SUCCESS) return cu_fail(error, r, "cuMemMap");
  s->mapped = true;
  CUmemAccessDesc access;
  std::memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  r = d.set_access(base, static_cast<size_t>(size), &access, 1);
  if (r != CUDA_SUCCESS) return cu_fail(error, r, "cuMemSetAccess");
  int fd = -1;
  r = d.export_handle(&fd, s->allocation, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (r != CUDA_SUCCESS) return cu_fail(error, r, "cuMemExportToShareableHandle");
  s->fd = fd;
  // Like every descriptor the library opens: not inherited across exec.
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  return DLB_OK;
}

// The fallback: cudaMalloc memory and its IPC handle.
int allocate_ipc_handle(CudaSegment* s, uint64_t bytes, dlb_error* error) {
  const size_t size = bytes == 0 ? 1 : static_cast<size_t>(bytes);
  cudaError_t e = cudaMalloc(&s->base, size);
  if (e != cudaSuccess) {
    return cuda_fail(error, e, "allocating %llu bytes of cuda memory on device %d",
                     static_cast<unsigned long long>(bytes), static_cast<int>(s->device_id));
  }
  s->allocated = true;
  s->size = size;
  e = cudaIpcGetMemHandle(&s->memory_handle, s->base);
  if (e != cudaSuccess) return cuda_fail(error, e, "cudaIpcGetMemHandle");
  return DLB_OK;
}

// Wraps `s` as a tensor described by `desc` (data set here). Ownership: `s` moves into the
// tensor on success; on error it is released.
int wrap_cuda_segment(CudaSegment* s, DLTensor* desc, uint64_t flags,
                      DLManagedTensorVersioned** out, dlb_error* error) {
  desc->data = s->base;
  const int status =
      dlb_tensor_wrap_buffer(desc, s->size, flags, release_cuda_segment, s, out, error);
  if (status != DLB_OK) release_cuda_segment(s);
  return status;
}

}  // namespace

namespace dlb {
namespace ipc {

int cuda_allocate_shareable(DLDevice device, DLDataType dtype, int32_t ndim, const int64_t* shape,
                            const int64_t* strides, uint64_t flags, uint64_t byte_offset,
                            uint64_t nbytes, DLManagedTensorVersioned** out, dlb_error* error) {
  int status = ready(error);
  if (status == DLB_OK) {
    status = check_device_exists(device.device_id, "shareable memory on", DLB_ERR_INVALID_ARGUMENT,
                                 error);
  }
  if (status != DLB_OK) return status;
  DeviceScope scope;
  status = scope.enter(device.device_id, error);
  if (status == DLB_OK) status = make_context_current(error);
  if (status != DLB_OK) return status;
  auto* s = new (std::nothrow) CudaSegment();
  if (s == nullptr) return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory sharing a tensor");
  s->device_id = device.device_id;
  if (posix_fd_supported(device.device_id)) {
    s->handle = kHandleCudaFd;
    status = allocate_posix_fd(s, nbytes, error);
  } else {
    s->handle = kHandleCudaIpc;
    status = allocate_ipc_handle(s, nbytes, error);
  }
  if (status == DLB_OK) {
    // Zeroed and waited for: another process may read it as soon as it is sent, with no order
    // against this process's streams.
    cudaError_t e = cudaMemset(s->base, 0, static_cast<size_t>(s->size));
    if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy);
    if (e != cudaSuccess) status = cuda_fail(error, e, "zeroing the shareable memory");
  }
  if (status != DLB_OK) {
    release_cuda_segment(s);
    return status;
  }
  DLTensor desc{};
  desc.device = device;
  desc.ndim = ndim;
  desc.dtype = dtype;
  desc.shape = const_cast<int64_t*>(shape);
  desc.strides = const_cast<int64_t*>(strides);
  desc.byte_offset = byte_offset;
  return wrap_cuda_segment(s, &desc, flags, out, error);
}

int cuda_handle_kind(const DLManagedTensorVersioned* tensor) {
  const CudaSegment* s = segment_of(tensor);
  return s == nullptr ? -1 : static_cast<int>(s->handle);
}

int cuda_prepare_send(const DLManagedTensorVersioned* tensor, bool record, void* stream,
                      CudaSend* out, dlb_error* error) {
  CudaSegment* s = segment_of(tensor);
  if (s->handle == kHandleCudaIpc && s->received) {
    return fail(error, DLB_ERR_UNSUPPORTED,
                "cuda memory received through a CUDA IPC handle cannot be sent on: only the "
                "process that allocated it can share it");
  }
  std::memset(out, 0, sizeof *out);
  out->handle = s->handle;
  out->fd = s->handle == kHandleCudaFd ? s->fd : -1;
  out->base = s->base;
  out->size = s->size;
  std::memcpy(out->extension.magic, kExtensionMagic, sizeof kExtensionMagic);
  if (s->handle == kHandleCudaIpc) {
    std::memcpy(out->extension.memory_handle, &s->memory_handle, sizeof s->memory_handle);
  }
  if (record) {
    int status = ready(error);
    DeviceScope scope;
    if (status == DLB_OK) status = scope.enter(s->device_id, error);
    if (status != DLB_OK) return status;
    cudaIpcEventHandle_t handle;
    {
      std::lock_guard<std::mutex> lock(s->event_mutex);
      cudaError_t e = cudaSuccess;
      if (s->event == nullptr) {
        e = cudaEventCreateWithFlags(&s->event, cudaEventInterprocess | cudaEventDisableTiming);
        if (e != cudaSuccess) {
          s->event = nullptr;
          return cuda_fail(error, e, "cudaEventCreateWithFlags(cudaEventInterprocess)");
        }
      }
      const cudaStream_t on = stream != nullptr ? static_cast<cudaStream_t>(stream) : cudaStreamLegacy;
      e = cudaEventRecord(s->event, on);
      if (e != cudaSuccess) return cuda_fail(error, e, "cudaEventRecord on the sender's stream");
      e = cudaIpcGetEventHandle(&handle, s->event);
      if (e != cudaSuccess) return cuda_fail(error, e, "cudaIpcGetEventHandle");
    }
    std::memcpy(out->extension.event_handle, &handle, sizeof handle);
    out->extension.has_event = 1;
  }
  s->exposed.store(true, std::memory_order_release);
  return DLB_OK;
}

int cuda_receive(const Wire& wire, const WireExtension& extension, int fd,
                 DLManagedTensorVersioned** out, dlb_error* error) {
  dlb_error reason;
  int status = ready(&reason);
  if (status != DLB_OK) {
    if (fd >= 0) close(fd);
    return fail(error, status, "received a cuda tensor but cannot map it here: %s", reason.message);
  }
  status = check_device_exists(wire.device_id, "the descriptor names", DLB_ERR_DEVICE_UNAVAILABLE,
                               error);
  if (status != DLB_OK) {
    if (fd >= 0) close(fd);
    return status;
  }
  auto* s = new (std::nothrow) CudaSegment();
  if (s == nullptr) {
    if (fd >= 0) close(fd);
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory receiving a tensor");
  }
  s->received = true;
  s->handle = wire.handle;
  s->device_id = wire.device_id;
  s->fd = fd;  // released with the record from here on
  DeviceScope scope;
  status = scope.enter(wire.device_id, error);
  if (status == DLB_OK) status = make_context_current(error);
  const bool read_only = (wire.flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  if (status == DLB_OK && wire.handle == kHandleCudaFd) {
    const Driver& d = driver();
    const CUmemAllocationProp prop = allocation_prop(wire.device_id);
    size_t granularity = 0;
    CUresult r = CUDA_SUCCESS;
    if (!d.found) {
      status = fail(error, DLB_ERR_UNSUPPORTED, "received a cuda-fd tensor but cannot map it here: %s",
                    d.reason);
    } else if ((r = d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) !=
                   CUDA_SUCCESS || granularity == 0) {
      status = cu_fail(error, r, "cuMemGetAllocationGranularity for cuda:%d",
                       static_cast<int>(wire.device_id));
    } else if (wire.segment_size % granularity != 0) {
      status = fail(error, DLB_ERR_PROTOCOL,
                    "the descriptor says the cuda allocation holds %llu bytes, which is not a "
                    "multiple of cuda:%d's allocation granularity (%zu bytes)",
                    static_cast<unsigned long long>(wire.segment_size),
                    static_cast<int>(wire.device_id), granularity);
    } else if ((r = d.import_handle(&s->allocation,
                                    reinterpret_cast<void*>(static_cast<uintptr_t>(fd)),
                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) != CUDA_SUCCESS) {
      status = cu_fail(error, r, "cuMemImportFromShareableHandle of the received descriptor");
    } else {
      s->has_allocation = true;
      CUmemAllocationProp got;
      std::memset(&got, 0, sizeof got);
      r = d.properties(&got, s->allocation);
      if (r != CUDA_SUCCESS) {
        status = cu_fail(error, r, "cuMemGetAllocationPropertiesFromHandle");
      } else if (got.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
                 got.location.id != wire.device_id) {
        status = fail(error, DLB_ERR_PROTOCOL,
                      "the received allocation lives on cuda:%d of this process (location type "
                      "%d), but its descriptor says cuda:%d",
                      got.location.id, static_cast<int>(got.location.type),
                      static_cast<int>(wire.device_id));
      }
    }
    CUdeviceptr base = 0;
    if (status == DLB_OK) {
      s->size = wire.segment_size;
      r = d.address_reserve(&base, static_cast<size_t>(s->size), granularity, 0, 0);
      if (r != CUDA_SUCCESS) {
        status = cu_fail(error, r, "cuMemAddressReserve of %llu bytes",
                         static_cast<unsigned long long>(s->size));
      } else {
        s->reserved = true;
        s->base = reinterpret_cast<void*>(base);
      }
    }
    if (status == DLB_OK) {
      // Mapping more than the allocation holds fails here: the size the descriptor claims is
      // checked by the driver, before any access is granted.
      r = d.map(base, static_cast<size_t>(s->size), 0, s->allocation, 0);
      if (r != CUDA_SUCCESS) {
        status = cu_fail(error, r, "cuMemMap of the received allocation (%llu bytes, as its descriptor says)",
                         static_cast<unsigned long long>(s->size));
      } else {
        s->mapped = true;
      }
    }
    if (status == DLB_OK) {
      CUmemAccessDesc access;
      std::memset(&access, 0, sizeof access);
      access.location = prop.location;
      access.flags = read_only ? CU_MEM_ACCESS_FLAGS_PROT_READ : CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      r = d.set_access(base, static_cast<size_t>(s->size), &access, 1);
      if (r != CUDA_SUCCESS) status = cu_fail(error, r, "cuMemSetAccess on the received allocation");
    }
  } else if (status == DLB_OK) {  // kHandleCudaIpc
    std::memcpy(&s->memory_handle, extension.memory_handle, sizeof s->memory_handle);
    const cudaError_t e =
        cudaIpcOpenMemHandle(&s->base, s->memory_handle, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
      status = cuda_fail(error, e, "cudaIpcOpenMemHandle of the received handle");
    } else {
      s->allocated = true;
      s->size = wire.segment_size;
      const Driver& d = driver();
      CUdeviceptr range_base = 0;
      size_t range_size = 0;
      // Without the driver table the size cannot be asked: the descriptor's is taken as it is.
      if (d.found && d.address_range(&range_base, &range_size,
                                     reinterpret_cast<CUdeviceptr>(s->base)) == CUDA_SUCCESS &&
          (range_base != reinterpret_cast<CUdeviceptr>(s->base) || range_size < wire.segment_size)) {
        status = fail(error, DLB_ERR_PROTOCOL,
                      "the received CUDA IPC allocation holds %zu bytes but its descriptor says %llu",
                      range_size, static_cast<unsigned long long>(wire.segment_size));
      }
    }
  }
  if (status != DLB_OK) {
    release_cuda_segment(s);
    return status;
  }
  if (extension.has_event == 1) {
    s->has_event = true;
    std::memcpy(&s->event_handle, extension.event_handle, sizeof s->event_handle);
  }
  // CUDA IPC memory is always the sender's too; a copy made for this exchange (IS_COPIED) in
  // POSIX-fd memory was dropped by its sender and is ours alone.
  s->exposed.store(wire.handle == kHandleCudaIpc ||
                       (wire.flags & DLPACK_FLAG_BITMASK_IS_COPIED) == 0,
                   std::memory_order_release);
  // check_cuda made sure the descriptor names kDLCUDA.
  DLTensor desc = dlb::ipc::described_tensor(wire, nullptr, wire.byte_offset);
  return wrap_cuda_segment(s, &desc, wire.flags, out, error);
}

int cuda_send_available(dlb_error*) { return DLB_OK; }

bool cuda_memory_is_exposed(dlb_release_fn release, void* ctx) {
  return release == release_cuda_segment &&
         static_cast<CudaSegment*>(ctx)->exposed.load(std::memory_order_acquire);
}

}  // namespace ipc
}  // namespace dlb

extern "C" {

DLB_API dlb_status dlb_cuda_wait_received(const DLManagedTensorVersioned* tensor,
                                          int64_t consumer_stream, dlb_error* error) {
  if (tensor == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  int status = dlb::cuda::check_consumer_stream(consumer_stream, error);
  if (status != DLB_OK) return status;
  const CudaSegment* s = segment_of(tensor);
  if (s == nullptr || !s->received) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "the tensor is not cuda memory received from a channel");
  }
  if (consumer_stream == -1 || !s->has_event) return DLB_OK;
  status = ready(error);
  DeviceScope scope;
  if (status == DLB_OK) status = scope.enter(s->device_id, error);
  if (status != DLB_OK) return status;
  cudaEvent_t event;
  cudaError_t e = cudaIpcOpenEventHandle(&event, s->event_handle);
  if (e != cudaSuccess) return cuda_fail(error, e, "cudaIpcOpenEventHandle of the sender's event");
  e = cudaStreamWaitEvent(dlb::cuda::consumer_stream_handle(consumer_stream), event, 0);
  if (e != cudaSuccess) status = cuda_fail(error, e, "cudaStreamWaitEvent on the consumer's stream");
  // Destroying an event that a stream still waits for is allowed: the wait completes first.
  cudaEventDestroy(event);
  return status;
}

}  // extern "C"
