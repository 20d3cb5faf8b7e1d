// Channels across machines: the dlb_channel calls of a remote channel (remote.hpp) and what
// happens to its tensors: sent as an active message, checked and allocated when they arrive,
// credited when a receive takes them. remote_internal.hpp says how the parts fit.
#if defined(__linux__)
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "remote_internal.hpp"

namespace dlb {
namespace ipc {
namespace {

// A borrowed view of `*extent` bytes of `device` memory at `data` plus `byte_offset`, as a 1-D
// uint8 tensor that owns nothing: what the core's copies take to move a span's raw bytes.
DLManagedTensorVersioned byte_view(void* data, uint64_t byte_offset, DLDevice device,
                                   const int64_t* extent) {
  DLManagedTensorVersioned view{};
  view.version = DLPackVersion{DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  view.dl_tensor.data = data;
  view.dl_tensor.byte_offset = byte_offset;
  view.dl_tensor.device = device;
  view.dl_tensor.ndim = 1;
  view.dl_tensor.dtype = DLDataType{kDLUInt, 8, 1};
  view.dl_tensor.shape = const_cast<int64_t*>(extent);
  return view;
}

// Whether all of a tensor's bytes are in (or it was refused): its rendezvous has ended, and no
// part of it is owed.
bool arrived(const Remote& r, const Incoming& in) {
  return in.request == nullptr && r.parted != &in;
}

void on_bytes(void* request, ucs_status_t status, size_t, void* user_data) {
  auto* in = static_cast<Incoming*>(user_data);
  Remote* r = in->remote;
  r->u->request_free(request);
  in->request = nullptr;
  if (status != UCS_OK) {
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

// Whether `arriving` more tensors fit this end's window beside the `held` ones it has.
int check_window(const Remote& r, uint64_t held, uint64_t arriving, dlb_error* error) {
  if (held + arriving > r.options.max_in_flight) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the peer sent more than the %u tensors in flight this channel allows",
                r.options.max_in_flight);
  }
  return DLB_OK;
}

// The checks of an arriving tensor's descriptor, before anything is allocated for it.
int check_arrival(const Remote& r, const void* header, size_t header_size, size_t length,
                  bool may_come_in_parts, Wire* wire, RemoteExtension* extension, bool* placed,
                  dlb_error* error) {
  const int status = check_remote(header, header_size, length, may_come_in_parts,
                                 r.options.max_tensor_bytes, r.name, wire, extension, placed,
                                 error);
  if (status != DLB_OK) return status;
  return check_window(r, r.queued, 1, error);
}

// Copies `length` bytes that came in a message to `target`, in the receive device's memory.
int place(const Remote& r, char* target, const void* data, size_t length, dlb_error* error) {
  const DLDevice device = r.options.receive_device;
  if (is_host_memory(device.device_type) || device.device_type == kDLCUDAManaged) {
    std::memcpy(target, data, length);
    return DLB_OK;
  }
  // Device memory: the bytes as they came, through a writable byte view of them.
  const int64_t extent = static_cast<int64_t>(length);
  DLManagedTensorVersioned span = byte_view(target, 0, device, &extent);
  return dlb_tensor_copy_from_host(&span, DLDataType{0, 0, 0}, data, length, error);
}

// Whether a message comes while the tensor before it still awaits parts: the peer broke the
// stream (recorded), since a tensor's parts follow its message at once.
bool interrupts_parts(Remote* r) {
  if (r->parted == nullptr) return false;
  violate(r, DLB_ERR_PROTOCOL,
          "the peer sent another message before the parts of the tensor it had begun");
  return true;
}

}  // namespace

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

namespace {
ucs_status_t arrive(Remote* r, const void* header, size_t header_size, void* data, size_t length,
                    bool rendezvous, bool in_batch);

// A Tensor, Batch or Part message on the connecting side before it checked the welcome: a
// listener may send right after its welcome, which then arrives in the same progress as it,
// before introduce() has checked the welcome's proof. Such a message is held, unread (its bytes are
// UCX's persistent data or rendezvous descriptor), until the check: then it arrives, or it is
// dropped with the connection.
ucs_status_t defer(Remote* r, const void* header, size_t header_size, void* data, size_t length,
                   bool rendezvous, unsigned id) {
  // A window of tensors, each with at most kMaxParts parts.
  if (r->welcome_seen && r->ndeferred < r->options.max_in_flight * (1 + kMaxParts)) {
    auto* held = static_cast<Deferred*>(std::malloc(sizeof(Deferred) + header_size));
    if (held != nullptr) {
      held->next = nullptr;
      held->data = data;
      held->length = length;
      held->rendezvous = rendezvous;
      held->id = id;
      held->header_size = header_size;
      std::memcpy(held + 1, header, header_size);
      Deferred** tail = &r->deferred;
      while (*tail != nullptr) tail = &(*tail)->next;
      *tail = held;
      ++r->ndeferred;
      return UCS_INPROGRESS;
    }
  }
  violate(r, DLB_ERR_PERMISSION,
          "the peer sent a tensor before it proved it holds the channel's key");
  return rendezvous ? UCS_ERR_REJECTED : UCS_OK;
}

// A batch's records, each tensor arriving as a lone one would. A malformed batch ends the stream
// after the records before the fault (DLB_ERR_PROTOCOL, naming it).
void take_records(Remote* r, uint32_t count, const unsigned char* bytes, size_t length) {
  dlb_error error;
  int status = DLB_OK;
  size_t offset = 0;
  for (uint32_t i = 0; status == DLB_OK && i < count; ++i) {
    BatchEntry entry{};
    status = next_batch_record(bytes, length, &offset, i, &entry, &error);
    if (status == DLB_OK) {
      arrive(r, entry.header, entry.header_bytes, const_cast<unsigned char*>(entry.payload),
             entry.payload_bytes, false, true);
    }
  }
  if (status == DLB_OK && offset != length) {
    status = fail(&error, DLB_ERR_PROTOCOL,
                  "a batch of %u tensors has %zu bytes after its last record",
                  static_cast<unsigned>(count), length - offset);
  }
  if (status != DLB_OK) violate(r, status, error.message);
}

void unlink_batch(Remote* r, BatchArrival* batch) {
  BatchArrival** at = &r->batches;
  while (*at != batch) at = &(*at)->next;
  *at = batch->next;
}

// A rendezvous batch's bytes are in: its records arrive (in the stream's order: enqueue places
// them by their sequence numbers). Bytes that did not come (the peer gone) are dropped with it.
void on_batch_bytes(void* request, ucs_status_t status, size_t, void* user_data) {
  auto* batch = static_cast<BatchArrival*>(user_data);
  Remote* r = batch->remote;
  r->batch_records_arriving -= batch->count;
  unlink_batch(r, batch);
  if (status == UCS_OK) take_records(r, batch->count, batch->bytes, batch->length);
  r->u->request_free(request);
  std::free(batch);
}

// A Batch message (wire.hpp, BatchHeader). An eager one is split at once. A rendezvous one (over
// kEagerMaxBytes) is received into a buffer made for it, at most kBatchBytes, then split.
ucs_status_t take_batch(Remote* r, const void* header, size_t header_size, void* data,
                        size_t length, bool rendezvous) {
  dlb_error error;
  uint32_t count = 0;
  int status = check_batch(header, header_size, &count, &error);
  if (status == DLB_OK && length > kBatchBytes) {
    status = fail(&error, DLB_ERR_PROTOCOL,
                  "a batch of %zu bytes is over the %zu bytes a batch may hold", length,
                  kBatchBytes);
  }
  // A batch still arriving holds its tensors' places in the window before anything is made.
  if (status == DLB_OK && rendezvous) {
    status = check_window(*r, static_cast<uint64_t>(r->queued) + r->batch_records_arriving, count,
                          &error);
  }
  if (status != DLB_OK) {
    violate(r, status, error.message);
    return rendezvous ? UCS_ERR_REJECTED : UCS_OK;
  }
  if (!rendezvous) {
    take_records(r, count, static_cast<const unsigned char*>(data), length);
    return UCS_OK;
  }
  auto* batch = static_cast<BatchArrival*>(std::malloc(sizeof(BatchArrival) + length));
  if (batch == nullptr) {
    violate(r, DLB_ERR_OUT_OF_MEMORY,
            "out of memory taking a batch of tensors from the peer: they are lost");
    return UCS_ERR_NO_MEMORY;
  }
  batch->remote = r;
  batch->count = count;
  batch->length = length;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  p.cb.recv_am = on_batch_bytes;
  p.user_data = batch;
  p.memory_type = UCS_MEMORY_TYPE_HOST;
  ucs_status_ptr_t request = r->u->am_recv_data_nbx(r->worker, data, batch->bytes, length, &p);
  if (UCS_PTR_IS_PTR(request)) {
    batch->next = r->batches;
    r->batches = batch;
    r->batch_records_arriving += count;
    return UCS_OK;
  }
  if (request == nullptr) {
    take_records(r, count, batch->bytes, length);
  } else {
    violate(r, DLB_ERR_PEER_CLOSED, "receiving a batch of tensors failed: they are lost");
  }
  std::free(batch);
  return UCS_OK;
}

// A Part message (wire.hpp, PartHeader): the next bytes of the tensor that awaits them, copied
// into its tensor (or dropped, when the tensor was refused). After the last, none is owed.
ucs_status_t take_part(Remote* r, const void* header, size_t header_size, void* data,
                       size_t length, bool rendezvous) {
  Incoming* in = r->parted;
  PartHeader part{};
  if (header_size == sizeof part) std::memcpy(&part, header, sizeof part);
  dlb_error error;
  int status = DLB_OK;
  if (header_size != sizeof part || std::memcmp(part.magic, kPartMagic, 8) != 0 ||
      part.reserved != 0) {
    status = fail(&error, DLB_ERR_PROTOCOL,
                  "the peer sent a part of a tensor with a malformed header (%zu bytes)",
                  header_size);
  } else if (rendezvous) {
    status = fail(&error, DLB_ERR_PROTOCOL,
                  "the peer sent a part of a tensor by rendezvous; parts come eagerly");
  } else if (in == nullptr) {
    status = fail(&error, DLB_ERR_PROTOCOL,
                  "the peer sent a part of tensor %u, but no tensor awaits parts",
                  static_cast<unsigned>(part.sequence));
  } else if (part.sequence != in->sequence || part.offset != in->filled || length == 0 ||
             length > in->parts_end - in->filled) {
    status = fail(&error, DLB_ERR_PROTOCOL,
                  "the peer sent %zu bytes at byte %llu of tensor %u, where tensor %u awaits "
                  "its bytes from byte %llu to %llu",
                  length, static_cast<unsigned long long>(part.offset),
                  static_cast<unsigned>(part.sequence), static_cast<unsigned>(in->sequence),
                  static_cast<unsigned long long>(in->filled),
                  static_cast<unsigned long long>(in->parts_end));
  }
  if (status != DLB_OK) {
    violate(r, status, error.message);
    return rendezvous ? UCS_ERR_REJECTED : UCS_OK;
  }
  if (in->target != nullptr) {
    in->status = place(*r, in->target + in->filled, data, length, &in->error);
    if (in->status != DLB_OK) in->target = nullptr;  // the rest is dropped
  }
  in->filled += length;
  if (in->filled == in->parts_end) r->parted = nullptr;
  return UCS_OK;
}

// A Tensor, Batch or Part message (`id`) on an authenticated channel. A Tensor or a Batch that
// comes while the tensor before it still awaits parts breaks the stream.
ucs_status_t take_message(Remote* r, unsigned id, const void* header, size_t header_size,
                          void* data, size_t length, bool rendezvous) {
  if (id == kAmPart) return take_part(r, header, header_size, data, length, rendezvous);
  if (interrupts_parts(r)) return rendezvous ? UCS_ERR_REJECTED : UCS_OK;
  if (id == kAmBatch) return take_batch(r, header, header_size, data, length, rendezvous);
  return arrive(r, header, header_size, data, length, rendezvous, false);
}

// The handler of a Tensor, Batch or Part message: held until the welcome is checked, else taken.
ucs_status_t on_message(unsigned id, void* arg, const void* header, size_t header_size,
                        void* data, size_t length, const ucp_am_recv_param_t* param) {
  auto* r = static_cast<Remote*>(arg);
  const bool rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  if (!r->authenticated) return defer(r, header, header_size, data, length, rendezvous, id);
  return take_message(r, id, header, header_size, data, length, rendezvous);
}

}  // namespace

ucs_status_t on_tensor(void* arg, const void* header, size_t header_size, void* data,
                       size_t length, const ucp_am_recv_param_t* param) {
  return on_message(kAmTensor, arg, header, header_size, data, length, param);
}

ucs_status_t on_batch(void* arg, const void* header, size_t header_size, void* data,
                      size_t length, const ucp_am_recv_param_t* param) {
  return on_message(kAmBatch, arg, header, header_size, data, length, param);
}

ucs_status_t on_part(void* arg, const void* header, size_t header_size, void* data,
                     size_t length, const ucp_am_recv_param_t* param) {
  return on_message(kAmPart, arg, header, header_size, data, length, param);
}

void take_deferred(Remote* r) {
  while (r->deferred != nullptr) {
    Deferred* held = r->deferred;
    r->deferred = held->next;
    --r->ndeferred;
    // Dropped with the connection where the welcome's proof failed.
    const ucs_status_t status =
        r->authenticated ? take_message(r, held->id, held + 1, held->header_size, held->data,
                                        held->length, held->rendezvous)
                         : UCS_ERR_REJECTED;
    // Eager bytes were copied out (or refused); a rendezvous not taken up is dropped.
    if (!held->rendezvous || status != UCS_OK) r->u->am_data_release(r->worker, held->data);
    std::free(held);
  }
}

namespace {

// A tensor's descriptor and bytes that arrived on an authenticated channel, alone or
// `in_batch`: checked, then made into the receiver's tensor, its place in the stream kept (a
// refusal too). A lone tensor's bytes may come partly in Part messages that follow it (after
// the first bytes, which an eager message brings, or before the last, which a rendezvous
// brings): it awaits them (r->parted), also when refused, to drop them. The return value is the
// callback's: a refused rendezvous ends the sender's send with it.
ucs_status_t arrive(Remote* r, const void* header, size_t header_size, void* data, size_t length,
                    bool rendezvous, bool in_batch) {
  // A rendezvous refused here is dropped, and the sender's send ends with this status.
  const ucs_status_t refused = rendezvous ? UCS_ERR_REJECTED : UCS_OK;
  auto* in = static_cast<Incoming*>(std::calloc(1, sizeof(Incoming)));
  if (in == nullptr) {
    violate(r, DLB_ERR_OUT_OF_MEMORY, "out of memory taking a tensor from the peer: it is lost");
    return refused;
  }
  in->remote = r;
  Wire wire;
  RemoteExtension extension;
  bool placed = false;
  const bool may_come_in_parts = !in_batch;
  in->status = check_arrival(*r, header, header_size, length, may_come_in_parts, &wire, &extension,
                             &placed, &in->error);
  // A refusal keeps its tensor's place in the stream, so that the receive of that place reports
  // it; a descriptor too short to say its place takes the next free one.
  in->sequence = placed ? extension.sequence : r->expected + r->queued;
  enqueue(r, in);
  if (placed && may_come_in_parts && extension.in_parts == 1 &&
      extension.payload_bytes > length) {
    in->filled = rendezvous ? 0 : length;
    in->parts_end = rendezvous ? extension.payload_bytes - length : extension.payload_bytes;
    r->parted = in;
  }
  if (in->status != DLB_OK) {
    return in->status == DLB_ERR_LIMIT && rendezvous ? UCS_ERR_EXCEEDS_LIMIT : refused;
  }
  const DLDevice device = r->options.receive_device;
  const uint64_t flags = wire.flags & DLPACK_FLAG_BITMASK_READ_ONLY;
  const uint64_t carried = wire.flags & ~static_cast<uint64_t>(DLPACK_FLAG_BITMASK_READ_ONLY |
                                                               DLPACK_FLAG_BITMASK_IS_COPIED);
  const DLDataType dtype{wire.code, wire.bits, wire.lanes};
  const int64_t* strides = remote_keeps_strides(wire) ? wire.strides : nullptr;
  in->status = allocate_received(r, dtype, wire, strides, extension.payload_bytes,
                                 flags | carried, &in->tensor, &in->error);
  if (in->status != DLB_OK) return rendezvous ? UCS_ERR_NO_MEMORY : UCS_OK;
  in->tensor->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
  // Where the bytes go: the tensor's covering span, which starts wire.byte_offset bytes before
  // its first element (0 for a compact tensor). The receive device holds pointers.
  char* target = static_cast<char*>(in->tensor->dl_tensor.data) +
                 in->tensor->dl_tensor.byte_offset - wire.byte_offset;
  if (rendezvous && length > 0) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                     UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.cb.recv_am = on_bytes;
    p.user_data = in;
    p.memory_type = memory_type_of(device.device_type);
    // A rendezvous brings the payload's last bytes (its parts the ones before them).
    const uint64_t at = r->parted == in ? in->parts_end : 0;
    ucs_status_ptr_t request = r->u->am_recv_data_nbx(r->worker, data, target + at, length, &p);
    if (UCS_PTR_IS_ERR(request)) {
      in->status = fail(&in->error, DLB_ERR_PEER_CLOSED,
                        "receiving a tensor's bytes from %s failed (UCX: %s)", r->name,
                        ucs_text(*r, UCS_PTR_STATUS(request)));
    } else {
      in->request = request;  // NULL: all in at once
    }
  } else if (length > 0) {
    in->status = place(*r, target, data, length, &in->error);
  }
  // The rest comes in parts (dropped when these bytes could not be taken).
  if (r->parted == in && in->status == DLB_OK) in->target = target;
  return UCS_OK;
}

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

// Hands the held tensors to UCX as one Batch message: by its eager protocol up to
// kEagerMaxBytes (or when `eager`), by rendezvous above. The batch is empty again, and the other
// buffer fills (this one is UCX's to read until the request is done).
ucs_status_ptr_t post_batch(Remote* r, bool eager) {
  BatchBuffer& buffer = r->batch_buffers[r->filling];
  std::memcpy(buffer.header.magic, kBatchMagic, sizeof kBatchMagic);
  buffer.header.count = r->held_count;
  buffer.header.reserved = 0;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_FLAGS;
  p.cb.send = on_request_done;
  p.flags = eager || r->held_bytes <= kEagerMaxBytes ? UCP_AM_SEND_FLAG_EAGER
                                                     : UCP_AM_SEND_FLAG_RNDV;
  ucs_status_ptr_t request = r->u->am_send_nbx(r->ep, kAmBatch, &buffer.header,
                                               sizeof buffer.header, buffer.bytes,
                                               r->held_bytes, &p);
  r->held_bytes = 0;
  r->held_count = 0;
  r->filling ^= 1;
  return request;
}

// Waits until the send of the batch last posted from `buffer` is done (the peer has the bytes
// of a rendezvous batch, UCX has taken an eager one's), so that the buffer may fill again.
int finish_batch(dlb_channel* channel, Remote* r, BatchBuffer& buffer, dlb_error* error) {
  ucs_status_ptr_t request = buffer.request;
  buffer.request = nullptr;
  return wait_request(channel, r, request, "sending the tensors held by DLB_SEND_MORE", error);
}

// finish_batch for every batch posted, the older first.
int finish_batches(dlb_channel* channel, Remote* r, dlb_error* error) {
  for (unsigned i = 0; i < 2; ++i) {
    const int status = finish_batch(channel, r, r->batch_buffers[(r->filling + i) % 2], error);
    if (status != DLB_OK) return status;
  }
  return DLB_OK;
}

// Sends the tensors held by DLB_SEND_MORE. Within a stream (`to_the_end` false) it does not wait
// for the send: the next batch fills the other buffer, and hold waits for a buffer's send before
// it fills it again. A stream's end waits for every batch, so that no call without
// DLB_SEND_MORE returns while UCX still needs this end to progress its tensors. A send that
// fails, or a peer gone, loses the batch: the status says so.
int send_held(dlb_channel* channel, Remote* r, bool to_the_end, dlb_error* error) {
  if (r->held_count > 0) {
    if (r->peer_gone) {
      r->held_bytes = 0;
      r->held_count = 0;
      return peer_failure(*r, error, "sending the tensors held by DLB_SEND_MORE");
    }
    BatchBuffer& posted = r->batch_buffers[r->filling];
    posted.request = post_batch(r, false);
    // Done or failed at once: that is its status.
    if (!UCS_PTR_IS_PTR(posted.request)) {
      const int status = finish_batch(channel, r, posted, error);
      if (status != DLB_OK) return status;
    }
  }
  return to_the_end ? finish_batches(channel, r, error) : DLB_OK;
}

// Half the peer's window: a batch holds at most this many tensors, so that one batch fills while
// the one before it travels.
uint32_t half_window(const Remote& r) { return (r.peer_max_in_flight + 1) / 2; }

// The bytes of records a batch of such records grows to before it goes. A rendezvous costs a
// round trip before its bytes move: it repays that only for a large batch, while one eager
// message moves a small batch at once. So a batch goes by rendezvous (up to kBatchBytes) only
// where half the window of its records fills half of kBatchBytes, else eagerly, as much as one
// message carries whole (kMessageBytes with the batch's header). Measured with bench_remote over
// TCP, window 64: at 4 and 8 KiB rendezvous batches of 32 ran at half the rate of eager ones, at
// 16 and 32 KiB at 1.1 and 2 times it.
size_t batch_capacity(const Remote& r, size_t record) {
  return static_cast<uint64_t>(record) * half_window(r) >= kBatchBytes / 2
             ? kBatchBytes
             : kMessageBytes - sizeof(BatchHeader);
}

// Adds a tensor's record (its remote header, then its bytes) to the held batch, which has room,
// once the batch last posted from its buffer has gone.
int hold(dlb_channel* channel, Remote* r, const unsigned char* header, size_t header_size,
         const void* bytes, uint64_t count, dlb_error* error) {
  BatchBuffer& buffer = r->batch_buffers[r->filling];
  const int status = finish_batch(channel, r, buffer, error);
  if (status != DLB_OK) return status;
  if (buffer.bytes == nullptr) {
    buffer.bytes = static_cast<unsigned char*>(std::malloc(kBatchBytes));
    if (buffer.bytes == nullptr) {
      return fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory for a batch of %zu bytes",
                  kBatchBytes);
    }
  }
  const BatchRecord record{static_cast<uint32_t>(header_size), 0, count};
  unsigned char* at = buffer.bytes + r->held_bytes;
  std::memcpy(at, &record, sizeof record);
  std::memcpy(at + sizeof record, header, header_size);
  if (count > 0) std::memcpy(at + sizeof record + header_size, bytes, count);
  r->held_bytes += sizeof record + header_size + count;
  ++r->held_count;
  return DLB_OK;
}

}  // namespace

void post_held(Remote* r) {
  if (r->held_count > 0 && r->ep != nullptr && !r->peer_gone) {
    // Eager at any size: UCX then sends it without the peer's part (a rendezvous would wait for
    // the peer to pull the bytes within the close's flush). Its buffer's last send is done (hold
    // waited for it before filling it).
    BatchBuffer& posted = r->batch_buffers[r->filling];
    posted.request = post_batch(r, true);
  }
  // UCX finishes them before the endpoint's close (close_endpoint flushes), then frees them.
  for (BatchBuffer& buffer : r->batch_buffers) {
    if (UCS_PTR_IS_PTR(buffer.request)) r->u->request_free(buffer.request);
    buffer.request = nullptr;
  }
}

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
  Geometry g{};
  int status = check_send_options(options, error);
  if (status == DLB_OK) status = validate_tensor(&tensor->dl_tensor, tensor->flags, &g, error);
  if (status != DLB_OK) return status;
  const int32_t type = tensor->dl_tensor.device.device_type;
  const bool device_memory = !is_host_memory(type);
  const bool reachable =
      !device_memory || ((type == kDLCUDA || type == kDLCUDAManaged) && r->context->reaches_cuda);
  if (!reachable && (options & DLB_SEND_COPY) == 0) {
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
  // What travels: a compact tensor's bytes; a strided one's covering span (from its lowest
  // element to the end of its highest, its layout kept) where that is fewer bytes than packing
  // it (a broadcast or overlapping view) or the caller asked to keep the layout; else a compact
  // copy of it, made once on its own device. Memory UCX cannot reach (DLB_SEND_COPY) is copied to
  // host memory first, the span alone when the span travels.
  uint64_t packed = 0;
  status = dlb_tensor_byte_size(&tensor->dl_tensor, tensor->flags, &packed, error);
  if (status != DLB_OK) return status;
  const uint64_t span = (g.span_bits + 7) / 8;
  const bool compact = dlb_tensor_is_c_contiguous(&tensor->dl_tensor) == 1;
  const bool send_span = !compact && has_byte_addresses(g) &&
                         (span < packed || (options & DLB_SEND_KEEP_LAYOUT) != 0);
  const char* const span_start =
      static_cast<const char*>(tensor->dl_tensor.data) + (g.begin_bits >> 3);  // offset included
  const char* start = span_start;  // of the bytes that travel
  const uint64_t bytes = send_span ? span : packed;
  if (bytes > r->peer_max_tensor_bytes) {
    return fail(error, DLB_ERR_LIMIT,
                "the tensor's %llu bytes exceed the %llu bytes the peer at %s takes (its "
                "receive limit)",
                static_cast<unsigned long long>(bytes),
                static_cast<unsigned long long>(r->peer_max_tensor_bytes), r->name);
  }
  DLDevice from = tensor->dl_tensor.device;
  DLManagedTensorVersioned* copy = nullptr;
  if (send_span && !reachable) {
    // The span as bytes. On a device whose data is a handle, elements never lie before
    // byte_offset (validation), so the view moves byte_offset only.
    const int64_t begin = g.begin_bits >> 3;
    const int64_t extent = static_cast<int64_t>(span);
    const DLManagedTensorVersioned span_view =
        begin >= 0 ? byte_view(tensor->dl_tensor.data, static_cast<uint64_t>(begin), from, &extent)
                   : byte_view(const_cast<char*>(span_start), 0, from, &extent);
    status = dlb_tensor_copy(&span_view, DLDevice{kDLCPU, 0}, &copy, error);
  } else if (!send_span && (!compact || !reachable)) {
    status = dlb_tensor_copy(tensor, reachable ? from : DLDevice{kDLCPU, 0}, &copy, error);
  }
  if (status != DLB_OK) return status;
  if (copy != nullptr) {
    from = copy->dl_tensor.device;
    start = static_cast<const char*>(copy->dl_tensor.data) + copy->dl_tensor.byte_offset;
  }
  const Deadline deadline(channel->timeout_ns);
  if (status == DLB_OK && r->in_flight >= r->peer_max_in_flight) {
    // The held tensors go first: the peer credits only what it has.
    status = send_held(channel, r, false, error);
  }
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
  // The descriptor: the layout of what travels (a compact copy's, or the tensor's own with its
  // first element placed in the span), and the sender's flags, also of a copy it made to send.
  Wire wire;
  if (send_span) {
    encode(*tensor, kHandleRemote, span_start, 0, bytes, &wire);
  } else {
    encode(copy != nullptr ? *copy : *tensor, kHandleRemote, start, 0, bytes, &wire);
  }
  wire.flags = tensor->flags;
  RemoteExtension extension{};
  std::memcpy(extension.magic, kRemoteMagic, 8);
  extension.payload_bytes = bytes;
  extension.sequence = r->sent;
  // Host bytes that fit in a batch are held while the caller says more follow (DLB_SEND_MORE),
  // and the last of a stream joins the batch it ends. Anything else goes alone, after the held:
  //  - small host tensors eagerly: where the header and the bytes are more than one message
  //    (kMessageBytes), in pieces of about equal size, the first with the header and the rest
  //    in Part messages;
  //  - larger host tensors by rendezvous, their first bytes (kLeadBytes, at most half) in Part
  //    messages beside it;
  //  - device memory by UCX's choice of protocol, whole.
  const size_t header_size = remote_header_size(wire.ndim);
  const bool host = is_host_memory(from.device_type);
  const size_t record = sizeof(BatchRecord) + header_size + bytes;
  const size_t capacity = batch_capacity(*r, record);
  const bool held = host && bytes <= kHoldMaxBytes && record <= capacity &&
                    ((options & DLB_SEND_MORE) != 0 || r->held_count > 0);
  const bool eager = host && bytes <= kLoneEagerMaxBytes;
  const bool lead = host && !eager;
  uint64_t parts_begin = 0, parts_end = 0;  // the payload's bytes that go in Part messages
  if (!held && eager && header_size + bytes > kMessageBytes) {
    const uint64_t pieces = eager_pieces(header_size, bytes);
    parts_begin = (bytes + pieces - 1) / pieces;
    parts_end = bytes;
  } else if (!held && lead) {
    parts_end = bytes / 2 < kLeadBytes ? bytes / 2 : kLeadBytes;
  }
  const uint64_t in_parts = parts_end - parts_begin;
  // Parts of about equal size, each at most kPartBytes.
  const uint64_t nparts = (in_parts + kPartBytes - 1) / kPartBytes;
  const uint64_t piece = nparts == 0 ? 0 : (in_parts + nparts - 1) / nparts;
  extension.in_parts = in_parts > 0 ? 1 : 0;
  unsigned char header[kMaxRemoteHeaderBytes];
  pack_remote(wire, extension, header);
  if (held) {
    if (r->held_bytes + record > capacity ||
        r->held_count >= half_window(*r)) {
      status = send_held(channel, r, false, error);
    }
    if (status == DLB_OK) status = hold(channel, r, header, header_size, start, bytes, error);
    if (status == DLB_OK) {
      ++r->sent;
      ++r->in_flight;
      if ((options & DLB_SEND_MORE) == 0) status = send_held(channel, r, true, error);
    }
    dlb_tensor_free(copy);
    return status;
  }
  status = send_held(channel, r, false, error);
  if (status != DLB_OK) {
    dlb_tensor_free(copy);
    return status;
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  p.cb.send = on_request_done;
  p.memory_type = memory_type_of(from.device_type);
  if (host) {
    // Eager: UCX takes the bytes now and the send completes without waiting for the receiver,
    // so a stream of such tensors overlaps; the receiver copies them into its new tensor. A
    // rendezvous costs a round trip more per tensor, which only large tensors repay. The
    // receiver tells which bytes a message with parts brings by its protocol, so it is chosen
    // here, not by UCX.
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = eager ? UCP_AM_SEND_FLAG_EAGER : UCP_AM_SEND_FLAG_RNDV;
  }
  // The message brings an eager tensor's first bytes, a rendezvous's last.
  const uint64_t own_begin = eager ? 0 : parts_end;
  const uint64_t own_end = eager && in_parts > 0 ? parts_begin : bytes;
  ucs_status_ptr_t request = r->u->am_send_nbx(r->ep, kAmTensor, header, header_size,
                                               start + own_begin, own_end - own_begin, &p);
  // Handed to UCX, the tensor has its place in the stream even when the peer refuses it: the
  // peer's receive of that place reports the refusal, and counts it for the window.
  PartHeader parts[kMaxParts];
  ucs_status_ptr_t part_requests[kMaxParts];
  size_t posted = 0;
  ucp_request_param_t part_param = p;
  part_param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
  part_param.flags = UCP_AM_SEND_FLAG_EAGER;
  if (!UCS_PTR_IS_ERR(request)) {
    ++r->sent;
    ++r->in_flight;
    // Every part is posted before the first wait, so that they follow on the wire at once.
    for (uint64_t offset = parts_begin; offset < parts_end && posted < kMaxParts;
         offset += piece) {
      PartHeader& part = parts[posted];
      std::memcpy(part.magic, kPartMagic, sizeof kPartMagic);
      part.sequence = extension.sequence;
      part.reserved = 0;
      part.offset = offset;
      const uint64_t count = parts_end - offset < piece ? parts_end - offset : piece;
      part_requests[posted] =
          r->u->am_send_nbx(r->ep, kAmPart, &part, sizeof part, start + offset, count,
                            &part_param);
      if (UCS_PTR_IS_ERR(part_requests[posted++])) break;
    }
  }
  status = wait_request(channel, r, request, "sending a tensor", error);
  for (size_t i = 0; i < posted; ++i) {
    // After a failure the rest is withdrawn: the tensor is lost either way.
    if (status == DLB_OK) {
      status = wait_request(channel, r, part_requests[i], "sending a tensor", error);
    } else {
      withdraw_request(channel, r, part_requests[i]);
    }
  }
  if (status == DLB_OK && (options & DLB_SEND_MORE) == 0) {
    status = finish_batches(channel, r, error);  // a stream's end: every batch has gone
  }
  dlb_tensor_free(copy);
  return status;
}

int remote_receive(dlb_channel* channel, DLManagedTensorVersioned** out, dlb_error* error) {
  Remote* r = channel->remote;
  // What this end holds to send goes first (the peer may wait for it to answer). A peer gone
  // loses it; the receive still delivers what came before, then says the peer is gone.
  dlb_error held_error;
  int status = send_held(channel, r, true, &held_error);
  if (status != DLB_OK && !r->peer_gone) {
    if (error != nullptr) *error = held_error;
    return status;
  }
  const Deadline deadline(channel->timeout_ns);
  // The first tensor of the stream is the one due, or one from before it (a forged number):
  // delivered in order, and never left waiting behind a number that never comes back.
  auto due = [&] {
    return r->head != nullptr && static_cast<int32_t>(r->head->sequence - r->expected) <= 0;
  };
  auto ready = [&] {
    return (due() && arrived(*r, *r->head)) || r->peer_gone || r->violation != DLB_OK;
  };
  // Busy while the tensor due has started to arrive (its bytes are on their way).
  auto arriving = [&] { return (due() && !arrived(*r, *r->head)) || r->batches != nullptr; };
  status = progress_until(channel, r, deadline, "waiting for a tensor", ready, arriving, error);
  if (status != DLB_OK) return status;
  Incoming* in = r->head;
  if (!due() || !arrived(*r, *in)) {
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

void remote_shutdown(dlb_channel* channel) {
  Remote* r = channel->remote;
  if (r->worker != nullptr) r->u->worker_signal(r->worker);
}

void remote_close(dlb_channel* channel) {
  post_held(channel->remote);
  destroy_remote(channel->remote);
  channel->remote = nullptr;
}

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
