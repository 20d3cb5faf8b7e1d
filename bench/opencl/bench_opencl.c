/*
 * bench_opencl.c - dlbridge's OpenCL copies against the raw OpenCL call that moves the same
 * bytes, measured in the same run on OpenCL device 0:
 *   - device -> device, dense:      dlb_tensor_copy_into  vs clEnqueueCopyBuffer
 *   - host -> device, dense:        dlb_tensor_copy_into  vs clEnqueueWriteBuffer (blocking)
 *   - device -> host, dense:        dlb_tensor_copy_into  vs clEnqueueReadBuffer (blocking)
 *   - transpose on the device:      x.T -> compact        vs clEnqueueCopyBuffer (output bytes)
 *   - every other column:           x[:, ::2] -> compact  vs clEnqueueCopyBuffer (output bytes)
 * for outputs of 1 MiB to 256 MiB (float32). Every copy is complete when it is timed: dlbridge's
 * NULL-stream copies wait for their work, and the baselines end with clFinish.
 * Usage: bench_opencl [--quick]. --quick runs 1 MiB only, a few repetitions (a CI smoke run).
 * Exit status: 0, 77 without OpenCL, 2 when a call fails, 3 when a copy gives wrong bytes.
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlbridge/dlbridge.h"
#include "../bench_timing.h"

/* ------------------------------------------------------------------------------------------ */
/* Raw OpenCL, opened at run time like the library does                                       */
/* ------------------------------------------------------------------------------------------ */

typedef cl_int (*copy_buffer_fn)(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint,
                                 const cl_event*, cl_event*);
typedef cl_int (*read_buffer_fn)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void*, cl_uint,
                                 const cl_event*, cl_event*);
typedef cl_int (*write_buffer_fn)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void*,
                                  cl_uint, const cl_event*, cl_event*);
typedef cl_int (*finish_fn)(cl_command_queue);

static copy_buffer_fn raw_copy_buffer;
static read_buffer_fn raw_read_buffer;
static write_buffer_fn raw_write_buffer;
static finish_fn raw_finish;
static cl_command_queue queue; /* the library's queue for device 0 */

/* ISO C has no cast from an object pointer to a function pointer: copy the bits. */
static int resolve(void* library, const char* name, void* fn, size_t size) {
  void* symbol = dlsym(library, name);
  if (symbol == NULL) return 0;
  memcpy(fn, &symbol, size);
  return 1;
}

static int load_raw_opencl(void) {
  void* library = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  return library != NULL &&
         resolve(library, "clEnqueueCopyBuffer", &raw_copy_buffer, sizeof raw_copy_buffer) &&
         resolve(library, "clEnqueueReadBuffer", &raw_read_buffer, sizeof raw_read_buffer) &&
         resolve(library, "clEnqueueWriteBuffer", &raw_write_buffer, sizeof raw_write_buffer) &&
         resolve(library, "clFinish", &raw_finish, sizeof raw_finish);
}

/* ------------------------------------------------------------------------------------------ */
/* Errors and clock                                                                           */
/* ------------------------------------------------------------------------------------------ */

static dlb_error bench_error;

#define CHECK(call)                                                                       \
  do {                                                                                    \
    int status_ = (call);                                                                 \
    if (status_ != DLB_OK) {                                                              \
      fprintf(stderr, "bench_opencl: %s failed: %s: %s\n", #call, dlb_status_name(status_), \
              bench_error.message);                                                       \
      exit(2);                                                                            \
    }                                                                                     \
  } while (0)

#define CL_CHECK(call)                                                             \
  do {                                                                             \
    cl_int code_ = (call);                                                         \
    if (code_ != CL_SUCCESS) {                                                     \
      fprintf(stderr, "bench_opencl: %s failed: OpenCL error %d\n", #call, code_); \
      exit(2);                                                                     \
    }                                                                              \
  } while (0)

/* ------------------------------------------------------------------------------------------ */
/* Timing: ours and the baseline, alternating                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef struct settings {
  int quick;
  double row_seconds; /* time budget of one row (both sides together) */
  int min_reps;
} settings;

#define MAX_REPS 64

typedef enum baseline_kind { BASE_COPY, BASE_WRITE, BASE_READ } baseline_kind;

typedef struct job {
  /* ours */
  const DLManagedTensorVersioned* src;
  DLManagedTensorVersioned* dst;
  /* the baseline: the same number of output bytes between raw buffers or host memory */
  baseline_kind kind;
  cl_mem base_src, base_dst;
  void* host;
  size_t nbytes;
} job;

static void run_ours(const job* j) { CHECK(dlb_tensor_copy_into(j->src, j->dst, &bench_error)); }

static void run_baseline(const job* j) {
  switch (j->kind) {
    case BASE_COPY:
      CL_CHECK(raw_copy_buffer(queue, j->base_src, j->base_dst, 0, 0, j->nbytes, 0, NULL, NULL));
      CL_CHECK(raw_finish(queue));
      break;
    case BASE_WRITE:
      CL_CHECK(raw_write_buffer(queue, j->base_dst, CL_TRUE, 0, j->nbytes, j->host, 0, NULL, NULL));
      break;
    case BASE_READ:
      CL_CHECK(raw_read_buffer(queue, j->base_src, CL_TRUE, 0, j->nbytes, j->host, 0, NULL, NULL));
      break;
  }
}

/* Median seconds of ours and of the baseline, after one warm-up each. */
static void time_job(const job* j, const settings* cfg, double* ours, double* base) {
  double ours_times[MAX_REPS], base_times[MAX_REPS];
  double start = now_seconds();
  int reps = 0;
  run_ours(j);
  run_baseline(j);
  while (reps < MAX_REPS && (reps < cfg->min_reps || now_seconds() - start < cfg->row_seconds)) {
    double t0 = now_seconds();
    run_ours(j);
    double t1 = now_seconds();
    run_baseline(j);
    double t2 = now_seconds();
    ours_times[reps] = t1 - t0;
    base_times[reps] = t2 - t1;
    ++reps;
  }
  *ours = median(ours_times, reps);
  *base = median(base_times, reps);
}

/* ------------------------------------------------------------------------------------------ */
/* Tensors                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static const DLDevice cpu_device = {kDLCPU, 0};
static const DLDevice cl_device = {kDLOpenCL, 0};
static const DLDataType f32 = {kDLFloat, 32, 1};

static DLManagedTensorVersioned* allocate(DLDevice device, int64_t rows, int64_t cols) {
  DLManagedTensorVersioned* t = NULL;
  int64_t shape[2];
  shape[0] = rows;
  shape[1] = cols;
  CHECK(dlb_tensor_allocate(device, f32, 2, shape, NULL, 0, &t, &bench_error));
  return t;
}

static void fill_host(DLManagedTensorVersioned* t) {
  float* p = (float*)t->dl_tensor.data;
  int64_t n = t->dl_tensor.shape[0] * t->dl_tensor.shape[1], i;
  for (i = 0; i < n; ++i) p[i] = (float)(i % 1000003);
}

static DLManagedTensorVersioned* to_host(const DLManagedTensorVersioned* t) {
  DLManagedTensorVersioned* out = NULL;
  CHECK(dlb_tensor_copy(t, cpu_device, &out, &bench_error));
  return out;
}

/* Checks that `result` (on the device, compact) holds the elements of the host view `expected`. */
static void verify(const char* what, const DLManagedTensorVersioned* result,
                   const DLManagedTensorVersioned* expected_view) {
  DLManagedTensorVersioned* got = to_host(result);
  DLManagedTensorVersioned* want = to_host(expected_view);
  size_t nbytes = (size_t)(got->dl_tensor.shape[0] * got->dl_tensor.shape[1]) * sizeof(float);
  if (memcmp(got->dl_tensor.data, want->dl_tensor.data, nbytes) != 0) {
    fprintf(stderr, "bench_opencl: check failed: %s gave wrong bytes\n", what);
    exit(3);
  }
  dlb_tensor_free(got);
  dlb_tensor_free(want);
}

/* ------------------------------------------------------------------------------------------ */
/* Rows                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static void print_row(const char* name, size_t nbytes, double ours, const char* baseline,
                      double base) {
  double ours_gbs = (double)nbytes / ours * 1e-9, base_gbs = (double)nbytes / base * 1e-9;
  printf("%-30s %8.0f MiB %9.2f GB/s  %-22s %9.2f GB/s %7.2f\n", name,
         (double)nbytes / (1024.0 * 1024.0), ours_gbs, baseline, base_gbs, ours_gbs / base_gbs);
  fflush(stdout);
}

static cl_mem mem_of(const DLManagedTensorVersioned* t) { return (cl_mem)t->dl_tensor.data; }

/* Times one row, checks what ours wrote and prints the row. The baseline moves `j->nbytes`
 * between its own buffers, so that ours' output is still there to check: against the host view
 * `expected` for a device destination, against `expected_host` bytes for a host one. */
static void run_row(const char* name, const char* baseline, job* j, const settings* cfg,
                    const DLManagedTensorVersioned* expected, const void* expected_host) {
  double ours, base;
  time_job(j, cfg, &ours, &base);
  if (expected != NULL) {
    verify(name, j->dst, expected);
  } else if (memcmp(j->dst->dl_tensor.data, expected_host, j->nbytes) != 0) {
    fprintf(stderr, "bench_opencl: check failed: %s gave wrong bytes\n", name);
    exit(3);
  }
  print_row(name, j->nbytes, ours, baseline, base);
}

static job make_job(const DLManagedTensorVersioned* src, DLManagedTensorVersioned* dst,
                    baseline_kind kind, cl_mem base_src, cl_mem base_dst, void* host,
                    size_t nbytes) {
  job j;
  j.src = src;
  j.dst = dst;
  j.kind = kind;
  j.base_src = base_src;
  j.base_dst = base_dst;
  j.host = host;
  j.nbytes = nbytes;
  return j;
}

static void run_size(int64_t side, const settings* cfg) {
  const size_t nbytes = (size_t)(side * side) * sizeof(float);
  DLManagedTensorVersioned *host_src, *host_dst, *host_base_dst, *dev_src, *dev_dst, *dev_base_dst;
  DLManagedTensorVersioned *view, *host_view, *wide_host, *wide_dev, *wide_view, *wide_host_view;
  dlb_slice columns[2];
  job j;

  host_src = allocate(cpu_device, side, side);
  fill_host(host_src);
  /* The baselines write destinations of their own. */
  host_dst = allocate(cpu_device, side, side);
  memset(host_dst->dl_tensor.data, 0, nbytes);
  host_base_dst = allocate(cpu_device, side, side);
  memset(host_base_dst->dl_tensor.data, 0, nbytes);
  dev_src = NULL;
  CHECK(dlb_tensor_copy(host_src, cl_device, &dev_src, &bench_error));
  dev_dst = allocate(cl_device, side, side);
  dev_base_dst = allocate(cl_device, side, side);

  j = make_job(dev_src, dev_dst, BASE_COPY, mem_of(dev_src), mem_of(dev_base_dst), NULL, nbytes);
  run_row("device -> device (dense)", "clEnqueueCopyBuffer", &j, cfg, host_src, NULL);
  j = make_job(host_src, dev_dst, BASE_WRITE, NULL, mem_of(dev_base_dst),
               host_src->dl_tensor.data, nbytes);
  run_row("host -> device (dense)", "clEnqueueWriteBuffer", &j, cfg, host_src, NULL);
  j = make_job(dev_src, host_dst, BASE_READ, mem_of(dev_src), NULL,
               host_base_dst->dl_tensor.data, nbytes);
  run_row("device -> host (dense)", "clEnqueueReadBuffer", &j, cfg, NULL,
          host_src->dl_tensor.data);

  CHECK(dlb_tensor_transpose(dev_src, &view, &bench_error));
  CHECK(dlb_tensor_transpose(host_src, &host_view, &bench_error));
  j = make_job(view, dev_dst, BASE_COPY, mem_of(dev_src), mem_of(dev_base_dst), NULL, nbytes);
  run_row("x.T -> compact (device)", "clEnqueueCopyBuffer", &j, cfg, host_view, NULL);
  dlb_tensor_free(view);
  dlb_tensor_free(host_view);

  /* Every other column of a twice-as-wide matrix. */
  wide_host = allocate(cpu_device, side, 2 * side);
  fill_host(wide_host);
  wide_dev = NULL;
  CHECK(dlb_tensor_copy(wide_host, cl_device, &wide_dev, &bench_error));
  columns[0].start = DLB_SLICE_NONE;
  columns[0].stop = DLB_SLICE_NONE;
  columns[0].step = 1;
  columns[1] = columns[0];
  columns[1].step = 2;
  CHECK(dlb_tensor_slice(wide_dev, 2, columns, &wide_view, &bench_error));
  CHECK(dlb_tensor_slice(wide_host, 2, columns, &wide_host_view, &bench_error));
  j = make_job(wide_view, dev_dst, BASE_COPY, mem_of(wide_dev), mem_of(dev_base_dst), NULL,
               nbytes);
  run_row("x[:, ::2] -> compact (device)", "clEnqueueCopyBuffer", &j, cfg, wide_host_view, NULL);
  dlb_tensor_free(wide_view);
  dlb_tensor_free(wide_host_view);
  dlb_tensor_free(wide_dev);
  dlb_tensor_free(wide_host);

  dlb_tensor_free(dev_base_dst);
  dlb_tensor_free(dev_dst);
  dlb_tensor_free(dev_src);
  dlb_tensor_free(host_base_dst);
  dlb_tensor_free(host_dst);
  dlb_tensor_free(host_src);
}

int main(int argc, char** argv) {
  settings cfg;
  char name[256];
  int i;
  int64_t live_before;
  /* Square float32 matrices of 1, 4, 16, 64 and 256 MiB. */
  static const int64_t sides[] = {512, 1024, 2048, 4096, 8192};
  void* raw_queue = NULL;

  memset(&cfg, 0, sizeof cfg);
  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--quick") == 0) {
      cfg.quick = 1;
    } else {
      fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
      return 2;
    }
  }
  cfg.row_seconds = cfg.quick ? 0.02 : 1.0;
  cfg.min_reps = cfg.quick ? 2 : 5;

  if (dlb_opencl_is_available(&bench_error) != DLB_OK) {
    fprintf(stderr, "bench_opencl: skipped: %s\n", bench_error.message);
    return 77;
  }
  if (!load_raw_opencl()) {
    fprintf(stderr, "bench_opencl: dlbridge found OpenCL but the benchmark could not load it\n");
    return 2;
  }
  CHECK(dlb_opencl_device_objects(0, NULL, NULL, NULL, &raw_queue, &bench_error));
  queue = (cl_command_queue)raw_queue;
  CHECK(dlb_opencl_device_name(0, name, sizeof name, &bench_error));

  printf("dlbridge %s bench_opencl (%s mode) on opencl:0 = %s\n", dlb_version_string(),
         cfg.quick ? "quick smoke" : "full", name);
  printf("  GB/s: output bytes / median time of >= %d copies (1 GB = 1e9 bytes), after a warm-up;\n"
         "  ours and the baseline alternate; ratio = ours / baseline; float32 matrices\n\n",
         cfg.min_reps);
  printf("%-30s %12s %14s  %-22s %14s %7s\n", "copy", "output", "dlbridge", "baseline", "baseline",
         "ratio");
  for (i = 0; i < 30 + 1 + 12 + 1 + 14 + 2 + 22 + 1 + 14 + 1 + 7; ++i) putchar('-');
  putchar('\n');

  live_before = dlb_tensor_live_count();
  for (i = 0; i < (int)(sizeof sides / sizeof sides[0]); ++i) {
    run_size(sides[i], &cfg);
    if (cfg.quick) break;
  }
  if (dlb_tensor_live_count() != live_before) {
    fprintf(stderr, "bench_opencl: check failed: tensors leaked\n");
    return 3;
  }
  return 0;
}
