// The addresses of remote channels: "tcp://HOST:PORT" and "ucx://HOST:PORT" parsed and named.
#if defined(__linux__)
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "remote_internal.hpp"

namespace dlb {
namespace ipc {

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

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
