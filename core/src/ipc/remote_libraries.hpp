// The libraries a remote channel runs on, loaded when the first one is made (dlopen), so that
// one build of this library works on machines with and without them: UCX's UCP (libucp.so.0) for
// the transport, OpenSSL's libcrypto for the key handshake's HMAC-SHA256.
#ifndef DLBRIDGE_SRC_IPC_REMOTE_LIBRARIES_HPP_
#define DLBRIDGE_SRC_IPC_REMOTE_LIBRARIES_HPP_

#include <ucp/api/ucp.h>

#include <cstddef>

#include "../internal.hpp"

namespace dlb {
namespace ipc {

// The UCP functions remote.cc calls, resolved from libucp.so.0 (the build's headers give their
// types; UCP keeps its ABI within major version 1).
struct Ucx {
  decltype(&ucp_config_read) config_read;
  decltype(&ucp_config_modify) config_modify;
  decltype(&ucp_config_release) config_release;
  decltype(&ucp_init_version) init_version;
  decltype(&ucp_cleanup) cleanup;
  decltype(&ucp_context_query) context_query;
  decltype(&ucp_worker_create) worker_create;
  decltype(&ucp_worker_destroy) worker_destroy;
  decltype(&ucp_worker_progress) worker_progress;
  decltype(&ucp_worker_get_efd) worker_get_efd;
  decltype(&ucp_worker_arm) worker_arm;
  decltype(&ucp_worker_signal) worker_signal;
  decltype(&ucp_worker_set_am_recv_handler) set_am_recv_handler;
  decltype(&ucp_listener_create) listener_create;
  decltype(&ucp_listener_destroy) listener_destroy;
  decltype(&ucp_listener_query) listener_query;
  decltype(&ucp_listener_reject) listener_reject;
  decltype(&ucp_conn_request_query) conn_request_query;
  decltype(&ucp_ep_create) ep_create;
  decltype(&ucp_ep_close_nbx) ep_close_nbx;
  decltype(&ucp_ep_flush_nbx) ep_flush_nbx;
  decltype(&ucp_ep_query) ep_query;
  decltype(&ucp_am_send_nbx) am_send_nbx;
  decltype(&ucp_am_recv_data_nbx) am_recv_data_nbx;
  decltype(&ucp_am_data_release) am_data_release;
  decltype(&ucp_request_check_status) request_check_status;
  decltype(&ucp_request_cancel) request_cancel;
  decltype(&ucp_request_free) request_free;
  decltype(&ucs_status_string) status_string;
};

// HMAC-SHA256 and a comparison that takes the same time whatever the bytes, from libcrypto.
struct Crypto {
  const void* (*sha256)();  // EVP_sha256
  unsigned char* (*hmac)(const void* md, const void* key, int key_size, const unsigned char* data,
                         size_t size, unsigned char* out, unsigned int* out_size);  // HMAC
  int (*memcmp)(const void* a, const void* b, size_t size);  // CRYPTO_memcmp
};

// The loaded libraries, or NULL with DLB_ERR_UNSUPPORTED and a message naming what is missing
// and the Debian packages that bring it. Loaded once per process; never unloaded.
const Ucx* ucx(dlb_error* error);
const Crypto* crypto(dlb_error* error);

}  // namespace ipc
}  // namespace dlb

#endif  // DLBRIDGE_SRC_IPC_REMOTE_LIBRARIES_HPP_
