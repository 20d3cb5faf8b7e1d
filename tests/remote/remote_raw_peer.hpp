// A peer of a remote listener written against UCX directly, not through dlbridge: it speaks the
// handshake by hand (or not at all) and sends whatever descriptor a test forges; and a listener
// of the same kind (raw::Listener), which greets a connecting channel with the Hello it is
// told. Suite remote's tests of what a listener refuses use it. The frames mirror
// core/src/ipc/remote.cc's; a change of the handshake there fails these tests, which is the
// point.
#ifndef DLBRIDGE_TESTS_REMOTE_RAW_PEER_HPP_
#define DLBRIDGE_TESTS_REMOTE_RAW_PEER_HPP_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <time.h>
#include <ucp/api/ucp.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace raw {

enum : unsigned {
  kAmHello = 1, kAmAuth, kAmWelcome, kAmRefused, kAmTensor, kAmCredit, kAmReady, kAmBatch,
  kAmPart
};

// A Tensor or Part message the peer received: its header and its bytes (by rendezvous: taken
// into `data`, whole once `request` is done).
struct Arrival {
  unsigned id;
  std::vector<unsigned char> header;
  bool rendezvous;
  std::shared_ptr<std::vector<unsigned char>> data;
  void* request;
};

struct Hello {
  char magic[8];
  uint32_t major;
  uint32_t byte_order;
  unsigned char nonce[32];
  uint64_t max_tensor_bytes;
  uint32_t max_in_flight;
  uint32_t reserved;
};
struct Auth {
  char magic[8];
  unsigned char nonce[32];
  unsigned char mac[32];
  uint64_t max_tensor_bytes;
  uint32_t max_in_flight;
  uint32_t reserved;
};

// A UCP context held to UCX's TCP transport, for active messages, and a worker on it.
inline bool make_tcp_worker(ucp_context_h* context, ucp_worker_h* worker) {
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return false;
  ucp_config_modify(config, "TLS", "tcp");
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_AM;
  const bool made = ucp_init(&params, config, context) == UCS_OK;
  ucp_config_release(config);
  ucp_worker_params_t wp{};
  return made && ucp_worker_create(*context, &wp, worker) == UCS_OK;
}

// Progresses `worker` for up to `ms` milliseconds or until `done()`. The default is long enough
// for a peer under valgrind, and bounded so that a test whose peer never answers fails.
template <typename Done>
bool progress_for(ucp_worker_h worker, Done done, int ms = 30000) {
  timespec start{}, now{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    ucp_worker_progress(worker);
    if (done()) return true;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 > ms) {
      return false;
    }
  }
}

// Closes `ep` (NULL: nothing) at once, without waiting for its peer.
inline void close_endpoint(ucp_worker_h worker, ucp_ep_h ep) {
  if (ep == nullptr) return;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* request = ucp_ep_close_nbx(ep, &p);
  if (request != nullptr && !UCS_PTR_IS_ERR(request)) {
    while (ucp_request_check_status(request) == UCS_INPROGRESS) ucp_worker_progress(worker);
    ucp_request_free(request);
  }
}

class Peer {
 public:
  // Connects to 127.0.0.1:port over UCX's TCP transport.
  explicit Peer(int port) {
    ok_ = make_tcp_worker(&context_, &worker_);
    for (unsigned id : {kAmHello, kAmWelcome, kAmRefused, kAmCredit, kAmReady, kAmTensor,
                        kAmPart}) {
      ucp_am_handler_param_t h{};
      h.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                     UCP_AM_HANDLER_PARAM_FIELD_ARG;
      h.id = id;
      h.cb = id == kAmHello     ? on_hello
             : id == kAmRefused ? on_refused
             : id == kAmWelcome ? on_welcome
             : id == kAmReady   ? on_ready
             : id == kAmTensor  ? on_tensor
             : id == kAmPart    ? on_part
                                : on_other;
      h.arg = this;
      ok_ = ok_ && ucp_worker_set_am_recv_handler(worker_, &h) == UCS_OK;
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep.sockaddr.addr = reinterpret_cast<const sockaddr*>(&address);
    ep.sockaddr.addrlen = sizeof address;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = on_error;
    ep.err_handler.arg = this;
    ok_ = ok_ && ucp_ep_create(worker_, &ep, &ep_) == UCS_OK;
  }
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;
  ~Peer() {
    for (const Arrival& a : arrivals_) {
      if (a.request != nullptr) ucp_request_free(a.request);
    }
    close_endpoint(worker_, ep_);
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    if (context_ != nullptr) ucp_cleanup(context_);
  }

  bool ok() const { return ok_; }
  bool gone() const { return gone_; }
  bool refused() const { return refused_; }
  const Hello& hello() const { return hello_; }
  const std::vector<Arrival>& arrivals() const { return arrivals_; }
  // Whether every rendezvous taken has all its bytes.
  bool arrivals_whole() const {
    for (const Arrival& a : arrivals_) {
      if (a.request != nullptr && ucp_request_check_status(a.request) == UCS_INPROGRESS) {
        return false;
      }
    }
    return true;
  }

  // Progresses for up to `ms` milliseconds or until `done()` (raw::progress_for).
  template <typename Done>
  bool progress_until(Done done, int ms = 30000) {
    return progress_for(worker_, done, ms);
  }
  bool wait_hello() { return progress_until([&] { return hello_seen_ || gone_; }) && hello_seen_; }

  // Proves `key` (or a wrong one), announcing the given limits, and completes the handshake when
  // the listener welcomes it; false when it was refused or the listener went away.
  bool authenticate(const std::vector<unsigned char>& key, uint32_t max_in_flight = 64) {
    Auth auth{};
    std::memcpy(auth.magic, "dlb-auth", 8);
    for (unsigned i = 0; i < 32; ++i) auth.nonce[i] = static_cast<unsigned char>(i * 7 + 1);
    auth.max_tensor_bytes = 1ull << 30;
    auth.max_in_flight = max_in_flight;
    unsigned char data[16 + 64 + 16] = {};
    std::snprintf(reinterpret_cast<char*>(data), 16, "dlbridge client");
    std::memcpy(data + 16, hello_.nonce, 32);
    std::memcpy(data + 48, auth.nonce, 32);
    std::memcpy(data + 80, &auth.max_tensor_bytes, 8);
    std::memcpy(data + 88, &auth.max_in_flight, 4);
    const uint32_t key_size = static_cast<uint32_t>(key.size());
    std::memcpy(data + 92, &key_size, 4);
    unsigned int size = 32;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), data, sizeof data, auth.mac,
         &size);
    if (!send(kAmAuth, &auth, sizeof auth, nullptr, 0)) return false;
    // Welcomed (the welcome's proof is not checked here), the last step: UCX finishes this
    // end's set-up (a flush), then both ends say Ready.
    if (!progress_until([&] { return welcome_seen_ || refused_ || gone_; }) || !welcome_seen_) {
      return false;
    }
    ucp_request_param_t p{};
    void* flushed = ucp_ep_flush_nbx(ep_, &p);
    if (UCS_PTR_IS_ERR(flushed)) return false;
    if (flushed != nullptr) {
      progress_until([&] { return ucp_request_check_status(flushed) != UCS_INPROGRESS; });
      ucp_request_free(flushed);
    }
    const char ready[8] = {'d', 'l', 'b', '-', 'r', 'e', 'd', 'y'};
    return send(kAmReady, ready, sizeof ready, nullptr, 0) &&
           progress_until([&] { return ready_seen_ || gone_; }) && ready_seen_;
  }

  // Sends an active message with `header` and `data`, waiting until it left (false when it
  // failed, or had not left after progress_until's limit: then it is cancelled). `flags`:
  // UCP_AM_SEND_FLAG_RNDV or _EAGER to choose the protocol, 0 to let UCX choose.
  bool send(unsigned id, const void* header, size_t header_size, const void* data, size_t size,
            uint32_t flags = 0) {
    ucp_request_param_t p{};
    if (flags != 0) {
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = flags;
    }
    void* request = ucp_am_send_nbx(ep_, id, header, header_size, data, size, &p);
    if (request == nullptr) return true;
    if (UCS_PTR_IS_ERR(request)) return false;
    auto left = [&] { return ucp_request_check_status(request) != UCS_INPROGRESS; };
    if (!progress_until(left)) {
      ucp_request_cancel(worker_, request);
      while (!left()) ucp_worker_progress(worker_);
    }
    const ucs_status_t status = ucp_request_check_status(request);
    ucp_request_free(request);
    return status == UCS_OK;
  }

 private:
  static ucs_status_t on_hello(void* arg, const void* header, size_t size, void*, size_t,
                               const ucp_am_recv_param_t*) {
    auto* self = static_cast<Peer*>(arg);
    if (size == sizeof(Hello)) {
      std::memcpy(&self->hello_, header, sizeof(Hello));
      self->hello_seen_ = true;
    }
    return UCS_OK;
  }
  static ucs_status_t on_refused(void* arg, const void*, size_t, void*, size_t,
                                 const ucp_am_recv_param_t*) {
    static_cast<Peer*>(arg)->refused_ = true;
    return UCS_OK;
  }
  static ucs_status_t on_welcome(void* arg, const void*, size_t, void*, size_t,
                                 const ucp_am_recv_param_t*) {
    static_cast<Peer*>(arg)->welcome_seen_ = true;
    return UCS_OK;
  }
  static ucs_status_t on_ready(void* arg, const void*, size_t, void*, size_t,
                               const ucp_am_recv_param_t*) {
    static_cast<Peer*>(arg)->ready_seen_ = true;
    return UCS_OK;
  }
  static ucs_status_t on_other(void*, const void*, size_t, void*, size_t,
                               const ucp_am_recv_param_t*) {
    return UCS_OK;
  }
  static void record(void* arg, unsigned id, const void* header, size_t size, void* data,
                     size_t length, const ucp_am_recv_param_t* param) {
    auto* self = static_cast<Peer*>(arg);
    const auto* bytes = static_cast<const unsigned char*>(header);
    Arrival a{id, std::vector<unsigned char>(bytes, bytes + size),
              (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0,
              std::make_shared<std::vector<unsigned char>>(length), nullptr};
    if (!a.rendezvous) {
      if (length > 0) std::memcpy(a.data->data(), data, length);
    } else {
      ucp_request_param_t p{};
      void* request = ucp_am_recv_data_nbx(self->worker_, data, a.data->data(), length, &p);
      if (!UCS_PTR_IS_ERR(request)) a.request = request;
    }
    self->arrivals_.push_back(a);
  }
  static ucs_status_t on_tensor(void* arg, const void* header, size_t size, void* data,
                                size_t length, const ucp_am_recv_param_t* param) {
    record(arg, kAmTensor, header, size, data, length, param);
    return UCS_OK;
  }
  static ucs_status_t on_part(void* arg, const void* header, size_t size, void* data,
                              size_t length, const ucp_am_recv_param_t* param) {
    record(arg, kAmPart, header, size, data, length, param);
    return UCS_OK;
  }
  static void on_error(void* arg, ucp_ep_h, ucs_status_t) { static_cast<Peer*>(arg)->gone_ = true; }

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_ep_h ep_ = nullptr;
  bool ok_ = false;
  bool gone_ = false;
  bool refused_ = false;
  bool hello_seen_ = false;
  bool welcome_seen_ = false;
  bool ready_seen_ = false;
  Hello hello_{};
  std::vector<Arrival> arrivals_;
};

// A listener written against UCX directly: it greets the one peer that connects with a Hello
// of the handshake version it is given, and nothing more. The tests of what a connecting
// channel refuses use it.
class Listener {
 public:
  explicit Listener(uint32_t major) : major_(major) {
    ok_ = make_tcp_worker(&context_, &worker_);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ucp_listener_params_t lp{};
    lp.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lp.sockaddr.addr = reinterpret_cast<const sockaddr*>(&address);
    lp.sockaddr.addrlen = sizeof address;
    lp.conn_handler.cb = on_connection;
    lp.conn_handler.arg = this;
    ok_ = ok_ && ucp_listener_create(worker_, &lp, &listener_) == UCS_OK;
    ucp_listener_attr_t attributes{};
    attributes.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    if (ok_ && ucp_listener_query(listener_, &attributes) == UCS_OK) {
      port_ = ntohs(reinterpret_cast<const sockaddr_in*>(&attributes.sockaddr)->sin_port);
    }
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  ~Listener() {
    close_endpoint(worker_, ep_);
    if (listener_ != nullptr) ucp_listener_destroy(listener_);
    if (worker_ != nullptr) ucp_worker_destroy(worker_);
    if (context_ != nullptr) ucp_cleanup(context_);
  }

  bool ok() const { return ok_ && port_ > 0; }
  int port() const { return port_; }

  // Waits (at most 30 s) for a peer, then sends it the Hello; whether the Hello left.
  bool greet() {
    if (!progress_for(worker_, [&] { return request_ != nullptr; })) return false;
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep.conn_request = request_;
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = on_error;
    ep.err_handler.arg = this;
    if (ucp_ep_create(worker_, &ep, &ep_) != UCS_OK) {
      ep_ = nullptr;
      return false;
    }
    Hello hello{};
    std::memcpy(hello.magic, "dlb-helo", 8);
    hello.major = major_;
    hello.byte_order = 0x01020304;
    hello.max_tensor_bytes = 1ull << 30;
    hello.max_in_flight = 64;
    ucp_request_param_t p{};
    void* sent = ucp_am_send_nbx(ep_, kAmHello, &hello, sizeof hello, nullptr, 0, &p);
    if (UCS_PTR_IS_ERR(sent)) return false;
    if (sent == nullptr) return true;
    progress_for(worker_, [&] { return ucp_request_check_status(sent) != UCS_INPROGRESS; });
    const ucs_status_t status = ucp_request_check_status(sent);
    ucp_request_free(sent);
    return status == UCS_OK;
  }

 private:
  static void on_connection(ucp_conn_request_h request, void* arg) {
    auto* self = static_cast<Listener*>(arg);
    if (self->request_ == nullptr) {
      self->request_ = request;
    } else {
      ucp_listener_reject(self->listener_, request);
    }
  }
  static void on_error(void*, ucp_ep_h, ucs_status_t) {}

  uint32_t major_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_listener_h listener_ = nullptr;
  ucp_conn_request_h request_ = nullptr;
  ucp_ep_h ep_ = nullptr;
  int port_ = 0;
  bool ok_ = false;
};

}  // namespace raw

#endif  // DLBRIDGE_TESTS_REMOTE_RAW_PEER_HPP_
