// Lifecycle of dlbridge tensors through the C API, part two: import (versioned and legacy)
// and export to the legacy struct.
//
// Every error path checks the exact status and message; every ownership path checks the exact
// number of deleter/release calls and that dlb_tensor_live_count() returns to where it started.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

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
#include <vector>

#include "lifecycle.hpp"

namespace {

using test::Counter;
using test::cpu;
using test::device;
using test::Dims;
using test::dims_of;
using test::dtype;
using test::Error;
using test::f32;
using test::ForeignLegacy;
using test::ForeignVersioned;
using test::kIsCopied;
using test::kPadded;
using test::kPresetLegacyOut;
using test::kPresetOut;
using test::kReadOnly;
using test::kUntouched;
using test::Live;
using test::OwnedBuffer;
using test::same_device;
using test::same_dtype;
using test::shape_of;
using test::strides_of;
using test::wrap_floats;

// A versioned deleter that only counts (manager_ctx is a Counter) and reads nothing else.
void counting_versioned_deleter(DLManagedTensorVersioned* self) {
  static_cast<Counter*>(self->manager_ctx)->calls++;
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
  REQUIRE(dlb_tensor_get_strides(&src, static_cast<int32_t>(expected_strides.size()), expected_strides.data(), err.fresh()) == DLB_OK);
  CHECK(strides_of(out) == expected_strides);
  // Every dlbridge tensor carries non-NULL shape and strides.
  CHECK(t.shape != nullptr);
  CHECK(t.strides != nullptr);
  CHECK(out->version.major == 1);
  CHECK(out->version.minor == 3);
}

}  // namespace

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
    REQUIRE(dlb_tensor_get_strides(&f->managed.dl_tensor, static_cast<int32_t>(synthesised.size()), synthesised.data(), err.fresh()) ==
            DLB_OK);
    CHECK(synthesised == Dims{12, 4, 1});
    DLManagedTensorVersioned* t = nullptr;
    REQUIRE(dlb_tensor_import(&f->managed, &t, err.fresh()) == DLB_OK);
    REQUIRE(t != nullptr);
    REQUIRE(t->dl_tensor.strides != nullptr);
    CHECK(strides_of(t) == Dims{12, 4, 1});
    Dims via_api(3);
    REQUIRE(dlb_tensor_get_strides(&t->dl_tensor, static_cast<int32_t>(via_api.size()), via_api.data(), err.fresh()) == DLB_OK);
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
    dlb_tensor_free_legacy(legacy);
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
    dlb_tensor_free_legacy(legacy);
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
    dlb_tensor_free_legacy(legacy2);
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
        dlb_tensor_free_legacy(legacy);
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

  TEST_CASE("dlb_tensor_free_legacy(NULL) and a legacy tensor without deleter are no-ops") {
    Live live;
    dlb_tensor_free_legacy(nullptr);
    DLManagedTensor m{};
    m.deleter = nullptr;
    dlb_tensor_free_legacy(&m);
    Counter deleted;
    ForeignLegacy* f = test::make_foreign_legacy(deleted, f32(), {1});
    dlb_tensor_free_legacy(&f->managed);
    CHECK(deleted.get() == 1);
    CHECK(live.delta() == 0);
  }
}
