/* Prints the built library's dlb_version_string(), for the version check of suite release. */
#include <stdio.h>

#include "dlbridge/dlbridge.h"

int main(void) {
  return puts(dlb_version_string()) < 0;
}
