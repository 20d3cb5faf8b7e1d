/* bench_ipc_dlbridge.c - the dlbridge rows, through the public C API only:
 *   fresh:   every message is a new shareable tensor (dlb_tensor_allocate_shareable), filled,
 *            sent, and freed by the sender; the receiver receives (maps), reads and frees it.
 *   pooled:  every message is lent by the channel's pool (dlb_channel_allocate), filled, sent
 *            and freed; the receiver's free gives its slot back for the sender to reuse.
 *   re-send: one shareable tensor per size, allocated before timing; every message is a share
 *            of it (dlb_tensor_share), sent and freed: no allocation on the sender's side, but
 *            the receiver still maps and unmaps the memory per message.
 * The receiver's replies take the row's own path at 64 bytes. Channels keep the default: no time
 * limit (a program's usual setting, and a different wait in the core); the parent's deadline
 * ends a measurement that stops answering. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlbridge/dlbridge.h"
#include "bench_ipc.h"

enum dlbridge_row { FRESH, POOLED, RESEND };

typedef struct dlbridge_side {
  enum dlbridge_row row;
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

/* A message of `bytes` bytes: a new shareable tensor, or one lent by `channel`'s pool. */
static DLManagedTensorVersioned* allocate_bytes(dlb_channel* pool_channel, uint64_t bytes) {
  const DLDevice cpu = {kDLCPU, 0};
  const DLDataType u8 = {kDLUInt, 8, 1};
  const int64_t shape = (int64_t)bytes;
  DLManagedTensorVersioned* tensor = NULL;
  dlb_error error;
  if (pool_channel != NULL) {
    check_call(dlb_channel_allocate(pool_channel, cpu, u8, 1, &shape, NULL, 0, &tensor, &error),
               &error, "allocate from the channel's pool");
  } else {
    check_call(dlb_tensor_allocate_shareable(cpu, u8, 1, &shape, NULL, 0, &tensor, &error),
               &error, "allocate shareable");
  }
  return tensor;
}

static uint8_t* bytes_of(const DLManagedTensorVersioned* tensor) {
  return (uint8_t*)tensor->dl_tensor.data + tensor->dl_tensor.byte_offset;
}

static void channel_path(const bench_cell* cell, char* path, size_t size) {
  snprintf(path, size, "%s/cell-%d.sock", cell->folder, cell->id);
}

static dlbridge_side* new_side(enum dlbridge_row row, int sender) {
  dlbridge_side* side = calloc(1, sizeof *side);
  if (side == NULL) bench_fail("out of memory");
  side->row = row;
  side->sender = sender;
  return side;
}

/* A pool large enough for three of the largest message in flight (--sizes up to 1 GiB). */
static void size_the_pool(dlbridge_side* side, const bench_cell* cell) {
  dlb_error error;
  uint64_t largest = 0;
  for (int s = 0; s < cell->plan->size_count; ++s) {
    if (cell->plan->sizes[s].bytes > largest) largest = cell->plan->sizes[s].bytes;
  }
  if (side->row == POOLED && 3 * largest > DLB_POOL_DEFAULT_LIMIT) {
    check_call(dlb_channel_set_pool_limit(side->channel, 4 * largest, &error), &error,
               "set the pool's limit");
  }
}

/* The receiver listens; the sender connects as soon as the socket is there. */
static void* open_sender(const bench_cell* cell, enum dlbridge_row row) {
  dlbridge_side* side = new_side(row, 1);
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
  size_the_pool(side, cell);
  return side;
}

static void* open_receiver(const bench_cell* cell, enum dlbridge_row row) {
  dlbridge_side* side = new_side(row, 0);
  char path[512];
  channel_path(cell, path, sizeof path);
  dlb_channel* listener = NULL;
  dlb_error error;
  check_call(dlb_channel_listen(path, &listener, &error), &error, "listen");
  check_call(dlb_channel_accept(listener, &side->channel, &error), &error, "accept");
  dlb_channel_close(listener); /* removes the socket file */
  size_the_pool(side, cell);
  if (row == RESEND) side->reply = allocate_bytes(NULL, BENCH_REPLY_BYTES);
  return side;
}

static void* open_sender_fresh(const bench_cell* cell) { return open_sender(cell, FRESH); }
static void* open_sender_pooled(const bench_cell* cell) { return open_sender(cell, POOLED); }
static void* open_sender_resend(const bench_cell* cell) { return open_sender(cell, RESEND); }
static void* open_receiver_fresh(const bench_cell* cell) { return open_receiver(cell, FRESH); }
static void* open_receiver_pooled(const bench_cell* cell) { return open_receiver(cell, POOLED); }
static void* open_receiver_resend(const bench_cell* cell) { return open_receiver(cell, RESEND); }

static void begin_size(void* state, int size_index, uint64_t bytes) {
  (void)size_index;
  dlbridge_side* side = state;
  if (side->row != RESEND || !side->sender) return;
  dlb_tensor_free(side->resident);
  side->resident = allocate_bytes(NULL, bytes);
}

static uint8_t* acquire(void* state, uint64_t bytes) {
  dlbridge_side* side = state;
  if (side->row == RESEND) {
    dlb_error error;
    check_call(dlb_tensor_share(side->resident, 0, &side->pending, &error), &error, "share");
  } else {
    side->pending = allocate_bytes(side->row == POOLED ? side->channel : NULL, bytes);
  }
  return bytes_of(side->pending);
}

static void send_pending(void* state, uint64_t bytes) {
  (void)bytes;
  dlbridge_side* side = state;
  dlb_error error;
  check_call(dlb_channel_send(side->channel, side->pending, 0, &error), &error, "send");
  dlb_tensor_free(side->pending); /* the receiver's tensor keeps the memory */
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
  if (side->row == RESEND) {
    check_call(dlb_tensor_share(side->reply, 0, &answer, &error), &error, "share the reply");
  } else {
    answer = allocate_bytes(side->row == POOLED ? side->channel : NULL, BENCH_REPLY_BYTES);
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

const bench_transport bench_dlbridge_pooled = {
    "pooled", "dlbridge pooled", 1, open_sender_pooled, open_receiver_pooled, begin_size,
    acquire, send_pending, await_reply, receive, release, reply, close_side, close_side};

const bench_transport bench_dlbridge_resend = {
    "resend", "dlbridge re-send", 0, open_sender_resend, open_receiver_resend, begin_size,
    acquire, send_pending, await_reply, receive, release, reply, close_side, close_side};
