/*
 * dlbridge/channel.hpp - C++17 owners of the dlbridge channel (dlbridge.h, "Sharing tensors
 * across processes" and "Channels across machines"): a tensor in shareable memory crosses to
 * another process without a copy, and any tensor's bytes cross to another machine.
 * Included by dlbridge/dlbridge.hpp; including this header alone works too.
 *
 * - dlbridge::Listener listens at an address (a Unix socket path, or "tcp://HOST:PORT" /
 *   "ucx://HOST:PORT" for a remote channel) and accepts connections; dlbridge::Channel is one
 *   end of a connection, which sends and receives tensors. Both are move-only owners of one
 *   dlb_channel*: the destructor closes it (a Listener's also removes its socket file); a
 *   moved-from or closed object is empty.
 * - dlbridge::ChannelOptions holds what a remote channel is made with (its key, receive device,
 *   limits, time limit): Listener::listen(address, options), Channel::connect(address, options).
 *   is_remote() and port() say what a channel is; remote_available() whether this process can
 *   make remote channels at all (UCX and libcrypto are loaded at run time).
 * - Every failure throws dlbridge::Error with the core's status and message, verbatim. The
 *   channel statuses are the core's constants: DLB_ERR_NO_LISTENER, DLB_ERR_PERMISSION,
 *   DLB_ERR_PEER_CLOSED, DLB_ERR_PROTOCOL, DLB_ERR_TIMEOUT, DLB_ERR_LIMIT, DLB_ERR_CLOSED (and
 *   the others the core's header lists); Error::status_name() names them. A server loop
 *   catches DLB_ERR_PERMISSION, DLB_ERR_PEER_CLOSED, DLB_ERR_PROTOCOL and DLB_ERR_TIMEOUT from
 *   accept() or from that peer's Channel, drops that peer and keeps serving (docs/ipc.md).
 * - An empty object (moved from, closed) throws Error(DLB_ERR_CLOSED, "the channel is closed"),
 *   the same status and message as a channel shut down from another thread.
 * - Time limits are std::chrono durations: std::nullopt means no limit (the default), 0 means
 *   "do not wait". A negative duration is handed to the core, which refuses it, except -1 ns,
 *   which is the core's encoding of "no limit" (DLB_TIMEOUT_NONE).
 *
 * Threads: one object is used by one thread at a time, except shutdown(), which any thread may
 * call at any time: a call blocked in accept(), receive() or send() then returns with
 * DLB_ERR_CLOSED. Destroy (or close()) the object only once no call on it is in progress.
 */
#ifndef DLBRIDGE_CHANNEL_HPP_
#define DLBRIDGE_CHANNEL_HPP_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "dlbridge/dlbridge.hpp"

namespace dlbridge {

/* connect_with()'s listener uid when the listener must run as the caller's own user. */
constexpr uint32_t kUidSelf = DLB_UID_SELF;

/* Channel::send() option: a tensor whose memory is not shareable is first copied into new
 * shareable memory (the receiver's tensor is then flagged IS_COPIED). */
constexpr uint32_t kSendCopy = DLB_SEND_COPY;

/* Channel::send() option: a remote channel sends a strided tensor's covering span and the
 * receiver's tensor keeps the sender's strides (DLB_SEND_KEEP_LAYOUT). */
constexpr uint32_t kSendKeepLayout = DLB_SEND_KEEP_LAYOUT;

/* Channel::send() option: more tensors follow at once; a remote channel may hold this one's
 * bytes (copied) and send them with the next ones as one batch (DLB_SEND_MORE). */
constexpr uint32_t kSendMore = DLB_SEND_MORE;

/* Who is on the other end of a Channel, as the kernel recorded it when the connection was made. */
struct Peer {
  /* The peer's process id and user id. */
  int32_t pid = 0;
  uint32_t uid = 0;
};

namespace detail {

/* A time limit as the core takes it: nanoseconds, DLB_TIMEOUT_NONE for none. */
inline int64_t timeout_ns(std::optional<std::chrono::nanoseconds> limit) noexcept {
  return limit ? static_cast<int64_t>(limit->count()) : static_cast<int64_t>(DLB_TIMEOUT_NONE);
}

/* What Listener and Channel share: ownership of one dlb_channel*, and the calls that apply to
 * both (allow_uid, set_timeout, shutdown, close). Not used on its own. */
class ChannelOwner {
 public:
  /* Not copyable: one object owns the channel. */
  ChannelOwner(const ChannelOwner&) = delete;
  ChannelOwner& operator=(const ChannelOwner&) = delete;

  /* Accepts peers running as `uid` as well as the caller's own user (dlb_channel_allow_uid).
   * On a Listener it applies to every Channel accepted from now on. Error: more than 16 other
   * users (DLB_ERR_INVALID_ARGUMENT); DLB_ERR_CLOSED. */
  void allow_uid(uint32_t uid) {
    dlb_error error{};
    check(dlb_channel_allow_uid(require(), uid, &error), error);
  }

  /* Sets the time limit of each later accept, send and receive (dlb_channel_set_timeout):
   * std::nullopt for none, zero for "do not wait". A call that runs out of time throws
   * DLB_ERR_TIMEOUT; if it ran out in the middle of a tensor, every later send and receive
   * throws DLB_ERR_PROTOCOL (close the channel). On a Listener the limit applies to accept() and
   * passes to each Channel it accepts. Error: a negative duration (DLB_ERR_INVALID_ARGUMENT,
   * the core's message; -1 ns is the core's "no limit"); DLB_ERR_CLOSED. */
  void set_timeout(std::optional<std::chrono::nanoseconds> limit) {
    dlb_error error{};
    check(dlb_channel_set_timeout(require(), timeout_ns(limit), &error), error);
  }

  /* True for a channel across machines (made at a "tcp://" or "ucx://" address, or accepted by
   * a listener there), false for a local one or an empty object (dlb_channel_is_remote). */
  bool is_remote() const noexcept { return dlb_channel_is_remote(handle_) != 0; }

  /* The port a remote listener or channel uses on this machine (dlb_channel_port): a Listener
   * made at port 0 learns the one the system picked here. -1 for a local channel or an empty
   * object. */
  int32_t port() const noexcept { return dlb_channel_port(handle_); }

  /* Shuts the channel down without freeing it (dlb_channel_shutdown): a call blocked on it in
   * another thread returns, and that call and every later one throw DLB_ERR_CLOSED. The one
   * member any thread may call at any time. A no-op on an empty object or a second time. */
  void shutdown() noexcept { dlb_channel_shutdown(handle_); }

  /* Closes and frees the channel now (dlb_channel_close; a Listener also removes its socket
   * file), leaving this object empty; the destructor does the same. No call on it may be in
   * progress (shut it down first from another thread). Tensors received stay valid. */
  void close() noexcept { dlb_channel_close(std::exchange(handle_, nullptr)); }

  /* The raw channel, still owned by this object (NULL if empty). */
  dlb_channel* get() const noexcept { return handle_; }

  /* Gives up ownership: returns the raw channel (NULL if empty) and leaves this object empty;
   * the caller must dlb_channel_close it. */
  dlb_channel* release() noexcept { return std::exchange(handle_, nullptr); }

  /* True unless empty (moved from, released or closed). */
  explicit operator bool() const noexcept { return handle_ != nullptr; }

 protected:
  /* For Listener and Channel: an empty owner, an owner of `handle`, moves (which leave `other`
   * empty; a move assignment closes what this held first). */
  ChannelOwner() noexcept = default;
  explicit ChannelOwner(dlb_channel* handle) noexcept : handle_(handle) {}
  ChannelOwner(ChannelOwner&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  ChannelOwner& operator=(ChannelOwner&& other) noexcept {
    if (this != &other) {
      dlb_channel_close(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  /* Closes the channel, if any. */
  ~ChannelOwner() { dlb_channel_close(handle_); }

  // The closed-object error every binding reports for a channel.
  dlb_channel* require() const {
    if (handle_ == nullptr) throw Error(DLB_ERR_CLOSED, DLB_CHANNEL_CLOSED_MESSAGE);
    return handle_;
  }

  // A tensor argument: an empty Tensor is the closed-tensor error of every Tensor member.
  static const DLManagedTensorVersioned* require(const Tensor& tensor) {
    if (!tensor) throw Error(DLB_ERR_CLOSED, DLB_CLOSED_MESSAGE);
    return tensor.get();
  }

 private:
  dlb_channel* handle_ = nullptr;
};

}  // namespace detail

/* True when this process can make remote channels: UCX (libucp.so.0) and libcrypto load
 * (dlb_remote_available). The first call loads them; later calls are cheap. */
inline bool remote_available() noexcept { return dlb_remote_available(nullptr) == DLB_OK; }

/* Throws why this process cannot make remote channels: Error(DLB_ERR_UNSUPPORTED) with the
 * core's message, which names what is missing and the Debian packages that bring it. Returns
 * when remote_available(). */
inline void require_remote() {
  dlb_error error{};
  detail::check(dlb_remote_available(&error), error);
}

/* The settings a channel is made with (dlb_channel_options): for a remote channel the key its
 * peers share (required to listen, and to connect), the device received tensors go to, the
 * receive limits and the time limit; for a local one the time limit and the listener's user.
 * Every setter checks its value in the core (Error with the core's status and message) and
 * returns *this, so that settings chain. Move-only; the destructor frees the options, and the
 * core wipes its copy of the key. A moved-from ChannelOptions is empty: its setters throw the
 * core's error for NULL options, and listen()/connect() given it use the defaults (as the C
 * calls given NULL). Channels copy what they need: the options may go once the call returns. */
class ChannelOptions {
 public:
  /* The defaults: no key, host memory (Device::cpu()) as the receive device,
   * DLB_REMOTE_DEFAULT_MAX_TENSOR_BYTES, DLB_REMOTE_DEFAULT_MAX_IN_FLIGHT, no time limit, the
   * listener's user the caller's own. Error: DLB_ERR_OUT_OF_MEMORY. */
  ChannelOptions() {
    dlb_error error{};
    detail::check(dlb_channel_options_create(&handle_, &error), error);
  }
  /* Not copyable: one object owns the options (and the only copy of the key it holds). */
  ChannelOptions(const ChannelOptions&) = delete;
  ChannelOptions& operator=(const ChannelOptions&) = delete;
  /* Takes over `other`'s options; `other` becomes empty. */
  ChannelOptions(ChannelOptions&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  /* Frees what this held, then takes over `other`'s options; `other` becomes empty. */
  ChannelOptions& operator=(ChannelOptions&& other) noexcept {
    if (this != &other) {
      dlb_channel_options_free(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  /* Frees the options; the core wipes the key first. */
  ~ChannelOptions() { dlb_channel_options_free(handle_); }

  /* The shared secret remote peers prove they hold (dlb_channel_options_set_key): `size` bytes
   * at `key`, DLB_REMOTE_MIN_KEY_BYTES to DLB_REMOTE_MAX_KEY_BYTES (else
   * DLB_ERR_INVALID_ARGUMENT). The bytes are copied; `key` stays the caller's (wipe it when
   * done). Local channels ignore it. */
  ChannelOptions& set_key(const void* key, std::size_t size) {
    dlb_error error{};
    detail::check(dlb_channel_options_set_key(handle_, key, size, &error), error);
    return *this;
  }

  /* set_key() of the bytes of a contiguous container of one-byte elements: a
   * std::vector<uint8_t>, std::array<std::byte, N>, std::string, a byte array (all of it: a
   * string literal's terminating NUL too). */
  template <class Bytes,
            class = std::enable_if_t<sizeof(*std::data(std::declval<const Bytes&>())) == 1>>
  ChannelOptions& set_key(const Bytes& key) {
    return set_key(static_cast<const void*>(std::data(key)), std::size(key));
  }

  /* Where a remote channel puts the tensors it receives (dlb_channel_options_set_receive_device):
   * Device::cpu(), Device::cuda_host(), Device::cuda(n) or Device::cuda_managed(); another
   * device type throws DLB_ERR_UNSUPPORTED. Whether this process reaches that memory is checked
   * when the channel is made. Local channels ignore it. */
  ChannelOptions& set_receive_device(Device device) {
    dlb_error error{};
    detail::check(dlb_channel_options_set_receive_device(handle_, device.dl(), &error), error);
    return *this;
  }

  /* The most bytes one tensor received on a remote channel may have (at least 1): a larger one
   * is refused with DLB_ERR_LIMIT before anything is allocated. */
  ChannelOptions& set_max_tensor_bytes(uint64_t bytes) {
    dlb_error error{};
    detail::check(dlb_channel_options_set_max_tensor_bytes(handle_, bytes, &error), error);
    return *this;
  }

  /* The most tensors a remote channel holds received and not yet taken by receive() (1 to
   * 65536): the sender waits, within its time limit, for the receiver to take one. */
  ChannelOptions& set_max_in_flight(uint32_t tensors) {
    dlb_error error{};
    detail::check(dlb_channel_options_set_max_in_flight(handle_, tensors, &error), error);
    return *this;
  }

  /* The channel's time limit for connecting and for every later call (as set_timeout() on the
   * channel): std::nullopt for none, zero for "do not wait"; a negative duration other than
   * -1 ns throws DLB_ERR_INVALID_ARGUMENT. */
  ChannelOptions& set_timeout(std::optional<std::chrono::nanoseconds> limit) {
    dlb_error error{};
    detail::check(dlb_channel_options_set_timeout(handle_, detail::timeout_ns(limit), &error),
                  error);
    return *this;
  }

  /* The user a local listener may run as besides the caller's own (as connect_with()'s
   * listener_uid; kUidSelf: the caller's only). Remote channels ignore it. */
  ChannelOptions& set_listener_uid(uint32_t uid) {
    dlb_error error{};
    detail::check(dlb_channel_options_set_listener_uid(handle_, uid, &error), error);
    return *this;
  }

  /* The raw options, still owned by this object (NULL if empty). */
  const dlb_channel_options* get() const noexcept { return handle_; }

  /* True unless empty (moved from). */
  explicit operator bool() const noexcept { return handle_ != nullptr; }

 private:
  dlb_channel_options* handle_ = nullptr;
};

/* One end of a connection between two processes: sends and receives tensors. Made by
 * Channel::connect()/connect_with() or Listener::accept(). Move-only; the destructor closes it,
 * and the peer's next receive() then throws DLB_ERR_PEER_CLOSED. */
class Channel : public detail::ChannelOwner {
 public:
  /* An empty Channel (every call throws DLB_ERR_CLOSED). */
  Channel() noexcept = default;
  Channel(Channel&&) noexcept = default;
  /* Closes what this held, then takes over `other`'s channel; `other` becomes empty. */
  Channel& operator=(Channel&&) noexcept = default;
  /* Closes the channel, if any. */
  ~Channel() = default;

  /* Connects to the Listener at `path`, which must run as the caller's user
   * (dlb_channel_connect). Error: nothing listens there (DLB_ERR_NO_LISTENER); a listener of
   * another user, or a socket or folder this user may not reach (DLB_ERR_PERMISSION). */
  static Channel connect(const std::string& path) {
    dlb_channel* out = nullptr;
    dlb_error error{};
    detail::check(dlb_channel_connect(path.c_str(), &out, &error), error);
    return Channel(out);
  }

  /* connect(), accepting a listener that runs as `listener_uid` too (kUidSelf: the caller's
   * user only), with a time limit for the connection that the channel then keeps for its sends
   * and receives (std::nullopt: none) (dlb_channel_connect_with). Errors: as connect();
   * DLB_ERR_TIMEOUT; a negative duration (DLB_ERR_INVALID_ARGUMENT). */
  static Channel connect_with(const std::string& path, uint32_t listener_uid,
                              std::optional<std::chrono::nanoseconds> timeout = std::nullopt) {
    dlb_channel* out = nullptr;
    dlb_error error{};
    detail::check(dlb_channel_connect_with(path.c_str(), listener_uid, detail::timeout_ns(timeout),
                                           &out, &error),
                  error);
    return Channel(out);
  }

  /* Connects to the Listener at `address` with `options` (dlb_channel_connect_with_options):
   * a Unix socket path (local: options' listener uid and time limit apply), or
   * "tcp://HOST:PORT" / "ucx://HOST:PORT" (remote: options must hold the listener's key; the
   * key handshake runs before this returns). Errors: as connect(); for a remote address no key
   * (DLB_ERR_INVALID_ARGUMENT), nothing listening (DLB_ERR_NO_LISTENER), a listener that
   * refused this key or did not prove it holds it (DLB_ERR_PERMISSION), DLB_ERR_TIMEOUT, and
   * DLB_ERR_UNSUPPORTED when !remote_available(). Ownership: `options` is borrowed (the channel
   * copies what it needs). */
  static Channel connect(const std::string& address, const ChannelOptions& options) {
    dlb_channel* out = nullptr;
    dlb_error error{};
    detail::check(dlb_channel_connect_with_options(address.c_str(), options.get(), &out, &error),
                  error);
    return Channel(out);
  }

  /* Takes ownership of a raw connected channel (NULL gives an empty Channel). */
  static Channel from_raw(dlb_channel* channel) noexcept { return Channel(channel); }

  /* Sends `tensor` to the peer without a copy (dlb_channel_send): the peer maps the same
   * memory, so writes are seen both ways unless the tensor is READ_ONLY. The memory must be
   * shareable (Tensor::allocate_shareable, or received), else DLB_ERR_UNSUPPORTED, unless
   * `options` has kSendCopy: it is then copied into new shareable memory first. A CUDA tensor
   * goes without stream order (see send_cuda()). Errors besides the tensor's own:
   * DLB_ERR_PEER_CLOSED, DLB_ERR_TIMEOUT, DLB_ERR_LIMIT, DLB_ERR_PROTOCOL (the channel lost its
   * place after a timeout), DLB_ERR_CLOSED. Ownership: `tensor` is borrowed; the memory lives
   * on in the peer after it is freed here. */
  void send(const Tensor& tensor, uint32_t options = 0) {
    dlb_channel* channel = require();
    dlb_error error{};
    detail::check(dlb_channel_send(channel, require(tensor), options, &error), error);
  }

  /* send() of a CUDA tensor with stream order (dlb_channel_send_cuda): an interprocess event is
   * recorded on `stream` (a cudaStream_t of the tensor's device; nullptr: the legacy default
   * stream) after the work queued on it, and the receiver's Tensor::cuda_wait_received() makes
   * its stream wait for it. Keep the tensor until the receiver has waited. Errors: as send();
   * a tensor that is not CUDA memory (DLB_ERR_INVALID_ARGUMENT); CUDA failures (DLB_ERR_DEVICE);
   * DLB_ERR_UNSUPPORTED in a library built without CUDA. */
  void send_cuda(const Tensor& tensor, void* stream, uint32_t options = 0) {
    dlb_channel* channel = require();
    dlb_error error{};
    detail::check(dlb_channel_send_cuda(channel, require(tensor), stream, options, &error),
                  error);
  }

  /* Waits for the next tensor from the peer and maps it (dlb_channel_receive); everything that
   * arrived is checked before anything is mapped. Errors: DLB_ERR_PEER_CLOSED (the peer went
   * away, also in the middle of a tensor), DLB_ERR_PROTOCOL (a malformed or forged tensor: the
   * stream stays in step, receive again), DLB_ERR_TIMEOUT, DLB_ERR_LIMIT, DLB_ERR_CLOSED.
   * Ownership: the caller owns the result (freeing it unmaps the memory). */
  Tensor receive() {
    dlb_channel* channel = require();
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_channel_receive(channel, &out, &error), error);
    return Tensor::from_raw(out);
  }

  /* Lends a tensor from this channel's pool (dlb_channel_allocate): the fast way to send a
   * stream of tensors. Laid out as Tensor::allocate() lays it out, on the CPU; not zero-filled.
   * Its slot goes back to the pool once this process and the peer have both freed their
   * tensors over it. It goes out on this channel only. Errors: the layout's own; a device other
   * than the CPU (DLB_ERR_UNSUPPORTED); a tensor larger than the pool's limit (DLB_ERR_LIMIT);
   * DLB_ERR_TIMEOUT (the pool stayed full), DLB_ERR_PEER_CLOSED, DLB_ERR_CLOSED. Ownership:
   * the caller owns the result; freeing it, also after the channel closed, is safe. */
  Tensor allocate(DType dtype, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& strides = {}, uint64_t flags = 0,
                  Device device = Device::cpu()) {
    if (!strides.empty() && strides.size() != shape.size()) {
      throw Error(DLB_ERR_INVALID_ARGUMENT, DLB_STRIDES_LENGTH_MESSAGE);
    }
    dlb_channel* channel = require();
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error{};
    detail::check(dlb_channel_allocate(channel, device.dl(), dtype.dl(),
                                       detail::clamp_count(shape.size()),
                                       detail::data_or_null(shape), detail::data_or_null(strides),
                                       flags, &out, &error),
                  error);
    return Tensor::from_raw(out);
  }

  /* The most memory this channel's pool may keep, in bytes (dlb_channel_set_pool_limit).
   * Error: 0 (DLB_ERR_INVALID_ARGUMENT). */
  void set_pool_limit(uint64_t bytes) {
    dlb_error error{};
    detail::check(dlb_channel_set_pool_limit(require(), bytes, &error), error);
  }

  /* The state of this channel's pool after taking back what the peer gave back
   * (dlb_channel_pool_stats): `lent` is what the peer still holds. */
  dlb_pool_stats pool_stats() {
    dlb_pool_stats out{};
    dlb_error error{};
    detail::check(dlb_channel_pool_stats(require(), &out, &error), error);
    return out;
  }

  /* The peer's process and user ids (dlb_channel_peer). */
  Peer peer() const {
    Peer out;
    dlb_error error{};
    detail::check(dlb_channel_peer(require(), &out.pid, &out.uid, &error), error);
    return out;
  }

 private:
  explicit Channel(dlb_channel* channel) noexcept : ChannelOwner(channel) {}
};

/* Listens at an address (a Unix socket path, or a remote "tcp://" / "ucx://" address) and
 * accepts connections as Channels. Move-only; the destructor closes it (and removes a local
 * listener's socket file). */
class Listener : public detail::ChannelOwner {
 public:
  /* An empty Listener (every call throws DLB_ERR_CLOSED). */
  Listener() noexcept = default;
  Listener(Listener&&) noexcept = default;
  /* Closes what this held (removing its socket file), then takes over `other`'s listener. */
  Listener& operator=(Listener&&) noexcept = default;
  /* Closes the listener, if any, and removes its socket file. */
  ~Listener() = default;

  /* Listens at `path` (dlb_channel_listen), a socket the call creates with mode 0600 in a
   * folder only this user can enter (created with mode 0700 when missing). Error: a folder
   * that others can enter or that another user owns (DLB_ERR_PERMISSION); something already
   * listening there, or a path too long for a Unix socket (DLB_ERR_INVALID_ARGUMENT). To serve
   * another user, allow_uid() it and widen the folder and socket modes yourself (docs/ipc.md). */
  static Listener listen(const std::string& path) {
    dlb_channel* out = nullptr;
    dlb_error error{};
    detail::check(dlb_channel_listen(path.c_str(), &out, &error), error);
    return Listener(out);
  }

  /* Listens at `address` with `options` (dlb_channel_listen_with_options): a Unix socket path
   * (as listen(path)), or "tcp://HOST:PORT" / "ucx://HOST:PORT", which binds exactly that host
   * (PORT 0: one the system picks, which port() then says) and needs a key in `options`. Every
   * Channel it accepts takes its options. Errors: as listen(path); for a remote address no key or
   * an address in use (DLB_ERR_INVALID_ARGUMENT, the core's message), a receive device this
   * process cannot reach (DLB_ERR_DEVICE_UNAVAILABLE), DLB_ERR_UNSUPPORTED when
   * !remote_available(). Ownership: `options` is borrowed (copied). */
  static Listener listen(const std::string& address, const ChannelOptions& options) {
    dlb_channel* out = nullptr;
    dlb_error error{};
    detail::check(dlb_channel_listen_with_options(address.c_str(), options.get(), &out, &error),
                  error);
    return Listener(out);
  }

  /* Takes ownership of a raw listening channel (NULL gives an empty Listener). */
  static Listener from_raw(dlb_channel* listener) noexcept { return Listener(listener); }

  /* Waits for the next connection (dlb_channel_accept). The new Channel takes this listener's
   * allowed uids and time limit (a remote one: its options). Error: a peer of a user not allowed,
   * or a remote peer that did not prove it holds the key (DLB_ERR_PERMISSION; its connection is
   * closed and this listener stays usable: accept again); no peer within the time limit
   * (DLB_ERR_TIMEOUT); out of file descriptors (DLB_ERR_LIMIT); DLB_ERR_CLOSED. */
  Channel accept() {
    dlb_channel* out = nullptr;
    dlb_error error{};
    detail::check(dlb_channel_accept(require(), &out, &error), error);
    return Channel::from_raw(out);
  }

 private:
  explicit Listener(dlb_channel* listener) noexcept : ChannelOwner(listener) {}
};

}  // namespace dlbridge

#endif  // DLBRIDGE_CHANNEL_HPP_
