/* bench_ipc_iceoryx.c - the iceoryx row (its C binding, Debian's 2.0.3) and its daemon RouDi.
 * The sender loans a chunk, fills it and publishes it; the receiver blocks in a waitset until a
 * chunk is there, takes it, reads it and releases it. Nothing is lost: the publisher waits for
 * a full subscriber queue (WAIT_FOR_CONSUMER / BLOCK_PRODUCER), as a channel's sender waits
 * for a full socket. Each size has its own topic, so each has the queue its pool allows; the
 * replies have a topic of their own. RouDi is started by the bench, with a private config whose
 * pools fit the plan, and stopped by its pid. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "iceoryx_binding_c/log.h"
#include "iceoryx_binding_c/publisher.h"
#include "iceoryx_binding_c/runtime.h"
#include "iceoryx_binding_c/subscriber.h"
#include "iceoryx_binding_c/wait_set.h"

#include "bench_ipc.h"

/* Room for iceoryx's chunk header and the payload's alignment in every pool's chunks. */
#define CHUNK_OVERHEAD 256u
/* Waiting for RouDi, for the topics to connect, for a chunk to come back to its pool. */
#define PATIENCE_NS 60000000000ull

/* ------------------------------------------------------------------------------------------ */
/* RouDi                                                                                       */
/* ------------------------------------------------------------------------------------------ */

typedef struct pool {
  uint64_t chunk;
  uint64_t count;
} pool;

static int by_chunk(const void* a, const void* b) {
  const uint64_t x = ((const pool*)a)->chunk;
  const uint64_t y = ((const pool*)b)->chunk;
  return (x > y) - (x < y);
}

/* One pool per size: its queue, the chunk the receiver holds and the one the sender fills;
 * plus the replies' chunks. Pools of the same chunk size merge; RouDi wants them ascending. */
static int write_config(const char* path, const bench_plan* plan) {
  pool pools[BENCH_MAX_SIZES + 1];
  int count = 0;
  for (int s = 0; s <= plan->size_count; ++s) {
    const uint64_t bytes = s < plan->size_count ? plan->sizes[s].bytes : BENCH_REPLY_BYTES;
    const uint64_t chunks = s < plan->size_count ? (uint64_t)plan->sizes[s].iceoryx_queue + 2 : 8;
    const uint64_t chunk = (bytes + CHUNK_OVERHEAD + 63) / 64 * 64;
    int merged = 0;
    for (int p = 0; p < count; ++p) {
      if (pools[p].chunk == chunk) {
        pools[p].count += chunks;
        merged = 1;
      }
    }
    if (!merged) {
      pools[count].chunk = chunk;
      pools[count].count = chunks;
      ++count;
    }
  }
  qsort(pools, (size_t)count, sizeof pools[0], by_chunk);
  FILE* file = fopen(path, "w");
  if (file == NULL) return 1;
  fprintf(file, "# bench_ipc's RouDi: one pool per message size of the run\n"
                "[general]\nversion = 1\n\n[[segment]]\n");
  for (int p = 0; p < count; ++p) {
    fprintf(file, "\n[[segment.mempool]]\nsize = %llu\ncount = %llu\n",
            (unsigned long long)pools[p].chunk, (unsigned long long)pools[p].count);
  }
  return fclose(file) == 0 ? 0 : 1;
}

static int log_says_ready(const char* path) {
  FILE* file = fopen(path, "r");
  if (file == NULL) return 0;
  char line[512];
  int ready = 0;
  while (!ready && fgets(line, sizeof line, file) != NULL) {
    ready = strstr(line, "RouDi is ready for clients") != NULL;
  }
  fclose(file);
  return ready;
}

static void log_tail(const char* path, char* text, int size) {
  text[0] = '\0';
  FILE* file = fopen(path, "r");
  if (file == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, file) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    const size_t length = strlen(line);
    if (length == 0) continue;
    const size_t kept = length < (size_t)size ? length : (size_t)size - 1;
    memcpy(text, line, kept);
    text[kept] = '\0';
  }
  fclose(file);
}

int bench_roudi_start(bench_roudi* roudi, const bench_plan* plan, const char* folder, char* why,
                      int why_size) {
  roudi->pid = 0;
  /* RouDi's names are fixed for the whole machine (/tmp/roudi, /tmp/roudi.lock,
   * /dev/shm/iceoryx_mgmt): a daemon already holding the lock belongs to someone else. */
  const int lock = open("/tmp/roudi.lock", O_RDONLY | O_CLOEXEC);
  if (lock >= 0) {
    const int held = flock(lock, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    if (!held) flock(lock, LOCK_UN);
    close(lock);
    if (held) {
      snprintf(why, (size_t)why_size,
               "skipped: a RouDi is already running on this machine (/tmp/roudi.lock is held); "
               "the bench neither shares nor stops another's daemon");
      return 1;
    }
  }
  snprintf(roudi->config, sizeof roudi->config, "%s/" BENCH_ROUDI_CONFIG, folder);
  snprintf(roudi->log, sizeof roudi->log, "%s/" BENCH_ROUDI_LOG, folder);
  if (write_config(roudi->config, plan) != 0) {
    snprintf(why, (size_t)why_size, "failed: cannot write %s", roudi->config);
    return 1;
  }
  const pid_t parent = getpid();
  fflush(NULL);
  const pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, (size_t)why_size, "failed: fork: %s", strerror(errno));
    return 1;
  }
  if (pid == 0) {
    /* RouDi must not outlive the bench, even one killed with SIGKILL. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    const int log = open(roudi->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log < 0 || dup2(log, STDOUT_FILENO) < 0 || dup2(log, STDERR_FILENO) < 0) _exit(126);
    execl(BENCH_IOX_ROUDI, "iox-roudi", "-c", roudi->config, "-m", "off", (char*)NULL);
    _exit(127);
  }
  roudi->pid = pid;
  const uint64_t give_up = bench_now_ns() + PATIENCE_NS;
  while (!log_says_ready(roudi->log)) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      roudi->pid = 0;
      char last[256];
      log_tail(roudi->log, last, sizeof last);
      snprintf(why, (size_t)why_size, "failed: iox-roudi exited (%s %d) before it was ready: %s",
               WIFEXITED(status) ? "status" : "signal",
               WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), last);
      return 1;
    }
    if (bench_now_ns() > give_up) {
      bench_roudi_stop(roudi);
      snprintf(why, (size_t)why_size, "failed: iox-roudi was not ready after 60 s");
      return 1;
    }
    const struct timespec pause = {0, 10000000};
    nanosleep(&pause, NULL);
  }
  return 0;
}

void bench_roudi_stop(bench_roudi* roudi) {
  if (roudi->pid <= 0) return;
  const pid_t pid = roudi->pid;
  roudi->pid = 0;
  kill(pid, SIGTERM); /* RouDi removes its shared memory and sockets when it stops cleanly */
  const uint64_t give_up = bench_now_ns() + 10000000000ull;
  while (waitpid(pid, NULL, WNOHANG) == 0) {
    if (bench_now_ns() > give_up) {
      kill(pid, SIGKILL);
      waitpid(pid, NULL, 0);
      return;
    }
    const struct timespec pause = {0, 5000000};
    nanosleep(&pause, NULL);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* The transport                                                                               */
/* ------------------------------------------------------------------------------------------ */

typedef struct iceoryx_side {
  int sender;
  int size_count;
  int current;
  /* Sender: one publisher per size and the replies' subscriber; receiver: the reverse. */
  iox_pub_storage_t publisher_storage[BENCH_MAX_SIZES];
  iox_pub_t publishers[BENCH_MAX_SIZES];
  iox_sub_storage_t subscriber_storage[BENCH_MAX_SIZES];
  iox_sub_t subscribers[BENCH_MAX_SIZES];
  iox_pub_storage_t reply_publisher_storage;
  iox_pub_t reply_publisher;
  iox_sub_storage_t reply_subscriber_storage;
  iox_sub_t reply_subscriber;
  iox_ws_storage_t waitset_storage;
  iox_ws_t waitset;
  iox_sub_t attached;
  void* loaned;
  const void* taken;
} iceoryx_side;

/* The process's name for RouDi; the runtime also names its socket and lock in /tmp after it. */
static void runtime_name(int sender, int pid, char* name, size_t size) {
  snprintf(name, size, "dlbridge-bench-%s-%d", sender ? "sender" : "receiver", pid);
}

void bench_iceoryx_remove_leftovers(int sender, int pid) {
  char name[64];
  runtime_name(sender, pid, name, sizeof name);
  char path[96];
  snprintf(path, sizeof path, "/tmp/%s", name);
  unlink(path);
  snprintf(path, sizeof path, "/tmp/%s.lock", name);
  unlink(path);
}

static void topic_names(const bench_cell* cell, char* instance, size_t size) {
  snprintf(instance, size, "cell%d-%d", cell->id, (int)getppid());
}

static iox_pub_t new_publisher(iox_pub_storage_t* storage, const char* instance,
                               const char* event) {
  iox_pub_options_t options;
  iox_pub_options_init(&options);
  options.historyCapacity = 0;
  options.subscriberTooSlowPolicy = ConsumerTooSlowPolicy_WAIT_FOR_CONSUMER;
  iox_pub_t publisher = iox_pub_init(storage, "dlbridge-bench", instance, event, &options);
  if (publisher == NULL) bench_fail("iceoryx: cannot create a publisher");
  return publisher;
}

static iox_sub_t new_subscriber(iox_sub_storage_t* storage, const char* instance,
                                const char* event, uint64_t queue) {
  iox_sub_options_t options;
  iox_sub_options_init(&options);
  options.queueCapacity = queue;
  options.historyRequest = 0;
  options.queueFullPolicy = QueueFullPolicy_BLOCK_PRODUCER;
  iox_sub_t subscriber = iox_sub_init(storage, "dlbridge-bench", instance, event, &options);
  if (subscriber == NULL) bench_fail("iceoryx: cannot create a subscriber");
  return subscriber;
}

static void pause_a_moment(void) {
  const struct timespec pause = {0, 1000000};
  nanosleep(&pause, NULL);
}

/* RouDi connects publishers and subscribers in its discovery loop: wait until every topic of
 * this side is connected, so no message is published into the void. */
static void wait_connected(iceoryx_side* side) {
  const uint64_t give_up = bench_now_ns() + PATIENCE_NS;
  for (;;) {
    int connected = 1;
    for (int s = 0; s < side->size_count; ++s) {
      if (side->sender) {
        connected = connected && iox_pub_has_subscribers(side->publishers[s]);
      } else {
        connected = connected && iox_sub_get_subscription_state(side->subscribers[s]) ==
                                     SubscribeState_SUBSCRIBED;
      }
    }
    if (side->sender) {
      connected = connected && iox_sub_get_subscription_state(side->reply_subscriber) ==
                                   SubscribeState_SUBSCRIBED;
    } else {
      connected = connected && iox_pub_has_subscribers(side->reply_publisher);
    }
    if (connected) return;
    if (bench_now_ns() > give_up) bench_fail("iceoryx: the topics did not connect within 60 s");
    pause_a_moment();
  }
}

static iceoryx_side* open_side(const bench_cell* cell, int sender) {
  iceoryx_side* side = calloc(1, sizeof *side);
  if (side == NULL) bench_fail("out of memory");
  side->sender = sender;
  side->size_count = cell->plan->size_count;
  char name[64];
  runtime_name(sender, (int)getpid(), name, sizeof name);
  /* Debian's build logs every registration at its default level, into the tables' output. */
  iox_set_loglevel(Iceoryx_LogLevel_Warn);
  iox_runtime_init(name);
  char instance[64];
  topic_names(cell, instance, sizeof instance);
  for (int s = 0; s < side->size_count; ++s) {
    char event[32];
    snprintf(event, sizeof event, "size%d", s);
    if (sender) {
      side->publishers[s] = new_publisher(&side->publisher_storage[s], instance, event);
    } else {
      side->subscribers[s] = new_subscriber(&side->subscriber_storage[s], instance, event,
                                            (uint64_t)cell->plan->sizes[s].iceoryx_queue);
    }
  }
  if (sender) {
    side->reply_subscriber = new_subscriber(&side->reply_subscriber_storage, instance, "reply", 2);
  } else {
    side->reply_publisher = new_publisher(&side->reply_publisher_storage, instance, "reply");
  }
  side->waitset = iox_ws_init(&side->waitset_storage);
  if (sender) {
    if (iox_ws_attach_subscriber_state(side->waitset, side->reply_subscriber,
                                       SubscriberState_HAS_DATA, 0, NULL) != WaitSetResult_SUCCESS) {
      bench_fail("iceoryx: cannot attach the replies to a waitset");
    }
    side->attached = side->reply_subscriber;
  }
  wait_connected(side);
  return side;
}

static void* open_sender(const bench_cell* cell) { return open_side(cell, 1); }
static void* open_receiver(const bench_cell* cell) { return open_side(cell, 0); }

static void begin_size(void* state, int size_index, uint64_t bytes) {
  (void)bytes;
  iceoryx_side* side = state;
  side->current = size_index;
  if (side->sender) return;
  if (side->attached != NULL) {
    iox_ws_detach_subscriber_state(side->waitset, side->attached, SubscriberState_HAS_DATA);
  }
  side->attached = side->subscribers[size_index];
  if (iox_ws_attach_subscriber_state(side->waitset, side->attached, SubscriberState_HAS_DATA, 0,
                                     NULL) != WaitSetResult_SUCCESS) {
    bench_fail("iceoryx: cannot attach a subscriber to a waitset");
  }
}

/* A pool sized to the queue can still be empty for a moment while the receiver's release is on
 * its way: wait for it rather than fail. */
static void* loan(iox_pub_t publisher, uint64_t bytes) {
  const uint64_t give_up = bench_now_ns() + PATIENCE_NS;
  for (;;) {
    void* chunk = NULL;
    const enum iox_AllocationResult result = iox_pub_loan_chunk(publisher, &chunk, (uint32_t)bytes);
    if (result == AllocationResult_SUCCESS) return chunk;
    if (result != AllocationResult_RUNNING_OUT_OF_CHUNKS || bench_now_ns() > give_up) {
      bench_fail("iceoryx: cannot loan a chunk of %llu bytes (allocation result %d)",
                 (unsigned long long)bytes, (int)result);
    }
    sched_yield();
  }
}

/* Blocks in the waitset until `subscriber` has a chunk, and takes it. */
static const void* take(iceoryx_side* side, iox_sub_t subscriber) {
  for (;;) {
    const void* chunk = NULL;
    const enum iox_ChunkReceiveResult result = iox_sub_take_chunk(subscriber, &chunk);
    if (result == ChunkReceiveResult_SUCCESS) return chunk;
    if (result != ChunkReceiveResult_NO_CHUNK_AVAILABLE) {
      bench_fail("iceoryx: cannot take a chunk (receive result %d)", (int)result);
    }
    iox_notification_info_t notifications[4];
    uint64_t missed = 0;
    iox_ws_wait(side->waitset, notifications, 4, &missed);
  }
}

static uint8_t* acquire(void* state, uint64_t bytes) {
  iceoryx_side* side = state;
  side->loaned = loan(side->publishers[side->current], bytes);
  return side->loaned;
}

static void publish(void* state, uint64_t bytes) {
  (void)bytes;
  iceoryx_side* side = state;
  iox_pub_publish_chunk(side->publishers[side->current], side->loaned);
  side->loaned = NULL;
}

static void await_reply(void* state) {
  iceoryx_side* side = state;
  const uint8_t* answer = take(side, side->reply_subscriber);
  const uint8_t first = answer[0];
  iox_sub_release_chunk(side->reply_subscriber, answer);
  if (first != BENCH_REPLY_PATTERN) bench_fail("iceoryx: the reply is not the one sent");
}

static const uint8_t* receive(void* state, uint64_t bytes) {
  (void)bytes;
  iceoryx_side* side = state;
  side->taken = take(side, side->subscribers[side->current]);
  return side->taken;
}

static void release(void* state) {
  iceoryx_side* side = state;
  iox_sub_release_chunk(side->subscribers[side->current], side->taken);
  side->taken = NULL;
}

static void reply(void* state) {
  iceoryx_side* side = state;
  uint8_t* answer = loan(side->reply_publisher, BENCH_REPLY_BYTES);
  memset(answer, 0, BENCH_REPLY_BYTES);
  answer[0] = BENCH_REPLY_PATTERN;
  iox_pub_publish_chunk(side->reply_publisher, answer);
}

static void close_side(void* state) {
  iceoryx_side* side = state;
  if (side->attached != NULL) {
    iox_ws_detach_subscriber_state(side->waitset, side->attached, SubscriberState_HAS_DATA);
  }
  iox_ws_deinit(side->waitset);
  for (int s = 0; s < side->size_count; ++s) {
    if (side->sender) {
      iox_pub_deinit(side->publishers[s]);
    } else {
      iox_sub_deinit(side->subscribers[s]);
    }
  }
  if (side->sender) {
    iox_sub_deinit(side->reply_subscriber);
  } else {
    iox_pub_deinit(side->reply_publisher);
  }
  free(side);
  /* No iox_runtime_shutdown(): it only unblocks waiting publishers, and once (under valgrind)
   * RouDi's answer to it came out of step and the process hung. The runtime deregisters from
   * RouDi when exit() destroys it. */
}

const bench_transport bench_iceoryx = {
    "iceoryx", "iceoryx", 1, open_sender, open_receiver, begin_size, acquire, publish,
    await_reply, receive, release, reply, close_side, close_side};
