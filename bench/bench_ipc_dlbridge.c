/* bench_ipc_dlbridge.c - the two dlbridge rows, through the public C API only:
 *   fresh:   every message is a new shareable tensor (dlb_tensor_allocate_shareable), filled,
 *            sent, and freed by the sender; the receiver receives (maps), reads and frees it.
 *            This is what a program does, and the path a segment pool makes fast.
 *   re-send: one shareable tensor per size, allocated before timing; every message is a share
 *            of it (dlb_tensor_share), sent and freed: the floor of the channel itself.
 * The receiver's replies take the row's own path at 64 bytes. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlbridge/dlbridge.h"
#include "bench_ipc.h"

typedef struct dlbridge_side {
  int resend;
  int sender;
  dlb_channel* channel;
  DLManagedTensorVersioned* pending;  /* sender: the message acquired, not yet sent */
  DLManagedTensorVersioned* resident; /* re-send: the tensor every message shares */
  DLManagedTensorVersioned* received; /* receiver: the message being read */
  DLManagedTensorVersioned* reply;    /* re-send: the receiver's reply tensor */
} dlbridge_side;

static void check_call(dlb_status status, const dlb_error* error, const char* what) {
  if (status != DLB_OK) {
    bench_fail("dlbridge: %s: %s: %s", what, dlb_status_name(status), error->message);
  }
}

static DLManagedTensorVersioned* allocate_bytes(uint64_t bytes) {
  const DLDevice cpu = {kDLCPU, 0};
  const DLDataType u8 = {kDLUInt, 8, 1};
  const int64_t shape = (int64_t)bytes;
  DLManagedTensorVersioned* tensor = NULL;
  dlb_error error;
  check_call(dlb_tensor_allocate_shareable(cpu, u8, 1, &shape, NULL, 0, &tensor, &error), &error,
             "allocate shareable");
  return tensor;
}

static uint8_t* bytes_of(const DLManagedTensorVersioned* tensor) {
  return (uint8_t*)tensor->dl_tensor.data + tensor->dl_tensor.byte_offset;
}

static void channel_path(const bench_cell* cell, char* path, size_t size) {
  snprintf(path, size, "%s/cell-%d.sock", cell->folder, cell->id);
}

static dlbridge_side* new_side(int resend, int sender) {
  dlbridge_side* side = calloc(1, sizeof *side);
  if (side == NULL) bench_fail("out of memory");
  side->resend = resend;
  side->sender = sender;
  return side;
}

/* The receiver listens; the sender connects as soon as the socket is there. */
static void* open_sender(const bench_cell* cell, int resend) {
  dlbridge_side* side = new_side(resend, 1);
  char path[512];
  channel_path(cell, path, sizeof path);
  const uint64_t give_up = bench_now_ns() + 20000000000u;
  for (;;) {
    dlb_error error;
    const dlb_status status = dlb_channel_connect(path, &side->channel, &error);
    if (status == DLB_OK) break;
    if (status != DLB_ERR_NO_LISTENER || bench_now_ns() > give_up) {
      check_call(status, &error, "connect");
    }
    const struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
  return side;
}

static void* open_receiver(const bench_cell* cell, int resend) {
  dlbridge_side* side = new_side(resend, 0);
  char path[512];
  channel_path(cell, path, sizeof path);
  dlb_channel* listener = NULL;
  dlb_error error;
  check_call(dlb_channel_listen(path, &listener, &error), &error, "listen");
  check_call(dlb_channel_accept(listener, &side->channel, &error), &error, "accept");
  dlb_channel_close(listener); /* removes the socket file */
  if (resend) side->reply = allocate_bytes(BENCH_REPLY_BYTES);
  return side;
}

static void* open_sender_fresh(const bench_cell* cell) { return open_sender(cell, 0); }
static void* open_sender_resend(const bench_cell* cell) { return open_sender(cell, 1); }
static void* open_receiver_fresh(const bench_cell* cell) { return open_receiver(cell, 0); }
static void* open_receiver_resend(const bench_cell* cell) { return open_receiver(cell, 1); }

static void begin_size(void* state, int size_index, uint64_t bytes) {
  (void)size_index;
  dlbridge_side* side = state;
  if (!side->resend || !side->sender) return;
  dlb_tensor_free(side->resident);
  side->resident = allocate_bytes(bytes);
}

static uint8_t* acquire(void* state, uint64_t bytes) {
  dlbridge_side* side = state;
  if (side->resend) {
    dlb_error error;
    check_call(dlb_tensor_share(side->resident, 0, &side->pending, &error), &error, "share");
  } else {
    side->pending = allocate_bytes(bytes);
  }
  return bytes_of(side->pending);
}

static void send_pending(void* state, uint64_t bytes) {
  (void)bytes;
  dlbridge_side* side = state;
  dlb_error error;
  check_call(dlb_channel_send(side->channel, side->pending, 0, &error), &error, "send");
  dlb_tensor_free(side->pending); /* the receiver's mapping keeps the memory */
  side->pending = NULL;
}

static void await_reply(void* state) {
  dlbridge_side* side = state;
  DLManagedTensorVersioned* reply = NULL;
  dlb_error error;
  check_call(dlb_channel_receive(side->channel, &reply, &error), &error, "receive the reply");
  const int fits = reply->dl_tensor.ndim == 1 && reply->dl_tensor.shape[0] == BENCH_REPLY_BYTES;
  const uint8_t first = fits ? bytes_of(reply)[0] : 0;
  dlb_tensor_free(reply);
  if (first != BENCH_REPLY_PATTERN) bench_fail("dlbridge: the reply is not the one sent");
}

static const uint8_t* receive(void* state, uint64_t bytes) {
  dlbridge_side* side = state;
  dlb_error error;
  check_call(dlb_channel_receive(side->channel, &side->received, &error), &error, "receive");
  const DLTensor* t = &side->received->dl_tensor;
  if (t->ndim != 1 || t->shape[0] != (int64_t)bytes || t->dtype.bits != 8) {
    bench_fail("dlbridge: received a tensor that is not %llu bytes", (unsigned long long)bytes);
  }
  return bytes_of(side->received);
}

static void release(void* state) {
  dlbridge_side* side = state;
  dlb_tensor_free(side->received);
  side->received = NULL;
}

static void reply(void* state) {
  dlbridge_side* side = state;
  DLManagedTensorVersioned* answer = NULL;
  dlb_error error;
  if (side->resend) {
    check_call(dlb_tensor_share(side->reply, 0, &answer, &error), &error, "share the reply");
  } else {
    answer = allocate_bytes(BENCH_REPLY_BYTES);
  }
  bytes_of(answer)[0] = BENCH_REPLY_PATTERN;
  check_call(dlb_channel_send(side->channel, answer, 0, &error), &error, "send the reply");
  dlb_tensor_free(answer);
}

static void close_side(void* state) {
  dlbridge_side* side = state;
  dlb_tensor_free(side->resident);
  dlb_tensor_free(side->reply);
  dlb_channel_close(side->channel);
  free(side);
  if (dlb_tensor_live_count() != 0) {
    bench_fail("dlbridge: %lld tensors still alive at the end", (long long)dlb_tensor_live_count());
  }
}

const bench_transport bench_dlbridge_fresh = {
    "fresh", "dlbridge fresh", 1, open_sender_fresh, open_receiver_fresh, begin_size, acquire,
    send_pending, await_reply, receive, release, reply, close_side, close_side};

const bench_transport bench_dlbridge_resend = {
    "resend", "dlbridge re-send", 0, open_sender_resend, open_receiver_resend, begin_size,
    acquire, send_pending, await_reply, receive, release, reply, close_side, close_side};
