// Sharing tensors across processes (dlbridge.h, "Sharing tensors across processes"): shareable
// host memory is a sealed memfd wrapped with release_segment; a channel is a Unix stream socket
// that carries a fixed-size descriptor with the segment's file descriptor (SCM_RIGHTS). Shareable
// CUDA memory is the CUDA backend's (ipc_cuda.hpp); its descriptor is followed by an extension
// frame (ipc_wire.hpp).
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "internal.hpp"
#include "ipc_cuda.hpp"
#include "ipc_wire.hpp"

#if defined(__linux__)
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

using dlb::ipc::kExtensionMagic;
using dlb::ipc::kHandleCudaFd;
using dlb::ipc::kHandleCudaIpc;
using dlb::ipc::kHandleMemfd;
using dlb::ipc::kWireMagic;
using dlb::ipc::kWireMajor;
using dlb::ipc::kWireMinor;
using dlb::ipc::Wire;
using dlb::ipc::WireExtension;

namespace {

// ---- segments -----------------------------------------------------------------------------

// One process's mapping of a shared segment, the release context of the tensor over it.
struct Segment {
  int fd;
  void* base;
  uint64_t size;  // bytes mapped (the memfd's size)
  // Set once the segment was sent, or when it was received from a peer that keeps it: another
  // process may map it, so no tensor of this process is its only holder any more.
  std::atomic<bool> exposed;
};

void release_segment(void* ctx) {
  auto* segment = static_cast<Segment*>(ctx);
  munmap(segment->base, segment->size);
  close(segment->fd);
  segment->exposed.~atomic();
  std::free(segment);
}

int os_error(dlb_error* error, int status, const char* what) {
  return dlb::fail(error, status, "%s failed: %s", what, std::strerror(errno));
}

// The seals every segment carries: no process can shrink or grow it, nor change the seals.
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

// Wraps `size` bytes of `fd`, mapped at `base`, as a tensor described by `desc` (its data is the
// mapping's start plus desc->byte_offset). Ownership: the segment record and the mapping move into
// the tensor on success; on error they are released here.
int wrap_segment(int fd, void* base, uint64_t size, bool exposed, DLTensor* desc, uint64_t flags,
                 DLManagedTensorVersioned** out, dlb_error* error) {
  auto* segment = static_cast<Segment*>(std::malloc(sizeof(Segment)));
  if (segment == nullptr) {
    munmap(base, size);
    close(fd);
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory sharing a tensor");
  }
  segment->fd = fd;
  segment->base = base;
  segment->size = size;
  new (&segment->exposed) std::atomic<bool>(exposed);
  desc->data = base;
  const int status = dlb_tensor_wrap_buffer(desc, size, flags, release_segment, segment, out, error);
  if (status != DLB_OK) release_segment(segment);
  return status;
}

}  // namespace

// ---- channels -----------------------------------------------------------------------------

struct dlb_channel {
  int fd;
  bool listener;
  std::atomic<bool> shut;  // dlb_channel_shutdown was called: every call fails CLOSED
  pid_t peer_pid;
  uid_t peer_uid;
  int nallowed;
  uid_t allowed[16];
  char path[sizeof(sockaddr_un::sun_path)];
};

namespace {

// A channel shut down (dlb_channel_shutdown) fails every call with DLB_ERR_CLOSED, also the ones
// it woke: their own error (EINVAL from accept, end of stream from recvmsg) is its consequence.
bool is_shut(const dlb_channel* channel) {
  return channel->shut.load(std::memory_order_acquire);
}
int fail_shut(dlb_error* error) {
  return dlb::fail(error, DLB_ERR_CLOSED, "%s", DLB_CHANNEL_CLOSED_MESSAGE);
}

dlb_channel* new_channel(int fd, bool listener) {
  auto* channel = static_cast<dlb_channel*>(std::calloc(1, sizeof(dlb_channel)));
  if (channel != nullptr) {
    channel->fd = fd;
    channel->listener = listener;
    channel->peer_pid = -1;
  }
  return channel;
}

bool allowed(const dlb_channel* channel, uid_t uid) {
  if (uid == geteuid()) return true;
  for (int i = 0; i < channel->nallowed; ++i) {
    if (channel->allowed[i] == uid) return true;
  }
  return false;
}

// Reads the peer's credentials (SO_PEERCRED) into the channel and refuses a peer of another user
// than the caller's or an allowed one.
int check_peer(dlb_channel* channel, dlb_error* error) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(channel->fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    return os_error(error, DLB_ERR_DEVICE, "getsockopt(SO_PEERCRED)");
  }
  channel->peer_pid = credentials.pid;
  channel->peer_uid = credentials.uid;
  if (!allowed(channel, credentials.uid)) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "the peer (pid %d) runs as uid %u, which this channel does not accept "
                     "(allow it with dlb_channel_allow_uid)",
                     static_cast<int>(credentials.pid), static_cast<unsigned>(credentials.uid));
  }
  return DLB_OK;
}

int address_of(const char* path, sockaddr_un* address, dlb_error* error) {
  if (path == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "path is NULL");
  const size_t length = std::strlen(path);
  if (length == 0 || length >= sizeof(address->sun_path)) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "socket path '%.64s' is %zu bytes; a Unix socket path holds 1 to %zu",
                     path, length, sizeof(address->sun_path) - 1);
  }
  std::memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  std::memcpy(address->sun_path, path, length + 1);
  return DLB_OK;
}

// The folder of a listener's socket: created 0700 when missing; otherwise it must belong to the
// caller and be closed to everyone else, so that no other user can reach the socket at all.
int check_folder(const char* path, dlb_error* error) {
  char folder[sizeof(sockaddr_un::sun_path)];
  std::snprintf(folder, sizeof folder, "%s", path);
  char* slash = std::strrchr(folder, '/');
  if (slash == nullptr) {
    std::snprintf(folder, sizeof folder, ".");
  } else if (slash == folder) {
    slash[1] = '\0';
  } else {
    *slash = '\0';
  }
  struct stat info {};
  if (stat(folder, &info) != 0) {
    if (errno != ENOENT) return os_error(error, DLB_ERR_INVALID_ARGUMENT, "stat of the socket's folder");
    if (mkdir(folder, 0700) != 0) return os_error(error, DLB_ERR_INVALID_ARGUMENT, "mkdir of the socket's folder");
    return DLB_OK;
  }
  if (!S_ISDIR(info.st_mode)) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "'%s' is not a folder", folder);
  }
  if (info.st_uid != geteuid()) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "folder '%s' belongs to uid %u, not to this process's user (uid %u)", folder,
                     static_cast<unsigned>(info.st_uid), static_cast<unsigned>(geteuid()));
  }
  if ((info.st_mode & 0077) != 0) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "folder '%s' can be entered by other users (mode %04o): a channel's socket "
                     "must live in a folder only its user can enter (mode 0700)",
                     folder, static_cast<unsigned>(info.st_mode & 07777));
  }
  return DLB_OK;
}

// Sends all of `size` bytes, the file descriptor `fd` with the first of them.
int send_all(int socket_fd, const void* data, size_t size, int fd, dlb_error* error) {
  const char* bytes = static_cast<const char*>(data);
  size_t sent = 0;
  while (sent < size) {
    iovec io{const_cast<char*>(bytes + sent), size - sent};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (sent == 0 && fd >= 0) {
      std::memset(control, 0, sizeof control);
      message.msg_control = control;
      message.msg_controllen = sizeof control;
      cmsghdr* header = CMSG_FIRSTHDR(&message);
      header->cmsg_level = SOL_SOCKET;
      header->cmsg_type = SCM_RIGHTS;
      header->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(header), &fd, sizeof(int));
    }
    const ssize_t n = sendmsg(socket_fd, &message, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error(error, DLB_ERR_DEVICE, "sending on the channel");
    }
    sent += static_cast<size_t>(n);
  }
  return DLB_OK;
}

// Receives one frame of exactly `size` bytes (a descriptor, or its extension) and the file
// descriptors that come with them, counted on from what *fd and *fds hold (*fd: the first one,
// kept; any more are closed and only counted). On error *fd is closed and set to -1.
int receive_frame(int socket_fd, void* frame, size_t size, bool first, const char* what, int* fd,
                  int* fds, dlb_error* error) {
  char* bytes = static_cast<char*>(frame);
  size_t received = 0;
  while (received < size) {
    iovec io{bytes + received, size - received};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(socket_fd, &message, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      if (*fd >= 0) close(*fd);
      *fd = -1;
      errno = saved;
      return os_error(error, DLB_ERR_DEVICE, "receiving on the channel");
    }
    for (cmsghdr* h = CMSG_FIRSTHDR(&message); h != nullptr; h = CMSG_NXTHDR(&message, h)) {
      if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int one;
        std::memcpy(&one, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
        if (*fds == 0) *fd = one;
        else close(one);
        ++*fds;
      }
    }
    if ((message.msg_flags & MSG_CTRUNC) != 0) ++*fds;  // more than fit: at least two
    if (n == 0) {
      const bool nothing = first && received == 0 && *fds == 0;
      if (*fd >= 0) close(*fd);
      *fd = -1;
      if (nothing) return dlb::fail(error, DLB_ERR_DEVICE, "the peer closed the channel");
      return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                       "truncated %s: the peer closed the channel after %zu of %zu bytes", what,
                       received, size);
    }
    received += static_cast<size_t>(n);
  }
  return DLB_OK;
}

int refuse_received(int fd, dlb_error* error, int status, const char* format, ...)
    __attribute__((format(printf, 4, 5)));
int refuse_received(int fd, dlb_error* error, int status, const char* format, ...) {
  if (fd >= 0) close(fd);
  if (error != nullptr) {
    va_list args;
    va_start(args, format);
    std::vsnprintf(error->message, sizeof error->message, format, args);
    va_end(args);
  }
  return status;
}

// The ndim and layout of a received descriptor, checked against its segment before anything is
// mapped, with the messages of the import and of dlb_tensor_wrap_buffer.
int check_received_layout(const Wire& wire, dlb_error* error) {
  if (wire.ndim < 0 || wire.ndim > DLB_MAX_NDIM) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "ndim %d exceeds the maximum of %d",
                     static_cast<int>(wire.ndim), DLB_MAX_NDIM);
  }
  DLTensor desc{};
  // No memory yet: a stand-in address, so that validation sees a tensor with data.
  static char stand_in;
  desc.data = &stand_in;
  desc.device = DLDevice{static_cast<DLDeviceType>(wire.device_type), wire.device_id};
  desc.ndim = wire.ndim;
  desc.dtype = DLDataType{wire.code, wire.bits, wire.lanes};
  desc.shape = const_cast<int64_t*>(wire.shape);
  desc.strides = const_cast<int64_t*>(wire.strides);
  desc.byte_offset = wire.byte_offset;
  dlb::Geometry g{};
  int status = dlb::validate_tensor(&desc, wire.flags, &g, error);
  if (status != DLB_OK) return status;
  if (g.span_bits != 0) {
    const int64_t begin = g.begin_bits >> 3;
    const int64_t end = (g.begin_bits + static_cast<int64_t>(g.span_bits) + 7) >> 3;
    if (begin < 0 || static_cast<uint64_t>(end) > wire.segment_size) {
      return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                       "the tensor's elements reach bytes [%lld, %lld) of a buffer of %llu bytes",
                       static_cast<long long>(begin), static_cast<long long>(end),
                       static_cast<unsigned long long>(wire.segment_size));
    }
  }
  return DLB_OK;
}

const char* handle_name(uint32_t handle) {
  return handle == kHandleCudaFd ? "cuda-fd" : handle == kHandleCudaIpc ? "cuda-ipc" : "unknown";
}

// The rest of a descriptor whose handle is not a memfd: its extension frame is read first, so
// that the stream stays in step whatever is refused; then everything is checked before the CUDA
// backend maps it. Ownership: `fd` (-1 when none came) is taken in every case.
int receive_cuda(dlb_channel* channel, const Wire& wire, int fd, int fds,
                 DLManagedTensorVersioned** out, dlb_error* error) {
  WireExtension extension;
  int status = receive_frame(channel->fd, &extension, sizeof extension, false,
                             "descriptor extension", &fd, &fds, error);
  if (status != DLB_OK) return is_shut(channel) ? fail_shut(error) : status;
  if (std::memcmp(extension.magic, kExtensionMagic, sizeof kExtensionMagic) != 0) {
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "a tensor descriptor with memory handle kind %u must be followed by "
                           "its extension frame (bad magic)",
                           static_cast<unsigned>(wire.handle));
  }
  if (wire.handle != kHandleCudaFd && wire.handle != kHandleCudaIpc) {
    return refuse_received(fd, error, DLB_ERR_UNSUPPORTED_VERSION,
                           "tensor descriptor version %u.%u names memory handle kind %u, which "
                           "this dlbridge (version %u.%u) does not know",
                           static_cast<unsigned>(wire.major), static_cast<unsigned>(wire.minor),
                           static_cast<unsigned>(wire.handle), static_cast<unsigned>(kWireMajor),
                           static_cast<unsigned>(kWireMinor));
  }
  if (wire.device_type != kDLCUDA) {
    dlb::DeviceTypeText name(wire.device_type);
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "a %s descriptor describes cuda memory, not %s",
                           handle_name(wire.handle), name.text);
  }
  const int wanted = wire.handle == kHandleCudaFd ? 1 : 0;
  if (fds != wanted) {
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "a %s descriptor must come with %s file descriptor, not %d",
                           handle_name(wire.handle), wanted == 1 ? "exactly one" : "no", fds);
  }
  if (wire.device_id < 0) {
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "the descriptor names cuda device %d", static_cast<int>(wire.device_id));
  }
  if (wire.segment_size == 0) {
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "the descriptor says the cuda allocation holds 0 bytes");
  }
  if ((extension.has_event != 0 && extension.has_event != 1) || extension.reserved != 0) {
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "the descriptor extension's event field is %u and its reserved field %u "
                           "(expected 0 or 1, and 0)",
                           static_cast<unsigned>(extension.has_event),
                           static_cast<unsigned>(extension.reserved));
  }
  char message[sizeof error->message];
  dlb_error layout;
  status = check_received_layout(wire, &layout);
  if (status != DLB_OK) {
    std::snprintf(message, sizeof message, "%s", layout.message);
    return refuse_received(fd, error, status, "%s", message);
  }
  // The CUDA backend takes the descriptor from here, on error too.
  return dlb::ipc::cuda_receive(wire, extension, fd, out, error);
}

}  // namespace

extern "C" {

DLB_API dlb_status dlb_tensor_allocate_shareable(DLDevice device, DLDataType dtype, int32_t ndim,
                                                 const int64_t* shape, const int64_t* strides,
                                                 uint64_t flags, DLManagedTensorVersioned** out,
                                                 dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
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
    return dlb::fail(error, DLB_ERR_UNSUPPORTED, "shareable memory on %s is not supported",
                     name.text);
  }
  // The first element on a DLB_CPU_ALIGNMENT boundary of the (page-aligned) mapping; what
  // negative strides reach before it lies in the lead.
  const uint64_t lead = (byte_offset + DLB_CPU_ALIGNMENT - 1) & ~uint64_t{DLB_CPU_ALIGNMENT - 1};
  const uint64_t size = lead + (nbytes - byte_offset) > 0 ? lead + (nbytes - byte_offset) : 1;
  const int fd = memfd_create("dlbridge", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return os_error(error, DLB_ERR_OUT_OF_MEMORY, "memfd_create");
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "cannot allocate %llu bytes of shareable memory: %s",
                     static_cast<unsigned long long>(size), std::strerror(saved));
  }
  if (fcntl(fd, F_ADD_SEALS, kSeals) != 0) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return os_error(error, DLB_ERR_DEVICE, "sealing the shareable memory");
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return os_error(error, DLB_ERR_OUT_OF_MEMORY, "mmap of the shareable memory");
  }
  DLTensor desc{};
  desc.device = device;
  desc.ndim = ndim;
  desc.dtype = dtype;
  desc.shape = const_cast<int64_t*>(shape);
  desc.strides = const_cast<int64_t*>(strides);
  desc.byte_offset = lead;  // the first element, from the mapping's start
  return wrap_segment(fd, base, size, false, &desc, flags, out, error);
}

}  // extern "C"

namespace dlb {
bool memory_is_exposed(dlb_release_fn release, void* ctx) {
  if (release != release_segment) return ipc::cuda_memory_is_exposed(release, ctx);
  return static_cast<Segment*>(ctx)->exposed.load(std::memory_order_acquire);
}
}  // namespace dlb

extern "C" {

DLB_API int dlb_tensor_shareable_kind(const DLManagedTensorVersioned* tensor) {
  if (tensor == nullptr) return DLB_SHAREABLE_NONE;
  if (dlb::release_context(tensor, release_segment) != nullptr) return DLB_SHAREABLE_MEMFD;
  switch (dlb::ipc::cuda_handle_kind(tensor)) {
    case kHandleCudaFd:
      return DLB_SHAREABLE_CUDA_FD;
    case kHandleCudaIpc:
      return DLB_SHAREABLE_CUDA_IPC;
    default:
      return DLB_SHAREABLE_NONE;
  }
}

DLB_API int dlb_tensor_is_shareable(const DLManagedTensorVersioned* tensor) {
  return dlb_tensor_shareable_kind(tensor) != DLB_SHAREABLE_NONE;
}

DLB_API dlb_status dlb_channel_listen(const char* path, dlb_channel** out, dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  sockaddr_un address;
  int status = address_of(path, &address, error);
  if (status == DLB_OK) status = check_folder(path, error);
  if (status != DLB_OK) return status;
  struct stat info {};
  if (lstat(path, &info) == 0) {
    if (!S_ISSOCK(info.st_mode)) {
      return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "'%s' exists and is not a socket", path);
    }
    // A socket file: live if something accepts on it, else left by a process that died.
    const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0) {
      const bool live = connect(probe, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
      close(probe);
      if (live) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "something already listens at '%s'", path);
    }
    unlink(path);
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return os_error(error, DLB_ERR_DEVICE, "socket");
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      chmod(path, 0600) != 0 || listen(fd, 64) != 0) {
    const int saved = errno;
    close(fd);
    unlink(path);
    errno = saved;
    return os_error(error, DLB_ERR_INVALID_ARGUMENT, "listening at the socket path");
  }
  dlb_channel* channel = new_channel(fd, true);
  if (channel == nullptr) {
    close(fd);
    unlink(path);
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  }
  std::snprintf(channel->path, sizeof channel->path, "%s", path);
  *out = channel;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_accept(dlb_channel* listener, dlb_channel** out, dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (listener == nullptr || !listener->listener) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "the channel is not a listener");
  }
  if (is_shut(listener)) return fail_shut(error);
  int fd;
  do {
    fd = accept4(listener->fd, nullptr, nullptr, SOCK_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return is_shut(listener) ? fail_shut(error) : os_error(error, DLB_ERR_DEVICE, "accept");
  dlb_channel* channel = new_channel(fd, false);
  if (channel == nullptr) {
    close(fd);
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  }
  channel->nallowed = listener->nallowed;
  std::memcpy(channel->allowed, listener->allowed, sizeof channel->allowed);
  const int status = check_peer(channel, error);
  if (status != DLB_OK) {
    dlb_channel_close(channel);
    return status;
  }
  *out = channel;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_connect(const char* path, dlb_channel** out, dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  sockaddr_un address;
  int status = address_of(path, &address, error);
  if (status != DLB_OK) return status;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return os_error(error, DLB_ERR_DEVICE, "socket");
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    const int saved = errno;
    close(fd);
    return dlb::fail(error, DLB_ERR_DEVICE_UNAVAILABLE, "cannot connect to '%s': %s", path,
                     std::strerror(saved));
  }
  dlb_channel* channel = new_channel(fd, false);
  if (channel == nullptr) {
    close(fd);
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  }
  status = check_peer(channel, error);
  if (status != DLB_OK) {
    dlb_channel_close(channel);
    return status;
  }
  *out = channel;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_allow_uid(dlb_channel* channel, uint32_t uid, dlb_error* error) {
  if (channel == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "channel is NULL");
  if (is_shut(channel)) return fail_shut(error);
  if (allowed(channel, uid)) return DLB_OK;
  const int capacity = static_cast<int>(sizeof channel->allowed / sizeof channel->allowed[0]);
  if (channel->nallowed == capacity) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "a channel accepts at most %d other users",
                     capacity);
  }
  channel->allowed[channel->nallowed++] = uid;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_peer(const dlb_channel* channel, int32_t* pid, uint32_t* uid,
                                    dlb_error* error) {
  if (pid != nullptr) *pid = 0;
  if (uid != nullptr) *uid = 0;
  if (channel == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "channel is NULL");
  if (is_shut(channel)) return fail_shut(error);
  if (channel->listener) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "a listener has no peer");
  }
  if (pid != nullptr) *pid = static_cast<int32_t>(channel->peer_pid);
  if (uid != nullptr) *uid = static_cast<uint32_t>(channel->peer_uid);
  return DLB_OK;
}

}  // extern "C"

namespace dlb {
namespace ipc {

int send_tensor(dlb_channel* channel, const DLManagedTensorVersioned* tensor, uint32_t options,
                bool cuda_call, void* stream, dlb_error* error) {
  if (channel == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "channel is NULL");
  if (is_shut(channel)) return fail_shut(error);
  if (channel->listener) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "a listener cannot send: accept a connection");
  }
  if (tensor == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  if ((options & ~DLB_SEND_COPY) != 0) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "unknown send options 0x%x",
                     static_cast<unsigned>(options & ~DLB_SEND_COPY));
  }
  dlb::Geometry g{};
  int status = dlb::validate_tensor(&tensor->dl_tensor, tensor->flags, &g, error);
  if (status != DLB_OK) return status;
  const DLTensor& t = tensor->dl_tensor;
  if (cuda_call && t.device.device_type != kDLCUDA) {
    dlb::DeviceTypeText name(t.device.device_type);
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT,
                     "dlb_channel_send_cuda sends cuda tensors, not %s ones: use dlb_channel_send",
                     name.text);
  }
  auto* segment = static_cast<Segment*>(dlb::release_context(tensor, release_segment));
  const int cuda_kind = segment == nullptr ? cuda_handle_kind(tensor) : -1;
  if (segment == nullptr && cuda_kind < 0) {
    if ((options & DLB_SEND_COPY) == 0) {
      return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                       "the tensor's memory is not shareable: allocate it with "
                       "dlb_tensor_allocate_shareable, or send with DLB_SEND_COPY");
    }
    // CUDA device memory is copied into shareable memory on its device, everything else into
    // host memory. The copy is complete before it is sent, so no event goes with it.
    const DLDevice to = t.device.device_type == kDLCUDA ? t.device : DLDevice{kDLCPU, 0};
    DLManagedTensorVersioned* copy = nullptr;
    status = dlb_tensor_allocate_shareable(
        to, t.dtype, t.ndim, t.shape, nullptr,
        tensor->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, &copy, error);
    if (status == DLB_OK) {
      if (cuda_call) {
        status = dlb_tensor_copy_into_async(tensor, copy, stream, error);
        if (status == DLB_OK) status = dlb_device_synchronize(to, stream, error);
      } else {
        status = dlb_tensor_copy_into(tensor, copy, error);
      }
    }
    if (status == DLB_OK) {
      copy->flags |= DLPACK_FLAG_BITMASK_IS_COPIED |
                     (tensor->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
      status = send_tensor(channel, copy, 0, false, nullptr, error);
    }
    dlb_tensor_free(copy);  // the peer holds the memory now
    return status;
  }
  // One send: the descriptor, then (CUDA memory) its extension frame.
  struct Frames {
    Wire wire;
    WireExtension extension;
  } frames{};
  static_assert(sizeof(Frames) == 2 * sizeof(Wire), "the frames travel back to back");
  Wire& wire = frames.wire;
  const void* base;
  int fd;
  if (segment != nullptr) {
    wire.handle = kHandleMemfd;
    wire.segment_size = segment->size;
    base = segment->base;
    fd = segment->fd;
    segment->exposed.store(true, std::memory_order_release);
  } else {
    CudaSend cuda{};
    status = cuda_prepare_send(tensor, cuda_call, stream, &cuda, error);
    if (status != DLB_OK) return status;
    wire.handle = cuda.handle;
    wire.segment_size = cuda.size;
    base = cuda.base;
    fd = cuda.fd;
    frames.extension = cuda.extension;
  }
  std::memcpy(wire.magic, kWireMagic, sizeof kWireMagic);
  wire.major = kWireMajor;
  wire.minor = kWireMinor;
  wire.size = sizeof(Wire);
  wire.device_type = t.device.device_type;
  wire.device_id = t.device.device_id;
  wire.ndim = t.ndim;
  wire.code = t.dtype.code;
  wire.bits = t.dtype.bits;
  wire.lanes = t.dtype.lanes;
  wire.flags = tensor->flags;
  wire.byte_offset = static_cast<uint64_t>(static_cast<const char*>(t.data) -
                                           static_cast<const char*>(base)) +
                     t.byte_offset;
  dlb_tensor_get_shape(&t, DLB_MAX_NDIM, wire.shape, nullptr);
  dlb_tensor_get_strides(&t, DLB_MAX_NDIM, wire.strides, nullptr);
  const size_t bytes = wire.handle == kHandleMemfd ? sizeof(Wire) : sizeof frames;
  status = send_all(channel->fd, &frames, bytes, fd, error);
  return status != DLB_OK && is_shut(channel) ? fail_shut(error) : status;
}

}  // namespace ipc
}  // namespace dlb

extern "C" {

DLB_API dlb_status dlb_channel_send(dlb_channel* channel, const DLManagedTensorVersioned* tensor,
                                    uint32_t options, dlb_error* error) {
  return dlb::ipc::send_tensor(channel, tensor, options, false, nullptr, error);
}

DLB_API dlb_status dlb_channel_receive(dlb_channel* channel, DLManagedTensorVersioned** out,
                                       dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (channel == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "channel is NULL");
  if (is_shut(channel)) return fail_shut(error);
  if (channel->listener) {
    return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "a listener cannot receive: accept a connection");
  }
  Wire wire;
  int fd = -1, fds = 0;
  int status = receive_frame(channel->fd, &wire, sizeof wire, true, "descriptor", &fd, &fds, error);
  if (status != DLB_OK) return is_shut(channel) ? fail_shut(error) : status;
  if (!allowed(channel, channel->peer_uid)) {
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "the peer runs as uid %u, which this channel does not accept",
                           static_cast<unsigned>(channel->peer_uid));
  }
  if (std::memcmp(wire.magic, kWireMagic, sizeof kWireMagic) != 0) {
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "not a dlbridge tensor descriptor (bad magic)");
  }
  if (wire.major != kWireMajor || wire.size != sizeof(Wire)) {
    return refuse_received(fd, error, DLB_ERR_UNSUPPORTED_VERSION,
                           "tensor descriptor version %u.%u of %u bytes is not supported "
                           "(dlbridge reads version %u of %zu bytes)",
                           static_cast<unsigned>(wire.major), static_cast<unsigned>(wire.minor),
                           static_cast<unsigned>(wire.size), static_cast<unsigned>(kWireMajor),
                           sizeof(Wire));
  }
  if (wire.handle != kHandleMemfd) return receive_cuda(channel, wire, fd, fds, out, error);
  if (fds != 1) {
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "a tensor descriptor must come with exactly one file descriptor, "
                           "not %d", fds);
  }
  if (wire.device_type != kDLCPU) {
    dlb::DeviceTypeText name(wire.device_type);
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "received a tensor on %s in a memfd segment, which holds cpu memory only",
                           name.text);
  }
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    const int saved = errno;
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "fstat of the received segment failed: %s", std::strerror(saved));
  }
  if (!S_ISREG(info.st_mode) || static_cast<uint64_t>(info.st_size) != wire.segment_size ||
      wire.segment_size == 0) {
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "the received segment holds %lld bytes but its descriptor says %llu",
                           static_cast<long long>(info.st_size),
                           static_cast<unsigned long long>(wire.segment_size));
  }
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "the received segment is not sealed against shrinking and growing: "
                           "its sender could cut it short under the mapping");
  }
  if (wire.ndim < 0 || wire.ndim > DLB_MAX_NDIM) {
    return refuse_received(fd, error, DLB_ERR_INVALID_ARGUMENT,
                           "ndim %d exceeds the maximum of %d", static_cast<int>(wire.ndim),
                           DLB_MAX_NDIM);
  }
  const bool read_only = (wire.flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  void* base = mmap(nullptr, wire.segment_size, read_only ? PROT_READ : PROT_READ | PROT_WRITE,
                    MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int saved = errno;
    return refuse_received(fd, error, DLB_ERR_OUT_OF_MEMORY,
                           "mmap of the received segment failed: %s", std::strerror(saved));
  }
  DLTensor desc{};
  desc.device = DLDevice{kDLCPU, 0};
  desc.ndim = wire.ndim;
  desc.dtype = DLDataType{wire.code, wire.bits, wire.lanes};
  desc.shape = wire.shape;
  desc.strides = wire.strides;
  desc.byte_offset = wire.byte_offset;
  // The core validates the tensor as an import and checks that its elements lie inside the
  // segment (dlb_tensor_wrap_buffer), with its messages.
  // A copy made for this exchange (IS_COPIED) was dropped by its sender: it is ours alone.
  const bool exposed = (wire.flags & DLPACK_FLAG_BITMASK_IS_COPIED) == 0;
  return wrap_segment(fd, base, wire.segment_size, exposed, &desc, wire.flags, out, error);
}

DLB_API void dlb_channel_shutdown(dlb_channel* channel) {
  if (channel == nullptr || channel->shut.exchange(true, std::memory_order_acq_rel)) return;
  // Wakes a blocked accept (EINVAL on a listening socket) or recvmsg (end of stream) and makes a
  // blocked sendmsg fail; the descriptor stays open until dlb_channel_close, so no other thread
  // can be handed a reused descriptor number.
  shutdown(channel->fd, SHUT_RDWR);
}

DLB_API void dlb_channel_close(dlb_channel* channel) {
  if (channel == nullptr) return;
  close(channel->fd);
  if (channel->listener && channel->path[0] != '\0') unlink(channel->path);
  std::free(channel);
}

}  // extern "C"

#else  // !__linux__

struct dlb_channel {
  int unused;
};

namespace {
int unsupported(dlb_error* error) {
  return dlb::fail(error, DLB_ERR_UNSUPPORTED, "sharing tensors across processes needs Linux");
}
}  // namespace

namespace dlb {
bool memory_is_exposed(dlb_release_fn, void*) { return false; }
namespace ipc {
int send_tensor(dlb_channel*, const DLManagedTensorVersioned*, uint32_t, bool, void*,
                dlb_error* error) {
  return unsupported(error);
}
}  // namespace ipc
}  // namespace dlb

extern "C" {
DLB_API dlb_status dlb_tensor_allocate_shareable(DLDevice, DLDataType, int32_t, const int64_t*,
                                                 const int64_t*, uint64_t,
                                                 DLManagedTensorVersioned** out, dlb_error* error) {
  if (out != nullptr) *out = nullptr;
  return unsupported(error);
}
DLB_API int dlb_tensor_is_shareable(const DLManagedTensorVersioned*) { return 0; }
DLB_API int dlb_tensor_shareable_kind(const DLManagedTensorVersioned*) { return DLB_SHAREABLE_NONE; }
DLB_API dlb_status dlb_channel_listen(const char*, dlb_channel** out, dlb_error* error) {
  if (out != nullptr) *out = nullptr;
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_accept(dlb_channel*, dlb_channel** out, dlb_error* error) {
  if (out != nullptr) *out = nullptr;
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_connect(const char*, dlb_channel** out, dlb_error* error) {
  if (out != nullptr) *out = nullptr;
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_allow_uid(dlb_channel*, uint32_t, dlb_error* error) {
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_peer(const dlb_channel*, int32_t*, uint32_t*, dlb_error* error) {
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_send(dlb_channel*, const DLManagedTensorVersioned*, uint32_t,
                                    dlb_error* error) {
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_receive(dlb_channel*, DLManagedTensorVersioned** out,
                                       dlb_error* error) {
  if (out != nullptr) *out = nullptr;
  return unsupported(error);
}
DLB_API void dlb_channel_shutdown(dlb_channel*) {}
DLB_API void dlb_channel_close(dlb_channel*) {}
}  // extern "C"

#endif
