// Lifecycle of dlbridge tensors through the C API, part one: allocate, wrap, the exchange-API
// allocator, and the limits on byte spans.
//
// Every error path checks the exact status and message; every ownership path checks the exact
// number of deleter/release calls and that dlb_tensor_live_count() returns to where it started.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>

#include "lifecycle.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define DLB_TEST_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DLB_TEST_ADDRESS_SANITIZER 1
#endif
#endif

namespace {

using test::Counter;
using test::cpu;
using test::device;
using test::Dims;
using test::dtype;
using test::Error;
using test::f32;
using test::kIsCopied;
using test::kPadded;
using test::kPresetOut;
using test::kReadOnly;
using test::kUntouched;
using test::Live;
using test::same_device;
using test::same_dtype;
using test::shape_of;
using test::strides_of;

// Visits every multi-index of `shape` (nothing for an empty shape, once for ndim 0).
template <class F>
void for_each_index(const Dims& shape, F&& visit) {
  for (int64_t e : shape) {
    if (e == 0) return;
  }
  Dims index(shape.size(), 0);
  while (true) {
    visit(index);
    size_t d = shape.size();
    while (d > 0) {
      --d;
      if (++index[d] < shape[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (shape.empty()) return;
  }
}

}  // namespace

// =============================================================================================
TEST_SUITE("core.lifecycle.allocate") {
  TEST_CASE("cpu tensors of several dtypes and shapes: version, alignment, compact strides") {
    Live live;
    struct Case {
      DLDataType dtype;
      Dims shape;
      Dims strides;  // expected compact strides
      uint64_t bytes;
    };
    const Case cases[] = {
        {f32(), {2, 3}, {3, 1}, 24},
        {dtype(kDLFloat, 64), {2, 3, 4}, {12, 4, 1}, 192},
        {dtype(kDLInt, 8), {7}, {1}, 7},
        {dtype(kDLUInt, 16), {}, {}, 2},
        {dtype(kDLComplex, 128), {2}, {1}, 32},
        {dtype(kDLBool, 8), {3, 3}, {3, 1}, 9},
        {dtype(kDLBfloat, 16), {5}, {1}, 10},
        {dtype(kDLFloat8_e5m2, 8), {4}, {1}, 4},
        {dtype(kDLFloat, 32, 4), {2}, {1}, 32},
        {dtype(kDLInt, 64), {1, 1, 1, 1}, {1, 1, 1, 1}, 8},
        {dtype(kDLUInt, 8), {256}, {1}, 256},
        {dtype(kDLFloat, 16), {3, 1, 5}, {5, 5, 1}, 30},
    };
    for (const Case& c : cases) {
      CAPTURE(c.shape.size());
      CAPTURE(static_cast<int>(c.dtype.code));
      DLManagedTensorVersioned* t = kPresetOut;
      Error err;
      REQUIRE(dlb_tensor_allocate(cpu(), c.dtype, static_cast<int32_t>(c.shape.size()),
                                  c.shape.empty() ? nullptr : c.shape.data(), nullptr, 0, &t,
                                  err.fresh()) == DLB_OK);
      CHECK(err.text() == kUntouched);
      REQUIRE(t != nullptr);
      REQUIRE(t != kPresetOut);
      CHECK(live.delta() == 1);
      CHECK(t->version.major == 1);
      CHECK(t->version.minor == 3);
      CHECK(t->flags == 0);
      CHECK((t->deleter != nullptr));
      CHECK(dlb_tensor_is_dlbridge(t) == 1);
      CHECK(same_device(t->dl_tensor.device, cpu()));
      CHECK(same_dtype(t->dl_tensor.dtype, c.dtype));
      CHECK(t->dl_tensor.ndim == static_cast<int32_t>(c.shape.size()));
      CHECK(t->dl_tensor.byte_offset == 0);
      CHECK(t->dl_tensor.shape != nullptr);
      CHECK(t->dl_tensor.strides != nullptr);
      CHECK(shape_of(t) == c.shape);
      CHECK(strides_of(t) == c.strides);
      CHECK(dlb_tensor_is_c_contiguous(&t->dl_tensor) == 1);
      REQUIRE(t->dl_tensor.data != nullptr);
      CHECK(reinterpret_cast<uintptr_t>(t->dl_tensor.data) % DLB_CPU_ALIGNMENT == 0);
      CHECK(dlb_tensor_is_aligned(&t->dl_tensor, DLB_CPU_ALIGNMENT) == 1);
      uint64_t bytes = 0;
      REQUIRE(dlb_tensor_byte_size(&t->dl_tensor, t->flags, &bytes, err.fresh()) == DLB_OK);
      CHECK(bytes == c.bytes);
      int64_t begin = -1;
      int64_t span = 0;
      REQUIRE(dlb_tensor_byte_span(&t->dl_tensor, t->flags, &begin, &span, err.fresh()) == DLB_OK);
      CHECK(begin == 0);
      CHECK(span == c.bytes);
      // The whole span is writable and reads back.
      auto* bytes_ptr = static_cast<unsigned char*>(t->dl_tensor.data);
      for (uint64_t i = 0; i < c.bytes; ++i) bytes_ptr[i] = static_cast<unsigned char>(i * 7 + 1);
      bool same = true;
      for (uint64_t i = 0; i < c.bytes; ++i) {
        same = same && bytes_ptr[i] == static_cast<unsigned char>(i * 7 + 1);
      }
      CHECK(same);
      dlb_tensor_free(t);
      CHECK(live.delta() == 0);
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("scalar (ndim 0) gets non-NULL shape and strides, with or without a shape pointer") {
    Live live;
    int64_t unused = 42;
    for (const int64_t* shape : {static_cast<const int64_t*>(nullptr),
                                 static_cast<const int64_t*>(&unused)}) {
      DLManagedTensorVersioned* t = nullptr;
      Error err;
      REQUIRE(dlb_tensor_allocate(cpu(), dtype(kDLFloat, 64), 0, shape, nullptr, 0, &t,
                                  err.fresh()) == DLB_OK);
      REQUIRE(t != nullptr);
      CHECK(t->dl_tensor.ndim == 0);
      CHECK(t->dl_tensor.shape != nullptr);
      CHECK(t->dl_tensor.strides != nullptr);
      REQUIRE(t->dl_tensor.data != nullptr);
      CHECK(reinterpret_cast<uintptr_t>(t->dl_tensor.data) % DLB_CPU_ALIGNMENT == 0);
      double value = 3.25;
      std::memcpy(t->dl_tensor.data, &value, sizeof(value));
      double back = 0;
      std::memcpy(&back, t->dl_tensor.data, sizeof(back));
      CHECK(back == 3.25);
      dlb_tensor_free(t);
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("zero-size tensors get a non-NULL aligned data pointer") {
    Live live;
    const Dims shapes[] = {{0}, {3, 0, 2}, {0, 0}, {1, 0}};
    for (const Dims& shape : shapes) {
      CAPTURE(shape.size());
      DLManagedTensorVersioned* t = nullptr;
      Error err;
      REQUIRE(dlb_tensor_allocate(cpu(), f32(), static_cast<int32_t>(shape.size()), shape.data(),
                                  nullptr, 0, &t, err.fresh()) == DLB_OK);
      REQUIRE(t != nullptr);
      CHECK(t->dl_tensor.data != nullptr);
      CHECK(reinterpret_cast<uintptr_t>(t->dl_tensor.data) % DLB_CPU_ALIGNMENT == 0);
      CHECK(shape_of(t) == shape);
      Dims compact(shape.size());
      dlb_compact_strides(static_cast<int32_t>(shape.size()), shape.data(), compact.data());
      CHECK(strides_of(t) == compact);
      int64_t span = 99;
      REQUIRE(dlb_tensor_byte_span(&t->dl_tensor, 0, nullptr, &span, err.fresh()) == DLB_OK);
      CHECK(span == 0);
      dlb_tensor_free(t);
    }
    // Explicit (negative) strides on an empty tensor.
    const Dims shape{0, 4};
    const Dims strides{-4, -1};
    DLManagedTensorVersioned* t = nullptr;
    Error err;
    REQUIRE(dlb_tensor_allocate(cpu(), f32(), 2, shape.data(), strides.data(), 0, &t,
                                err.fresh()) == DLB_OK);
    REQUIRE(t != nullptr);
    CHECK(t->dl_tensor.data != nullptr);
    CHECK(strides_of(t) == strides);
    dlb_tensor_free(t);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("explicit strides, negative and zero included: every element lies in the allocation") {
    Live live;
    struct Case {
      DLDataType dtype;
      Dims shape;
      Dims strides;
    };
    const Case cases[] = {
        {dtype(kDLInt, 32), {3, 4}, {-4, 1}},
        {dtype(kDLInt, 32), {3, 4}, {1, -3}},
        {dtype(kDLInt, 32), {3, 4}, {-4, -1}},
        {dtype(kDLInt, 32), {3, 5}, {0, -1}},
        {dtype(kDLInt, 32), {2, 2}, {0, 0}},
        {dtype(kDLInt, 32), {5}, {-7}},
        {dtype(kDLInt, 32), {2, 3, 4}, {-1, 8, -2}},
        {dtype(kDLInt, 32), {4, 3}, {1, 4}},  // Fortran order
        {dtype(kDLInt, 16), {4, 3}, {-5, 2}},
        {dtype(kDLFloat, 64), {3, 1, 2}, {-2, 100, 1}},
        {dtype(kDLUInt, 8), {6}, {3}},
    };
    for (const Case& c : cases) {
      CAPTURE(c.strides);
      const int32_t ndim = static_cast<int32_t>(c.shape.size());
      DLManagedTensorVersioned* t = nullptr;
      Error err;
      REQUIRE(dlb_tensor_allocate(cpu(), c.dtype, ndim, c.shape.data(), c.strides.data(), 0, &t,
                                  err.fresh()) == DLB_OK);
      REQUIRE(t != nullptr);
      CHECK(live.delta() == 1);
      CHECK(shape_of(t) == c.shape);
      CHECK(strides_of(t) == c.strides);
      REQUIRE(t->dl_tensor.data != nullptr);
      CHECK(reinterpret_cast<uintptr_t>(t->dl_tensor.data) % DLB_CPU_ALIGNMENT == 0);
      const int64_t size = static_cast<int64_t>(dlb_dtype_element_size(c.dtype));
      // The bytes the tensor covers, from data: data is the first element (byte_offset 0), and
      // the span reaches back exactly as far as the negative strides do.
      int64_t begin = -1;
      int64_t span = 0;
      REQUIRE(dlb_tensor_byte_span(&t->dl_tensor, 0, &begin, &span, err.fresh()) == DLB_OK);
      const int64_t end = begin + static_cast<int64_t>(span);
      int64_t backward = 0;
      for (size_t d = 0; d < c.shape.size(); ++d) {
        if (c.strides[d] < 0) backward += -c.strides[d] * (c.shape[d] - 1);
      }
      CHECK(begin == -backward * size);
      CHECK(t->dl_tensor.byte_offset == 0);
      // Write every element through the strides (a model keeps the last value written to each
      // address, since zero strides alias), then read every element back.
      auto* base = static_cast<unsigned char*>(t->dl_tensor.data);
      std::map<int64_t, int64_t> model;
      bool inside = true;
      int64_t serial = 1;
      auto offset_of = [&](const Dims& index) {
        int64_t offset = static_cast<int64_t>(t->dl_tensor.byte_offset);
        for (size_t d = 0; d < index.size(); ++d) offset += index[d] * c.strides[d] * size;
        return offset;
      };
      for_each_index(c.shape, [&](const Dims& index) {
        const int64_t offset = offset_of(index);
        if (offset < begin || offset + size > end) {
          inside = false;
          return;
        }
        const int64_t value = serial++;
        std::memcpy(base + offset, &value, static_cast<size_t>(size));  // little-endian low bytes
        model[offset] = value;
      });
      CHECK(inside);
      bool reads_back = true;
      for_each_index(c.shape, [&](const Dims& index) {
        const int64_t offset = offset_of(index);
        if (offset < begin || offset + size > end) return;
        int64_t value = 0;
        std::memcpy(&value, base + offset, static_cast<size_t>(size));
        const int64_t mask = size >= 8 ? -1 : (int64_t{1} << (8 * size)) - 1;
        reads_back = reads_back && value == (model[offset] & mask);
      });
      CHECK(reads_back);
      dlb_tensor_free(t);
      CHECK(live.delta() == 0);
    }
  }

  TEST_CASE("packed sub-byte sizes round the total, padded ones take a byte each") {
    Live live;
    struct Case {
      DLDataType dtype;
      Dims shape;
      uint64_t flags;
      uint64_t bytes;
    };
    const Case cases[] = {
        {dtype(kDLInt, 4), {3}, 0, 2},
        {dtype(kDLUInt, 1), {10}, 0, 2},
        {dtype(kDLUInt, 1), {8}, 0, 1},
        {dtype(kDLFloat4_e2m1fn, 4), {5}, 0, 3},
        {dtype(kDLFloat4_e2m1fn, 4), {5}, kPadded, 5},
        {dtype(kDLFloat6_e2m3fn, 6), {2, 2}, 0, 3},
        {dtype(kDLFloat6_e3m2fn, 6), {2, 2}, kPadded, 4},
        {dtype(kDLInt, 4, 2), {3}, 0, 3},
        {dtype(kDLInt, 2), {3, 3}, 0, 3},
        {dtype(kDLUInt, 1), {0}, 0, 0},
    };
    for (const Case& c : cases) {
      CAPTURE(static_cast<int>(c.dtype.code));
      CAPTURE(static_cast<int>(c.dtype.bits));
      CAPTURE(c.flags);
      DLManagedTensorVersioned* t = nullptr;
      Error err;
      REQUIRE(dlb_tensor_allocate(cpu(), c.dtype, static_cast<int32_t>(c.shape.size()),
                                  c.shape.data(), nullptr, c.flags, &t, err.fresh()) == DLB_OK);
      REQUIRE(t != nullptr);
      CHECK(t->flags == c.flags);
      CHECK(t->dl_tensor.data != nullptr);
      CHECK(reinterpret_cast<uintptr_t>(t->dl_tensor.data) % DLB_CPU_ALIGNMENT == 0);
      uint64_t bytes = 0;
      REQUIRE(dlb_tensor_byte_size(&t->dl_tensor, t->flags, &bytes, err.fresh()) == DLB_OK);
      CHECK(bytes == c.bytes);
      int64_t span = 0;
      int64_t begin = -1;
      REQUIRE(dlb_tensor_byte_span(&t->dl_tensor, t->flags, &begin, &span, err.fresh()) == DLB_OK);
      CHECK(begin == 0);
      CHECK(span == c.bytes);
      if (c.bytes > 0) std::memset(t->dl_tensor.data, 0xA5, static_cast<size_t>(c.bytes));
      dlb_tensor_free(t);
    }
    // Negative strides on packed data: the first element sits past what the others reach.
    const Dims shape{3};
    const Dims strides{-1};
    DLManagedTensorVersioned* t = nullptr;
    Error err;
    REQUIRE(dlb_tensor_allocate(cpu(), dtype(kDLInt, 4), 1, shape.data(), strides.data(), 0, &t,
                                err.fresh()) == DLB_OK);
    REQUIRE(t != nullptr);
    CHECK(t->dl_tensor.byte_offset == 0);  // data is the byte of element 0
    int64_t begin = 0;
    int64_t span = 0;
    REQUIRE(dlb_tensor_byte_span(&t->dl_tensor, 0, &begin, &span, err.fresh()) == DLB_OK);
    CHECK(begin == -1);  // elements 1 and 2 sit one byte before element 0
    CHECK(span == 2);
    dlb_tensor_free(t);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("flags READ_ONLY and IS_SUBBYTE_TYPE_PADDED are kept") {
    Live live;
    const Dims shape{4};
    for (uint64_t flags : {uint64_t{0}, kReadOnly, kPadded, kReadOnly | kPadded}) {
      CAPTURE(flags);
      DLManagedTensorVersioned* t = nullptr;
      Error err;
      REQUIRE(dlb_tensor_allocate(cpu(), dtype(kDLInt, 4), 1, shape.data(), nullptr, flags, &t,
                                  err.fresh()) == DLB_OK);
      REQUIRE(t != nullptr);
      CHECK(t->flags == flags);
      CHECK(dlb_tensor_flags(t) == flags);
      CHECK(dlb_tensor_is_read_only(t) == ((flags & kReadOnly) != 0 ? 1 : 0));
      dlb_tensor_free(t);
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("allocation errors: exact status and message, *out NULL, nothing allocated") {
    Live live;
    const Dims shape{2, 3};
    struct Case {
      const char* name;
      DLDevice device;
      DLDataType dtype;
      int32_t ndim;
      const int64_t* shape;
      const int64_t* strides;
      uint64_t flags;
      int status;
      const char* message;
    };
    static const int64_t kNegative[] = {2, -3};
    static const int64_t kHuge[] = {int64_t{1} << 32, int64_t{1} << 32};
    static const int64_t kSpan[] = {int64_t{1} << 62};
    static const int64_t kThree[] = {3};
    static const int64_t kBigStride[] = {INT64_MAX / 2};
    static const int64_t kMinStride[] = {INT64_MIN};
    static const int64_t kOnes[65] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                      1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const Case cases[] = {
        {"IS_COPIED requested", cpu(), f32(), 2, shape.data(), nullptr, kIsCopied,
         DLB_ERR_INVALID_ARGUMENT, "flag IS_COPIED cannot be requested for a new allocation"},
        {"unknown flag bit", cpu(), f32(), 2, shape.data(), nullptr, uint64_t{1} << 3,
         DLB_ERR_UNSUPPORTED, "flags 0x8 contain bits unknown to DLPack 1.3"},
        {"unknown device type 5", device(5, 0), f32(), 2, shape.data(), nullptr, 0,
         DLB_ERR_UNSUPPORTED, "device type 5 is not a known DLPack device type"},
        {"unknown device type 999", device(999, 0), f32(), 2, shape.data(), nullptr, 0,
         DLB_ERR_UNSUPPORTED, "device type 999 is not a known DLPack device type"},
        {"negative device_id", device(kDLCPU, -1), f32(), 2, shape.data(), nullptr, 0,
         DLB_ERR_INVALID_ARGUMENT, "device_id -1 is negative"},
        {"cpu device_id 1", device(kDLCPU, 1), f32(), 2, shape.data(), nullptr, 0,
         DLB_ERR_INVALID_ARGUMENT, "cpu tensors must have device_id 0, not 1"},
        {"no backend for vulkan", device(kDLVulkan, 0), f32(), 2, shape.data(), nullptr, 0,
         DLB_ERR_UNSUPPORTED, "no backend is registered for vulkan"},
        {"ndim -1", cpu(), f32(), -1, shape.data(), nullptr, 0, DLB_ERR_INVALID_ARGUMENT,
         "ndim -1 is negative"},
        {"ndim 65", cpu(), f32(), 65, kOnes, nullptr, 0, DLB_ERR_INVALID_ARGUMENT,
         "ndim 65 exceeds the maximum of 64"},
        {"shape NULL", cpu(), f32(), 2, nullptr, nullptr, 0, DLB_ERR_INVALID_ARGUMENT,
         "shape is NULL but ndim is 2"},
        {"negative extent", cpu(), f32(), 2, kNegative, nullptr, 0, DLB_ERR_INVALID_ARGUMENT,
         "shape[1] is -3; extents must not be negative"},
        {"unknown dtype code", cpu(), dtype(99, 8), 2, shape.data(), nullptr, 0,
         DLB_ERR_UNSUPPORTED, "dtype code 99 is not a known DLPack type code"},
        {"float with 7 bits", cpu(), dtype(kDLFloat, 7), 2, shape.data(), nullptr, 0,
         DLB_ERR_INVALID_ARGUMENT, "dtype float with 7 bits is not a valid DLPack type"},
        {"float8 with 16 bits", cpu(), dtype(kDLFloat8_e5m2, 16), 2, shape.data(), nullptr, 0,
         DLB_ERR_INVALID_ARGUMENT, "dtype float8_e5m2 with 16 bits is not a valid DLPack type"},
        {"lanes 0", cpu(), dtype(kDLFloat, 32, 0), 2, shape.data(), nullptr, 0,
         DLB_ERR_INVALID_ARGUMENT, "dtype lanes is 0; it must be at least 1"},
        {"element count overflow", cpu(), f32(), 2, kHuge, nullptr, 0, DLB_ERR_OVERFLOW,
         "element count of shape (4294967296, 4294967296) overflows 63 bits"},
        {"byte span overflow (2^62 float32)", cpu(), f32(), 1, kSpan, nullptr, 0,
         DLB_ERR_OVERFLOW, "byte span of the tensor exceeds 2^60 bytes"},
        {"byte span overflow (huge stride)", cpu(), f32(), 1, kThree, kBigStride, 0,
         DLB_ERR_OVERFLOW, "byte span of the tensor exceeds 2^60 bytes"},
        {"byte span overflow (INT64_MIN stride)", cpu(), f32(), 1, kThree, kMinStride, 0,
         DLB_ERR_OVERFLOW, "byte span of the tensor exceeds 2^60 bytes"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.name);
      DLManagedTensorVersioned* t = kPresetOut;
      Error err;
      CHECK(dlb_tensor_allocate(c.device, c.dtype, c.ndim, c.shape, c.strides, c.flags, &t,
                                err.fresh()) == c.status);
      CHECK(err.text() == c.message);
      CHECK(t == nullptr);
      CHECK(live.delta() == 0);
      // A NULL error pointer is allowed on the error path too.
      t = kPresetOut;
      CHECK(dlb_tensor_allocate(c.device, c.dtype, c.ndim, c.shape, c.strides, c.flags, &t,
                                nullptr) == c.status);
      CHECK(t == nullptr);
    }
    // out NULL.
    Error err;
    CHECK(dlb_tensor_allocate(cpu(), f32(), 2, shape.data(), nullptr, 0, nullptr, err.fresh()) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "out is NULL");
    CHECK(live.delta() == 0);
  }

  TEST_CASE("large cpu tensors: every element writable, memory reused by the next that fits") {
    Live live;
    const Dims shape{1024, 1025};  // just over 4 MiB of float32: memory kept apart, for reuse
    const Dims reversed{-1025, -1};  // the first element at the end of the memory
    for (const Dims* strides : {static_cast<const Dims*>(nullptr), &reversed}) {
      DLManagedTensorVersioned* t = nullptr;
      Error err;
      REQUIRE(dlb_tensor_allocate(cpu(), f32(), 2, shape.data(),
                                  strides != nullptr ? strides->data() : nullptr, 0, &t,
                                  err.fresh()) == DLB_OK);
      CHECK(reinterpret_cast<uintptr_t>(t->dl_tensor.data) % DLB_CPU_ALIGNMENT == 0);
      CHECK(dlb_tensor_is_exclusive(t) == 1);
      const Dims st = strides_of(t);
      auto* first = static_cast<float*>(t->dl_tensor.data);
      for (int64_t i = 0; i < shape[0]; ++i) {
        for (int64_t j = 0; j < shape[1]; ++j) first[i * st[0] + j * st[1]] = float(i * 7 + j);
      }
      bool same = true;
      for (int64_t i = 0; i < shape[0]; ++i) {
        for (int64_t j = 0; j < shape[1]; ++j) {
          same &= first[i * st[0] + j * st[1]] == float(i * 7 + j);
        }
      }
      CHECK(same);
      dlb_tensor_free(t);
    }
    // Freed, from another thread too, the memory serves the next tensor of a size it fits, not
    // one four times larger. 40 MiB: glibc maps so much apart and unmaps it at its free, and
    // mappings made then take its place, so only memory kept for reuse comes back at the same
    // address. (Built with AddressSanitizer nothing is kept: it could not report a read of a
    // freed tensor's data otherwise.)
    const Dims big{10240, 1025};
    DLManagedTensorVersioned* a = nullptr;
    REQUIRE(dlb_tensor_allocate(cpu(), f32(), 2, big.data(), nullptr, 0, &a, nullptr) == DLB_OK);
    void* memory = a->dl_tensor.data;
    std::thread([a] { dlb_tensor_free(a); }).join();
    constexpr size_t kSquat = size_t{4} << 20;
    void* squatters[16];
    for (void*& squatter : squatters) {
      squatter = mmap(nullptr, kSquat, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
      REQUIRE(squatter != MAP_FAILED);
    }
    const Dims larger{40960, 1025};
    DLManagedTensorVersioned* b = nullptr;
    REQUIRE(dlb_tensor_allocate(cpu(), f32(), 2, larger.data(), nullptr, 0, &b, nullptr) ==
            DLB_OK);
    CHECK(b->dl_tensor.data != memory);
    DLManagedTensorVersioned* c = nullptr;
    REQUIRE(dlb_tensor_allocate(cpu(), f32(), 2, big.data(), nullptr, 0, &c, nullptr) == DLB_OK);
#if !defined(DLB_TEST_ADDRESS_SANITIZER)
    CHECK(c->dl_tensor.data == memory);
#endif
    dlb_tensor_free(b);
    dlb_tensor_free(c);
    for (void* squatter : squatters) munmap(squatter, kSquat);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("an allocation too large for memory fails with DLB_ERR_OUT_OF_MEMORY") {
    Live live;
    // 2^59 bytes: a valid span that no machine can allocate.
    const Dims shape{int64_t{1} << 59};
    DLManagedTensorVersioned* t = kPresetOut;
    Error err;
    CHECK(dlb_tensor_allocate(cpu(), dtype(kDLUInt, 8), 1, shape.data(), nullptr, 0, &t,
                              err.fresh()) == DLB_ERR_OUT_OF_MEMORY);
    CHECK(err.text() == "cannot allocate 576460752303423488 bytes on the cpu");
    CHECK(t == nullptr);
    CHECK(live.delta() == 0);
  }
}

// =============================================================================================
TEST_SUITE("core.lifecycle.wrap") {
  TEST_CASE("wrap is zero-copy, copies shape and strides, releases exactly once") {
    Live live;
    float values[12];
    for (int i = 0; i < 12; ++i) values[i] = static_cast<float>(i);
    int64_t shape[2] = {3, 4};
    int64_t strides[2] = {1, 3};  // Fortran order
    DLTensor desc{};
    desc.data = values;
    desc.device = cpu();
    desc.ndim = 2;
    desc.dtype = f32();
    desc.shape = shape;
    desc.strides = strides;
    desc.byte_offset = 0;
    Counter released;
    DLManagedTensorVersioned* t = kPresetOut;
    Error err;
    REQUIRE(dlb_tensor_wrap(&desc, 0, test::count_release, &released, &t, err.fresh()) == DLB_OK);
    CHECK(err.text() == kUntouched);
    REQUIRE(t != nullptr);
    REQUIRE(t != kPresetOut);
    CHECK(live.delta() == 1);
    CHECK(t->dl_tensor.data == values);
    CHECK(t->dl_tensor.shape != shape);
    CHECK(t->dl_tensor.strides != strides);
    // The caller's arrays may die with the call: overwrite them.
    shape[0] = -1;
    shape[1] = 77;
    strides[0] = 999;
    strides[1] = -999;
    CHECK(shape_of(t) == Dims{3, 4});
    CHECK(strides_of(t) == Dims{1, 3});
    CHECK(t->version.major == 1);
    CHECK(t->version.minor == 3);
    CHECK(t->flags == 0);
    CHECK(dlb_tensor_is_dlbridge(t) == 1);
    CHECK(dlb_tensor_is_f_contiguous(&t->dl_tensor) == 1);
    // Writes through the tensor land in the caller's memory.
    static_cast<float*>(t->dl_tensor.data)[5] = 50.0f;
    CHECK(values[5] == 50.0f);
    CHECK(released.get() == 0);
    dlb_tensor_free(t);
    CHECK(released.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("wrap with NULL strides synthesises compact ones; byte_offset is kept") {
    Live live;
    std::vector<double> values(24);
    const Dims shape{2, 3, 4};
    DLTensor desc{};
    desc.data = values.data();
    desc.device = cpu();
    desc.ndim = 3;
    desc.dtype = dtype(kDLFloat, 64);
    desc.shape = const_cast<int64_t*>(shape.data());
    desc.strides = nullptr;
    desc.byte_offset = 16;
    Counter released;
    DLManagedTensorVersioned* t = nullptr;
    Error err;
    REQUIRE(dlb_tensor_wrap(&desc, 0, test::count_release, &released, &t, err.fresh()) == DLB_OK);
    REQUIRE(t != nullptr);
    CHECK(t->dl_tensor.strides != nullptr);
    CHECK(strides_of(t) == Dims{12, 4, 1});
    CHECK(t->dl_tensor.byte_offset == 0);  // folded into data
    CHECK(t->dl_tensor.data == reinterpret_cast<char*>(values.data()) + 16);
    dlb_tensor_free(t);
    CHECK(released.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("wrap carries flags, accepts a NULL release and device memory it never touches") {
    Live live;
    unsigned char bytes[8] = {};
    const Dims shape{8};
    DLTensor desc{};
    desc.data = bytes;
    desc.device = cpu();
    desc.ndim = 1;
    desc.dtype = dtype(kDLUInt, 8);
    desc.shape = const_cast<int64_t*>(shape.data());
    for (uint64_t flags : {kReadOnly, kIsCopied, kPadded, kReadOnly | kIsCopied | kPadded}) {
      CAPTURE(flags);
      DLManagedTensorVersioned* t = nullptr;
      Error err;
      REQUIRE(dlb_tensor_wrap(&desc, flags, nullptr, nullptr, &t, err.fresh()) == DLB_OK);
      REQUIRE(t != nullptr);
      CHECK(t->flags == flags);
      CHECK(dlb_tensor_is_read_only(t) == ((flags & kReadOnly) != 0 ? 1 : 0));
      CHECK(live.delta() == 1);
      dlb_tensor_free(t);  // NULL release: nothing to call
      CHECK(live.delta() == 0);
    }
    // A CUDA pointer on device 2: wrapped as is, never dereferenced.
    DLTensor gpu = desc;
    gpu.data = reinterpret_cast<void*>(uintptr_t{0x7f0000001000});
    gpu.device = device(kDLCUDA, 2);
    Counter released;
    DLManagedTensorVersioned* t = nullptr;
    Error err;
    REQUIRE(dlb_tensor_wrap(&gpu, 0, test::count_release, &released, &t, err.fresh()) == DLB_OK);
    REQUIRE(t != nullptr);
    CHECK(t->dl_tensor.data == gpu.data);
    CHECK(same_device(t->dl_tensor.device, gpu.device));
    dlb_tensor_free(t);
    CHECK(released.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("wrap errors: release NOT called, *out NULL, exact message") {
    Live live;
    float values[6] = {};
    int64_t shape[2] = {2, 3};
    DLTensor good{};
    good.data = values;
    good.device = cpu();
    good.ndim = 2;
    good.dtype = f32();
    good.shape = shape;
    Counter released;

    auto expect_refused = [&](const DLTensor* desc, uint64_t flags, int status,
                              const std::string& message) {
      DLManagedTensorVersioned* t = kPresetOut;
      Error err;
      CHECK(dlb_tensor_wrap(desc, flags, test::count_release, &released, &t, err.fresh()) ==
            status);
      CHECK(err.text() == message);
      CHECK(t == nullptr);
      CHECK(released.get() == 0);
      CHECK(live.delta() == 0);
    };

    expect_refused(nullptr, 0, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
    expect_refused(&good, uint64_t{1} << 4, DLB_ERR_UNSUPPORTED,
                   "flags 0x10 contain bits unknown to DLPack 1.3");
    {
      int64_t negative[2] = {2, -1};
      DLTensor bad = good;
      bad.shape = negative;
      expect_refused(&bad, 0, DLB_ERR_INVALID_ARGUMENT,
                     "shape[1] is -1; extents must not be negative");
    }
    {
      DLTensor bad = good;
      bad.data = nullptr;
      expect_refused(&bad, 0, DLB_ERR_INVALID_ARGUMENT,
                     "data is NULL but the tensor has 6 elements");
    }
    {
      DLTensor bad = good;
      bad.device = device(6, 0);
      expect_refused(&bad, 0, DLB_ERR_UNSUPPORTED,
                     "device type 6 is not a known DLPack device type");
    }
    {
      DLTensor bad = good;
      bad.dtype = dtype(kDLFloat, 7);
      expect_refused(&bad, 0, DLB_ERR_INVALID_ARGUMENT,
                     "dtype float with 7 bits is not a valid DLPack type");
    }
    {
      DLTensor bad = good;
      bad.ndim = 65;
      expect_refused(&bad, 0, DLB_ERR_INVALID_ARGUMENT, "ndim 65 exceeds the maximum of 64");
    }
    // out NULL.
    Error err;
    CHECK(dlb_tensor_wrap(&good, 0, test::count_release, &released, nullptr, err.fresh()) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "out is NULL");
    CHECK(released.get() == 0);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("wrap of an empty tensor with NULL data still releases once") {
    Live live;
    const Dims shape{0, 5};
    DLTensor desc{};
    desc.data = nullptr;
    desc.device = cpu();
    desc.ndim = 2;
    desc.dtype = f32();
    desc.shape = const_cast<int64_t*>(shape.data());
    Counter released;
    DLManagedTensorVersioned* t = nullptr;
    Error err;
    REQUIRE(dlb_tensor_wrap(&desc, 0, test::count_release, &released, &t, err.fresh()) == DLB_OK);
    REQUIRE(t != nullptr);
    CHECK(t->dl_tensor.data == nullptr);
    CHECK(released.get() == 0);
    dlb_tensor_free(t);
    CHECK(released.get() == 1);
    CHECK(live.delta() == 0);
  }
}

// =============================================================================================
namespace {

struct SetErrorLog {
  int calls = 0;
  std::string kind;
  std::string message;
};
void record_set_error(void* ctx, const char* kind, const char* message) {
  auto* log = static_cast<SetErrorLog*>(ctx);
  ++log->calls;
  log->kind = kind != nullptr ? kind : "(null)";
  log->message = message != nullptr ? message : "(null)";
}

}  // namespace

TEST_SUITE("core.lifecycle.exchange_allocator") {
  TEST_CASE("allocates a compact tensor like the prototype; SetError not called") {
    Live live;
    int64_t shape[3] = {2, 3, 4};
    int64_t strides[3] = {1, 2, 6};  // ignored: the result is compact
    DLTensor prototype{};
    prototype.data = nullptr;
    prototype.device = cpu();
    prototype.ndim = 3;
    prototype.dtype = dtype(kDLInt, 16);
    prototype.shape = shape;
    prototype.strides = strides;
    prototype.byte_offset = 64;
    SetErrorLog log;
    DLManagedTensorVersioned* t = kPresetOut;
    CHECK(dlb_exchange_allocator(&prototype, &t, &log, record_set_error) == 0);
    CHECK(log.calls == 0);
    REQUIRE(t != nullptr);
    REQUIRE(t != kPresetOut);
    CHECK(shape_of(t) == Dims{2, 3, 4});
    CHECK(strides_of(t) == Dims{12, 4, 1});
    CHECK(same_dtype(t->dl_tensor.dtype, prototype.dtype));
    CHECK(same_device(t->dl_tensor.device, cpu()));
    CHECK(t->dl_tensor.byte_offset == 0);
    CHECK(t->flags == 0);
    CHECK(t->version.major == 1);
    CHECK(t->version.minor == 3);
    CHECK(dlb_tensor_is_aligned(&t->dl_tensor, DLB_CPU_ALIGNMENT) == 1);
    CHECK(live.delta() == 1);
    // The exchange API frees through the deleter.
    t->deleter(t);
    CHECK(live.delta() == 0);
    // Usable through the DLPackManagedTensorAllocator typedef.
    DLPackManagedTensorAllocator fn = dlb_exchange_allocator;
    t = nullptr;
    CHECK(fn(&prototype, &t, &log, record_set_error) == 0);
    REQUIRE(t != nullptr);
    dlb_tensor_free(t);
    CHECK(log.calls == 0);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("failures call SetError exactly once with the status name and the message") {
    Live live;
    int64_t shape[2] = {-1, 3};
    DLTensor prototype{};
    prototype.device = cpu();
    prototype.ndim = 2;
    prototype.dtype = f32();
    prototype.shape = shape;
    struct Case {
      const char* name;
      DLTensor prototype;
      const char* kind;
      const char* message;
    };
    DLTensor bad_device = prototype;
    shape[0] = -1;
    bad_device.device = device(5, 0);
    bad_device.shape = nullptr;
    bad_device.ndim = 0;
    DLTensor bad_dtype = prototype;
    bad_dtype.dtype = dtype(kDLFloat, 7);
    bad_dtype.ndim = 0;
    const Case cases[] = {
        {"negative extent", prototype, "DLB_ERR_INVALID_ARGUMENT",
         "shape[0] is -1; extents must not be negative"},
        {"unknown device", bad_device, "DLB_ERR_UNSUPPORTED",
         "device type 5 is not a known DLPack device type"},
        {"bad dtype", bad_dtype, "DLB_ERR_INVALID_ARGUMENT",
         "dtype float with 7 bits is not a valid DLPack type"},
    };
    for (const Case& c : cases) {
      CAPTURE(c.name);
      SetErrorLog log;
      DLManagedTensorVersioned* t = kPresetOut;
      DLTensor proto = c.prototype;
      CHECK(dlb_exchange_allocator(&proto, &t, &log, record_set_error) == -1);
      CHECK(log.calls == 1);
      CHECK(log.kind == c.kind);
      CHECK(log.message == c.message);
      CHECK(t == nullptr);
      CHECK(live.delta() == 0);
    }
    {
      // out NULL.
      SetErrorLog log;
      shape[0] = 2;
      CHECK(dlb_exchange_allocator(&prototype, nullptr, &log, record_set_error) == -1);
      CHECK(log.calls == 1);
      CHECK(log.kind == "DLB_ERR_INVALID_ARGUMENT");
      CHECK(log.message == "out is NULL");
    }
    {
      // NULL prototype.
      SetErrorLog log;
      DLManagedTensorVersioned* t = kPresetOut;
      CHECK(dlb_exchange_allocator(nullptr, &t, &log, record_set_error) == -1);
      CHECK(log.calls == 1);
      CHECK(log.kind == "DLB_ERR_INVALID_ARGUMENT");
      CHECK(log.message == "prototype is NULL");
      // The header's convention: output pointers are set to NULL on error (the committed core
      // left *out untouched on this path).
      CHECK(t == nullptr);
    }
    {
      // A NULL SetError is tolerated.
      DLManagedTensorVersioned* t = kPresetOut;
      shape[0] = -1;
      CHECK(dlb_exchange_allocator(&prototype, &t, nullptr, nullptr) == -1);
      CHECK(t == nullptr);
    }
    CHECK(live.delta() == 0);
  }
}

// =============================================================================================
TEST_SUITE("core.lifecycle.limits") {
  TEST_CASE("byte spans are limited to 2^60 bytes: refused above, measured exactly below") {
    // Positions are tracked in bits so that packed sub-byte data can be addressed, which puts
    // the limit of a byte span at 2^60 bytes (dlb_tensor_validate's contract). Above it every
    // entry point refuses with DLB_ERR_OVERFLOW, never wrapping around into a small allocation.
    Live live;
    struct Case {
      DLDataType dtype;
      int64_t extent;
    };
    const Case too_large[] = {
        {dtype(kDLUInt, 8), int64_t{1} << 60},
        {dtype(kDLUInt, 8), int64_t{1} << 61},
        {dtype(kDLUInt, 8), int64_t{1} << 62},
        {f32(), int64_t{1} << 60},
        {dtype(kDLInt, 4), INT64_MAX},
    };
    for (const Case& c : too_large) {
      CAPTURE(c.extent);
      const Dims shape{c.extent};
      DLManagedTensorVersioned* t = kPresetOut;
      Error err;
      CHECK(dlb_tensor_allocate(cpu(), c.dtype, 1, shape.data(), nullptr, 0, &t, err.fresh()) ==
            DLB_ERR_OVERFLOW);
      CHECK(err.text() == "byte span of the tensor exceeds 2^60 bytes");
      CHECK(t == nullptr);
      CHECK(live.delta() == 0);

      DLTensor desc{};
      desc.data = reinterpret_cast<void*>(uintptr_t{0x1000});
      desc.device = cpu();
      desc.ndim = 1;
      desc.dtype = c.dtype;
      desc.shape = const_cast<int64_t*>(shape.data());
      CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_ERR_OVERFLOW);
      CHECK(err.text() == "byte span of the tensor exceeds 2^60 bytes");
      int64_t begin = -1;
      int64_t span = 0;
      CHECK(dlb_tensor_byte_span(&desc, 0, &begin, &span, err.fresh()) == DLB_ERR_OVERFLOW);
      CHECK(err.text() == "byte span of the tensor exceeds 2^60 bytes");
    }

    // Just below the limit: valid, measured exactly, and an allocation fails cleanly.
    const Case large[] = {
        {dtype(kDLUInt, 8), (int64_t{1} << 60) - 1},
        {f32(), int64_t{1} << 57},
        {dtype(kDLInt, 4), (int64_t{1} << 61) - 2},  // packed: 2^63 - 8 bits
    };
    const uint64_t bytes[] = {(uint64_t{1} << 60) - 1, uint64_t{1} << 59, (uint64_t{1} << 60) - 1};
    for (size_t i = 0; i < 3; ++i) {
      const Case& c = large[i];
      CAPTURE(c.extent);
      const Dims shape{c.extent};
      DLManagedTensorVersioned* t = kPresetOut;
      Error err;
      CHECK(dlb_tensor_allocate(cpu(), c.dtype, 1, shape.data(), nullptr, 0, &t, err.fresh()) ==
            DLB_ERR_OUT_OF_MEMORY);
      CHECK(err.text() == "cannot allocate " + std::to_string(bytes[i]) + " bytes on the cpu");
      CHECK(t == nullptr);

      DLTensor desc{};
      desc.data = reinterpret_cast<void*>(uintptr_t{0x1000});
      desc.device = cpu();
      desc.ndim = 1;
      desc.dtype = c.dtype;
      desc.shape = const_cast<int64_t*>(shape.data());
      CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_OK);
      int64_t begin = -1;
      int64_t span = 0;
      CHECK(dlb_tensor_byte_span(&desc, 0, &begin, &span, err.fresh()) == DLB_OK);
      CHECK(begin == 0);
      CHECK(span == bytes[i]);
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("the common case of validation changes no rule: each of its bounds, just inside and "
            "just outside, validates with the general rule's status, message and byte span") {
    // Validation decides compact tensors of whole-byte elements on devices with addresses in a
    // shorter path; everything at or past its bounds takes the general one. These tensors sit
    // on both sides of each bound, and dlb_tensor_wrap_buffer shows the byte span it measured.
    float values[32] = {};
    int64_t shape[2] = {4, 8};
    int64_t strides[2] = {8, 1};
    DLTensor desc{};
    desc.data = values;
    desc.device = cpu();
    desc.ndim = 2;
    desc.dtype = f32();
    desc.shape = shape;
    desc.strides = strides;
    Error err;
    Live live;
    // The span of a wrapped buffer, from the message that refuses a buffer one byte too short
    // (or "ok" when the span is empty and any buffer holds it).
    auto span_text = [&](const DLTensor& t, uint64_t flags, uint64_t size) {
      DLManagedTensorVersioned* out = kPresetOut;
      const int status = dlb_tensor_wrap_buffer(&t, size, flags, nullptr, nullptr, &out, err.fresh());
      if (status == DLB_OK) dlb_tensor_free(out);
      return status == DLB_OK ? std::string("ok") : err.text();
    };

    SUBCASE("compact strides given, NULL, or not compact: the same span") {
      CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_OK);
      CHECK(span_text(desc, 0, 127) == "the tensor's elements reach bytes [0, 128) of a buffer of 127 bytes");
      CHECK(span_text(desc, 0, 128) == "ok");
      desc.strides = nullptr;
      CHECK(span_text(desc, 0, 127) == "the tensor's elements reach bytes [0, 128) of a buffer of 127 bytes");
      int64_t padded_rows[2] = {9, 1};  // rows padded by one element: not compact
      desc.strides = padded_rows;
      desc.shape[0] = 4;
      CHECK(span_text(desc, 0, 139) == "the tensor's elements reach bytes [0, 140) of a buffer of 139 bytes");
      int64_t unit_rows[2] = {99, 1};  // an extent-1 dimension may have any stride
      desc.strides = unit_rows;
      desc.shape[0] = 1;
      CHECK(span_text(desc, 0, 31) == "the tensor's elements reach bytes [0, 32) of a buffer of 31 bytes");
    }
    SUBCASE("byte_offset up to 2^56 and past it") {
      desc.data = reinterpret_cast<void*>(uintptr_t{0x1000});
      for (uint64_t offset : {uint64_t{1} << 56, (uint64_t{1} << 56) + 8}) {
        CAPTURE(offset);
        desc.byte_offset = offset;
        CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_OK);
        CHECK(err.text() == kUntouched);
        CHECK(span_text(desc, 0, offset + 127) ==
              "the tensor's elements reach bytes [" + std::to_string(offset) + ", " +
                  std::to_string(offset + 128) + ") of a buffer of " +
                  std::to_string(offset + 127) + " bytes");
      }
    }
    SUBCASE("2^50 elements and one more") {
      desc.data = reinterpret_cast<void*>(uintptr_t{0x1000});
      desc.dtype = dtype(kDLUInt, 8);
      desc.ndim = 1;
      for (int64_t count : {int64_t{1} << 50, (int64_t{1} << 50) + 1}) {
        CAPTURE(count);
        shape[0] = count;
        strides[0] = 1;
        CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_OK);
        CHECK(span_text(desc, 0, static_cast<uint64_t>(count) - 1) ==
              "the tensor's elements reach bytes [0, " + std::to_string(count) +
                  ") of a buffer of " + std::to_string(count - 1) + " bytes");
      }
    }
    SUBCASE("memory that ends just below the top of the address space, and one byte later") {
      // The address one past the last byte must itself be an address: 128 bytes from
      // UINTPTR_MAX - 128 end at UINTPTR_MAX, from UINTPTR_MAX - 127 they wrap to 0.
      desc.data = reinterpret_cast<void*>(UINTPTR_MAX - 128);
      CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_OK);
      desc.data = reinterpret_cast<void*>(UINTPTR_MAX - 127);
      char expected[160];
      std::snprintf(expected, sizeof expected,
                    "the tensor's memory wraps around the address space (data %p, byte_offset 0)",
                    desc.data);
      CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
      CHECK(err.text() == expected);
    }
    SUBCASE("devices: the cpu's id 0 only; other devices with addresses, any id from 0") {
      desc.device = device(kDLCPU, 1);
      CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
      CHECK(err.text() == "cpu tensors must have device_id 0, not 1");
      desc.device = device(kDLCUDA, 3);
      CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_OK);
      desc.device = device(kDLCUDA, -1);
      CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
      CHECK(err.text() == "device_id -1 is negative");
    }
    SUBCASE("dtypes: legal whole-byte widths pass, the others fail as dlb_dtype_validate says") {
      const DLDataType legal[] = {dtype(kDLInt, 8),     dtype(kDLUInt, 64),     dtype(kDLFloat, 16),
                                  dtype(kDLComplex, 128), dtype(kDLBfloat, 16), dtype(kDLBool, 8),
                                  dtype(kDLFloat, 32, 4), dtype(kDLInt, 4)};
      for (const DLDataType& type : legal) {
        CAPTURE(test::format_dtype(type));
        desc.dtype = type;
        CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_OK);
      }
      const DLDataType illegal[] = {dtype(kDLInt, 24),    dtype(kDLFloat, 8),  dtype(kDLBool, 16),
                                    dtype(kDLComplex, 16),  dtype(kDLFloat, 32, 0),
                                    dtype(kDLBfloat, 64), dtype(19, 8),        dtype(200, 32)};
      for (const DLDataType& type : illegal) {
        CAPTURE(test::format_dtype(type));
        desc.dtype = type;
        Error expected;
        REQUIRE(dlb_dtype_validate(type, expected.fresh()) != DLB_OK);
        CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == dlb_dtype_validate(type, nullptr));
        CHECK(err.text() == expected.text());
      }
    }
    SUBCASE("a negative extent and unknown flags, with compact strides") {
      shape[0] = -4;
      strides[0] = 8;
      CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
      CHECK(err.text() == "shape[0] is -4; extents must not be negative");
      shape[0] = 4;
      CHECK(dlb_tensor_validate(&desc, 0x10, err.fresh()) == DLB_ERR_UNSUPPORTED);
      CHECK(err.text() == "flags 0x10 contain bits unknown to DLPack " +
                              std::to_string(DLPACK_MAJOR_VERSION) + "." +
                              std::to_string(DLPACK_MINOR_VERSION));
    }
    CHECK(live.delta() == 0);
  }
}
