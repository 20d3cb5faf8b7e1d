/* foreign_dlpack.h - a foreign DLPack producer and consumer for the bindings' tests: no dlbridge
 * inside, it speaks DLPack only, as any other native library would. Tensors cross as addresses
 * (int64_t), the way every binding's tests hand them around. The Java tests reach it through
 * thin JNI wrappers (bindings/java/tests/test_helpers.c), the C# tests through DllImport. */
#ifndef DLBRIDGE_TESTS_FOREIGN_DLPACK_H
#define DLBRIDGE_TESTS_FOREIGN_DLPACK_H

#include <stdint.h>

#define FOREIGN_DLPACK_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* A float32 tensor [0, 1, ..., n-1] stamped with DLPack major.minor and `flags`; the caller
 * owns it (its deleter frees it and counts one deletion). */
FOREIGN_DLPACK_API int64_t foreign_dlpack_produce_versioned(int64_t n, int32_t major,
                                                            int32_t minor, int64_t flags);
/* The same as a legacy DLManagedTensor. */
FOREIGN_DLPACK_API int64_t foreign_dlpack_produce_legacy(int64_t n);
/* How many of this library's tensors were deleted so far. */
FOREIGN_DLPACK_API int64_t foreign_dlpack_deleted_count(void);
/* Takes ownership of the tensor at `address`, sums its float32 elements (strides honoured),
 * then frees it from a new pthread (one no runtime has seen). The sum, or NaN for another
 * dtype; -1 if no thread could be started (the tensor is then not freed). */
FOREIGN_DLPACK_API double foreign_dlpack_consume_on_new_thread(int64_t address, int32_t legacy);
/* The version a versioned tensor is stamped with, as major * 1000 + minor (borrowed). */
FOREIGN_DLPACK_API int32_t foreign_dlpack_version_of(int64_t address);
/* Frees the versioned tensor at `address` from a detached pthread after `delay_us`: a deleter
 * that runs while the runtime is exiting. */
FOREIGN_DLPACK_API void foreign_dlpack_free_later(int64_t address, int64_t delay_us);

#ifdef __cplusplus
}
#endif

#endif
