// Loading UCX and libcrypto at run time (see remote_libraries.hpp).
#include "remote_libraries.hpp"

#include <dlfcn.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <mutex>

namespace dlb {
namespace ipc {
namespace {

// What a load left: the table on success, else the message of why not.
struct Loaded {
  bool ok = false;
  char message[DLB_ERROR_MESSAGE_SIZE] = {};
};

template <typename Fn>
bool resolve(void* library, const char* name, Fn* out, Loaded* loaded, const char* file) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) {
    const bool crypto = std::strncmp(file, "libcrypto", 9) == 0;
    std::snprintf(loaded->message, sizeof loaded->message,
                  "%s has no %s: remote channels need %s", file, name,
                  crypto ? "OpenSSL 1.1 or later" : "UCX 1.10 or later");
    return false;
  }
  *out = reinterpret_cast<Fn>(symbol);
  return true;
}

Ucx ucx_table;
Loaded ucx_loaded;
std::once_flag ucx_once;

// The error signals UCX handles itself when it loads (UCX_ERROR_SIGNALS), to print a backtrace.
constexpr int kErrorSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};

void load_ucx() {
  const char* file = "libucp.so.0";
  // Loading UCX installs its handlers of the error signals over the process's: a JVM, Mono and
  // others handle SIGSEGV themselves (null checks, safepoints) and die under UCX's. The
  // process's handlers are put back as they were (a UCX the program loaded itself is left alone:
  // then nothing changes here).
  struct sigaction before[sizeof kErrorSignals / sizeof kErrorSignals[0]];
  for (size_t i = 0; i < sizeof kErrorSignals / sizeof kErrorSignals[0]; ++i) {
    sigaction(kErrorSignals[i], nullptr, &before[i]);
  }
  void* library = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  for (size_t i = 0; i < sizeof kErrorSignals / sizeof kErrorSignals[0]; ++i) {
    struct sigaction now {};
    sigaction(kErrorSignals[i], nullptr, &now);
    if (now.sa_sigaction != before[i].sa_sigaction || now.sa_flags != before[i].sa_flags) {
      sigaction(kErrorSignals[i], &before[i], nullptr);
    }
  }
  if (library == nullptr) {
    std::snprintf(ucx_loaded.message, sizeof ucx_loaded.message,
                  "remote channels need UCX, which is not installed (%s did not load: %s); on "
                  "Debian or Ubuntu: apt-get install libucx0",
                  file, dlerror());
    return;
  }
  Ucx& u = ucx_table;
  Loaded* l = &ucx_loaded;
  // ucs_status_string lives in libucs, which libucp depends on: dlsym searches both.
  const bool ok = resolve(library, "ucp_config_read", &u.config_read, l, file) &&
                  resolve(library, "ucp_config_modify", &u.config_modify, l, file) &&
                  resolve(library, "ucp_config_release", &u.config_release, l, file) &&
                  resolve(library, "ucp_init_version", &u.init_version, l, file) &&
                  resolve(library, "ucp_cleanup", &u.cleanup, l, file) &&
                  resolve(library, "ucp_context_query", &u.context_query, l, file) &&
                  resolve(library, "ucp_worker_create", &u.worker_create, l, file) &&
                  resolve(library, "ucp_worker_destroy", &u.worker_destroy, l, file) &&
                  resolve(library, "ucp_worker_progress", &u.worker_progress, l, file) &&
                  resolve(library, "ucp_worker_get_efd", &u.worker_get_efd, l, file) &&
                  resolve(library, "ucp_worker_arm", &u.worker_arm, l, file) &&
                  resolve(library, "ucp_worker_signal", &u.worker_signal, l, file) &&
                  resolve(library, "ucp_worker_set_am_recv_handler", &u.set_am_recv_handler, l,
                          file) &&
                  resolve(library, "ucp_listener_create", &u.listener_create, l, file) &&
                  resolve(library, "ucp_listener_destroy", &u.listener_destroy, l, file) &&
                  resolve(library, "ucp_listener_query", &u.listener_query, l, file) &&
                  resolve(library, "ucp_listener_reject", &u.listener_reject, l, file) &&
                  resolve(library, "ucp_conn_request_query", &u.conn_request_query, l, file) &&
                  resolve(library, "ucp_ep_create", &u.ep_create, l, file) &&
                  resolve(library, "ucp_ep_close_nbx", &u.ep_close_nbx, l, file) &&
                  resolve(library, "ucp_ep_flush_nbx", &u.ep_flush_nbx, l, file) &&
                  resolve(library, "ucp_ep_query", &u.ep_query, l, file) &&
                  resolve(library, "ucp_am_send_nbx", &u.am_send_nbx, l, file) &&
                  resolve(library, "ucp_am_recv_data_nbx", &u.am_recv_data_nbx, l, file) &&
                  resolve(library, "ucp_am_data_release", &u.am_data_release, l, file) &&
                  resolve(library, "ucp_request_check_status", &u.request_check_status, l,
                          file) &&
                  resolve(library, "ucp_request_cancel", &u.request_cancel, l, file) &&
                  resolve(library, "ucp_request_free", &u.request_free, l, file) &&
                  resolve(library, "ucs_status_string", &u.status_string, l, file);
  // A library without every function stays loaded: unloading UCX is not safe once it ran its
  // constructors, and it costs nothing.
  ucx_loaded.ok = ok;
}

Crypto crypto_table;
Loaded crypto_loaded;
std::once_flag crypto_once;

void load_crypto() {
  const char* files[] = {"libcrypto.so.3", "libcrypto.so.1.1"};
  void* library = nullptr;
  const char* file = files[0];
  for (const char* candidate : files) {
    library = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) {
      file = candidate;
      break;
    }
  }
  if (library == nullptr) {
    std::snprintf(crypto_loaded.message, sizeof crypto_loaded.message,
                  "remote channels need OpenSSL's libcrypto for their key handshake, which is not "
                  "installed (libcrypto.so.3 did not load); on Debian or Ubuntu: apt-get install "
                  "libssl3");
    return;
  }
  Crypto& c = crypto_table;
  Loaded* l = &crypto_loaded;
  crypto_loaded.ok = resolve(library, "EVP_sha256", &c.sha256, l, file) &&
                     resolve(library, "HMAC", &c.hmac, l, file) &&
                     resolve(library, "CRYPTO_memcmp", &c.memcmp, l, file);
}

}  // namespace

const Ucx* ucx(dlb_error* error) {
  std::call_once(ucx_once, load_ucx);
  if (!ucx_loaded.ok) {
    fail(error, DLB_ERR_UNSUPPORTED, "%s", ucx_loaded.message);
    return nullptr;
  }
  return &ucx_table;
}

const Crypto* crypto(dlb_error* error) {
  std::call_once(crypto_once, load_crypto);
  if (!crypto_loaded.ok) {
    fail(error, DLB_ERR_UNSUPPORTED, "%s", crypto_loaded.message);
    return nullptr;
  }
  return &crypto_table;
}

}  // namespace ipc
}  // namespace dlb
