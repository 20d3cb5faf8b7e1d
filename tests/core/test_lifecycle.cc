// Lifecycle of dlbridge tensors through the C API: allocate, wrap, import (versioned and legacy),
// export to the legacy struct, free, share, the exchange-API allocator, and ownership under
// concurrency. Every error path checks the exact status and message; every ownership path checks
// the exact number of deleter/release calls and that dlb_tensor_live_count() returns to where
// it started.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
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

namespace {

using test::Counter;
using test::ForeignLegacy;
using test::ForeignVersioned;
using test::cpu;
using test::dtype;
using test::f32;
using Dims = std::vector<int64_t>;

constexpr uint64_t kReadOnly = DLPACK_FLAG_BITMASK_READ_ONLY;
constexpr uint64_t kIsCopied = DLPACK_FLAG_BITMASK_IS_COPIED;
constexpr uint64_t kPadded = DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;

// Smaller iteration counts under valgrind (or when DLB_TEST_LIGHT is set), so that the whole
// executable stays within a few seconds there too.
bool light_mode() {
  static const bool light = [] {
    if (std::getenv("DLB_TEST_LIGHT") != nullptr) return true;
#ifdef DLB_TEST_HAVE_VALGRIND
    if (RUNNING_ON_VALGRIND) return true;
#endif
    return false;
  }();
  return light;
}

// A dlb_error whose message is reset before every call, so a stale message cannot pass for a
// new one and "left untouched on success" can be checked.
constexpr const char* kUntouched = "<untouched>";
struct Error {
  dlb_error e;
  Error() { fresh(); }
  dlb_error* fresh() {
    std::snprintf(e.message, sizeof(e.message), "%s", kUntouched);
    return &e;
  }
  std::string text() const { return std::string(e.message); }
};

// Live dlbridge tensors relative to the start of a test case.
struct Live {
  int64_t start = dlb_tensor_live_count();
  int64_t delta() const { return dlb_tensor_live_count() - start; }
};

// An address to preset output pointers with, so that "set to NULL on error" is observable.
DLManagedTensorVersioned g_not_null_versioned;
DLManagedTensor g_not_null_legacy;
DLManagedTensorVersioned* const kPresetOut = &g_not_null_versioned;
DLManagedTensor* const kPresetLegacyOut = &g_not_null_legacy;

DLDevice device(int32_t type, int32_t id) { return DLDevice{static_cast<DLDeviceType>(type), id}; }

Dims dims_of(const int64_t* values, int32_t n) {
  return values == nullptr ? Dims{} : Dims(values, values + (n > 0 ? n : 0));
}
Dims shape_of(const DLManagedTensorVersioned* t) {
  return dims_of(t->dl_tensor.shape, t->dl_tensor.ndim);
}
Dims strides_of(const DLManagedTensorVersioned* t) {
  return dims_of(t->dl_tensor.strides, t->dl_tensor.ndim);
}
bool same_dtype(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
bool same_device(DLDevice a, DLDevice b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}

// A versioned deleter that only counts (manager_ctx is a Counter) and reads nothing else.
void counting_versioned_deleter(DLManagedTensorVersioned* self) {
  static_cast<Counter*>(self->manager_ctx)->calls++;
}

// A release callback that frees a malloc'd buffer and counts; its context is one of these.
struct OwnedBuffer {
  void* memory = nullptr;
  Counter released;
};
void free_and_count(void* ctx) {
  auto* owned = static_cast<OwnedBuffer*>(ctx);
  std::free(owned->memory);
  owned->memory = nullptr;
  owned->released.calls++;
}

// Wraps `count` float32 values 0, 1, 2, ... in malloc'd memory that the release frees.
DLManagedTensorVersioned* wrap_floats(OwnedBuffer* owned, Dims shape, uint64_t flags = 0) {
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

// ---- a versioned struct whose dl_tensor lies in an unreadable page --------------------------

// Places a DLManagedTensorVersioned so that version, manager_ctx, deleter and flags are in a
// readable page and everything from dl_tensor on is in a PROT_NONE page: any read of a field
// after `flags` faults, with or without a sanitizer.
struct GuardedVersioned {
  size_t page = 0;
  void* region = MAP_FAILED;
  DLManagedTensorVersioned* managed = nullptr;

  GuardedVersioned() {
    page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    region = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) return;
    char* guard = static_cast<char*>(region) + page;
    if (mprotect(guard, page, PROT_NONE) != 0) return;
    managed = reinterpret_cast<DLManagedTensorVersioned*>(
        guard - offsetof(DLManagedTensorVersioned, dl_tensor));
  }
  ~GuardedVersioned() {
    if (region != MAP_FAILED) munmap(region, 2 * page);
  }
  GuardedVersioned(const GuardedVersioned&) = delete;
  GuardedVersioned& operator=(const GuardedVersioned&) = delete;
};

// ---- the validation matrix shared by both imports ---------------------------------------------

// A change to a valid 2x3 float32 CPU tensor (explicit strides {3, 1}) that makes it invalid.
// `shape`/`strides` are the producer's own arrays, which the change may resize.
struct Invalid {
  const char* name;
  void (*apply)(DLTensor& t, Dims& shape, Dims& strides);
  int status;
  const char* message;
};

const Invalid kInvalid[] = {
    {"ndim -1", [](DLTensor& t, Dims&, Dims&) { t.ndim = -1; }, DLB_ERR_INVALID_ARGUMENT,
     "ndim -1 is negative"},
    {"ndim 65",
     [](DLTensor& t, Dims& shape, Dims& strides) {
       shape.assign(65, 1);
       strides.assign(65, 1);
       t.shape = shape.data();
       t.strides = strides.data();
       t.ndim = 65;
     },
     DLB_ERR_INVALID_ARGUMENT, "ndim 65 exceeds the maximum of 64"},
    {"shape NULL with ndim 2", [](DLTensor& t, Dims&, Dims&) { t.shape = nullptr; },
     DLB_ERR_INVALID_ARGUMENT, "shape is NULL but ndim is 2"},
    {"negative extent", [](DLTensor&, Dims& shape, Dims&) { shape[1] = -3; },
     DLB_ERR_INVALID_ARGUMENT, "shape[1] is -3; extents must not be negative"},
    {"element count overflow",
     [](DLTensor&, Dims& shape, Dims&) {
       shape[0] = int64_t{1} << 32;
       shape[1] = int64_t{1} << 32;
     },
     DLB_ERR_OVERFLOW, "element count of shape (4294967296, 4294967296) overflows 63 bits"},
    {"byte span overflow (huge positive stride)",
     [](DLTensor&, Dims&, Dims& strides) { strides[0] = INT64_MAX / 2; }, DLB_ERR_OVERFLOW,
     "byte span of the tensor exceeds 2^60 bytes"},
    {"byte span overflow (INT64_MIN stride)",
     [](DLTensor&, Dims&, Dims& strides) { strides[0] = INT64_MIN; }, DLB_ERR_OVERFLOW,
     "byte span of the tensor exceeds 2^60 bytes"},
    {"byte_offset too large",
     [](DLTensor& t, Dims&, Dims&) { t.byte_offset = uint64_t{1} << 62; }, DLB_ERR_OVERFLOW,
     "byte_offset 4611686018427387904 is too large"},
    {"lanes 0", [](DLTensor& t, Dims&, Dims&) { t.dtype.lanes = 0; }, DLB_ERR_INVALID_ARGUMENT,
     "dtype lanes is 0; it must be at least 1"},
    {"unknown dtype code 19", [](DLTensor& t, Dims&, Dims&) { t.dtype.code = 19; },
     DLB_ERR_UNSUPPORTED, "dtype code 19 is not a known DLPack type code"},
    {"unknown dtype code 255", [](DLTensor& t, Dims&, Dims&) { t.dtype.code = 255; },
     DLB_ERR_UNSUPPORTED, "dtype code 255 is not a known DLPack type code"},
    {"float with 7 bits", [](DLTensor& t, Dims&, Dims&) { t.dtype.bits = 7; },
     DLB_ERR_INVALID_ARGUMENT, "dtype float with 7 bits is not a valid DLPack type"},
    {"float8 with 16 bits",
     [](DLTensor& t, Dims&, Dims&) { t.dtype = dtype(kDLFloat8_e4m3fn, 16); },
     DLB_ERR_INVALID_ARGUMENT, "dtype float8_e4m3fn with 16 bits is not a valid DLPack type"},
    {"bool with 1 bit", [](DLTensor& t, Dims&, Dims&) { t.dtype = dtype(kDLBool, 1); },
     DLB_ERR_INVALID_ARGUMENT, "dtype bool with 1 bits is not a valid DLPack type"},
    {"device type 5", [](DLTensor& t, Dims&, Dims&) { t.device = device(5, 0); },
     DLB_ERR_UNSUPPORTED, "device type 5 is not a known DLPack device type"},
    {"device type 99", [](DLTensor& t, Dims&, Dims&) { t.device = device(99, 0); },
     DLB_ERR_UNSUPPORTED, "device type 99 is not a known DLPack device type"},
    {"device type 0", [](DLTensor& t, Dims&, Dims&) { t.device = device(0, 0); },
     DLB_ERR_UNSUPPORTED, "device type 0 is not a known DLPack device type"},
    {"cpu device_id -1", [](DLTensor& t, Dims&, Dims&) { t.device = device(kDLCPU, -1); },
     DLB_ERR_INVALID_ARGUMENT, "device_id -1 is negative"},
    {"cuda device_id -2", [](DLTensor& t, Dims&, Dims&) { t.device = device(kDLCUDA, -2); },
     DLB_ERR_INVALID_ARGUMENT, "device_id -2 is negative"},
    {"cpu device_id 1", [](DLTensor& t, Dims&, Dims&) { t.device = device(kDLCPU, 1); },
     DLB_ERR_INVALID_ARGUMENT, "cpu tensors must have device_id 0, not 1"},
    {"NULL data, 6 elements", [](DLTensor& t, Dims&, Dims&) { t.data = nullptr; },
     DLB_ERR_INVALID_ARGUMENT, "data is NULL but the tensor has 6 elements"},
    {"opencl handle, negative stride reaches before the buffer",
     [](DLTensor& t, Dims&, Dims& strides) {
       t.device = device(kDLOpenCL, 0);
       strides[0] = -3;
     },
     DLB_ERR_INVALID_ARGUMENT,
     "strides reach 12 bytes before the start of the opencl buffer (byte_offset 0)"},
    {"opencl handle, byte_offset too small for the negative stride",
     [](DLTensor& t, Dims&, Dims& strides) {
       t.device = device(kDLOpenCL, 0);
       strides[1] = -1;
       t.byte_offset = 4;
     },
     DLB_ERR_INVALID_ARGUMENT,
     "strides reach 4 bytes before the start of the opencl buffer (byte_offset 4)"},
    {"metal handle, negative stride",
     [](DLTensor& t, Dims&, Dims& strides) {
       t.device = device(kDLMetal, 0);
       strides[1] = -1;
     },
     DLB_ERR_INVALID_ARGUMENT,
     "strides reach 8 bytes before the start of the metal buffer (byte_offset 0)"},
};

// A change that leaves the 2x3 float32 tensor acceptable.
struct Acceptable {
  const char* name;
  void (*apply)(DLTensor& t, Dims& shape, Dims& strides, std::vector<unsigned char>& storage);
};

const Acceptable kAcceptable[] = {
    {"NULL strides (pre-1.2 producer)",
     [](DLTensor& t, Dims&, Dims&, std::vector<unsigned char>&) { t.strides = nullptr; }},
    {"zero-size with NULL data",
     [](DLTensor& t, Dims& shape, Dims&, std::vector<unsigned char>&) {
       shape[0] = 0;
       t.data = nullptr;
     }},
    {"ndim 0 scalar with NULL shape and strides",
     [](DLTensor& t, Dims&, Dims&, std::vector<unsigned char>&) {
       t.ndim = 0;
       t.shape = nullptr;
       t.strides = nullptr;
     }},
    {"negative strides, data at the first element",
     [](DLTensor& t, Dims&, Dims& strides, std::vector<unsigned char>& storage) {
       strides[0] = -3;
       strides[1] = -1;
       t.data = storage.data() + 5 * sizeof(float);
     }},
    {"negative strides, byte_offset at the first element",
     [](DLTensor& t, Dims&, Dims& strides, std::vector<unsigned char>&) {
       strides[0] = -3;
       t.byte_offset = 12;
     }},
    {"zero (broadcast) strides",
     [](DLTensor&, Dims&, Dims& strides, std::vector<unsigned char>&) {
       strides[0] = 0;
       strides[1] = 0;
     }},
    {"opencl handle with byte_offset covering a negative stride",
     [](DLTensor& t, Dims&, Dims& strides, std::vector<unsigned char>&) {
       t.device = device(kDLOpenCL, 0);
       strides[0] = -3;
       t.byte_offset = 12;
     }},
    {"cuda device 3 (never dereferenced)",
     [](DLTensor& t, Dims&, Dims&, std::vector<unsigned char>&) {
       t.device = device(kDLCUDA, 3);
     }},
    {"cuda pinned host memory",
     [](DLTensor& t, Dims&, Dims&, std::vector<unsigned char>&) {
       t.device = device(kDLCUDAHost, 0);
     }},
    {"bcomplex32 (post-1.3 code 18)",
     [](DLTensor& t, Dims&, Dims&, std::vector<unsigned char>&) {
       t.dtype = dtype(kDLBcomplex, 32);
     }},
    {"extent-1 dimension with an arbitrary stride",
     [](DLTensor&, Dims& shape, Dims& strides, std::vector<unsigned char>&) {
       shape[0] = 1;
       strides[0] = 1000;
     }},
};

// Checks that `out` describes the same tensor as `src` (the foreign one, before import).
void check_same_tensor(const DLManagedTensorVersioned* out, const DLTensor& src) {
  const DLTensor& t = out->dl_tensor;
  // For address-based devices the producer's byte_offset is folded into data.
  if (src.data != nullptr && dlb_tensor_is_aligned(&src, 1) &&
      (src.device.device_type == kDLCPU || src.device.device_type == kDLCUDA ||
       src.device.device_type == kDLCUDAHost || src.device.device_type == kDLCUDAManaged ||
       src.device.device_type == kDLROCM || src.device.device_type == kDLROCMHost ||
       src.device.device_type == kDLOneAPI)) {
    CHECK(t.data == static_cast<const char*>(src.data) + src.byte_offset);
    CHECK(t.byte_offset == 0);
  } else {
    CHECK(t.data == src.data);
    CHECK(t.byte_offset == src.byte_offset);
  }
  CHECK(same_device(t.device, src.device));
  CHECK(t.ndim == src.ndim);
  CHECK(same_dtype(t.dtype, src.dtype));
  CHECK(shape_of(out) == dims_of(src.shape, src.ndim));
  Dims expected_strides(static_cast<size_t>(src.ndim));
  Error err;
  REQUIRE(dlb_tensor_get_strides(&src, expected_strides.data(), err.fresh()) == DLB_OK);
  CHECK(strides_of(out) == expected_strides);
  // Every dlbridge tensor carries non-NULL shape and strides.
  CHECK(t.shape != nullptr);
  CHECK(t.strides != nullptr);
  CHECK(out->version.major == 1);
  CHECK(out->version.minor == 3);
}

// ---- concurrency helpers --------------------------------------------------------------------

// A one-shot barrier (std::barrier is C++20).
class Barrier {
 public:
  explicit Barrier(int parties) : remaining_(parties) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (--remaining_ == 0) {
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [this] { return remaining_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int remaining_;
};

struct Handoff {
  DLManagedTensorVersioned* tensor;
  std::thread::id creator;
  uint64_t flags;
};

// A mutex-protected queue through which one thread hands tensors to another to free.
class Mailbox {
 public:
  void push(const Handoff& item) {
    std::lock_guard<std::mutex> lock(mutex_);
    items_.push_back(item);
  }
  bool pop(Handoff* item) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (items_.empty()) return false;
    *item = items_.front();
    items_.pop_front();
    return true;
  }

 private:
  std::mutex mutex_;
  std::deque<Handoff> items_;
};

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
      uint64_t span = 0;
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
      uint64_t span = 99;
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
      uint64_t span = 0;
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
      uint64_t span = 0;
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
    uint64_t span = 0;
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
TEST_SUITE("core.lifecycle.import") {
  TEST_CASE("import keeps the data pointer and runs the deleter exactly once, at free") {
    Live live;
    Counter deleted;
    ForeignVersioned* f = test::make_foreign(deleted, f32(), {2, 3});
    void* const data = f->managed.dl_tensor.data;
    const DLTensor before = f->managed.dl_tensor;
    DLManagedTensorVersioned* t = kPresetOut;
    Error err;
    REQUIRE(dlb_tensor_import(&f->managed, &t, err.fresh()) == DLB_OK);
    CHECK(err.text() == kUntouched);
    REQUIRE(t != nullptr);
    REQUIRE(t != kPresetOut);
    CHECK(live.delta() == 1);
    CHECK(deleted.get() == 0);
    CHECK(t->dl_tensor.data == data);
    check_same_tensor(t, before);
    CHECK(t->flags == 0);
    CHECK(dlb_tensor_is_dlbridge(t) == 1);
    // Writes go to the producer's memory (no copy).
    static_cast<float*>(t->dl_tensor.data)[4] = 4.5f;
    float seen = 0;
    std::memcpy(&seen, static_cast<unsigned char*>(data) + 4 * sizeof(float), sizeof(seen));
    CHECK(seen == 4.5f);
    CHECK(deleted.get() == 0);
    dlb_tensor_free(t);
    CHECK(deleted.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("a tensor made by dlbridge is returned as is") {
    Live live;
    const Dims shape{4};
    DLManagedTensorVersioned* t = nullptr;
    Error err;
    REQUIRE(dlb_tensor_allocate(cpu(), f32(), 1, shape.data(), nullptr, kReadOnly, &t,
                                err.fresh()) == DLB_OK);
    REQUIRE(t != nullptr);
    CHECK(live.delta() == 1);
    DLManagedTensorVersioned* imported = nullptr;
    REQUIRE(dlb_tensor_import(t, &imported, err.fresh()) == DLB_OK);
    CHECK(imported == t);
    CHECK(live.delta() == 1);
    CHECK(imported->flags == kReadOnly);
    // Wrapped too: its release runs once.
    OwnedBuffer owned;
    DLManagedTensorVersioned* w = wrap_floats(&owned, {3});
    DLManagedTensorVersioned* w2 = nullptr;
    REQUIRE(dlb_tensor_import(w, &w2, err.fresh()) == DLB_OK);
    CHECK(w2 == w);
    CHECK(owned.released.get() == 0);
    dlb_tensor_free(w2);
    CHECK(owned.released.get() == 1);
    dlb_tensor_free(imported);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("major version 2 / 0: deleter once, DLB_ERR_UNSUPPORTED_VERSION, nothing else read") {
    Live live;
    for (uint32_t major : {uint32_t{2}, uint32_t{0}, uint32_t{UINT32_MAX}}) {
      CAPTURE(major);
      // 1. dl_tensor in a PROT_NONE page: reading any field after `flags` would fault.
      {
        GuardedVersioned g;
        REQUIRE(g.managed != nullptr);
        Counter deleted;
        g.managed->version.major = major;
        g.managed->version.minor = 7;
        g.managed->manager_ctx = &deleted;
        g.managed->deleter = counting_versioned_deleter;
        g.managed->flags = ~uint64_t{0};  // not checked before the version either
        DLManagedTensorVersioned* t = kPresetOut;
        Error err;
        CHECK(dlb_tensor_import(g.managed, &t, err.fresh()) == DLB_ERR_UNSUPPORTED_VERSION);
        CHECK(err.text() == "DLPack major version " + std::to_string(major) +
                                " is not supported (dlbridge accepts major version 1)");
        CHECK(t == nullptr);
        CHECK(deleted.get() == 1);
        CHECK(live.delta() == 0);
      }
      // 2. A heap tensor whose fields after `flags` are garbage that would crash or be refused
      //    with a different message if read.
      {
        Counter deleted;
        ForeignVersioned* f = test::make_foreign(deleted, f32(), {2, 3});
        f->managed.version = DLPackVersion{major, 0};
        f->managed.flags = uint64_t{0xF0};
        DLTensor& t = f->managed.dl_tensor;
        t.data = reinterpret_cast<void*>(uintptr_t{0x1});
        t.device = device(99, -7);
        t.ndim = -5;
        t.dtype = dtype(250, 3, 0);
        t.shape = reinterpret_cast<int64_t*>(uintptr_t{0x1});
        t.strides = reinterpret_cast<int64_t*>(uintptr_t{0x9});
        t.byte_offset = UINT64_MAX;
        DLManagedTensorVersioned* out = kPresetOut;
        Error err;
        CHECK(dlb_tensor_import(&f->managed, &out, err.fresh()) == DLB_ERR_UNSUPPORTED_VERSION);
        CHECK(err.text() == "DLPack major version " + std::to_string(major) +
                                " is not supported (dlbridge accepts major version 1)");
        CHECK(out == nullptr);
        CHECK(deleted.get() == 1);
      }
      // 3. NULL deleter: refused without a call.
      {
        GuardedVersioned g;
        REQUIRE(g.managed != nullptr);
        g.managed->version.major = major;
        g.managed->version.minor = 0;
        g.managed->manager_ctx = nullptr;
        g.managed->deleter = nullptr;
        g.managed->flags = 0;
        DLManagedTensorVersioned* t = kPresetOut;
        Error err;
        CHECK(dlb_tensor_import(g.managed, &t, err.fresh()) == DLB_ERR_UNSUPPORTED_VERSION);
        CHECK(err.text() == "DLPack major version " + std::to_string(major) +
                                " is not supported (dlbridge accepts major version 1)");
        CHECK(t == nullptr);
      }
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("newer minor versions are accepted when every code and flag is known") {
    Live live;
    for (uint32_t minor : {uint32_t{0}, uint32_t{2}, uint32_t{3}, uint32_t{4}, uint32_t{9},
                           uint32_t{UINT32_MAX}}) {
      CAPTURE(minor);
      Counter deleted;
      ForeignVersioned* f = test::make_foreign(deleted, dtype(kDLFloat8_e4m3fn, 8), {3, 2});
      f->managed.version = DLPackVersion{1, minor};
      f->managed.flags = kReadOnly | kIsCopied;
      DLManagedTensorVersioned* t = nullptr;
      Error err;
      REQUIRE(dlb_tensor_import(&f->managed, &t, err.fresh()) == DLB_OK);
      REQUIRE(t != nullptr);
      CHECK(t->version.major == 1);
      CHECK(t->version.minor == 3);  // stamped with what dlbridge implements
      CHECK(t->flags == (kReadOnly | kIsCopied));
      CHECK(deleted.get() == 0);
      dlb_tensor_free(t);
      CHECK(deleted.get() == 1);
    }
    // ...and refused, deleter once, when a 1.9 tensor uses something 1.3 does not define.
    struct Case {
      const char* name;
      void (*apply)(DLManagedTensorVersioned& m);
      int status;
      const char* message;
    };
    const Case refused[] = {
        {"unknown flag", [](DLManagedTensorVersioned& m) { m.flags = uint64_t{1} << 3; },
         DLB_ERR_UNSUPPORTED, "flags 0x8 contain bits unknown to DLPack 1.3"},
        {"unknown dtype code", [](DLManagedTensorVersioned& m) { m.dl_tensor.dtype.code = 19; },
         DLB_ERR_UNSUPPORTED, "dtype code 19 is not a known DLPack type code"},
        {"unknown device type",
         [](DLManagedTensorVersioned& m) { m.dl_tensor.device = device(21, 0); },
         DLB_ERR_UNSUPPORTED, "device type 21 is not a known DLPack device type"},
    };
    for (const Case& c : refused) {
      CAPTURE(c.name);
      Counter deleted;
      ForeignVersioned* f = test::make_foreign(deleted, f32(), {2});
      f->managed.version = DLPackVersion{1, 9};
      c.apply(f->managed);
      DLManagedTensorVersioned* t = kPresetOut;
      Error err;
      CHECK(dlb_tensor_import(&f->managed, &t, err.fresh()) == c.status);
      CHECK(err.text() == c.message);
      CHECK(t == nullptr);
      CHECK(deleted.get() == 1);
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("unknown flag bits are refused and the deleter runs once") {
    Live live;
    for (uint64_t flags : {uint64_t{1} << 3, uint64_t{1} << 63, kReadOnly | (uint64_t{1} << 40)}) {
      CAPTURE(flags);
      Counter deleted;
      ForeignVersioned* f = test::make_foreign(deleted, f32(), {2, 3});
      f->managed.flags = flags;
      DLManagedTensorVersioned* t = kPresetOut;
      Error err;
      CHECK(dlb_tensor_import(&f->managed, &t, err.fresh()) == DLB_ERR_UNSUPPORTED);
      char expected[128];
      std::snprintf(expected, sizeof(expected), "flags 0x%llx contain bits unknown to DLPack 1.3",
                    static_cast<unsigned long long>(flags & ~uint64_t{7}));
      CHECK(err.text() == expected);
      CHECK(t == nullptr);
      CHECK(deleted.get() == 1);
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("NULL deleter is tolerated on success and on rejection") {
    Live live;
    float values[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    int64_t strides[1] = {1};
    DLManagedTensorVersioned m{};
    m.version = DLPackVersion{1, 3};
    m.manager_ctx = nullptr;
    m.deleter = nullptr;
    m.flags = 0;
    m.dl_tensor.data = values;
    m.dl_tensor.device = cpu();
    m.dl_tensor.ndim = 1;
    m.dl_tensor.dtype = f32();
    m.dl_tensor.shape = shape;
    m.dl_tensor.strides = strides;
    DLManagedTensorVersioned* t = nullptr;
    Error err;
    REQUIRE(dlb_tensor_import(&m, &t, err.fresh()) == DLB_OK);
    REQUIRE(t != nullptr);
    CHECK(t->dl_tensor.data == values);
    CHECK(live.delta() == 1);
    dlb_tensor_free(t);
    CHECK(live.delta() == 0);

    // Rejected by validation.
    shape[0] = -4;
    t = kPresetOut;
    CHECK(dlb_tensor_import(&m, &t, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "shape[0] is -4; extents must not be negative");
    CHECK(t == nullptr);
    // Rejected for out NULL.
    shape[0] = 4;
    CHECK(dlb_tensor_import(&m, nullptr, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "out is NULL");
    CHECK(live.delta() == 0);
  }

  TEST_CASE("NULL src and out NULL") {
    Live live;
    DLManagedTensorVersioned* t = kPresetOut;
    Error err;
    CHECK(dlb_tensor_import(nullptr, &t, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "tensor is NULL");
    CHECK(t == nullptr);
    CHECK(dlb_tensor_import(nullptr, nullptr, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "tensor is NULL");
    // out NULL: src is still consumed.
    Counter deleted;
    ForeignVersioned* f = test::make_foreign(deleted, f32(), {2, 3});
    CHECK(dlb_tensor_import(&f->managed, nullptr, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "out is NULL");
    CHECK(deleted.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("validation matrix: each invalid field has its own error and one deleter call") {
    Live live;
    for (const Invalid& c : kInvalid) {
      CAPTURE(c.name);
      Counter deleted;
      ForeignVersioned* f = test::make_foreign(deleted, f32(), {2, 3});
      c.apply(f->managed.dl_tensor, f->shape, f->strides);
      DLManagedTensorVersioned* t = kPresetOut;
      Error err;
      CHECK(dlb_tensor_import(&f->managed, &t, err.fresh()) == c.status);
      CHECK(err.text() == c.message);
      CHECK(t == nullptr);
      CHECK(deleted.get() == 1);
      CHECK(live.delta() == 0);
    }
    // The same checks through dlb_tensor_validate, which borrows (no deleter involved).
    for (const Invalid& c : kInvalid) {
      CAPTURE(c.name);
      Counter deleted;
      ForeignVersioned* f = test::make_foreign(deleted, f32(), {2, 3});
      c.apply(f->managed.dl_tensor, f->shape, f->strides);
      Error err;
      CHECK(dlb_tensor_validate(&f->managed.dl_tensor, 0, err.fresh()) == c.status);
      CHECK(err.text() == c.message);
      CHECK(deleted.get() == 0);
      ForeignVersioned::deleter(&f->managed);
      CHECK(deleted.get() == 1);
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("accepted edge cases: imported as described, deleter exactly once at free") {
    Live live;
    for (const Acceptable& c : kAcceptable) {
      CAPTURE(c.name);
      Counter deleted;
      ForeignVersioned* f = test::make_foreign(deleted, f32(), {2, 3});
      c.apply(f->managed.dl_tensor, f->shape, f->strides, f->storage);
      const DLTensor before = f->managed.dl_tensor;
      Error err;
      CHECK(dlb_tensor_validate(&before, 0, err.fresh()) == DLB_OK);
      DLManagedTensorVersioned* t = kPresetOut;
      REQUIRE(dlb_tensor_import(&f->managed, &t, err.fresh()) == DLB_OK);
      CHECK(err.text() == kUntouched);
      REQUIRE(t != nullptr);
      REQUIRE(t != kPresetOut);
      check_same_tensor(t, before);
      CHECK(live.delta() == 1);
      CHECK(deleted.get() == 0);
      dlb_tensor_free(t);
      CHECK(deleted.get() == 1);
      CHECK(live.delta() == 0);
    }
  }

  TEST_CASE("NULL strides: the imported tensor has compact strides, get_strides synthesises") {
    Live live;
    Counter deleted;
    ForeignVersioned* f = test::make_foreign(deleted, dtype(kDLInt, 16), {2, 3, 4}, true);
    REQUIRE(f->managed.dl_tensor.strides == nullptr);
    Dims synthesised(3);
    Error err;
    REQUIRE(dlb_tensor_get_strides(&f->managed.dl_tensor, synthesised.data(), err.fresh()) ==
            DLB_OK);
    CHECK(synthesised == Dims{12, 4, 1});
    DLManagedTensorVersioned* t = nullptr;
    REQUIRE(dlb_tensor_import(&f->managed, &t, err.fresh()) == DLB_OK);
    REQUIRE(t != nullptr);
    REQUIRE(t->dl_tensor.strides != nullptr);
    CHECK(strides_of(t) == Dims{12, 4, 1});
    Dims via_api(3);
    REQUIRE(dlb_tensor_get_strides(&t->dl_tensor, via_api.data(), err.fresh()) == DLB_OK);
    CHECK(via_api == Dims{12, 4, 1});
    dlb_tensor_free(t);
    CHECK(deleted.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("zero-size tensor with NULL data: accepted, and its deleter still runs once") {
    Live live;
    Counter deleted;
    ForeignVersioned* f = test::make_foreign(deleted, f32(), {0, 4});
    f->managed.dl_tensor.data = nullptr;
    DLManagedTensorVersioned* t = nullptr;
    Error err;
    REQUIRE(dlb_tensor_import(&f->managed, &t, err.fresh()) == DLB_OK);
    REQUIRE(t != nullptr);
    CHECK(t->dl_tensor.data == nullptr);
    CHECK(shape_of(t) == Dims{0, 4});
    CHECK(deleted.get() == 0);
    dlb_tensor_free(t);
    CHECK(deleted.get() == 1);
    CHECK(live.delta() == 0);
  }
}

// =============================================================================================
TEST_SUITE("core.lifecycle.legacy") {
  TEST_CASE("import_legacy: flags 0, version 1.3, legacy deleter once at the last free") {
    Live live;
    Counter deleted;
    ForeignLegacy* f = test::make_foreign_legacy(deleted, f32(), {2, 3});
    const DLTensor before = f->managed.dl_tensor;
    DLManagedTensorVersioned* t = kPresetOut;
    Error err;
    REQUIRE(dlb_tensor_import_legacy(&f->managed, &t, err.fresh()) == DLB_OK);
    CHECK(err.text() == kUntouched);
    REQUIRE(t != nullptr);
    REQUIRE(t != kPresetOut);
    check_same_tensor(t, before);
    CHECK(t->flags == 0);
    CHECK(t->version.major == 1);
    CHECK(t->version.minor == 3);
    CHECK(dlb_tensor_is_dlbridge(t) == 1);
    CHECK(live.delta() == 1);
    // A share and a view keep the producer's memory alive after the import itself is freed.
    DLManagedTensorVersioned* share = nullptr;
    REQUIRE(dlb_tensor_share(t, 0, &share, err.fresh()) == DLB_OK);
    DLManagedTensorVersioned* view = nullptr;
    REQUIRE(dlb_tensor_transpose(t, &view, err.fresh()) == DLB_OK);
    CHECK(live.delta() == 3);
    dlb_tensor_free(t);
    CHECK(deleted.get() == 0);
    dlb_tensor_free(share);
    CHECK(deleted.get() == 0);
    CHECK(shape_of(view) == Dims{3, 2});
    CHECK(view->dl_tensor.data == before.data);
    dlb_tensor_free(view);
    CHECK(deleted.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("import_legacy: NULL strides, zero-size NULL data, NULL deleter") {
    Live live;
    {
      Counter deleted;
      ForeignLegacy* f = test::make_foreign_legacy(deleted, dtype(kDLUInt, 8), {3, 5}, true);
      DLManagedTensorVersioned* t = nullptr;
      Error err;
      REQUIRE(dlb_tensor_import_legacy(&f->managed, &t, err.fresh()) == DLB_OK);
      REQUIRE(t != nullptr);
      CHECK(strides_of(t) == Dims{5, 1});
      dlb_tensor_free(t);
      CHECK(deleted.get() == 1);
    }
    {
      Counter deleted;
      ForeignLegacy* f = test::make_foreign_legacy(deleted, f32(), {4, 0});
      f->managed.dl_tensor.data = nullptr;
      DLManagedTensorVersioned* t = nullptr;
      Error err;
      REQUIRE(dlb_tensor_import_legacy(&f->managed, &t, err.fresh()) == DLB_OK);
      REQUIRE(t != nullptr);
      CHECK(deleted.get() == 0);
      dlb_tensor_free(t);
      CHECK(deleted.get() == 1);
    }
    {
      float values[2] = {1, 2};
      int64_t shape[1] = {2};
      DLManagedTensor m{};
      m.dl_tensor.data = values;
      m.dl_tensor.device = cpu();
      m.dl_tensor.ndim = 1;
      m.dl_tensor.dtype = f32();
      m.dl_tensor.shape = shape;
      m.deleter = nullptr;
      DLManagedTensorVersioned* t = nullptr;
      Error err;
      REQUIRE(dlb_tensor_import_legacy(&m, &t, err.fresh()) == DLB_OK);
      REQUIRE(t != nullptr);
      dlb_tensor_free(t);
      m.dl_tensor.ndim = -2;
      t = kPresetOut;
      CHECK(dlb_tensor_import_legacy(&m, &t, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
      CHECK(err.text() == "ndim -2 is negative");
      CHECK(t == nullptr);
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("import_legacy rejections: legacy deleter once, exact message") {
    Live live;
    for (const Invalid& c : kInvalid) {
      CAPTURE(c.name);
      Counter deleted;
      ForeignLegacy* f = test::make_foreign_legacy(deleted, f32(), {2, 3});
      c.apply(f->managed.dl_tensor, f->shape, f->strides);
      DLManagedTensorVersioned* t = kPresetOut;
      Error err;
      CHECK(dlb_tensor_import_legacy(&f->managed, &t, err.fresh()) == c.status);
      CHECK(err.text() == c.message);
      CHECK(t == nullptr);
      CHECK(deleted.get() == 1);
      CHECK(live.delta() == 0);
    }
    // NULL src, out NULL.
    Error err;
    DLManagedTensorVersioned* t = kPresetOut;
    CHECK(dlb_tensor_import_legacy(nullptr, &t, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "tensor is NULL");
    CHECK(t == nullptr);
    Counter deleted;
    ForeignLegacy* f = test::make_foreign_legacy(deleted, f32(), {2});
    CHECK(dlb_tensor_import_legacy(&f->managed, nullptr, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "out is NULL");
    CHECK(deleted.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("export_legacy of a wrapped tensor: same fields, frees the source exactly once") {
    Live live;
    float values[12] = {};
    int64_t shape[2] = {3, 4};
    int64_t strides[2] = {-4, 1};
    DLTensor desc{};
    desc.data = values;
    desc.device = cpu();
    desc.ndim = 2;
    desc.dtype = f32();
    desc.shape = shape;
    desc.strides = strides;
    desc.byte_offset = 8 * sizeof(float);
    Counter released;
    DLManagedTensorVersioned* src = nullptr;
    Error err;
    REQUIRE(dlb_tensor_wrap(&desc, kIsCopied, test::count_release, &released, &src, err.fresh()) ==
            DLB_OK);
    REQUIRE(src != nullptr);
    const DLTensor s = src->dl_tensor;
    DLManagedTensor* legacy = kPresetLegacyOut;
    REQUIRE(dlb_tensor_export_legacy(src, &legacy, err.fresh()) == DLB_OK);
    CHECK(err.text() == kUntouched);
    REQUIRE(legacy != nullptr);
    REQUIRE(legacy != kPresetLegacyOut);
    const DLTensor& l = legacy->dl_tensor;
    CHECK(l.data == s.data);
    CHECK(same_device(l.device, s.device));
    CHECK(l.ndim == s.ndim);
    CHECK(same_dtype(l.dtype, s.dtype));
    CHECK(l.byte_offset == s.byte_offset);
    CHECK(dims_of(l.shape, l.ndim) == Dims{3, 4});
    CHECK(dims_of(l.strides, l.ndim) == Dims{-4, 1});
    CHECK((legacy->deleter != nullptr));
    CHECK(released.get() == 0);
    CHECK(live.delta() == 1);  // the source lives on inside the legacy tensor
    dlb_legacy_tensor_free(legacy);
    CHECK(released.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("export_legacy: calling the legacy deleter directly frees the source once") {
    Live live;
    OwnedBuffer owned;
    DLManagedTensorVersioned* src = wrap_floats(&owned, {5});
    DLManagedTensor* legacy = nullptr;
    Error err;
    REQUIRE(dlb_tensor_export_legacy(src, &legacy, err.fresh()) == DLB_OK);
    REQUIRE(legacy != nullptr);
    CHECK(static_cast<const float*>(legacy->dl_tensor.data)[4] == 4.0f);
    CHECK(owned.released.get() == 0);
    legacy->deleter(legacy);
    CHECK(owned.released.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("export_legacy of an imported foreign tensor runs the foreign deleter once") {
    Live live;
    Counter deleted;
    ForeignVersioned* f = test::make_foreign(deleted, dtype(kDLInt, 32), {4, 2});
    void* const data = f->managed.dl_tensor.data;
    DLManagedTensorVersioned* imported = nullptr;
    Error err;
    REQUIRE(dlb_tensor_import(&f->managed, &imported, err.fresh()) == DLB_OK);
    DLManagedTensor* legacy = nullptr;
    REQUIRE(dlb_tensor_export_legacy(imported, &legacy, err.fresh()) == DLB_OK);
    REQUIRE(legacy != nullptr);
    CHECK(legacy->dl_tensor.data == data);
    CHECK(dims_of(legacy->dl_tensor.shape, 2) == Dims{4, 2});
    CHECK(deleted.get() == 0);
    dlb_legacy_tensor_free(legacy);
    CHECK(deleted.get() == 1);
    CHECK(live.delta() == 0);

    // A foreign (non-dlbridge) versioned tensor can be exported directly too.
    Counter deleted2;
    ForeignVersioned* g = test::make_foreign(deleted2, f32(), {3});
    DLManagedTensor* legacy2 = nullptr;
    REQUIRE(dlb_tensor_export_legacy(&g->managed, &legacy2, err.fresh()) == DLB_OK);
    REQUIRE(legacy2 != nullptr);
    CHECK(legacy2->dl_tensor.data == g->storage.data());
    CHECK(deleted2.get() == 0);
    dlb_legacy_tensor_free(legacy2);
    CHECK(deleted2.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("export_legacy refuses READ_ONLY and padded sub-byte; the caller still owns src") {
    Live live;
    {
      OwnedBuffer owned;
      DLManagedTensorVersioned* src = wrap_floats(&owned, {2, 2}, kReadOnly);
      DLManagedTensor* legacy = kPresetLegacyOut;
      Error err;
      CHECK(dlb_tensor_export_legacy(src, &legacy, err.fresh()) == DLB_ERR_READ_ONLY);
      CHECK(err.text() ==
            "cannot export a read-only tensor as a legacy DLManagedTensor, which has no "
            "READ_ONLY flag");
      CHECK(legacy == nullptr);
      CHECK(owned.released.get() == 0);
      CHECK(live.delta() == 1);
      dlb_tensor_free(src);
      CHECK(owned.released.get() == 1);
    }
    {
      const Dims shape{6};
      for (DLDataType sub : {dtype(kDLInt, 4), dtype(kDLUInt, 1), dtype(kDLFloat4_e2m1fn, 4),
                             dtype(kDLFloat6_e2m3fn, 6)}) {
        DLManagedTensorVersioned* src = nullptr;
        Error err;
        REQUIRE(dlb_tensor_allocate(cpu(), sub, 1, shape.data(), nullptr, kPadded, &src,
                                    err.fresh()) == DLB_OK);
        DLManagedTensor* legacy = kPresetLegacyOut;
        CHECK(dlb_tensor_export_legacy(src, &legacy, err.fresh()) == DLB_ERR_UNSUPPORTED);
        CHECK(err.text() ==
              "cannot export padded sub-byte data as a legacy DLManagedTensor, which has no "
              "IS_SUBBYTE_TYPE_PADDED flag");
        CHECK(legacy == nullptr);
        CHECK(live.delta() == 1);
        dlb_tensor_free(src);
        CHECK(live.delta() == 0);
      }
    }
    {
      // Packed sub-byte data and the padded flag on a whole-byte type export fine.
      const Dims shape{6};
      for (std::pair<DLDataType, uint64_t> c :
           {std::make_pair(dtype(kDLInt, 4), uint64_t{0}), std::make_pair(f32(), kPadded)}) {
        DLManagedTensorVersioned* src = nullptr;
        Error err;
        REQUIRE(dlb_tensor_allocate(cpu(), c.first, 1, shape.data(), nullptr, c.second, &src,
                                    err.fresh()) == DLB_OK);
        DLManagedTensor* legacy = nullptr;
        CHECK(dlb_tensor_export_legacy(src, &legacy, err.fresh()) == DLB_OK);
        REQUIRE(legacy != nullptr);
        CHECK(live.delta() == 1);
        dlb_legacy_tensor_free(legacy);
        CHECK(live.delta() == 0);
      }
    }
    {
      // NULL arguments.
      Error err;
      DLManagedTensor* legacy = kPresetLegacyOut;
      CHECK(dlb_tensor_export_legacy(nullptr, &legacy, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
      CHECK(err.text() == "tensor is NULL");
      CHECK(legacy == nullptr);
      OwnedBuffer owned;
      DLManagedTensorVersioned* src = wrap_floats(&owned, {2});
      CHECK(dlb_tensor_export_legacy(src, nullptr, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
      CHECK(err.text() == "out is NULL");
      CHECK(owned.released.get() == 0);
      dlb_tensor_free(src);
      CHECK(owned.released.get() == 1);
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("round trip export_legacy -> import_legacy -> free runs the release exactly once") {
    Live live;
    OwnedBuffer owned;
    DLManagedTensorVersioned* src = wrap_floats(&owned, {2, 3});
    void* const data = src->dl_tensor.data;
    DLManagedTensor* legacy = nullptr;
    Error err;
    REQUIRE(dlb_tensor_export_legacy(src, &legacy, err.fresh()) == DLB_OK);
    DLManagedTensorVersioned* back = nullptr;
    REQUIRE(dlb_tensor_import_legacy(legacy, &back, err.fresh()) == DLB_OK);
    REQUIRE(back != nullptr);
    CHECK(back->dl_tensor.data == data);
    CHECK(shape_of(back) == Dims{2, 3});
    CHECK(back->flags == 0);
    CHECK(static_cast<const float*>(back->dl_tensor.data)[5] == 5.0f);
    CHECK(owned.released.get() == 0);
    CHECK(live.delta() == 2);
    dlb_tensor_free(back);
    CHECK(owned.released.get() == 1);
    CHECK(live.delta() == 0);

    // A rejected import_legacy of an exported tensor also frees the source exactly once.
    OwnedBuffer owned2;
    DLManagedTensorVersioned* src2 = wrap_floats(&owned2, {2});
    DLManagedTensor* legacy2 = nullptr;
    REQUIRE(dlb_tensor_export_legacy(src2, &legacy2, err.fresh()) == DLB_OK);
    CHECK(dlb_tensor_import_legacy(legacy2, nullptr, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "out is NULL");
    CHECK(owned2.released.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("dlb_legacy_tensor_free(NULL) and a legacy tensor without deleter are no-ops") {
    Live live;
    dlb_legacy_tensor_free(nullptr);
    DLManagedTensor m{};
    m.deleter = nullptr;
    dlb_legacy_tensor_free(&m);
    Counter deleted;
    ForeignLegacy* f = test::make_foreign_legacy(deleted, f32(), {1});
    dlb_legacy_tensor_free(&f->managed);
    CHECK(deleted.get() == 1);
    CHECK(live.delta() == 0);
  }
}

// =============================================================================================
TEST_SUITE("core.lifecycle.free_share") {
  TEST_CASE("dlb_tensor_free: NULL is a no-op, a NULL deleter is skipped, any producer works") {
    Live live;
    dlb_tensor_free(nullptr);
    DLManagedTensorVersioned m{};
    m.version = DLPackVersion{1, 3};
    m.deleter = nullptr;
    dlb_tensor_free(&m);
    Counter deleted;
    ForeignVersioned* f = test::make_foreign(deleted, f32(), {2});
    dlb_tensor_free(&f->managed);
    CHECK(deleted.get() == 1);
    // Calling a dlbridge tensor's own deleter is the same as dlb_tensor_free.
    OwnedBuffer owned;
    DLManagedTensorVersioned* t = wrap_floats(&owned, {3});
    CHECK(live.delta() == 1);
    t->deleter(t);
    CHECK(owned.released.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("shares outlive the original in any order; release once after the last") {
    Live live;
    int orders = 0;
    std::vector<int> order{0, 1, 2, 3};
    do {
      CAPTURE(order);
      OwnedBuffer owned;
      DLManagedTensorVersioned* original = wrap_floats(&owned, {2, 3});
      DLManagedTensorVersioned* tensors[4] = {original, nullptr, nullptr, nullptr};
      Error err;
      REQUIRE(dlb_tensor_share(original, 0, &tensors[1], err.fresh()) == DLB_OK);
      CHECK(err.text() == kUntouched);
      REQUIRE(dlb_tensor_share(tensors[1], kReadOnly, &tensors[2], err.fresh()) == DLB_OK);
      REQUIRE(dlb_tensor_share(tensors[2], 0, &tensors[3], err.fresh()) == DLB_OK);
      for (DLManagedTensorVersioned* t : tensors) {
        REQUIRE(t != nullptr);
        CHECK(t->dl_tensor.data == original->dl_tensor.data);
        CHECK(shape_of(t) == Dims{2, 3});
        CHECK(strides_of(t) == Dims{3, 1});
        CHECK(dlb_tensor_is_dlbridge(t) == 1);
        CHECK(t->version.major == 1);
        CHECK(t->version.minor == 3);
      }
      // Each share has its own shape and strides arrays.
      CHECK(tensors[1]->dl_tensor.shape != original->dl_tensor.shape);
      CHECK(tensors[1]->dl_tensor.strides != original->dl_tensor.strides);
      CHECK(tensors[1] != original);
      CHECK(live.delta() == 4);
      for (size_t i = 0; i < order.size(); ++i) {
        CHECK(owned.released.get() == 0);
        // The memory is still there for everyone not yet freed.
        for (size_t j = i; j < order.size(); ++j) {
          CHECK(static_cast<const float*>(tensors[order[j]]->dl_tensor.data)[5] == 5.0f);
        }
        dlb_tensor_free(tensors[order[i]]);
      }
      CHECK(owned.released.get() == 1);
      CHECK(live.delta() == 0);
      ++orders;
    } while (std::next_permutation(order.begin(), order.end()));
    CHECK(orders == 24);
  }

  TEST_CASE("a share may add READ_ONLY; the original stays writable; flags but IS_COPIED carry over") {
    Live live;
    OwnedBuffer owned;
    DLManagedTensorVersioned* original = wrap_floats(&owned, {4}, kIsCopied);
    DLManagedTensorVersioned* ro = nullptr;
    Error err;
    REQUIRE(dlb_tensor_share(original, kReadOnly, &ro, err.fresh()) == DLB_OK);
    REQUIRE(ro != nullptr);
    CHECK(ro->flags == kReadOnly);  // an alias is not the sole owner: IS_COPIED stays behind
    CHECK(dlb_tensor_is_read_only(ro) == 1);
    CHECK(original->flags == kIsCopied);
    CHECK(dlb_tensor_is_read_only(original) == 0);
    // A share of the read-only share stays read-only.
    DLManagedTensorVersioned* ro2 = nullptr;
    REQUIRE(dlb_tensor_share(ro, 0, &ro2, err.fresh()) == DLB_OK);
    CHECK(ro2->flags == kReadOnly);
    // The original can still be written (and exported to legacy, which needs writability).
    static_cast<float*>(original->dl_tensor.data)[0] = 42.0f;
    CHECK(static_cast<const float*>(ro->dl_tensor.data)[0] == 42.0f);
    DLManagedTensor* legacy_ro = kPresetLegacyOut;
    CHECK(dlb_tensor_export_legacy(ro, &legacy_ro, err.fresh()) == DLB_ERR_READ_ONLY);
    CHECK(legacy_ro == nullptr);
    // Padded carries over too.
    const Dims shape{3};
    DLManagedTensorVersioned* padded = nullptr;
    REQUIRE(dlb_tensor_allocate(cpu(), dtype(kDLInt, 4), 1, shape.data(), nullptr, kPadded,
                                &padded, err.fresh()) == DLB_OK);
    DLManagedTensorVersioned* padded_share = nullptr;
    REQUIRE(dlb_tensor_share(padded, kReadOnly, &padded_share, err.fresh()) == DLB_OK);
    CHECK(padded_share->flags == (kPadded | kReadOnly));
    CHECK(padded->flags == kPadded);
    dlb_tensor_free(padded);
    dlb_tensor_free(padded_share);
    dlb_tensor_free(ro2);
    dlb_tensor_free(original);
    CHECK(owned.released.get() == 0);
    dlb_tensor_free(ro);
    CHECK(owned.released.get() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("share errors: other add_flags, foreign tensors, NULL arguments") {
    Live live;
    OwnedBuffer owned;
    DLManagedTensorVersioned* t = wrap_floats(&owned, {2});
    for (uint64_t add : {kIsCopied, kPadded, kReadOnly | kIsCopied, uint64_t{1} << 9}) {
      CAPTURE(add);
      DLManagedTensorVersioned* s = kPresetOut;
      Error err;
      CHECK(dlb_tensor_share(t, add, &s, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
      char expected[96];
      std::snprintf(expected, sizeof(expected),
                    "a share can only add the READ_ONLY flag, not 0x%llx",
                    static_cast<unsigned long long>(add));
      CHECK(err.text() == expected);
      CHECK(s == nullptr);
      CHECK(live.delta() == 1);
    }
    Error err;
    DLManagedTensorVersioned* s = kPresetOut;
    CHECK(dlb_tensor_share(nullptr, 0, &s, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "tensor is NULL");
    CHECK(s == nullptr);
    CHECK(dlb_tensor_share(t, 0, nullptr, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "out is NULL");

    // A foreign tensor: refused and NOT consumed.
    Counter deleted;
    ForeignVersioned* f = test::make_foreign(deleted, f32(), {2});
    CHECK(dlb_tensor_is_dlbridge(&f->managed) == 0);
    s = kPresetOut;
    CHECK(dlb_tensor_share(&f->managed, 0, &s, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "tensor was not made by dlbridge; import it with dlb_tensor_import first");
    CHECK(s == nullptr);
    CHECK(deleted.get() == 0);
    // After import the same tensor can be shared.
    DLManagedTensorVersioned* imported = nullptr;
    REQUIRE(dlb_tensor_import(&f->managed, &imported, err.fresh()) == DLB_OK);
    CHECK(dlb_tensor_is_dlbridge(imported) == 1);
    REQUIRE(dlb_tensor_share(imported, 0, &s, err.fresh()) == DLB_OK);
    dlb_tensor_free(imported);
    CHECK(deleted.get() == 0);
    dlb_tensor_free(s);
    CHECK(deleted.get() == 1);

    CHECK(dlb_tensor_is_dlbridge(nullptr) == 0);
    CHECK(owned.released.get() == 0);
    dlb_tensor_free(t);
    CHECK(owned.released.get() == 1);
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
namespace {

// The release of the memory shared by the concurrency test: it must run exactly once, only
// after every share is gone (`outstanding` counts the holders still alive).
struct SharedRelease {
  std::atomic<int64_t> outstanding{0};
  std::atomic<int> calls{0};
  std::atomic<int> premature{0};
  float* memory = nullptr;
  std::mutex mutex;
  std::thread::id thread;
};
void shared_release(void* ctx) {
  auto* r = static_cast<SharedRelease*>(ctx);
  if (r->outstanding.load() != 0) r->premature++;
  std::free(r->memory);
  {
    std::lock_guard<std::mutex> lock(r->mutex);
    r->thread = std::this_thread::get_id();
  }
  r->calls++;
}

}  // namespace

TEST_SUITE("core.lifecycle.concurrency") {
  TEST_CASE("8 threads share one tensor, hand shares to each other and free them concurrently") {
    Live live;
    constexpr int kThreads = 8;
    constexpr int kElements = 64;
    const int rounds = light_mode() ? 4 : 32;
    const int iterations = light_mode() ? 250 : 2500;
    const std::thread::id main_id = std::this_thread::get_id();
    int64_t total_cross = 0;

    for (int round = 0; round < rounds; ++round) {
      CAPTURE(round);
      SharedRelease release;
      release.memory = static_cast<float*>(std::malloc(sizeof(float) * kElements));
      REQUIRE(release.memory != nullptr);
      for (int i = 0; i < kElements; ++i) release.memory[i] = static_cast<float>(i);
      const Dims shape{kElements};
      DLTensor desc{};
      desc.data = release.memory;
      desc.device = cpu();
      desc.ndim = 1;
      desc.dtype = f32();
      desc.shape = const_cast<int64_t*>(shape.data());
      DLManagedTensorVersioned* original = nullptr;
      Error err;
      REQUIRE(dlb_tensor_wrap(&desc, 0, shared_release, &release, &original, err.fresh()) ==
              DLB_OK);
      void* const data = original->dl_tensor.data;
      release.outstanding = 1;

      // Each worker starts with one share made here on the main thread.
      std::vector<DLManagedTensorVersioned*> initial(kThreads);
      for (auto& s : initial) {
        REQUIRE(dlb_tensor_share(original, 0, &s, err.fresh()) == DLB_OK);
        release.outstanding++;
      }
      // Even rounds drop the original before the workers start, so the release must run on a
      // worker; odd rounds drop it while they run.
      const bool early = round % 2 == 0;
      if (early) {
        release.outstanding--;
        dlb_tensor_free(original);
        CHECK(release.calls.load() == 0);
      }

      std::vector<Mailbox> mailboxes(kThreads);
      Barrier done_sending(kThreads);
      std::atomic<int> failures{0};
      std::atomic<int64_t> cross_thread{0};
      std::vector<std::thread> workers;
      for (int w = 0; w < kThreads; ++w) {
        workers.emplace_back([&, w] {
          const std::thread::id self = std::this_thread::get_id();
          DLManagedTensorVersioned* held = initial[static_cast<size_t>(w)];
          uint64_t held_flags = 0;
          auto check = [&](const DLManagedTensorVersioned* t, uint64_t flags) {
            const bool ok = t->dl_tensor.data == data && t->dl_tensor.ndim == 1 &&
                            t->dl_tensor.shape[0] == kElements && t->dl_tensor.strides[0] == 1 &&
                            t->flags == flags &&
                            static_cast<const float*>(t->dl_tensor.data)[kElements - 1] ==
                                static_cast<float>(kElements - 1);
            if (!ok) failures++;
          };
          auto drop = [&](const Handoff& item) {
            if (item.creator != self) cross_thread++;
            check(item.tensor, item.flags);
            release.outstanding--;
            dlb_tensor_free(item.tensor);
          };
          for (int it = 0; it < iterations; ++it) {
            const uint64_t add = (it % 3 == 0) ? kReadOnly : 0;
            DLManagedTensorVersioned* s = nullptr;
            if (dlb_tensor_share(held, add, &s, nullptr) != DLB_OK || s == nullptr) {
              failures++;
              continue;
            }
            release.outstanding++;
            mailboxes[static_cast<size_t>((w + 1) % kThreads)].push(
                Handoff{s, self, held_flags | add});
            Handoff item{};
            if (mailboxes[static_cast<size_t>(w)].pop(&item)) {
              if (it % 8 == 7) {
                // Keep a share made by another thread and drop the one held so far.
                check(held, held_flags);
                release.outstanding--;
                dlb_tensor_free(held);
                if (item.creator != self) cross_thread++;
                held = item.tensor;
                held_flags = item.flags;
              } else {
                drop(item);
              }
            }
          }
          done_sending.arrive_and_wait();
          Handoff item{};
          while (mailboxes[static_cast<size_t>(w)].pop(&item)) drop(item);
          check(held, held_flags);
          release.outstanding--;
          dlb_tensor_free(held);
        });
      }
      if (!early) {
        release.outstanding--;
        dlb_tensor_free(original);
      }
      for (auto& t : workers) t.join();

      CHECK(failures.load() == 0);
      CHECK(release.premature.load() == 0);
      CHECK(release.outstanding.load() == 0);
      CHECK(release.calls.load() == 1);
      CHECK(cross_thread.load() > 0);
      if (early) {
        std::lock_guard<std::mutex> lock(release.mutex);
        CHECK(release.thread != main_id);
      }
      CHECK(live.delta() == 0);
      total_cross += cross_thread.load();
    }
    CHECK(total_cross >= rounds);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("8 threads allocate, wrap, import, export and free concurrently; counts exact") {
    Live live;
    constexpr int kThreads = 8;
    const int iterations = light_mode() ? 1200 : 20000;
    Counter wrap_released;
    Counter versioned_deleted;
    Counter legacy_deleted;
    std::atomic<int> failures{0};
    std::vector<Mailbox> mailboxes(kThreads);
    Barrier done_sending(kThreads);
    std::vector<std::thread> workers;
    for (int w = 0; w < kThreads; ++w) {
      workers.emplace_back([&, w] {
        const std::thread::id self = std::this_thread::get_id();
        const Dims shape{4, 4};
        for (int it = 0; it < iterations; ++it) {
          DLManagedTensorVersioned* a = nullptr;
          if (dlb_tensor_allocate(cpu(), f32(), 2, shape.data(), nullptr, 0, &a, nullptr) !=
                  DLB_OK ||
              a == nullptr) {
            failures++;
            continue;
          }
          static_cast<float*>(a->dl_tensor.data)[15] = static_cast<float>(it);

          float* buffer = static_cast<float*>(std::malloc(sizeof(float) * 16));
          DLTensor desc{};
          desc.data = buffer;
          desc.device = cpu();
          desc.ndim = 2;
          desc.dtype = f32();
          desc.shape = const_cast<int64_t*>(shape.data());
          DLManagedTensorVersioned* wrapped = nullptr;
          if (dlb_tensor_wrap(&desc, 0, test::count_release, &wrap_released, &wrapped, nullptr) !=
              DLB_OK) {
            failures++;
          }
          // The buffer is freed here once the wrapped tensor (and its legacy export) is gone;
          // count_release only counts.

          ForeignVersioned* fv = test::make_foreign(versioned_deleted, f32(), {2, 2});
          DLManagedTensorVersioned* imported = nullptr;
          if (dlb_tensor_import(&fv->managed, &imported, nullptr) != DLB_OK) failures++;

          ForeignLegacy* fl = test::make_foreign_legacy(legacy_deleted, f32(), {3});
          DLManagedTensorVersioned* imported_legacy = nullptr;
          if (dlb_tensor_import_legacy(&fl->managed, &imported_legacy, nullptr) != DLB_OK) {
            failures++;
          }

          DLManagedTensorVersioned* share = nullptr;
          if (dlb_tensor_share(a, kReadOnly, &share, nullptr) != DLB_OK) failures++;

          // wrapped -> legacy -> versioned round trip.
          DLManagedTensor* legacy = nullptr;
          DLManagedTensorVersioned* round_trip = nullptr;
          if (dlb_tensor_export_legacy(wrapped, &legacy, nullptr) != DLB_OK ||
              dlb_tensor_import_legacy(legacy, &round_trip, nullptr) != DLB_OK) {
            failures++;
          }

          dlb_tensor_free(a);
          if (share == nullptr ||
              static_cast<const float*>(share->dl_tensor.data)[15] != static_cast<float>(it)) {
            failures++;
          }
          // Hand the share and the legacy import to the next thread to free.
          mailboxes[static_cast<size_t>((w + 1) % kThreads)].push(Handoff{share, self, kReadOnly});
          mailboxes[static_cast<size_t>((w + 1) % kThreads)].push(
              Handoff{imported_legacy, self, 0});
          dlb_tensor_free(imported);
          dlb_tensor_free(round_trip);
          std::free(buffer);
          Handoff item{};
          for (int k = 0; k < 2 && mailboxes[static_cast<size_t>(w)].pop(&item); ++k) {
            if (item.tensor->flags != item.flags) failures++;
            dlb_tensor_free(item.tensor);
          }
        }
        done_sending.arrive_and_wait();
        Handoff item{};
        while (mailboxes[static_cast<size_t>(w)].pop(&item)) dlb_tensor_free(item.tensor);
      });
    }
    for (auto& t : workers) t.join();
    const int total = kThreads * iterations;
    CHECK(failures.load() == 0);
    CHECK(wrap_released.get() == total);
    CHECK(versioned_deleted.get() == total);
    CHECK(legacy_deleted.get() == total);
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
      uint64_t span = 0;
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
      uint64_t span = 0;
      CHECK(dlb_tensor_byte_span(&desc, 0, &begin, &span, err.fresh()) == DLB_OK);
      CHECK(begin == 0);
      CHECK(span == bytes[i]);
    }
    CHECK(live.delta() == 0);
  }
}
