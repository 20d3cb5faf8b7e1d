/* interop_runner.c - the matrix: every ordered pair of agents, versioned and legacy, every case.
 * Each exchange checks: the producer's view starts where the case says (byte_offset honoured),
 * the consumer sees the same first-element address (zero copy), its own checks of layout,
 * dtype, device, flags and values passed, the checksum of what it read, READ_ONLY honoured,
 * the producer's release ran exactly once, and both sides' live counts are back where they
 * were. Odd cases are freed by the consumer on a new thread. */
#include "interop_runner.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define DLB_ERR_READ_ONLY_CODE 5 /* dlbridge.h's DLB_ERR_READ_ONLY; the runner links no core */

const interop_agent* interop_load_agent(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  interop_agent_get_fn get;
  const interop_agent* agent;
  if (lib == NULL) {
    fprintf(stderr, "cannot load agent %s: %s\n", path, dlerror());
    return NULL;
  }
  *(void**)(&get) = dlsym(lib, "interop_agent_get");
  if (get == NULL) {
    fprintf(stderr, "agent %s exports no interop_agent_get\n", path);
    return NULL;
  }
  agent = get();
  if (agent == NULL || agent->contract_version != INTEROP_CONTRACT_VERSION) {
    fprintf(stderr, "agent %s: contract version %u, expected %d\n", path,
            agent != NULL ? agent->contract_version : 0u, INTEROP_CONTRACT_VERSION);
    return NULL;
  }
  return agent;
}

/* One case of one exchange; 0 or -1 with `reason` filled. */
static int run_case(const interop_agent* p, const interop_agent* c, const interop_case* k, int legacy,
                    int on_thread, int sabotage, char* reason, size_t reason_size) {
  interop_report pr, cr;
  int64_t p_live = p->live_count(), c_live = c->live_count();
  int64_t p_rel = p->releases != NULL ? p->releases() : 0;
  int64_t esize = k->dtype_bits / 8;
  double want_sum = interop_expected_checksum(k) + (sabotage ? 1.0 : 0.0);
  void* t;
  memset(&pr, 0, sizeof pr);
  memset(&cr, 0, sizeof cr);
  t = p->produce(k, legacy, &pr);
  if (legacy && k->legacy_refused) {
    if (t != NULL) {
      snprintf(reason, reason_size, "legacy export of a READ_ONLY tensor was not refused");
      c->consume(t, k, legacy, 0, &cr); /* give it back to someone who frees it */
      return -1;
    }
    if (pr.status != DLB_ERR_READ_ONLY_CODE) {
      snprintf(reason, reason_size, "legacy export refused with status %d, expected 5 (%s)", pr.status, pr.message);
      return -1;
    }
  } else {
    if (t == NULL) {
      snprintf(reason, reason_size, "produce failed: %s", pr.message);
      return -1;
    }
    if (pr.data != pr.base + (uint64_t)(k->first * esize)) {
      snprintf(reason, reason_size, "producer's first element at base+%lld bytes, expected base+%lld",
               (long long)(pr.data - pr.base), (long long)(k->first * esize));
      c->consume(t, k, legacy, 0, &cr);
      return -1;
    }
    if (c->consume(t, k, legacy, on_thread, &cr) != 0) {
      snprintf(reason, reason_size, "consumer: %s", cr.message);
      return -1;
    }
    if (cr.data != pr.data) {
      snprintf(reason, reason_size, "consumer sees data at %#llx, producer exported %#llx (a copy?)",
               (unsigned long long)cr.data, (unsigned long long)pr.data);
      return -1;
    }
    if (cr.checksum != want_sum) {
      snprintf(reason, reason_size, "checksum %g, expected %g", cr.checksum, want_sum);
      return -1;
    }
    if ((k->flags & 1) && !legacy && cr.write_refused != 1) {
      snprintf(reason, reason_size, "a write into the READ_ONLY tensor was %s",
               cr.write_refused == 0 ? "allowed" : "not tried");
      return -1;
    }
  }
  if (p->live_count() != p_live || c->live_count() != c_live) {
    snprintf(reason, reason_size, "live counts: producer %lld -> %lld, consumer %lld -> %lld",
             (long long)p_live, (long long)p->live_count(), (long long)c_live, (long long)c->live_count());
    return -1;
  }
  if (p->releases != NULL && p->releases() != p_rel + 1) {
    snprintf(reason, reason_size, "producer's base released %lld times, expected once",
             (long long)(p->releases() - p_rel));
    return -1;
  }
  return 0;
}

int interop_run_matrix(const interop_agent* const* agents, int count, const char* host,
                       const char* must_include, int sabotage) {
  int passed = 0, failed = 0, i, j, mode, n;
  printf("interop matrix (host: %s%s): %d cases per cell, versioned and legacy\n", host,
         sabotage ? ", SELF-TEST: every expected checksum is wrong, every cell must FAIL" : "",
         interop_case_count);
  printf("%-22s %-10s %s\n", "producer -> consumer", "versioned", "legacy");
  for (i = 0; i < count; ++i) {
    for (j = 0; j < count; ++j) {
      const interop_agent* p = agents[i];
      const interop_agent* c = agents[j];
      char pair[64];
      char reasons[2][800];
      int ok[2];
      if (must_include != NULL && strcmp(p->name, must_include) != 0 && strcmp(c->name, must_include) != 0)
        continue;
      for (mode = 0; mode < 2; ++mode) {
        ok[mode] = 1;
        reasons[mode][0] = '\0';
        for (n = 0; n < interop_case_count && ok[mode]; ++n) {
          char why[512];
          if (run_case(p, c, &interop_cases[n], mode, n % 2, sabotage, why, sizeof why) != 0) {
            ok[mode] = 0;
            snprintf(reasons[mode], sizeof reasons[mode], "case '%s': %s", interop_cases[n].name, why);
          }
        }
        if (sabotage ? !ok[mode] : ok[mode]) ++passed;
        else ++failed;
      }
      snprintf(pair, sizeof pair, "%s -> %s", p->name, c->name);
      printf("%-22s %-10s %s\n", pair, ok[0] ? "PASS" : "FAIL", ok[1] ? "PASS" : "FAIL");
      for (mode = 0; mode < 2; ++mode)
        if (!ok[mode]) printf("    %s: %s\n", mode ? "legacy" : "versioned", reasons[mode]);
    }
  }
  fflush(stdout);
  printf("%d passed, %d failed\n", passed, failed);
  fflush(stdout);
  return failed;
}
