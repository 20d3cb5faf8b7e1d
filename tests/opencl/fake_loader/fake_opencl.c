/*
 * A stand-in libOpenCL.so.1 that has clGetPlatformIDs and nothing else, like an ICD loader too
 * old for OpenCL 1.2. The opencl suite points LD_LIBRARY_PATH at it in a child process to check
 * what the library reports then.
 */
#include <stddef.h>
#include <stdint.h>

int32_t clGetPlatformIDs(uint32_t num_entries, void** platforms, uint32_t* num_platforms);

int32_t clGetPlatformIDs(uint32_t num_entries, void** platforms, uint32_t* num_platforms) {
  (void)num_entries;
  (void)platforms;
  if (num_platforms != NULL) *num_platforms = 0;
  return -1001; /* CL_PLATFORM_NOT_FOUND_KHR */
}
