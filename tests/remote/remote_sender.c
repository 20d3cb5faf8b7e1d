/* remote_sender.c - the other process of suite remote's fault tests: connects to ADDRESS with the
 * key KEYHEX and sends COUNT float32 tensors of BYTES bytes each (element i holds i % 1000003, as the test checks), then waits to
 * be killed. `remote_sender ADDRESS KEYHEX BYTES COUNT`. Prints `sent N` after each send. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlbridge/dlbridge.h"
#include "hex_key.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: remote_sender ADDRESS KEYHEX BYTES COUNT\n");
    return 2;
  }
  unsigned char key[DLB_REMOTE_MAX_KEY_BYTES];
  size_t key_size = 0;
  if (key_from_hex(argv[2], key, sizeof key, &key_size) != 0) {
    fprintf(stderr, "remote_sender: bad key\n");
    return 2;
  }
  const int64_t elements = strtoll(argv[3], NULL, 10) / 4;
  const long count = strtol(argv[4], NULL, 10);
  dlb_error error;
  dlb_channel_options* options = NULL;
  dlb_channel* channel = NULL;
  if (dlb_channel_options_create(&options, &error) != DLB_OK ||
      dlb_channel_options_set_key(options, key, key_size, &error) != DLB_OK ||
      dlb_channel_options_set_max_tensor_bytes(options, UINT64_MAX, &error) != DLB_OK ||
      dlb_channel_connect_with_options(argv[1], options, &channel, &error) != DLB_OK) {
    fprintf(stderr, "remote_sender: %s\n", error.message);
    return 1;
  }
  DLManagedTensorVersioned* tensor = NULL;
  const DLDataType f32 = {kDLFloat, 32, 1};
  if (dlb_tensor_allocate((DLDevice){kDLCPU, 0}, f32, 1, &elements, NULL, 0, &tensor, &error) !=
      DLB_OK) {
    fprintf(stderr, "remote_sender: %s\n", error.message);
    return 1;
  }
  float* values = (float*)tensor->dl_tensor.data;
  for (int64_t i = 0; i < elements; ++i) values[i] = (float)(i % 1000003);
  for (long n = 0; n < count; ++n) {
    if (dlb_channel_send(channel, tensor, 0, &error) != DLB_OK) {
      fprintf(stderr, "remote_sender: send: %s\n", error.message);
      return 1;
    }
    printf("sent %ld\n", n + 1);
    fflush(stdout);
  }
  for (;;) pause();
}
