/* parity_c.c - the parity rows (tests/parity/parity_table.tsv) through the C API: the reference
 * every other language's program is compared with. One line per row: ROW<TAB>STATUS<TAB>DETAIL. */
#define _GNU_SOURCE /* mkdtemp */
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlbridge/dlbridge.h"
#include "foreign_dlpack.h"

static const DLDevice kCpu = {kDLCPU, 0};
static const DLDataType kF32 = {kDLFloat, 32, 1};
static const DLDataType kI32 = {kDLInt, 32, 1};

/* ---- output ------------------------------------------------------------------------------ */
static char g_detail[4096];

static void detail(const char* format, ...) {
  size_t used = strlen(g_detail);
  va_list args;
  if (used > 0 && used + 1 < sizeof g_detail) g_detail[used++] = ' ';
  va_start(args, format);
  vsnprintf(g_detail + used, sizeof g_detail - used, format, args);
  va_end(args);
}

static void dims(const char* name, int32_t n, const int64_t* v) {
  char text[1024];
  size_t used = 0;
  int32_t i;
  used += (size_t)snprintf(text + used, sizeof text - used, "%s=[", name);
  for (i = 0; i < n; ++i) {
    used += (size_t)snprintf(text + used, sizeof text - used, i ? ",%lld" : "%lld", (long long)v[i]);
  }
  snprintf(text + used, sizeof text - used, "]");
  detail("%s", text);
}

static void values(const float* v, int64_t n) {
  char text[2048];
  size_t used = 0;
  int64_t i;
  used += (size_t)snprintf(text + used, sizeof text - used, "values=[");
  for (i = 0; i < n; ++i) {
    used += (size_t)snprintf(text + used, sizeof text - used, i ? ",%lld" : "%lld", (long long)v[i]);
  }
  snprintf(text + used, sizeof text - used, "]");
  detail("%s", text);
}

static void layout(const DLManagedTensorVersioned* t) {
  int64_t strides[DLB_MAX_NDIM];
  dims("shape", t->dl_tensor.ndim, t->dl_tensor.shape);
  dlb_tensor_get_strides(&t->dl_tensor, DLB_MAX_NDIM, strides, NULL);
  dims("strides", t->dl_tensor.ndim, strides);
}

/* Every element of `t` (any layout), in C order. */
static void contents(const DLManagedTensorVersioned* t) {
  float v[64];
  int64_t n = 0;
  dlb_tensor_element_count(&t->dl_tensor, &n, NULL);
  dlb_tensor_copy_to_host(t, kF32, v, (uint64_t)n * sizeof(float), NULL);
  values(v, n);
}

static void row(const char* id, dlb_status status, const dlb_error* err) {
  printf("%s\t%s\t%s\n", id, dlb_status_name(status), status == DLB_OK ? g_detail : err->message);
  g_detail[0] = '\0';
}

/* ---- fixtures ------------------------------------------------------------------------------ */
/* A float32 tensor of `shape` holding 0, 1, 2, ... in C order. */
/* ---- the channel rows: the peer is $DLBRIDGE_PARITY_PEER (parity_peer.cc) -------------------- */
extern char** environ;

/* A row whose message names the row's folder: the folder is written DIR. */
static void row_in(const char* id, dlb_status status, const dlb_error* err, const char* dir) {
  char text[sizeof err->message + 8];
  const char* at;
  if (status == DLB_OK || (at = strstr(err->message, dir)) == NULL) {
    row(id, status, err);
    return;
  }
  snprintf(text, sizeof text, "%.*sDIR%s", (int)(at - err->message), err->message,
           at + strlen(dir));
  printf("%s\t%s\t%s\n", id, dlb_status_name(status), text);
}

/* Starts the peer with up to four arguments; `out` (if not NULL) gets a pipe from its stdout. */
static pid_t spawn_peer(const char* a1, const char* a2, const char* a3, const char* a4, FILE** out) {
  const char* peer = getenv("DLBRIDGE_PARITY_PEER");
  char* argv[6];
  int pipe_fds[2];
  posix_spawn_file_actions_t actions;
  pid_t pid;
  if (peer == NULL) return -1;
  argv[0] = (char*)peer;
  argv[1] = (char*)a1;
  argv[2] = (char*)a2;
  argv[3] = (char*)a3;
  argv[4] = (char*)a4;
  argv[5] = NULL;
  posix_spawn_file_actions_init(&actions);
  if (out != NULL) {
    if (pipe(pipe_fds) != 0) return -1;
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  }
  if (posix_spawn(&pid, peer, &actions, NULL, argv, environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  if (out != NULL) {
    close(pipe_fds[1]);
    *out = fdopen(pipe_fds[0], "r");
  }
  return pid;
}

static void reap(pid_t pid) {
  int ignored;
  if (pid > 0) waitpid(pid, &ignored, 0);
}

/* A listener at DIR/s in a new 0700 folder; the caller removes both. */
static dlb_status listen_in_folder(char* dir, char* path, dlb_channel** listener, dlb_error* err) {
  strcpy(dir, "/tmp/dlbridge-parity-c-XXXXXX");
  if (mkdtemp(dir) == NULL) return DLB_ERR_DEVICE;
  snprintf(path, 128, "%s/s", dir);
  return dlb_channel_listen(path, listener, err);
}

/* listen; start the peer in `mode`; accept; optionally a time limit; receive: the row's outcome. */
static void row_receive_from(const char* id, const char* mode) {
  char dir[64], path[128];
  dlb_channel *listener = NULL, *channel = NULL;
  DLManagedTensorVersioned* t = NULL;
  dlb_error err;
  pid_t pid = -1;
  dlb_status s = listen_in_folder(dir, path, &listener, &err);
  if (s == DLB_OK) {
    pid = spawn_peer(mode, path, NULL, NULL, NULL);
    dlb_channel_set_timeout(listener, 10000000000LL, &err); /* a peer that never came */
    s = dlb_channel_accept(listener, &channel, &err);
  }
  if (s == DLB_OK) {
    s = dlb_channel_set_timeout(channel, strcmp(mode, "half") == 0 ? 100000000LL : 10000000000LL,
                                &err);
  }
  if (s == DLB_OK) s = dlb_channel_receive(channel, &t, &err);
  dlb_tensor_free(t);
  dlb_channel_close(channel);
  dlb_channel_close(listener);
  reap(pid);
  rmdir(dir);
  row(id, s, &err);
}

/* Reads the four float32 values of `t` into the detail. */
static void four_values(const DLManagedTensorVersioned* t) {
  float v[4];
  dlb_error err;
  if (dlb_tensor_copy_to_host(t, kF32, v, sizeof v, &err) == DLB_OK) values(v, 4);
}

/* We listen (allowing 65534 when `allow`), a peer of uid 65534 connects and echoes a tensor. */
static void row_other_uid_connects(const char* id, int allow) {
  char dir[64], path[128];
  dlb_channel *listener = NULL, *channel = NULL;
  DLManagedTensorVersioned *t = NULL, *back = NULL;
  dlb_error err;
  pid_t pid = -1;
  const int64_t four = 4;
  dlb_status s = listen_in_folder(dir, path, &listener, &err);
  if (s == DLB_OK && allow) s = dlb_channel_allow_uid(listener, 65534, &err);
  if (s == DLB_OK) {
    chmod(dir, 0711);
    chmod(path, 0666);
    pid = spawn_peer("connect-as", "65534", "0", path, NULL);
    dlb_channel_set_timeout(listener, 10000000000LL, &err);
    s = dlb_channel_accept(listener, &channel, &err);
  }
  if (s == DLB_OK) s = dlb_tensor_allocate_shareable(kCpu, kF32, 1, &four, NULL, 0, &t, &err);
  if (s == DLB_OK) {
    float* v = (float*)((char*)t->dl_tensor.data + t->dl_tensor.byte_offset);
    int i;
    for (i = 0; i < 4; ++i) v[i] = (float)i;
    s = dlb_channel_set_timeout(channel, 10000000000LL, &err);
  }
  if (s == DLB_OK) s = dlb_channel_send(channel, t, 0, &err);
  if (s == DLB_OK) s = dlb_channel_receive(channel, &back, &err);
  if (s == DLB_OK) four_values(back);
  dlb_tensor_free(back);
  dlb_tensor_free(t);
  dlb_channel_close(channel);
  dlb_channel_close(listener);
  reap(pid);
  rmdir(dir);
  row(id, s, &err);
}

/* A peer of uid 65534 listens; we connect naming its uid (`name_uid`) or not, and receive. */
static void row_connect_to_other_uid(const char* id, int name_uid) {
  char path[256] = "";
  FILE* out = NULL;
  dlb_channel* channel = NULL;
  DLManagedTensorVersioned* t = NULL;
  dlb_error err;
  dlb_status s;
  pid_t pid = spawn_peer("listen-as", "65534", "0", NULL, &out);
  if (out == NULL || fgets(path, sizeof path, out) == NULL) {
    snprintf(err.message, sizeof err.message, "the peer printed no socket path");
    s = DLB_ERR_DEVICE;
  } else {
    path[strcspn(path, "\n")] = '\0';
    s = dlb_channel_connect_with(path, name_uid ? 65534u : DLB_UID_SELF, 10000000000LL, &channel,
                                 &err);
  }
  if (s == DLB_OK) s = dlb_channel_receive(channel, &t, &err);
  if (s == DLB_OK) four_values(t);
  dlb_tensor_free(t);
  dlb_channel_close(channel);
  if (out != NULL) fclose(out);
  reap(pid);
  row(id, s, &err);
}

static void channel_rows(void) {
  dlb_error err;
  dlb_channel* channel = NULL;
  dlb_status s = dlb_channel_connect("dlbridge-parity-absent.sock", &channel, &err);
  dlb_channel_close(channel);
  row("channel_no_listener", s, &err);
  {
    char dir[] = "/tmp/dlbridge-parity-c-XXXXXX";
    char path[128];
    if (mkdtemp(dir) != NULL) {
      chmod(dir, 0755);
      snprintf(path, sizeof path, "%s/s", dir);
      s = dlb_channel_listen(path, &channel, &err);
      dlb_channel_close(channel);
      rmdir(dir);
      row_in("channel_permission", s, &err, dir);
    }
  }
  row_receive_from("channel_peer_closed", "connect-close");
  row_receive_from("channel_forged", "forge");
  row_receive_from("channel_timeout", "half");
  if (geteuid() != 0) {
    const char* rows[] = {"channel_refused_uid_accept", "channel_refused_uid_connect",
                          "channel_second_uid_accept", "channel_second_uid_connect"};
    size_t i;
    for (i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
      printf("%s\tSKIP\tneeds root to run a peer as another user\n", rows[i]);
    }
  } else {
    row_other_uid_connects("channel_refused_uid_accept", 0);
    row_connect_to_other_uid("channel_refused_uid_connect", 0);
    row_other_uid_connects("channel_second_uid_accept", 1);
    row_connect_to_other_uid("channel_second_uid_connect", 1);
  }
  detail("names=%s,%s,%s,%s,%s,%s", dlb_status_name(DLB_ERR_NO_LISTENER),
         dlb_status_name(DLB_ERR_PERMISSION), dlb_status_name(DLB_ERR_PEER_CLOSED),
         dlb_status_name(DLB_ERR_PROTOCOL), dlb_status_name(DLB_ERR_TIMEOUT),
         dlb_status_name(DLB_ERR_LIMIT));
  row("status_names_channel", DLB_OK, &err);
}

static DLManagedTensorVersioned* iota(int32_t ndim, const int64_t* shape) {
  DLManagedTensorVersioned* t = NULL;
  int64_t n = 0, i;
  dlb_tensor_allocate(kCpu, kF32, ndim, shape, NULL, 0, &t, NULL);
  dlb_tensor_element_count(&t->dl_tensor, &n, NULL);
  for (i = 0; i < n; ++i) ((float*)t->dl_tensor.data)[i] = (float)i;
  return t;
}

static const int64_t k23[2] = {2, 3};
static const int64_t k34[2] = {3, 4};

int main(void) {
  const int64_t live_at_start = dlb_tensor_live_count();
  DLManagedTensorVersioned *t = NULL, *v = NULL, *w = NULL;
  dlb_error err;
  dlb_status s;

  /* create */
  s = dlb_tensor_allocate(kCpu, kF32, 2, k23, NULL, 0, &t, &err);
  if (s == DLB_OK) {
    char name[DLB_DTYPE_NAME_SIZE], device[DLB_DEVICE_NAME_SIZE];
    layout(t);
    dlb_dtype_format(t->dl_tensor.dtype, name, sizeof name, NULL);
    dlb_device_format(t->dl_tensor.device, device, sizeof device, NULL);
    detail("dtype=%s device=%s", name, device);
  }
  row("create", s, &err);
  dlb_tensor_free(t);

  {
    const int64_t shape[2] = {2, -3};
    s = dlb_tensor_allocate(kCpu, kF32, 2, shape, NULL, 0, &t, &err);
    row("create_negative_extent", s, &err);
  }
  {
    int64_t shape[65];
    int i;
    for (i = 0; i < 65; ++i) shape[i] = 1;
    s = dlb_tensor_allocate(kCpu, kF32, 65, shape, NULL, 0, &t, &err);
    row("create_ndim_65", s, &err);
  }
  printf("create_strides_length\tSKIP\tC passes strides by pointer, ndim of them: there is no length to get wrong\n");
  s = dlb_tensor_allocate(kCpu, kF32, 2, k23, NULL, DLPACK_FLAG_BITMASK_IS_COPIED, &t, &err);
  row("create_is_copied", s, &err);

  /* wrap */
  {
    float buffer[6] = {0, 1, 2, 3, 4, 5};
    DLTensor d = {buffer, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, (int64_t*)k23, NULL, 0};
    s = dlb_tensor_wrap_buffer(&d, sizeof buffer, 0, NULL, NULL, &t, &err);
    if (s == DLB_OK) {
      layout(t);
      contents(t);
      detail("same_memory=%d", t->dl_tensor.data == (void*)buffer);
    }
    row("wrap", s, &err);
    dlb_tensor_free(t);
    s = dlb_tensor_wrap_buffer(&d, 5 * sizeof(float), 0, NULL, NULL, &t, &err);
    row("wrap_beyond_buffer", s, &err);
  }
  {
    float buffer[6] = {0, 1, 2, 3, 4, 5};
    int64_t shape[65];
    DLTensor d = {buffer, {kDLCPU, 0}, 5, {kDLFloat, 32, 1}, shape, NULL, 0};
    int i;
    shape[0] = shape[1] = shape[2] = 1;
    shape[3] = 2;
    shape[4] = 3;
    s = dlb_tensor_wrap_buffer(&d, sizeof buffer, 0, NULL, NULL, &t, &err);
    if (s == DLB_OK) {
      layout(t);
      contents(t);
      dlb_tensor_free(t);
    }
    row("wrap_ndim_5", s, &err);
    for (i = 0; i < 65; ++i) shape[i] = 1;
    d.ndim = 65;
    s = dlb_tensor_wrap_buffer(&d, sizeof(float), 0, NULL, NULL, &t, &err);
    row("wrap_ndim_65", s, &err);
  }

  /* import and export */
  {
    const int64_t deleted = foreign_dlpack_deleted_count();
    s = dlb_tensor_import((DLManagedTensorVersioned*)(intptr_t)foreign_dlpack_produce_versioned(4, 1, 3, 0),
                          &t, &err);
    if (s == DLB_OK) {
      contents(t);
      dlb_tensor_free(t);
      detail("deleted=%lld", (long long)(foreign_dlpack_deleted_count() - deleted));
    }
    row("import_versioned", s, &err);
  }
  {
    const int64_t deleted = foreign_dlpack_deleted_count();
    s = dlb_tensor_import_legacy((DLManagedTensor*)(intptr_t)foreign_dlpack_produce_legacy(4), &t, &err);
    if (s == DLB_OK) {
      contents(t);
      dlb_tensor_free(t);
      detail("deleted=%lld", (long long)(foreign_dlpack_deleted_count() - deleted));
    }
    row("import_legacy", s, &err);
  }
  {
    const int64_t deleted = foreign_dlpack_deleted_count();
    s = dlb_tensor_import((DLManagedTensorVersioned*)(intptr_t)foreign_dlpack_produce_versioned(4, 2, 0, 0),
                          &t, &err);
    /* The refused tensor's deleter has run: the message names the version, the detail the
     * deletion (printed after the message for this row). */
    printf("import_major_2\t%s\t%s deleted=%lld\n", dlb_status_name(s), err.message,
           (long long)(foreign_dlpack_deleted_count() - deleted));
  }
  {
    DLManagedTensor* legacy = NULL;
    t = iota(2, k23);
    s = dlb_tensor_export_legacy(t, &legacy, &err);
    if (s == DLB_OK) {
      s = dlb_tensor_import_legacy(legacy, &v, &err);
      if (s == DLB_OK) {
        layout(v);
        contents(v);
        dlb_tensor_free(v);
      }
    } else {
      dlb_tensor_free(t);
    }
    row("export_import_legacy", s, &err);
  }
  {
    t = iota(2, k23);
    s = dlb_tensor_import(t, &v, &err); /* the binding's export hands out the same struct */
    if (s == DLB_OK) {
      layout(v);
      contents(v);
      detail("flags=%llu", (unsigned long long)dlb_tensor_flags(v));
      dlb_tensor_free(v);
    }
    row("export_import_versioned", s, &err);
  }
  {
    DLManagedTensor* legacy = NULL;
    t = iota(2, k23);
    dlb_tensor_share(t, DLPACK_FLAG_BITMASK_READ_ONLY, &v, NULL);
    s = dlb_tensor_export_legacy(v, &legacy, &err);
    row("export_legacy_read_only", s, &err);
    dlb_tensor_free(v);
    dlb_tensor_free(t);
  }
  {
    t = iota(2, k23);
    dlb_tensor_share(t, DLPACK_FLAG_BITMASK_READ_ONLY, &v, NULL);
    s = dlb_tensor_import(v, &w, &err);
    if (s == DLB_OK) {
      detail("flags=%llu", (unsigned long long)dlb_tensor_flags(w));
      dlb_tensor_free(w);
    }
    row("export_versioned_read_only", s, &err);
    dlb_tensor_free(t);
  }

  /* views */
  t = iota(2, k34);
  {
    const dlb_slice slices[2] = {{1, 3, 1}, {DLB_SLICE_NONE, DLB_SLICE_NONE, 2}};
    s = dlb_tensor_slice(t, 2, slices, &v, &err);
    if (s == DLB_OK) {
      layout(v);
      contents(v);
      dlb_tensor_free(v);
    }
    row("slice", s, &err);
  }
  {
    const dlb_slice slices[1] = {{0, 2, 0}};
    s = dlb_tensor_slice(t, 1, slices, &v, &err);
    row("slice_step_zero", s, &err);
  }
  s = dlb_tensor_select(t, 1, -1, &v, &err);
  if (s == DLB_OK) {
    layout(v);
    contents(v);
    dlb_tensor_free(v);
  }
  row("select", s, &err);
  s = dlb_tensor_select(t, 0, 3, &v, &err);
  row("select_out_of_range", s, &err);
  {
    const int64_t shape[2] = {2, -1};
    s = dlb_tensor_reshape(t, 2, shape, &v, &err);
    if (s == DLB_OK) {
      layout(v);
      contents(v);
      dlb_tensor_free(v);
    }
    row("reshape", s, &err);
  }
  {
    const int64_t shape[1] = {12};
    dlb_tensor_transpose(t, &w, NULL);
    s = dlb_tensor_reshape(w, 1, shape, &v, &err);
    row("reshape_non_contiguous", s, &err);
    dlb_tensor_free(w);
  }
  s = dlb_tensor_transpose(t, &v, &err);
  if (s == DLB_OK) {
    layout(v);
    contents(v);
    dlb_tensor_free(v);
  }
  row("transpose", s, &err);
  dlb_tensor_free(t);
  {
    const int64_t shape[3] = {2, 3, 4};
    const int32_t axes[3] = {2, 0, 1};
    const int32_t bad[3] = {0, 0, 1};
    t = iota(3, shape);
    s = dlb_tensor_permute(t, 3, axes, &v, &err);
    if (s == DLB_OK) {
      layout(v);
      dlb_tensor_free(v);
    }
    row("permute", s, &err);
    s = dlb_tensor_permute(t, 3, bad, &v, &err);
    row("permute_invalid", s, &err);
    dlb_tensor_free(t);
  }

  /* copies to and from arrays */
  {
    float out[12];
    t = iota(2, k23);
    s = dlb_tensor_copy_to_host(t, kF32, out, 6 * sizeof(float), &err);
    if (s == DLB_OK) values(out, 6);
    row("copy_out", s, &err);
    dlb_tensor_transpose(t, &v, NULL);
    s = dlb_tensor_copy_to_host(v, kF32, out, 6 * sizeof(float), &err);
    if (s == DLB_OK) values(out, 6);
    row("copy_out_transposed", s, &err);
    dlb_tensor_free(v);
    {
      int32_t ints[6];
      s = dlb_tensor_copy_to_host(t, kI32, ints, sizeof ints, &err);
      row("copy_out_wrong_type", s, &err);
    }
    dlb_tensor_free(t);
    t = iota(2, k34);
    {
      const dlb_slice slices[2] = {{DLB_SLICE_NONE, DLB_SLICE_NONE, -1},
                                   {DLB_SLICE_NONE, DLB_SLICE_NONE, 2}};
      dlb_tensor_slice(t, 2, slices, &v, NULL);
      s = dlb_tensor_copy_to_host(v, kF32, out, 6 * sizeof(float), &err);
      if (s == DLB_OK) values(out, 6);
      row("copy_out_negative_strides", s, &err);
      dlb_tensor_free(v);
    }
    {
      float in[12];
      int i;
      for (i = 0; i < 12; ++i) in[i] = (float)(100 + i);
      dlb_tensor_transpose(t, &v, NULL);
      s = dlb_tensor_copy_from_host(v, kF32, in, sizeof in, &err);
      if (s == DLB_OK) contents(t);
      row("copy_in_transposed", s, &err);
      s = dlb_tensor_copy_from_host(v, kF32, in, 5 * sizeof(float), &err);
      row("copy_in_count_mismatch", s, &err);
      dlb_tensor_free(v);
    }
    dlb_tensor_free(t);
  }

  /* typed host access and elements */
  {
    void* data = NULL;
    int64_t count = 0;
    t = iota(2, k23);
    s = dlb_tensor_host_elements(t, kF32, DLB_ACCESS_WRITE, &data, &count, &err);
    if (s == DLB_OK) {
      ((float*)data)[4] = 40;
      detail("count=%lld", (long long)count);
      contents(t);
    }
    row("typed_view", s, &err);
    s = dlb_tensor_host_elements(t, kI32, DLB_ACCESS_READ, &data, &count, &err);
    row("typed_view_wrong_type", s, &err);
    dlb_tensor_transpose(t, &v, NULL);
    s = dlb_tensor_host_elements(v, kF32, DLB_ACCESS_READ, &data, &count, &err);
    row("typed_view_transposed", s, &err);
    dlb_tensor_free(v);
    dlb_tensor_share(t, DLPACK_FLAG_BITMASK_READ_ONLY, &v, NULL);
    s = dlb_tensor_host_elements(v, kF32, DLB_ACCESS_WRITE, &data, &count, &err);
    row("write_read_only", s, &err);
    {
      float in[6] = {0};
      s = dlb_tensor_copy_from_host(v, kF32, in, sizeof in, &err);
      row("copy_into_read_only", s, &err);
    }
    dlb_tensor_free(v);
    {
      const int64_t at[2] = {1, 2};
      const int64_t beyond[2] = {2, 0};
      s = dlb_tensor_element_data(t, 2, at, 0, &data, &err);
      if (s == DLB_OK) detail("value=%lld", (long long)*(const float*)data);
      row("element_get", s, &err);
      s = dlb_tensor_element_data(t, 2, beyond, 0, &data, &err);
      row("element_out_of_range", s, &err);
    }
    dlb_tensor_free(t);
  }

  /* lifecycle misuse a binding must catch */
  printf("use_after_close\tSKIP\tC has no closed-tensor state: a freed pointer must not be used\n");
  printf("double_close\tSKIP\tC has no closed-tensor state: a tensor is freed exactly once\n");
  printf("close_during_call\tSKIP\tC has no closed-tensor state: the caller orders a free after "
         "its calls\n");
  printf("export_during_call\tSKIP\tC has no closed-tensor state: the caller orders an export "
         "after its calls\n");

  /* devices and names */
  s = dlb_cuda_is_available(&err);
  row("cuda_available", s, &err);
  {
    const int64_t two = 2;
    const DLDevice cuda = {kDLCUDA, 0};
    s = dlb_tensor_allocate(cuda, kF32, 1, &two, NULL, 0, &t, &err);
    if (s == DLB_OK) {
      layout(t);
      dlb_tensor_free(t);
    }
    row("cuda_allocate", s, &err);
  }
  s = dlb_opencl_is_available(&err);
  row("opencl_available", s, &err);
  {
    DLDataType dtype;
    s = dlb_dtype_parse("float33", &dtype, &err);
    row("dtype_parse_unknown", s, &err);
    s = dlb_dtype_parse("bfloat16x4", &dtype, &err);
    if (s == DLB_OK) detail("code=%d bits=%d lanes=%d", dtype.code, dtype.bits, dtype.lanes);
    row("dtype_parse", s, &err);
  }
  {
    DLDevice device;
    char text[DLB_DEVICE_NAME_SIZE];
    s = dlb_device_parse("device_type_99:3", &device, &err);
    if (s == DLB_OK) {
      dlb_device_format(device, text, sizeof text, NULL);
      detail("type=%d id=%d name=%s", (int)device.device_type, (int)device.device_id, text);
    }
    row("device_unknown_type", s, &err);
    s = dlb_device_parse("gpu:0", &device, &err);
    row("device_parse_unknown", s, &err);
  }
  detail("names=%s,%s", dlb_status_name(DLB_ERR_READ_ONLY), dlb_status_name(99));
  row("status_name", DLB_OK, &err);

  channel_rows();

  detail("live=%lld", (long long)(dlb_tensor_live_count() - live_at_start));
  row("live_count_balance", DLB_OK, &err);
  return 0;
}
