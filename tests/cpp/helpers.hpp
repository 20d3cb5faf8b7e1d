// Helpers shared by the cpp suite: error assertions, foreign producers with deleter counters.
#ifndef DLBRIDGE_TESTS_CPP_HELPERS_HPP_
#define DLBRIDGE_TESTS_CPP_HELPERS_HPP_

#include <atomic>
#include <cstdint>
#include <string>

#include <doctest/doctest.h>

#include "dlbridge/dlbridge.hpp"

// Runs `expr`, which must throw dlbridge::Error with exactly this status and message.
#define CHECK_DLB_ERROR(expr, expected_status, expected_message)                     \
  do {                                                                               \
    bool thrown_ = false;                                                            \
    try {                                                                            \
      (void)(expr);                                                                  \
    } catch (const dlbridge::Error& error_) {                                        \
      thrown_ = true;                                                                \
      CHECK(dlb_status_name(error_.status()) == std::string(dlb_status_name(expected_status))); \
      CHECK(std::string(error_.what()) == std::string(expected_message));            \
    }                                                                                \
    CHECK_MESSAGE(thrown_, "expected dlbridge::Error from " #expr);                  \
  } while (0)

// The status and message the C API itself reports for a call, to compare the C++ layer with.
struct CResult {
  int status;
  std::string message;
};

// Calls a C API function `f(dlb_error*)` and returns its status and message.
template <class F>
CResult c_call(F&& f) {
  dlb_error error{};
  const int status = f(&error);
  return CResult{status, error.message};
}

// Counts the live dlbridge tensors: check() compares with the count at construction.
struct LiveCount {
  int64_t before = dlb_tensor_live_count();
  int64_t delta() const { return dlb_tensor_live_count() - before; }
};

// A foreign producer's versioned tensor: a 2x3 float32 matrix with values 0..5 in its own
// block, freed by a deleter that counts its calls.
struct ForeignVersioned {
  DLManagedTensorVersioned managed;
  int64_t shape[2] = {2, 3};
  int64_t strides[2] = {3, 1};
  float values[6] = {0, 1, 2, 3, 4, 5};
  std::atomic<int>* deleted;
};

inline void foreign_versioned_deleter(DLManagedTensorVersioned* self) {
  auto* owner = static_cast<ForeignVersioned*>(self->manager_ctx);
  owner->deleted->fetch_add(1);
  delete owner;
}

// A new foreign versioned tensor; `deleted` counts deleter calls.
inline DLManagedTensorVersioned* make_foreign_versioned(std::atomic<int>* deleted,
                                                        uint32_t major = 1, uint32_t minor = 3) {
  auto* owner = new ForeignVersioned();
  owner->deleted = deleted;
  DLManagedTensorVersioned& m = owner->managed;
  m.version = DLPackVersion{major, minor};
  m.manager_ctx = owner;
  m.deleter = &foreign_versioned_deleter;
  m.flags = 0;
  m.dl_tensor.data = owner->values;
  m.dl_tensor.device = DLDevice{kDLCPU, 0};
  m.dl_tensor.ndim = 2;
  m.dl_tensor.dtype = DLDataType{kDLFloat, 32, 1};
  m.dl_tensor.shape = owner->shape;
  m.dl_tensor.strides = owner->strides;
  m.dl_tensor.byte_offset = 0;
  return &m;
}

// The same as a legacy DLManagedTensor (DLPack < 1.0).
struct ForeignLegacy {
  DLManagedTensor managed;
  int64_t shape[2] = {2, 3};
  float values[6] = {0, 1, 2, 3, 4, 5};
  std::atomic<int>* deleted;
};

inline void foreign_legacy_deleter(DLManagedTensor* self) {
  auto* owner = static_cast<ForeignLegacy*>(self->manager_ctx);
  owner->deleted->fetch_add(1);
  delete owner;
}

// A new foreign legacy tensor with NULL strides (an older producer's compact row-major).
inline DLManagedTensor* make_foreign_legacy(std::atomic<int>* deleted) {
  auto* owner = new ForeignLegacy();
  owner->deleted = deleted;
  DLManagedTensor& m = owner->managed;
  m.manager_ctx = owner;
  m.deleter = &foreign_legacy_deleter;
  m.dl_tensor.data = owner->values;
  m.dl_tensor.device = DLDevice{kDLCPU, 0};
  m.dl_tensor.ndim = 2;
  m.dl_tensor.dtype = DLDataType{kDLFloat, 32, 1};
  m.dl_tensor.shape = owner->shape;
  m.dl_tensor.strides = nullptr;
  m.dl_tensor.byte_offset = 0;
  return &m;
}

// A release callback for dlb_tensor_wrap that counts its calls in *ctx (an std::atomic<int>).
inline void count_release(void* ctx) { static_cast<std::atomic<int>*>(ctx)->fetch_add(1); }

// Fills a float tensor's elements with 0, 1, 2, ... in row-major index order.
inline void iota(dlbridge::Tensor& t) {
  auto v = t.view<float>();
  if (t.ndim() == 1) {
    for (int64_t i = 0; i < v.shape(0); ++i) v(i) = static_cast<float>(i);
  } else if (t.ndim() == 2) {
    for (int64_t i = 0; i < v.shape(0); ++i) {
      for (int64_t j = 0; j < v.shape(1); ++j) v(i, j) = static_cast<float>(i * v.shape(1) + j);
    }
  }
}

#endif  // DLBRIDGE_TESTS_CPP_HELPERS_HPP_
