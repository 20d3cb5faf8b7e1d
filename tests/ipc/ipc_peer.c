/* ipc_peer.c - the C peer of suite ipc's exchange across languages (README.md, "The peer
 * protocol"): `ipc_peer consume PATH` or `ipc_peer produce PATH`, and of suite remote's pairs
 * (`ipc_peer remote-consume KEYHEX [SCHEME]`, `ipc_peer remote-produce ADDRESS KEYHEX`), with the
 * public C API alone. `ipc_peer remote-available` is run_languages.py's probe: exit 0, or 77 and
 * the core's reason where this machine cannot make remote channels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlbridge/dlbridge.h"
#include "../remote/hex_key.h"

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

/* ---- the remote peer protocol ----------------------------------------------------------- */

/* Options holding the key that KEYHEX spells (two hex digits a byte); the core checks its length.
 * NULL after printing why. */
static dlb_channel_options* options_with_key(const char* role, const char* hex) {
  unsigned char key[DLB_REMOTE_MAX_KEY_BYTES + 1];
  size_t size = 0;
  if (key_from_hex(hex, key, sizeof key, &size) != 0) {
    failed(role, "KEYHEX is not two hex digits a byte within the longest key", NULL);
    return NULL;
  }
  dlb_error err;
  dlb_channel_options* options = NULL;
  if (dlb_channel_options_create(&options, &err) != DLB_OK) {
    failed(role, "making the options", &err);
    return NULL;
  }
  if (dlb_channel_options_set_key(options, key, size, &err) != DLB_OK) {
    failed(role, "setting the key", &err);
    dlb_channel_options_free(options);
    return NULL;
  }
  return options;
}

/* 1 when `t` is a compact tensor of `dtype` and `rows` x `cols` with IS_COPIED set. */
static int is_copied_matrix(const DLManagedTensorVersioned* t, DLDataType dtype, int64_t rows,
                            int64_t cols) {
  const DLTensor* d = &t->dl_tensor;
  return d->ndim == 2 && d->shape[0] == rows && d->shape[1] == cols &&
         d->dtype.code == dtype.code && d->dtype.bits == dtype.bits &&
         d->dtype.lanes == dtype.lanes && d->device.device_type == kDLCPU &&
         (t->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0;
}

static int remote_consume(const char* hex, const char* scheme) {
  const char* role = "remote-consume";
  const DLDataType f32 = {kDLFloat, 32, 1}, i32 = {kDLInt, 32, 1};
  dlb_error err;
  dlb_channel *listener = NULL, *channel = NULL;
  DLManagedTensorVersioned *first = NULL, *second = NULL, *extra = NULL;
  int rc = 1;
  char address[64];
  snprintf(address, sizeof address, "%s://127.0.0.1:0", scheme);
  dlb_channel_options* options = options_with_key(role, hex);
  if (options == NULL) return 1;
  if (dlb_channel_listen_with_options(address, options, &listener, &err) != DLB_OK) {
    failed(role, "listen", &err);
    goto done;
  }
  printf("ready %d\n", (int)dlb_channel_port(listener));
  fflush(stdout);
  if (dlb_channel_accept(listener, &channel, &err) != DLB_OK) {
    failed(role, "accept", &err);
    goto done;
  }
  if (!dlb_channel_is_remote(channel)) {
    failed(role, "the accepted channel is not remote", NULL);
    goto done;
  }
  float values[6] = {0};
  if (dlb_channel_receive(channel, &first, &err) != DLB_OK) {
    failed(role, "receive", &err);
    goto done;
  }
  if (!is_copied_matrix(first, f32, 2, 3) ||
      dlb_tensor_copy_to_host(first, f32, values, sizeof values, &err) != DLB_OK) {
    failed(role, "the first tensor is not a float32 [2, 3] with IS_COPIED", NULL);
    goto done;
  }
  for (int i = 0; i < 6; ++i) {
    if (values[i] != (float)i) {
      failed(role, "the first tensor does not hold 0..5", NULL);
      goto done;
    }
  }
  values[0] = 100.0f;
  if (dlb_tensor_copy_from_host(first, f32, values, sizeof values, &err) != DLB_OK ||
      dlb_channel_send(channel, first, 0, &err) != DLB_OK) {
    failed(role, "writing and sending back", &err);
    goto done;
  }
  int32_t grid[7 * 8] = {0};
  if (dlb_channel_receive(channel, &second, &err) != DLB_OK) {
    failed(role, "receiving the second tensor", &err);
    goto done;
  }
  if (!is_copied_matrix(second, i32, 7, 8) ||
      dlb_tensor_copy_to_host(second, i32, grid, sizeof grid, &err) != DLB_OK) {
    failed(role, "the second tensor is not an int32 [7, 8] with IS_COPIED", NULL);
    goto done;
  }
  for (int i = 0; i < 7 * 8; ++i) {
    if (grid[i] != i) { /* 8 * row + column, row-major */
      failed(role, "the second tensor does not hold 8 * i + j", NULL);
      goto done;
    }
  }
  if (dlb_channel_receive(channel, &extra, &err) != DLB_ERR_PEER_CLOSED) {
    failed(role, "receiving after the peer closed did not give DLB_ERR_PEER_CLOSED", &err);
    goto done;
  }
  printf("consume ok\n");
  rc = 0;
done:
  dlb_tensor_free(extra);
  dlb_tensor_free(second);
  dlb_tensor_free(first);
  dlb_channel_close(channel);
  dlb_channel_close(listener);
  dlb_channel_options_free(options);
  return rc;
}

static int remote_produce(const char* address, const char* hex) {
  const char* role = "remote-produce";
  const DLDevice cpu = {kDLCPU, 0};
  const DLDataType f32 = {kDLFloat, 32, 1}, i32 = {kDLInt, 32, 1};
  const int64_t shape[2] = {2, 3}, grid_shape[2] = {7, 8};
  dlb_error err;
  dlb_channel* channel = NULL;
  DLManagedTensorVersioned *x = NULL, *back = NULL, *grid = NULL;
  int rc = 1;
  dlb_channel_options* options = options_with_key(role, hex);
  if (options == NULL) return 1;
  if (dlb_channel_connect_with_options(address, options, &channel, &err) != DLB_OK) {
    failed(role, "connect", &err);
    goto done;
  }
  float values[6] = {0, 1, 2, 3, 4, 5};
  if (dlb_tensor_allocate(cpu, f32, 2, shape, NULL, 0, &x, &err) != DLB_OK ||
      dlb_tensor_copy_from_host(x, f32, values, sizeof values, &err) != DLB_OK ||
      dlb_channel_send(channel, x, 0, &err) != DLB_OK) {
    failed(role, "sending", &err);
    goto done;
  }
  float mine[6] = {0}, theirs[6] = {0};
  if (dlb_channel_receive(channel, &back, &err) != DLB_OK ||
      dlb_tensor_copy_to_host(x, f32, mine, sizeof mine, &err) != DLB_OK ||
      dlb_tensor_copy_to_host(back, f32, theirs, sizeof theirs, &err) != DLB_OK) {
    failed(role, "receiving back", &err);
    goto done;
  }
  if (theirs[0] != 100.0f || mine[0] != 0.0f) {
    failed(role, "element [0, 0] is not 100 in the tensor received and 0 in our own", NULL);
    goto done;
  }
  int32_t values_grid[7 * 8];
  for (int i = 0; i < 7 * 8; ++i) values_grid[i] = i; /* 8 * row + column, row-major */
  if (dlb_tensor_allocate(cpu, i32, 2, grid_shape, NULL, 0, &grid, &err) != DLB_OK ||
      dlb_tensor_copy_from_host(grid, i32, values_grid, sizeof values_grid, &err) != DLB_OK ||
      dlb_channel_send(channel, grid, 0, &err) != DLB_OK) {
    failed(role, "sending the second tensor", &err);
    goto done;
  }
  printf("produce ok\n");
  rc = 0;
done:
  dlb_tensor_free(grid);
  dlb_tensor_free(back);
  dlb_tensor_free(x);
  dlb_channel_close(channel);
  dlb_channel_options_free(options);
  return rc;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "consume") == 0) return consume(argv[2]);
  if (argc == 3 && strcmp(argv[1], "produce") == 0) return produce(argv[2]);
  if ((argc == 3 || argc == 4) && strcmp(argv[1], "remote-consume") == 0) {
    return remote_consume(argv[2], argc == 4 ? argv[3] : "tcp");
  }
  if (argc == 4 && strcmp(argv[1], "remote-produce") == 0) return remote_produce(argv[2], argv[3]);
  if (argc == 2 && strcmp(argv[1], "remote-available") == 0) {
    dlb_error err;
    if (dlb_remote_available(&err) == DLB_OK) return 0;
    printf("%s\n", err.message);
    return 77;
  }
  fprintf(stderr,
          "usage: ipc_peer consume|produce PATH\n"
          "       ipc_peer remote-consume KEYHEX [SCHEME]\n"
          "       ipc_peer remote-produce ADDRESS KEYHEX\n"
          "       ipc_peer remote-available\n");
  return 2;
}
