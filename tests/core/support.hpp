// Test support shared by the core suites: foreign producers whose deleters count their calls
// (the error-report helper is tests/error_report.hpp).
#ifndef DLBRIDGE_TESTS_CORE_SUPPORT_HPP_
#define DLBRIDGE_TESTS_CORE_SUPPORT_HPP_

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dlbridge/dlbridge.h"
#include "../error_report.hpp"
#include "../no_builtin_backends.hpp"

namespace test {

// ---- small helpers ------------------------------------------------------------------------

// A C string that may be NULL, for comparisons.
inline std::string str(const char* text) { return text != nullptr ? std::string(text) : std::string("<NULL>"); }

inline bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

inline bool same_device(DLDevice a, DLDevice b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}

inline std::string format_dtype(DLDataType dtype) {
  char buffer[DLB_DTYPE_NAME_SIZE];
  dlb_error error = fresh_error();
  if (dlb_dtype_format(dtype, buffer, sizeof(buffer), &error) != DLB_OK) return "<error: " + msg(error) + ">";
  return std::string(buffer);
}

inline std::string format_device(DLDevice device) {
  char buffer[DLB_DEVICE_NAME_SIZE];
  dlb_error error = fresh_error();
  if (dlb_device_format(device, buffer, sizeof(buffer), &error) != DLB_OK) return "<error: " + msg(error) + ">";
  return std::string(buffer);
}

constexpr uint64_t kReadOnly = DLPACK_FLAG_BITMASK_READ_ONLY;
constexpr uint64_t kIsCopied = DLPACK_FLAG_BITMASK_IS_COPIED;
constexpr uint64_t kPadded = DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;

// ---- foreign producers --------------------------------------------------------------------

// Counts deleter (or release) calls; tests assert the exact count.
struct Counter {
  std::atomic<int> calls{0};
  int get() const { return calls.load(); }
};

// A foreign producer's versioned tensor that owns its shape, strides and data. Fields can be
// corrupted freely before handing it over; the deleter counts and frees everything.
struct ForeignVersioned {
  DLManagedTensorVersioned managed{};
  std::vector<int64_t> shape, strides;
  std::vector<unsigned char> storage;
  Counter* counter = nullptr;

  static void deleter(DLManagedTensorVersioned* self) {
    auto* foreign = static_cast<ForeignVersioned*>(self->manager_ctx);
    foreign->counter->calls++;
    delete foreign;
  }
};

// Builds a valid compact CPU tensor of `dtype` and `shape` with zeroed data (strides set
// explicitly unless `null_strides`). The caller hands `&result->managed` to the code under test.
inline ForeignVersioned* make_foreign(Counter& counter, DLDataType dtype, std::vector<int64_t> shape,
                                      bool null_strides = false) {
  auto* f = new ForeignVersioned();
  f->counter = &counter;
  f->shape = std::move(shape);
  f->strides.assign(f->shape.size(), 1);
  int64_t count = 1;
  for (size_t i = f->shape.size(); i-- > 0;) {
    f->strides[i] = count;
    count *= f->shape[i] > 1 ? f->shape[i] : 1;
  }
  int64_t elements = 1;
  for (int64_t e : f->shape) elements *= e;
  const size_t bits = static_cast<size_t>(dtype.bits) * dtype.lanes;
  f->storage.assign((static_cast<size_t>(elements) * bits + 7) / 8 + 1, 0);
  f->managed.version = DLPackVersion{1, 3};
  f->managed.manager_ctx = f;
  f->managed.deleter = &ForeignVersioned::deleter;
  f->managed.flags = 0;
  DLTensor& t = f->managed.dl_tensor;
  t.data = f->storage.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int32_t>(f->shape.size());
  t.dtype = dtype;
  t.shape = f->shape.empty() ? nullptr : f->shape.data();
  t.strides = null_strides || f->strides.empty() ? nullptr : f->strides.data();
  t.byte_offset = 0;
  return f;
}

// The legacy counterpart.
struct ForeignLegacy {
  DLManagedTensor managed{};
  std::vector<int64_t> shape, strides;
  std::vector<unsigned char> storage;
  Counter* counter = nullptr;

  static void deleter(DLManagedTensor* self) {
    auto* foreign = static_cast<ForeignLegacy*>(self->manager_ctx);
    foreign->counter->calls++;
    delete foreign;
  }
};

inline ForeignLegacy* make_foreign_legacy(Counter& counter, DLDataType dtype,
                                          std::vector<int64_t> shape, bool null_strides = false) {
  ForeignVersioned* v = make_foreign(counter, dtype, std::move(shape), null_strides);
  auto* f = new ForeignLegacy();
  f->counter = &counter;
  f->shape = v->shape;
  f->strides = v->strides;
  f->storage = v->storage;
  f->managed.dl_tensor = v->managed.dl_tensor;
  f->managed.dl_tensor.data = f->storage.data();
  f->managed.dl_tensor.shape = f->shape.empty() ? nullptr : f->shape.data();
  f->managed.dl_tensor.strides =
      null_strides || f->strides.empty() ? nullptr : f->strides.data();
  f->managed.manager_ctx = f;
  f->managed.deleter = &ForeignLegacy::deleter;
  delete v;
  return f;
}

// A release callback for dlb_tensor_wrap that counts into a Counter.
inline void count_release(void* ctx) { static_cast<Counter*>(ctx)->calls++; }

inline DLDataType dtype(uint8_t code, uint8_t bits, uint16_t lanes = 1) {
  return DLDataType{code, bits, lanes};
}
inline DLDataType f32() { return dtype(kDLFloat, 32); }
inline DLDevice cpu() { return DLDevice{kDLCPU, 0}; }

}  // namespace test

#endif  // DLBRIDGE_TESTS_CORE_SUPPORT_HPP_
