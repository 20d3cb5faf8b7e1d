// Suite 'core', area 'backends': the device backend registry, exercised with a plug-in
// backend for kDLExtDev whose "device memory" is host memory behind opaque handles:
// registration, allocation, copies between the host and the plug-in device, and the
// lifetime of backends (unregister, replace) and of device types new to DLPack.
//
// Every error path asserts the exact status and the exact message. Every test case ends with
// dlb_tensor_live_count() back at its starting value and every counter exact.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

namespace {

// ---- small helpers ------------------------------------------------------------------------

using test::format_device;
using test::format_dtype;
using test::fresh_error;
using test::kIsCopied;
using test::kPadded;
using test::kReadOnly;
using test::kUntouched;
using test::msg;
using test::same_device;
using test::same_dtype;

constexpr DLDevice kExt0{kDLExtDev, 0};

// The strides of a DLTensor in elements (compact row-major when strides is NULL), computed
// here rather than with the library so that expectations stay independent of it.
std::vector<int64_t> strides_of(const DLTensor& t) {
  std::vector<int64_t> strides(static_cast<size_t>(t.ndim), 1);
  if (t.strides != nullptr) {
    for (int32_t i = 0; i < t.ndim; ++i) strides[static_cast<size_t>(i)] = t.strides[i];
    return strides;
  }
  int64_t stride = 1;
  for (int32_t i = t.ndim - 1; i >= 0; --i) {
    strides[static_cast<size_t>(i)] = stride;
    stride *= t.shape[i] > 1 ? t.shape[i] : 1;
  }
  return strides;
}

std::vector<int64_t> shape_of(const DLTensor& t) {
  return std::vector<int64_t>(t.shape, t.shape + t.ndim);
}

// Byte offsets from `data` of every element, in row-major logical order (whole-byte dtypes).
std::vector<int64_t> element_offsets(const DLTensor& t) {
  const int64_t element_size = (static_cast<int64_t>(t.dtype.bits) * t.dtype.lanes + 7) / 8;
  const std::vector<int64_t> strides = strides_of(t);
  int64_t count = 1;
  for (int32_t i = 0; i < t.ndim; ++i) count *= t.shape[i];
  std::vector<int64_t> offsets;
  std::vector<int64_t> index(static_cast<size_t>(t.ndim), 0);
  for (int64_t n = 0; n < count; ++n) {
    int64_t offset = static_cast<int64_t>(t.byte_offset);
    for (size_t i = 0; i < index.size(); ++i) offset += index[i] * strides[i] * element_size;
    offsets.push_back(offset);
    for (int32_t k = t.ndim - 1; k >= 0; --k) {
      const size_t K = static_cast<size_t>(k);
      if (++index[K] < t.shape[k]) break;
      index[K] = 0;
    }
  }
  return offsets;
}

// Reads the int32 elements of a host tensor in logical order.
std::vector<int32_t> read_host_i32(const DLTensor& t) {
  std::vector<int32_t> values;
  for (int64_t offset : element_offsets(t)) {
    int32_t v;
    std::memcpy(&v, static_cast<const char*>(t.data) + offset, sizeof(v));
    values.push_back(v);
  }
  return values;
}

// Writes int32 elements into a host tensor in logical order.
void write_host_i32(const DLTensor& t, const std::vector<int32_t>& values) {
  const std::vector<int64_t> offsets = element_offsets(t);
  REQUIRE(offsets.size() == values.size());
  for (size_t i = 0; i < offsets.size(); ++i) {
    std::memcpy(static_cast<char*>(t.data) + offsets[i], &values[i], sizeof(int32_t));
  }
}

std::vector<int32_t> iota_i32(size_t n, int32_t first) {
  std::vector<int32_t> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = first + static_cast<int32_t>(i) * 7;
  return values;
}

const DLDataType kI32 = test::dtype(kDLInt, 32);

// A compact CPU int32 tensor filled with iota_i32(count, first).
DLManagedTensorVersioned* cpu_i32(std::vector<int64_t> shape, int32_t first) {
  DLManagedTensorVersioned* t = nullptr;
  dlb_error error = fresh_error();
  const int status = dlb_tensor_allocate(test::cpu(), kI32, static_cast<int32_t>(shape.size()),
                                         shape.empty() ? nullptr : shape.data(), nullptr, 0, &t, &error);
  INFO(msg(error));
  REQUIRE(status == DLB_OK);
  REQUIRE(t != nullptr);
  size_t count = 1;
  for (int64_t e : shape) count *= static_cast<size_t>(e);
  write_host_i32(t->dl_tensor, iota_i32(count, first));
  return t;
}

// Transposes a row-major rows x cols matrix of values.
std::vector<int32_t> transposed(const std::vector<int32_t>& v, size_t rows, size_t cols) {
  std::vector<int32_t> out(v.size());
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < cols; ++j) out[j * rows + i] = v[i * cols + j];
  }
  return out;
}

dlb_slice sl(int64_t start, int64_t stop, int64_t step) { return dlb_slice{start, stop, step}; }

// ---- the fake plug-in device --------------------------------------------------------------

int fake_fail(dlb_error* error, int status, const std::string& text) {
  if (error != nullptr) std::snprintf(error->message, sizeof(error->message), "%s", text.c_str());
  return status;
}

// A device whose memory is host memory reachable only through opaque handles. dlbridge must
// never dereference or offset a handle: every access has to come back here as handle + byte
// offset, and every access is bounds-checked against the allocation it names. Anything the
// backend contract forbids (unknown handle, out-of-range access, wrong device, a double free)
// is counted in `violations` and fails the call.
struct FakeDevice {
  enum class CopyTensor { kAbsent, kUnsupported, kHandles, kFails };

  struct Allocation {
    std::vector<unsigned char> bytes;
    DLDevice device;
  };

  int32_t type = kDLExtDev;
  CopyTensor copy_tensor = CopyTensor::kAbsent;
  bool fail_allocate = false;
  bool fail_copy_bytes = false;
  bool check_imports = false;        // check_memory refuses handles it does not know
  void* expected_stream = nullptr;   // the stream every copy must be given
  void (*on_destroy)(FakeDevice* self) = nullptr;  // runs after destroy is counted

  std::mutex mutex;
  std::map<uintptr_t, Allocation> live;
  uint64_t next_handle = 1;

  int allocate_calls = 0;
  int free_calls = 0;
  int copy_bytes_calls = 0;
  int copy_tensor_calls = 0;
  int destroy_calls = 0;
  int check_memory_calls = 0;
  std::vector<void*> synchronized_streams;  // one entry per synchronize call
  int violations = 0;
  std::vector<uint64_t> allocated_sizes;
  std::vector<DLDevice> allocated_devices;
  std::vector<void*> allocated_handles;
  std::vector<void*> freed_handles;
  std::vector<uint64_t> device_offsets;  // the device-side byte offset of every copy_bytes call

  explicit FakeDevice(int32_t device_type = kDLExtDev, CopyTensor mode = CopyTensor::kAbsent)
      : type(device_type), copy_tensor(mode) {}

  dlb_backend backend() {
    dlb_backend b;
    std::memset(&b, 0, sizeof(b));
    b.struct_size = sizeof(dlb_backend);
    b.device_type = type;
    b.name = "fake";
    b.ctx = this;
    b.allocate = &FakeDevice::allocate_cb;
    b.free = &FakeDevice::free_cb;
    b.copy_bytes = &FakeDevice::copy_bytes_cb;
    b.copy_tensor = copy_tensor == CopyTensor::kAbsent ? nullptr : &FakeDevice::copy_tensor_cb;
    b.synchronize = &FakeDevice::synchronize_cb;
    b.destroy = &FakeDevice::destroy_cb;
    b.check_memory = &FakeDevice::check_memory_cb;
    return b;
  }

  void register_self() {
    const dlb_backend b = backend();
    dlb_error error = fresh_error();
    const int status = dlb_backend_register(&b, &error);
    INFO(msg(error));
    REQUIRE(status == DLB_OK);
    CHECK(msg(error) == kUntouched);
  }

  void unregister_self() {
    dlb_error error = fresh_error();
    const int status = dlb_backend_unregister(type, &error);
    INFO(msg(error));
    CHECK(status == DLB_OK);
  }

  // Device memory made outside dlbridge (a foreign producer's buffer).
  void* create(uint64_t nbytes, DLDevice device) {
    std::lock_guard<std::mutex> lock(mutex);
    return new_handle(nbytes, device);
  }
  void destroy_handle(void* handle) {
    std::lock_guard<std::mutex> lock(mutex);
    if (live.erase(reinterpret_cast<uintptr_t>(handle)) != 1) ++violations;
  }
  bool is_live(const void* handle) {
    std::lock_guard<std::mutex> lock(mutex);
    return live.count(reinterpret_cast<uintptr_t>(handle)) == 1;
  }
  size_t live_count() {
    std::lock_guard<std::mutex> lock(mutex);
    return live.size();
  }
  std::vector<unsigned char> bytes(const void* handle) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(reinterpret_cast<uintptr_t>(handle));
    if (it == live.end()) return {};
    return it->second.bytes;
  }
  void write(void* handle, uint64_t offset, const void* data, size_t nbytes) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(reinterpret_cast<uintptr_t>(handle));
    REQUIRE(it != live.end());
    REQUIRE(offset + nbytes <= it->second.bytes.size());
    std::memcpy(it->second.bytes.data() + offset, data, nbytes);
  }
  // The int32 elements of a tensor on this device, read through its handle and byte offsets.
  std::vector<int32_t> read_i32(const DLTensor& t) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(reinterpret_cast<uintptr_t>(t.data));
    REQUIRE(it != live.end());
    std::vector<int32_t> values;
    for (int64_t offset : element_offsets(t)) {
      REQUIRE(offset >= 0);
      REQUIRE(static_cast<uint64_t>(offset) + 4 <= it->second.bytes.size());
      int32_t v;
      std::memcpy(&v, it->second.bytes.data() + offset, sizeof(v));
      values.push_back(v);
    }
    return values;
  }

  // -- callbacks --

  void* new_handle(uint64_t nbytes, DLDevice device) {
    // Handles look like addresses but point nowhere: dereferencing one would crash.
    const uintptr_t handle = static_cast<uintptr_t>(0x7e5700000000ull + (next_handle++ << 24));
    live[handle] = Allocation{std::vector<unsigned char>(static_cast<size_t>(nbytes), 0xCD), device};
    return reinterpret_cast<void*>(handle);
  }

  // Host address of [offset, offset + nbytes) on `side`, or NULL (a violation) when the access
  // is not inside one live allocation of this device.
  unsigned char* resolve(DLDevice device, const void* data, int64_t offset, uint64_t nbytes) {
    if (device.device_type == kDLCPU) {
      return static_cast<unsigned char*>(const_cast<void*>(data)) + offset;
    }
    if (device.device_type != type) return nullptr;
    auto it = live.find(reinterpret_cast<uintptr_t>(data));
    if (it == live.end() || !same_device(it->second.device, device)) return nullptr;
    if (offset < 0 || static_cast<uint64_t>(offset) + nbytes > it->second.bytes.size()) return nullptr;
    return it->second.bytes.data() + offset;
  }

  static int allocate_cb(void* ctx, DLDevice device, uint64_t nbytes, void** out_data,
                         dlb_error* error) {
    auto* f = static_cast<FakeDevice*>(ctx);
    std::lock_guard<std::mutex> lock(f->mutex);
    ++f->allocate_calls;
    f->allocated_sizes.push_back(nbytes);
    f->allocated_devices.push_back(device);
    if (device.device_type != f->type || out_data == nullptr) ++f->violations;
    if (f->fail_allocate) {
      return fake_fail(error, DLB_ERR_DEVICE,
                       "fake device cannot allocate " + std::to_string(nbytes) + " bytes");
    }
    *out_data = f->new_handle(nbytes, device);
    f->allocated_handles.push_back(*out_data);
    return DLB_OK;
  }

  static void free_cb(void* ctx, DLDevice device, void* data) {
    auto* f = static_cast<FakeDevice*>(ctx);
    std::lock_guard<std::mutex> lock(f->mutex);
    ++f->free_calls;
    f->freed_handles.push_back(data);
    auto it = f->live.find(reinterpret_cast<uintptr_t>(data));
    if (it == f->live.end() || !same_device(it->second.device, device)) {
      ++f->violations;
      return;
    }
    f->live.erase(it);
  }

  static int copy_bytes_cb(void* ctx, DLDevice dst_device, void* dst, uint64_t dst_offset,
                           DLDevice src_device, const void* src, uint64_t src_offset,
                           uint64_t nbytes, void* stream, dlb_error* error) {
    auto* f = static_cast<FakeDevice*>(ctx);
    std::lock_guard<std::mutex> lock(f->mutex);
    ++f->copy_bytes_calls;
    if (dst_device.device_type == f->type) f->device_offsets.push_back(dst_offset);
    if (src_device.device_type == f->type) f->device_offsets.push_back(src_offset);
    if (f->fail_copy_bytes) return fake_fail(error, DLB_ERR_DEVICE, "fake copy_bytes failed");
    const bool dst_here = dst_device.device_type == f->type;
    const bool src_here = src_device.device_type == f->type;
    unsigned char* d = f->resolve(dst_device, dst, static_cast<int64_t>(dst_offset), nbytes);
    const unsigned char* s = f->resolve(src_device, src, static_cast<int64_t>(src_offset), nbytes);
    if (stream != f->expected_stream || (!dst_here && !src_here) || d == nullptr || s == nullptr) {
      ++f->violations;
      return fake_fail(error, DLB_ERR_DEVICE, "fake copy_bytes: bad access");
    }
    if (nbytes > 0) std::memmove(d, s, static_cast<size_t>(nbytes));
    return DLB_OK;
  }

  static int copy_tensor_cb(void* ctx, const DLTensor* dst, uint64_t dst_flags, const DLTensor* src,
                            uint64_t src_flags, void* stream, dlb_error* error) {
    auto* f = static_cast<FakeDevice*>(ctx);
    std::lock_guard<std::mutex> lock(f->mutex);
    ++f->copy_tensor_calls;
    (void)dst_flags;
    (void)src_flags;
    const bool dst_ok = dst->device.device_type == f->type || same_device(dst->device, test::cpu());
    const bool src_ok = src->device.device_type == f->type || same_device(src->device, test::cpu());
    if (stream != f->expected_stream || !dst_ok || !src_ok || !same_dtype(dst->dtype, src->dtype) ||
        dst->ndim != src->ndim) {
      ++f->violations;
      return fake_fail(error, DLB_ERR_DEVICE, "fake copy_tensor: bad arguments");
    }
    switch (f->copy_tensor) {
      case CopyTensor::kAbsent:
        ++f->violations;  // not registered: must never be called
        return fake_fail(error, DLB_ERR_DEVICE, "fake copy_tensor: not registered");
      case CopyTensor::kUnsupported:
        return fake_fail(error, DLB_ERR_UNSUPPORTED, "fake copy_tensor declines");
      case CopyTensor::kFails:
        return fake_fail(error, DLB_ERR_DEVICE, "fake copy_tensor failed");
      case CopyTensor::kHandles:
        break;
    }
    if (src->dtype.bits < 8) {
      return fake_fail(error, DLB_ERR_UNSUPPORTED, "fake copy_tensor: no sub-byte support");
    }
    const uint64_t size = (static_cast<uint64_t>(src->dtype.bits) * src->dtype.lanes + 7) / 8;
    const std::vector<int64_t> so = element_offsets(*src), dof = element_offsets(*dst);
    if (so.size() != dof.size()) {
      ++f->violations;
      return fake_fail(error, DLB_ERR_DEVICE, "fake copy_tensor: shape mismatch");
    }
    // Gather then scatter, so that overlapping memory behaves as a copy through a temporary.
    std::vector<unsigned char> staged(so.size() * size);
    for (size_t i = 0; i < so.size(); ++i) {
      const unsigned char* s = f->resolve(src->device, src->data, so[i], size);
      if (s == nullptr) {
        ++f->violations;
        return fake_fail(error, DLB_ERR_DEVICE, "fake copy_tensor: bad source access");
      }
      std::memcpy(staged.data() + i * size, s, size);
    }
    for (size_t i = 0; i < dof.size(); ++i) {
      unsigned char* d = f->resolve(dst->device, dst->data, dof[i], size);
      if (d == nullptr) {
        ++f->violations;
        return fake_fail(error, DLB_ERR_DEVICE, "fake copy_tensor: bad destination access");
      }
      std::memcpy(d, staged.data() + i * size, size);
    }
    return DLB_OK;
  }

  static int synchronize_cb(void* ctx, DLDevice device, void* stream, dlb_error*) {
    auto* f = static_cast<FakeDevice*>(ctx);
    std::lock_guard<std::mutex> lock(f->mutex);
    if (device.device_type != f->type) ++f->violations;
    f->synchronized_streams.push_back(stream);
    return DLB_OK;
  }

  static int check_memory_cb(void* ctx, const DLTensor* tensor, uint64_t, dlb_error* error) {
    auto* f = static_cast<FakeDevice*>(ctx);
    std::lock_guard<std::mutex> lock(f->mutex);
    ++f->check_memory_calls;
    if (tensor->device.device_type != f->type) ++f->violations;
    if (f->check_imports && f->live.count(reinterpret_cast<uintptr_t>(tensor->data)) == 0) {
      return fake_fail(error, DLB_ERR_INVALID_ARGUMENT, "fake check_memory: not a live ext_dev buffer");
    }
    return DLB_OK;
  }

  static void destroy_cb(void* ctx) {
    auto* f = static_cast<FakeDevice*>(ctx);
    {
      std::lock_guard<std::mutex> lock(f->mutex);
      ++f->destroy_calls;
    }
    if (f->on_destroy != nullptr) f->on_destroy(f);  // may delete f
  }
};

// Checks that the fake saw a clean life: everything freed, nothing forbidden, destroyed once.
void check_clean(FakeDevice& f) {
  CHECK(f.live_count() == 0);
  CHECK(f.violations == 0);
  CHECK(f.free_calls == f.allocate_calls - static_cast<int>(f.fail_allocate ? f.allocate_calls : 0));
  CHECK(f.destroy_calls == 1);
}

// A non-NULL value for output pointers, to see them set to NULL on error.
DLManagedTensorVersioned* garbage_out() {
  static DLManagedTensorVersioned never_used{};
  return &never_used;
}

// A non-NULL device "handle" that no backend knows (never dereferenced).
void* fv_dummy_handle() { return reinterpret_cast<void*>(static_cast<uintptr_t>(0x7e5600000000ull)); }

// dlb_tensor_copy with the status checked; returns the copy.
DLManagedTensorVersioned* copy_to(const DLManagedTensorVersioned* src, DLDevice device) {
  DLManagedTensorVersioned* out = nullptr;
  dlb_error error = fresh_error();
  const int status = dlb_tensor_copy(src, device, &out, &error);
  INFO(msg(error));
  REQUIRE(status == DLB_OK);
  REQUIRE(out != nullptr);
  // (Whether `error` stays untouched is checked in its own test case: see "a declined
  // copy_tensor leaves the caller's error report untouched when the copy succeeds".)
  CHECK(same_device(out->dl_tensor.device, device));
  CHECK((out->flags & kIsCopied) != 0);
  CHECK(dlb_tensor_is_dlbridge(out) == 1);
  return out;
}

DLManagedTensorVersioned* transpose_of(DLManagedTensorVersioned* src) {
  DLManagedTensorVersioned* out = nullptr;
  dlb_error error = fresh_error();
  const int status = dlb_tensor_transpose(src, &out, &error);
  INFO(msg(error));
  REQUIRE(status == DLB_OK);
  return out;
}

DLManagedTensorVersioned* slice_of(DLManagedTensorVersioned* src, std::vector<dlb_slice> slices) {
  DLManagedTensorVersioned* out = nullptr;
  dlb_error error = fresh_error();
  const int status = dlb_tensor_slice(src, static_cast<int32_t>(slices.size()), slices.data(), &out, &error);
  INFO(msg(error));
  REQUIRE(status == DLB_OK);
  return out;
}

DLManagedTensorVersioned* select_of(DLManagedTensorVersioned* src, int32_t axis, int64_t index) {
  DLManagedTensorVersioned* out = nullptr;
  dlb_error error = fresh_error();
  const int status = dlb_tensor_select(src, axis, index, &out, &error);
  INFO(msg(error));
  REQUIRE(status == DLB_OK);
  return out;
}

DLManagedTensorVersioned* allocate_on(DLDevice device, DLDataType dtype, std::vector<int64_t> shape,
                                      const int64_t* strides = nullptr, uint64_t flags = 0) {
  DLManagedTensorVersioned* out = nullptr;
  dlb_error error = fresh_error();
  const int status = dlb_tensor_allocate(device, dtype, static_cast<int32_t>(shape.size()),
                                         shape.empty() ? nullptr : shape.data(), strides, flags,
                                         &out, &error);
  INFO(msg(error));
  REQUIRE(status == DLB_OK);
  REQUIRE(out != nullptr);
  return out;
}

}  // namespace

// ============================================================================================
// Device backends: registration
// ============================================================================================

namespace {

void check_register_error(const dlb_backend* backend, const std::string& expected_message) {
  dlb_error error = fresh_error();
  CHECK(dlb_backend_register(backend, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == expected_message);
  CHECK(dlb_backend_register(backend, nullptr) == DLB_ERR_INVALID_ARGUMENT);
}

void check_unregister_error(int32_t type, const std::string& expected_message) {
  CAPTURE(type);
  dlb_error error = fresh_error();
  CHECK(dlb_backend_unregister(type, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == expected_message);
  CHECK(dlb_backend_unregister(type, nullptr) == DLB_ERR_INVALID_ARGUMENT);
}

int g_unexpected_calls = 0;
int unexpected_copy_tensor(void*, const DLTensor*, uint64_t, const DLTensor*, uint64_t, void*, dlb_error*) {
  ++g_unexpected_calls;
  return DLB_ERR_DEVICE;
}
void unexpected_destroy(void*) { ++g_unexpected_calls; }

}  // namespace

TEST_CASE("dlb_backend_register refuses malformed backends with exact messages") {
  const int64_t live0 = dlb_tensor_live_count();
  FakeDevice f;
  check_register_error(nullptr, "backend is NULL");

  const size_t minimum = offsetof(dlb_backend, copy_bytes) + sizeof(void (*)());
  const std::string minimum_text = std::to_string(minimum);
  dlb_backend b = f.backend();
  b.struct_size = 0;
  check_register_error(&b, "backend struct_size 0 is smaller than the " + minimum_text +
                               " bytes every version has");
  b.struct_size = offsetof(dlb_backend, copy_bytes);
  check_register_error(&b, "backend struct_size " + std::to_string(offsetof(dlb_backend, copy_bytes)) +
                               " is smaller than the " + minimum_text + " bytes every version has");
  b.struct_size = minimum - 1;
  check_register_error(&b, "backend struct_size " + std::to_string(minimum - 1) + " is smaller than the " +
                               minimum_text + " bytes every version has");

  b = f.backend();
  b.device_type = kDLCPU;
  check_register_error(&b, "the cpu backend is built in and cannot be replaced");
  for (int32_t type : {0, 256, -1, INT32_MIN, INT32_MAX}) {
    CAPTURE(type);
    b.device_type = type;
    check_register_error(&b, "device type " + std::to_string(type) +
                                 " is outside the range a backend can serve (1 to 255)");
  }

  b = f.backend();
  b.allocate = nullptr;
  check_register_error(&b, "backend for ext_dev has no allocate callback");
  b = f.backend();
  b.free = nullptr;
  check_register_error(&b, "backend for ext_dev has no free callback");
  b = f.backend();
  b.copy_bytes = nullptr;
  check_register_error(&b, "backend for ext_dev has no copy_bytes callback");
  b = f.backend();
  b.device_type = 40;
  b.free = nullptr;
  check_register_error(&b, "backend for device type 40 has no free callback");
  b = f.backend();
  b.device_type = kDLOpenCL;
  b.allocate = nullptr;
  b.copy_bytes = nullptr;
  check_register_error(&b, "backend for opencl has no allocate callback");

  // Nothing was registered, and the caller still owns ctx: destroy never ran.
  CHECK(dlb_backend_is_registered(kDLExtDev) == 0);
  CHECK(dlb_backend_is_registered(40) == 0);
  CHECK(dlb_backend_is_registered(kDLOpenCL) == 0);
  CHECK(f.destroy_calls == 0);
  CHECK(f.allocate_calls == 0);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("dlb_backend_unregister refuses the cpu and types without a backend") {
  check_unregister_error(kDLCPU, "the cpu backend is built in and cannot be unregistered");
  check_unregister_error(kDLExtDev, "no backend is registered for ext_dev");
  check_unregister_error(kDLCUDA, "no backend is registered for cuda");
  check_unregister_error(kDLOpenCL, "no backend is registered for opencl");
  check_unregister_error(40, "no backend is registered for device type 40");
  check_unregister_error(0, "no backend is registered for device type 0");
  check_unregister_error(256, "no backend is registered for device type 256");
  check_unregister_error(-1, "no backend is registered for device type -1");

  // Unregistering twice: the second time there is nothing left.
  FakeDevice f;
  f.register_self();
  f.unregister_self();
  CHECK(f.destroy_calls == 1);
  check_unregister_error(kDLExtDev, "no backend is registered for ext_dev");
  CHECK(f.destroy_calls == 1);
}

TEST_CASE("dlb_backend_is_registered") {
  CHECK(dlb_backend_is_registered(kDLCPU) == 1);  // always: built in
  for (int32_t type : {0, -1, 256, INT32_MIN, INT32_MAX, 40, int32_t{kDLExtDev}, int32_t{kDLCUDA}}) {
    CAPTURE(type);
    CHECK(dlb_backend_is_registered(type) == 0);
  }
  FakeDevice f;
  f.register_self();
  CHECK(dlb_backend_is_registered(kDLExtDev) == 1);
  CHECK(dlb_backend_is_registered(kDLCPU) == 1);
  CHECK(dlb_backend_is_registered(kDLCUDA) == 0);
  f.unregister_self();
  CHECK(dlb_backend_is_registered(kDLExtDev) == 0);
  CHECK(f.destroy_calls == 1);

  // Every type from 1 to DLB_MAX_DEVICE_TYPE (but the cpu) can get a backend.
  for (int32_t type : {2, 5, 6, 21, 254, DLB_MAX_DEVICE_TYPE}) {
    CAPTURE(type);
    FakeDevice g(type);
    g.register_self();
    CHECK(dlb_backend_is_registered(type) == 1);
    g.unregister_self();
    CHECK(dlb_backend_is_registered(type) == 0);
    CHECK(g.destroy_calls == 1);
  }
}

TEST_CASE("the registered struct is a copy; members past struct_size are ignored") {
  const int64_t live0 = dlb_tensor_live_count();
  SUBCASE("a caller's struct changed after registration has no effect") {
    FakeDevice f;
    dlb_backend b = f.backend();
    REQUIRE(dlb_backend_register(&b, nullptr) == DLB_OK);
    std::memset(&b, 0, sizeof(b));  // the library must not read it any more
    DLManagedTensorVersioned* t = allocate_on(kExt0, kI32, {2});
    CHECK(f.allocate_calls == 1);
    dlb_tensor_free(t);
    f.unregister_self();
    check_clean(f);
  }
  SUBCASE("an older, smaller struct: optional members it lacks stay NULL") {
    FakeDevice f(kDLExtDev, FakeDevice::CopyTensor::kHandles);
    dlb_backend b = f.backend();
    b.struct_size = offsetof(dlb_backend, copy_tensor);
    b.copy_tensor = &unexpected_copy_tensor;  // past struct_size: never to be called
    b.destroy = &unexpected_destroy;          // likewise
    g_unexpected_calls = 0;
    dlb_error error = fresh_error();
    REQUIRE(dlb_backend_register(&b, &error) == DLB_OK);
    DLManagedTensorVersioned* src = cpu_i32({3}, 5);
    DLManagedTensorVersioned* dev = copy_to(src, kExt0);
    DLManagedTensorVersioned* back = copy_to(dev, test::cpu());
    CHECK(read_host_i32(back->dl_tensor) == iota_i32(3, 5));
    CHECK(f.copy_bytes_calls > 0);
    CHECK(f.copy_tensor_calls == 0);
    dlb_tensor_free(back);
    dlb_tensor_free(dev);
    dlb_tensor_free(src);
    f.unregister_self();
    CHECK(g_unexpected_calls == 0);
    CHECK(f.destroy_calls == 0);  // no destroy member
    CHECK(f.live_count() == 0);
    CHECK(f.free_calls == 1);
    CHECK(f.violations == 0);
  }
  SUBCASE("a newer, larger struct is accepted") {
    FakeDevice f;
    struct FutureBackend {
      dlb_backend base;
      void* appended[4];
    } future;
    std::memset(&future, 0, sizeof(future));
    future.base = f.backend();
    future.base.struct_size = sizeof(FutureBackend);
    dlb_error error = fresh_error();
    REQUIRE(dlb_backend_register(&future.base, &error) == DLB_OK);
    DLManagedTensorVersioned* t = allocate_on(kExt0, kI32, {2});
    dlb_tensor_free(t);
    f.unregister_self();
    check_clean(f);
  }
  CHECK(dlb_tensor_live_count() == live0);
}

namespace {
int g_heap_fakes_destroyed = 0;
}  // namespace

TEST_CASE("the backend owns ctx after registration and releases it in destroy") {
  const int64_t live0 = dlb_tensor_live_count();
  g_heap_fakes_destroyed = 0;
  // A heap context that only destroy may delete (ASan and valgrind see a leak or a double free).
  auto* f = new FakeDevice();
  f->on_destroy = [](FakeDevice* self) {
    ++g_heap_fakes_destroyed;
    delete self;
  };
  const dlb_backend b = f->backend();
  REQUIRE(dlb_backend_register(&b, nullptr) == DLB_OK);
  DLManagedTensorVersioned* t = allocate_on(kExt0, kI32, {4});
  CHECK(f->allocate_calls == 1);
  CHECK(dlb_backend_unregister(kDLExtDev, nullptr) == DLB_OK);
  CHECK(g_heap_fakes_destroyed == 0);  // t still uses it
  CHECK(f->free_calls == 0);
  CHECK(f->violations == 0);
  dlb_tensor_free(t);  // the last tensor: free, then destroy, which deletes the context
  CHECK(g_heap_fakes_destroyed == 1);
  CHECK(dlb_tensor_live_count() == live0);
}

// ============================================================================================
// Device backends: allocation
// ============================================================================================

TEST_CASE("dlb_tensor_allocate on ext_dev calls the backend with the exact byte count") {
  const int64_t live0 = dlb_tensor_live_count();
  FakeDevice f;
  f.register_self();

  struct Row {
    DLDataType dtype;
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;  // empty: NULL
    uint64_t flags;
    uint64_t nbytes;
    uint64_t byte_offset;
  };
  const Row rows[] = {
      {kI32, {3, 4}, {}, 0, 48, 0},
      {test::dtype(kDLFloat, 64), {}, {}, 0, 8, 0},  // a scalar
      {kI32, {0, 3}, {}, 0, 0, 0},                     // empty: possibly 0 bytes
      {test::dtype(kDLInt, 4), {5}, {}, 0, 3, 0},      // packed: ceil(20 / 8)
      {test::dtype(kDLInt, 4), {5}, {}, kPadded, 5, 0},
      {test::dtype(kDLFloat4_e2m1fn, 4), {3}, {}, 0, 2, 0},
      {test::dtype(kDLFloat6_e2m3fn, 6), {5}, {}, 0, 4, 0},
      {test::dtype(kDLInt, 4, 3), {3}, {}, 0, 5, 0},   // 36 bits
      {test::dtype(kDLInt, 4, 3), {3}, {}, kPadded, 6, 0},
      {test::dtype(kDLFloat, 32, 4), {2}, {}, kReadOnly, 32, 0},
      {kI32, {4}, {-1}, 0, 16, 12},                    // negative stride: first element last
      {kI32, {3}, {2}, 0, 20, 0},                      // gaps are covered
      {kI32, {2, 3}, {1, 2}, 0, 24, 0},                // Fortran order
      {kI32, {4}, {0}, 0, 4, 0},                       // broadcast
      {kI32, {2, 3}, {-3, -1}, 0, 24, 20},
      {test::dtype(kDLInt, 4), {5}, {-1}, 0, 3, 2},    // packed, negative stride
  };
  int expected_calls = 0;
  for (const Row& row : rows) {
    CAPTURE(format_dtype(row.dtype));
    CAPTURE(row.shape.size());
    CAPTURE(row.nbytes);
    DLManagedTensorVersioned* t =
        allocate_on(kExt0, row.dtype, row.shape, row.strides.empty() ? nullptr : row.strides.data(), row.flags);
    ++expected_calls;
    REQUIRE(f.allocate_calls == expected_calls);
    CHECK(f.allocated_sizes.back() == row.nbytes);
    CHECK(same_device(f.allocated_devices.back(), kExt0));
    // The tensor carries the handle the backend returned, untouched, plus a byte offset.
    CHECK((t->dl_tensor.data == f.allocated_handles.back()));
    CHECK(t->dl_tensor.byte_offset == row.byte_offset);
    CHECK(same_device(t->dl_tensor.device, kExt0));
    CHECK(same_dtype(t->dl_tensor.dtype, row.dtype));
    CHECK(t->flags == row.flags);
    CHECK(t->version.major == 1u);
    CHECK(t->version.minor == 3u);
    CHECK(dlb_tensor_is_dlbridge(t) == 1);
    CHECK(dlb_tensor_is_host_readable(&t->dl_tensor) == 0);
    CHECK(dlb_tensor_validate(&t->dl_tensor, t->flags, nullptr) == DLB_OK);
    CHECK(f.free_calls == expected_calls - 1);
    dlb_tensor_free(t);
    CHECK(f.free_calls == expected_calls);
    CHECK((f.freed_handles.back() == f.allocated_handles.back()));
  }

  // Other device ids reach the backend as they are.
  DLManagedTensorVersioned* t3 = allocate_on(DLDevice{kDLExtDev, 3}, kI32, {2});
  CHECK(same_device(f.allocated_devices.back(), DLDevice{kDLExtDev, 3}));
  CHECK(same_device(t3->dl_tensor.device, DLDevice{kDLExtDev, 3}));
  dlb_tensor_free(t3);

  // Refused before reaching the backend.
  const int calls = f.allocate_calls;
  DLManagedTensorVersioned* out = garbage_out();
  dlb_error error = fresh_error();
  const int64_t shape[] = {2};
  CHECK(dlb_tensor_allocate(DLDevice{kDLExtDev, -1}, kI32, 1, shape, nullptr, 0, &out, &error) ==
        DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "device_id -1 is negative");
  CHECK((out == nullptr));
  CHECK(f.allocate_calls == calls);

  f.unregister_self();
  check_clean(f);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("dlb_tensor_allocate without a backend: DLB_ERR_UNSUPPORTED") {
  const int64_t live0 = dlb_tensor_live_count();
  const int64_t shape[] = {2, 2};
  struct Row {
    DLDevice device;
    int status;
    const char* message;
  };
  const Row rows[] = {
      {DLDevice{kDLExtDev, 0}, DLB_ERR_UNSUPPORTED, "no backend is registered for ext_dev"},
      {DLDevice{kDLVulkan, 0}, DLB_ERR_UNSUPPORTED, "no backend is registered for vulkan"},
      {DLDevice{kDLCUDA, 1}, DLB_ERR_UNSUPPORTED, "no backend is registered for cuda"},
      {DLDevice{kDLOpenCL, 0}, DLB_ERR_UNSUPPORTED, "no backend is registered for opencl"},
      {DLDevice{kDLCUDAHost, 0}, DLB_ERR_UNSUPPORTED, "no backend is registered for cuda_host"},
      {DLDevice{static_cast<DLDeviceType>(40), 0}, DLB_ERR_UNSUPPORTED,
       "device type 40 is not a known DLPack device type"},
      {DLDevice{static_cast<DLDeviceType>(5), 0}, DLB_ERR_UNSUPPORTED,
       "device type 5 is not a known DLPack device type"},
      {DLDevice{static_cast<DLDeviceType>(0), 0}, DLB_ERR_UNSUPPORTED,
       "device type 0 is not a known DLPack device type"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.message);
    DLManagedTensorVersioned* out = garbage_out();
    dlb_error error = fresh_error();
    CHECK(dlb_tensor_allocate(row.device, kI32, 2, shape, nullptr, 0, &out, &error) == row.status);
    CHECK(msg(error) == row.message);
    CHECK((out == nullptr));
  }
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("a failing backend allocate propagates its status and message") {
  const int64_t live0 = dlb_tensor_live_count();
  FakeDevice f;
  f.fail_allocate = true;
  f.register_self();

  const int64_t shape[] = {3, 4};
  DLManagedTensorVersioned* out = garbage_out();
  dlb_error error = fresh_error();
  CHECK(dlb_tensor_allocate(kExt0, kI32, 2, shape, nullptr, 0, &out, &error) == DLB_ERR_DEVICE);
  CHECK(msg(error) == "fake device cannot allocate 48 bytes");
  CHECK((out == nullptr));
  CHECK(dlb_tensor_allocate(kExt0, kI32, 2, shape, nullptr, 0, &out, nullptr) == DLB_ERR_DEVICE);

  // The same through a copy: nothing leaks, nothing is freed that was not allocated.
  DLManagedTensorVersioned* src = cpu_i32({2, 5}, 1);
  out = src;
  error = fresh_error();
  CHECK(dlb_tensor_copy(src, kExt0, &out, &error) == DLB_ERR_DEVICE);
  CHECK(msg(error) == "fake device cannot allocate 40 bytes");
  CHECK((out == nullptr));
  dlb_tensor_free(src);

  CHECK(f.allocate_calls == 3);
  CHECK(f.free_calls == 0);
  CHECK(f.copy_bytes_calls == 0);
  // No reference to the backend was leaked: unregistering destroys it at once.
  f.unregister_self();
  CHECK(f.destroy_calls == 1);
  CHECK(f.violations == 0);
  CHECK(f.live_count() == 0);
  CHECK(dlb_tensor_live_count() == live0);
}

// ============================================================================================
// Device backends: copies between the host and the plug-in device
// ============================================================================================

namespace {

// Round trips CPU -> ext_dev -> CPU for contiguous data, views on the CPU side (transposed,
// sliced with negative steps, offset by byte_offset) and views on the device side; checks the
// device bytes and the data that comes back. Returns the number of copies that involve the
// device (one copy_tensor call each when the backend has one).
int run_round_trips(FakeDevice& f) {
  int device_copies = 0;
  const std::vector<int32_t> values = iota_i32(20, 100);  // a 4 x 5 matrix

  // Contiguous.
  DLManagedTensorVersioned* host = cpu_i32({4, 5}, 100);
  DLManagedTensorVersioned* dev = copy_to(host, kExt0);
  ++device_copies;
  CHECK(f.is_live(dev->dl_tensor.data));
  CHECK(dev->dl_tensor.byte_offset == 0u);
  CHECK(dev->flags == kIsCopied);
  CHECK(shape_of(dev->dl_tensor) == std::vector<int64_t>{4, 5});
  CHECK(strides_of(dev->dl_tensor) == std::vector<int64_t>{5, 1});
  CHECK(f.read_i32(dev->dl_tensor) == values);
  {
    // The device holds exactly the row-major bytes.
    std::vector<unsigned char> expected(values.size() * 4);
    std::memcpy(expected.data(), values.data(), expected.size());
    CHECK(f.bytes(dev->dl_tensor.data) == expected);
  }
  DLManagedTensorVersioned* back = copy_to(dev, test::cpu());
  ++device_copies;
  CHECK(back->flags == kIsCopied);
  CHECK(read_host_i32(back->dl_tensor) == values);
  dlb_tensor_free(back);

  // A transposed host view goes over as a compact 5 x 4 tensor.
  DLManagedTensorVersioned* host_t = transpose_of(host);
  DLManagedTensorVersioned* dev_t = copy_to(host_t, kExt0);
  ++device_copies;
  CHECK(shape_of(dev_t->dl_tensor) == std::vector<int64_t>{5, 4});
  CHECK(strides_of(dev_t->dl_tensor) == std::vector<int64_t>{4, 1});
  CHECK(f.read_i32(dev_t->dl_tensor) == transposed(values, 4, 5));
  back = copy_to(dev_t, test::cpu());
  ++device_copies;
  CHECK(read_host_i32(back->dl_tensor) == transposed(values, 4, 5));
  dlb_tensor_free(back);
  dlb_tensor_free(dev_t);
  dlb_tensor_free(host_t);

  // A host slice with negative steps in both dimensions: rows 3, 1 and columns 4, 2, 0.
  DLManagedTensorVersioned* host_s = slice_of(host, {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -2), sl(4, DLB_SLICE_NONE, -2)});
  const std::vector<int32_t> sliced = {values[19], values[17], values[15], values[9], values[7], values[5]};
  CHECK(read_host_i32(host_s->dl_tensor) == sliced);
  DLManagedTensorVersioned* dev_s = copy_to(host_s, kExt0);
  ++device_copies;
  CHECK(f.read_i32(dev_s->dl_tensor) == sliced);
  back = copy_to(dev_s, test::cpu());
  ++device_copies;
  CHECK(read_host_i32(back->dl_tensor) == sliced);
  dlb_tensor_free(back);
  dlb_tensor_free(dev_s);
  dlb_tensor_free(host_s);

  // A host view with a byte_offset: row 2.
  DLManagedTensorVersioned* host_row = select_of(host, 0, 2);
  CHECK(host_row->dl_tensor.data == static_cast<char*>(host->dl_tensor.data) + 40);
  CHECK(host_row->dl_tensor.byte_offset == 0);
  const std::vector<int32_t> row2(values.begin() + 10, values.begin() + 15);
  DLManagedTensorVersioned* dev_row = copy_to(host_row, kExt0);
  ++device_copies;
  CHECK(f.allocated_sizes.back() == 20u);
  CHECK(f.read_i32(dev_row->dl_tensor) == row2);
  back = copy_to(dev_row, test::cpu());
  ++device_copies;
  CHECK(read_host_i32(back->dl_tensor) == row2);
  dlb_tensor_free(back);
  dlb_tensor_free(dev_row);
  dlb_tensor_free(host_row);

  // Views on the device side: the handle stays, byte_offset moves, copies read them right.
  DLManagedTensorVersioned* view_t = transpose_of(dev);
  CHECK((view_t->dl_tensor.data == dev->dl_tensor.data));
  CHECK(view_t->dl_tensor.byte_offset == 0u);
  back = copy_to(view_t, test::cpu());
  ++device_copies;
  CHECK(read_host_i32(back->dl_tensor) == transposed(values, 4, 5));
  dlb_tensor_free(back);

  DLManagedTensorVersioned* view_s = slice_of(dev, {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1), sl(3, 0, -2)});
  CHECK((view_s->dl_tensor.data == dev->dl_tensor.data));
  CHECK(view_s->dl_tensor.byte_offset == (3u * 5u + 3u) * 4u);  // element [3, 3]
  CHECK(strides_of(view_s->dl_tensor) == std::vector<int64_t>{-5, -2});
  const std::vector<int32_t> expected_s = {values[18], values[16], values[13], values[11],
                                           values[8],  values[6],  values[3],  values[1]};
  CHECK(f.read_i32(view_s->dl_tensor) == expected_s);
  back = copy_to(view_s, test::cpu());
  ++device_copies;
  CHECK(read_host_i32(back->dl_tensor) == expected_s);
  dlb_tensor_free(back);

  DLManagedTensorVersioned* view_row = select_of(dev, 0, 3);
  CHECK((view_row->dl_tensor.data == dev->dl_tensor.data));
  CHECK(view_row->dl_tensor.byte_offset == 60u);
  back = copy_to(view_row, test::cpu());
  ++device_copies;
  CHECK(read_host_i32(back->dl_tensor) == std::vector<int32_t>(values.begin() + 15, values.end()));
  dlb_tensor_free(back);

  // Device to device (same backend, another device id), from a strided device view.
  DLManagedTensorVersioned* dev1 = copy_to(view_s, DLDevice{kDLExtDev, 1});
  ++device_copies;
  CHECK(same_device(f.allocated_devices.back(), DLDevice{kDLExtDev, 1}));
  CHECK((dev1->dl_tensor.data != dev->dl_tensor.data));
  CHECK(f.read_i32(dev1->dl_tensor) == expected_s);
  dlb_tensor_free(dev1);

  // An empty tensor: allocated (0 bytes), nothing to move.
  DLManagedTensorVersioned* host_e = cpu_i32({0, 3}, 0);
  const int bytes_before = f.copy_bytes_calls, tensor_before = f.copy_tensor_calls;
  DLManagedTensorVersioned* dev_e = copy_to(host_e, kExt0);
  CHECK(f.allocated_sizes.back() == 0u);
  back = copy_to(dev_e, test::cpu());
  CHECK(f.copy_bytes_calls == bytes_before);
  CHECK(f.copy_tensor_calls == tensor_before);
  dlb_tensor_free(back);
  dlb_tensor_free(dev_e);
  dlb_tensor_free(host_e);

  // The device tensor lives on through its views; freeing the last one frees it once.
  const int frees = f.free_calls;
  dlb_tensor_free(dev);
  dlb_tensor_free(view_t);
  dlb_tensor_free(view_s);
  CHECK(f.free_calls == frees);
  dlb_tensor_free(view_row);
  CHECK(f.free_calls == frees + 1);
  dlb_tensor_free(host);
  return device_copies;
}

}  // namespace

TEST_CASE("copies CPU <-> ext_dev through copy_bytes when the backend has no copy_tensor") {
  const int64_t live0 = dlb_tensor_live_count();
  FakeDevice f(kDLExtDev, FakeDevice::CopyTensor::kAbsent);
  f.register_self();
  run_round_trips(f);
  CHECK(f.copy_tensor_calls == 0);
  CHECK(f.copy_bytes_calls > 0);
  f.unregister_self();
  check_clean(f);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("copies fall back to copy_bytes when copy_tensor returns DLB_ERR_UNSUPPORTED") {
  const int64_t live0 = dlb_tensor_live_count();
  FakeDevice f(kDLExtDev, FakeDevice::CopyTensor::kUnsupported);
  f.register_self();
  const int copies = run_round_trips(f);
  CHECK(f.copy_tensor_calls == copies);  // asked once per copy, then staged
  CHECK(f.copy_bytes_calls > 0);
  f.unregister_self();
  check_clean(f);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("copies go through copy_tensor alone when it handles them") {
  const int64_t live0 = dlb_tensor_live_count();
  FakeDevice f(kDLExtDev, FakeDevice::CopyTensor::kHandles);
  f.register_self();
  const int copies = run_round_trips(f);
  CHECK(f.copy_tensor_calls == copies);
  CHECK(f.copy_bytes_calls == 0);
  f.unregister_self();
  check_clean(f);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("a declined copy_tensor leaves the caller's error report untouched when the copy succeeds") {
  // dlbridge.h conventions: "on error its message is filled in (when non-NULL), on success it
  // is left untouched"; and backend callbacks return "a DLB_ERR_* status with a message in
  // `error`", so a declining copy_tensor writes a message that the caller must not see.
  const int64_t live0 = dlb_tensor_live_count();
  FakeDevice f(kDLExtDev, FakeDevice::CopyTensor::kUnsupported);
  f.register_self();
  DLManagedTensorVersioned* host = cpu_i32({2, 3}, 4);

  DLManagedTensorVersioned* dev = nullptr;
  dlb_error error = fresh_error();
  CHECK(dlb_tensor_copy(host, kExt0, &dev, &error) == DLB_OK);
  CHECK(f.copy_tensor_calls == 1);
  // A declined copy_tensor explains itself in a report of its own: after the
  // DLB_ERR_UNSUPPORTED fallback succeeds, the caller's report is untouched.
  CHECK(msg(error) == kUntouched);
  REQUIRE(dev != nullptr);
  CHECK(f.read_i32(dev->dl_tensor) == iota_i32(6, 4));

  DLManagedTensorVersioned* back = nullptr;
  error = fresh_error();
  CHECK(dlb_tensor_copy(dev, test::cpu(), &back, &error) == DLB_OK);
  CHECK(msg(error) == kUntouched);  // as above
  REQUIRE(back != nullptr);
  CHECK(read_host_i32(back->dl_tensor) == iota_i32(6, 4));

  error = fresh_error();
  CHECK(dlb_tensor_copy_into(back, dev, &error) == DLB_OK);
  CHECK(msg(error) == kUntouched);  // as above
  CHECK(f.copy_tensor_calls == 3);

  dlb_tensor_free(back);
  dlb_tensor_free(dev);
  dlb_tensor_free(host);
  f.unregister_self();
  check_clean(f);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("a copy that needs no fallback leaves the caller's error report untouched") {
  const int64_t live0 = dlb_tensor_live_count();
  for (FakeDevice::CopyTensor mode : {FakeDevice::CopyTensor::kAbsent, FakeDevice::CopyTensor::kHandles}) {
    CAPTURE(static_cast<int>(mode));
    FakeDevice f(kDLExtDev, mode);
    f.register_self();
    DLManagedTensorVersioned* host = cpu_i32({3, 2}, 8);
    DLManagedTensorVersioned* dev = nullptr;
    dlb_error error = fresh_error();
    CHECK(dlb_tensor_copy(host, kExt0, &dev, &error) == DLB_OK);
    CHECK(msg(error) == kUntouched);
    DLManagedTensorVersioned* back = nullptr;
    CHECK(dlb_tensor_copy(dev, test::cpu(), &back, &error) == DLB_OK);
    CHECK(msg(error) == kUntouched);
    CHECK(dlb_tensor_copy_into(back, dev, &error) == DLB_OK);
    CHECK(msg(error) == kUntouched);
    CHECK(read_host_i32(back->dl_tensor) == iota_i32(6, 8));
    dlb_tensor_free(back);
    dlb_tensor_free(dev);
    dlb_tensor_free(host);
    f.unregister_self();
    check_clean(f);
  }
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("a failing copy_tensor or copy_bytes propagates, without fallback or leak") {
  const int64_t live0 = dlb_tensor_live_count();
  DLManagedTensorVersioned* host = cpu_i32({2, 3}, 9);

  SUBCASE("copy_tensor fails with DLB_ERR_DEVICE: no staging attempt") {
    FakeDevice f(kDLExtDev, FakeDevice::CopyTensor::kFails);
    f.register_self();
    DLManagedTensorVersioned* out = host;
    dlb_error error = fresh_error();
    CHECK(dlb_tensor_copy(host, kExt0, &out, &error) == DLB_ERR_DEVICE);
    CHECK(msg(error) == "fake copy_tensor failed");
    CHECK((out == nullptr));
    CHECK(f.copy_tensor_calls == 1);
    CHECK(f.copy_bytes_calls == 0);
    CHECK(f.allocate_calls == 1);
    CHECK(f.free_calls == 1);  // the half-made copy was freed
    f.unregister_self();
    check_clean(f);
  }
  SUBCASE("copy_bytes fails, host to device") {
    FakeDevice f;
    f.fail_copy_bytes = true;
    f.register_self();
    DLManagedTensorVersioned* out = host;
    dlb_error error = fresh_error();
    CHECK(dlb_tensor_copy(host, kExt0, &out, &error) == DLB_ERR_DEVICE);
    CHECK(msg(error) == "fake copy_bytes failed");
    CHECK((out == nullptr));
    CHECK(f.allocate_calls == 1);
    CHECK(f.free_calls == 1);
    f.unregister_self();
    check_clean(f);
  }
  SUBCASE("copy_bytes fails, device to host and into a strided device view") {
    FakeDevice f;
    f.register_self();
    DLManagedTensorVersioned* dev = copy_to(host, kExt0);
    f.fail_copy_bytes = true;
    DLManagedTensorVersioned* out = host;
    dlb_error error = fresh_error();
    CHECK(dlb_tensor_copy(dev, test::cpu(), &out, &error) == DLB_ERR_DEVICE);
    CHECK(msg(error) == "fake copy_bytes failed");
    CHECK((out == nullptr));
    DLManagedTensorVersioned* view = transpose_of(dev);
    DLManagedTensorVersioned* host_t = transpose_of(host);
    error = fresh_error();
    CHECK(dlb_tensor_copy_into(host_t, view, &error) == DLB_ERR_DEVICE);
    CHECK(msg(error) == "fake copy_bytes failed");
    dlb_tensor_free(host_t);
    dlb_tensor_free(view);
    dlb_tensor_free(dev);
    f.unregister_self();
    check_clean(f);
  }
  dlb_tensor_free(host);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("dlb_tensor_copy_into a strided ext_dev view keeps the bytes between its elements") {
  const int64_t live0 = dlb_tensor_live_count();
  for (FakeDevice::CopyTensor mode : {FakeDevice::CopyTensor::kAbsent, FakeDevice::CopyTensor::kUnsupported,
                                      FakeDevice::CopyTensor::kHandles}) {
    CAPTURE(static_cast<int>(mode));
    FakeDevice f(kDLExtDev, mode);
    f.register_self();
    DLManagedTensorVersioned* base_host = cpu_i32({8}, 1);  // 1, 8, 15, ...
    DLManagedTensorVersioned* base = copy_to(base_host, kExt0);
    // Every other element, backwards: device elements 7, 5, 3, 1.
    DLManagedTensorVersioned* odd = slice_of(base, {sl(7, DLB_SLICE_NONE, -2)});
    CHECK((odd->dl_tensor.data == base->dl_tensor.data));
    CHECK(odd->dl_tensor.byte_offset == 28u);
    DLManagedTensorVersioned* src = cpu_i32({4}, -50);  // -50, -43, -36, -29
    dlb_error error = fresh_error();
    CHECK(dlb_tensor_copy_into(src, odd, &error) == DLB_OK);
    const std::vector<int32_t> orig = iota_i32(8, 1);
    const std::vector<int32_t> expected = {orig[0], -29, orig[2], -36, orig[4], -43, orig[6], -50};
    CHECK(f.read_i32(base->dl_tensor) == expected);
    // And back from the device view into a host view.
    DLManagedTensorVersioned* host_dst = cpu_i32({4}, 0);
    error = fresh_error();
    CHECK(dlb_tensor_copy_into(odd, host_dst, &error) == DLB_OK);
    CHECK(read_host_i32(host_dst->dl_tensor) == std::vector<int32_t>{-50, -43, -36, -29});
    dlb_tensor_free(host_dst);
    dlb_tensor_free(src);
    dlb_tensor_free(odd);
    dlb_tensor_free(base);
    dlb_tensor_free(base_host);
    f.unregister_self();
    check_clean(f);
  }
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("views of an ext_dev tensor only change byte_offset, never the handle") {
  const int64_t live0 = dlb_tensor_live_count();
  FakeDevice f;
  f.register_self();
  DLManagedTensorVersioned* base = allocate_on(kExt0, kI32, {2, 3, 4});
  void* const handle = base->dl_tensor.data;
  CHECK(f.allocate_calls == 1);
  CHECK(f.allocated_sizes.back() == 96u);

  std::vector<DLManagedTensorVersioned*> views;
  auto check_view = [&](DLManagedTensorVersioned* v, uint64_t byte_offset, std::vector<int64_t> shape,
                        std::vector<int64_t> strides) {
    CHECK((v->dl_tensor.data == handle));
    CHECK(same_device(v->dl_tensor.device, kExt0));
    CHECK(v->dl_tensor.byte_offset == byte_offset);
    CHECK(shape_of(v->dl_tensor) == shape);
    CHECK(strides_of(v->dl_tensor) == strides);
    CHECK(dlb_tensor_validate(&v->dl_tensor, v->flags, nullptr) == DLB_OK);
    views.push_back(v);
  };
  DLManagedTensorVersioned* s = slice_of(base, {sl(1, 2, 1), sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1), sl(1, 3, 1)});
  check_view(s, (12u + 8u + 1u) * 4u, {1, 3, 2}, {12, -4, 1});
  check_view(select_of(s, 1, 2), (12u + 1u) * 4u, {1, 2}, {12, 1});
  check_view(transpose_of(base), 0, {4, 3, 2}, {1, 4, 12});
  check_view(transpose_of(s), (12u + 8u + 1u) * 4u, {2, 3, 1}, {1, -4, 12});
  check_view(select_of(base, -1, 3), 12u, {2, 3}, {12, 4});
  {
    DLManagedTensorVersioned* r = nullptr;
    const int64_t shape[] = {6, -1};
    CHECK(dlb_tensor_reshape(base, 2, shape, &r, nullptr) == DLB_OK);
    check_view(r, 0, {6, 4}, {4, 1});
    DLManagedTensorVersioned* r2 = nullptr;
    const int64_t shape2[] = {4, 6};
    CHECK(dlb_tensor_reshape(r, 2, shape2, &r2, nullptr) == DLB_OK);
    check_view(r2, 0, {4, 6}, {6, 1});
  }
  {
    DLManagedTensorVersioned* p = nullptr;
    const int32_t axes[] = {1, 0, 2};
    CHECK(dlb_tensor_permute(s, 3, axes, &p, nullptr) == DLB_OK);
    check_view(p, (12u + 8u + 1u) * 4u, {3, 1, 2}, {-4, 12, 1});
  }
  {
    DLManagedTensorVersioned* sh = nullptr;
    CHECK(dlb_tensor_share(s, kReadOnly, &sh, nullptr) == DLB_OK);
    check_view(sh, (12u + 8u + 1u) * 4u, {1, 3, 2}, {12, -4, 1});
    CHECK(sh->flags == kReadOnly);
  }
  // Packed sub-byte data on the device: a slice that starts inside a byte is refused.
  DLManagedTensorVersioned* packed = allocate_on(kExt0, test::dtype(kDLInt, 4), {6});
  DLManagedTensorVersioned* bad = packed;
  dlb_error error = fresh_error();
  const dlb_slice odd[] = {sl(1, DLB_SLICE_NONE, 2)};
  CHECK(dlb_tensor_slice(packed, 1, odd, &bad, &error) == DLB_ERR_LAYOUT);
  CHECK(msg(error) == "a view of packed int4 data must start on a byte boundary, not at bit 4 of a byte");
  CHECK((bad == nullptr));
  DLManagedTensorVersioned* even = slice_of(packed, {sl(4, DLB_SLICE_NONE, -2)});
  CHECK((even->dl_tensor.data == packed->dl_tensor.data));
  CHECK(even->dl_tensor.byte_offset == 2u);
  dlb_tensor_free(even);
  dlb_tensor_free(packed);

  // No view allocated device memory; the base is freed once, after its last view.
  CHECK(f.allocate_calls == 2);
  dlb_tensor_free(base);
  dlb_tensor_free(s);
  for (size_t i = 1; i < views.size(); ++i) {
    CHECK(f.free_calls == 1);  // only `packed` so far
    dlb_tensor_free(views[i]);
  }
  CHECK(f.free_calls == 2);
  CHECK((f.freed_handles.back() == handle));
  f.unregister_self();
  check_clean(f);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("packed sub-byte data round-trips through ext_dev") {
  const int64_t live0 = dlb_tensor_live_count();
  for (FakeDevice::CopyTensor mode : {FakeDevice::CopyTensor::kAbsent, FakeDevice::CopyTensor::kHandles}) {
    CAPTURE(static_cast<int>(mode));
    FakeDevice f(kDLExtDev, mode);
    f.register_self();
    const DLDataType i4 = test::dtype(kDLInt, 4);
    DLManagedTensorVersioned* host = allocate_on(test::cpu(), i4, {5});
    auto* bytes = static_cast<unsigned char*>(host->dl_tensor.data) + host->dl_tensor.byte_offset;
    bytes[0] = 0x21;  // elements 1, 2
    bytes[1] = 0x43;  // elements 3, 4
    bytes[2] = 0x05;  // element 5 (the high nibble is not part of the tensor)
    DLManagedTensorVersioned* dev = copy_to(host, kExt0);
    CHECK(f.allocated_sizes.back() == 3u);
    const std::vector<unsigned char> device_bytes = f.bytes(dev->dl_tensor.data);
    REQUIRE(device_bytes.size() == 3u);
    CHECK(device_bytes[0] == 0x21);
    CHECK(device_bytes[1] == 0x43);
    CHECK((device_bytes[2] & 0x0F) == 0x05);
    DLManagedTensorVersioned* back = copy_to(dev, test::cpu());
    const auto* out = static_cast<const unsigned char*>(back->dl_tensor.data) + back->dl_tensor.byte_offset;
    CHECK(out[0] == 0x21);
    CHECK(out[1] == 0x43);
    CHECK((out[2] & 0x0F) == 0x05);
    // A reversed every-other view (elements 5, 3, 1) of the device tensor.
    DLManagedTensorVersioned* rev = slice_of(dev, {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -2)});
    CHECK(rev->dl_tensor.byte_offset == 2u);
    DLManagedTensorVersioned* rev_back = copy_to(rev, test::cpu());
    const auto* r = static_cast<const unsigned char*>(rev_back->dl_tensor.data) + rev_back->dl_tensor.byte_offset;
    CHECK(r[0] == 0x35);
    CHECK((r[1] & 0x0F) == 0x01);
    // Padded data keeps its flag and one byte per element.
    DLManagedTensorVersioned* padded = allocate_on(test::cpu(), i4, {3}, nullptr, kPadded);
    auto* pb = static_cast<unsigned char*>(padded->dl_tensor.data) + padded->dl_tensor.byte_offset;
    pb[0] = 0x07;
    pb[1] = 0x01;
    pb[2] = 0x0F;
    DLManagedTensorVersioned* dev_p = copy_to(padded, kExt0);
    CHECK(f.allocated_sizes.back() == 3u);
    CHECK(dev_p->flags == (kPadded | kIsCopied));
    CHECK((f.bytes(dev_p->dl_tensor.data) == std::vector<unsigned char>{0x07, 0x01, 0x0F}));
    for (DLManagedTensorVersioned* t : {dev_p, padded, rev_back, rev, back, dev, host}) dlb_tensor_free(t);
    f.unregister_self();
    check_clean(f);
  }
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("wrapped foreign ext_dev memory: copies pass the handle and byte_offset") {
  const int64_t live0 = dlb_tensor_live_count();
  FakeDevice f;
  f.register_self();
  struct ForeignBuffer {
    FakeDevice* device;
    void* handle;
    test::Counter released;
  } buffer{&f, nullptr, {}};
  buffer.handle = f.create(64, kExt0);
  const std::vector<int32_t> payload = iota_i32(16, 3);
  f.write(buffer.handle, 0, payload.data(), 64);

  // Elements 4..7 read backwards: byte_offset 28, stride -1.
  int64_t shape[] = {4};
  int64_t strides[] = {-1};
  DLTensor t{};
  t.data = buffer.handle;
  t.device = kExt0;
  t.ndim = 1;
  t.dtype = kI32;
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 28;
  DLManagedTensorVersioned* wrapped = nullptr;
  dlb_error error = fresh_error();
  REQUIRE(dlb_tensor_wrap(&t, 0, [](void* ctx) {
            auto* b = static_cast<ForeignBuffer*>(ctx);
            b->device->destroy_handle(b->handle);
            b->released.calls++;
          }, &buffer, &wrapped, &error) == DLB_OK);
  CHECK((wrapped->dl_tensor.data == buffer.handle));
  CHECK(wrapped->dl_tensor.byte_offset == 28u);
  DLManagedTensorVersioned* back = copy_to(wrapped, test::cpu());
  CHECK(read_host_i32(back->dl_tensor) == std::vector<int32_t>{payload[7], payload[6], payload[5], payload[4]});
  // copy_bytes saw the handle with the offset of the lowest byte touched (element 4).
  REQUIRE(!f.device_offsets.empty());
  CHECK(f.device_offsets.back() == 16u);
  CHECK(f.allocate_calls == 0);
  dlb_tensor_free(back);

  // Strides that reach before an opaque handle are refused, and release is not called.
  t.byte_offset = 0;
  DLManagedTensorVersioned* refused = wrapped;
  error = fresh_error();
  CHECK(dlb_tensor_wrap(&t, 0, test::count_release, &buffer.released, &refused, &error) ==
        DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "strides reach 12 bytes before the start of the ext_dev buffer (byte_offset 0)");
  CHECK((refused == nullptr));

  CHECK(buffer.released.get() == 0);
  dlb_tensor_free(wrapped);
  CHECK(buffer.released.get() == 1);
  CHECK(f.free_calls == 0);  // not allocated through the backend: not freed through it
  f.unregister_self();
  CHECK(f.live_count() == 0);
  CHECK(f.violations == 0);
  CHECK(f.destroy_calls == 1);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("copies to or from a device without a backend fail without leaking") {
  const int64_t live0 = dlb_tensor_live_count();
  DLManagedTensorVersioned* host = cpu_i32({3}, 1);
  struct Row {
    DLDevice device;
    int status;
    const char* message;
  };
  const Row rows[] = {
      {DLDevice{kDLVulkan, 0}, DLB_ERR_UNSUPPORTED, "no backend is registered for vulkan"},
      {DLDevice{kDLExtDev, 0}, DLB_ERR_UNSUPPORTED, "no backend is registered for ext_dev"},
      {DLDevice{kDLCUDA, 0}, DLB_ERR_UNSUPPORTED, "no backend is registered for cuda"},
      {DLDevice{static_cast<DLDeviceType>(40), 0}, DLB_ERR_UNSUPPORTED,
       "device type 40 is not a known DLPack device type"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.message);
    DLManagedTensorVersioned* out = host;
    dlb_error error = fresh_error();
    CHECK(dlb_tensor_copy(host, row.device, &out, &error) == row.status);
    CHECK(msg(error) == row.message);
    CHECK((out == nullptr));
    CHECK(dlb_tensor_live_count() == live0 + 1);
  }

  // A wrapped ext_dev tensor with no backend: the CPU side is allocated, then freed again.
  test::Counter released;
  int64_t shape[] = {3};
  DLTensor t{};
  t.data = reinterpret_cast<void*>(static_cast<uintptr_t>(0x7e5700000000ull));  // never dereferenced
  t.device = kExt0;
  t.ndim = 1;
  t.dtype = kI32;
  t.shape = shape;
  DLManagedTensorVersioned* wrapped = nullptr;
  REQUIRE(dlb_tensor_wrap(&t, 0, test::count_release, &released, &wrapped, nullptr) == DLB_OK);
  DLManagedTensorVersioned* out = host;
  dlb_error error = fresh_error();
  CHECK(dlb_tensor_copy(wrapped, test::cpu(), &out, &error) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) == "no backend is registered for ext_dev");
  CHECK((out == nullptr));
  error = fresh_error();
  CHECK(dlb_tensor_copy_into(host, wrapped, &error) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) == "no backend is registered for ext_dev");
  error = fresh_error();
  CHECK(dlb_tensor_copy_into(wrapped, host, &error) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) == "no backend is registered for ext_dev");
  CHECK(dlb_tensor_live_count() == live0 + 2);
  CHECK(released.get() == 0);
  dlb_tensor_free(wrapped);
  CHECK(released.get() == 1);
  dlb_tensor_free(host);
  CHECK(dlb_tensor_live_count() == live0);
}

// ============================================================================================
// Device backends: lifetime (unregister, replace) and device types new to DLPack
// ============================================================================================

TEST_CASE("unregistering while tensors live defers destroy until the last one is freed") {
  const int64_t live0 = dlb_tensor_live_count();
  FakeDevice f;
  f.register_self();
  DLManagedTensorVersioned* t = allocate_on(kExt0, kI32, {4});
  DLManagedTensorVersioned* u = allocate_on(kExt0, kI32, {2});
  DLManagedTensorVersioned* view = slice_of(t, {sl(1, 3, 1)});

  f.unregister_self();
  CHECK(dlb_backend_is_registered(kDLExtDev) == 0);
  CHECK(f.destroy_calls == 0);
  CHECK(dlb_device_type_is_known(kDLExtDev) == 1);  // a DLPack type: known regardless

  // New allocations have no backend now.
  DLManagedTensorVersioned* none = t;
  dlb_error error = fresh_error();
  const int64_t shape[] = {1};
  CHECK(dlb_tensor_allocate(kExt0, kI32, 1, shape, nullptr, 0, &none, &error) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(error) == "no backend is registered for ext_dev");
  CHECK((none == nullptr));

  dlb_tensor_free(u);
  CHECK(f.free_calls == 1);
  CHECK(f.destroy_calls == 0);
  dlb_tensor_free(t);  // the view keeps the memory (and so the backend) alive
  CHECK(f.free_calls == 1);
  CHECK(f.destroy_calls == 0);
  dlb_tensor_free(view);
  CHECK(f.free_calls == 2);
  CHECK(f.destroy_calls == 1);
  check_clean(f);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("replacing a backend: old tensors keep the old one, new ones use the new one") {
  const int64_t live0 = dlb_tensor_live_count();
  SUBCASE("replacing an idle backend destroys it at once") {
    FakeDevice a, b;
    a.register_self();
    b.register_self();
    CHECK(a.destroy_calls == 1);
    CHECK(b.destroy_calls == 0);
    DLManagedTensorVersioned* t = allocate_on(kExt0, kI32, {2});
    CHECK(a.allocate_calls == 0);
    CHECK(b.allocate_calls == 1);
    dlb_tensor_free(t);
    b.unregister_self();
    check_clean(a);
    check_clean(b);
  }
  SUBCASE("a replaced backend lives until its last tensor is freed") {
    FakeDevice a, b;
    a.register_self();
    DLManagedTensorVersioned* ta = allocate_on(kExt0, kI32, {3});
    b.register_self();
    CHECK(a.destroy_calls == 0);
    CHECK(dlb_backend_is_registered(kDLExtDev) == 1);
    DLManagedTensorVersioned* tb = allocate_on(kExt0, kI32, {5});
    CHECK(a.allocate_calls == 1);
    CHECK(b.allocate_calls == 1);
    CHECK(b.is_live(tb->dl_tensor.data));
    CHECK(a.is_live(ta->dl_tensor.data));
    dlb_tensor_free(ta);  // freed through a, which then goes
    CHECK(a.free_calls == 1);
    CHECK(b.free_calls == 0);
    CHECK(a.destroy_calls == 1);
    dlb_tensor_free(tb);
    CHECK(b.free_calls == 1);
    CHECK(b.destroy_calls == 0);  // still registered
    b.unregister_self();
    check_clean(a);
    check_clean(b);
  }
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("a tensor of a replaced backend is still copied through that backend") {
  // dlbridge.h, dlb_backend_register: "Tensors already allocated through a replaced backend
  // keep using it until they are freed."
  const int64_t live0 = dlb_tensor_live_count();
  FakeDevice a, b;
  a.register_self();
  DLManagedTensorVersioned* host = cpu_i32({3}, 11);
  DLManagedTensorVersioned* ta = copy_to(host, kExt0);
  b.register_self();
  const int a_copies = a.copy_bytes_calls;
  DLManagedTensorVersioned* back = nullptr;
  dlb_error error = fresh_error();
  const int status = dlb_tensor_copy(ta, test::cpu(), &back, &error);
  INFO(msg(error));
  // The copy must go to `a`, which allocated ta, not to its replacement `b`, which would be
  // handed a handle it never allocated (b rejects it: DLB_ERR_DEVICE "fake copy_bytes: bad
  // access").
  CHECK(status == DLB_OK);
  CHECK(a.copy_bytes_calls > a_copies);
  CHECK(b.copy_bytes_calls == 0);
  if (status == DLB_OK) {
    CHECK(read_host_i32(back->dl_tensor) == iota_i32(3, 11));
    dlb_tensor_free(back);
  } else {
    CHECK((back == nullptr));
  }
  b.violations = 0;  // reported above; keep the lifetime checks below meaningful
  dlb_tensor_free(ta);
  CHECK(a.destroy_calls == 1);
  dlb_tensor_free(host);
  b.unregister_self();
  check_clean(a);
  check_clean(b);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("a device type unknown to DLPack becomes known while a backend serves it") {
  const int64_t live0 = dlb_tensor_live_count();
  const int32_t kNew = 40;
  const DLDevice dev40{static_cast<DLDeviceType>(kNew), 0};
  CHECK(dlb_device_type_is_known(kNew) == 0);
  CHECK((dlb_device_type_name(kNew) == nullptr));

  auto foreign_on_40 = [&](test::Counter& counter, void* handle) {
    test::ForeignVersioned* fv = test::make_foreign(counter, kI32, {2, 2});
    fv->managed.dl_tensor.device = dev40;
    fv->managed.dl_tensor.data = handle;
    return fv;
  };

  // Before: refused by validation and import (which still calls the deleter).
  {
    test::Counter counter;
    test::ForeignVersioned* fv = foreign_on_40(counter, fv_dummy_handle());
    dlb_error error = fresh_error();
    CHECK(dlb_tensor_validate(&fv->managed.dl_tensor, 0, &error) == DLB_ERR_UNSUPPORTED);
    CHECK(msg(error) == "device type 40 is not a known DLPack device type");
    DLManagedTensorVersioned* out = &fv->managed;
    error = fresh_error();
    CHECK(dlb_tensor_import(&fv->managed, &out, &error) == DLB_ERR_UNSUPPORTED);
    CHECK(msg(error) == "device type 40 is not a known DLPack device type");
    CHECK((out == nullptr));
    CHECK(counter.get() == 1);
  }

  FakeDevice f(kNew);
  f.register_self();
  CHECK(dlb_device_type_is_known(kNew) == 1);
  CHECK(dlb_backend_is_registered(kNew) == 1);
  CHECK((dlb_device_type_name(kNew) == nullptr));  // still no DLPack name
  CHECK(format_device(dev40) == "device_type_40:0");
  CHECK(dlb_device_type_is_known(41) == 0);
  {
    test::Counter counter;
    void* handle = f.create(16, dev40);
    test::ForeignVersioned* fv = foreign_on_40(counter, handle);
    CHECK(dlb_tensor_validate(&fv->managed.dl_tensor, 0, nullptr) == DLB_OK);
    DLManagedTensorVersioned* imported = nullptr;
    dlb_error error = fresh_error();
    REQUIRE(dlb_tensor_import(&fv->managed, &imported, &error) == DLB_OK);
    CHECK(same_device(imported->dl_tensor.device, dev40));
    CHECK((imported->dl_tensor.data == handle));
    // Its data can be copied through the backend.
    const std::vector<int32_t> payload = {4, 3, 2, 1};
    f.write(handle, 0, payload.data(), 16);
    DLManagedTensorVersioned* back = copy_to(imported, test::cpu());
    CHECK(read_host_i32(back->dl_tensor) == payload);
    dlb_tensor_free(back);
    CHECK(counter.get() == 0);
    dlb_tensor_free(imported);
    CHECK(counter.get() == 1);
    f.destroy_handle(handle);
  }
  {
    // Allocation and copies on the new type.
    DLManagedTensorVersioned* host = cpu_i32({2, 3}, 2);
    DLManagedTensorVersioned* t = copy_to(host, dev40);
    CHECK(same_device(f.allocated_devices.back(), dev40));
    CHECK(f.read_i32(t->dl_tensor) == iota_i32(6, 2));
    dlb_tensor_free(t);
    dlb_tensor_free(host);
  }

  f.unregister_self();
  CHECK(dlb_device_type_is_known(kNew) == 0);
  {
    test::Counter counter;
    test::ForeignVersioned* fv = foreign_on_40(counter, fv_dummy_handle());
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error = fresh_error();
    CHECK(dlb_tensor_import(&fv->managed, &out, &error) == DLB_ERR_UNSUPPORTED);
    CHECK(msg(error) == "device type 40 is not a known DLPack device type");
    CHECK(counter.get() == 1);
  }
  check_clean(f);
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("backends can be replaced and unregistered while other threads allocate and free") {
  const int64_t live0 = dlb_tensor_live_count();
  std::vector<std::unique_ptr<FakeDevice>> fakes;
  std::atomic<bool> stop{false};
  std::atomic<int> done{0}, unsupported{0}, unexpected{0};
  std::vector<std::thread> threads;
  for (int n = 0; n < 4; ++n) {
    threads.emplace_back([&] {
      const int64_t shape[] = {4, 4};
      const dlb_slice rows[] = {{1, 3, 1}};
      while (!stop.load()) {
        DLManagedTensorVersioned* t = nullptr;
        const int status = dlb_tensor_allocate(kExt0, kI32, 2, shape, nullptr, 0, &t, nullptr);
        if (status == DLB_ERR_UNSUPPORTED) {  // between an unregister and the next register
          ++unsupported;
          continue;
        }
        if (status != DLB_OK) {
          ++unexpected;
          continue;
        }
        DLManagedTensorVersioned* view = nullptr;
        if (dlb_tensor_slice(t, 1, rows, &view, nullptr) != DLB_OK) ++unexpected;
        dlb_tensor_free(t);
        dlb_tensor_free(view);
        ++done;
      }
    });
  }
  for (int round = 0; round < 200; ++round) {
    fakes.push_back(std::unique_ptr<FakeDevice>(new FakeDevice()));
    const dlb_backend b = fakes.back()->backend();
    CHECK(dlb_backend_register(&b, nullptr) == DLB_OK);
    if (round % 3 == 2) CHECK(dlb_backend_unregister(kDLExtDev, nullptr) == DLB_OK);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  // Let the workers finish some allocations against the last backend too.
  if (dlb_backend_is_registered(kDLExtDev) == 0) fakes.back()->register_self();
  const int target = done.load() + 8;
  for (int i = 0; i < 5000 && done.load() < target; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stop = true;
  for (std::thread& thread : threads) thread.join();
  CHECK(dlb_backend_unregister(kDLExtDev, nullptr) == DLB_OK);

  CHECK(done.load() > 0);
  CHECK(unexpected.load() == 0);
  int allocations = 0;
  for (const std::unique_ptr<FakeDevice>& f : fakes) {
    allocations += f->allocate_calls;
    check_clean(*f);  // every allocation freed through the backend that made it; destroyed once
  }
  CHECK(allocations == done.load());
  CHECK(dlb_tensor_live_count() == live0);
}

TEST_CASE("plug-in backends get the caller's stream, staged copies wait for it, imports are checked") {
  const int64_t live0 = dlb_tensor_live_count();
  void* const stream = reinterpret_cast<void*>(uintptr_t{0x5e7ea3});
  const int64_t shape[] = {3, 4};
  DLManagedTensorVersioned* host = allocate_on(test::cpu(), kI32, {3, 4});
  const std::vector<int32_t> payload = iota_i32(12, 5);
  std::memcpy(host->dl_tensor.data, payload.data(), 48);
  {
    // A backend with copy_tensor: the stream reaches it, and nothing waits on the host.
    FakeDevice f(kDLExtDev, FakeDevice::CopyTensor::kHandles);
    f.register_self();
    f.expected_stream = stream;
    DLManagedTensorVersioned* ext = nullptr;
    dlb_error error = fresh_error();
    REQUIRE(dlb_tensor_copy_async(host, kExt0, stream, &ext, &error) == DLB_OK);
    CHECK(msg(error) == kUntouched);
    CHECK(f.copy_tensor_calls == 1);
    CHECK(f.synchronized_streams.empty());
    CHECK((ext->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
    CHECK(f.read_i32(ext->dl_tensor) == payload);
    // dlb_device_synchronize routes to the backend with the stream as given.
    REQUIRE(dlb_device_synchronize(kExt0, stream, &error) == DLB_OK);
    REQUIRE(dlb_device_synchronize(kExt0, nullptr, &error) == DLB_OK);
    CHECK(f.synchronized_streams == std::vector<void*>{stream, nullptr});
    dlb_tensor_free(ext);
    f.unregister_self();
    CHECK(f.violations == 0);
  }
  {
    // Without copy_tensor the copy is staged through the host: the stream is synchronised
    // before the host reads the staging buffer and before it is freed.
    FakeDevice f;
    f.register_self();
    f.expected_stream = stream;
    DLManagedTensorVersioned* ext = nullptr;
    REQUIRE(dlb_tensor_copy_async(host, kExt0, stream, &ext, nullptr) == DLB_OK);
    CHECK(f.copy_bytes_calls == 1);  // the destination covers its span: no read-back
    CHECK(f.synchronized_streams == std::vector<void*>{stream});
    DLManagedTensorVersioned* transposed = nullptr;
    REQUIRE(dlb_tensor_transpose(ext, &transposed, nullptr) == DLB_OK);
    DLManagedTensorVersioned* back = nullptr;
    REQUIRE(dlb_tensor_copy_async(transposed, test::cpu(), stream, &back, nullptr) == DLB_OK);
    CHECK(f.synchronized_streams.size() == 2u);
    const std::vector<int32_t> values = read_host_i32(back->dl_tensor);
    std::vector<int32_t> expected;
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 3; ++i) expected.push_back(payload[static_cast<size_t>(i * 4 + j)]);
    CHECK(values == expected);
    dlb_tensor_free(back);
    dlb_tensor_free(transposed);
    dlb_tensor_free(ext);
    f.unregister_self();
    CHECK(f.violations == 0);
  }
  {
    // Between two device types the copy is staged through the host: the stream belongs to the
    // destination's device, so only its backend sees it; the source side runs synchronously.
    FakeDevice source(kDLVulkan);
    FakeDevice destination;
    source.register_self();
    destination.register_self();
    destination.expected_stream = stream;
    DLManagedTensorVersioned* on_source = nullptr;
    REQUIRE(dlb_tensor_copy(host, DLDevice{kDLVulkan, 0}, &on_source, nullptr) == DLB_OK);
    DLManagedTensorVersioned* on_destination = nullptr;
    dlb_error error = fresh_error();
    REQUIRE(dlb_tensor_copy_async(on_source, kExt0, stream, &on_destination, &error) == DLB_OK);
    CHECK(destination.read_i32(on_destination->dl_tensor) == payload);
    CHECK(source.synchronized_streams.empty());
    CHECK(destination.synchronized_streams == std::vector<void*>{stream});
    // Back to the host: now the stream belongs to the source's device.
    source.expected_stream = stream;
    destination.expected_stream = nullptr;
    DLManagedTensorVersioned* back = nullptr;
    REQUIRE(dlb_tensor_copy_async(on_source, test::cpu(), stream, &back, &error) == DLB_OK);
    CHECK(read_host_i32(back->dl_tensor) == payload);
    CHECK(source.synchronized_streams == std::vector<void*>{stream});
    dlb_tensor_free(back);
    dlb_tensor_free(on_destination);
    dlb_tensor_free(on_source);
    source.unregister_self();
    destination.unregister_self();
    CHECK(source.violations == 0);
    CHECK(destination.violations == 0);
  }
  {
    // check_memory runs for every ext_dev tensor that enters; a refusal rejects the import
    // (the producer's deleter runs once) or the wrap (release is not called).
    FakeDevice f;
    f.check_imports = true;
    f.register_self();
    test::Counter deleted;
    auto* unknown = test::make_foreign(deleted, kI32, {3, 4});
    unknown->managed.dl_tensor.device = kExt0;
    unknown->managed.dl_tensor.data = reinterpret_cast<void*>(uintptr_t{0x7e5700000000ull});
    DLManagedTensorVersioned* out = nullptr;
    dlb_error error = fresh_error();
    CHECK(dlb_tensor_import(&unknown->managed, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(error) == "fake check_memory: not a live ext_dev buffer");
    CHECK(deleted.get() == 1);
    CHECK(f.check_memory_calls == 1);
    void* handle = f.create(48, kExt0);
    DLTensor desc{handle, kExt0, 2, kI32, const_cast<int64_t*>(shape), nullptr, 0};
    test::Counter released;
    REQUIRE(dlb_tensor_wrap(&desc, 0, test::count_release, &released, &out, nullptr) == DLB_OK);
    CHECK(f.check_memory_calls == 2);
    dlb_tensor_free(out);
    CHECK(released.get() == 1);
    desc.data = reinterpret_cast<void*>(uintptr_t{0x7e5700000000ull});
    error = fresh_error();
    CHECK(dlb_tensor_wrap(&desc, 0, test::count_release, &released, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(error) == "fake check_memory: not a live ext_dev buffer");
    CHECK(released.get() == 1);
    f.destroy_handle(handle);
    f.unregister_self();
    CHECK(f.violations == 0);
  }
  dlb_tensor_free(host);
  CHECK(dlb_tensor_live_count() == live0);
}
