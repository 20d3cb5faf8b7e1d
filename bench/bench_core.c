/*
 * bench_core.c - measures the costs the dlbridge issue sets targets for and prints them as one
 * table, each row next to a baseline measured in the same run:
 *   - the per-tensor overhead of wrap, import, legacy import/export and share (targets: at most
 *     25 ns for wrap+free, 30 ns for the imports and the legacy export, 20 ns for share+release,
 *     and one heap allocation per cycle), against a malloc(64)+free pair;
 *   - zero-copy import: a 1 GiB tensor must cost what a 1 KiB one does;
 *   - strided and contiguous copies into compact tensors (target: at least half of memcpy's
 *     throughput for the same number of output bytes), and transposes of 1-, 2-, 4- and 8-byte
 *     elements into new and existing tensors (target: 0.8 x memcpy of the same bytes).
 * Usage: bench_core [--quick] [--cycles]. --quick runs tiny sizes for a few milliseconds per row
 * (a smoke run for CI); --cycles runs only the per-cycle rows (wrap, import, share against
 * malloc+free), the quick loop for work on the core's per-tensor costs. The exit status is 0 whether or not targets are met; it is 2 when a dlbridge call
 * fails and 3 when the library misbehaves (a deleter run the wrong number of times, a leaked
 * tensor, a copy with wrong values).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "dlbridge/dlbridge.h"
#include "bench_timing.h"
#include "malloc_count.h"

/* ------------------------------------------------------------------------------------------ */
/* Settings, errors, clock                                                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct settings {
  int quick;
  int cycles_only;      /* --cycles: the per-cycle rows alone */
  double batch_seconds; /* one timed batch of a per-cycle row */
  int batches;          /* batches per per-cycle row; the median is reported */
  double copy_seconds;  /* time budget of one copy row */
  int copy_min_reps;
  int64_t matrix_side; /* the copy benchmarks work on side x side float32 matrices */
} settings;

#define MAX_SAMPLES 64

static dlb_error bench_error;

/* 1 when heap allocations can be counted: the interposer is built in and sees this process's
 * calls (valgrind, for one, replaces malloc before the interposer can see it). */
static int counting_allocations;

static void fail(const char* what, int status) {
  fprintf(stderr, "bench_core: %s failed: %s: %s\n", what, dlb_status_name(status),
          bench_error.message);
  exit(2);
}

#define CHECK(call)                    \
  do {                                 \
    int status_ = (call);              \
    if (status_ != DLB_OK) {           \
      fail(#call, status_);            \
    }                                  \
  } while (0)

static void fail_check(const char* what) {
  fprintf(stderr, "bench_core: check failed: %s\n", what);
  exit(3);
}

/* ------------------------------------------------------------------------------------------ */
/* Which dlbridge this program runs                                                           */
/* ------------------------------------------------------------------------------------------ */

/* The build makes this program twice: bench_core over the shared library and bench_core_static
 * over the static one. It finds out which it runs, rather than being told, from the object that
 * holds dlb_version_string: this executable, or a shared library named by its path. */
static char measured_library[512];

static void find_measured_library(void) {
  const char* (*library_function)(void) = dlb_version_string;
  void (*program_function)(void) = find_measured_library;
  void* library_address;
  void* program_address;
  Dl_info library;
  Dl_info program;
  /* ISO C has no cast between function and object pointers; the bytes are the address. */
  memcpy(&library_address, &library_function, sizeof library_address);
  memcpy(&program_address, &program_function, sizeof program_address);
  if (dladdr(library_address, &library) == 0 || dladdr(program_address, &program) == 0) {
    snprintf(measured_library, sizeof measured_library, "unknown (dladdr failed)");
  } else if (library.dli_fbase == program.dli_fbase) {
    snprintf(measured_library, sizeof measured_library,
             "the static library, linked into this program");
  } else {
    snprintf(measured_library, sizeof measured_library, "the shared library %s",
             library.dli_fname);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* The result table                                                                           */
/* ------------------------------------------------------------------------------------------ */

typedef struct row {
  char name[64];
  double value;
  const char* unit;
  char baseline[48]; /* name of the baseline row, or "(baseline)" */
  double baseline_value;
  double allocs; /* heap allocations per cycle; < 0 when not measured */
  const char* target;
  char status[48];
} row;

#define MAX_ROWS 40
static row rows[MAX_ROWS];
static int row_count;

static row* add_row(const char* name, double value, const char* unit, const char* baseline,
                    double baseline_value, double allocs, const char* target,
                    const char* status) {
  row* r;
  if (row_count == MAX_ROWS) fail_check("too many table rows");
  r = &rows[row_count++];
  snprintf(r->name, sizeof r->name, "%s", name);
  r->value = value;
  r->unit = unit;
  snprintf(r->baseline, sizeof r->baseline, "%s", baseline);
  r->baseline_value = baseline_value;
  r->allocs = allocs;
  r->target = target;
  snprintf(r->status, sizeof r->status, "%s", status);
  return r;
}

static void print_table(const settings* cfg) {
  int i;
  printf("dlbridge %s bench_core (%s mode%s)\n", dlb_version_string(),
         cfg->quick ? "quick smoke" : "full", cfg->cycles_only ? ", per-cycle rows only" : "");
  printf("  measured: %s\n", measured_library);
  printf("  ns/cycle: median of %d timed batches (~%.0f ms each) after a warm-up batch\n",
         cfg->batches, cfg->batch_seconds * 1e3);
  printf("  GB/s: output bytes written / median time of >= %d copies (1 GB = 1e9 bytes), after "
         "one warm-up copy; matrices are %lldx%lld float32, transposes as many bytes\n",
         cfg->copy_min_reps, (long long)cfg->matrix_side, (long long)cfg->matrix_side);
  printf("  memcpy baselines copy between two already-touched buffers (\"fresh dst\": into new "
         "malloc memory) and are timed alternating with the row they are the baseline of\n");
  printf("  ratio = result / baseline, baseline measured in this run;");
  if (counting_allocations) {
    printf(" allocs = heap allocations per cycle, counted by interposing malloc, calloc, "
           "realloc, memalign, aligned_alloc and posix_memalign in this process\n");
  } else {
    printf(" allocs not measured: malloc could not be interposed here (sanitizer, valgrind, or "
           "not glibc)\n");
  }
  printf("\n%-44s %10s %-5s %-24s %10s %7s %7s  %-20s %s\n", "benchmark", "result", "unit",
         "baseline", "base", "ratio", "allocs", "target", "status");
  for (i = 0; i < 44 + 1 + 10 + 1 + 5 + 1 + 24 + 1 + 10 + 1 + 7 + 1 + 7 + 2 + 20 + 1 + 30; ++i) {
    putchar('-');
  }
  putchar('\n');
  for (i = 0; i < row_count; ++i) {
    const row* r = &rows[i];
    char allocs[16];
    double ratio = r->baseline_value > 0 ? r->value / r->baseline_value : 0.0;
    if (r->allocs < 0) {
      snprintf(allocs, sizeof allocs, "-");
    } else {
      snprintf(allocs, sizeof allocs, "%.2f", r->allocs);
    }
    printf("%-44s %10.2f %-5s %-24s %10.2f %7.2f %7s  %-20s %s\n", r->name, r->value, r->unit,
           r->baseline, r->baseline_value, ratio, allocs, r->target, r->status);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Per-cycle benchmarks                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* Runs `count` cycles of one operation. */
typedef void (*cycle_loop)(long count);

/* Keeps the baseline's malloc from being optimised away. */
static void* volatile heap_sink;

static long release_calls;
static long foreign_deleter_calls;
static long legacy_deleter_calls;

static void count_release(void* release_ctx) {
  (void)release_ctx;
  ++release_calls;
}

/* A small 2-d float32 CPU tensor over static memory: what dlb_tensor_wrap is given. */
static float small_data[4 * 8];
static int64_t small_shape[2] = {4, 8};
static int64_t small_strides[2] = {8, 1};
static DLTensor small_tensor;

/* Foreign tensors built here, the way another framework would hand them over. */
static void foreign_deleter(DLManagedTensorVersioned* self) {
  (void)self;
  ++foreign_deleter_calls;
}

static void foreign_legacy_deleter(DLManagedTensor* self) {
  (void)self;
  ++legacy_deleter_calls;
}

static DLManagedTensorVersioned foreign_template;
static DLManagedTensorVersioned foreign_tensor;
static DLManagedTensor foreign_legacy_template;
static DLManagedTensor foreign_legacy_tensor;

/* The tensor that share+release works on. */
static DLManagedTensorVersioned* shared_base;

static void loop_malloc_free(long count) {
  long i;
  for (i = 0; i < count; ++i) {
    heap_sink = malloc(64);
    free(heap_sink);
  }
}

static void loop_validate(long count) {
  long i;
  for (i = 0; i < count; ++i) {
    CHECK(dlb_tensor_validate(&small_tensor, 0, &bench_error));
  }
}

static void loop_wrap_free(long count) {
  long i;
  for (i = 0; i < count; ++i) {
    DLManagedTensorVersioned* t;
    CHECK(dlb_tensor_wrap(&small_tensor, 0, count_release, NULL, &t, &bench_error));
    dlb_tensor_free(t);
  }
}

static void loop_import_free(long count) {
  long i;
  for (i = 0; i < count; ++i) {
    DLManagedTensorVersioned* t;
    foreign_tensor = foreign_template;
    CHECK(dlb_tensor_import(&foreign_tensor, &t, &bench_error));
    dlb_tensor_free(t);
  }
}

static void loop_import_legacy_free(long count) {
  long i;
  for (i = 0; i < count; ++i) {
    DLManagedTensorVersioned* t;
    foreign_legacy_tensor = foreign_legacy_template;
    CHECK(dlb_tensor_import_legacy(&foreign_legacy_tensor, &t, &bench_error));
    dlb_tensor_free(t);
  }
}

static void loop_wrap_export_legacy_free(long count) {
  long i;
  for (i = 0; i < count; ++i) {
    DLManagedTensorVersioned* t;
    DLManagedTensor* legacy;
    CHECK(dlb_tensor_wrap(&small_tensor, 0, count_release, NULL, &t, &bench_error));
    CHECK(dlb_tensor_export_legacy(t, &legacy, &bench_error));
    legacy->deleter(legacy);
  }
}

static void loop_share_release(long count) {
  long i;
  for (i = 0; i < count; ++i) {
    DLManagedTensorVersioned* t;
    CHECK(dlb_tensor_share(shared_base, 0, &t, &bench_error));
    dlb_tensor_free(t);
  }
}

static double time_loop(cycle_loop loop, long count) {
  double start = now_seconds();
  loop(count);
  return now_seconds() - start;
}

typedef struct cycle_result {
  double ns;
  double allocs;
  long cycles; /* cycles run in total, warm-up and allocation count included */
} cycle_result;

/* Median ns per cycle over cfg->batches batches of about cfg->batch_seconds each, then the
 * heap allocations of a separate untimed run. */
static cycle_result measure_cycles(cycle_loop loop, const settings* cfg) {
  cycle_result result;
  double samples[MAX_SAMPLES];
  long count = 16;
  long total = 0;
  int b;
  const long alloc_cycles = 1000;
  unsigned long allocations;
  unsigned long frees;

  /* Warm up while growing the batch until it takes long enough to time reliably. */
  for (;;) {
    double t = time_loop(loop, count);
    total += count;
    if (t >= cfg->batch_seconds * 0.25 || count > (1L << 40)) {
      double scaled = (double)count * cfg->batch_seconds / (t > 0 ? t : 1e-9);
      count = scaled < 1.0 ? 1 : (long)scaled;
      break;
    }
    count *= 4;
  }
  for (b = 0; b < cfg->batches; ++b) {
    samples[b] = time_loop(loop, count) * 1e9 / (double)count;
    total += count;
  }
  result.ns = median(samples, cfg->batches);

  malloc_count_start();
  loop(alloc_cycles);
  malloc_count_stop(&allocations, &frees);
  total += alloc_cycles;
  if (counting_allocations && allocations != frees) {
    fail_check("a cycle left heap allocations behind");
  }
  result.allocs = counting_allocations ? (double)allocations / (double)alloc_cycles : -1.0;
  result.cycles = total;
  return result;
}

static const char* overhead_status(double ns, double allocs, double target_ns) {
  if (ns > target_ns) return "MISS";
  if (allocs > 1.0) return "MISS";
  return allocs < 0 ? "PASS (time only)" : "PASS";
}

static void check_counter(const char* what, long calls, long expected) {
  if (calls != expected) {
    fprintf(stderr, "bench_core: %s ran %ld times for %ld cycles\n", what, calls, expected);
    exit(3);
  }
}

static void run_overhead_rows(const settings* cfg, int64_t live_before) {
  /* The budgets: wrap+free 25 ns, import+free 30 ns, share+release 20 ns; the legacy
   * rows keep the 30 ns every cycle had before. */
  static const char wrap_target[] = "<=25 ns, <=1 alloc";
  static const char overhead_target[] = "<=30 ns, <=1 alloc";
  static const char share_target[] = "<=20 ns, <=1 alloc";
  cycle_result base;
  cycle_result r;
  cycle_result wrap;
  DLManagedTensorVersioned* probe;

  base = measure_cycles(loop_malloc_free, cfg);
  add_row("malloc(64)+free", base.ns, "ns", "(baseline)", base.ns, base.allocs, "-", "-");

  /* Not a target: the validation every wrap and import runs, for attributing their cost. */
  r = measure_cycles(loop_validate, cfg);
  add_row("validate only (2-d f32, no allocation)", r.ns, "ns", "malloc(64)+free", base.ns,
          r.allocs, "-", "(info)");

  release_calls = 0;
  wrap = measure_cycles(loop_wrap_free, cfg);
  check_counter("the wrap release callback", release_calls, wrap.cycles);
  add_row("wrap+free (2-d f32, release callback)", wrap.ns, "ns", "malloc(64)+free", base.ns,
          wrap.allocs, wrap_target, overhead_status(wrap.ns, wrap.allocs, 25.0));

  /* A foreign tensor must come back as a new dlbridge tensor, not as itself. */
  foreign_tensor = foreign_template;
  CHECK(dlb_tensor_import(&foreign_tensor, &probe, &bench_error));
  if (probe == &foreign_tensor || !dlb_tensor_is_dlbridge(probe)) {
    fail_check("import of a foreign tensor did not produce a dlbridge tensor");
  }
  dlb_tensor_free(probe);
  foreign_deleter_calls = 0;
  r = measure_cycles(loop_import_free, cfg);
  check_counter("the foreign deleter", foreign_deleter_calls, r.cycles);
  add_row("import+free (foreign versioned)", r.ns, "ns", "malloc(64)+free", base.ns, r.allocs,
          overhead_target, overhead_status(r.ns, r.allocs, 30.0));

  legacy_deleter_calls = 0;
  r = measure_cycles(loop_import_legacy_free, cfg);
  check_counter("the foreign legacy deleter", legacy_deleter_calls, r.cycles);
  add_row("import-legacy+free (foreign legacy)", r.ns, "ns", "malloc(64)+free", base.ns,
          r.allocs, overhead_target, overhead_status(r.ns, r.allocs, 30.0));

  /* Export consumes its source, so every cycle needs a fresh dlbridge tensor: the row measures
   * wrap + export + legacy deleter, and the next row subtracts the wrap+free row from it. */
  release_calls = 0;
  r = measure_cycles(loop_wrap_export_legacy_free, cfg);
  check_counter("the wrap release callback (via the legacy deleter)", release_calls, r.cycles);
  add_row("wrap+export-legacy+legacy deleter", r.ns, "ns", "malloc(64)+free", base.ns, r.allocs,
          "-", "(gross; see next row)");
  {
    double net_ns = r.ns - wrap.ns;
    double net_allocs = r.allocs < 0 ? -1.0 : r.allocs - wrap.allocs;
    add_row("  export-legacy+free, net of wrap+free", net_ns, "ns", "malloc(64)+free", base.ns,
            net_allocs, overhead_target, overhead_status(net_ns, net_allocs, 30.0));
  }

  release_calls = 0;
  CHECK(dlb_tensor_wrap(&small_tensor, 0, count_release, NULL, &shared_base, &bench_error));
  r = measure_cycles(loop_share_release, cfg);
  check_counter("the release callback while shares come and go", release_calls, 0);
  dlb_tensor_free(shared_base);
  shared_base = NULL;
  check_counter("the release callback after the last reference", release_calls, 1);
  add_row("share+release", r.ns, "ns", "malloc(64)+free", base.ns, r.allocs, share_target,
          overhead_status(r.ns, r.allocs, 20.0));

  if (dlb_tensor_live_count() != live_before) fail_check("tensors leaked by the cycle rows");
}

/* ------------------------------------------------------------------------------------------ */
/* Zero-copy import: 1 GiB against 1 KiB                                                      */
/* ------------------------------------------------------------------------------------------ */

static void run_import_size_rows(const settings* cfg, int64_t live_before) {
  /* 1 GiB of address space that is never touched: PROT_NONE makes any read of the data fault,
   * which also proves that import does not look at it. */
  const size_t big_bytes = (size_t)1 << 30;
  static int64_t big_shape[2] = {16384, 16384};
  static int64_t big_strides[2] = {16384, 1};
  static int64_t kib_shape[2] = {16, 16};
  static int64_t kib_strides[2] = {16, 1};
  static float kib_data[16 * 16];
  void* reserved = mmap(NULL, big_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
  DLManagedTensorVersioned saved = foreign_template;
  cycle_result kib;
  cycle_result gib;

  if (reserved == MAP_FAILED) fail_check("mmap of 1 GiB of address space");

  foreign_template.dl_tensor.data = kib_data;
  foreign_template.dl_tensor.shape = kib_shape;
  foreign_template.dl_tensor.strides = kib_strides;
  foreign_deleter_calls = 0;
  kib = measure_cycles(loop_import_free, cfg);
  check_counter("the foreign deleter (1 KiB)", foreign_deleter_calls, kib.cycles);

  foreign_template.dl_tensor.data = reserved;
  foreign_template.dl_tensor.shape = big_shape;
  foreign_template.dl_tensor.strides = big_strides;
  foreign_deleter_calls = 0;
  gib = measure_cycles(loop_import_free, cfg);
  check_counter("the foreign deleter (1 GiB)", foreign_deleter_calls, gib.cycles);

  foreign_template = saved;
  munmap(reserved, big_bytes);

  add_row("import+free 1 KiB (16x16 f32)", kib.ns, "ns", "(baseline)", kib.ns, kib.allocs, "-",
          "-");
  add_row("import+free 1 GiB (16384^2 f32, untouched)", gib.ns, "ns", "import+free 1 KiB",
          kib.ns, gib.allocs, "ratio <= 1.5", gib.ns <= 1.5 * kib.ns ? "PASS" : "MISS");

  if (dlb_tensor_live_count() != live_before) fail_check("tensors leaked by the import rows");
}

/* ------------------------------------------------------------------------------------------ */
/* Copies                                                                                     */
/* ------------------------------------------------------------------------------------------ */

typedef void (*copy_op)(void);

static const DLDevice cpu_device = {kDLCPU, 0};

/* Inputs and outputs of the copy rows, set up before each is timed. */
static const DLManagedTensorVersioned* copy_source;
static DLManagedTensorVersioned* copy_destination;
static DLManagedTensorVersioned* last_copy; /* kept from the last timed dlb_tensor_copy */
static unsigned char* memcpy_from;
static unsigned char* memcpy_to;
static size_t memcpy_bytes;
static volatile unsigned char byte_sink;

static void op_memcpy(void) {
  memcpy(memcpy_to, memcpy_from, memcpy_bytes);
  byte_sink = memcpy_to[memcpy_bytes - 1];
}

/* memcpy into memory the process has never touched, as a new tensor's buffer is. */
static void op_memcpy_fresh(void) {
  unsigned char* fresh = malloc(memcpy_bytes);
  if (fresh == NULL) fail_check("malloc of a copy buffer");
  memcpy(fresh, memcpy_from, memcpy_bytes);
  byte_sink = fresh[memcpy_bytes - 1];
  free(fresh);
}

static void op_copy_new(void) {
  DLManagedTensorVersioned* out;
  CHECK(dlb_tensor_copy(copy_source, cpu_device, &out, &bench_error));
  dlb_tensor_free(last_copy);
  last_copy = out;
}

static void op_copy_into(void) {
  CHECK(dlb_tensor_copy_into(copy_source, copy_destination, &bench_error));
}

/* Times several ops in alternation (op 0, op 1, ..., op 0, ...) after one warm-up run of each,
 * for at least cfg->copy_min_reps rounds and about cfg->copy_seconds, and writes the median
 * seconds of each. Alternating makes an op and its baseline see the same machine state. */
#define MAX_OPS 3
static void measure_ops(const copy_op* ops, int count, const settings* cfg, double* medians) {
  double samples[MAX_OPS][MAX_SAMPLES];
  int rounds = 0;
  int k;
  double start;
  for (k = 0; k < count; ++k) ops[k]();
  start = now_seconds();
  while (rounds < MAX_SAMPLES &&
         (rounds < cfg->copy_min_reps || now_seconds() - start < cfg->copy_seconds)) {
    for (k = 0; k < count; ++k) {
      double t0 = now_seconds();
      ops[k]();
      samples[k][rounds] = now_seconds() - t0;
    }
    ++rounds;
  }
  for (k = 0; k < count; ++k) medians[k] = median(samples[k], rounds);
}

/* "64 MiB" or "256 KiB". */
static void format_size(char* buffer, size_t size, size_t bytes) {
  if (bytes >= ((size_t)1 << 20)) {
    snprintf(buffer, size, "%zu MiB", bytes >> 20);
  } else {
    snprintf(buffer, size, "%zu KiB", bytes >> 10);
  }
}

static double gbps(size_t bytes, double seconds) { return (double)bytes / seconds * 1e-9; }

/* The address of element (i, j) of a 2-d CPU tensor with whole-byte elements, through its
 * strides and byte_offset. */
static const char* element_at(const DLTensor* t, int64_t i, int64_t j) {
  const int64_t size = t->dtype.bits / 8 * t->dtype.lanes;
  return (const char*)t->data + t->byte_offset + (i * t->strides[0] + j * t->strides[1]) * size;
}

/* Compares a compact copy with its (possibly strided) source, element by element. */
static void verify_copy(const DLManagedTensorVersioned* copy,
                        const DLManagedTensorVersioned* source, const char* what) {
  const DLTensor* c = &copy->dl_tensor;
  const DLTensor* s = &source->dl_tensor;
  const size_t size = (size_t)(s->dtype.bits / 8 * s->dtype.lanes);
  int64_t i;
  int64_t j;
  if (c->ndim != 2 || c->shape[0] != s->shape[0] || c->shape[1] != s->shape[1]) {
    fail_check(what);
  }
  if (!dlb_tensor_is_c_contiguous(c)) fail_check(what);
  for (i = 0; i < s->shape[0]; ++i) {
    for (j = 0; j < s->shape[1]; ++j) {
      if (memcmp(element_at(c, i, j), element_at(s, i, j), size) != 0) {
        fprintf(stderr, "bench_core: %s: element (%lld, %lld) differs\n", what, (long long)i,
                (long long)j);
        exit(3);
      }
    }
  }
}

static const char* copy_status(double ratio, double target) {
  return ratio >= target ? "PASS" : "MISS";
}

/* The memcpy baselines: between two touched buffers, and into memory never touched before (as
 * a new tensor's is). */
static void memcpy_row(size_t bytes, const settings* cfg) {
  const copy_op ops[2] = {op_memcpy_fresh, op_memcpy};
  double seconds[2];
  char size[32];
  char name[64];
  char base_name[48];
  format_size(size, sizeof size, bytes);
  memcpy_bytes = bytes;
  measure_ops(ops, 2, cfg, seconds);
  snprintf(name, sizeof name, "malloc+memcpy+free %s (fresh dst)", size);
  snprintf(base_name, sizeof base_name, "memcpy %s", size);
  add_row(name, gbps(bytes, seconds[0]), "GB/s", base_name, gbps(bytes, seconds[1]), -1.0, "-",
          "(info)");
}

/* Times dlb_tensor_copy and dlb_tensor_copy_into of `source` against memcpy of `bytes` between
 * touched buffers (the baseline of both rows), each alternating with it; the status column
 * compares the ratio with `target`. A new tensor's memory is touched for the first time by the
 * copy, so that row's status also gives its ratio to a memcpy into fresh malloc memory. */
static void copy_rows(const char* label, const DLManagedTensorVersioned* source, size_t bytes,
                      double target, const settings* cfg) {
  const copy_op new_ops[3] = {op_copy_new, op_memcpy, op_memcpy_fresh};
  const copy_op into_ops[2] = {op_copy_into, op_memcpy};
  const char* copy_target = target >= 0.8 ? ">= 0.80 x memcpy" : ">= 0.50 x memcpy";
  char name[64];
  char base_name[48];
  char size[32];
  char status[48];
  double seconds[3];
  double value;
  double base;
  DLManagedTensorVersioned* destination;

  format_size(size, sizeof size, bytes);
  snprintf(base_name, sizeof base_name, "memcpy %s", size);
  memcpy_bytes = bytes;
  copy_source = source;
  measure_ops(new_ops, 3, cfg, seconds);
  verify_copy(last_copy, source, label);
  if ((dlb_tensor_flags(last_copy) & DLPACK_FLAG_BITMASK_IS_COPIED) == 0) {
    fail_check("a copy does not carry IS_COPIED");
  }
  dlb_tensor_free(last_copy);
  last_copy = NULL;
  value = gbps(bytes, seconds[0]);
  base = gbps(bytes, seconds[1]);
  snprintf(name, sizeof name, "%s: copy (new tensor)", label);
  snprintf(status, sizeof status, "%s (%.2f x fresh-dst memcpy)", copy_status(value / base, target),
           value / gbps(bytes, seconds[2]));
  add_row(name, value, "GB/s", base_name, base, -1.0, copy_target, status);

  CHECK(dlb_tensor_allocate(cpu_device, source->dl_tensor.dtype, source->dl_tensor.ndim,
                            source->dl_tensor.shape, NULL, 0, &destination, &bench_error));
  memset((char*)destination->dl_tensor.data + destination->dl_tensor.byte_offset, 0, bytes);
  copy_destination = destination;
  measure_ops(into_ops, 2, cfg, seconds);
  verify_copy(destination, source, label);
  dlb_tensor_free(destination);
  copy_destination = NULL;
  value = gbps(bytes, seconds[0]);
  base = gbps(bytes, seconds[1]);
  snprintf(name, sizeof name, "%s: copy_into (touched dst)", label);
  add_row(name, value, "GB/s", base_name, base, -1.0, copy_target,
          copy_status(value / base, target));
}

/* A compact rows x cols CPU matrix of `dtype` whose bytes all differ from their neighbours', so
 * that a misplaced element shows in verify_copy. */
static DLManagedTensorVersioned* patterned_matrix(DLDataType dtype, int64_t rows, int64_t cols) {
  const int64_t shape[2] = {rows, cols};
  DLManagedTensorVersioned* matrix;
  unsigned char* bytes;
  size_t count;
  size_t i;
  CHECK(dlb_tensor_allocate(cpu_device, dtype, 2, shape, NULL, 0, &matrix, &bench_error));
  bytes = (unsigned char*)matrix->dl_tensor.data + matrix->dl_tensor.byte_offset;
  count = (size_t)(rows * cols) * dtype.bits / 8;
  for (i = 0; i < count; ++i) bytes[i] = (unsigned char)(i * 7 + i / 251);
  return matrix;
}

/* Transposes of 1-, 2-, 4- and 8-byte elements, each as many bytes as the float32 side x side
 * matrix (64 MiB in the full run: out of every cache): copies of x.T (x rows x cols) into a new
 * tensor and into an existing one (issue #33 target: 0.8 x memcpy of the same bytes). */
static void run_transpose_rows(const settings* cfg) {
  static const struct {
    DLDataType dtype;
    const char* name;
  } types[] = {{{kDLUInt, 8, 1}, "u8"},
               {{kDLUInt, 16, 1}, "u16"},
               {{kDLFloat, 32, 1}, "f32"},
               {{kDLFloat, 64, 1}, "f64"}};
  const int64_t side = cfg->matrix_side;
  size_t t;
  for (t = 0; t < sizeof types / sizeof types[0]; ++t) {
    const int64_t size = types[t].dtype.bits / 8;
    /* side^2 float32 elements' worth of bytes, as square as powers of two allow. */
    const int64_t rows = size <= 2 ? 2 * side : side;
    const int64_t cols = side * side * 4 / size / rows;
    DLManagedTensorVersioned* matrix = patterned_matrix(types[t].dtype, rows, cols);
    DLManagedTensorVersioned* transposed;
    char label[64];
    CHECK(dlb_tensor_transpose(matrix, &transposed, &bench_error));
    snprintf(label, sizeof label, "x.T %s %lldx%lld", types[t].name, (long long)rows,
             (long long)cols);
    copy_rows(label, transposed, (size_t)(rows * cols * size), 0.8, cfg);
    dlb_tensor_free(transposed);
    dlb_tensor_free(matrix);
  }
}

static void run_copy_rows(const settings* cfg, int64_t live_before) {
  const int64_t side = cfg->matrix_side;
  const int64_t shape[2] = {side, side};
  const DLDataType f32 = {kDLFloat, 32, 1};
  const size_t full_bytes = (size_t)(side * side) * sizeof(float);
  const size_t half_bytes = full_bytes / 2;
  DLManagedTensorVersioned* matrix;
  DLManagedTensorVersioned* every_other_column;
  dlb_slice columns[2];
  float* values;
  int64_t i;
  char label[64];
  char full_size[32];

  format_size(full_size, sizeof full_size, full_bytes);
  CHECK(dlb_tensor_allocate(cpu_device, f32, 2, shape, NULL, 0, &matrix, &bench_error));
  values = (float*)(void*)((char*)matrix->dl_tensor.data + matrix->dl_tensor.byte_offset);
  for (i = 0; i < side * side; ++i) values[i] = (float)i;
  columns[0].start = DLB_SLICE_NONE;
  columns[0].stop = DLB_SLICE_NONE;
  columns[0].step = 1;
  columns[1].start = DLB_SLICE_NONE;
  columns[1].stop = DLB_SLICE_NONE;
  columns[1].step = 2;
  CHECK(dlb_tensor_slice(matrix, 2, columns, &every_other_column, &bench_error));
  if (every_other_column->dl_tensor.shape[1] != side / 2) fail_check("x[:, ::2] shape");

  /* memcpy baselines between two buffers that are already touched. */
  memcpy_from = malloc(full_bytes);
  memcpy_to = malloc(full_bytes);
  if (memcpy_from == NULL || memcpy_to == NULL) fail_check("malloc of the memcpy buffers");
  memset(memcpy_from, 1, full_bytes);
  memset(memcpy_to, 2, full_bytes);

  memcpy_row(full_bytes, cfg);
  snprintf(label, sizeof label, "contiguous %s", full_size);
  copy_rows(label, matrix, full_bytes, 0.5, cfg);
  run_transpose_rows(cfg);
  memcpy_row(half_bytes, cfg);
  copy_rows("x[:, ::2]", every_other_column, half_bytes, 0.5, cfg);

  free(memcpy_from);
  free(memcpy_to);
  dlb_tensor_free(every_other_column);
  dlb_tensor_free(matrix);
  if (dlb_tensor_live_count() != live_before) fail_check("tensors leaked by the copy rows");
}

/* ------------------------------------------------------------------------------------------ */
/* main                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static void init_fixtures(void) {
  static int64_t foreign_shape[2] = {4, 8};
  static int64_t foreign_strides[2] = {8, 1};
  const DLDataType f32 = {kDLFloat, 32, 1};

  small_tensor.data = small_data;
  small_tensor.device = cpu_device;
  small_tensor.ndim = 2;
  small_tensor.dtype = f32;
  small_tensor.shape = small_shape;
  small_tensor.strides = small_strides;
  small_tensor.byte_offset = 0;

  foreign_template.version.major = 1;
  foreign_template.version.minor = 3;
  foreign_template.manager_ctx = NULL;
  foreign_template.deleter = foreign_deleter;
  foreign_template.flags = 0;
  foreign_template.dl_tensor = small_tensor;
  foreign_template.dl_tensor.shape = foreign_shape;
  foreign_template.dl_tensor.strides = foreign_strides;

  foreign_legacy_template.dl_tensor = foreign_template.dl_tensor;
  foreign_legacy_template.manager_ctx = NULL;
  foreign_legacy_template.deleter = foreign_legacy_deleter;
}

int main(int argc, char** argv) {
  settings cfg;
  int64_t live_before;
  int i;

  memset(&cfg, 0, sizeof cfg);
  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--quick") == 0) {
      cfg.quick = 1;
    } else if (strcmp(argv[i], "--cycles") == 0) {
      cfg.cycles_only = 1;
    } else {
      fprintf(stderr, "usage: %s [--quick] [--cycles]\n", argv[0]);
      return 2;
    }
  }
  if (cfg.quick) {
    cfg.batch_seconds = 0.001;
    cfg.batches = 3;
    cfg.copy_seconds = 0.005;
    cfg.copy_min_reps = 2;
    cfg.matrix_side = 256;
  } else {
    cfg.batch_seconds = 0.02;
    cfg.batches = 15;
    cfg.copy_seconds = 0.4;
    cfg.copy_min_reps = 7;
    cfg.matrix_side = 4096;
  }

  find_measured_library();
  init_fixtures();
  {
    unsigned long allocations;
    unsigned long frees;
    malloc_count_start();
    loop_malloc_free(1);
    malloc_count_stop(&allocations, &frees);
    counting_allocations = malloc_count_available() && allocations == 1 && frees == 1;
  }
  live_before = dlb_tensor_live_count();
  run_overhead_rows(&cfg, live_before);
  if (!cfg.cycles_only) {
    run_import_size_rows(&cfg, live_before);
    run_copy_rows(&cfg, live_before);
  }
  print_table(&cfg);
  return 0;
}
