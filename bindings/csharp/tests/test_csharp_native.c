/* test_csharp_native.c - drives the C# binding's native library (libdlbridge_csharp: SWIG's
 * wrappers, the shared release engine and the exception hook of dlbridge_csharp.c) without a
 * managed runtime, calling the exported entry points the P/Invoke declarations call, with a C
 * exception callback in place of the managed one. It checks statuses, the exception each
 * failure raises (status and message verbatim), array conversions and ownership through the entry points C# uses (dlbx_tensor_wrap with a token, dlbx_tensor_free
 * handing the token back, dlbx_release_drain and the queued counter): the live count returns to
 * its start and every token comes back exactly once, also from a foreign thread and from many
 * threads at once. Built and run by Meson in suites `csharp` and `csharp-native`;
 * scripts/test.sh runs suite `csharp-native` under ASan+UBSan, valgrind and TSan. Prints
 * "N passed, N failed" last. */
#define _POSIX_C_SOURCE 200809L /* strdup in C99 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlbridge/dlbridge.h"
#include "dlbridge_csharp.h"

/* ---- the exported entry points (as SWIG generates them; see DLBridgeNativePINVOKE.cs) ------- */
const char* CSharp_DLBridge_dlb_status_name(int status);
const char* CSharp_DLBridge_dlb_version_string(void);
long long CSharp_DLBridge_dlb_dtype_parse(char* name, dlbx_csharp_array out);
long long CSharp_DLBridge_dlb_dtype_format(int dtype, dlbx_csharp_array buffer);
unsigned long long CSharp_DLBridge_dlb_dtype_element_size(int dtype);
long long CSharp_DLBridge_dlb_device_parse(char* text, dlbx_csharp_array out);
long long CSharp_DLBridge_dlb_device_format(long long device, dlbx_csharp_array buffer);
long long CSharp_DLBridge_dlb_tensor_allocate(long long device, int dtype, dlbx_csharp_array shape,
                                              dlbx_csharp_array strides, unsigned long long flags);
long long CSharp_DLBridge_dlb_tensor_import(long long src);
long long CSharp_DLBridge_dlb_tensor_import_legacy(long long src);
long long CSharp_DLBridge_dlb_tensor_export_legacy(long long src);
void CSharp_DLBridge_dlb_tensor_free(long long tensor);
void CSharp_DLBridge_dlb_tensor_free_legacy(long long tensor);
long long CSharp_DLBridge_dlb_tensor_share(long long tensor, unsigned long long add_flags);
long long CSharp_DLBridge_dlb_tensor_live_count(void);
long long CSharp_DLBridge_dlb_tensor_element_count(long long tensor, dlbx_csharp_array out);
long long CSharp_DLBridge_dlb_tensor_get_shape(long long tensor, dlbx_csharp_array out);
long long CSharp_DLBridge_dlb_tensor_get_strides(long long tensor, dlbx_csharp_array out);
unsigned long long CSharp_DLBridge_dlb_tensor_flags(long long tensor);
long long CSharp_DLBridge_dlb_tensor_host_data(long long tensor, int writable,
                                               dlbx_csharp_array data, dlbx_csharp_array size);
long long CSharp_DLBridge_dlb_tensor_slice(long long tensor, dlbx_csharp_array triples);
long long CSharp_DLBridge_dlb_tensor_select(long long tensor, int axis, long long index);
long long CSharp_DLBridge_dlb_tensor_reshape(long long tensor, dlbx_csharp_array shape);
long long CSharp_DLBridge_dlb_tensor_permute(long long tensor, dlbx_csharp_array axes);
long long CSharp_DLBridge_dlb_tensor_transpose(long long tensor);
long long CSharp_DLBridge_dlb_tensor_copy(long long tensor, long long device);
long long CSharp_DLBridge_dlb_tensor_copy_into(long long src, long long dst);
long long CSharp_DLBridge_dlb_device_synchronize(long long device, long long stream);
long long CSharp_DLBridge_dlb_cuda_is_available(void);
long long CSharp_DLBridge_dlb_cuda_device_count(dlbx_csharp_array count);
long long CSharp_DLBridge_dlb_opencl_device_count(dlbx_csharp_array count);
int CSharp_DLBridge_dlbx_tensor_ndim(long long tensor);
int CSharp_DLBridge_dlbx_tensor_dtype(long long tensor);
long long CSharp_DLBridge_dlbx_tensor_device(long long tensor);
long long CSharp_DLBridge_dlbx_tensor_wrap(long long data, unsigned long long buffer_size,
                                           dlbx_csharp_array shape, dlbx_csharp_array strides,
                                           long long device, int dtype,
                                           unsigned long long byte_offset,
                                           unsigned long long flags, long long token);
long long CSharp_DLBridge_dlbx_tensor_free(long long tensor);
int CSharp_DLBridge_dlbx_release_drain(dlbx_csharp_array out);
long long CSharp_DLBridge_dlbx_release_queued(void);

/* ---- the fake runtime ----------------------------------------------------------------------- */
static int g_passed = 0, g_failed = 0;
static int32_t g_status = -1; /* the last exception raised, -1 when none */
static char g_message[DLB_ERROR_MESSAGE_SIZE];

static void on_exception(int32_t status, const char* message) {
  g_status = status;
  snprintf(g_message, sizeof g_message, "%s", message);
}

#define CHECK(cond)                                                   \
  do {                                                                \
    if (cond) {                                                       \
      ++g_passed;                                                     \
    } else {                                                          \
      ++g_failed;                                                     \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                 \
  } while (0)

/* No exception pending; clears it. */
static int no_exception(void) {
  int ok = g_status == -1;
  if (!ok) fprintf(stderr, "unexpected exception %d: %s\n", g_status, g_message);
  g_status = -1;
  return ok;
}

/* The exception pending is (status, message) exactly; clears it. */
static int raised(int32_t status, const char* message) {
  int ok = g_status == status && strcmp(g_message, message) == 0;
  if (!ok) {
    fprintf(stderr, "expected %d \"%s\", got %d \"%s\"\n", status, message, g_status, g_message);
  }
  g_status = -1;
  return ok;
}

static dlbx_csharp_array arr(int64_t n, void* data) {
  dlbx_csharp_array a;
  a.length = n;
  a.data = data;
  return a;
}
static const dlbx_csharp_array null_array = {-1, NULL};

static long long cpu(void) { return (long long)kDLCPU << 32; }
static int f32(void) { return kDLFloat | (32 << 8) | (1 << 16); }

/* ---- a foreign producer --------------------------------------------------------------------- */
static int g_deleted = 0;
static int64_t g_foreign_shape[1] = {4};
static float g_foreign_data[4] = {1, 2, 3, 4};

static void foreign_deleter(DLManagedTensorVersioned* self) {
  __atomic_add_fetch(&g_deleted, 1, __ATOMIC_SEQ_CST);
  free(self);
}
static void foreign_legacy_deleter(DLManagedTensor* self) {
  __atomic_add_fetch(&g_deleted, 1, __ATOMIC_SEQ_CST);
  free(self);
}
static void fill_foreign(DLTensor* t) {
  t->data = g_foreign_data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = 1;
  t->dtype.code = kDLFloat;
  t->dtype.bits = 32;
  t->dtype.lanes = 1;
  t->shape = g_foreign_shape;
  t->strides = NULL;
  t->byte_offset = 0;
}
static DLManagedTensorVersioned* produce(uint32_t major) {
  DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)calloc(1, sizeof *t);
  t->version.major = major;
  t->version.minor = 0;
  t->deleter = foreign_deleter;
  fill_foreign(&t->dl_tensor);
  return t;
}
static DLManagedTensor* produce_legacy(void) {
  DLManagedTensor* t = (DLManagedTensor*)calloc(1, sizeof *t);
  t->deleter = foreign_legacy_deleter;
  fill_foreign(&t->dl_tensor);
  return t;
}

/* ---- tests ---------------------------------------------------------------------------------- */
static void test_constants_and_names(void) {
  char buffer[DLB_DTYPE_NAME_SIZE];
  int32_t dtype[1] = {0};
  long long device[1] = {0};
  /* The constants are compiled into the C# module (VocabularyTest checks them); strings come
   * back as the library's own static text, read by C# in place. */
  CHECK(strcmp(CSharp_DLBridge_dlb_status_name(DLB_ERR_READ_ONLY), "DLB_ERR_READ_ONLY") == 0);
  CHECK(CSharp_DLBridge_dlb_version_string()[0] >= '0' && CSharp_DLBridge_dlb_version_string()[0] <= '9');
  CHECK(CSharp_DLBridge_dlb_dtype_parse((char*)"float32x4", arr(1, dtype)) == 0 && no_exception());
  CHECK(dtype[0] == (kDLFloat | (32 << 8) | (4 << 16)));
  CHECK(CSharp_DLBridge_dlb_dtype_format(dtype[0], arr(sizeof buffer, buffer)) == 0 && no_exception());
  CHECK(strcmp(buffer, "float32x4") == 0);
  CHECK(CSharp_DLBridge_dlb_dtype_element_size(dtype[0]) == 16);
  CSharp_DLBridge_dlb_dtype_parse((char*)"float31", arr(1, dtype));
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, "dtype float with 31 bits is not a valid DLPack type"));
  CSharp_DLBridge_dlb_dtype_parse((char*)"float32", arr(0, dtype));
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, "an output array needs room for one value"));
  CSharp_DLBridge_dlb_dtype_format(f32(), arr(2, buffer));
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, "buffer of 2 bytes is too small for dtype name 'float32'"));
  CHECK(CSharp_DLBridge_dlb_device_parse((char*)"opencl:2", arr(1, device)) == 0 && no_exception());
  CHECK(device[0] == (((long long)kDLOpenCL << 32) | 2));
  CHECK(CSharp_DLBridge_dlb_device_format(device[0], arr(sizeof buffer, buffer)) == 0 && no_exception());
  CHECK(strcmp(buffer, "opencl:2") == 0);
}

static void test_allocate_and_query(void) {
  int64_t start = CSharp_DLBridge_dlb_tensor_live_count();
  int64_t shape[2] = {2, 3}, out[2] = {0, 0}, n[1] = {0}, data[1] = {0}, size[1] = {0};
  int64_t too_many[DLB_MAX_NDIM + 1];
  int64_t strides_bad[1] = {1};
  int64_t negative[2] = {2, -1};
  long long t = CSharp_DLBridge_dlb_tensor_allocate(cpu(), f32(), arr(2, shape), null_array, 0);
  CHECK(t != 0 && no_exception());
  CHECK(CSharp_DLBridge_dlbx_tensor_ndim(t) == 2);
  CHECK(CSharp_DLBridge_dlbx_tensor_dtype(t) == f32());
  CHECK(CSharp_DLBridge_dlbx_tensor_device(t) == cpu());
  CHECK(CSharp_DLBridge_dlb_tensor_get_shape(t, arr(2, out)) == 0 && out[0] == 2 && out[1] == 3);
  CHECK(CSharp_DLBridge_dlb_tensor_get_strides(t, arr(2, out)) == 0 && out[0] == 3 && out[1] == 1);
  CSharp_DLBridge_dlb_tensor_get_shape(t, arr(1, out));
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, "output has room for 1 values but the tensor has 2 dimensions"));
  CHECK(CSharp_DLBridge_dlb_tensor_element_count(t, arr(1, n)) == 0 && n[0] == 6);
  CHECK(CSharp_DLBridge_dlb_tensor_host_data(t, 1, arr(1, data), arr(1, size)) == 0 && no_exception());
  CHECK(data[0] != 0 && size[0] == 24);
  ((float*)(intptr_t)data[0])[5] = 7.5f;
  CSharp_DLBridge_dlb_tensor_free(t);
  CHECK(no_exception());

  /* Refused arguments: the wrapper's own checks and the core's, with their messages. */
  CHECK(CSharp_DLBridge_dlb_tensor_allocate(cpu(), f32(), null_array, null_array, 0) == 0);
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, "shape is null"));
  memset(too_many, 0, sizeof too_many);
  CHECK(CSharp_DLBridge_dlb_tensor_allocate(cpu(), f32(), arr(DLB_MAX_NDIM + 1, too_many), null_array, 0) == 0);
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, "ndim 65 exceeds the maximum of 64"));
  CHECK(CSharp_DLBridge_dlb_tensor_allocate(cpu(), f32(), arr(2, shape), arr(1, strides_bad), 0) == 0);
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, "strides must have one value per extent"));
  CHECK(CSharp_DLBridge_dlb_tensor_allocate(cpu(), f32(), arr(2, negative), null_array, 0) == 0);
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, "shape[1] is -1; extents must not be negative"));
  CHECK(CSharp_DLBridge_dlb_tensor_live_count() == start);
}

static void test_views_and_copies(void) {
  int64_t start = CSharp_DLBridge_dlb_tensor_live_count();
  int64_t shape[2] = {4, 6}, out[2], reshape[2] = {3, -1}, triples[6] = {1, 3, 1, 0, 6, 2};
  int32_t axes[2] = {1, 0}, bad_axes[2] = {0, 0};
  long long base = CSharp_DLBridge_dlb_tensor_allocate(cpu(), f32(), arr(2, shape), null_array, 0);
  long long slice = CSharp_DLBridge_dlb_tensor_slice(base, arr(6, triples));
  long long select = CSharp_DLBridge_dlb_tensor_select(base, 0, -1);
  long long reshaped = CSharp_DLBridge_dlb_tensor_reshape(base, arr(2, reshape));
  long long permuted = CSharp_DLBridge_dlb_tensor_permute(base, arr(2, axes));
  long long transposed = CSharp_DLBridge_dlb_tensor_transpose(base);
  long long shared = CSharp_DLBridge_dlb_tensor_share(base, DLPACK_FLAG_BITMASK_READ_ONLY);
  long long copy, legacy, back;
  int64_t data[1], size[1];
  CHECK(no_exception());
  CSharp_DLBridge_dlb_tensor_free(base); /* the views keep the memory */
  CHECK(CSharp_DLBridge_dlb_tensor_get_shape(slice, arr(2, out)) == 0 && out[0] == 2 && out[1] == 3);
  CHECK(CSharp_DLBridge_dlbx_tensor_ndim(select) == 1);
  CHECK(CSharp_DLBridge_dlb_tensor_get_shape(reshaped, arr(2, out)) == 0 && out[0] == 3 && out[1] == 8);
  CHECK(CSharp_DLBridge_dlb_tensor_get_shape(permuted, arr(2, out)) == 0 && out[0] == 6 && out[1] == 4);
  CHECK(CSharp_DLBridge_dlb_tensor_get_strides(transposed, arr(2, out)) == 0 && out[0] == 1 && out[1] == 6);
  CHECK(CSharp_DLBridge_dlb_tensor_permute(slice, arr(2, bad_axes)) == 0);
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, "axis 0 appears twice in the permutation"));
  CHECK((CSharp_DLBridge_dlb_tensor_flags(shared) & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
  CSharp_DLBridge_dlb_tensor_host_data(shared, 1, arr(1, data), arr(1, size));
  CHECK(raised(DLB_ERR_READ_ONLY, "the tensor is read-only"));
  /* A legacy export refuses READ_ONLY and leaves the tensor with the caller. */
  CHECK(CSharp_DLBridge_dlb_tensor_export_legacy(shared) == 0);
  CHECK(raised(DLB_ERR_READ_ONLY, "cannot export a read-only tensor as a legacy DLManagedTensor, which has no READ_ONLY flag"));
  copy = CSharp_DLBridge_dlb_tensor_copy(slice, cpu());
  CHECK(copy != 0 && no_exception());
  CHECK(CSharp_DLBridge_dlb_tensor_copy_into(slice, copy) == 0 && no_exception());
  CHECK(CSharp_DLBridge_dlb_tensor_copy_into(copy, shared) == 0);
  CHECK(raised(DLB_ERR_READ_ONLY, "cannot copy into a read-only tensor"));
  legacy = CSharp_DLBridge_dlb_tensor_export_legacy(copy);
  CHECK(legacy != 0 && no_exception());
  back = CSharp_DLBridge_dlb_tensor_import_legacy(legacy);
  CHECK(back != 0 && no_exception());
  CHECK(CSharp_DLBridge_dlb_device_synchronize(cpu(), 0) == 0 && no_exception());
  CSharp_DLBridge_dlb_tensor_free(back);
  CSharp_DLBridge_dlb_tensor_free(slice);
  CSharp_DLBridge_dlb_tensor_free(select);
  CSharp_DLBridge_dlb_tensor_free(reshaped);
  CSharp_DLBridge_dlb_tensor_free(permuted);
  CSharp_DLBridge_dlb_tensor_free(transposed);
  CSharp_DLBridge_dlb_tensor_free(shared);
  CHECK(CSharp_DLBridge_dlb_tensor_live_count() == start);
}

static void test_foreign_imports(void) {
  int64_t start = CSharp_DLBridge_dlb_tensor_live_count();
  int deleted = g_deleted;
  long long t = CSharp_DLBridge_dlb_tensor_import((long long)(intptr_t)produce(1));
  CHECK(t != 0 && no_exception());
  CSharp_DLBridge_dlb_tensor_free(t);
  CHECK(g_deleted == deleted + 1);
  t = CSharp_DLBridge_dlb_tensor_import_legacy((long long)(intptr_t)produce_legacy());
  CHECK(t != 0 && no_exception());
  CSharp_DLBridge_dlb_tensor_free(t);
  CHECK(g_deleted == deleted + 2);
  /* Major version 2: refused, and the deleter runs exactly once. */
  CHECK(CSharp_DLBridge_dlb_tensor_import((long long)(intptr_t)produce(2)) == 0);
  CHECK(raised(DLB_ERR_UNSUPPORTED_VERSION, "DLPack major version 2 is not supported (dlbridge accepts major version 1)"));
  CHECK(g_deleted == deleted + 3);
  CHECK(CSharp_DLBridge_dlb_tensor_live_count() == start);
}

static void test_devices(void) {
  int32_t count[1] = {-1};
  long long status = CSharp_DLBridge_dlb_cuda_is_available();
  (void)status;
  if (g_status != -1) {
    CHECK(g_status == DLB_ERR_UNSUPPORTED || g_status == DLB_ERR_DEVICE_UNAVAILABLE);
    g_status = -1;
    CSharp_DLBridge_dlb_cuda_device_count(arr(1, count));
    CHECK(g_status == DLB_ERR_UNSUPPORTED || g_status == DLB_ERR_DEVICE_UNAVAILABLE);
    g_status = -1;
  }
  CSharp_DLBridge_dlb_opencl_device_count(arr(1, count));
  g_status = -1; /* with or without OpenCL: only the call's safety is checked here */
}

/* ---- wrapping and the release engine, through the entry points C# calls -------------------- */
static float g_buffer[64];

static void* free_on_thread(void* arg) {
  DLManagedTensorVersioned* t = (DLManagedTensorVersioned*)arg;
  t->deleter(t); /* as a foreign consumer does: the library's own free is not used */
  return NULL;
}

/* dlbx_tensor_wrap of g_buffer as `n` float32 with `token`. */
static long long wrap(int64_t n, long long token) {
  int64_t shape[1];
  shape[0] = n;
  return CSharp_DLBridge_dlbx_tensor_wrap((long long)(intptr_t)g_buffer, sizeof g_buffer,
                                          arr(1, shape), null_array, cpu(), f32(), 0, 0, token);
}

static int64_t queued(void) {
  return *(const int64_t*)(intptr_t)CSharp_DLBridge_dlbx_release_queued();
}

static int32_t drain(int64_t* out, int32_t capacity) {
  return CSharp_DLBridge_dlbx_release_drain(arr(capacity, out));
}

static int64_t drain_all(int64_t* out, int32_t capacity) {
  int32_t n, total = 0;
  while ((n = drain(out + total, capacity - total)) > 0) total += n;
  return total;
}

static void test_wrap_and_release(void) {
  int64_t start = CSharp_DLBridge_dlb_tensor_live_count();
  int64_t tokens[8], negative[1] = {-3}, shape[2] = {4, 4}, strides[1] = {1};
  pthread_t th;
  long long t = wrap(64, 42);
  CHECK(t != 0 && no_exception());
  CHECK(queued() == 0 && drain(tokens, 8) == 0);
  /* A foreign consumer frees it on a thread no runtime has seen: the token is queued. */
  pthread_create(&th, NULL, free_on_thread, (void*)(intptr_t)t);
  pthread_join(th, NULL);
  CHECK(queued() == 1);
  CHECK(drain_all(tokens, 8) == 1 && tokens[0] == 42);
  CHECK(queued() == 0 && drain_all(tokens, 8) == 0);

  /* Shared: released when the last reference goes, once; the free that releases it hands the
   * token back itself, and nothing is queued. */
  t = wrap(64, 43);
  {
    long long share = CSharp_DLBridge_dlb_tensor_share(t, 0);
    CHECK(CSharp_DLBridge_dlbx_tensor_free(t) == 0);
    CHECK(CSharp_DLBridge_dlbx_tensor_free(share) == 43);
    CHECK(queued() == 0);
  }
  /* Released on this thread but not through dlbx_tensor_free (a consumer calling the deleter):
   * queued; a later free that releases nothing itself leaves it to the drainer. */
  t = wrap(64, 46);
  free_on_thread((void*)(intptr_t)t);
  CHECK(queued() == 1);
  CHECK(CSharp_DLBridge_dlbx_tensor_free(0) == 0);
  CHECK(drain_all(tokens, 8) == 1 && tokens[0] == 46);

  /* More released than one drain holds: the rest waits for the next drains, none lost. */
  {
    long long many[20];
    int64_t k, sum = 0;
    for (k = 0; k < 20; ++k) many[k] = wrap(64, 100 + k);
    for (k = 0; k < 20; ++k) free_on_thread((void*)(intptr_t)many[k]);
    CHECK(queued() == 20);
    CHECK(drain(tokens, 8) == 8);
    for (k = 0; k < 8; ++k) sum += tokens[k];
    CHECK(drain(tokens, 8) == 8);
    for (k = 0; k < 8; ++k) sum += tokens[k];
    CHECK(drain(tokens, 8) == 4);
    for (k = 0; k < 4; ++k) sum += tokens[k];
    CHECK(sum == 20 * 100 + 190);
    CHECK(drain(tokens, 8) == 0 && queued() == 0);
  }

  /* Refused by the core, before anything is built: nothing changes hands, nothing is queued. */
  CHECK(CSharp_DLBridge_dlbx_tensor_wrap((long long)(intptr_t)g_buffer, sizeof g_buffer,
                                         arr(1, negative), null_array, cpu(), f32(), 0, 0, 44) == 0);
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, "shape[0] is -3; extents must not be negative"));
  /* Larger than the buffer: the core's buffer check and message. */
  CHECK(wrap(65, 45) == 0);
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, "the tensor's elements reach bytes [0, 260) of a buffer of 256 bytes"));
  /* Strides of the wrong length: the typemap's check, with the header's message. */
  CHECK(CSharp_DLBridge_dlbx_tensor_wrap((long long)(intptr_t)g_buffer, sizeof g_buffer,
                                         arr(2, shape), arr(1, strides), cpu(), f32(), 0, 0, 47) == 0);
  CHECK(raised(DLB_ERR_INVALID_ARGUMENT, DLB_STRIDES_LENGTH_MESSAGE));
  CHECK(queued() == 0 && drain_all(tokens, 8) == 0);
  /* Memory nothing must release (token 0): nothing comes back. */
  t = wrap(64, 0);
  CHECK(t != 0 && no_exception());
  CHECK(CSharp_DLBridge_dlbx_tensor_free(t) == 0);
  CHECK(queued() == 0);
  CHECK(CSharp_DLBridge_dlb_tensor_live_count() == start);
}

/* A deleter that dlbx_tensor_free runs may free wrapped tensors through dlbx_tensor_free itself.
 * The core defers frees made inside a deleter to the end of the outermost free, so those
 * releases run in the outer call: it hands back one, the next is queued, and the inner calls get
 * none. */
static long long g_inner_tensors[2];
static long long g_inner_released[2] = {-1, -1};
static void deleter_freeing_wrapped(DLManagedTensorVersioned* self) {
  g_inner_released[0] = CSharp_DLBridge_dlbx_tensor_free(g_inner_tensors[0]);
  g_inner_released[1] = CSharp_DLBridge_dlbx_tensor_free(g_inner_tensors[1]);
  free(self);
}

static void test_release_inside_release(void) {
  int64_t start = CSharp_DLBridge_dlb_tensor_live_count();
  int64_t tokens[8];
  long long first, imported;
  DLManagedTensorVersioned* foreign = produce(1);
  long long outer = wrap(64, 61);
  g_inner_tensors[0] = wrap(64, 62);
  g_inner_tensors[1] = wrap(64, 63);
  foreign->deleter = deleter_freeing_wrapped;
  imported = CSharp_DLBridge_dlb_tensor_import((long long)(intptr_t)foreign);
  CHECK(outer != 0 && g_inner_tensors[0] != 0 && g_inner_tensors[1] != 0 && imported != 0 &&
        no_exception());
  first = CSharp_DLBridge_dlbx_tensor_free(imported);
  CHECK(g_inner_released[0] == 0 && g_inner_released[1] == 0);
  CHECK(first == 62);
  CHECK(drain_all(tokens, 8) == 1 && tokens[0] == 63);
  /* The outer call's slot is its own again for the next free. */
  CHECK(CSharp_DLBridge_dlbx_tensor_free(outer) == 61);
  CHECK(drain_all(tokens, 8) == 0);
  CHECK(CSharp_DLBridge_dlb_tensor_live_count() == start);
}

/* Many threads wrap and free while others drain: every token comes back exactly once. */
#define THREADS 4
#define PER_THREAD 2000
static int g_seen[THREADS * PER_THREAD];

static void* wrap_many(void* arg) {
  int64_t base = (int64_t)(intptr_t)arg, i;
  for (i = 0; i < PER_THREAD; ++i) {
    long long t = wrap(64, base + i + 1);
    long long share = CSharp_DLBridge_dlb_tensor_share(t, 0);
    long long released = CSharp_DLBridge_dlbx_tensor_free(t); /* 0: the share holds it */
    if (i % 2 == 0) {
      /* The last reference through dlbx_tensor_free: the token comes back from the call. */
      if (released > 0) __atomic_add_fetch(&g_seen[released - 1], 1, __ATOMIC_RELAXED);
      released = CSharp_DLBridge_dlbx_tensor_free(share);
    } else {
      /* Through the deleter: queued, for the drainers. */
      DLManagedTensorVersioned* last = (DLManagedTensorVersioned*)(intptr_t)share;
      last->deleter(last);
    }
    if (released > 0) __atomic_add_fetch(&g_seen[released - 1], 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void* drain_some(void* arg) {
  int64_t tokens[16];
  int32_t n, i, k;
  (void)arg;
  for (k = 0; k < 2000; ++k) {
    n = drain(tokens, 16);
    for (i = 0; i < n; ++i) __atomic_add_fetch(&g_seen[tokens[i] - 1], 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

static void test_concurrent_release(void) {
  pthread_t producers[THREADS], drainers[2];
  int64_t tokens[64];
  int32_t n, i, once = 1;
  int64_t start = CSharp_DLBridge_dlb_tensor_live_count();
  for (i = 0; i < THREADS; ++i) {
    pthread_create(&producers[i], NULL, wrap_many, (void*)(intptr_t)(i * PER_THREAD));
  }
  for (i = 0; i < 2; ++i) pthread_create(&drainers[i], NULL, drain_some, NULL);
  for (i = 0; i < THREADS; ++i) pthread_join(producers[i], NULL);
  for (i = 0; i < 2; ++i) pthread_join(drainers[i], NULL);
  while ((n = drain(tokens, 64)) > 0) {
    for (i = 0; i < n; ++i) g_seen[tokens[i] - 1]++;
  }
  for (i = 0; i < THREADS * PER_THREAD; ++i) once = once && g_seen[i] == 1;
  CHECK(once);
  CHECK(queued() == 0);
  CHECK(CSharp_DLBridge_dlb_tensor_live_count() == start);
}

int main(void) {
  dlbx_csharp_register_exception(on_exception);
  test_constants_and_names();
  test_allocate_and_query();
  test_views_and_copies();
  test_foreign_imports();
  test_devices();
  test_wrap_and_release();
  test_release_inside_release();
  test_concurrent_release();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
