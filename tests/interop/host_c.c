/* host_c.c - the C host of the interop matrix: loads every adapter library named on the command
 * line and runs every ordered pair. Usage: interop_host_c [--self-test] ADAPTER.so...
 * --self-test runs with wrong expectations and passes only if every cell FAILs. */
#include <stdio.h>
#include <string.h>

#include "interop_runner.h"

#define MAX_AGENTS 16

int main(int argc, char** argv) {
  const dlpc_subject* agents[MAX_AGENTS];
  int count = 0, sabotage = 0, i;
  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--self-test") == 0) {
      sabotage = 1;
      continue;
    }
    if (count == MAX_AGENTS) {
      fprintf(stderr, "too many adapters\n");
      return 2;
    }
    agents[count] = interop_load_subject(argv[i]);
    if (agents[count] == NULL) return 1;
    ++count;
  }
  if (count == 0) {
    fprintf(stderr, "usage: %s [--self-test] ADAPTER.so...\n", argv[0]);
    return 2;
  }
  return interop_run_matrix(agents, count, "c", NULL, sabotage) == 0 ? 0 : 1;
}
