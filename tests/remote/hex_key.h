/* hex_key.h - the key that a test program's KEYHEX argument spells, two hex digits a byte (the
 * test peers of suites remote and ipc-languages pass keys so on their command lines). */
#ifndef DLBRIDGE_TESTS_REMOTE_HEX_KEY_H_
#define DLBRIDGE_TESTS_REMOTE_HEX_KEY_H_

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Writes the bytes `hex` spells into `out` (room for `capacity`) and their count into *size;
 * -1 for an odd count of digits, a character that is not a hex digit, or more than `capacity`
 * bytes. */
static inline int key_from_hex(const char* hex, unsigned char* out, size_t capacity,
                               size_t* size) {
  const size_t length = strlen(hex);
  if (length % 2 != 0 || length / 2 > capacity) return -1;
  for (size_t i = 0; i < length / 2; ++i) {
    const char pair[3] = {hex[2 * i], hex[2 * i + 1], 0};
    char* end = NULL;
    out[i] = (unsigned char)strtoul(pair, &end, 16);
    if (end != pair + 2) return -1;
  }
  *size = length / 2;
  return 0;
}

#endif /* DLBRIDGE_TESTS_REMOTE_HEX_KEY_H_ */
