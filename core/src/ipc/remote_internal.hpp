// What the parts of a remote channel share (remote.cc the channel's calls and its tensors,
// remote_receive_memory.cc the memory received tensors get, remote_handshake.cc the key
// handshake, remote_endpoint.cc UCX's contexts, workers and requests, remote_address.cc the
// addresses): the messages, the state, and the one way every part waits.
//
// A remote channel runs on UCX's UCP (https://openucx.org): the descriptor of the local channel
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
//   both               Ready    (once UCX has set up this end of the connection: see
//                                finish_connection)
// Each side proves it holds the key without sending it, and each MAC covers the limits that side
// announced. Then each side sends Tensor messages (or a Batch of them: DLB_SEND_MORE; a Tensor
// larger than one message, followed by its Parts), and a receiver gives the sender Credit for
// the tensors its receives took, so that a sender never has more in flight than the receiver
// allows.
#ifndef DLBRIDGE_SRC_IPC_REMOTE_INTERNAL_HPP_
#define DLBRIDGE_SRC_IPC_REMOTE_INTERNAL_HPP_

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <atomic>
#include <cstdint>

#include "ipc.hpp"
#include "remote.hpp"
#include "remote_libraries.hpp"
#include "wire.hpp"

namespace dlb {
namespace ipc {

// ---- the handshake's and the flow control's messages (active message ids and headers) --------

enum : unsigned {
  kAmHello = 1, kAmAuth, kAmWelcome, kAmRefused, kAmTensor, kAmCredit, kAmReady, kAmBatch,
  kAmPart
};

inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
// What a handshake MAC signs: the role (16 bytes), both nonces, the limits, the key's length.
inline constexpr size_t kMacDataBytes = 16 + 2 * kNonceBytes + 8 + 4 + 4;
// The remote channel's version, which the connecting side checks in the listener's Hello. 2: a
// tensor's bytes may come in Part messages (wire minor 5), which a peer of version 1 would
// refuse in the middle of a stream; so the two refuse each other when they connect.
inline constexpr uint32_t kHandshakeMajor = 2;
inline constexpr uint32_t kByteOrderProbe = 0x01020304;
// A remote accept's handshake with one peer waits at most this long, even without a time limit.
inline constexpr int64_t kHandshakeLimitNs = 10 * 1000000000LL;
// Connection requests a listener holds before accept takes them; more are turned away.
inline constexpr int kMaxPendingConnections = 64;
// How long a waiting call polls UCX before it sleeps on the worker's event descriptor: a reply
// that comes within it costs no wake-up (on the 2-core VM of CI, a wake-up costs 20-40 us, more
// than a 64 KiB tensor's round trip). While this end's own transfer is under way (a send not
// yet complete, a tensor's bytes arriving) it polls for kBusySpinNs after the last event
// instead: over TCP each step of a rendezvous takes longer than kSpinNs, and a sleep and a
// wake-up at every step cost a 64 KiB tensor four times its transfer.
inline constexpr int64_t kSpinNs = 200000;
inline constexpr int64_t kBusySpinNs = 1000000;
// A batch (DLB_SEND_MORE) of up to this many bytes of records goes by UCX's eager protocol, a
// larger one by rendezvous (post_batch). A rendezvous send completes only when the receiver has
// the bytes, so a stream of them runs one at a time; eager sends overlap. Measured with
// bench_remote over TCP: at 64 KiB eager streams at twice the rate of rendezvous, at 256 KiB
// (one message in several fragments, joined by the receiver's UCX) at half of it.
inline constexpr uint64_t kEagerMaxBytes = 64 * 1024;
// A host tensor sent alone, up to this size, goes by UCX's eager protocol too, in pieces of one
// message each (kMessageBytes; the rest in Part messages), which the receiver copies into its
// tensor as they come; a larger one by rendezvous, straight into the receiver's tensor.
// Measured with bench_remote over TCP without DLB_SEND_MORE, 3 runs each: 100 KiB streamed at
// 4110-4130 MB/s eagerly, 2220-2260 by rendezvous, and went one way in 26-28 us, 43 by
// rendezvous; eagerly up to 1 MiB, 512 KiB took 116 us one way, 81 by rendezvous.
inline constexpr uint64_t kLoneEagerMaxBytes = 256 * 1024;
// The most bytes of header and data a lone tensor's eager message carries: a larger one goes as
// its message with the first of its bytes and Part messages with the rest (wire.hpp,
// PartHeader), in pieces of about equal size. UCX's TCP transport moves up to 64 KiB of a
// message, its own headers included, in one segment (UCX_TCP_RX_SEG_SIZE); a larger message
// goes in fragments that the receiver's UCX joins in a buffer of its own before dlbridge copies
// it out. 512 bytes are left for UCX's headers. Measured with bench_remote over TCP, one way:
// 65000 bytes in 18.7 us as one message, 65400 bytes in 36.5 us as one (two fragments), and
// 64 KiB in 23.0 us as two pieces.
inline constexpr size_t kMessageBytes = 64 * 1024 - 512;
// The most bytes of a tensor one Part message carries.
inline constexpr size_t kPartBytes = kMessageBytes - sizeof(PartHeader);
// A host tensor sent alone by rendezvous sends its first bytes, up to this many (and at most
// half), eagerly in Part messages beside it: they travel while the rendezvous makes its round
// trip (the receiver allocates the tensor and asks for the bytes), which the wire would
// otherwise spend idle. Measured with bench_remote over TCP at 1 MiB, one way: 202 and 208 us
// without, 122 and 129 us with one part, 116 and 115 us with two; streams, 5 runs each (MB/s,
// medians): 6109 and 6775 without, 6928 and 3053 with one part, 7166 and 7583 with two.
inline constexpr uint64_t kLeadBytes = 2 * kPartBytes;
// The most Part messages a tensor's bytes come in (a lone eager tensor's over one message, or a
// rendezvous's lead).
inline constexpr size_t kMaxParts = 4;
// The pieces a lone eager tensor of `bytes` with a header of `header_size` goes in: as few as
// carry both in messages of kMessageBytes, and more where the first (the header and its share
// of the bytes) would not fit one. Grows with either argument, so the largest of both bounds it.
constexpr uint64_t eager_pieces(uint64_t header_size, uint64_t bytes) {
  uint64_t pieces = (header_size + bytes + kMessageBytes - 1) / kMessageBytes;
  while (header_size + (bytes + pieces - 1) / pieces > kMessageBytes) ++pieces;
  return pieces;
}
static_assert(eager_pieces(kMaxRemoteHeaderBytes, kLoneEagerMaxBytes) <= kMaxParts + 1 &&
                  kLeadBytes <= kMaxParts * kPartBytes,
              "a tensor's parts fit kMaxParts");
// The most bytes of records one batch (wire.hpp, BatchHeader) holds. A batch up to
// kEagerMaxBytes goes by UCX's eager protocol; a larger one by rendezvous, into a buffer the
// receiver allocates for it (a receiver refuses a batch over kBatchBytes before allocating).
inline constexpr size_t kBatchBytes = 1024 * 1024;
// The largest host tensor a batch holds (DLB_SEND_MORE); a larger one goes alone, by rendezvous
// straight from its memory, which its size repays (over TCP here, a stream of 256 KiB tensors
// ran at about the same rate alone as held three to a batch).
inline constexpr uint64_t kHoldMaxBytes = 256 * 1024;

inline constexpr char kHelloMagic[8] = {'d', 'l', 'b', '-', 'h', 'e', 'l', 'o'};
inline constexpr char kAuthMagic[8] = {'d', 'l', 'b', '-', 'a', 'u', 't', 'h'};
inline constexpr char kWelcomeMagic[8] = {'d', 'l', 'b', '-', 'w', 'l', 'c', 'm'};
inline constexpr char kRefusedMagic[8] = {'d', 'l', 'b', '-', 'n', 'o', 'p', 'e'};
inline constexpr char kCreditMagic[8] = {'d', 'l', 'b', '-', 'c', 'r', 'd', 't'};
inline constexpr char kReadyMagic[8] = {'d', 'l', 'b', '-', 'r', 'e', 'd', 'y'};

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

struct Ready {
  char magic[8];
};

struct Credit {
  char magic[8];
  uint32_t tensors;
  uint32_t reserved;
};

// ---- state ------------------------------------------------------------------------------------

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
  void* request;  // UCX's receive of its bytes by rendezvous, until it ends (on_bytes frees it)
  int status;                        // DLB_OK, or why it was refused
  dlb_error error;
  // Bytes that come in Part messages (RemoteExtension::in_parts): where the payload's first
  // byte goes (NULL: the tensor was refused, and its parts are dropped), and the payload's bytes
  // from `filled` to `parts_end` that are still to come. Its bytes are all in (or it was refused)
  // once neither its rendezvous runs nor its parts are owed (remote.cc, arrived).
  char* target;
  uint64_t filled;
  uint64_t parts_end;
};

struct ReceiveCache;  // remote_receive_memory.cc: freed received tensors' memory, for the next

// A tensor that came before the connecting side checked the listener's welcome (on_tensor):
// its header (after this struct) and UCX's hold of its bytes.
struct Deferred {
  Deferred* next;
  void* data;  // UCX's persistent eager data, or its rendezvous descriptor
  size_t length;
  size_t header_size;
  bool rendezvous;
  unsigned id;  // kAmTensor, kAmBatch or kAmPart: which message
};

// A batch whose bytes come by rendezvous: its records are taken when they are all in `bytes`
// (`length` of them, allocated with it).
struct BatchArrival {
  Remote* remote;
  BatchArrival* next;
  uint32_t count;
  size_t length;
  alignas(16) unsigned char bytes[1];
};

// A buffer of held tensors' records (kBatchBytes, made on first use) and the send of the batch
// last posted from it.
struct BatchBuffer {
  unsigned char* bytes;
  ucs_status_ptr_t request;  // UCX's send, until this end has seen it done
  BatchHeader header;        // that batch's header (UCX reads it until the send is done)
};

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
  Ready ready;
  bool ready_seen;
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
  Incoming* parted;  // the tensor whose Part messages come next, until its last one
  ReceiveCache* cache;  // made by the first large host tensor received
  Deferred* deferred;   // tensors held until the welcome is checked
  BatchArrival* batches;  // batches whose bytes are on their way
  uint32_t batch_records_arriving;  // their tensors, which hold places in the window
  uint32_t ndeferred;
  bool flush_on_close;  // a refusal was sent: the peer must get it before the connection ends
  // Tensors sent with DLB_SEND_MORE, held to go as one batch: records (wire.hpp) in
  // batch_buffers[filling], counted in `sent` and `in_flight` already. While one buffer's batch
  // travels (a rendezvous completes when the peer has its bytes) the other fills.
  BatchBuffer batch_buffers[2];
  unsigned filling;
  size_t held_bytes;
  uint32_t held_count;
};

// ---- small helpers -----------------------------------------------------------------------------

inline int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

inline const char* ucs_text(const Remote& r, ucs_status_t status) { return r.u->status_string(status); }

inline bool is_host_memory(int32_t device_type) {
  return device_type == kDLCPU || device_type == kDLCUDAHost;
}

inline ucs_memory_type_t memory_type_of(int32_t device_type) {
  switch (device_type) {
    case kDLCUDA:
      return UCS_MEMORY_TYPE_CUDA;
    case kDLCUDAManaged:
      return UCS_MEMORY_TYPE_CUDA_MANAGED;
    default:
      return UCS_MEMORY_TYPE_HOST;
  }
}

// The status a peer's connection failure stands for (DLB_ERR_PEER_CLOSED, naming the peer and
// UCX's reason), for the call doing `what`.
int peer_failure(const Remote& r, dlb_error* error, const char* what);

// ---- the address (remote_address.cc) ----------------------------------------------------------

struct Address {
  sockaddr_storage storage;
  socklen_t size;
  bool tcp_only;  // "tcp://": UCX restricted to its TCP transport
};

// "SCHEME://HOST:PORT" (IPv4, [IPv6] or a name; port 0 only for a listener) as a socket address
// (DLB_ERR_INVALID_ARGUMENT, or DLB_ERR_NO_LISTENER for a connect to a host not found).
int parse_address(const char* text, bool listening, Address* out, dlb_error* error);
// "tcp://10.0.0.2:5000" for messages.
void name_address(const sockaddr_storage& address, bool tcp_only, char* out, size_t size);
int32_t port_of(const sockaddr_storage& address);

// ---- UCX's contexts, workers and requests (remote_endpoint.cc) --------------------------------

// A UCP context: "tcp://" holds UCX to its TCP transport; "ucx://" follows UCX_TLS.
int make_context(const Ucx* u, bool tcp_only, Context** out, dlb_error* error);
void release_context(Context* context);
// The channel's worker, with the message handlers of a connection (not for a listener's).
int make_worker(Remote* r, bool with_handlers, dlb_error* error);
// A remote channel's state with `options` (its key copied), nothing made yet; NULL when out of
// memory.
Remote* new_remote(const Ucx* u, const Crypto* crypto, const dlb_channel_options& options);
// Progresses until `request` is done, a second passed or (`until_gone`) the peer is gone.
bool settle(Remote* r, void* request, bool until_gone = true);
void free_incoming(Remote* r, Incoming* in);
void close_endpoint(Remote* r);
// Closes the endpoint, frees what waits to be received, the worker, the context's reference.
void destroy_remote(Remote* r);
// The send callback that UCX needs to hand back a request (the caller polls its status).
void on_request_done(void*, ucs_status_t, void*);
// Waits for a UCX request to finish, progressing the worker, and frees it; `request` may be NULL
// (done at once) or an error pointer. Out of time or shut down: the request is withdrawn and the
// channel has lost its place.
int wait_request(dlb_channel* channel, Remote* r, ucs_status_ptr_t request, const char* what,
                 dlb_error* error);
// Withdraws a request that may still run (`request` may be NULL or an error pointer: nothing to
// do); when it returns, UCX no longer reads the caller's memory for it. The channel has lost its
// place (out of step).
void withdraw_request(dlb_channel* channel, Remote* r, ucs_status_ptr_t request);
// Sends a handshake or flow-control message and waits until it left.
int send_control(dlb_channel* channel, Remote* r, unsigned id, const void* header, size_t size,
                 const char* what, dlb_error* error);

// The tensors held until the connecting side checked the welcome (remote.cc): they arrive once
// the channel is authenticated, else they are dropped.
void take_deferred(Remote* r);
// Hands the tensors held by DLB_SEND_MORE to UCX as one batch without waiting (remote.cc), for a
// close: UCX's flush of the endpoint then sends it and any batch still travelling. The batch
// buffers live until destroy_remote.
void post_held(Remote* r);

// The receiver's tensor for what arrives (remote_receive_memory.cc): `bytes` bytes laid out as
// the descriptor says (compact strides, or the sender's when its covering span travelled:
// `strides`, with the first element wire.byte_offset bytes in), on the channel's receive
// device, over the receive cache's memory when some fits. On error nothing is allocated.
int allocate_received(Remote* r, DLDataType dtype, const Wire& wire, const int64_t* strides,
                      uint64_t bytes, uint64_t flags, DLManagedTensorVersioned** out,
                      dlb_error* error);
// Lets go of the channel's receive cache (remote_receive_memory.cc): its buffers are freed, and
// tensors still over cached memory free theirs when they go.
void release_receive_cache(Remote* r);

// ---- the handshake (remote_handshake.cc) -------------------------------------------------------

// The message handlers of the handshake, and of the tensors and credit (remote.cc).
ucs_status_t on_hello(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_auth(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_welcome(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_refused(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_tensor(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_credit(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_ready(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_batch(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
ucs_status_t on_part(void*, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*);
// Records what the peer did wrong (the first thing only): it ends a handshake, or the stream.
void violate(Remote* r, int status, const char* message);
// The listener's half of the handshake on a new connection (a peer gets at most
// kHandshakeLimitNs, or `timeout_ns` when shorter), and the connecting side's half.
int greet(dlb_channel* channel, Remote* r, int64_t timeout_ns, dlb_error* error);
int introduce(dlb_channel* channel, Remote* r, dlb_error* error);

// ---- waiting ------------------------------------------------------------------------------------

// Progresses the channel's worker until `done()` holds, the deadline passes (DLB_ERR_TIMEOUT,
// the message naming `what`), or the channel is shut down (DLB_ERR_CLOSED). Polls while events
// come and kSpinNs after the last one (kBusySpinNs while `busy()`: a transfer of this end's is
// under way), then sleeps on the worker's event descriptor.
// Each worker progress costs a system call per transport (TCP's epoll_wait) even when nothing
// came, so `done()` is asked before the first and after each one: what an earlier progress
// already delivered (several small tensors arrive in one read) is taken without another.
template <typename Done, typename Busy>
int progress_until(const dlb_channel* channel, Remote* r, const Deadline& deadline,
                   const char* what, Done done, Busy busy, dlb_error* error) {
  if (done()) return DLB_OK;
  int64_t last_event = now_ns();
  for (;;) {
    const bool progressed = r->u->worker_progress(r->worker) != 0;
    if (done()) return DLB_OK;
    if (is_shut(channel)) return fail_shut(error);
    const int ms = deadline.remaining_ms();
    if (ms == 0) return fail(error, DLB_ERR_TIMEOUT, "%s: the time limit ran out", what);
    const int64_t now = now_ns();
    if (progressed) last_event = now;
    if (now - last_event < (busy() ? kBusySpinNs : kSpinNs)) continue;
    const ucs_status_t armed = r->u->worker_arm(r->worker);
    if (armed == UCS_ERR_BUSY) continue;  // events came in: progress them
    if (armed != UCS_OK) {
      return fail(error, DLB_ERR_DEVICE, "%s: arming the UCX worker failed: %s", what,
                  ucs_text(*r, armed));
    }
    pollfd p{r->efd, POLLIN, 0};
    if (poll(&p, 1, ms) < 0 && errno != EINTR) return os_fail(error, errno, DLB_ERR_DEVICE, "poll");
    last_event = now_ns();
  }
}

// progress_until for a wait with nothing of this end's under way.
template <typename Done>
int progress_until(const dlb_channel* channel, Remote* r, const Deadline& deadline,
                   const char* what, Done done, dlb_error* error) {
  return progress_until(channel, r, deadline, what, done, [] { return false; }, error);
}

}  // namespace ipc
}  // namespace dlb

#endif  // DLBRIDGE_SRC_IPC_REMOTE_INTERNAL_HPP_
