/* test_go_native.c - drives the C half of the Go binding without the Go runtime: SWIG's wrapper
 * (internal/capi/dlbridge_wrap.c, the committed output, with the by-value calls of
 * generators/swig/dlbridge.i), the copy of the shared release engine the module carries
 * (internal/capi/dlbx_release.c) and the C of the Go tests (internal/ctest/ctest.c), all included
 * here and built by Meson with the project's warnings and -Werror; the foreign producer of
 * tests/foreign is linked in. The wrappers take Go's slice and string headers by value, which C
 * can build. It checks results, the error records (status and message verbatim, each freed),
 * slice conversions and ownership (the live count returns to its start; a wrapped buffer's token
 * comes back exactly once: from the free on the same thread, or through the queue from another
 * thread). In suites `go` and `gonative`; scripts/test.sh runs `gonative` under ASan+UBSan,
 * valgrind and TSan. Prints "N passed, N failed" last. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>

#include "dlbridge_wrap.c"
#include "dlbx_release.c"
#include "ctest.c"
#include "foreign_dlpack.h"
#include "go_wrap_suffix.h"

/* The wrapper functions carry SWIG's per-package suffix, which changes with the interface:
 * go_wrap_suffix.h (DLB_GO_SUFFIX) is read from the wrapper when it is built. */
#ifndef DLB_GO_SUFFIX
#error "go_wrap_suffix.h names no suffix: dlbridge_wrap.c has no _wrap_dlb_tensor_free_<suffix>"
#endif
#define DLB_GO_CAT2(a, b) a##b
#define DLB_GO_CAT(a, b) DLB_GO_CAT2(a, b)
#define W(name) DLB_GO_CAT(_wrap_##name##_, DLB_GO_SUFFIX)

static int g_passed = 0, g_failed = 0;
#define CHECK(cond)                                                         \
  do {                                                                      \
    if (cond) {                                                             \
      ++g_passed;                                                           \
    } else {                                                                \
      ++g_failed;                                                           \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                       \
  } while (0)

/* ---- Go values built in C ---------------------------------------------------------------- */
static _goslice_ slice(void* array, intgo len) {
  _goslice_ s;
  s.array = array;
  s.len = len;
  s.cap = len;
  return s;
}
static const _goslice_ nil_slice = {NULL, 0, 0};
/* Go passes strings with the NUL the goin typemap appends. */
static _gostring_ gostr(const char* text_with_nul, intgo n) {
  _gostring_ s;
  s.p = (char*)text_with_nul;
  s.n = n;
  return s;
}

/* Checks a failed wrapper result: status and message, then frees the record. */
static void check_error(long long result, int32_t status, const char* message, int line) {
  if (result >= 0) {
    ++g_failed;
    fprintf(stderr, "line %d: expected an error, got %lld\n", line, result);
    return;
  }
  if (W(dlbx_go_error_status)(result) != status ||
      strcmp(dlbx_go_error_message(result), message) != 0) {
    ++g_failed;
    fprintf(stderr, "line %d: got (%d, \"%s\"), want (%d, \"%s\")\n", line,
            (int)dlbx_go_error_status(result), dlbx_go_error_message(result), (int)status, message);
  } else {
    ++g_passed;
  }
  W(dlbx_go_error_free)(result);
}
#define CHECK_ERROR(r, s, m) check_error((r), (s), (m), __LINE__)

static const long long cpu = (long long)((uint64_t)kDLCPU << 32);
static const intgo f32 = kDLFloat | (32 << 8) | (1 << 16);

static void* free_on_thread(void* tensor) {
  W(dlb_tensor_free)((long long)(intptr_t)tensor);
  return NULL;
}

int main(void) {
  const long long live0 = W(dlb_tensor_live_count)();

  /* allocate, shape, strides, dtype, device, host data */
  int64_t shape[2] = {2, 3};
  long long t = W(dlb_tensor_allocate)(cpu, f32, slice(shape, 2), nil_slice, 0);
  CHECK(t > 0);
  CHECK(W(dlbx_tensor_ndim)(t) == 2);
  CHECK(W(dlbx_tensor_dtype)(t) == f32);
  CHECK(W(dlbx_tensor_device)(t) == cpu);
  int64_t got[2] = {0, 0};
  CHECK(W(dlb_tensor_get_shape)(t, slice(got, 2)) == 0 && got[0] == 2 && got[1] == 3);
  CHECK(W(dlb_tensor_get_strides)(t, slice(got, 2)) == 0 && got[0] == 3 && got[1] == 1);
  int64_t data[1] = {0}, size[1] = {0};
  CHECK(W(dlb_tensor_host_data)(t, 1, slice(data, 1), slice(size, 1)) == 0 && size[0] == 24);
  {
    float* f = (float*)(intptr_t)data[0];
    int i;
    for (i = 0; i < 6; ++i) f[i] = (float)i;
  }
  /* views, share, copy */
  int64_t triples[3] = {1, DLB_SLICE_NONE, 1};
  long long sl = W(dlb_tensor_slice)(t, slice(triples, 3));
  CHECK(sl > 0);
  long long se = W(dlb_tensor_select)(t, 1, -1);
  CHECK(se > 0);
  int64_t new_shape[2] = {3, -1};
  long long re = W(dlb_tensor_reshape)(t, slice(new_shape, 2));
  CHECK(re > 0);
  int32_t axes[2] = {1, 0};
  long long pe = W(dlb_tensor_permute)(t, slice(axes, 2));
  CHECK(pe > 0);
  long long tr = W(dlb_tensor_transpose)(t);
  CHECK(tr > 0);
  long long sh = W(dlb_tensor_share)(t, DLPACK_FLAG_BITMASK_READ_ONLY);
  CHECK(sh > 0 && W(dlb_tensor_is_read_only)(sh) == 1);
  long long cp = W(dlb_tensor_copy)(tr, cpu);
  CHECK(cp > 0);
  CHECK(W(dlb_tensor_host_data)(cp, 0, slice(data, 1), slice(size, 1)) == 0);
  CHECK(((float*)(intptr_t)data[0])[1] == 3.0f);
  /* errors: the core's, and the typemaps' own */
  CHECK_ERROR(W(dlb_tensor_host_data)(sh, 1, slice(data, 1), slice(size, 1)), DLB_ERR_READ_ONLY,
              "the tensor is read-only");
  CHECK_ERROR(W(dlb_tensor_copy_into)(t, sh), DLB_ERR_READ_ONLY, "cannot copy into a read-only tensor");
  CHECK_ERROR(W(dlb_tensor_export_legacy)(sh), DLB_ERR_READ_ONLY,
              "cannot export a read-only tensor as a legacy DLManagedTensor, which has no READ_ONLY flag");
  int64_t bad_shape[2] = {2, -3};
  CHECK_ERROR(W(dlb_tensor_allocate)(cpu, f32, slice(bad_shape, 2), nil_slice, 0),
              DLB_ERR_INVALID_ARGUMENT, "shape[1] is -3; extents must not be negative");
  CHECK_ERROR(W(dlb_tensor_allocate)(cpu, f32, nil_slice, nil_slice, 0), DLB_ERR_INVALID_ARGUMENT,
              "shape is null");
  CHECK_ERROR(W(dlb_tensor_allocate)(cpu, f32, slice(shape, 2), slice(shape, 1), 0),
              DLB_ERR_INVALID_ARGUMENT, "strides must have one value per extent");
  int64_t two[2] = {1, 2};
  CHECK_ERROR(W(dlb_tensor_slice)(t, slice(two, 2)), DLB_ERR_INVALID_ARGUMENT,
              "slices must be (start, stop, step) triples");
  CHECK_ERROR(W(dlb_tensor_get_shape)(t, slice(got, 1)), DLB_ERR_INVALID_ARGUMENT,
              "output has room for 1 values but the tensor has 2 dimensions");
  CHECK_ERROR(W(dlb_tensor_reshape)(tr, slice(shape, 2)), DLB_ERR_LAYOUT,
              "cannot reshape a tensor of shape (3, 2) and strides (1, 3) into shape (2, 3) without copying");
  /* legacy export + import */
  long long t2 = W(dlb_tensor_share)(t, 0);
  long long legacy = W(dlb_tensor_export_legacy)(t2);
  CHECK(legacy > 0);
  long long back = W(dlb_tensor_import_legacy)(legacy);
  CHECK(back > 0);
  /* versioned import of a major-2 tensor: the deleter runs, the core's message */
  long long v2 = W(dlb_tensor_share)(t, 0);
  ((DLManagedTensorVersioned*)(intptr_t)v2)->version.major = 2;
  CHECK_ERROR(W(dlb_tensor_import)(v2), DLB_ERR_UNSUPPORTED_VERSION,
              "DLPack major version 2 is not supported (dlbridge accepts major version 1)");
  /* text in and out */
  int32_t dt[1] = {0};
  CHECK(W(dlb_dtype_parse)(gostr("bfloat16x4", 11), slice(dt, 1)) == 0 &&
        dt[0] == (kDLBfloat | (16 << 8) | (4 << 16)));
  CHECK_ERROR(W(dlb_dtype_parse)(gostr("float7", 7), slice(dt, 1)), DLB_ERR_INVALID_ARGUMENT,
              "dtype float with 7 bits is not a valid DLPack type");
  CHECK_ERROR(W(dlb_dtype_parse)(gostr("int8", 4), slice(dt, 1)), DLB_ERR_INVALID_ARGUMENT,
              "a string argument must end with a NUL byte");
  char name[DLB_DTYPE_NAME_SIZE];
  CHECK(W(dlb_dtype_format)((intgo)dt[0], slice(name, sizeof name)) == 0 &&
        strcmp(name, "bfloat16x4") == 0);
  int64_t dev[1] = {0};
  CHECK(W(dlb_device_parse)(gostr("cuda:1", 7), slice(dev, 1)) == 0 &&
        dev[0] == (long long)(((uint64_t)kDLCUDA << 32) | 1));
  char small[3];
  CHECK_ERROR(W(dlb_device_format)(dev[0], slice(small, sizeof small)), DLB_ERR_INVALID_ARGUMENT,
              "buffer of 3 bytes is too small for device name 'cuda:1'");
  int64_t count[1] = {-1};
  CHECK(W(dlb_shape_element_count)(slice(shape, 2), slice(count, 1)) == 0 && count[0] == 6);
  {
    /* A returned C string reaches Go as a malloc'd copy that the Go side frees (Swig_free). */
    _gostring_ s = W(dlb_status_name)(DLB_ERR_LAYOUT);
    CHECK(s.n == 14 && memcmp(s.p, "DLB_ERR_LAYOUT", 14) == 0);
    W(Swig_free)(s.p);
  }

  long long views[] = {t, sl, se, re, pe, tr, sh, cp, back};
  size_t i;
  for (i = 0; i < sizeof views / sizeof views[0]; ++i) W(dlb_tensor_free)(views[i]);

  /* Wrap through SWIG: the buffer check, then the token's way back. */
  static float buffer[6];
  const long long queued0 = *(const int64_t*)(intptr_t)W(dlbx_release_queued)();
  int64_t four[1] = {4};
  long long w = W(dlbx_tensor_wrap)((long long)(intptr_t)buffer, sizeof buffer, slice(four, 1), nil_slice,
                                    cpu, f32, 0, 0, 42);
  CHECK(w > 0);
  CHECK(W(dlbx_tensor_free)(w) == 42); /* the last reference, freed here: the token comes back */
  w = W(dlbx_tensor_wrap)((long long)(intptr_t)buffer, sizeof buffer, slice(four, 1), nil_slice, cpu, f32, 0, 0, 43);
  long long view = W(dlb_tensor_transpose)(w);
  CHECK(W(dlbx_tensor_free)(w) == 0); /* the view still holds the memory */
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, free_on_thread, (void*)(intptr_t)view) == 0);
  pthread_join(thread, NULL);
  CHECK(*(const int64_t*)(intptr_t)W(dlbx_release_queued)() == queued0 + 1);
  {
    int64_t tokens[4] = {0, 0, 0, 0};
    CHECK(W(dlbx_release_drain)(slice(tokens, 4)) == 1 && tokens[0] == 43);
    CHECK(W(dlbx_release_drain)(slice(tokens, 4)) == 0);
  }
  int64_t six[2] = {2, 3};
  CHECK_ERROR(W(dlbx_tensor_wrap)((long long)(intptr_t)buffer, 5 * sizeof(float), slice(six, 2), nil_slice, cpu,
                                  f32, 0, 0, 44),
              DLB_ERR_INVALID_ARGUMENT, "the tensor's elements reach bytes [0, 24) of a buffer of 20 bytes");
  int64_t negative[1] = {-4};
  CHECK_ERROR(W(dlbx_tensor_wrap)((long long)(intptr_t)buffer, sizeof buffer, slice(negative, 1), nil_slice, cpu,
                                  f32, 0, 0, 45),
              DLB_ERR_INVALID_ARGUMENT, "shape[0] is -4; extents must not be negative");
  CHECK_ERROR(W(dlbx_tensor_wrap)((long long)(intptr_t)buffer, sizeof buffer, slice(six, 2), slice(six, 1), cpu,
                                  f32, 0, 0, 46),
              DLB_ERR_INVALID_ARGUMENT, "strides must have one value per extent");
  CHECK(*(const int64_t*)(intptr_t)W(dlbx_release_queued)() == queued0); /* refused: nothing queued */

  /* The by-value calls of compact tensors (dlbridge.i's shared fast path): extents as scalars. */
  long long r = W(dlbx_tensor_allocate_compact)(cpu, f32, 2, 2, 3, 0, 0, 0);
  CHECK(r > 0);
  DLManagedTensorVersioned* m = (DLManagedTensorVersioned*)(intptr_t)r;
  CHECK(r > 0 && m->dl_tensor.ndim == 2 && m->dl_tensor.shape[1] == 3 && m->dl_tensor.strides[0] == 3 &&
        m->flags == 0);
  W(dlb_tensor_free)(r);
  r = W(dlbx_tensor_allocate_compact)(cpu, kDLInt | (8 << 8) | (1 << 16), 4, 1, 2, 3, 4, DLPACK_FLAG_BITMASK_READ_ONLY);
  m = (DLManagedTensorVersioned*)(intptr_t)r;
  CHECK(r > 0 && m->dl_tensor.shape[3] == 4 && m->dl_tensor.strides[0] == 24 &&
        m->flags == DLPACK_FLAG_BITMASK_READ_ONLY);
  W(dlb_tensor_free)(r);
  r = W(dlbx_tensor_allocate_compact)(cpu, f32, 0, 0, 0, 0, 0, 0);
  CHECK(r > 0 && ((DLManagedTensorVersioned*)(intptr_t)r)->dl_tensor.ndim == 0);
  W(dlb_tensor_free)(r);
  CHECK_ERROR(W(dlbx_tensor_allocate_compact)(cpu, kDLFloat | (7 << 8) | (1 << 16), 2, 2, 3, 0, 0, 0),
              DLB_ERR_INVALID_ARGUMENT, "dtype float with 7 bits is not a valid DLPack type");
  CHECK_ERROR(W(dlbx_tensor_allocate_compact)(cpu, f32, 2, 2, -3, 0, 0, 0), DLB_ERR_INVALID_ARGUMENT,
              "shape[1] is -3; extents must not be negative");
  /* A rank the call cannot carry reaches the core without a shape, which refuses it. */
  CHECK_ERROR(W(dlbx_tensor_allocate_compact)(cpu, f32, 5, 1, 1, 1, 1, 0), DLB_ERR_INVALID_ARGUMENT,
              "shape is NULL but ndim is 5");
  CHECK_ERROR(W(dlbx_tensor_allocate_compact)(cpu, f32, 65, 1, 1, 1, 1, 0), DLB_ERR_INVALID_ARGUMENT,
              "ndim 65 exceeds the maximum of 64");
  CHECK_ERROR(W(dlbx_tensor_allocate_compact)(cpu, f32, -1, 1, 1, 1, 1, 0), DLB_ERR_INVALID_ARGUMENT,
              "ndim -1 is negative");
  r = W(dlbx_tensor_wrap_compact)((long long)(intptr_t)buffer, sizeof buffer, 2, 2, 3, 0, 0, cpu, f32, 0, 0, 47);
  m = (DLManagedTensorVersioned*)(intptr_t)r;
  CHECK(r > 0 && m->dl_tensor.shape[1] == 3 && m->dl_tensor.strides[0] == 3 && m->dl_tensor.data == buffer);
  CHECK(W(dlbx_tensor_free)(r) == 47);
  r = W(dlbx_tensor_wrap_compact)((long long)(intptr_t)buffer, sizeof buffer, 1, 2, 0, 0, 0, cpu, f32, 16, 0, 0);
  m = (DLManagedTensorVersioned*)(intptr_t)r;
  CHECK(r > 0 && (char*)m->dl_tensor.data + m->dl_tensor.byte_offset == (char*)buffer + 16);
  CHECK(W(dlbx_tensor_free)(r) == 0);
  CHECK_ERROR(W(dlbx_tensor_wrap_compact)((long long)(intptr_t)buffer, sizeof buffer, 1, 4, 0, 0, 0, cpu, f32, 12, 0, 48),
              DLB_ERR_INVALID_ARGUMENT, "the tensor's elements reach bytes [12, 28) of a buffer of 24 bytes");
  CHECK_ERROR(W(dlbx_tensor_wrap_compact)((long long)(intptr_t)buffer, sizeof buffer, 1, -4, 0, 0, 0, cpu, f32, 0, 0, 49),
              DLB_ERR_INVALID_ARGUMENT, "shape[0] is -4; extents must not be negative");
  CHECK_ERROR(W(dlbx_tensor_wrap_compact)((long long)(intptr_t)buffer, sizeof buffer, 5, 1, 1, 1, 1, cpu, f32, 0, 0, 50),
              DLB_ERR_INVALID_ARGUMENT, "shape is NULL but ndim is 5");
  CHECK_ERROR(W(dlbx_tensor_wrap_compact)((long long)(intptr_t)buffer, sizeof buffer, 65, 1, 1, 1, 1, cpu, f32, 0, 0, 51),
              DLB_ERR_INVALID_ARGUMENT, "ndim 65 exceeds the maximum of 64");
  CHECK(*(const int64_t*)(intptr_t)W(dlbx_release_queued)() == queued0);

  /* The C of the Go tests: the fuzz target's producer and the benchmark's C column. */
  {
    const int64_t raw_shape[2] = {2, 3}, raw_strides[2] = {1, 2};
    const int64_t deleted = ctest_raw_deleter_calls();
    DLManagedTensorVersioned* raw =
        ctest_make_raw(1, 3, kDLCPU, 0, 2, raw_shape, 1, raw_strides, kDLFloat, 32, 1, 0, 0, 1, 64);
    long long imported = W(dlb_tensor_import)((long long)(intptr_t)raw);
    CHECK(imported > 0);
    W(dlb_tensor_free)(imported);
    CHECK(ctest_raw_deleter_calls() == deleted + 1);
    raw = ctest_make_raw(2, 0, kDLCPU, 0, 0, NULL, 0, NULL, kDLFloat, 32, 1, 0, 0, 0, 0);
    CHECK_ERROR(W(dlb_tensor_import)((long long)(intptr_t)raw), DLB_ERR_UNSUPPORTED_VERSION,
                "DLPack major version 2 is not supported (dlbridge accepts major version 1)");
    CHECK(ctest_raw_deleter_calls() == deleted + 2);
    const int64_t releases = ctest_bench_releases();
    CHECK(ctest_bench_allocate_free(10) >= 0);
    CHECK(ctest_bench_wrap_free(10) >= 0);
    CHECK(ctest_bench_wrap_release_free(10) >= 0 && ctest_bench_releases() == releases + 10);
    CHECK(ctest_bench_export_import_versioned(10) >= 0);
    CHECK(ctest_bench_export_import_legacy(10) >= 0);
    ctest_empty();
  }
  {
    /* The foreign producer the Go tests and the Go parity program share. */
    const int64_t deleted = foreign_dlpack_deleted_count();
    long long imported = W(dlb_tensor_import)(foreign_dlpack_produce_versioned(4, 1, 3, 0));
    CHECK(imported > 0);
    W(dlb_tensor_free)(imported);
    CHECK(foreign_dlpack_deleted_count() == deleted + 1);
  }

  CHECK(W(dlb_tensor_live_count)() == live0);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
