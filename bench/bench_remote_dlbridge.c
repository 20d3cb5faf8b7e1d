/* bench_remote_dlbridge.c - the dlbridge column: a remote channel (tcp:// or ucx:// on
 * 127.0.0.1) set up as a user would, through the public C API only. The sender allocates one
 * ordinary host tensor per size (uint8, [bytes]), fills it once and sends it again and again;
 * every receive is a new tensor the library allocated, freed by the receiver (or, in a ping-pong,
 * sent back first, then freed). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_remote.h"
#include "dlbridge/dlbridge.h"

/* Long enough for the slowest message here (1 GiB over TCP on a loaded machine takes seconds);
 * a peer that stops answering then fails the measurement instead of hanging it. */
#define CALL_TIMEOUT_NS (120ll * 1000000000ll)

typedef struct dlbridge_side {
  dlb_channel* listener;
  dlb_channel* channel;
  DLManagedTensorVersioned* own;
  DLManagedTensorVersioned* held;
} dlbridge_side;

static void check_call(dlb_status status, const dlb_error* error, const char* what) {
  if (status != DLB_OK) {
    remote_fail("dlbridge: %s: %s: %s", what, dlb_status_name(status), error->message);
  }
}

/* The options both ends use: the shared key, a receive limit that admits the plan's largest
 * tensor (the default, 1 GiB, already does for the standard sizes) and a time limit. */
static dlb_channel_options* make_options(const remote_plan* plan) {
  dlb_error error;
  dlb_channel_options* options = NULL;
  check_call(dlb_channel_options_create(&options, &error), &error, "options");
  check_call(dlb_channel_options_set_key(options, plan->key, sizeof plan->key, &error), &error,
             "set the key");
  const uint64_t limit = plan->largest > DLB_REMOTE_DEFAULT_MAX_TENSOR_BYTES
                             ? plan->largest
                             : DLB_REMOTE_DEFAULT_MAX_TENSOR_BYTES;
  check_call(dlb_channel_options_set_max_tensor_bytes(options, limit, &error), &error,
             "set the largest tensor");
  check_call(dlb_channel_options_set_timeout(options, CALL_TIMEOUT_NS, &error), &error,
             "set the time limit");
  return options;
}

static dlbridge_side* new_side(void) {
  dlbridge_side* side = calloc(1, sizeof *side);
  if (side == NULL) remote_fail("out of memory");
  return side;
}

static void* listen_at(const remote_plan* plan, int* port) {
  dlbridge_side* side = new_side();
  dlb_channel_options* options = make_options(plan);
  dlb_error error;
  const char* address = plan->ucx_scheme ? "ucx://127.0.0.1:0" : "tcp://127.0.0.1:0";
  check_call(dlb_channel_listen_with_options(address, options, &side->listener, &error), &error,
             address);
  dlb_channel_options_free(options);
  *port = dlb_channel_port(side->listener);
  if (*port <= 0) remote_fail("dlbridge: the listener at %s names no port", address);
  return side;
}

static void accept_peer(void* state) {
  dlbridge_side* side = state;
  dlb_error error;
  check_call(dlb_channel_accept(side->listener, &side->channel, &error), &error, "accept");
  if (!dlb_channel_is_remote(side->channel)) remote_fail("dlbridge: the channel is not remote");
  dlb_channel_close(side->listener);
  side->listener = NULL;
}

static void* connect_to(const remote_plan* plan, int port) {
  dlbridge_side* side = new_side();
  dlb_channel_options* options = make_options(plan);
  char address[64];
  snprintf(address, sizeof address, "%s://127.0.0.1:%d", plan->ucx_scheme ? "ucx" : "tcp", port);
  dlb_error error;
  check_call(dlb_channel_connect_with_options(address, options, &side->channel, &error), &error,
             address);
  dlb_channel_options_free(options);
  return side;
}

static void prepare(void* state, uint64_t bytes) {
  dlbridge_side* side = state;
  dlb_tensor_free(side->own);
  side->own = NULL;
  const DLDevice cpu = {kDLCPU, 0};
  const DLDataType u8 = {kDLUInt, 8, 1};
  const int64_t shape = (int64_t)bytes;
  dlb_error error;
  check_call(dlb_tensor_allocate(cpu, u8, 1, &shape, NULL, 0, &side->own, &error), &error,
             "allocate");
  memset((char*)side->own->dl_tensor.data + side->own->dl_tensor.byte_offset,
         remote_pattern(bytes), bytes);
}

static void send_own(void* state, int more) {
  dlbridge_side* side = state;
  dlb_error error;
  check_call(dlb_channel_send(side->channel, side->own, more ? DLB_SEND_MORE : 0, &error), &error,
             "send");
}

static void receive(void* state, uint64_t bytes) {
  dlbridge_side* side = state;
  dlb_error error;
  check_call(dlb_channel_receive(side->channel, &side->held, &error), &error, "receive");
  const DLTensor* t = &side->held->dl_tensor;
  if (t->ndim != 1 || t->shape[0] != (int64_t)bytes || t->dtype.code != kDLUInt ||
      t->dtype.bits != 8) {
    remote_fail("dlbridge: received a tensor of another shape or dtype than uint8 [%llu]",
                (unsigned long long)bytes);
  }
  if ((side->held->flags & DLPACK_FLAG_BITMASK_IS_COPIED) == 0) {
    remote_fail("dlbridge: a received remote tensor is not marked IS_COPIED");
  }
  const uint8_t* data = (const uint8_t*)t->data + t->byte_offset;
  const uint8_t pattern = remote_pattern(bytes);
  if (data[0] != pattern || data[bytes - 1] != pattern) {
    remote_fail("dlbridge: a received tensor of %llu bytes does not hold the bytes sent",
                (unsigned long long)bytes);
  }
}

static void send_received(void* state) {
  dlbridge_side* side = state;
  dlb_error error;
  check_call(dlb_channel_send(side->channel, side->held, 0, &error), &error, "send back");
  dlb_tensor_free(side->held);
  side->held = NULL;
}

static void drop(void* state) {
  dlbridge_side* side = state;
  dlb_tensor_free(side->held);
  side->held = NULL;
}

static void close_side(void* state) {
  dlbridge_side* side = state;
  dlb_tensor_free(side->held);
  dlb_tensor_free(side->own);
  dlb_channel_close(side->channel);
  dlb_channel_close(side->listener);
  free(side);
}

const remote_link remote_dlbridge = {
    "dlbridge", listen_at, accept_peer, connect_to, prepare, send_own, receive, send_received,
    drop,       close_side,
};
