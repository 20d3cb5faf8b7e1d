// UCX's side of a remote channel: contexts, workers, endpoints' end, requests waited for, and the
// control messages sent (remote_internal.hpp says how the parts fit).
#if defined(__linux__)
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "remote_internal.hpp"

namespace dlb {
namespace ipc {

int peer_failure(const Remote& r, dlb_error* error, const char* what) {
  return fail(error, DLB_ERR_PEER_CLOSED, "%s: the peer at %s went away (UCX: %s)", what, r.name,
              ucs_text(r, r.peer_status));
}

int make_context(const Ucx* u, bool tcp_only, Context** out, dlb_error* error) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = u->config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) {
    return fail(error, DLB_ERR_DEVICE, "reading UCX's configuration failed: %s",
                u->status_string(status));
  }
  // "tcp://" holds whatever UCX_TLS says; "ucx://" follows it.
  if (tcp_only) status = u->config_modify(config, "TLS", "tcp");
  // A tensor's Part messages follow its message in order (wire.hpp, PartHeader): UCX keeps the
  // order of an endpoint's active messages on one lane, and eager messages take more than one
  // lane only where UCX_MAX_EAGER_LANES says so (1 by default). Held at 1 whatever it says.
  if (status == UCS_OK) status = u->config_modify(config, "MAX_EAGER_LANES", "1");
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
                  {kAmRefused, on_refused}, {kAmTensor, on_tensor}, {kAmCredit, on_credit},
                  {kAmReady, on_ready},     {kAmBatch, on_batch},   {kAmPart, on_part}};
  for (const auto& h : handlers) {
    ucp_am_handler_param_t p{};
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    p.id = h.id;
    p.cb = h.cb;
    p.arg = r;
    // A tensor's, a batch's or a part's eager bytes stay UCX's after the callback when it says
    // so (on_tensor, on_batch and on_part hold the ones that come before the welcome is checked).
    const bool tensors = h.id == kAmTensor || h.id == kAmBatch || h.id == kAmPart;
    p.flags = UCP_AM_FLAG_WHOLE_MSG | (tensors ? UCP_AM_FLAG_PERSISTENT_DATA : 0);
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
bool settle(Remote* r, void* request, bool until_gone) {
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
  // A rendezvous still running writes into the tensor: it is given a second to end (on_bytes
  // frees it), else the tensor is left to it.
  const int64_t end = now_ns() + 1000000000LL;
  while (in->request != nullptr && now_ns() < end) r->u->worker_progress(r->worker);
  if (in->request != nullptr) return;
  dlb_tensor_free(in->tensor);
  std::free(in);
}

// Closes the connection without waiting for the peer: what was sent is flushed to the transport
// first (locally, bounded), then the endpoint is released (a closing handshake would wait for the
// peer to call into its channel, which it may never do). The peer sees the connection end after
// everything sent before it.
void close_endpoint(Remote* r) {
  if (r->ep == nullptr) return;
  ucp_request_param_t p{};
  // Only tensors can be lost by a close: an end that sent none closes at once. A flush may need
  // the peer to answer (UCX completing its connection's set-up), so it waits at most a second.
  if (!r->peer_gone && (r->sent > 0 || r->flush_on_close)) {
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
  take_deferred(r);  // not authenticated: dropped
  close_endpoint(r);
  // The close ended the receives of batches still arriving; each one's callback frees it. One
  // that never reports back is left allocated rather than freed under UCX's callback.
  const int64_t end = now_ns() + 1000000000LL;
  while (r->batches != nullptr && now_ns() < end) r->u->worker_progress(r->worker);
  while (r->head != nullptr) {
    Incoming* in = r->head;
    r->head = in->next;
    free_incoming(r, in);
  }
  release_receive_cache(r);
  // After the close: UCX may have sent a posted batch from them till then.
  for (BatchBuffer& buffer : r->batch_buffers) std::free(buffer.bytes);
  if (r->worker != nullptr) r->u->worker_destroy(r->worker);
  release_context(r->context);
  volatile unsigned char* key = r->options.key;
  for (size_t i = 0; i < sizeof r->options.key; ++i) key[i] = 0;
  std::free(r);
}

void on_request_done(void*, ucs_status_t, void*) {}

void withdraw_request(dlb_channel* channel, Remote* r, ucs_status_ptr_t request) {
  if (!UCS_PTR_IS_PTR(request)) return;
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
  // Whether the peer got it is not known: the channel has lost its place.
  channel->out_of_step = true;
}

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
      [&] { return r->u->request_check_status(request) != UCS_INPROGRESS; },
      [] { return true; }, error);
  if (result != DLB_OK) {
    // Out of time or shut down: the message is withdrawn if it has not gone yet.
    withdraw_request(channel, r, request);
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

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
