/*
 * demo.c - a guided tour of dlbridge. Each step prints what it does and what comes back,
 * including every release callback and deleter as it runs, so the ownership rules can be
 * watched rather than read about. The program exits with 1 if anything does not behave as
 * described (a failed call, a deleter that runs the wrong number of times, a leaked tensor).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlbridge/dlbridge.h"

static int failures;

/* Stops the tour when a call that should succeed does not. */
static void check_ok(int status, const char* call, const dlb_error* error) {
  if (status != DLB_OK) {
    printf("!! %s failed: %s: %s\n", call, dlb_status_name(status), error->message);
    exit(1);
  }
}

#define CALL(call) check_ok((call), #call, &error)

static void expect(int condition, const char* what) {
  if (!condition) {
    printf("!! unexpected: %s\n", what);
    ++failures;
  }
}

static void step(const char* title) {
  static int number;
  printf("\n== %d. %s ==\n", ++number, title);
}

/* ------------------------------------------------------------------------------------------ */
/* Printing tensors                                                                           */
/* ------------------------------------------------------------------------------------------ */

static void print_int64_list(int32_t count, const int64_t* values) {
  int32_t i;
  putchar('[');
  for (i = 0; i < count; ++i) printf(i == 0 ? "%lld" : ", %lld", (long long)values[i]);
  putchar(']');
}

static void print_flags(uint64_t flags) {
  const char* separator = "";
  if (flags == 0) {
    printf("none");
    return;
  }
  if (flags & DLPACK_FLAG_BITMASK_READ_ONLY) {
    printf("%sREAD_ONLY", separator);
    separator = " | ";
  }
  if (flags & DLPACK_FLAG_BITMASK_IS_COPIED) {
    printf("%sIS_COPIED", separator);
    separator = " | ";
  }
  if (flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) {
    printf("%sIS_SUBBYTE_TYPE_PADDED", separator);
  }
}

/* Prints the values of a float32 tensor in host memory, nested like NumPy does. */
static void print_values(const DLTensor* t, const int64_t* strides, int32_t dim, int64_t offset) {
  const float* first = (const float*)(const void*)((const char*)t->data + t->byte_offset);
  int64_t i;
  int32_t pad;
  if (dim == t->ndim) {
    printf("%4g", (double)first[offset]);
    return;
  }
  putchar('[');
  for (i = 0; i < t->shape[dim]; ++i) {
    if (i > 0 && dim + 1 < t->ndim) {
      printf("\n    ");
      for (pad = 0; pad <= dim; ++pad) putchar(' ');
    }
    print_values(t, strides, dim + 1, offset + i * strides[dim]);
  }
  putchar(']');
}

static void show(const char* name, const DLManagedTensorVersioned* tensor) {
  const DLTensor* t = &tensor->dl_tensor;
  int64_t strides[DLB_MAX_NDIM];
  dlb_error error;
  printf("  %s: shape ", name);
  print_int64_list(t->ndim, t->shape);
  CALL(dlb_tensor_get_strides(t, DLB_MAX_NDIM, strides, &error));
  printf("  strides ");
  print_int64_list(t->ndim, strides);
  printf("  byte_offset %llu  flags ", (unsigned long long)t->byte_offset);
  print_flags(tensor->flags);
  printf("\n    ");
  print_values(t, strides, 0, 0);
  putchar('\n');
}

static void show_live(void) {
  printf("  live dlbridge tensors: %lld\n", (long long)dlb_tensor_live_count());
}

/* ------------------------------------------------------------------------------------------ */
/* Callbacks that announce themselves                                                         */
/* ------------------------------------------------------------------------------------------ */

/* What dlb_tensor_wrap is given as release_ctx: a buffer the demo allocated, and its name. */
typedef struct caller_buffer {
  const char* name;
  float* data;
  int release_calls;
} caller_buffer;

static void release_caller_buffer(void* release_ctx) {
  caller_buffer* buffer = (caller_buffer*)release_ctx;
  ++buffer->release_calls;
  printf("  [release callback] freeing the caller's buffer \"%s\" (call #%d)\n", buffer->name,
         buffer->release_calls);
  free(buffer->data);
  buffer->data = NULL;
}

/* A foreign producer: what another framework hands over, built by hand on the stack. */
typedef struct foreign_tensor {
  DLManagedTensorVersioned managed;
  const char* name;
  int deleter_calls;
} foreign_tensor;

static void foreign_deleter(DLManagedTensorVersioned* self) {
  /* manager_ctx points back at the enclosing struct, as a producer's context would. */
  foreign_tensor* owner = (foreign_tensor*)self->manager_ctx;
  ++owner->deleter_calls;
  printf("  [foreign deleter] producer frees \"%s\" (call #%d)\n", owner->name,
         owner->deleter_calls);
}

static void make_foreign(foreign_tensor* f, const char* name, float* data, int64_t* shape,
                         int64_t* strides) {
  memset(f, 0, sizeof *f);
  f->name = name;
  f->managed.version.major = 1;
  f->managed.version.minor = 3;
  f->managed.manager_ctx = f;
  f->managed.deleter = foreign_deleter;
  f->managed.flags = 0;
  f->managed.dl_tensor.data = data;
  f->managed.dl_tensor.device.device_type = kDLCPU;
  f->managed.dl_tensor.device.device_id = 0;
  f->managed.dl_tensor.ndim = 2;
  f->managed.dl_tensor.dtype.code = kDLFloat;
  f->managed.dl_tensor.dtype.bits = 32;
  f->managed.dl_tensor.dtype.lanes = 1;
  f->managed.dl_tensor.shape = shape;
  f->managed.dl_tensor.strides = strides;
  f->managed.dl_tensor.byte_offset = 0;
}

static float* host_floats(DLManagedTensorVersioned* tensor) {
  return (float*)(void*)((char*)tensor->dl_tensor.data + tensor->dl_tensor.byte_offset);
}

/* ------------------------------------------------------------------------------------------ */
/* The tour                                                                                   */
/* ------------------------------------------------------------------------------------------ */

int main(void) {
  dlb_error error;
  dlb_library_version library;
  DLPackVersion produced;
  DLPackVersion accepted;
  const DLDevice cpu = {kDLCPU, 0};
  const DLDataType float32 = {kDLFloat, 32, 1};
  DLManagedTensorVersioned* x;
  dlb_status status;
  int64_t i;
  int64_t j;

  dlb_get_version(&library, &produced, &accepted);
  printf("dlbridge demo: library %u.%u.%u, produces DLPack %u.%u, accepts up to %u.%u\n",
         library.major, library.minor, library.patch, produced.major, produced.minor,
         accepted.major, accepted.minor);

  step("Allocate a float32 CPU tensor and fill it");
  {
    const int64_t shape[2] = {3, 4};
    float* values;
    printf("x = dlb_tensor_allocate(cpu, float32, [3, 4]); x[i][j] = 10*i + j\n");
    CALL(dlb_tensor_allocate(cpu, float32, 2, shape, NULL, 0, &x, &error));
    values = host_floats(x);
    for (i = 0; i < 3; ++i) {
      for (j = 0; j < 4; ++j) values[i * 4 + j] = (float)(10 * i + j);
    }
    show("x", x);
    show_live();
  }

  step("Wrap memory the caller owns, with a release callback");
  {
    caller_buffer buffer = {"six floats", NULL, 0};
    int64_t shape[2] = {2, 3};
    DLTensor description;
    DLManagedTensorVersioned* w;
    DLManagedTensorVersioned* row;
    buffer.data = (float*)malloc(6 * sizeof(float));
    if (buffer.data == NULL) return 1;
    for (i = 0; i < 6; ++i) buffer.data[i] = 0.5f + (float)i;
    memset(&description, 0, sizeof description);
    description.data = buffer.data;
    description.device = cpu;
    description.ndim = 2;
    description.dtype = float32;
    description.shape = shape;
    description.strides = NULL; /* compact row-major */
    printf("w = dlb_tensor_wrap(malloc'd buffer as [2, 3], release_caller_buffer)\n");
    CALL(dlb_tensor_wrap(&description, 0, release_caller_buffer, &buffer, &w, &error));
    show("w", w);
    printf("row = dlb_tensor_select(w, axis 0, index 1)  -- a view: it shares w's memory\n");
    CALL(dlb_tensor_select(w, 0, 1, &row, &error));
    show("row", row);
    printf("dlb_tensor_free(w): the view still holds the memory, so nothing is released\n");
    dlb_tensor_free(w);
    expect(buffer.release_calls == 0, "release ran while a view was alive");
    printf("dlb_tensor_free(row): the last reference goes\n");
    dlb_tensor_free(row);
    expect(buffer.release_calls == 1, "release did not run exactly once");
  }

  step("Views of x: slice with a negative step, transpose, reshape");
  {
    dlb_slice slices[2];
    const int64_t new_shape[2] = {2, -1};
    const int64_t flat[1] = {12};
    DLManagedTensorVersioned* view;
    DLManagedTensorVersioned* xt;
    DLManagedTensorVersioned* refused;

    slices[0].start = DLB_SLICE_NONE;
    slices[0].stop = DLB_SLICE_NONE;
    slices[0].step = -1;
    slices[1].start = 1;
    slices[1].stop = 3;
    slices[1].step = 1;
    printf("x[::-1, 1:3]: rows reversed, columns 1 and 2 (negative stride, byte_offset moves)\n");
    CALL(dlb_tensor_slice(x, 2, slices, &view, &error));
    show("x[::-1, 1:3]", view);
    dlb_tensor_free(view);

    printf("dlb_tensor_transpose(x): strides swap, no data moves\n");
    CALL(dlb_tensor_transpose(x, &xt, &error));
    show("x.T", xt);

    printf("dlb_tensor_reshape(x, [2, -1]): -1 is inferred\n");
    CALL(dlb_tensor_reshape(x, 2, new_shape, &view, &error));
    show("x.reshape(2, -1)", view);
    dlb_tensor_free(view);

    printf("dlb_tensor_reshape(x.T, [12]) needs a copy, so it is refused:\n");
    status = dlb_tensor_reshape(xt, 1, flat, &refused, &error);
    printf("  -> %s: %s\n", dlb_status_name(status), status == DLB_OK ? "" : error.message);
    expect(status == DLB_ERR_LAYOUT && refused == NULL, "reshape of x.T was not refused");
    dlb_tensor_free(refused);
    dlb_tensor_free(xt);
  }

  step("Share x as a read-only alias");
  {
    DLManagedTensorVersioned* s;
    printf("s = dlb_tensor_share(x, add READ_ONLY): same memory, its own reference\n");
    CALL(dlb_tensor_share(x, DLPACK_FLAG_BITMASK_READ_ONLY, &s, &error));
    printf("  s is read-only: %d, x is read-only: %d, same data: %s\n",
           dlb_tensor_is_read_only(s), dlb_tensor_is_read_only(x),
           s->dl_tensor.data == x->dl_tensor.data ? "yes" : "no");
    host_floats(x)[0] = 99.0f;
    printf("after x[0][0] = 99 through x:\n");
    show("s", s);
    printf("dlb_tensor_copy_into(x, s) writes into a READ_ONLY tensor:\n");
    status = dlb_tensor_copy_into(x, s, &error);
    printf("  -> %s: %s\n", dlb_status_name(status), status == DLB_OK ? "" : error.message);
    expect(status == DLB_ERR_READ_ONLY, "a write into a READ_ONLY tensor was not refused");
    host_floats(x)[0] = 0.0f;
    dlb_tensor_free(s);
    show_live();
  }

  step("Export to the legacy struct and import it back");
  {
    caller_buffer buffer = {"four floats", NULL, 0};
    int64_t shape[1] = {4};
    DLTensor description;
    DLManagedTensorVersioned* w;
    DLManagedTensorVersioned* back;
    DLManagedTensor* legacy;
    buffer.data = (float*)malloc(4 * sizeof(float));
    if (buffer.data == NULL) return 1;
    for (i = 0; i < 4; ++i) buffer.data[i] = (float)(i * i);
    memset(&description, 0, sizeof description);
    description.data = buffer.data;
    description.device = cpu;
    description.ndim = 1;
    description.dtype = float32;
    description.shape = shape;
    printf("w = dlb_tensor_wrap(malloc'd buffer as [4], release_caller_buffer)\n");
    CALL(dlb_tensor_wrap(&description, 0, release_caller_buffer, &buffer, &w, &error));
    show("w", w);
    printf("legacy = dlb_tensor_export_legacy(w): w moves into a DLManagedTensor (no version, "
           "no flags)\n");
    CALL(dlb_tensor_export_legacy(w, &legacy, &error));
    printf("  legacy: ndim %d, shape ", (int)legacy->dl_tensor.ndim);
    print_int64_list(legacy->dl_tensor.ndim, legacy->dl_tensor.shape);
    printf(", deleter %s\n", legacy->deleter != NULL ? "set" : "NULL");
    printf("back = dlb_tensor_import_legacy(legacy): a versioned tensor again, zero-copy\n");
    CALL(dlb_tensor_import_legacy(legacy, &back, &error));
    printf("  version %u.%u, same data: %s\n", back->version.major, back->version.minor,
           back->dl_tensor.data == (void*)buffer.data ? "yes" : "no");
    show("back", back);
    printf("dlb_tensor_free(back): calls the legacy deleter, which drops the last reference "
           "to w:\n");
    dlb_tensor_free(back);
    printf("  release callback ran %d time(s)\n", buffer.release_calls);
    expect(buffer.release_calls == 1, "the legacy deleter did not release w exactly once");
    show_live();
  }

  step("Import a tensor from a foreign producer");
  {
    float data[2][2] = {{1.0f, 2.0f}, {3.0f, 4.0f}};
    int64_t shape[2] = {2, 2};
    int64_t strides[2] = {1, 2}; /* column-major: the producer's own layout */
    foreign_tensor foreign;
    DLManagedTensorVersioned* imported;
    make_foreign(&foreign, "2x2 column-major", &data[0][0], shape, strides);
    printf("imported = dlb_tensor_import(&foreign): validated, not copied\n");
    CALL(dlb_tensor_import(&foreign.managed, &imported, &error));
    printf("  imported is a dlbridge tensor: %d, is the foreign struct itself: %s\n",
           dlb_tensor_is_dlbridge(imported), imported == &foreign.managed ? "yes" : "no");
    show("imported", imported);
    printf("dlb_tensor_free(imported): the producer's deleter runs once\n");
    dlb_tensor_free(imported);
    expect(foreign.deleter_calls == 1, "the foreign deleter did not run exactly once");
  }

  step("Rejected imports still call the deleter");
  {
    float data[4] = {0};
    int64_t shape[2] = {2, 2};
    int64_t bad_shape[2] = {2, -3};
    foreign_tensor future;
    foreign_tensor malformed;
    DLManagedTensorVersioned* out;

    make_foreign(&future, "from DLPack 2.0", data, shape, NULL);
    future.managed.version.major = 2;
    printf("dlb_tensor_import(a tensor stamped DLPack 2.0):\n");
    status = dlb_tensor_import(&future.managed, &out, &error);
    printf("  -> %s: %s\n", dlb_status_name(status), status == DLB_OK ? "" : error.message);
    expect(status == DLB_ERR_UNSUPPORTED_VERSION && out == NULL, "a 2.0 tensor was accepted");
    expect(future.deleter_calls == 1, "the rejected tensor's deleter did not run once");

    make_foreign(&malformed, "negative extent", data, bad_shape, NULL);
    printf("dlb_tensor_import(a tensor of shape [2, -3]):\n");
    status = dlb_tensor_import(&malformed.managed, &out, &error);
    printf("  -> %s: %s\n", dlb_status_name(status), status == DLB_OK ? "" : error.message);
    expect(status == DLB_ERR_INVALID_ARGUMENT && out == NULL, "a negative extent was accepted");
    expect(malformed.deleter_calls == 1, "the rejected tensor's deleter did not run once");
  }

  step("Copy a strided view into a contiguous tensor");
  {
    DLManagedTensorVersioned* xt;
    DLManagedTensorVersioned* c;
    CALL(dlb_tensor_transpose(x, &xt, &error));
    printf("x.T is C-contiguous: %d\n", dlb_tensor_is_c_contiguous(&xt->dl_tensor));
    printf("c = dlb_tensor_copy(x.T, cpu)\n");
    CALL(dlb_tensor_copy(xt, cpu, &c, &error));
    printf("  c is C-contiguous: %d, c owns new memory: %s\n",
           dlb_tensor_is_c_contiguous(&c->dl_tensor),
           c->dl_tensor.data != x->dl_tensor.data ? "yes" : "no");
    show("c", c);
    expect((c->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0, "the copy lacks IS_COPIED");
    dlb_tensor_free(c);
    dlb_tensor_free(xt);
  }

  step("Free everything");
  printf("dlb_tensor_free(x)\n");
  dlb_tensor_free(x);
  show_live();
  expect(dlb_tensor_live_count() == 0, "tensors are still alive");

  if (failures != 0) {
    printf("\n%d unexpected result(s)\n", failures);
    return 1;
  }
  printf("\nall steps behaved as described\n");
  return 0;
}
