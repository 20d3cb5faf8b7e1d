/* The DLPack conformance kit: the fault guard (dlpc_set_fault_guard), which turns a SIGSEGV or
 * SIGBUS raised while the subject runs into a failed case, and the calls into the subject on this
 * thread or on a new one. */
#define _GNU_SOURCE
#include "conformance_internal.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

/* ---- fault guard and threads ---------------------------------------------------------------- */

static int g_guard = 0;
static sigjmp_buf g_jump;
static volatile sig_atomic_t g_armed = 0;
volatile void* g_fault_address = NULL;

void dlpc_set_fault_guard(int enabled) { g_guard = enabled; }

static void on_fault(int sig, siginfo_t* info, void* uctx) {
  (void)uctx;
  if (!g_armed) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  g_armed = 0;
  g_fault_address = info->si_addr;
  siglongjmp(g_jump, 1);
}

/* Runs fn(arg) on this thread (other_thread == 0) or on a new one. Returns 1 if the guard
 * caught a fault. */
typedef struct thread_call {
  guarded_fn fn;
  void* arg;
} thread_call;

static void* thread_main(void* p) {
  thread_call* call = (thread_call*)p;
  call->fn(call->arg);
  return NULL;
}

int call_subject(guarded_fn fn, void* arg, int other_thread) {
  if (other_thread) {
    /* The guard covers the calling thread only; a fault on the other thread ends the process. */
    thread_call call = {fn, arg};
    pthread_t th;
    if (pthread_create(&th, NULL, thread_main, &call) != 0) {
      fn(arg);
      return 0;
    }
    pthread_join(th, NULL);
    return 0;
  }
  if (!g_guard) {
    fn(arg);
    return 0;
  }
  struct sigaction sa, old_segv, old_bus;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
  int faulted = 0;
  if (sigsetjmp(g_jump, 1) == 0) {
    g_armed = 1;
    fn(arg);
    g_armed = 0;
  } else {
    faulted = 1;
  }
  sigaction(SIGSEGV, &old_segv, NULL);
  sigaction(SIGBUS, &old_bus, NULL);
  return faulted;
}
