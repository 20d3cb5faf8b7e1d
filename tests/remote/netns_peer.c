/* netns_peer.c - the two ends of run_netns.py, which runs them in two network namespaces joined by
 * a veth pair, so that a remote channel crosses a real (virtual) network link instead of lo.
 *
 *   netns_peer available
 *       exit 0 when remote channels work in this process, else 77 with the library's reason.
 *   netns_peer serve ADDRESS KEYHEX TIMEOUT_MS STEP...
 *       listens at ADDRESS (port 0: any) with the key and the time limit, prints `ready PORT`,
 *       then serves one connection per STEP, in order:
 *         consume  the consuming half of the remote peer protocol (tests/ipc/README.md);
 *                  prints `consume ok`
 *         refuse   the accept fails with DLB_ERR_PERMISSION (a peer with another key); prints
 *                  `refuse ok`
 *         cut      receives float32 tensors (element i holds i % 1000003), printing `got N` after
 *                  each, until a receive fails; that must be DLB_ERR_PEER_CLOSED or
 *                  DLB_ERR_TIMEOUT (the link went away); prints `cut ok STATUS`
 *       and prints `serve ok`.
 *   netns_peer produce ADDRESS KEYHEX TIMEOUT_MS
 *       the producing half of the peer protocol; prints `produce ok`.
 *   netns_peer refused ADDRESS KEYHEX TIMEOUT_MS
 *       the connect must fail with DLB_ERR_PERMISSION; prints `refused ok`.
 *   netns_peer stream ADDRESS KEYHEX TIMEOUT_MS BYTES
 *       sends float32 tensors of BYTES bytes until a send fails (prints `sent N` after each).
 *
 * Every check that fails prints `netns_peer ROLE: WHAT` on stderr and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlbridge/dlbridge.h"
#include "hex_key.h"

static const char* role = "netns_peer";

static int fail(const char* what, const dlb_error* error) {
  fprintf(stderr, "netns_peer %s: %s%s%s\n", role, what, error != NULL ? ": " : "",
          error != NULL ? error->message : "");
  return 1;
}

static void say(const char* format, long value) {
  printf(format, value);
  printf("\n");
  fflush(stdout);
}

/* Options with the key KEYHEX and a time limit of TIMEOUT_MS; NULL after printing why. */
static dlb_channel_options* make_options(const char* keyhex, const char* timeout_ms) {
  unsigned char key[DLB_REMOTE_MAX_KEY_BYTES];
  size_t key_size = 0;
  if (key_from_hex(keyhex, key, sizeof key, &key_size) != 0) {
    fail("the key is not an even number of hex digits", NULL);
    return NULL;
  }
  dlb_error error;
  dlb_channel_options* options = NULL;
  if (dlb_channel_options_create(&options, &error) != DLB_OK ||
      dlb_channel_options_set_key(options, key, key_size, &error) != DLB_OK ||
      dlb_channel_options_set_timeout(options, strtoll(timeout_ms, NULL, 10) * 1000000, &error) !=
          DLB_OK) {
    fail("options", &error);
    dlb_channel_options_free(options);
    return NULL;
  }
  return options;
}

static int is_copied(const DLManagedTensorVersioned* t) {
  return (t->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0;
}

static int has_shape(const DLManagedTensorVersioned* t, DLDataType dtype, int64_t rows,
                     int64_t cols) {
  const DLTensor* d = &t->dl_tensor;
  return d->ndim == 2 && d->shape[0] == rows && d->shape[1] == cols &&
         d->dtype.code == dtype.code &&
         d->dtype.bits == dtype.bits && d->dtype.lanes == 1 && d->device.device_type == kDLCPU;
}

/* The consuming half of the peer protocol on an accepted channel. */
static int consume(dlb_channel* channel) {
  dlb_error error;
  const DLDataType f32 = {kDLFloat, 32, 1};
  const DLDataType i32 = {kDLInt, 32, 1};
  if (!dlb_channel_is_remote(channel)) return fail("the accepted channel is not remote", NULL);
  DLManagedTensorVersioned* first = NULL;
  if (dlb_channel_receive(channel, &first, &error) != DLB_OK) return fail("receive 1", &error);
  if (!has_shape(first, f32, 2, 3) || !is_copied(first)) {
    dlb_tensor_free(first);
    return fail("the first tensor is not a copied float32 [2, 3] on the cpu", NULL);
  }
  float* values = (float*)((char*)first->dl_tensor.data + first->dl_tensor.byte_offset);
  for (int i = 0; i < 6; ++i) {
    if (values[i] != (float)i) {
      dlb_tensor_free(first);
      return fail("the first tensor's values are not 0..5", NULL);
    }
  }
  values[0] = 100;
  const int sent = dlb_channel_send(channel, first, 0, &error);
  dlb_tensor_free(first);
  if (sent != DLB_OK) return fail("send back", &error);
  DLManagedTensorVersioned* second = NULL;
  if (dlb_channel_receive(channel, &second, &error) != DLB_OK) return fail("receive 2", &error);
  int good = has_shape(second, i32, 7, 8) && is_copied(second);
  const int32_t* numbers =
      (const int32_t*)((const char*)second->dl_tensor.data + second->dl_tensor.byte_offset);
  for (int i = 0; good && i < 56; ++i) good = numbers[i] == i;
  dlb_tensor_free(second);
  if (!good) return fail("the second tensor is not a copied int32 [7, 8] of 8 * i + j", NULL);
  DLManagedTensorVersioned* none = NULL;
  const int last = dlb_channel_receive(channel, &none, &error);
  if (last != DLB_ERR_PEER_CLOSED) {
    dlb_tensor_free(none);
    return fail("the receive after the producer closed did not fail DLB_ERR_PEER_CLOSED",
                last == DLB_OK ? NULL : &error);
  }
  say("consume ok", 0);
  return 0;
}

/* Receives tensors until the link goes away under them. */
static int until_cut(dlb_channel* channel) {
  dlb_error error;
  for (long n = 1;; ++n) {
    DLManagedTensorVersioned* t = NULL;
    const int status = dlb_channel_receive(channel, &t, &error);
    if (status == DLB_ERR_PEER_CLOSED || status == DLB_ERR_TIMEOUT) {
      printf("cut ok %s: %s\n", dlb_status_name(status), error.message);
      fflush(stdout);
      return 0;
    }
    if (status != DLB_OK) {
      return fail("a receive failed with neither PEER_CLOSED nor TIMEOUT", &error);
    }
    const DLTensor* d = &t->dl_tensor;
    const float* values = (const float*)((const char*)d->data + d->byte_offset);
    int good = d->ndim == 1 && d->dtype.code == kDLFloat && d->dtype.bits == 32 && is_copied(t);
    for (int64_t i = 0; good && i < d->shape[0]; i += 4099) {
      good = values[i] == (float)(i % 1000003);
    }
    dlb_tensor_free(t);
    if (!good) return fail("a streamed tensor does not hold i % 1000003", NULL);
    say("got %ld", n);
  }
}

static int serve(const char* address, const char* keyhex, const char* timeout_ms, int steps,
                 char** step) {
  role = "serve";
  dlb_channel_options* options = make_options(keyhex, timeout_ms);
  if (options == NULL) return 1;
  dlb_error error;
  dlb_channel* listener = NULL;
  const int listened = dlb_channel_listen_with_options(address, options, &listener, &error);
  dlb_channel_options_free(options);
  if (listened != DLB_OK) return fail("listen", &error);
  say("ready %ld", (long)dlb_channel_port(listener));
  int result = 0;
  for (int i = 0; i < steps && result == 0; ++i) {
    dlb_channel* channel = NULL;
    const int accepted = dlb_channel_accept(listener, &channel, &error);
    if (strcmp(step[i], "refuse") == 0) {
      if (accepted != DLB_ERR_PERMISSION) {
        dlb_channel_close(channel);
        result = fail("the peer with another key was not refused DLB_ERR_PERMISSION",
                      accepted == DLB_OK ? NULL : &error);
      } else {
        say("refuse ok", 0);
      }
      continue;
    }
    if (accepted != DLB_OK) {
      result = fail("accept", &error);
    } else if (strcmp(step[i], "consume") == 0) {
      result = consume(channel);
    } else if (strcmp(step[i], "cut") == 0) {
      say("accepted", 0);
      result = until_cut(channel);
    } else {
      result = fail("unknown step", NULL);
    }
    dlb_channel_close(channel);
  }
  dlb_channel_close(listener);
  if (result == 0) say("serve ok", 0);
  return result;
}

/* Connects to ADDRESS; DLB_OK or the failure's status (printed unless it is `expected`). */
static int connect_to(const char* address, const char* keyhex, const char* timeout_ms,
                      int expected, dlb_channel** channel) {
  dlb_channel_options* options = make_options(keyhex, timeout_ms);
  if (options == NULL) return DLB_ERR_INVALID_ARGUMENT;
  dlb_error error;
  const int status = dlb_channel_connect_with_options(address, options, channel, &error);
  dlb_channel_options_free(options);
  if (status != expected) {
    fail(expected == DLB_OK ? "connect" : "the connect was not refused DLB_ERR_PERMISSION",
         status == DLB_OK ? NULL : &error);
  }
  return status;
}

static int refused(const char* address, const char* keyhex, const char* timeout_ms) {
  role = "refused";
  dlb_channel* channel = NULL;
  const int status = connect_to(address, keyhex, timeout_ms, DLB_ERR_PERMISSION, &channel);
  dlb_channel_close(channel);
  if (status != DLB_ERR_PERMISSION) return 1;
  if (channel != NULL) return fail("a refused connect made a channel", NULL);
  say("refused ok", 0);
  return 0;
}

static int produce(const char* address, const char* keyhex, const char* timeout_ms) {
  role = "produce";
  dlb_channel* channel = NULL;
  if (connect_to(address, keyhex, timeout_ms, DLB_OK, &channel) != DLB_OK) return 1;
  dlb_error error;
  const DLDataType f32 = {kDLFloat, 32, 1};
  const DLDataType i32 = {kDLInt, 32, 1};
  const int64_t small[2] = {2, 3};
  const int64_t large[2] = {7, 8};
  DLManagedTensorVersioned* mine = NULL;
  DLManagedTensorVersioned* back = NULL;
  DLManagedTensorVersioned* numbers = NULL;
  int result = 1;
  if (dlb_tensor_allocate((DLDevice){kDLCPU, 0}, f32, 2, small, NULL, 0, &mine, &error) != DLB_OK) {
    fail("allocate", &error);
    goto done;
  }
  float* values = (float*)mine->dl_tensor.data;
  for (int i = 0; i < 6; ++i) values[i] = (float)i;
  if (dlb_channel_send(channel, mine, 0, &error) != DLB_OK) {
    fail("send 1", &error);
    goto done;
  }
  if (dlb_channel_receive(channel, &back, &error) != DLB_OK) {
    fail("receive", &error);
    goto done;
  }
  const float* returned =
      (const float*)((const char*)back->dl_tensor.data + back->dl_tensor.byte_offset);
  if (returned[0] != 100 || values[0] != 0) {
    fail("element [0, 0] is not 100 in the tensor sent back and 0 in this end's", NULL);
    goto done;
  }
  if (dlb_tensor_allocate((DLDevice){kDLCPU, 0}, i32, 2, large, NULL, 0, &numbers, &error) !=
      DLB_OK) {
    fail("allocate", &error);
    goto done;
  }
  int32_t* n = (int32_t*)numbers->dl_tensor.data;
  for (int i = 0; i < 56; ++i) n[i] = i;
  if (dlb_channel_send(channel, numbers, 0, &error) != DLB_OK) {
    fail("send 2", &error);
    goto done;
  }
  result = 0;
done:
  dlb_tensor_free(mine);
  dlb_tensor_free(back);
  dlb_tensor_free(numbers);
  dlb_channel_close(channel);
  if (result == 0) say("produce ok", 0);
  return result;
}

static int stream(const char* address, const char* keyhex, const char* timeout_ms,
                  const char* bytes) {
  role = "stream";
  dlb_channel* channel = NULL;
  if (connect_to(address, keyhex, timeout_ms, DLB_OK, &channel) != DLB_OK) return 1;
  dlb_error error;
  const int64_t elements = strtoll(bytes, NULL, 10) / 4;
  const DLDataType f32 = {kDLFloat, 32, 1};
  DLManagedTensorVersioned* t = NULL;
  if (dlb_tensor_allocate((DLDevice){kDLCPU, 0}, f32, 1, &elements, NULL, 0, &t, &error) !=
      DLB_OK) {
    dlb_channel_close(channel);
    return fail("allocate", &error);
  }
  float* values = (float*)t->dl_tensor.data;
  for (int64_t i = 0; i < elements; ++i) values[i] = (float)(i % 1000003);
  for (long n = 1;; ++n) {
    const int status = dlb_channel_send(channel, t, 0, &error);
    if (status != DLB_OK) {
      /* Expected once the link is cut: run_netns.py does not check it. */
      printf("send failed %s: %s\n", dlb_status_name(status), error.message);
      fflush(stdout);
      break;
    }
    say("sent %ld", n);
  }
  dlb_tensor_free(t);
  dlb_channel_close(channel);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 2 && strcmp(argv[1], "available") == 0) {
    dlb_error error;
    if (dlb_remote_available(&error) != DLB_OK) {
      printf("%s\n", error.message);
      return 77;
    }
    return 0;
  }
  if (argc >= 6 && strcmp(argv[1], "serve") == 0) {
    return serve(argv[2], argv[3], argv[4], argc - 5, argv + 5);
  }
  if (argc == 5 && strcmp(argv[1], "produce") == 0) return produce(argv[2], argv[3], argv[4]);
  if (argc == 5 && strcmp(argv[1], "refused") == 0) return refused(argv[2], argv[3], argv[4]);
  if (argc == 6 && strcmp(argv[1], "stream") == 0) {
    return stream(argv[2], argv[3], argv[4], argv[5]);
  }
  fprintf(stderr,
          "usage: netns_peer available\n"
          "       netns_peer serve ADDRESS KEYHEX TIMEOUT_MS consume|refuse|cut...\n"
          "       netns_peer produce|refused ADDRESS KEYHEX TIMEOUT_MS\n"
          "       netns_peer stream ADDRESS KEYHEX TIMEOUT_MS BYTES\n");
  return 2;
}
