/* ipc_peer.c - C's peer in suites ipc-languages and remote (README.md, "The peer protocol" and
 * "The remote peer protocol"), with the public C API alone: `ipc_peer consume PATH`,
 * `ipc_peer produce PATH`, `ipc_peer remote-consume KEYHEX [SCHEME]` and
 * `ipc_peer remote-produce ADDRESS KEYHEX`. The other languages play the same roles as steps of
 * their parity programs, which run_languages.py writes out; C's rows are code, so its roles are
 * too. `ipc_peer remote-available` is run_languages.py's probe: exit 0, or 77 and the core's
 * reason where this machine cannot make remote channels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlbridge/dlbridge.h"
#include "../remote/hex_key.h"

static const DLDataType kFloat32 = {kDLFloat, 32, 1};
static const DLDevice kCpu = {kDLCPU, 0};

/* One role's run: its name, the channel options (a remote role's key; NULL for a local one) and
 * what it must free. */
typedef struct {
  const char* role;
  dlb_channel_options* options;
  dlb_channel *listener, *channel;
  DLManagedTensorVersioned* tensors[4];
} run;

static int failed(const run* r, const char* what, const dlb_error* error) {
  fprintf(stderr, "c %s: %s%s%s\n", r->role, what, error ? ": " : "", error ? error->message : "");
  return 1;
}

static int finish(run* r, int rc) {
  for (int i = 0; i < 4; ++i) dlb_tensor_free(r->tensors[i]);
  dlb_channel_close(r->channel);
  dlb_channel_close(r->listener);
  dlb_channel_options_free(r->options);
  if (rc == 0) printf("%s ok\n", strstr(r->role, "consume") ? "consume" : "produce");
  return rc;
}

/* Sets r->options to options holding the key that KEYHEX spells (two hex digits a byte; the
 * core checks its length). 0, or 1 after printing why. */
static int use_key(run* r, const char* hex) {
  unsigned char key[DLB_REMOTE_MAX_KEY_BYTES + 1];
  size_t size = 0;
  dlb_error err;
  if (key_from_hex(hex, key, sizeof key, &size) != 0) {
    return failed(r, "KEYHEX is not two hex digits a byte within the longest key", NULL);
  }
  if (dlb_channel_options_create(&r->options, &err) != DLB_OK ||
      dlb_channel_options_set_key(r->options, key, size, &err) != DLB_OK) {
    return failed(r, "making the options with the key", &err);
  }
  return 0;
}

/* A float32 tensor of `rows` x `cols` holding 0, 1, 2, ... in C order (shareable memory or
 * ordinary), as r->tensors[slot]; 0, or 1 after printing why. */
static int make_iota(run* r, int slot, int64_t rows, int64_t cols, int shareable) {
  const int64_t shape[2] = {rows, cols};
  float values[7 * 8];
  dlb_error err;
  for (int i = 0; i < rows * cols; ++i) values[i] = (float)i;
  DLManagedTensorVersioned** out = &r->tensors[slot];
  int status = shareable
                   ? dlb_tensor_allocate_shareable(kCpu, kFloat32, 2, shape, NULL, 0, out, &err)
                   : dlb_tensor_allocate(kCpu, kFloat32, 2, shape, NULL, 0, out, &err);
  if (status == DLB_OK) {
    status = dlb_tensor_copy_from_host(r->tensors[slot], kFloat32, values,
                                       (size_t)(rows * cols) * sizeof(float), &err);
  }
  return status == DLB_OK ? 0 : failed(r, "making a tensor", &err);
}

/* 0 when the tensor received into r->tensors[slot] is a float32 `rows` x `cols` on the cpu
 * holding 0, 1, 2, ... with exactly the flags `flags`; else 1 after printing why. */
static int check_iota(run* r, int slot, int64_t rows, int64_t cols, uint64_t flags) {
  const DLManagedTensorVersioned* t = r->tensors[slot];
  const DLTensor* d = &t->dl_tensor;
  float values[7 * 8];
  dlb_error err;
  if (d->ndim != 2 || d->shape[0] != rows || d->shape[1] != cols ||
      d->dtype.code != kDLFloat || d->dtype.bits != 32 || d->dtype.lanes != 1 ||
      d->device.device_type != kDLCPU || t->flags != flags) {
    return failed(r, "a tensor received is not the float32 matrix of the protocol", NULL);
  }
  if (dlb_tensor_copy_to_host(t, kFloat32, values, (size_t)(rows * cols) * sizeof(float), &err) !=
      DLB_OK) {
    return failed(r, "reading a tensor received", &err);
  }
  for (int i = 0; i < rows * cols; ++i) {
    if (values[i] != (float)i) return failed(r, "a tensor received does not hold 0, 1, 2...", NULL);
  }
  return 0;
}

/* Element [0, 0] of a float32 matrix, for reading and writing (NULL when refused). */
static float* first_element(const DLManagedTensorVersioned* t) {
  static const int64_t origin[2] = {0, 0};
  void* data = NULL;
  dlb_error err;
  dlb_tensor_typed_element(t, kFloat32, DLB_ACCESS_WRITE, 2, origin, &data, &err);
  return (float*)data;
}

/* The consumer: listens at `address` (a path, or SCHEME://127.0.0.1:0 with r->options). */
static int consume(run* r, const char* address) {
  const int remote = r->options != NULL;
  const uint64_t copied = DLPACK_FLAG_BITMASK_IS_COPIED;
  dlb_error err;
  int32_t pid = 0;
  uint32_t uid = 0;
  if (dlb_channel_listen_with_options(address, r->options, &r->listener, &err) != DLB_OK) {
    return finish(r, failed(r, "listen", &err));
  }
  if (remote) {
    printf("ready %d\n", (int)dlb_channel_port(r->listener));
  } else {
    printf("ready\n");
  }
  fflush(stdout);
  if (dlb_channel_accept(r->listener, &r->channel, &err) != DLB_OK) {
    return finish(r, failed(r, "accept", &err));
  }
  if (remote ? !dlb_channel_is_remote(r->channel)
             : dlb_channel_peer(r->channel, &pid, &uid, &err) != DLB_OK || pid <= 0 ||
                   uid != geteuid()) {
    return finish(r, failed(r, remote ? "the channel is not remote" : "the peer's pid, uid", NULL));
  }
  if (dlb_channel_receive(r->channel, &r->tensors[0], &err) != DLB_OK) {
    return finish(r, failed(r, "receive", &err));
  }
  if (check_iota(r, 0, 2, 3, remote ? copied : 0) != 0) return finish(r, 1);
  float* written = first_element(r->tensors[0]);
  if (written) *written = 100.0f;
  if (!written || dlb_channel_send(r->channel, r->tensors[0], 0, &err) != DLB_OK) {
    return finish(r, failed(r, "writing and sending back", &err));
  }
  if (dlb_channel_receive(r->channel, &r->tensors[1], &err) != DLB_OK) {
    return finish(r, failed(r, "receiving the second tensor", &err));
  }
  if (check_iota(r, 1, 7, 8, copied) != 0) return finish(r, 1);
  if (dlb_channel_receive(r->channel, &r->tensors[2], &err) != DLB_ERR_PEER_CLOSED ||
      (!remote && strcmp(err.message, "the peer closed the channel") != 0)) {
    return finish(r, failed(r, "receiving after the peer closed", &err));
  }
  return finish(r, 0);
}

/* The producer: connects to `address` (with r->options when remote). */
static int produce(run* r, const char* address) {
  const int remote = r->options != NULL;
  dlb_error err;
  if (dlb_channel_connect_with_options(address, r->options, &r->channel, &err) != DLB_OK) {
    return finish(r, failed(r, "connect", &err));
  }
  if (make_iota(r, 0, 2, 3, !remote) != 0) return finish(r, 1);
  if (dlb_channel_send(r->channel, r->tensors[0], 0, &err) != DLB_OK ||
      dlb_channel_receive(r->channel, &r->tensors[1], &err) != DLB_OK) {
    return finish(r, failed(r, "sending and receiving back", &err));
  }
  /* Shared memory shows the consumer's write in our own tensor; a remote copy does not. */
  const float *theirs = first_element(r->tensors[1]), *mine = first_element(r->tensors[0]);
  if (!theirs || !mine || *theirs != 100.0f || *mine != (remote ? 0.0f : 100.0f)) {
    return finish(r, failed(r, "element [0, 0] is not what the protocol says", NULL));
  }
  if (make_iota(r, 2, 7, 8, 0) != 0) return finish(r, 1);
  if (dlb_channel_send(r->channel, r->tensors[2], remote ? 0 : DLB_SEND_COPY, &err) != DLB_OK) {
    return finish(r, failed(r, "sending the second tensor", &err));
  }
  return finish(r, 0);
}

int main(int argc, char** argv) {
  run r = {argc > 1 ? argv[1] : "", NULL, NULL, NULL, {NULL}};
  if (argc == 3 && strcmp(argv[1], "consume") == 0) return consume(&r, argv[2]);
  if (argc == 3 && strcmp(argv[1], "produce") == 0) return produce(&r, argv[2]);
  if ((argc == 3 || argc == 4) && strcmp(argv[1], "remote-consume") == 0) {
    char address[64];
    snprintf(address, sizeof address, "%s://127.0.0.1:0", argc == 4 ? argv[3] : "tcp");
    return use_key(&r, argv[2]) != 0 ? 1 : consume(&r, address);
  }
  if (argc == 4 && strcmp(argv[1], "remote-produce") == 0) {
    return use_key(&r, argv[3]) != 0 ? 1 : produce(&r, argv[2]);
  }
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
