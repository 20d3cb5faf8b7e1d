// The key handshake of a remote channel (remote_internal.hpp has its messages): the listener's
// greeting and the peer's introduction, each proving the key by HMAC-SHA256 without sending it.
#if defined(__linux__)
#include <sys/random.h>

#include <cstdio>
#include <cstring>

#include "remote_internal.hpp"

namespace dlb {
namespace ipc {
namespace {

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
  // The key's length is part of what is signed: HMAC pads a short key with zero bytes, so a key
  // and the same key with zero bytes after it would otherwise prove each other.
  unsigned char data[kMacDataBytes] = {};
  std::snprintf(reinterpret_cast<char*>(data), 16, "dlbridge %s", role);
  std::memcpy(data + 16, listener_nonce, kNonceBytes);
  std::memcpy(data + 16 + kNonceBytes, peer_nonce, kNonceBytes);
  std::memcpy(data + 16 + 2 * kNonceBytes, &max_tensor_bytes, 8);
  std::memcpy(data + 16 + 2 * kNonceBytes + 8, &max_in_flight, 4);
  std::memcpy(data + 16 + 2 * kNonceBytes + 12, &r.options.key_size, 4);
  unsigned int size = kMacBytes;
  r.crypto->hmac(r.crypto->sha256(), r.options.key, static_cast<int>(r.options.key_size), data,
                 sizeof data, out, &size);
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

// The last step of both ends' handshake. UCX sets a connection up lazily: until both ends have
// progressed far enough, what this end sends may wait in UCX for the peer's part of the set-up.
// Each end flushes its endpoint (which completes once UCX has set this end up, with the peer's
// help), then says Ready and waits for the peer's Ready, progressing all along so that the
// peer's flush completes too. After it, a send's flush (remote_send) waits for nothing but this
// end's own transport, and connect and accept return a connection that is up end to end.
int finish_connection(dlb_channel* channel, Remote* r, const Deadline& deadline, const char* what,
                      dlb_error* error) {
  ucp_request_param_t p{};
  ucs_status_ptr_t flushed = r->u->ep_flush_nbx(r->ep, &p);
  int status = DLB_OK;
  if (UCS_PTR_IS_ERR(flushed)) {
    r->peer_gone = true;
    if (r->peer_status == UCS_OK) r->peer_status = UCS_PTR_STATUS(flushed);
    status = DLB_ERR_PEER_CLOSED;
  } else if (flushed != nullptr) {
    status = progress_until(
        channel, r, deadline, what,
        [&] { return r->u->request_check_status(flushed) != UCS_INPROGRESS || r->peer_gone; },
        error);
    if (status == DLB_OK && r->u->request_check_status(flushed) != UCS_OK) {
      status = DLB_ERR_PEER_CLOSED;
    }
    r->u->request_free(flushed);  // also unfinished: UCX ends it with the endpoint
  }
  if (status == DLB_OK) {
    Ready ready{};
    std::memcpy(ready.magic, kReadyMagic, 8);
    status = send_control(channel, r, kAmReady, &ready, sizeof ready, what, error);
  }
  if (status == DLB_OK) {
    status = progress_until(
        channel, r, deadline, what,
        [&] { return r->ready_seen || r->peer_gone || r->violation != DLB_OK; }, error);
    if (status == DLB_OK && !r->ready_seen) status = DLB_ERR_PEER_CLOSED;
  }
  if (status != DLB_OK) return handshake_failure(*r, status, what, DLB_ERR_PEER_CLOSED, error);
  return DLB_OK;
}

}  // namespace

void violate(Remote* r, int status, const char* message) {
  if (r->violation != DLB_OK) return;
  r->violation = status;
  std::snprintf(r->violation_error.message, sizeof r->violation_error.message, "%s", message);
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

ucs_status_t on_ready(void* arg, const void* header, size_t size, void*, size_t,
                      const ucp_am_recv_param_t*) {
  auto* r = static_cast<Remote*>(arg);
  take_frame(r, header, size, kReadyMagic, &r->ready, &r->ready_seen, "ready message");
  return UCS_OK;
}

ucs_status_t on_refused(void* arg, const void*, size_t, void*, size_t,
                        const ucp_am_recv_param_t*) {
  static_cast<Remote*>(arg)->refused_seen = true;
  return UCS_OK;
}

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
    r->flush_on_close = true;  // the refusal must reach the peer before the close ends it
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
  status = send_control(channel, r, kAmWelcome, &welcome, sizeof welcome, "welcoming a peer",
                        error);
  if (status != DLB_OK) return status;
  return finish_connection(channel, r, Deadline(limit), "waiting for the peer to be ready",
                           error);
}

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
  take_deferred(r);  // what the listener sent right after its welcome
  return finish_connection(channel, r, deadline, "waiting for the listener to be ready", error);
}

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
