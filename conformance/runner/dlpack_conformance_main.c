/* dlpack-conformance: runs the DLPack conformance kit against a subject library.
 *
 *   dlpack-conformance --subject libfoo.so [--only CHECK] [--no-fault-guard] [--list]
 *
 * Prints one line per case (PASS/FAIL/SKIP, the case, the rule, the reason), then a table of
 * checks by role and protocol, then the line "N passed, N failed, N skipped". Exits 1 if a case
 * failed, 2 on a usage or loading error. --no-fault-guard leaves a fault in the subject to its
 * own signal handling (the process ends; no case is told): for a subject with a runtime of its
 * own, such as a Go c-shared library or a library that starts a JVM or Mono, which a jump out
 * of a signal handler would corrupt. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlpack_conformance.h"

static const char* kOutcome[] = {"PASS", "FAIL", "SKIP"};
static const char* kColumn[] = {"producer/versioned", "producer/legacy", "consumer/versioned",
                                "consumer/legacy"};

static void usage(void) {
  fprintf(stderr,
          "usage: dlpack-conformance --subject LIBRARY.so [--only CHECK] [--no-fault-guard] [--list]\n");
}

int main(int argc, char** argv) {
  const char* path = NULL;
  const char* only = NULL;
  int list = 0;
  int fault_guard = 1;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--subject") && i + 1 < argc) path = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--list")) list = 1;
    else if (!strcmp(argv[i], "--no-fault-guard")) fault_guard = 0;
    else {
      usage();
      return 2;
    }
  }
  int32_t n = dlpc_case_count();
  if (list) {
    for (int32_t i = 0; i < n; ++i) {
      const dlpc_case* c = dlpc_case_get(i);
      printf("%2d  %-22s %-18s %s: %s\n", c->id, c->check, kColumn[c->role * 2 + c->protocol], c->rule,
             c->passes);
    }
    return 0;
  }
  if (!path) {
    usage();
    return 2;
  }
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlpack-conformance: cannot load %s: %s\n", path, dlerror());
    return 2;
  }
  dlpc_subject_entry_fn entry;
  *(void**)&entry = dlsym(lib, DLPC_SUBJECT_SYMBOL);
  if (!entry) {
    fprintf(stderr, "dlpack-conformance: %s exports no %s()\n", path, DLPC_SUBJECT_SYMBOL);
    return 2;
  }
  const dlpc_subject* subject = entry();
  if (!subject) {
    fprintf(stderr, "dlpack-conformance: %s() returned NULL\n", DLPC_SUBJECT_SYMBOL);
    return 2;
  }
  printf("DLPack conformance kit, contract %d: subject %s (%s)\n", DLPC_CONTRACT_VERSION,
         subject->name ? subject->name : "?", path);
  /* A native subject: a fault in it becomes a FAIL of its case instead of a crash. */
  dlpc_set_fault_guard(fault_guard);
  int totals[3] = {0, 0, 0};
  int* outcome = (int*)malloc(sizeof(int) * (size_t)n);
  for (int32_t i = 0; i < n; ++i) {
    const dlpc_case* c = dlpc_case_get(i);
    outcome[i] = -1;
    if (only && strcmp(only, c->check)) continue;
    dlpc_result r;
    dlpc_run_case(subject, i, &r);
    outcome[i] = r.outcome;
    ++totals[r.outcome];
    printf("%s  %-22s %-18s [%s] %s\n", kOutcome[r.outcome], c->check, kColumn[c->role * 2 + c->protocol],
           c->rule, r.reason);
    fflush(stdout);
  }
  /* The table: one row per check, one column per role and protocol. */
  printf("\n%-22s | %-18s | %-15s | %-18s | %-15s\n", "check", kColumn[0], kColumn[1], kColumn[2], kColumn[3]);
  printf("-----------------------+--------------------+-----------------+--------------------+----------------\n");
  for (int32_t i = 0; i < n;) {
    const char* check = dlpc_case_get(i)->check;
    const char* cell[4] = {"-", "-", "-", "-"};
    for (; i < n && !strcmp(dlpc_case_get(i)->check, check); ++i) {
      const dlpc_case* c = dlpc_case_get(i);
      if (outcome[i] >= 0) cell[c->role * 2 + c->protocol] = kOutcome[outcome[i]];
    }
    if (only && strcmp(only, check)) continue;
    printf("%-22s | %-18s | %-15s | %-18s | %-15s\n", check, cell[0], cell[1], cell[2], cell[3]);
  }
  printf("\n%d passed, %d failed, %d skipped\n", totals[0], totals[1], totals[2]);
  free(outcome);
  return totals[1] ? 1 : 0;
}
