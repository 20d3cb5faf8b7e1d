/* dlbx_release.c - see dlbx_release.h.
 *
 * The queue is Vyukov's bounded multi-producer multi-consumer ring: each cell carries a sequence
 * number that says whose turn it is (a pusher's at position p when it equals p, a drainer's when
 * it equals p + 1), so a push or a take is one compare-and-swap on a position plus two stores,
 * and never waits for another thread. Sequences are stored minus the cell's index, so that the
 * zero-initialised array is the ring's initial state and nothing needs a constructor. */
#include "dlbx_release.h"

#include <sched.h>
#include <stdlib.h>

#define RING_BITS 12
#define RING_SIZE ((uint64_t)1 << RING_BITS)
#define RING_MASK (RING_SIZE - 1)

typedef struct ring_cell {
  uint64_t sequence; /* minus the cell's index */
  int64_t token;
} ring_cell;

/* The positions sit on cache lines of their own: pushers and drainers do not share a line. */
typedef struct position {
  uint64_t value;
  char padding[64 - sizeof(uint64_t)];
} position;

static ring_cell g_ring[RING_SIZE];
static position g_push __attribute__((aligned(64)));
static position g_take __attribute__((aligned(64)));
static int64_t g_queued __attribute__((aligned(64)));

/* The overflow list, used only while the ring is full: pushed lock-free, taken whole. */
typedef struct overflow_node {
  int64_t token;
  struct overflow_node* next;
} overflow_node;
static overflow_node* g_overflow;

/* While dlbx_tensor_free runs on this thread: where a release inside it leaves its token. */
static __thread int64_t* t_handback;

static int ring_push(int64_t token) {
  uint64_t pos = __atomic_load_n(&g_push.value, __ATOMIC_RELAXED);
  for (;;) {
    ring_cell* cell = &g_ring[pos & RING_MASK];
    const uint64_t sequence = __atomic_load_n(&cell->sequence, __ATOMIC_ACQUIRE) + (pos & RING_MASK);
    const int64_t lead = (int64_t)(sequence - pos);
    if (lead == 0) {
      if (__atomic_compare_exchange_n(&g_push.value, &pos, pos + 1, 1, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
        cell->token = token;
        __atomic_store_n(&cell->sequence, pos + 1 - (pos & RING_MASK), __ATOMIC_RELEASE);
        return 1;
      }
    } else if (lead < 0) {
      return 0; /* full: the drainers are a whole ring behind */
    } else {
      pos = __atomic_load_n(&g_push.value, __ATOMIC_RELAXED);
    }
  }
}

static int ring_take(int64_t* token) {
  uint64_t pos = __atomic_load_n(&g_take.value, __ATOMIC_RELAXED);
  for (;;) {
    ring_cell* cell = &g_ring[pos & RING_MASK];
    const uint64_t sequence = __atomic_load_n(&cell->sequence, __ATOMIC_ACQUIRE) + (pos & RING_MASK);
    const int64_t lead = (int64_t)(sequence - (pos + 1));
    if (lead == 0) {
      if (__atomic_compare_exchange_n(&g_take.value, &pos, pos + 1, 1, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
        *token = cell->token;
        __atomic_store_n(&cell->sequence, pos + RING_SIZE - (pos & RING_MASK), __ATOMIC_RELEASE);
        return 1;
      }
    } else if (lead < 0) {
      return 0; /* empty */
    } else {
      pos = __atomic_load_n(&g_take.value, __ATOMIC_RELAXED);
    }
  }
}

static void overflow_push_chain(overflow_node* first, overflow_node* last) {
  overflow_node* head = __atomic_load_n(&g_overflow, __ATOMIC_RELAXED);
  do {
    last->next = head;
  } while (!__atomic_compare_exchange_n(&g_overflow, &head, first, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
}

static void queue_push(int64_t token) {
  __atomic_add_fetch(&g_queued, 1, __ATOMIC_RELEASE);
  for (;;) {
    overflow_node* node;
    if (ring_push(token)) return;
    node = (overflow_node*)malloc(sizeof *node);
    if (node != NULL) {
      node->token = token;
      overflow_push_chain(node, node);
      return;
    }
    /* No memory for a node either: a token is never dropped, so wait for a drainer. */
    sched_yield();
  }
}

void dlbx_release(void* ctx) {
  const int64_t token = (int64_t)(intptr_t)ctx;
  int64_t* handback = t_handback;
  if (handback != NULL && *handback == 0) {
    *handback = token;
    return;
  }
  queue_push(token);
}

int64_t dlbx_tensor_free(DLManagedTensorVersioned* tensor) {
  int64_t released = 0;
  /* Saved and restored: a deleter this free runs may itself free through here. */
  int64_t* outer = t_handback;
  t_handback = &released;
  dlb_tensor_free(tensor);
  t_handback = outer;
  return released;
}

int32_t dlbx_release_drain(int32_t capacity, int64_t* out) {
  int32_t n = 0;
  if (out == NULL || capacity <= 0) return 0;
  if (__atomic_load_n(&g_queued, __ATOMIC_ACQUIRE) == 0) return 0;
  while (n < capacity && ring_take(&out[n])) ++n;
  if (n < capacity && __atomic_load_n(&g_overflow, __ATOMIC_RELAXED) != NULL) {
    overflow_node* list = __atomic_exchange_n(&g_overflow, NULL, __ATOMIC_ACQUIRE);
    while (n < capacity && list != NULL) {
      overflow_node* node = list;
      list = node->next;
      out[n++] = node->token;
      free(node);
    }
    if (list != NULL) {
      overflow_node* last = list;
      while (last->next != NULL) last = last->next;
      overflow_push_chain(list, last);
    }
  }
  if (n > 0) __atomic_sub_fetch(&g_queued, n, __ATOMIC_RELEASE);
  return n;
}

const int64_t* dlbx_release_queued(void) { return &g_queued; }
