/*
 * layout_c99.c - the layout checks compiled as C99 with -pedantic (see layout_checks.h), plus
 * compile-time checks of the exchange-API function-pointer types: assigning a function of the
 * documented signature to each typedef is an incompatible-pointer error under -Werror if the
 * typedef's signature differs.
 */
#include "layout_checks.h"

static int alloc_fn(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                    void (*set_error)(void* error_ctx, const char* kind, const char* message)) {
  (void)prototype;
  (void)out;
  (void)error_ctx;
  (void)set_error;
  return -1;
}
static int from_py_fn(void* py_object, DLManagedTensorVersioned** out) {
  (void)py_object;
  (void)out;
  return -1;
}
static int to_py_fn(DLManagedTensorVersioned* tensor, void** out_py_object) {
  (void)tensor;
  (void)out_py_object;
  return -1;
}
static int dltensor_from_py_fn(void* py_object, DLTensor* out) {
  (void)py_object;
  (void)out;
  return -1;
}
static int stream_fn(DLDeviceType device_type, int32_t device_id, void** out_current_stream) {
  (void)device_type;
  (void)device_id;
  (void)out_current_stream;
  return -1;
}
static void legacy_deleter(DLManagedTensor* self) { (void)self; }
static void versioned_deleter(DLManagedTensorVersioned* self) { (void)self; }

int main(void) {
  DLPackExchangeAPI api;
  DLManagedTensor legacy;
  DLManagedTensorVersioned versioned;
  int failed;

  api.header.version.major = DLPACK_MAJOR_VERSION;
  api.header.version.minor = DLPACK_MINOR_VERSION;
  api.header.prev_api = NULL;
  api.managed_tensor_allocator = alloc_fn;
  api.managed_tensor_from_py_object_no_sync = from_py_fn;
  api.managed_tensor_to_py_object_no_sync = to_py_fn;
  api.dltensor_from_py_object_no_sync = dltensor_from_py_fn;
  api.current_work_stream = stream_fn;
  legacy.deleter = legacy_deleter;
  versioned.deleter = versioned_deleter;

  /* The table is usable through its header alone, as a consumer walking prev_api would. */
  EXPECT_VALUE(((DLPackExchangeAPIHeader*)&api)->version.minor, 3);
  EXPECT_VALUE(api.current_work_stream(kDLCPU, 0, NULL), (unsigned long long)-1);
  legacy.deleter(&legacy);
  versioned.deleter(&versioned);

  failed = layout_run_checks();
  (void)failed;
  return layout_report("C99");
}
