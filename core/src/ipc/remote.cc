// Channels across machines, on UCX's UCP (https://openucx.org): the descriptor of the local channel
// (wire.hpp, handle kHandleRemote) travels as an active message's header and the tensor's bytes as
// its data, which UCX moves by its eager protocol (small) or by rendezvous straight into the
// receiver's new tensor (large). Every channel has its own UCP worker, progressed by the thread
// that calls it; accepted channels share their listener's UCP context.
//
// A connection starts with a key handshake, before either side reads a tensor descriptor:
//   listener -> peer   Hello    (a random nonce, the listener's limits)
//   peer -> listener   Auth     (its nonce, its limits, HMAC(key, "client" | both nonces | limits))
//   listener -> peer   Welcome  (HMAC(key, "server" | both nonces | the listener's limits))
//                   or Refused
// Each side proves it holds the key without sending it, and each MAC covers the limits that side
// announced. Then each side sends Tensor messages, and a receiver gives the sender Credit for the
// tensors its receives took, so that a sender never has more in flight than the receiver allows.
#if defined(__linux__)
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ipc.hpp"
#include "remote.hpp"
#include "remote_libraries.hpp"
#include "wire.hpp"

namespace dlb {
namespace ipc {
namespace {

// ---- the handshake's and the flow control's messages (active message ids and headers) --------

enum : unsigned { kAmHello = 1, kAmAuth, kAmWelcome, kAmRefused, kAmTensor, kAmCredit };

constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;
constexpr uint32_t kHandshakeMajor = 1;
constexpr uint32_t kByteOrderProbe = 0x01020304;
// A remote accept's handshake with one peer waits at most this long, even without a time limit.
constexpr int64_t kHandshakeLimitNs = 10 * 1000000000LL;
// Connection requests a listener holds before accept takes them; more are turned away.
constexpr int kMaxPendingConnections = 64;
// How long a waiting call polls UCX before it sleeps on the worker's event descriptor: a reply
// that comes within it costs no wake-up.
constexpr int64_t kSpinNs = 20000;

constexpr char kHelloMagic[8] = {'d', 'l', 'b', '-', 'h', 'e', 'l', 'o'};
constexpr char kAuthMagic[8] = {'d', 'l', 'b', '-', 'a', 'u', 't', 'h'};
constexpr char kWelcomeMagic[8] = {'d', 'l', 'b', '-', 'w', 'l', 'c', 'm'};
constexpr char kRefusedMagic[8] = {'d', 'l', 'b', '-', 'n', 'o', 'p', 'e'};
constexpr char kCreditMagic[8] = {'d', 'l', 'b', '-', 'c', 'r', 'd', 't'};

struct Hello {
  char magic[8];
  uint32_t major;
  uint32_t byte_order;  // kByteOrderProbe as the listener stores it
  unsigned char nonce[kNonceBytes];
  uint64_t max_tensor_bytes;
  uint32_t max_in_flight;
  uint32_t reserved;
};

struct Auth {
  char magic[8];
  unsigned char nonce[kNonceBytes];
  unsigned char mac[kMacBytes];
  uint64_t max_tensor_bytes;
  uint32_t max_in_flight;
  uint32_t reserved;
};

struct Welcome {
  char magic[8];
  unsigned char mac[kMacBytes];
};

struct Refused {
  char magic[8];
  uint32_t reason;  // 0: the key
  uint32_t reserved;
};

struct Credit {
  char magic[8];
  uint32_t tensors;
  uint32_t reserved;
};

// ---- state ------------------------------------------------------------------------------------

// A UCP context: one per listener (shared with the channels it accepts) or per connected channel.
struct Context {
  const Ucx* u;
  ucp_context_h handle;
  std::atomic<int> references;
  bool reaches_cuda;  // UCX here moves CUDA memory (its CUDA transports are installed)
};

// A tensor that arrived (or was refused) and waits for dlb_channel_receive.
struct Incoming {
  Incoming* next;
  Remote* remote;
  uint32_t sequence;
  DLManagedTensorVersioned* tensor;  // owned until delivered; NULL for a refusal
  void* request;                     // UCX's receive of its bytes, while it runs
  bool done;                         // its bytes are all in (or it was refused)
  int status;                        // DLB_OK, or why it was refused
  dlb_error error;
};

}  // namespace

struct Remote {
  const Ucx* u;
  const Crypto* crypto;
  Context* context;
  dlb_channel_options options;  // this end's (its key, its receive device, its limits)
  ucp_worker_h worker;
  int efd;
  int32_t port;
  char name[96];  // the address for messages ("tcp://10.0.0.2:5000")

  // A listener's connection requests, taken by accept.
  ucp_listener_h listener;
  ucp_conn_request_h pending[kMaxPendingConnections];
  int npending;

  // A connection.
  ucp_ep_h ep;
  bool peer_gone;
  ucs_status_t peer_status;
  bool authenticated;
  unsigned char nonce[kNonceBytes];
  Hello hello;
  bool hello_seen;
  Auth auth;
  bool auth_seen;
  Welcome welcome;
  bool welcome_seen;
  bool refused_seen;
  // What the peer did before it was authenticated, that ends the handshake.
  int violation;
  dlb_error violation_error;
  // The peer's limits, from the handshake.
  uint64_t peer_max_tensor_bytes;
  uint32_t peer_max_in_flight;
  // Flow control: sends the peer has not credited yet; receives this end has not credited yet.
  uint32_t in_flight;
  uint32_t owed;
  uint32_t sent;      // tensors sent (the next one's sequence number)
  uint32_t expected;  // the sequence number of the next tensor to deliver
  Incoming* head;
  uint32_t queued;
};

namespace {

// ---- small helpers -----------------------------------------------------------------------------

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

const char* ucs_text(const Remote& r, ucs_status_t status) { return r.u->status_string(status); }

bool is_host_memory(int32_t device_type) {
  return device_type == kDLCPU || device_type == kDLCUDAHost;
}

ucs_memory_type_t memory_type_of(int32_t device_type) {
  switch (device_type) {
    case kDLCUDA:
      return UCS_MEMORY_TYPE_CUDA;
    case kDLCUDAManaged:
      return UCS_MEMORY_TYPE_CUDA_MANAGED;
    default:
      return UCS_MEMORY_TYPE_HOST;
  }
}

// The status a peer's connection failure stands for.
int peer_failure(const Remote& r, dlb_error* error, const char* what) {
  return fail(error, DLB_ERR_PEER_CLOSED, "%s: the peer at %s went away (UCX: %s)", what, r.name,
              ucs_text(r, r.peer_status));
}

void fill_random(unsigned char* bytes, size_t size) {
  size_t have = 0;
  while (have < size) {
    const ssize_t n = getrandom(bytes + have, size - have, 0);
    if (n > 0) have += static_cast<size_t>(n);
  }
}

// HMAC-SHA256 with the channel's key over the role, both nonces (the listener's first) and the
// limits the role announced.
void handshake_mac(const Remote& r, const char* role, const unsigned char* listener_nonce,
                   const unsigned char* peer_nonce, uint64_t max_tensor_bytes,
                   uint32_t max_in_flight, unsigned char* out) {
  unsigned char data[16 + 2 * kNonceBytes + 12] = {};
  std::snprintf(reinterpret_cast<char*>(data), 16, "dlbridge %s", role);
  std::memcpy(data + 16, listener_nonce, kNonceBytes);
  std::memcpy(data + 16 + kNonceBytes, peer_nonce, kNonceBytes);
  std::memcpy(data + 16 + 2 * kNonceBytes, &max_tensor_bytes, 8);
  std::memcpy(data + 16 + 2 * kNonceBytes + 8, &max_in_flight, 4);
  unsigned int size = kMacBytes;
  r.crypto->hmac(r.crypto->sha256(), r.options.key, static_cast<int>(r.options.key_size), data,
                 sizeof data, out, &size);
}

// ---- the address ---------------------------------------------------------------------------

struct Address {
  sockaddr_storage storage;
  socklen_t size;
  bool tcp_only;  // "tcp://": UCX restricted to its TCP transport
};

int parse_address(const char* text, bool listening, Address* out, dlb_error* error) {
  out->tcp_only = std::strncmp(text, "tcp://", 6) == 0;
  const char* rest = text + 6;
  char host[256];
  const char* port_text = nullptr;
  if (*rest == '[') {  // [IPv6]:PORT
    const char* close = std::strchr(rest, ']');
    if (close == nullptr || close[1] != ':' || static_cast<size_t>(close - rest - 1) >= sizeof host) {
      return fail(error, DLB_ERR_INVALID_ARGUMENT,
                  "address '%s': an IPv6 host is written [ADDRESS]:PORT", text);
    }
    std::memcpy(host, rest + 1, static_cast<size_t>(close - rest - 1));
    host[close - rest - 1] = '\0';
    port_text = close + 2;
  } else {
    const char* colon = std::strrchr(rest, ':');
    if (colon == nullptr || static_cast<size_t>(colon - rest) >= sizeof host) {
      return fail(error, DLB_ERR_INVALID_ARGUMENT,
                  "address '%s' is not SCHEME://HOST:PORT (a remote address names a host and a "
                  "port)",
                  text);
    }
    std::memcpy(host, rest, static_cast<size_t>(colon - rest));
    host[colon - rest] = '\0';
    port_text = colon + 1;
  }
  if (host[0] == '\0') {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "address '%s' names no host: a listener binds to the address it is given (write "
                "0.0.0.0 for every interface)",
                text);
  }
  char* end = nullptr;
  errno = 0;
  const unsigned long port = std::strtoul(port_text, &end, 10);
  if (*port_text == '\0' || *end != '\0' || errno != 0 || port > 65535 ||
      (!listening && port == 0)) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "address '%s': port '%s' is not %s", text,
                port_text, listening ? "0 to 65535" : "1 to 65535");
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int looked_up = getaddrinfo(host, port_text, &hints, &found);
  if (looked_up != 0 || found == nullptr) {
    return fail(error, listening ? DLB_ERR_INVALID_ARGUMENT : DLB_ERR_NO_LISTENER,
                "address '%s': host '%s' not found (%s)", text, host, gai_strerror(looked_up));
  }
  std::memcpy(&out->storage, found->ai_addr, found->ai_addrlen);
  out->size = found->ai_addrlen;
  freeaddrinfo(found);
  return DLB_OK;
}

// "tcp://10.0.0.2:5000" for messages.
void name_address(const sockaddr_storage& address, bool tcp_only, char* out, size_t size) {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (address.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(address);
    inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
    port = ntohs(a.sin_port);
    std::snprintf(out, size, "%s://%s:%u", tcp_only ? "tcp" : "ucx", host, port);
  } else if (address.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(address);
    inet_ntop(AF_INET6, &a.sin6_addr, host, sizeof host);
    port = ntohs(a.sin6_port);
    std::snprintf(out, size, "%s://[%s]:%u", tcp_only ? "tcp" : "ucx", host, port);
  } else {
    std::snprintf(out, size, "an address of family %d", address.ss_family);
  }
}

int32_t port_of(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  }
  return -1;
}

// ---- contexts and workers --------------------------------------------------------------------

int make_context(const Ucx* u, bool tcp_only, Context** out, dlb_error* error) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = u->config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) {
    return fail(error, DLB_ERR_DEVICE, "reading UCX's configuration failed: %s",
                u->status_string(status));
  }
  // "tcp://" holds whatever UCX_TLS says; "ucx://" follows it.
  if (tcp_only) status = u->config_modify(config, "TLS", "tcp");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = "dlbridge";
  ucp_context_h handle = nullptr;
  if (status == UCS_OK) status = u->init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &handle);
  u->config_release(config);
  if (status != UCS_OK) {
    return fail(error, DLB_ERR_DEVICE, "starting UCX failed: %s", u->status_string(status));
  }
  auto* context = static_cast<Context*>(std::calloc(1, sizeof(Context)));
  if (context == nullptr) {
    u->cleanup(handle);
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a remote channel");
  }
  context->u = u;
  context->handle = handle;
  context->references.store(1, std::memory_order_relaxed);
  ucp_context_attr_t attributes{};
  attributes.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (u->context_query(handle, &attributes) == UCS_OK) {
    context->reaches_cuda = (attributes.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
  }
  *out = context;
  return DLB_OK;
}

void release_context(Context* context) {
  if (context == nullptr || context->references.fetch_sub(1, std::memory_order_acq_rel) != 1) {
    return;
  }
  context->u->cleanup(context->handle);
  std::free(context);
}

// Active message handlers (run inside ucp_worker_progress, on the calling thread).
ucs_status_t on_hello(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_auth(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_welcome(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_refused(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_tensor(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_credit(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);

int make_worker(Remote* r, bool with_handlers, dlb_error* error) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // One thread at a time calls a channel (and so progresses its worker); shutdown's signal is
  // safe from any thread in every mode.
  params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucs_status_t status = r->u->worker_create(r->context->handle, &params, &r->worker);
  if (status == UCS_OK) status = r->u->worker_get_efd(r->worker, &r->efd);
  if (status != UCS_OK) {
    return fail(error, DLB_ERR_DEVICE, "making a UCX worker failed: %s", ucs_text(*r, status));
  }
  if (!with_handlers) return DLB_OK;  // a listener's worker only hears connection requests
  const struct {
    unsigned id;
    ucp_am_recv_callback_t cb;
  } handlers[] = {{kAmHello, on_hello},     {kAmAuth, on_auth},     {kAmWelcome, on_welcome},
                  {kAmRefused, on_refused}, {kAmTensor, on_tensor}, {kAmCredit, on_credit}};
  for (const auto& h : handlers) {
    ucp_am_handler_param_t p{};
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    p.id = h.id;
    p.cb = h.cb;
    p.arg = r;
    p.flags = UCP_AM_FLAG_WHOLE_MSG;
    status = r->u->set_am_recv_handler(r->worker, &p);
    if (status != UCS_OK) {
      return fail(error, DLB_ERR_DEVICE, "setting a UCX message handler failed: %s",
                  ucs_text(*r, status));
    }
  }
  return DLB_OK;
}

Remote* new_remote(const Ucx* u, const Crypto* crypto, const dlb_channel_options& options) {
  auto* r = static_cast<Remote*>(std::calloc(1, sizeof(Remote)));
  if (r == nullptr) return nullptr;
  r->u = u;
  r->crypto = crypto;
  r->options = options;
  r->efd = -1;
  r->port = -1;
  r->peer_status = UCS_OK;
  return r;
}

// Progresses until `request` is done, a second passed or the peer is gone; whether it is done.
bool settle(Remote* r, void* request, bool until_gone = true) {
  const int64_t end = now_ns() + 1000000000LL;
  while (r->u->request_check_status(request) == UCS_INPROGRESS) {
    if (now_ns() > end || (until_gone && r->peer_gone)) return false;
    r->u->worker_progress(r->worker);
  }
  return true;
}

// Frees an arrival. Its bytes' receive, if still running, has been ended by the endpoint's
// close; one that never reports back is left allocated rather than freed under UCX's callback.
void free_incoming(Remote* r, Incoming* in) {
  if (in->request != nullptr) {
    const int64_t end = now_ns() + 1000000000LL;
    while (!in->done && now_ns() < end) r->u->worker_progress(r->worker);
    if (!in->done) return;
    r->u->request_free(in->request);
  }
  dlb_tensor_free(in->tensor);
  std::free(in);
}

// Waits for a UCX request to finish, progressing the worker; frees it. `request` may be NULL
// (done at once) or an error pointer.
int wait_request(dlb_channel* channel, Remote* r, ucs_status_ptr_t request, const char* what,
                 dlb_error* error);

// Closes the connection without waiting for the peer: what was sent is flushed to the transport
// first (locally, bounded), then the endpoint is released (a closing handshake would wait for the
// peer to call into its channel, which it may never do). The peer sees the connection end after
// everything sent before it.
void close_endpoint(Remote* r) {
  if (r->ep == nullptr) return;
  ucp_request_param_t p{};
  // Only tensors can be lost by a close: an end that sent none closes at once. A flush may need
  // the peer to answer (UCX completing its connection's set-up), so it waits at most a second.
  if (!r->peer_gone && r->sent > 0) {
    ucs_status_ptr_t flushed = r->u->ep_flush_nbx(r->ep, &p);
    if (flushed != nullptr && !UCS_PTR_IS_ERR(flushed)) {
      settle(r, flushed);
      r->u->request_free(flushed);  // also unfinished: UCX ends it with the endpoint
    }
  }
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t closed = r->u->ep_close_nbx(r->ep, &p);
  r->ep = nullptr;
  if (closed != nullptr && !UCS_PTR_IS_ERR(closed) && settle(r, closed)) {
    r->u->request_free(closed);
  }
}

void destroy_remote(Remote* r) {
  if (r == nullptr) return;
  if (r->listener != nullptr) {
    for (int i = 0; i < r->npending; ++i) r->u->listener_reject(r->listener, r->pending[i]);
    r->u->listener_destroy(r->listener);
  }
  close_endpoint(r);
  while (r->head != nullptr) {
    Incoming* in = r->head;
    r->head = in->next;
    free_incoming(r, in);
  }
  if (r->worker != nullptr) r->u->worker_destroy(r->worker);
  release_context(r->context);
  volatile unsigned char* key = r->options.key;
  for (size_t i = 0; i < sizeof r->options.key; ++i) key[i] = 0;
  std::free(r);
}

// ---- waiting ------------------------------------------------------------------------------------

// Progresses the channel's worker until `done()` holds, the deadline passes (DLB_ERR_TIMEOUT,
// the message naming `what`), or the channel is shut down (DLB_ERR_CLOSED). Polls for kSpinNs,
// then sleeps on the worker's event descriptor.
template <typename Done>
int progress_until(const dlb_channel* channel, Remote* r, const Deadline& deadline,
                   const char* what, Done done, dlb_error* error) {
  const int64_t spin_end = now_ns() + kSpinNs;
  for (;;) {
    while (r->u->worker_progress(r->worker) != 0) {
    }
    if (done()) return DLB_OK;
    if (is_shut(channel)) return fail_shut(error);
    const int ms = deadline.remaining_ms();
    if (ms == 0) return fail(error, DLB_ERR_TIMEOUT, "%s: the time limit ran out", what);
    if (now_ns() < spin_end) continue;
    const ucs_status_t armed = r->u->worker_arm(r->worker);
    if (armed == UCS_ERR_BUSY) continue;  // events came in: progress them
    if (armed != UCS_OK) {
      return fail(error, DLB_ERR_DEVICE, "%s: arming the UCX worker failed: %s", what,
                  ucs_text(*r, armed));
    }
    pollfd p{r->efd, POLLIN, 0};
    if (poll(&p, 1, ms) < 0 && errno != EINTR) return os_fail(error, errno, DLB_ERR_DEVICE, "poll");
  }
}

void on_request_done(void*, ucs_status_t, void*) {}

int wait_request(dlb_channel* channel, Remote* r, ucs_status_ptr_t request, const char* what,
                 dlb_error* error) {
  if (request == nullptr) return DLB_OK;
  if (UCS_PTR_IS_ERR(request)) {
    const ucs_status_t status = UCS_PTR_STATUS(request);
    if (r->peer_gone || status == UCS_ERR_CONNECTION_RESET || status == UCS_ERR_ENDPOINT_TIMEOUT ||
        status == UCS_ERR_UNREACHABLE) {
      if (r->peer_status == UCS_OK) r->peer_status = status;
      return peer_failure(*r, error, what);
    }
    return fail(error, DLB_ERR_DEVICE, "%s failed: %s", what, ucs_text(*r, status));
  }
  const Deadline deadline(channel->timeout_ns);
  int result = progress_until(
      channel, r, deadline, what,
      [&] { return r->u->request_check_status(request) != UCS_INPROGRESS; }, error);
  if (result != DLB_OK) {
    // Out of time or shut down: the message is withdrawn if it has not gone yet. Whether the
    // peer got it is not known: the channel has lost its place.
    r->u->request_cancel(r->worker, request);
    if (!settle(r, request)) {
      // UCX could not withdraw it (a rendezvous the peer has not pulled): ending the connection
      // ends the request, so that UCX no longer reads the caller's memory when this returns.
      close_endpoint(r);
      r->peer_gone = true;
      if (r->peer_status == UCS_OK) r->peer_status = UCS_ERR_CANCELED;
      settle(r, request, false);
    }
    r->u->request_free(request);
    channel->out_of_step = true;
    return result;
  }
  const ucs_status_t status = r->u->request_check_status(request);
  r->u->request_free(request);
  if (status == UCS_OK) return DLB_OK;
  if (status == UCS_ERR_EXCEEDS_LIMIT) {
    return fail(error, DLB_ERR_LIMIT, "%s: the peer at %s refused the tensor: over its limits",
                what, r->name);
  }
  if (status == UCS_ERR_REJECTED || status == UCS_ERR_NO_MEMORY) {
    return fail(error, DLB_ERR_PROTOCOL,
                "%s: the peer at %s refused the tensor (its receive says why)", what, r->name);
  }
  if (r->peer_status == UCS_OK) r->peer_status = status;
  return peer_failure(*r, error, what);
}

// Sends a handshake or flow-control message and waits until it left.
int send_control(dlb_channel* channel, Remote* r, unsigned id, const void* header, size_t size,
                 const char* what, dlb_error* error) {
  if (r->peer_gone) return peer_failure(*r, error, what);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_FLAGS;
  p.cb.send = on_request_done;
  p.flags = UCP_AM_SEND_FLAG_EAGER;
  return wait_request(channel, r, r->u->am_send_nbx(r->ep, id, header, size, nullptr, 0, &p),
                      what, error);
}

// ---- active message handlers -------------------------------------------------------------------

void violate(Remote* r, int status, const char* message) {
  if (r->violation != DLB_OK) return;
  r->violation = status;
  std::snprintf(r->violation_error.message, sizeof r->violation_error.message, "%s", message);
}

template <typename Frame>
bool take_frame(Remote* r, const void* header, size_t size, const char (&magic)[8], Frame* out,
                bool* seen, const char* name) {
  if (size != sizeof(Frame) || std::memcmp(header, magic, 8) != 0) {
    char message[128];
    std::snprintf(message, sizeof message, "the peer sent a malformed %s message (%zu bytes)",
                  name, size);
    violate(r, DLB_ERR_PROTOCOL, message);
    return false;
  }
  if (*seen) {
    char message[128];
    std::snprintf(message, sizeof message, "the peer sent its %s message twice", name);
    violate(r, DLB_ERR_PROTOCOL, message);
    return false;
  }
  std::memcpy(out, header, sizeof(Frame));
  *seen = true;
  return true;
}

ucs_status_t on_hello(void* arg, const void* header, size_t size, void*, size_t,
                      const ucp_am_recv_param_t*) {
  auto* r = static_cast<Remote*>(arg);
  take_frame(r, header, size, kHelloMagic, &r->hello, &r->hello_seen, "hello");
  return UCS_OK;
}

ucs_status_t on_auth(void* arg, const void* header, size_t size, void*, size_t,
                     const ucp_am_recv_param_t*) {
  auto* r = static_cast<Remote*>(arg);
  take_frame(r, header, size, kAuthMagic, &r->auth, &r->auth_seen, "authentication");
  return UCS_OK;
}

ucs_status_t on_welcome(void* arg, const void* header, size_t size, void*, size_t,
                        const ucp_am_recv_param_t*) {
  auto* r = static_cast<Remote*>(arg);
  take_frame(r, header, size, kWelcomeMagic, &r->welcome, &r->welcome_seen, "welcome");
  return UCS_OK;
}

ucs_status_t on_refused(void* arg, const void*, size_t, void*, size_t,
                        const ucp_am_recv_param_t*) {
  static_cast<Remote*>(arg)->refused_seen = true;
  return UCS_OK;
}

ucs_status_t on_credit(void* arg, const void* header, size_t size, void*, size_t,
                       const ucp_am_recv_param_t*) {
  auto* r = static_cast<Remote*>(arg);
  Credit credit;
  if (!r->authenticated || size != sizeof credit || std::memcmp(header, kCreditMagic, 8) != 0) {
    violate(r, DLB_ERR_PROTOCOL, "the peer sent a malformed credit message");
    return UCS_OK;
  }
  std::memcpy(&credit, header, sizeof credit);
  r->in_flight -= credit.tensors < r->in_flight ? credit.tensors : r->in_flight;
  return UCS_OK;
}

void on_bytes(void*, ucs_status_t status, size_t, void* user_data) {
  auto* in = static_cast<Incoming*>(user_data);
  in->done = true;
  if (status != UCS_OK) {
    Remote* r = in->remote;
    in->status = fail(&in->error, DLB_ERR_PEER_CLOSED,
                      "the peer at %s went away in the middle of a tensor's bytes (UCX: %s)",
                      r->name, ucs_text(*r, status));
  }
}

// Queues `in` by its sequence number (UCX may deliver a rendezvous after a later eager message).
void enqueue(Remote* r, Incoming* in) {
  Incoming** at = &r->head;
  while (*at != nullptr && static_cast<int32_t>((*at)->sequence - in->sequence) < 0) {
    at = &(*at)->next;
  }
  in->next = *at;
  *at = in;
  ++r->queued;
}

// The checks of an arriving tensor's descriptor, before anything is allocated for it.
int check_arrival(const Remote& r, const void* header, size_t header_size, size_t length,
                  Wire* wire, RemoteExtension* extension, dlb_error* error) {
  if (header_size != sizeof(Wire) + sizeof(RemoteExtension)) {
    return fail(error, DLB_ERR_PROTOCOL, "a tensor descriptor of %zu bytes, not %zu",
                header_size, sizeof(Wire) + sizeof(RemoteExtension));
  }
  std::memcpy(wire, header, sizeof(Wire));
  std::memcpy(extension, static_cast<const char*>(header) + sizeof(Wire), sizeof *extension);
  int status = check_header(*wire, error);
  if (status == DLB_OK) {
    status = check_remote(*wire, *extension, length, r.options.max_tensor_bytes, r.name, error);
  }
  if (status != DLB_OK) return status;
  if (r.queued >= r.options.max_in_flight) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the peer sent more than the %u tensors in flight this channel allows",
                r.options.max_in_flight);
  }
  return DLB_OK;
}

ucs_status_t on_tensor(void* arg, const void* header, size_t header_size, void* data,
                       size_t length, const ucp_am_recv_param_t* param) {
  auto* r = static_cast<Remote*>(arg);
  const bool rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  // A rendezvous refused here is dropped, and the sender's send ends with this status.
  const ucs_status_t refused = rendezvous ? UCS_ERR_REJECTED : UCS_OK;
  if (!r->authenticated) {
    violate(r, DLB_ERR_PERMISSION,
            "the peer sent a tensor before it proved it holds the channel's key");
    return refused;
  }
  auto* in = static_cast<Incoming*>(std::calloc(1, sizeof(Incoming)));
  if (in == nullptr) {
    violate(r, DLB_ERR_OUT_OF_MEMORY, "out of memory taking a tensor from the peer: it is lost");
    return refused;
  }
  in->remote = r;
  Wire wire;
  RemoteExtension extension;
  in->status = check_arrival(*r, header, header_size, length, &wire, &extension, &in->error);
  // A refusal keeps its tensor's place in the stream, so that the receive of that place reports
  // it; a descriptor too short to say its place takes the next free one.
  in->sequence = header_size == sizeof(Wire) + sizeof(RemoteExtension) ? extension.sequence
                                                                       : r->expected + r->queued;
  enqueue(r, in);
  if (in->status != DLB_OK) {
    in->done = true;
    return in->status == DLB_ERR_LIMIT && rendezvous ? UCS_ERR_EXCEEDS_LIMIT : refused;
  }
  const DLDevice device = r->options.receive_device;
  const uint64_t flags = wire.flags & DLPACK_FLAG_BITMASK_READ_ONLY;
  const uint64_t carried = wire.flags & ~static_cast<uint64_t>(DLPACK_FLAG_BITMASK_READ_ONLY |
                                                               DLPACK_FLAG_BITMASK_IS_COPIED);
  in->status = dlb_tensor_allocate(device, DLDataType{wire.code, wire.bits, wire.lanes}, wire.ndim,
                                   wire.shape, nullptr, flags | carried, &in->tensor, &in->error);
  if (in->status != DLB_OK) {
    in->done = true;
    return rendezvous ? UCS_ERR_NO_MEMORY : UCS_OK;
  }
  in->tensor->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
  void* target = static_cast<char*>(in->tensor->dl_tensor.data) + in->tensor->dl_tensor.byte_offset;
  if (length == 0) {
    in->done = true;
  } else if (rendezvous) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                     UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.cb.recv_am = on_bytes;
    p.user_data = in;
    p.memory_type = memory_type_of(device.device_type);
    ucs_status_ptr_t request = r->u->am_recv_data_nbx(r->worker, data, target, length, &p);
    if (request == nullptr) {
      in->done = true;
    } else if (UCS_PTR_IS_ERR(request)) {
      in->done = true;
      in->status = fail(&in->error, DLB_ERR_PEER_CLOSED,
                        "receiving a tensor's bytes from %s failed (UCX: %s)", r->name,
                        ucs_text(*r, UCS_PTR_STATUS(request)));
    } else {
      in->request = request;
    }
  } else if (is_host_memory(device.device_type) || device.device_type == kDLCUDAManaged) {
    std::memcpy(target, data, length);
    in->done = true;
  } else {
    in->status = dlb_tensor_copy_from_host(in->tensor, DLDataType{0, 0, 0}, data, length,
                                           &in->error);
    in->done = true;
  }
  return UCS_OK;
}

}  // namespace

namespace {

// ---- making channels ----------------------------------------------------------------------------

// What every remote listen and connect needs: the libraries, a key, and a receive device UCX here
// can reach (checked once the context says what it reaches).
int load_for(const dlb_channel_options& options, const Ucx** u, const Crypto** crypto,
             dlb_error* error) {
  *u = ucx(error);
  if (*u == nullptr) return DLB_ERR_UNSUPPORTED;
  *crypto = ipc::crypto(error);
  if (*crypto == nullptr) return DLB_ERR_UNSUPPORTED;
  if (options.key_size == 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT,
                "a remote channel needs a key that its peers share "
                "(dlb_channel_options_set_key)");
  }
  return DLB_OK;
}

int check_receive_device(const Remote& r, dlb_error* error) {
  const int32_t type = r.options.receive_device.device_type;
  if ((type == kDLCUDA || type == kDLCUDAManaged) && !r.context->reaches_cuda) {
    DeviceTypeText name(type);
    return fail(error, DLB_ERR_DEVICE_UNAVAILABLE,
                "this channel receives into %s memory, but UCX here cannot reach CUDA memory: "
                "its CUDA transports (a UCX built with CUDA, libucx-cuda) are not installed; "
                "receive into cpu or cuda_host memory instead",
                name.text);
  }
  return DLB_OK;
}

dlb_channel* wrap_remote(Remote* r, bool listener, int64_t timeout_ns) {
  dlb_channel* channel = new_channel(-1, listener, timeout_ns);
  if (channel != nullptr) channel->remote = r;
  return channel;
}

void on_connection(ucp_conn_request_h request, void* arg) {
  auto* r = static_cast<Remote*>(arg);
  if (r->npending == kMaxPendingConnections) {
    r->u->listener_reject(r->listener, request);
    return;
  }
  r->pending[r->npending++] = request;
}

void on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* r = static_cast<Remote*>(arg);
  r->peer_gone = true;
  if (r->peer_status == UCS_OK) r->peer_status = status;
}

int make_endpoint(Remote* r, ucp_ep_params_t* params, int status_on_failure, const char* what,
                  dlb_error* error) {
  params->field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params->err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params->err_handler.cb = on_endpoint_error;
  params->err_handler.arg = r;
  const ucs_status_t status = r->u->ep_create(r->worker, params, &r->ep);
  if (status != UCS_OK) {
    r->ep = nullptr;
    return fail(error, status_on_failure, "%s %s failed (UCX: %s)", what, r->name,
                ucs_text(*r, status));
  }
  ucp_ep_attr_t attributes{};
  attributes.field_mask = UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR;
  if (r->u->ep_query(r->ep, &attributes) == UCS_OK) r->port = port_of(attributes.local_sockaddr);
  return DLB_OK;
}

// The end of a handshake wait: what the peer did wrong, or that it went away.
int handshake_failure(const Remote& r, int status, const char* gone_what, int gone_status,
                      dlb_error* error) {
  if (r.violation != DLB_OK) {
    return fail(error, r.violation, "%s: %s", r.name, r.violation_error.message);
  }
  if (r.peer_gone) {
    return fail(error, gone_status, "%s: the peer at %s went away (UCX: %s)", gone_what, r.name,
                ucs_text(r, r.peer_status));
  }
  return status;
}

// The listener's half of the handshake on a new connection.
int greet(dlb_channel* channel, Remote* r, int64_t timeout_ns, dlb_error* error) {
  Hello hello{};
  std::memcpy(hello.magic, kHelloMagic, 8);
  hello.major = kHandshakeMajor;
  hello.byte_order = kByteOrderProbe;
  fill_random(r->nonce, kNonceBytes);
  std::memcpy(hello.nonce, r->nonce, kNonceBytes);
  hello.max_tensor_bytes = r->options.max_tensor_bytes;
  hello.max_in_flight = r->options.max_in_flight;
  int status = send_control(channel, r, kAmHello, &hello, sizeof hello, "greeting a peer", error);
  if (status != DLB_OK) return status;
  const int64_t limit = timeout_ns == DLB_TIMEOUT_NONE || timeout_ns > kHandshakeLimitNs
                            ? kHandshakeLimitNs
                            : timeout_ns;
  status = progress_until(
      channel, r, Deadline(limit), "waiting for a peer to prove it holds the key",
      [&] { return r->auth_seen || r->peer_gone || r->violation != DLB_OK; }, error);
  if (status == DLB_OK && !r->auth_seen) status = DLB_ERR_PEER_CLOSED;
  if (status != DLB_OK) {
    return handshake_failure(*r, status, "waiting for the key", DLB_ERR_PEER_CLOSED, error);
  }
  unsigned char expected[kMacBytes];
  handshake_mac(*r, "client", r->nonce, r->auth.nonce, r->auth.max_tensor_bytes,
                r->auth.max_in_flight, expected);
  if (r->crypto->memcmp(expected, r->auth.mac, kMacBytes) != 0 || r->auth.max_in_flight == 0) {
    Refused refused{};
    std::memcpy(refused.magic, kRefusedMagic, 8);
    dlb_error ignored;
    send_control(channel, r, kAmRefused, &refused, sizeof refused, "refusing a peer", &ignored);
    return fail(error, DLB_ERR_PERMISSION,
                "refused the peer at %s: it did not prove it holds the channel's key", r->name);
  }
  Welcome welcome{};
  std::memcpy(welcome.magic, kWelcomeMagic, 8);
  handshake_mac(*r, "server", r->nonce, r->auth.nonce, hello.max_tensor_bytes,
                hello.max_in_flight, welcome.mac);
  r->peer_max_tensor_bytes = r->auth.max_tensor_bytes;
  r->peer_max_in_flight = r->auth.max_in_flight;
  // Authenticated before the welcome leaves: the peer may send a tensor right after it.
  r->authenticated = true;
  return send_control(channel, r, kAmWelcome, &welcome, sizeof welcome, "welcoming a peer",
                      error);
}

// The connecting side's half.
int introduce(dlb_channel* channel, Remote* r, dlb_error* error) {
  const Deadline deadline(channel->timeout_ns);
  int status = progress_until(
      channel, r, deadline, "connecting",
      [&] { return r->hello_seen || r->peer_gone || r->violation != DLB_OK; }, error);
  if (status == DLB_OK && !r->hello_seen) status = DLB_ERR_NO_LISTENER;
  if (status != DLB_OK) {
    if (r->peer_gone && r->violation == DLB_OK) {
      return fail(error, DLB_ERR_NO_LISTENER, "nothing listens at %s (UCX: %s)", r->name,
                  ucs_text(*r, r->peer_status));
    }
    return handshake_failure(*r, status, "connecting", DLB_ERR_NO_LISTENER, error);
  }
  if (r->hello.major != kHandshakeMajor) {
    return fail(error, DLB_ERR_UNSUPPORTED_VERSION,
                "the listener at %s speaks remote handshake version %u; this library speaks %u",
                r->name, r->hello.major, kHandshakeMajor);
  }
  if (r->hello.byte_order != kByteOrderProbe) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the listener at %s stores numbers in another byte order: remote channels join "
                "machines of the same byte order",
                r->name);
  }
  Auth auth{};
  std::memcpy(auth.magic, kAuthMagic, 8);
  fill_random(auth.nonce, kNonceBytes);
  std::memcpy(r->nonce, auth.nonce, kNonceBytes);
  auth.max_tensor_bytes = r->options.max_tensor_bytes;
  auth.max_in_flight = r->options.max_in_flight;
  handshake_mac(*r, "client", r->hello.nonce, auth.nonce, auth.max_tensor_bytes,
                auth.max_in_flight, auth.mac);
  status = send_control(channel, r, kAmAuth, &auth, sizeof auth, "proving the key", error);
  if (status != DLB_OK) return status;
  status = progress_until(
      channel, r, deadline, "waiting for the listener to accept the key",
      [&] {
        return r->welcome_seen || r->refused_seen || r->peer_gone || r->violation != DLB_OK;
      },
      error);
  if (r->refused_seen) {
    return fail(error, DLB_ERR_PERMISSION, "the listener at %s refused this channel's key",
                r->name);
  }
  if (status == DLB_OK && !r->welcome_seen) status = DLB_ERR_PERMISSION;
  if (status != DLB_OK) {
    return handshake_failure(*r, status, "waiting for the listener to accept the key",
                             DLB_ERR_PERMISSION, error);
  }
  unsigned char expected[kMacBytes];
  handshake_mac(*r, "server", r->hello.nonce, r->nonce, r->hello.max_tensor_bytes,
                r->hello.max_in_flight, expected);
  if (r->crypto->memcmp(expected, r->welcome.mac, kMacBytes) != 0 || r->hello.max_in_flight == 0) {
    return fail(error, DLB_ERR_PERMISSION,
                "the listener at %s did not prove it holds the channel's key", r->name);
  }
  r->peer_max_tensor_bytes = r->hello.max_tensor_bytes;
  r->peer_max_in_flight = r->hello.max_in_flight;
  r->authenticated = true;
  return DLB_OK;
}

}  // namespace

int remote_available(dlb_error* error) {
  if (ucx(error) == nullptr || crypto(error) == nullptr) return DLB_ERR_UNSUPPORTED;
  return DLB_OK;
}

int remote_listen(const char* address, const dlb_channel_options& options, dlb_channel** out,
                  dlb_error* error) {
  const Ucx* u = nullptr;
  const Crypto* crypto = nullptr;
  Address where{};
  int status = load_for(options, &u, &crypto, error);
  if (status == DLB_OK) status = parse_address(address, true, &where, error);
  if (status != DLB_OK) return status;
  Remote* r = new_remote(u, crypto, options);
  if (r == nullptr) return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  std::snprintf(r->name, sizeof r->name, "%s", address);
  dlb_channel* channel = nullptr;
  status = make_context(u, where.tcp_only, &r->context, error);
  if (status == DLB_OK) status = check_receive_device(*r, error);
  if (status == DLB_OK) {
    status = make_worker(r, false, error);
  }
  if (status == DLB_OK) {
    ucp_listener_params_t params{};
    params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&where.storage);
    params.sockaddr.addrlen = where.size;
    params.conn_handler.cb = on_connection;
    params.conn_handler.arg = r;
    const ucs_status_t created = u->listener_create(r->worker, &params, &r->listener);
    if (created != UCS_OK) {
      r->listener = nullptr;
      status = fail(error, created == UCS_ERR_BUSY ? DLB_ERR_INVALID_ARGUMENT : DLB_ERR_DEVICE,
                    "listening at '%s' failed (UCX: %s%s)", address, ucs_text(*r, created),
                    created == UCS_ERR_BUSY ? ": the address is in use" : "");
    }
  }
  if (status == DLB_OK) {
    ucp_listener_attr_t attributes{};
    attributes.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    if (u->listener_query(r->listener, &attributes) == UCS_OK) {
      r->port = port_of(attributes.sockaddr);
      name_address(attributes.sockaddr, where.tcp_only, r->name, sizeof r->name);
    }
    channel = wrap_remote(r, true, options.timeout_ns);
    if (channel == nullptr) status = fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  }
  if (status != DLB_OK) {
    destroy_remote(r);
    return status;
  }
  *out = channel;
  return DLB_OK;
}

int remote_accept(dlb_channel* listener, dlb_channel** out, dlb_error* error) {
  Remote* l = listener->remote;
  const Deadline deadline(listener->timeout_ns);
  int status = progress_until(listener, l, deadline, "waiting for a connection",
                              [&] { return l->npending > 0; }, error);
  if (status != DLB_OK) return status;
  ucp_conn_request_h request = l->pending[0];
  --l->npending;
  std::memmove(l->pending, l->pending + 1, sizeof l->pending[0] * static_cast<size_t>(l->npending));

  Remote* r = new_remote(l->u, l->crypto, l->options);
  if (r == nullptr) {
    l->u->listener_reject(l->listener, request);
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  }
  ucp_conn_request_attr_t attributes{};
  attributes.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  if (l->u->conn_request_query(request, &attributes) == UCS_OK) {
    name_address(attributes.client_address, std::strncmp(l->name, "tcp", 3) == 0, r->name,
                 sizeof r->name);
  } else {
    std::snprintf(r->name, sizeof r->name, "a peer");
  }
  r->context = l->context;
  r->context->references.fetch_add(1, std::memory_order_relaxed);
  dlb_channel* channel = wrap_remote(r, false, listener->timeout_ns);
  if (channel == nullptr) {
    l->u->listener_reject(l->listener, request);
    destroy_remote(r);
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  }
  status = make_worker(r, true, error);
  if (status != DLB_OK) {
    l->u->listener_reject(l->listener, request);
  } else {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST;
    params.conn_request = request;
    status = make_endpoint(r, &params, DLB_ERR_PEER_CLOSED, "accepting", error);
  }
  if (status == DLB_OK) status = greet(channel, r, listener->timeout_ns, error);
  if (status != DLB_OK) {
    dlb_channel_close(channel);
    return is_shut(listener) ? fail_shut(error) : status;
  }
  *out = channel;
  return DLB_OK;
}

int remote_connect(const char* address, const dlb_channel_options& options, dlb_channel** out,
                   dlb_error* error) {
  const Ucx* u = nullptr;
  const Crypto* crypto = nullptr;
  Address where{};
  int status = load_for(options, &u, &crypto, error);
  if (status == DLB_OK) status = parse_address(address, false, &where, error);
  if (status != DLB_OK) return status;
  Remote* r = new_remote(u, crypto, options);
  if (r == nullptr) return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  name_address(where.storage, where.tcp_only, r->name, sizeof r->name);
  dlb_channel* channel = wrap_remote(r, false, options.timeout_ns);
  if (channel == nullptr) {
    destroy_remote(r);
    return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory making a channel");
  }
  status = make_context(u, where.tcp_only, &r->context, error);
  if (status == DLB_OK) status = check_receive_device(*r, error);
  if (status == DLB_OK) status = make_worker(r, true, error);
  if (status == DLB_OK) {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
    params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&where.storage);
    params.sockaddr.addrlen = where.size;
    status = make_endpoint(r, &params, DLB_ERR_NO_LISTENER, "connecting to", error);
  }
  if (status == DLB_OK) status = introduce(channel, r, error);
  if (status != DLB_OK) {
    dlb_channel_close(channel);
    return status;
  }
  *out = channel;
  return DLB_OK;
}

int remote_send(dlb_channel* channel, const DLManagedTensorVersioned* tensor, uint32_t options,
                dlb_error* error) {
  Remote* r = channel->remote;
  if (tensor == nullptr) return fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  if ((options & ~DLB_SEND_COPY) != 0) {
    return fail(error, DLB_ERR_INVALID_ARGUMENT, "send options 0x%x: unknown bits", options);
  }
  int status = dlb_tensor_validate(&tensor->dl_tensor, tensor->flags, error);
  if (status != DLB_OK) return status;
  const int32_t type = tensor->dl_tensor.device.device_type;
  const bool device_memory = !is_host_memory(type);
  const bool reachable =
      !device_memory || ((type == kDLCUDA || type == kDLCUDAManaged) && r->context->reaches_cuda);
  // What goes out: the tensor itself when UCX reaches its memory and it is compact, else a
  // compact copy (on its own device, or in host memory when the caller asked for that).
  const DLManagedTensorVersioned* payload = tensor;
  DLManagedTensorVersioned* copy = nullptr;
  if (!reachable) {
    if ((options & DLB_SEND_COPY) == 0) {
      DeviceTypeText name(type);
      if (type == kDLCUDA || type == kDLCUDAManaged) {
        return fail(error, DLB_ERR_DEVICE_UNAVAILABLE,
                    "UCX here cannot reach %s memory: its CUDA transports (a UCX built with CUDA, "
                    "libucx-cuda) are not installed; send with DLB_SEND_COPY to copy the tensor "
                    "to host memory first",
                    name.text);
      }
      return fail(error, DLB_ERR_UNSUPPORTED,
                  "a remote channel sends host or CUDA memory, not %s memory; send with "
                  "DLB_SEND_COPY to copy the tensor to host memory first",
                  name.text);
    }
    status = dlb_tensor_copy(tensor, DLDevice{kDLCPU, 0}, &copy, error);
    if (status != DLB_OK) return status;
    payload = copy;
  } else if (!dlb_tensor_is_c_contiguous(&tensor->dl_tensor)) {
    status = dlb_tensor_copy(tensor, tensor->dl_tensor.device, &copy, error);
    if (status != DLB_OK) return status;
    payload = copy;
  }
  uint64_t bytes = 0;
  status = dlb_tensor_byte_size(&payload->dl_tensor, payload->flags, &bytes, error);
  if (status == DLB_OK && bytes > r->peer_max_tensor_bytes) {
    status = fail(error, DLB_ERR_LIMIT,
                  "the tensor's %llu bytes exceed the %llu bytes the peer at %s takes (its "
                  "receive limit)",
                  static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(
                      r->peer_max_tensor_bytes), r->name);
  }
  const Deadline deadline(channel->timeout_ns);
  if (status == DLB_OK && r->in_flight >= r->peer_max_in_flight) {
    status = progress_until(
        channel, r, deadline, "waiting for the peer to take its tensors",
        [&] { return r->in_flight < r->peer_max_in_flight || r->peer_gone; }, error);
  }
  if (status == DLB_OK && r->peer_gone) status = peer_failure(*r, error, "sending a tensor");
  if (status != DLB_OK) {
    dlb_tensor_free(copy);
    return status;
  }
  struct {
    Wire wire;
    RemoteExtension extension;
  } header{};
  const DLTensor& t = payload->dl_tensor;
  const char* data = static_cast<const char*>(t.data) + t.byte_offset;
  encode(*payload, kHandleRemote, data, 0, bytes, &header.wire);
  header.wire.byte_offset = 0;
  header.wire.flags = tensor->flags;  // the sender's flags, also of a copy it made to send
  std::memcpy(header.extension.magic, kRemoteMagic, 8);
  header.extension.payload_bytes = bytes;
  header.extension.sequence = r->sent;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  p.cb.send = on_request_done;
  p.memory_type = memory_type_of(t.device.device_type);
  ucs_status_ptr_t request =
      r->u->am_send_nbx(r->ep, kAmTensor, &header, sizeof header, data, bytes, &p);
  // Handed to UCX, the tensor has its place in the stream even when the peer refuses it: the
  // peer's receive of that place reports the refusal, and counts it for the window.
  if (!UCS_PTR_IS_ERR(request)) {
    ++r->sent;
    ++r->in_flight;
  }
  status = wait_request(channel, r, request, "sending a tensor", error);
  dlb_tensor_free(copy);
  if (status != DLB_OK) return status;
  return DLB_OK;
}

int remote_receive(dlb_channel* channel, DLManagedTensorVersioned** out, dlb_error* error) {
  Remote* r = channel->remote;
  const Deadline deadline(channel->timeout_ns);
  // The first tensor of the stream is the one due, or one from before it (a forged number):
  // delivered in order, and never left waiting behind a number that never comes back.
  auto due = [&] {
    return r->head != nullptr && static_cast<int32_t>(r->head->sequence - r->expected) <= 0;
  };
  auto ready = [&] { return (due() && r->head->done) || r->peer_gone || r->violation != DLB_OK; };
  int status = progress_until(channel, r, deadline, "waiting for a tensor", ready, error);
  if (status != DLB_OK) return status;
  Incoming* in = r->head;
  if (!due() || !in->done) {
    // Nothing more will come: what the peer did, or that it went away.
    if (r->violation != DLB_OK) {
      return fail(error, r->violation, "%s: %s", r->name, r->violation_error.message);
    }
    return peer_failure(*r, error, "waiting for a tensor");
  }
  r->head = in->next;
  --r->queued;
  if (in->sequence == r->expected) ++r->expected;
  status = in->status;
  if (status == DLB_OK) {
    *out = in->tensor;
    in->tensor = nullptr;
  } else if (error != nullptr) {
    std::memcpy(error->message, in->error.message, sizeof error->message);
  }
  free_incoming(r, in);
  // The sender may send once more for each tensor taken: tell it in batches (a quarter of the
  // window), so that a stream of small tensors does not cost a message back for each.
  ++r->owed;
  const uint32_t batch = r->options.max_in_flight >= 4 ? r->options.max_in_flight / 4 : 1;
  if (r->owed >= batch && !r->peer_gone) {
    Credit credit{};
    std::memcpy(credit.magic, kCreditMagic, 8);
    credit.tensors = r->owed;
    dlb_error ignored;
    // A credit that cannot go out means the peer is gone: the next call says so.
    if (send_control(channel, r, kAmCredit, &credit, sizeof credit, "crediting the peer",
                     &ignored) == DLB_OK) {
      r->owed = 0;
    }
  }
  return status;
}

int32_t remote_port(const dlb_channel* channel) { return channel->remote->port; }

void remote_shutdown(dlb_channel* channel) {
  Remote* r = channel->remote;
  if (r->worker != nullptr) r->u->worker_signal(r->worker);
}

void remote_close(dlb_channel* channel) {
  destroy_remote(channel->remote);
  channel->remote = nullptr;
}

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
