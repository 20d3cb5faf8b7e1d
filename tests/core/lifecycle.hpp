// Helpers shared by the lifecycle suites (allocate_wrap, import_export, share): the sanitizer
// and valgrind settings of their programs, live-count and output-pointer checks, and wrapped
// host buffers whose release counts.
#ifndef DLBRIDGE_TESTS_CORE_LIFECYCLE_HPP_
#define DLBRIDGE_TESTS_CORE_LIFECYCLE_HPP_

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "support.hpp"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define DLB_TEST_HAVE_VALGRIND 1
#endif
#endif

// Sanitizer runtimes abort on absurd allocation sizes unless told to return NULL like malloc
// does; the out-of-memory case below needs the NULL.
#if defined(__SANITIZE_ADDRESS__)
#define DLB_TEST_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define DLB_TEST_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(DLB_TEST_ASAN)
#define DLB_TEST_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(DLB_TEST_TSAN)
#define DLB_TEST_TSAN 1
#endif
#endif
#ifdef DLB_TEST_ASAN
extern "C" __attribute__((visibility("default"), used)) const char* __asan_default_options() {
  return "allocator_may_return_null=1";
}
#endif
#ifdef DLB_TEST_TSAN
extern "C" __attribute__((visibility("default"), used)) const char* __tsan_default_options() {
  return "allocator_may_return_null=1";
}
#endif

namespace test {

using Dims = std::vector<int64_t>;

// Live dlbridge tensors relative to the start of a test case.
struct Live {
  int64_t start = dlb_tensor_live_count();
  int64_t delta() const { return dlb_tensor_live_count() - start; }
};

// An address to preset output pointers with, so that "set to NULL on error" is observable.
inline DLManagedTensorVersioned g_not_null_versioned;
inline DLManagedTensor g_not_null_legacy;
inline DLManagedTensorVersioned* const kPresetOut = &g_not_null_versioned;
inline DLManagedTensor* const kPresetLegacyOut = &g_not_null_legacy;

inline DLDevice device(int32_t type, int32_t id) { return DLDevice{static_cast<DLDeviceType>(type), id}; }

inline Dims dims_of(const int64_t* values, int32_t n) {
  return values == nullptr ? Dims{} : Dims(values, values + (n > 0 ? n : 0));
}
inline Dims shape_of(const DLManagedTensorVersioned* t) {
  return dims_of(t->dl_tensor.shape, t->dl_tensor.ndim);
}
inline Dims strides_of(const DLManagedTensorVersioned* t) {
  return dims_of(t->dl_tensor.strides, t->dl_tensor.ndim);
}

// A release callback that frees a malloc'd buffer and counts; its context is one of these.
struct OwnedBuffer {
  void* memory = nullptr;
  Counter released;
};
inline void free_and_count(void* ctx) {
  auto* owned = static_cast<OwnedBuffer*>(ctx);
  std::free(owned->memory);
  owned->memory = nullptr;
  owned->released.calls++;
}

// Wraps `count` float32 values 0, 1, 2, ... in malloc'd memory that the release frees.
inline DLManagedTensorVersioned* wrap_floats(OwnedBuffer* owned, Dims shape, uint64_t flags = 0) {
  int64_t count = 1;
  for (int64_t e : shape) count *= e;
  owned->memory = std::malloc(sizeof(float) * static_cast<size_t>(count > 0 ? count : 1));
  for (int64_t i = 0; i < count; ++i) static_cast<float*>(owned->memory)[i] = static_cast<float>(i);
  DLTensor t{};
  t.data = owned->memory;
  t.device = cpu();
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = f32();
  t.shape = shape.empty() ? nullptr : shape.data();
  t.strides = nullptr;
  t.byte_offset = 0;
  DLManagedTensorVersioned* out = nullptr;
  Error err;
  const int status = dlb_tensor_wrap(&t, flags, free_and_count, owned, &out, err.fresh());
  REQUIRE(status == DLB_OK);
  REQUIRE(out != nullptr);
  return out;
}

}  // namespace test

#endif  // DLBRIDGE_TESTS_CORE_LIFECYCLE_HPP_
