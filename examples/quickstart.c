/*
 * quickstart.c - the smallest useful dlbridge program: allocate a tensor, fill it, take a
 * zero-copy view, read through the view, and free both, checking every status.
 */
#include <stdio.h>

#include "dlbridge/dlbridge.h"

int main(void) {
  const DLDevice cpu = {kDLCPU, 0};
  const DLDataType float32 = {kDLFloat, 32, 1};
  const int64_t shape[2] = {2, 3};
  DLManagedTensorVersioned* matrix = NULL;
  DLManagedTensorVersioned* transposed = NULL;
  dlb_error error;
  float* values;
  int64_t i;
  int64_t j;
  dlb_status status;

  /* An uninitialised 2x3 float32 tensor on the CPU; we own it until dlb_tensor_free. */
  status = dlb_tensor_allocate(cpu, float32, 2, shape, NULL, 0, &matrix, &error);
  if (status != DLB_OK) {
    fprintf(stderr, "allocate failed: %s: %s\n", dlb_status_name(status), error.message);
    return 1;
  }
  values = (float*)(void*)((char*)matrix->dl_tensor.data + matrix->dl_tensor.byte_offset);
  for (i = 0; i < 6; ++i) values[i] = (float)i;

  /* A 3x2 view over the same memory; it keeps that memory alive on its own. */
  status = dlb_tensor_transpose(matrix, &transposed, &error);
  if (status != DLB_OK) {
    fprintf(stderr, "transpose failed: %s: %s\n", dlb_status_name(status), error.message);
    dlb_tensor_free(matrix);
    return 1;
  }

  /* Views address their elements through strides (in elements) and byte_offset. */
  {
    const DLTensor* t = &transposed->dl_tensor;
    const float* first = (const float*)(const void*)((const char*)t->data + t->byte_offset);
    printf("transposed (%lld x %lld):\n", (long long)t->shape[0], (long long)t->shape[1]);
    for (i = 0; i < t->shape[0]; ++i) {
      for (j = 0; j < t->shape[1]; ++j) {
        printf(" %g", (double)first[i * t->strides[0] + j * t->strides[1]]);
      }
      printf("\n");
    }
  }

  dlb_tensor_free(transposed);
  dlb_tensor_free(matrix);
  printf("live tensors after freeing: %lld\n", (long long)dlb_tensor_live_count());
  return dlb_tensor_live_count() == 0 ? 0 : 1;
}
