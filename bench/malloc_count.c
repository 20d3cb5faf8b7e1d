/*
 * malloc_count.c - defines the malloc family in a shared library the bench programs link ahead of
 * libc. The dynamic linker binds every caller in the process (the program, libdlbridge,
 * libstdc++'s operator new) to these definitions first; each one forwards to glibc's own __libc_*
 * entry point, counting the call while counting is on.
 */
#define _GNU_SOURCE
#include "malloc_count.h"

#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Sanitizers replace malloc themselves; forwarding around them would mix two heaps. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define BENCH_SANITIZED 1
#endif
#endif

#if defined(__GLIBC__) && !defined(BENCH_SANITIZED) && !defined(BENCH_NO_MALLOC_HOOK)

extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t count, size_t size);
extern void* __libc_realloc(void* ptr, size_t size);
extern void* __libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void* ptr);

static int counting;
static unsigned long allocation_calls;
static unsigned long free_calls;

static void note_allocation(void) {
  if (__atomic_load_n(&counting, __ATOMIC_RELAXED)) {
    __atomic_fetch_add(&allocation_calls, 1, __ATOMIC_RELAXED);
  }
}

static void note_free(void) {
  if (__atomic_load_n(&counting, __ATOMIC_RELAXED)) {
    __atomic_fetch_add(&free_calls, 1, __ATOMIC_RELAXED);
  }
}

void* malloc(size_t size) {
  note_allocation();
  return __libc_malloc(size);
}

void* calloc(size_t count, size_t size) {
  note_allocation();
  return __libc_calloc(count, size);
}

/* A realloc of a live block may move it: counted as one allocation plus one free. */
void* realloc(void* ptr, size_t size) {
  note_allocation();
  if (ptr != NULL) note_free();
  return __libc_realloc(ptr, size);
}

void* memalign(size_t alignment, size_t size) {
  note_allocation();
  return __libc_memalign(alignment, size);
}

void* aligned_alloc(size_t alignment, size_t size) {
  note_allocation();
  return __libc_memalign(alignment, size);
}

int posix_memalign(void** out, size_t alignment, size_t size) {
  void* ptr;
  if (alignment == 0 || alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) {
    return EINVAL;
  }
  note_allocation();
  ptr = __libc_memalign(alignment, size);
  if (ptr == NULL) return ENOMEM;
  *out = ptr;
  return 0;
}

void free(void* ptr) {
  if (ptr != NULL) note_free();
  __libc_free(ptr);
}

int malloc_count_available(void) { return 1; }

void malloc_count_start(void) {
  __atomic_store_n(&allocation_calls, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&free_calls, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&counting, 1, __ATOMIC_SEQ_CST);
}

void malloc_count_stop(unsigned long* allocations, unsigned long* frees) {
  __atomic_store_n(&counting, 0, __ATOMIC_SEQ_CST);
  *allocations = __atomic_load_n(&allocation_calls, __ATOMIC_RELAXED);
  *frees = __atomic_load_n(&free_calls, __ATOMIC_RELAXED);
}

#else /* no interposition in this build */

int malloc_count_available(void) { return 0; }

void malloc_count_start(void) {}

void malloc_count_stop(unsigned long* allocations, unsigned long* frees) {
  *allocations = 0;
  *frees = 0;
}

#endif
