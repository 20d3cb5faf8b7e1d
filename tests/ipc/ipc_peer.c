/* ipc_peer.c - the C peer of suite ipc's exchange across languages (README.md, "The peer
 * protocol"): `ipc_peer consume PATH` or `ipc_peer produce PATH`, with the public C API alone. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dlbridge/dlbridge.h"

static int failed(const char* role, const char* what, const dlb_error* error) {
  fprintf(stderr, "c %s: %s%s%s\n", role, what, error ? ": " : "", error ? error->message : "");
  return 1;
}

static int consume(const char* path) {
  const DLDataType f32 = {kDLFloat, 32, 1}, i32 = {kDLInt, 32, 1};
  dlb_error err;
  dlb_channel *listener = NULL, *channel = NULL;
  DLManagedTensorVersioned *t = NULL, *copied = NULL, *extra = NULL;
  int rc = 1;
  if (dlb_channel_listen(path, &listener, &err) != DLB_OK) return failed("consume", "listen", &err);
  printf("ready\n");
  fflush(stdout);
  if (dlb_channel_accept(listener, &channel, &err) != DLB_OK) {
    failed("consume", "accept", &err);
    goto done;
  }
  int32_t pid = 0;
  uint32_t uid = 0;
  if (dlb_channel_peer(channel, &pid, &uid, &err) != DLB_OK || pid <= 0 || uid != geteuid()) {
    failed("consume", "the peer's pid and uid", NULL);
    goto done;
  }
  if (dlb_channel_receive(channel, &t, &err) != DLB_OK) {
    failed("consume", "receive", &err);
    goto done;
  }
  float values[6] = {0};
  const int64_t* shape = t->dl_tensor.shape;
  if (t->dl_tensor.ndim != 2 || shape[0] != 2 || shape[1] != 3 ||
      dlb_tensor_copy_to_host(t, f32, values, sizeof values, &err) != DLB_OK ||
      !dlb_tensor_is_shareable(t)) {
    failed("consume", "the first tensor is not a shareable float32 [2, 3]", NULL);
    goto done;
  }
  for (int i = 0; i < 6; ++i) {
    if (values[i] != (float)i) {
      failed("consume", "the first tensor does not hold 0..5", NULL);
      goto done;
    }
  }
  values[0] = 100.0f;
  if (dlb_tensor_copy_from_host(t, f32, values, sizeof values, &err) != DLB_OK ||
      dlb_channel_send(channel, t, 0, &err) != DLB_OK) {
    failed("consume", "writing and sending back", &err);
    goto done;
  }
  int32_t pair[2] = {0};
  if (dlb_channel_receive(channel, &copied, &err) != DLB_OK ||
      dlb_tensor_copy_to_host(copied, i32, pair, sizeof pair, &err) != DLB_OK) {
    failed("consume", "the copied tensor", &err);
    goto done;
  }
  if (pair[0] != 7 || pair[1] != 8 || !(copied->flags & DLPACK_FLAG_BITMASK_IS_COPIED)) {
    failed("consume", "the copied tensor is not [7, 8] with IS_COPIED", NULL);
    goto done;
  }
  if (dlb_channel_receive(channel, &extra, &err) != DLB_ERR_PEER_CLOSED ||
      strcmp(err.message, "the peer closed the channel") != 0) {
    failed("consume", "after the peer closed", &err);
    goto done;
  }
  printf("consume ok\n");
  rc = 0;
done:
  dlb_tensor_free(extra);
  dlb_tensor_free(copied);
  dlb_tensor_free(t);
  dlb_channel_close(channel);
  dlb_channel_close(listener);
  return rc;
}

static int produce(const char* path) {
  const DLDevice cpu = {kDLCPU, 0};
  const DLDataType f32 = {kDLFloat, 32, 1}, i32 = {kDLInt, 32, 1};
  const int64_t shape[2] = {2, 3}, pair_shape[1] = {2};
  dlb_error err;
  dlb_channel* channel = NULL;
  DLManagedTensorVersioned *x = NULL, *back = NULL, *plain = NULL;
  int rc = 1;
  if (dlb_channel_connect(path, &channel, &err) != DLB_OK) return failed("produce", "connect", &err);
  float values[6] = {0, 1, 2, 3, 4, 5};
  if (dlb_tensor_allocate_shareable(cpu, f32, 2, shape, NULL, 0, &x, &err) != DLB_OK ||
      dlb_tensor_copy_from_host(x, f32, values, sizeof values, &err) != DLB_OK ||
      dlb_channel_send(channel, x, 0, &err) != DLB_OK) {
    failed("produce", "sending", &err);
    goto done;
  }
  float mine[6] = {0}, theirs[6] = {0};
  if (dlb_channel_receive(channel, &back, &err) != DLB_OK ||
      dlb_tensor_copy_to_host(x, f32, mine, sizeof mine, &err) != DLB_OK ||
      dlb_tensor_copy_to_host(back, f32, theirs, sizeof theirs, &err) != DLB_OK) {
    failed("produce", "receiving back", &err);
    goto done;
  }
  if (mine[0] != 100.0f || theirs[0] != 100.0f) {
    failed("produce", "the consumer's write is not in our tensor", NULL);
    goto done;
  }
  int32_t pair[2] = {7, 8};
  if (dlb_tensor_allocate(cpu, i32, 1, pair_shape, NULL, 0, &plain, &err) != DLB_OK ||
      dlb_tensor_copy_from_host(plain, i32, pair, sizeof pair, &err) != DLB_OK ||
      dlb_channel_send(channel, plain, DLB_SEND_COPY, &err) != DLB_OK) {
    failed("produce", "sending a copy", &err);
    goto done;
  }
  printf("produce ok\n");
  rc = 0;
done:
  dlb_tensor_free(plain);
  dlb_tensor_free(back);
  dlb_tensor_free(x);
  dlb_channel_close(channel);
  return rc;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "consume") == 0) return consume(argv[2]);
  if (argc == 3 && strcmp(argv[1], "produce") == 0) return produce(argv[2]);
  fprintf(stderr, "usage: ipc_peer consume|produce PATH\n");
  return 2;
}
