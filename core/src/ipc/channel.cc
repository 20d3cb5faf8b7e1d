// The channel: a Unix stream socket between two processes of this machine. A tensor travels as
// one fixed-size descriptor (codec.cc), with its memory's file descriptor (SCM_RIGHTS) and, for
// CUDA memory and a pool's slots (pool.cc, inbound.cc), an extension frame in the same send. Peers are checked by the credentials the
// kernel recorded (SO_PEERCRED). Each call may have a time limit; a limit that runs out in the
// middle of a tensor's frames leaves the stream out of step, and the channel says so.
#if defined(__linux__)
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuda.hpp"
#include "ipc.hpp"
#include "remote.hpp"

using dlb::fail;
using dlb::ipc::OwnedFd;
using dlb::ipc::Wire;
using dlb::ipc::WireExtension;

namespace dlb {
namespace ipc {

int fail_shut(dlb_error* error) {
  return fail(error, DLB_ERR_CLOSED, "%s", DLB_CHANNEL_CLOSED_MESSAGE);
}

// A channel shut down (dlb_channel_shutdown) fails every call with DLB_ERR_CLOSED, also the ones
// it woke: their own error (EINVAL from accept, end of stream from recvmsg) is its consequence.
bool is_shut(const dlb_channel* channel) { return channel->shut.load(std::memory_order_acquire); }

int check_in_step(const dlb_channel* channel, dlb_error* error) {
  if (!channel->out_of_step) return DLB_OK;
  return fail(error, DLB_ERR_PROTOCOL,
              "the channel lost its place in the stream when a time limit ran out in the middle "
              "of a tensor: close it");
}

// The kernel dropped the file descriptors of a received tensor (MSG_CTRUNC): this process is at
// its limit of open files. The frames were read whole, so the stream is still in step.
int fail_dropped(dlb_error* error) {
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  return fail(error, DLB_ERR_LIMIT,
              "the file descriptor that came with the received tensor was dropped: this process "
              "is at its limit of %llu open file descriptors (RLIMIT_NOFILE); the tensor is lost",
              static_cast<unsigned long long>(limit.rlim_cur));
}

int check_send_options(uint32_t options, dlb_error* error) {
  constexpr uint32_t kKnown = DLB_SEND_COPY | DLB_SEND_KEEP_LAYOUT | DLB_SEND_MORE;
  if ((options & ~kKnown) != 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "unknown send options 0x%x",
                static_cast<unsigned>(options & ~kKnown));
  }
  return DLB_OK;
}

int check_connected(dlb_channel* channel, const char* verb, dlb_error* error) {
  if (channel == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "channel is NULL");
  if (is_shut(channel)) return fail_shut(error);
  if (channel->listener) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "a listener cannot %s: accept a connection",
                verb);
  }
  return check_in_step(channel, error);
}

}  // namespace ipc
}  // namespace dlb

namespace {

using dlb::ipc::check_connected;
using dlb::ipc::check_in_step;
using dlb::ipc::fail_dropped;
using dlb::ipc::is_shut;
using dlb::ipc::Deadline;
using dlb::ipc::fail_shut;
using dlb::ipc::os_fail;
using dlb::ipc::Received;
using dlb::ipc::address_of;
using dlb::ipc::check_folder;
using dlb::ipc::wait_releasing;
using dlb::ipc::check_timeout;
using dlb::ipc::new_channel;
using dlb::ipc::wait_ready;
using dlb::ipc::send_all;
using dlb::ipc::receive_bytes;
using dlb::ipc::keep_carry;
using dlb::ipc::take_carry;

// `options`, or the defaults (written into `defaults`) when NULL.
const dlb_channel_options* or_defaults(const dlb_channel_options* options,
                                       dlb_channel_options* defaults) {
  if (options != nullptr) return options;
  dlb::ipc::default_options(defaults);
  return defaults;
}

// A failed call's status, unless the channel was shut down meanwhile (then that is the cause).
int or_shut(const dlb_channel* channel, int status, dlb_error* error) {
  return status != DLB_OK && is_shut(channel) ? fail_shut(error) : status;
}

// A positive time limit is also the socket's receive timeout (SO_RCVTIMEO), so that the wait
// for the next tensor is one blocking recvmsg, as without a limit, rather than a recvmsg that
// finds nothing, a poll and a second recvmsg. The rest of a tensor's frames, and a limit of 0,
// keep to MSG_DONTWAIT and poll.
void set_receive_timeout(const dlb_channel* channel) {
  const int64_t ns = channel->timeout_ns > 0 ? channel->timeout_ns : 0;  // 0: no timeout
  timeval limit{static_cast<time_t>(ns / 1000000000),
                static_cast<suseconds_t>((ns % 1000000000 + 999) / 1000)};
  if (limit.tv_usec == 1000000) {
    limit.tv_sec += 1;
    limit.tv_usec = 0;
  }
  setsockopt(channel->fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
}

bool allowed(const dlb_channel* channel, uid_t uid) {
  if (uid == geteuid()) return true;
  for (int i = 0; i < channel->nallowed; ++i) {
    if (channel->allowed[i] == uid) return true;
  }
  return false;
}

// Reads the peer's credentials (SO_PEERCRED) into the channel and refuses a peer of another user
// than the caller's or an allowed one. `peer` says what the peer is ("peer", "listener") and
// `remedy` how to accept it.
int check_peer(dlb_channel* channel, const char* peer, const char* remedy, dlb_error* error) {
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(channel->fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
    return os_fail(error, errno, DLB_ERR_PEER_CLOSED, "getsockopt(SO_PEERCRED)");
  }
  channel->peer_pid = credentials.pid;
  channel->peer_uid = credentials.uid;
  if (!allowed(channel, credentials.uid)) {
    return fail(error, DLB_ERR_PERMISSION, "the %s runs as uid %u, which this channel does not accept (%s)",
                peer, static_cast<unsigned>(credentials.uid), remedy);
  }
  return DLB_OK;
}

// dlb_channel_send and dlb_channel_send_cuda (`cuda_call`, with `stream`).
int send_tensor(dlb_channel* channel, const DLManagedTensorVersioned* tensor, uint32_t options,
                bool cuda_call, void* stream, dlb_error* error) {
  int status = check_connected(channel, "send", error);
  if (status != DLB_OK) return status;
  if (tensor == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  status = dlb::ipc::check_send_options(options, error);
  if (status != DLB_OK) return status;
  dlb::Geometry g{};
  status = dlb::validate_tensor(&tensor->dl_tensor, tensor->flags, &g, error);
  if (status != DLB_OK) return status;
  const DLTensor& t = tensor->dl_tensor;
  if (cuda_call && t.device.device_type != kDLCUDA) {
    dlb::DeviceTypeText name(t.device.device_type);
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "the cuda send takes cuda tensors, not %s ones: send it without a stream",
                name.text);
  }
  dlb::ipc::Segment* segment = dlb::ipc::segment_of(tensor);
  dlb::ipc::Slot* slot = segment == nullptr ? dlb::ipc::pool_slot_of(tensor) : nullptr;
  const int cuda_kind = segment == nullptr && slot == nullptr ? dlb::ipc::cuda_handle_kind(tensor) : -1;
  const bool other_pool = slot != nullptr && !dlb::ipc::pool_belongs(channel, slot);
  const bool lent = segment == nullptr && slot == nullptr && cuda_kind < 0 && dlb::ipc::is_lent(tensor);
  if ((segment == nullptr && slot == nullptr && cuda_kind < 0) || other_pool) {
    if ((options & DLB_SEND_COPY) == 0) {
      if (other_pool) {
        return fail(error, DLB_ERR_INVALID_ARGUMENT,
                    "the tensor was allocated from another channel's pool: send it on that "
                    "channel, or send a copy");
      }
      if (lent) {
        return fail(error, DLB_ERR_UNSUPPORTED,
                    "the tensor was lent by its sender's pool and goes back to it when freed: it "
                    "cannot be sent on; send a copy");
      }
      return fail(error, DLB_ERR_UNSUPPORTED,
                  "the tensor's memory is not shareable: allocate it as shareable memory, or "
                  "send a copy");
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
  // One send: the descriptor, then (CUDA memory, a pool's slot) its extension frame.
  struct Frames {
    Wire wire;
    union {
      WireExtension cuda;
      dlb::ipc::PoolExtension pool;
    } extension;
  } frames{};
  static_assert(sizeof(Frames) == 2 * sizeof(Wire), "the frames travel back to back");
  int fd = -1;
  if (segment != nullptr) {
    dlb::ipc::encode(*tensor, dlb::ipc::kHandleMemfd, segment->base, segment->offset,
                     segment->size, &frames.wire);
    fd = segment->fd;
    segment->exposed.store(true, std::memory_order_release);
  } else if (slot != nullptr) {
    dlb::ipc::PooledSend pooled;
    status = dlb::ipc::pool_prepare_send(*tensor, slot, &frames.wire, &frames.extension.pool,
                                         &pooled, error);
    if (status != DLB_OK) return status;
    status = dlb::ipc::pool_post(channel, frames.wire, frames.extension.pool, pooled, error);
    if (status == dlb::ipc::kNotPosted) {
      status = send_all(channel, &frames, sizeof frames, pooled.fds, pooled.nfds, error);
      if (status == DLB_OK) status = dlb::ipc::pool_mark_socket(channel, error);
    }
    dlb::ipc::pool_finish_send(pooled, status == DLB_OK);
    return or_shut(channel, status, error);
  } else {
    dlb::ipc::CudaSend cuda{};
    status = dlb::ipc::cuda_prepare_send(tensor, cuda_call, stream, &cuda, error);
    if (status != DLB_OK) return status;
    dlb::ipc::encode(*tensor, cuda.handle, cuda.base, 0, cuda.size, &frames.wire);
    fd = cuda.fd;
    frames.extension.cuda = cuda.extension;
  }
  const size_t bytes = segment != nullptr ? sizeof(Wire) : sizeof frames;
  status = send_all(channel, &frames, bytes, &fd, fd >= 0 ? 1 : 0, error);
  if (status == DLB_OK) status = dlb::ipc::pool_mark_socket(channel, error);
  return or_shut(channel, status, error);
}

// A descriptor whose handle is not a memfd, with its extension frame (read whatever is refused,
// so that the stream stays in step): everything is checked before the pool's kept mapping or
// the CUDA backend serves it.
int receive_extended(dlb_channel* channel, const Wire& wire, const char* extension_bytes,
                     Received* got, DLManagedTensorVersioned** out, dlb_error* error) {
  if (wire.handle == dlb::ipc::kHandlePool) {
    dlb::ipc::PoolExtension extension;
    std::memcpy(&extension, extension_bytes, sizeof extension);
    return dlb::ipc::receive_pooled(channel, wire, extension, got, out, error);
  }
  if (got->dropped) return fail_dropped(error);
  WireExtension extension;
  std::memcpy(&extension, extension_bytes, sizeof extension);
  const int status = dlb::ipc::check_cuda(wire, extension, got->count, error);
  if (status != DLB_OK) return status;
  // The CUDA backend takes the descriptor from here, on error too.
  return dlb::ipc::cuda_receive(wire, extension, got->fds[0].release(), out, error);
}

}  // namespace

dlb_channel* dlb::ipc::new_channel(int fd, bool listener, int64_t timeout_ns) {
  auto* channel = static_cast<dlb_channel*>(std::calloc(1, sizeof(dlb_channel)));
  if (channel != nullptr) {
    channel->fd = fd;
    channel->listener = listener;
    channel->peer_pid = -1;
    channel->timeout_ns = timeout_ns;
    channel->pool_limit = DLB_POOL_DEFAULT_LIMIT;
    for (int& fd : channel->carry_fds) fd = -1;
    if (fd >= 0 && !listener && timeout_ns > 0) set_receive_timeout(channel);
  }
  return channel;
}

extern "C" {

DLB_API dlb_status dlb_channel_listen(const char* path, dlb_channel** out, dlb_error* error) {
  return dlb_channel_listen_with_options(path, nullptr, out, error);
}

DLB_API dlb_status dlb_channel_listen_with_options(const char* path,
                                                   const dlb_channel_options* options,
                                                   dlb_channel** out, dlb_error* error) {
  if (out == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  dlb_channel_options defaults;
  options = or_defaults(options, &defaults);
  if (dlb::ipc::is_remote_address(path)) return dlb::ipc::remote_listen(path, *options, out, error);
  sockaddr_un address;
  int status = address_of(path, &address, error);
  if (status == DLB_OK) status = check_folder(path, error);
  if (status != DLB_OK) return status;
  struct stat info {};
  if (lstat(path, &info) == 0) {
    if (!S_ISSOCK(info.st_mode)) {
      return fail(error, DLB_ERR_INVALID_ARGUMENT, "'%s' exists and is not a socket", path);
    }
    // A socket file: live if something accepts on it, else left by a process that died.
    OwnedFd probe(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (probe.get() >= 0 &&
        connect(probe.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
      return fail(error, DLB_ERR_INVALID_ARGUMENT, "something already listens at '%s'", path);
    }
    unlink(path);
  }
  OwnedFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return os_fail(error, errno, DLB_ERR_DEVICE, "socket");
  if (bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return os_fail(error, errno, DLB_ERR_INVALID_ARGUMENT, "binding the socket path");
  }
  if (chmod(path, 0600) != 0 || listen(fd.get(), 64) != 0) {
    const int saved = errno;
    unlink(path);
    return os_fail(error, saved, DLB_ERR_INVALID_ARGUMENT, "listening at the socket path");
  }
  dlb_channel* channel = new_channel(fd.get(), true, options->timeout_ns);
  if (channel == nullptr) {
    unlink(path);
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  }
  fd.release();
  std::snprintf(channel->path, sizeof channel->path, "%s", path);
  *out = channel;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_accept(dlb_channel* listener, dlb_channel** out, dlb_error* error) {
  if (out == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (listener == nullptr || !listener->listener) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "the channel is not a listener");
  }
  if (is_shut(listener)) return fail_shut(error);
  if (listener->remote != nullptr) return dlb::ipc::remote_accept(listener, out, error);
  const Deadline deadline(listener->timeout_ns);
  OwnedFd fd;
  for (;;) {
    int status = wait_ready(listener->fd, POLLIN, deadline, "waiting for a connection", error);
    if (status != DLB_OK) return or_shut(listener, status, error);
    fd.reset(accept4(listener->fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (fd.get() >= 0) break;
    if (errno == EINTR) continue;
    if (is_shut(listener)) return fail_shut(error);
    return os_fail(error, errno, DLB_ERR_DEVICE, "accepting a connection");
  }
  dlb_channel* channel = new_channel(fd.get(), false, listener->timeout_ns);
  if (channel == nullptr) return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  fd.release();
  channel->nallowed = listener->nallowed;
  std::memcpy(channel->allowed, listener->allowed, sizeof channel->allowed);
  const int status = check_peer(channel, "peer", "allow that uid on the listener", error);
  if (status != DLB_OK) {
    dlb_channel_close(channel);
    return status;
  }
  *out = channel;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_connect_with(const char* path, uint32_t listener_uid,
                                            int64_t timeout_ns, dlb_channel** out,
                                            dlb_error* error) {
  if (out == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  dlb_channel_options options;
  dlb::ipc::default_options(&options);
  options.listener_uid = listener_uid;
  int status = check_timeout(timeout_ns, error);
  if (status != DLB_OK) return status;
  options.timeout_ns = timeout_ns;
  return dlb_channel_connect_with_options(path, &options, out, error);
}

DLB_API dlb_status dlb_channel_connect_with_options(const char* path,
                                                    const dlb_channel_options* options,
                                                    dlb_channel** out, dlb_error* error) {
  if (out == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  dlb_channel_options defaults;
  options = or_defaults(options, &defaults);
  if (dlb::ipc::is_remote_address(path)) return dlb::ipc::remote_connect(path, *options, out, error);
  const uint32_t listener_uid = options->listener_uid;
  const int64_t timeout_ns = options->timeout_ns;
  sockaddr_un address;
  int status = address_of(path, &address, error);
  if (status != DLB_OK) return status;
  const Deadline deadline(timeout_ns);
  // With a limit the socket does not block: a full queue of the listener answers EAGAIN, and
  // the connection is tried again until the limit runs out.
  OwnedFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (deadline.unlimited() ? 0 : SOCK_NONBLOCK), 0));
  if (fd.get() < 0) return os_fail(error, errno, DLB_ERR_DEVICE, "socket");
  for (;;) {
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN && !deadline.unlimited()) {
      if (deadline.remaining_ms() == 0) {
        return fail(error, DLB_ERR_TIMEOUT,
                    "connecting to '%s': the time limit ran out (the listener does not accept)",
                    path);
      }
      const timespec pause{0, 1000000};
      nanosleep(&pause, nullptr);
      continue;
    }
    const int saved = errno;
    char what[sizeof(sockaddr_un::sun_path) + 32];
    std::snprintf(what, sizeof what, "connecting to '%s'", path);
    if (saved == ENOENT || saved == ECONNREFUSED) {
      return fail(error, DLB_ERR_NO_LISTENER, "nothing listens at '%s' (%s)", path,
                  std::strerror(saved));
    }
    return os_fail(error, saved, DLB_ERR_NO_LISTENER, what);
  }
  if (!deadline.unlimited()) fcntl(fd.get(), F_SETFL, 0);
  dlb_channel* channel = new_channel(fd.get(), false, timeout_ns);
  if (channel == nullptr) return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  fd.release();
  if (listener_uid != DLB_UID_SELF) {
    channel->allowed[0] = listener_uid;
    channel->nallowed = 1;
  }
  status = check_peer(channel, "listener", "name that uid when connecting", error);
  if (status != DLB_OK) {
    dlb_channel_close(channel);
    return status;
  }
  *out = channel;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_connect(const char* path, dlb_channel** out, dlb_error* error) {
  return dlb_channel_connect_with(path, DLB_UID_SELF, DLB_TIMEOUT_NONE, out, error);
}

DLB_API dlb_status dlb_channel_set_timeout(dlb_channel* channel, int64_t timeout_ns,
                                           dlb_error* error) {
  if (channel == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "channel is NULL");
  if (is_shut(channel)) return fail_shut(error);
  const int status = check_timeout(timeout_ns, error);
  if (status != DLB_OK) return status;
  channel->timeout_ns = timeout_ns;
  if (!channel->listener && channel->fd >= 0) set_receive_timeout(channel);
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_allow_uid(dlb_channel* channel, uint32_t uid, dlb_error* error) {
  if (channel == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "channel is NULL");
  if (is_shut(channel)) return fail_shut(error);
  if (channel->remote != nullptr) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "a remote channel authenticates its peers by key, not by user id");
  }
  if (allowed(channel, uid)) return DLB_OK;
  const int capacity = static_cast<int>(sizeof channel->allowed / sizeof channel->allowed[0]);
  if (channel->nallowed == capacity) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "a channel accepts at most %d other users",
                capacity);
  }
  channel->allowed[channel->nallowed++] = uid;
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_peer(const dlb_channel* channel, int32_t* pid, uint32_t* uid,
                                    dlb_error* error) {
  if (pid != nullptr) *pid = 0;
  if (uid != nullptr) *uid = 0;
  if (channel == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "channel is NULL");
  if (is_shut(channel)) return fail_shut(error);
  if (channel->listener) return fail(error, DLB_ERR_INVALID_ARGUMENT, "a listener has no peer");
  if (channel->remote != nullptr) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "a remote channel's peer has no process or user id on this machine");
  }
  if (pid != nullptr) *pid = static_cast<int32_t>(channel->peer_pid);
  if (uid != nullptr) *uid = static_cast<uint32_t>(channel->peer_uid);
  return DLB_OK;
}

DLB_API dlb_status dlb_channel_send(dlb_channel* channel, const DLManagedTensorVersioned* tensor,
                                    uint32_t options, dlb_error* error) {
  if (channel != nullptr && channel->remote != nullptr) {
    const int status = check_connected(channel, "send", error);
    return status != DLB_OK ? status : dlb::ipc::remote_send(channel, tensor, options, error);
  }
  return send_tensor(channel, tensor, options, false, nullptr, error);
}

DLB_API dlb_status dlb_channel_send_cuda(dlb_channel* channel,
                                         const DLManagedTensorVersioned* tensor, void* stream,
                                         uint32_t options, dlb_error* error) {
  if (channel != nullptr && channel->remote != nullptr) {
    return fail(error, DLB_ERR_UNSUPPORTED,
                "stream order does not cross machines: finish the stream's work on the tensor, "
                "then send it with dlb_channel_send");
  }
  const int status = dlb::ipc::cuda_send_available(error);
  if (status != DLB_OK) return status;
  return send_tensor(channel, tensor, options, true, stream, error);
}

DLB_API dlb_status dlb_channel_receive(dlb_channel* channel, DLManagedTensorVersioned** out,
                                       dlb_error* error) {
  if (out == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  int status = check_connected(channel, "receive", error);
  if (status != DLB_OK) return status;
  if (channel->remote != nullptr) return dlb::ipc::remote_receive(channel, out, error);
  const Deadline deadline(channel->timeout_ns);
  status = wait_releasing(channel, deadline, error);
  if (status != DLB_OK) return or_shut(channel, status, error);
  status = dlb::ipc::receive_posted(channel, deadline, out, error);
  if (status != dlb::ipc::kFromSocket) return or_shut(channel, status, error);
  // One read takes a descriptor and its extension frame when they are there: a sender writes
  // a tensor's frames in one send.
  constexpr size_t kFrame = sizeof(Wire);
  alignas(Wire) char frames[2 * kFrame];
  Received got;
  size_t have = take_carry(channel, frames, &got);
  status = receive_bytes(channel, frames, &have, 0, kFrame, 2 * kFrame, true, "descriptor",
                         deadline, &got, error);
  if (status != DLB_OK) return or_shut(channel, status, error);
  Wire wire;
  std::memcpy(&wire, frames, kFrame);
  status = dlb::ipc::check_header(wire, error);
  const bool extended = status == DLB_OK && wire.handle != dlb::ipc::kHandleMemfd;
  if (!extended && have > kFrame) keep_carry(channel, frames + kFrame, have - kFrame, &got);
  if (status != DLB_OK) return status;
  if (extended) {
    status = receive_bytes(channel, frames, &have, kFrame, 2 * kFrame, 2 * kFrame, false,
                           "descriptor extension", deadline, &got, error);
    if (status != DLB_OK) return or_shut(channel, status, error);
    return receive_extended(channel, wire, frames + kFrame, &got, out, error);
  }
  if (got.dropped) return fail_dropped(error);
  dlb::Geometry g{};
  status = dlb::ipc::check_memfd(wire, got.fds[0].get(), got.count, &g, error);
  if (status != DLB_OK) return status;
  return dlb::ipc::map_received_segment(got.fds[0], wire, g, out, error);
}

DLB_API void dlb_channel_shutdown(dlb_channel* channel) {
  if (channel == nullptr || channel->shut.exchange(true, std::memory_order_acq_rel)) return;
  if (channel->remote != nullptr) {
    dlb::ipc::remote_shutdown(channel);
    return;
  }
  // Wakes a blocked accept (EINVAL on a listening socket) or recvmsg (end of stream) and makes a
  // blocked sendmsg fail; the descriptor stays open until dlb_channel_close, so no other thread
  // can be handed a reused descriptor number.
  shutdown(channel->fd, SHUT_RDWR);
  dlb::ipc::pool_shutdown(channel);
  dlb::ipc::inbound_shutdown(channel);
}

DLB_API void dlb_channel_close(dlb_channel* channel) {
  if (channel == nullptr) return;
  if (channel->remote != nullptr) {
    dlb::ipc::remote_close(channel);
    std::free(channel);
    return;
  }
  dlb::ipc::pool_close(channel);
  dlb::ipc::inbound_close(channel);
  for (int fd : channel->carry_fds) {
    if (fd >= 0) close(fd);
  }
  close(channel->fd);
  if (channel->listener && channel->path[0] != '\0') unlink(channel->path);
  std::free(channel);
}

DLB_API int dlb_channel_is_remote(const dlb_channel* channel) {
  return channel != nullptr && channel->remote != nullptr ? 1 : 0;
}

DLB_API int32_t dlb_channel_port(const dlb_channel* channel) {
  return channel != nullptr && channel->remote != nullptr ? dlb::ipc::remote_port(channel) : -1;
}

DLB_API dlb_status dlb_remote_available(dlb_error* error) {
  return dlb::ipc::remote_available(error);
}

}  // extern "C"

#endif  // __linux__
