// Suite 'opencl': the OpenCL backend on a real OpenCL device (PoCL's CPU device in CI).
//
// Device contents are checked against raw OpenCL reads of the buffers (the program opens
// libOpenCL.so.1 itself, so that it links without an ICD loader and can skip with 77), and
// expected layouts against the core's host copies, which the core suites test on their own.
// Every error path asserts the exact status and message; every test case ends with
// dlb_tensor_live_count() back where it started and every deleter count exact.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "dlbridge/dlbridge.h"
#include "opencl_support.hpp"

extern char** environ;

using raw::CallerQueue;
using raw::cl;
using raw::fill;
using raw::read_buffer;
using raw::write_buffer;
using test::fresh_error;
using test::kUntouched;
using test::missing_device;
using test::msg;

namespace {

// ---- small helpers --------------------------------------------------------------------------

const DLDevice kCpu{kDLCPU, 0};
const DLDevice kOpenCL{kDLOpenCL, 0};

struct Owned {
  DLManagedTensorVersioned* t = nullptr;
  Owned() = default;
  explicit Owned(DLManagedTensorVersioned* tensor) : t(tensor) {}
  Owned(Owned&& other) noexcept : t(other.t) { other.t = nullptr; }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      dlb_tensor_free(t);
      t = other.t;
      other.t = nullptr;
    }
    return *this;
  }
  ~Owned() { dlb_tensor_free(t); }
  DLManagedTensorVersioned** out() { return &t; }
  DLTensor* dl() const { return &t->dl_tensor; }
};

DLDataType parse(const char* name) {
  DLDataType dtype{};
  REQUIRE(dlb_dtype_parse(name, &dtype, nullptr) == DLB_OK);
  return dtype;
}

// A compact CPU tensor filled with `seed`'s bytes.
Owned host_tensor(DLDataType dtype, std::vector<int64_t> shape, uint32_t seed) {
  Owned t;
  dlb_error error;
  REQUIRE(dlb_tensor_allocate(kCpu, dtype, static_cast<int32_t>(shape.size()), shape.data(),
                              nullptr, 0, t.out(), &error) == DLB_OK);
  uint64_t nbytes = 0;
  REQUIRE(dlb_tensor_byte_size(t.dl(), 0, &nbytes, nullptr) == DLB_OK);
  fill(t.dl()->data, static_cast<size_t>(nbytes), seed);
  return t;
}

Owned copy_to(const Owned& src, DLDevice device) {
  Owned out;
  dlb_error error = fresh_error();
  const int status = dlb_tensor_copy(src.t, device, out.out(), &error);
  INFO(msg(error));
  REQUIRE(status == DLB_OK);
  CHECK(msg(error) == kUntouched);
  return out;
}

uint64_t element_size(const DLTensor* t) { return dlb_dtype_element_size(t->dtype); }

// The elements of a whole-byte tensor in row-major order, read from `base`, the bytes its
// `data` stands for (host memory, or a device buffer read back).
std::vector<unsigned char> gather(const DLTensor* t, const unsigned char* base) {
  int64_t count = 0;
  REQUIRE(dlb_tensor_element_count(t, &count, nullptr) == DLB_OK);
  const size_t size = static_cast<size_t>(element_size(t));
  std::vector<unsigned char> out(static_cast<size_t>(count) * size);
  if (count == 0) return out;
  std::vector<int64_t> strides(static_cast<size_t>(t->ndim));
  REQUIRE(dlb_tensor_get_strides(t, static_cast<int32_t>(strides.size()), strides.data(), nullptr) == DLB_OK);
  std::vector<int64_t> index(static_cast<size_t>(t->ndim), 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t offset = static_cast<int64_t>(t->byte_offset);
    for (int32_t d = 0; d < t->ndim; ++d) {
      offset += index[d] * strides[d] * static_cast<int64_t>(size);
    }
    std::memcpy(out.data() + static_cast<size_t>(e) * size, base + offset, size);
    for (int32_t d = t->ndim - 1; d >= 0; --d) {
      if (++index[d] < t->shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

std::vector<unsigned char> host_elements(const DLTensor* t) {
  return gather(t, static_cast<const unsigned char*>(t->data));
}

std::vector<unsigned char> device_elements(const DLTensor* t) {
  const std::vector<unsigned char> bytes = read_buffer(t->data);
  return gather(t, bytes.data());
}

// ---- layouts --------------------------------------------------------------------------------

dlb_slice all() { return dlb_slice{DLB_SLICE_NONE, DLB_SLICE_NONE, 1}; }
dlb_slice sl(int64_t start, int64_t stop, int64_t step = 1) { return dlb_slice{start, stop, step}; }

// A layout: a base shape and the views that turn a compact tensor of that shape into it. The
// same views applied to a host and a device tensor give the same shape, strides and offset.
struct Layout {
  const char* name;
  std::vector<int64_t> base_shape;
  std::function<int(DLManagedTensorVersioned*, DLManagedTensorVersioned**)> view;
};

int slice_view(DLManagedTensorVersioned* t, std::vector<dlb_slice> s,
               DLManagedTensorVersioned** out) {
  return dlb_tensor_slice(t, static_cast<int32_t>(s.size()), s.data(), out, nullptr);
}

const std::vector<Layout>& layouts() {
  static const std::vector<Layout> kLayouts = {
      {"contiguous", {6, 7},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         return dlb_tensor_share(t, 0, out, nullptr);
       }},
      {"transposed", {6, 7},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         return dlb_tensor_transpose(t, out, nullptr);
       }},
      {"3-d permuted (2, 0, 1)", {3, 4, 5},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         const int32_t axes[3] = {2, 0, 1};
         return dlb_tensor_permute(t, 3, axes, out, nullptr);
       }},
      {"negative steps [::-2, 7:0:-3]", {8, 9},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         return slice_view(t, {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -2), sl(7, 0, -3)}, out);
       }},
      {"every other column [:, ::2]", {6, 10},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         return slice_view(t, {all(), sl(DLB_SLICE_NONE, DLB_SLICE_NONE, 2)}, out);
       }},
      {"reversed rows, transposed", {6, 7},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         Owned reversed;
         const int status =
             slice_view(t, {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1)}, reversed.out());
         if (status != DLB_OK) return status;
         return dlb_tensor_transpose(reversed.t, out, nullptr);
       }},
      {"byte_offset: row 2 of (5, 6)", {5, 6},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         return dlb_tensor_select(t, 0, 2, out, nullptr);
       }},
      {"byte_offset: block [1:4, 2:5]", {5, 6},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         return slice_view(t, {sl(1, 4), sl(2, 5)}, out);
       }},
      {"zero-size [2:2, :]", {4, 3},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         return slice_view(t, {sl(2, 2)}, out);
       }},
      {"0-d: element 3", {5},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         return dlb_tensor_select(t, 0, 3, out, nullptr);
       }},
      {"10-d reversed axes (no dimension merges)", {2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         return dlb_tensor_transpose(t, out, nullptr);
       }},
      {"large transpose (tile kernel)", {67, 45},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         return dlb_tensor_transpose(t, out, nullptr);
       }},
      {"large, reversed and transposed (tiles with negative strides)", {67, 45},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         Owned reversed;
         const int status = slice_view(t, {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1),
                                           sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1)},
                                       reversed.out());
         if (status != DLB_OK) return status;
         return dlb_tensor_transpose(reversed.t, out, nullptr);
       }},
      {"batched transpose (0, 2, 1) of a column block", {3, 40, 36},
       [](DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
         Owned block;
         const int status = slice_view(t, {all(), all(), sl(2, 35)}, block.out());
         if (status != DLB_OK) return status;
         const int32_t axes[3] = {0, 2, 1};
         return dlb_tensor_permute(block.t, 3, axes, out, nullptr);
       }},
  };
  return kLayouts;
}

Owned apply(const Layout& layout, const Owned& base) {
  Owned view;
  REQUIRE(layout.view(base.t, view.out()) == DLB_OK);
  return view;
}

std::vector<int64_t> shape_of(const DLTensor* t) {
  return std::vector<int64_t>(t->shape, t->shape + t->ndim);
}

// Element sizes 1, 2, 4, 8 and 16 bytes, and multi-lane types of 3, 8 and 12 bytes.
const char* const kMatrixDtypes[] = {"int8",    "int16",   "float32",  "float64",
                                     "complex128", "uint8x3", "float16x4", "float32x3"};

// ---- child processes: the library without a runtime, a platform or a device ----------------

const char* g_self = nullptr;

// Runs this program with `--probe` and the given environment additions; returns its output.
std::string run_probe(const std::vector<std::string>& env_additions) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    bool replaced = false;
    for (const std::string& add : env_additions) {
      const std::string key = add.substr(0, add.find('=') + 1);
      if (std::strncmp(*e, key.c_str(), key.size()) == 0) replaced = true;
    }
    if (!replaced) env_strings.emplace_back(*e);
  }
  for (const std::string& add : env_additions) env_strings.push_back(add);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(&s[0]);
  envp.push_back(nullptr);

  int fds[2];
  REQUIRE(pipe(fds) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::string self = g_self;
  std::string flag = "--probe";
  char* argv[] = {&self[0], &flag[0], nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, g_self, &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  REQUIRE(spawned == 0);
  std::string output;
  char chunk[512];
  ssize_t n;
  while ((n = read(fds[0], chunk, sizeof(chunk))) > 0) output.append(chunk, static_cast<size_t>(n));
  close(fds[0]);
  int wstatus = 0;
  REQUIRE(waitpid(pid, &wstatus, 0) == pid);
  CHECK(WIFEXITED(wstatus));
  CHECK(WEXITSTATUS(wstatus) == 0);
  return output;
}

// The child's side: prints what each entry point reports, one line each.
int probe() {
  dlb_error error;
  // No doctest macros here: there is no test run in this process.
  DLDataType f32{};
  if (dlb_dtype_parse("float32", &f32, nullptr) != DLB_OK) return 2;
  auto line = [&error](const char* what, int status) {
    std::printf("%s: %s: %s\n", what, dlb_status_name(status),
                status == DLB_OK ? "ok" : error.message);
  };
  line("is_available", dlb_opencl_is_available(&error));
  int32_t count = -1;
  line("device_count", dlb_opencl_device_count(&count, &error));
  std::printf("count: %d\n", static_cast<int>(count));
  void* context = reinterpret_cast<void*>(1);
  line("device_objects", dlb_opencl_device_objects(0, nullptr, nullptr, &context, nullptr, &error));
  std::printf("context: %s\n", context == nullptr ? "NULL" : "set");
  char name[64] = "x";
  line("device_name", dlb_opencl_device_name(0, name, sizeof(name), &error));
  std::printf("name: '%s'\n", name);
  const int64_t shape[1] = {4};
  DLManagedTensorVersioned* t = nullptr;
  line("allocate", dlb_tensor_allocate(kOpenCL, f32, 1, shape, nullptr, 0, &t, &error));
  line("synchronize", dlb_device_synchronize(kOpenCL, nullptr, &error));
  // Nothing to check a handle against without a runtime: wraps go through (as for CUDA
  // without a driver).
  DLTensor desc{reinterpret_cast<void*>(0x7), kOpenCL, 1, f32,
                const_cast<int64_t*>(shape), nullptr, 0};
  DLManagedTensorVersioned* wrapped = nullptr;
  line("wrap", dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &wrapped, &error));
  dlb_tensor_free(wrapped);
  // CPU work is unaffected.
  DLManagedTensorVersioned* cpu = nullptr;
  line("cpu allocate", dlb_tensor_allocate(kCpu, f32, 1, shape, nullptr, 0, &cpu, &error));
  dlb_tensor_free(cpu);
  std::printf("live: %lld\n", static_cast<long long>(dlb_tensor_live_count()));
  return 0;
}

std::string expected_probe(const char* status, const char* message) {
  std::string m = std::string(status) + ": " + message + "\n";
  return "is_available: " + m + "device_count: " + m + "count: 0\n" + "device_objects: " + m +
         "context: NULL\n" + "device_name: " + m + "name: ''\n" + "allocate: " + m +
         "synchronize: " + m + "wrap: DLB_OK: ok\n" + "cpu allocate: DLB_OK: ok\n" + "live: 0\n";
}

struct TempDir {
  std::string path;
  TempDir() {
    char pattern[] = "/tmp/dlb-opencl-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::remove((path + "/libOpenCL.so.1").c_str());
    rmdir(path.c_str());
  }
};

bool platform_is_pocl() {
  char name[128] = {};
  REQUIRE(cl.clGetPlatformInfo(cl.platform, CL_PLATFORM_NAME, sizeof(name) - 1, name, nullptr) ==
          CL_SUCCESS);
  return std::strstr(name, "Portable Computing Language") != nullptr;
}

}  // namespace

// ================================================================================================
// Runtime, devices and objects
// ================================================================================================

TEST_CASE("the runtime is available and the devices are listed") {
  dlb_error error = fresh_error();
  CHECK(dlb_opencl_is_available(&error) == DLB_OK);
  CHECK(dlb_opencl_is_available(nullptr) == DLB_OK);
  int32_t count = -1;
  CHECK(dlb_opencl_device_count(&count, &error) == DLB_OK);
  CHECK(count >= 1);
  CHECK(count == cl.device_count);
  CHECK(msg(error) == kUntouched);
  CHECK(dlb_opencl_device_count(nullptr, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "count is NULL");
  CHECK(dlb_backend_is_registered(kDLOpenCL) == 1);
}

TEST_CASE("device names are 'platform / device'") {
  dlb_error error = fresh_error();
  char name[256];
  REQUIRE(dlb_opencl_device_name(0, name, sizeof(name), &error) == DLB_OK);
  CHECK(msg(error) == kUntouched);
  char platform_name[128] = {};
  REQUIRE(cl.clGetPlatformInfo(cl.platform, CL_PLATFORM_NAME, sizeof(platform_name) - 1,
                               platform_name, nullptr) == CL_SUCCESS);
  char device_name[128] = {};
  REQUIRE(cl.clGetDeviceInfo(cl.device, CL_DEVICE_NAME, sizeof(device_name) - 1, device_name,
                             nullptr) == CL_SUCCESS);
  const std::string expected = std::string(platform_name) + " / " + device_name;
  CHECK(std::string(name) == expected);

  // Exactly enough room, then one byte too few.
  std::vector<char> exact(expected.size() + 1, 'x');
  CHECK(dlb_opencl_device_name(0, exact.data(), exact.size(), &error) == DLB_OK);
  CHECK(std::string(exact.data()) == expected);
  char small[4] = "abc";
  CHECK(dlb_opencl_device_name(0, small, sizeof(small), &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "buffer of 4 bytes is too small for opencl device name '" + expected + "'");
  CHECK(small[0] == '\0');
  CHECK(dlb_opencl_device_name(0, nullptr, 10, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "buffer is NULL");
  CHECK(dlb_opencl_device_name(cl.device_count, name, sizeof(name), &error) ==
        DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == missing_device(cl.device_count));
  CHECK(name[0] == '\0');
}

TEST_CASE("device objects: platform, device, the library's context and in-order queue") {
  dlb_error error = fresh_error();
  void *platform = nullptr, *device = nullptr, *context = nullptr, *queue = nullptr;
  REQUIRE(dlb_opencl_device_objects(0, &platform, &device, &context, &queue, &error) == DLB_OK);
  CHECK(msg(error) == kUntouched);
  CHECK(platform == cl.platform);
  CHECK(device == cl.device);
  CHECK(context == cl.context);
  CHECK(queue == cl.queue);
  // The same objects every time, and each output is optional.
  void* again = nullptr;
  REQUIRE(dlb_opencl_device_objects(0, nullptr, nullptr, nullptr, &again, &error) == DLB_OK);
  CHECK(again == queue);
  CHECK(dlb_opencl_device_objects(0, nullptr, nullptr, nullptr, nullptr, &error) == DLB_OK);
  // The queue is in order and belongs to the context.
  cl_command_queue_properties properties = 0;
  REQUIRE(cl.clGetCommandQueueInfo(cl.queue, CL_QUEUE_PROPERTIES, sizeof(properties), &properties,
                                   nullptr) == CL_SUCCESS);
  CHECK((properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0);
  cl_context queue_context = nullptr;
  REQUIRE(cl.clGetCommandQueueInfo(cl.queue, CL_QUEUE_CONTEXT, sizeof(queue_context),
                                   &queue_context, nullptr) == CL_SUCCESS);
  CHECK(queue_context == cl.context);

  for (int32_t id : {cl.device_count, 5 + cl.device_count, -1}) {
    CAPTURE(id);
    platform = device = context = queue = reinterpret_cast<void*>(1);
    CHECK(dlb_opencl_device_objects(id, &platform, &device, &context, &queue, &error) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(error) == missing_device(id));
    CHECK(platform == nullptr);
    CHECK(device == nullptr);
    CHECK(context == nullptr);
    CHECK(queue == nullptr);
  }
}

TEST_CASE("without a runtime, a platform or a device: DLB_ERR_DEVICE_UNAVAILABLE") {
  {
    // An ICD loader that cannot be loaded stands in for a missing one: dlopen finds the file
    // through LD_LIBRARY_PATH first and fails on it.
    TempDir dir;
    std::FILE* fake = std::fopen((dir.path + "/libOpenCL.so.1").c_str(), "w");
    REQUIRE(fake != nullptr);
    std::fclose(fake);
    const char* old = std::getenv("LD_LIBRARY_PATH");
    const std::string path =
        "LD_LIBRARY_PATH=" + dir.path + (old != nullptr ? std::string(":") + old : "");
    CHECK(run_probe({path}) == expected_probe("DLB_ERR_DEVICE_UNAVAILABLE",
                                              "no OpenCL runtime found (libOpenCL.so.1)"));
  }
  {
    // A loader too old for OpenCL 1.2: the first function it lacks is named.
    const char* old = std::getenv("LD_LIBRARY_PATH");
    const std::string path = std::string("LD_LIBRARY_PATH=") + DLB_FAKE_OPENCL_DIR +
                             (old != nullptr ? std::string(":") + old : "");
    CHECK(run_probe({path}) ==
          expected_probe("DLB_ERR_DEVICE_UNAVAILABLE",
                         "the OpenCL runtime (libOpenCL.so.1) lacks clGetPlatformInfo: OpenCL 1.2 "
                         "is required"));
  }
  {
    // An ICD loader whose vendor directory is empty (ocl-icd reads OCL_ICD_VENDORS, the
    // Khronos loader OCL_ICD_FILENAMES).
    TempDir dir;
    CHECK(run_probe({"OCL_ICD_VENDORS=" + dir.path, "OCL_ICD_FILENAMES="}) ==
          expected_probe("DLB_ERR_DEVICE_UNAVAILABLE", "no OpenCL platform found"));
  }
  if (platform_is_pocl()) {
    // PoCL with no usable driver: a platform without devices.
    CHECK(run_probe({"POCL_DEVICES=nonexistent"}) ==
          expected_probe("DLB_ERR_DEVICE_UNAVAILABLE", "no OpenCL device found"));
  }
}

// ================================================================================================
// Allocation
// ================================================================================================

TEST_CASE("allocate and free every standard dtype") {
  const int64_t live = dlb_tensor_live_count();
  const char* const names[] = {
      "int8",          "int16",         "int32",         "int64",          "uint8",
      "uint16",        "uint32",        "uint64",        "float16",        "float32",
      "float64",       "bfloat16",      "bool",          "complex32",      "complex64",
      "complex128",    "bcomplex32",    "handle64",      "float8_e3m4",    "float8_e4m3",
      "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
      "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "int4",
      "uint1",         "int2",          "float32x4",     "uint8x3"};
  const int64_t shape[2] = {3, 5};
  for (const char* name : names) {
    CAPTURE(name);
    const DLDataType dtype = parse(name);
    for (uint64_t flags : {uint64_t{0}, uint64_t{DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED}}) {
      if (flags != 0 && !dlb_dtype_is_subbyte(dtype)) continue;
      CAPTURE(flags);
      Owned t;
      dlb_error error = fresh_error();
      REQUIRE(dlb_tensor_allocate(kOpenCL, dtype, 2, shape, nullptr, flags, t.out(), &error) ==
              DLB_OK);
      CHECK(msg(error) == kUntouched);
      CHECK(t.dl()->device.device_type == kDLOpenCL);
      CHECK(t.dl()->device.device_id == 0);
      CHECK(t.dl()->data != nullptr);
      CHECK(t.dl()->byte_offset == 0);
      CHECK(t.dl()->strides[0] == 5);
      CHECK(t.dl()->strides[1] == 1);
      CHECK(t.t->flags == flags);
      uint64_t nbytes = 0;
      REQUIRE(dlb_tensor_byte_size(t.dl(), flags, &nbytes, nullptr) == DLB_OK);
      CHECK(raw::buffer_size(t.dl()->data) == nbytes);
    }
  }
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("empty tensors get a one-byte buffer; 0-d tensors one element") {
  const int64_t live = dlb_tensor_live_count();
  dlb_error error = fresh_error();
  const int64_t empty_shape[2] = {4, 0};
  Owned empty;
  REQUIRE(dlb_tensor_allocate(kOpenCL, parse("float64"), 2, empty_shape, nullptr, 0, empty.out(),
                              &error) == DLB_OK);
  CHECK(empty.dl()->data != nullptr);
  CHECK(raw::buffer_size(empty.dl()->data) == 1);
  Owned scalar;
  REQUIRE(dlb_tensor_allocate(kOpenCL, parse("complex64"), 0, nullptr, nullptr, 0, scalar.out(),
                              &error) == DLB_OK);
  CHECK(raw::buffer_size(scalar.dl()->data) == 8);
  // Negative strides: byte_offset points at the first element (a cl_mem handle cannot move;
  // on the CPU data itself points there).
  const int64_t shape[2] = {3, 4};
  const int64_t strides[2] = {-4, 1};
  Owned reversed;
  REQUIRE(dlb_tensor_allocate(kOpenCL, parse("int32"), 2, shape, strides, 0, reversed.out(),
                              &error) == DLB_OK);
  CHECK(reversed.dl()->byte_offset == 32);
  CHECK(raw::buffer_size(reversed.dl()->data) == 48);
  CHECK(msg(error) == kUntouched);
  empty = Owned();
  scalar = Owned();
  reversed = Owned();
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("allocations beyond the device's largest buffer: DLB_ERR_OUT_OF_MEMORY") {
  cl_ulong max_alloc = 0;
  REQUIRE(cl.clGetDeviceInfo(cl.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc),
                             &max_alloc, nullptr) == CL_SUCCESS);
  const int64_t shape[1] = {static_cast<int64_t>(max_alloc) + 1};
  DLManagedTensorVersioned* out = reinterpret_cast<DLManagedTensorVersioned*>(0x1);
  dlb_error error = fresh_error();
  CHECK(dlb_tensor_allocate(kOpenCL, parse("uint8"), 1, shape, nullptr, 0, &out, &error) ==
        DLB_ERR_OUT_OF_MEMORY);
  CHECK(out == nullptr);
  CHECK(msg(error) == "cannot allocate " + std::to_string(max_alloc + 1) +
                          " bytes on opencl:0: the device allows at most " +
                          std::to_string(max_alloc) + " bytes in one buffer");
}

TEST_CASE("device ids that do not exist are refused everywhere") {
  const int64_t live = dlb_tensor_live_count();
  const int32_t id = cl.device_count + 4;
  const DLDevice missing{kDLOpenCL, id};
  const int64_t shape[1] = {4};
  dlb_error error = fresh_error();
  DLManagedTensorVersioned* out = nullptr;
  CHECK(dlb_tensor_allocate(missing, parse("float32"), 1, shape, nullptr, 0, &out, &error) ==
        DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == missing_device(id));
  CHECK(out == nullptr);
  CHECK(dlb_device_synchronize(missing, nullptr, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == missing_device(id));
  {
    Owned host = host_tensor(parse("float32"), {4}, 1);
    CHECK(dlb_tensor_copy(host.t, missing, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(error) == missing_device(id));
  }
  // The core refuses negative ids before the backend sees them.
  CHECK(dlb_tensor_allocate(DLDevice{kDLOpenCL, -1}, parse("float32"), 1, shape, nullptr, 0, &out,
                            &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "device_id -1 is negative");
  // Wrapping a real buffer under a device id that does not exist.
  cl_mem mem = raw::buffer(16);
  DLTensor desc{mem, missing, 1, parse("float32"), const_cast<int64_t*>(shape), nullptr, 0};
  CHECK(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == missing_device(id));
  cl.clReleaseMemObject(mem);
  CHECK(dlb_tensor_live_count() == live);
}

// ================================================================================================
// Copies: the layout matrix
// ================================================================================================

TEST_CASE("layout matrix: host -> OpenCL -> host and OpenCL views, byte-exact") {
  const int64_t live = dlb_tensor_live_count();
  uint32_t seed = 100;
  for (const char* dtype_name : kMatrixDtypes) {
    const DLDataType dtype = parse(dtype_name);
    for (const Layout& layout : layouts()) {
      CAPTURE(dtype_name);
      CAPTURE(layout.name);
      dlb_error error = fresh_error();

      // Upload a base tensor; the same view on the host and on the device.
      Owned host_base = host_tensor(dtype, layout.base_shape, ++seed);
      Owned device_base = copy_to(host_base, kOpenCL);
      CHECK((device_base.t->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
      CHECK(read_buffer(device_base.dl()->data).size() >= host_elements(host_base.dl()).size());
      CHECK(device_elements(device_base.dl()) == host_elements(host_base.dl()));
      Owned host_view = apply(layout, host_base);
      Owned device_view = apply(layout, device_base);
      const std::vector<unsigned char> expected = host_elements(host_view.dl());

      // (a) OpenCL view -> new CPU tensor.
      Owned to_host = copy_to(device_view, kCpu);
      CHECK(shape_of(to_host.dl()) == shape_of(host_view.dl()));
      CHECK(dlb_tensor_is_c_contiguous(to_host.dl()) == 1);
      CHECK(host_elements(to_host.dl()) == expected);
      CHECK((to_host.t->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);

      // (b) OpenCL view -> new compact OpenCL tensor.
      Owned on_device = copy_to(device_view, kOpenCL);
      CHECK(dlb_tensor_is_c_contiguous(on_device.dl()) == 1);
      CHECK(device_elements(on_device.dl()) == expected);
      CHECK((on_device.t->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);

      // (c) Host view (often not contiguous) -> OpenCL -> host.
      Owned round_trip = copy_to(copy_to(host_view, kOpenCL), kCpu);
      CHECK(host_elements(round_trip.dl()) == expected);

      // (d) copy_into an OpenCL view from compact host data: only the view's elements change.
      {
        Owned target_host = host_tensor(dtype, layout.base_shape, ++seed);
        Owned target_device = copy_to(target_host, kOpenCL);
        Owned target_host_view = apply(layout, target_host);
        Owned target_device_view = apply(layout, target_device);
        Owned source = host_tensor(dtype, shape_of(host_view.dl()), ++seed);
        REQUIRE(dlb_tensor_copy_into(source.t, target_device_view.t, &error) == DLB_OK);
        REQUIRE(dlb_tensor_copy_into(source.t, target_host_view.t, &error) == DLB_OK);
        const std::vector<unsigned char> device_bytes = read_buffer(target_device.dl()->data);
        const std::vector<unsigned char> host_bytes = host_elements(target_host.dl());
        const auto host_end = device_bytes.begin() + static_cast<long>(host_bytes.size());
        CHECK(std::vector<unsigned char>(device_bytes.begin(), host_end) == host_bytes);
      }

      // (e) copy_into between two OpenCL views of different buffers, and an OpenCL view into
      // a host view.
      {
        Owned target_host = host_tensor(dtype, layout.base_shape, ++seed);
        Owned target_device = copy_to(target_host, kOpenCL);
        Owned target_host_view = apply(layout, target_host);
        Owned target_device_view = apply(layout, target_device);
        REQUIRE(dlb_tensor_copy_into(device_view.t, target_device_view.t, &error) == DLB_OK);
        REQUIRE(dlb_tensor_copy_into(host_view.t, target_host_view.t, &error) == DLB_OK);
        CHECK(device_elements(target_device.dl()) == host_elements(target_host.dl()));

        Owned other_host = host_tensor(dtype, layout.base_shape, ++seed);
        Owned other_view = apply(layout, other_host);
        Owned expected_host = host_tensor(dtype, layout.base_shape, seed);
        Owned expected_view = apply(layout, expected_host);
        REQUIRE(dlb_tensor_copy_into(device_view.t, other_view.t, &error) == DLB_OK);
        REQUIRE(dlb_tensor_copy_into(host_view.t, expected_view.t, &error) == DLB_OK);
        CHECK(host_elements(other_host.dl()) == host_elements(expected_host.dl()));
      }
      CHECK(msg(error) == kUntouched);
    }
  }
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("dense layouts other than C order move in one transfer and stay exact") {
  const int64_t live = dlb_tensor_live_count();
  dlb_error error = fresh_error();
  {
  // Fortran order on both sides.
  Owned host = host_tensor(parse("float32"), {7, 5}, 3);
  Owned fortran_host;
  REQUIRE(dlb_tensor_transpose(host.t, fortran_host.out(), &error) == DLB_OK);
  const int64_t shape[2] = {5, 7};
  const int64_t strides[2] = {1, 5};
  Owned fortran_device;
  REQUIRE(dlb_tensor_allocate(kOpenCL, parse("float32"), 2, shape, strides, 0,
                              fortran_device.out(), &error) == DLB_OK);
  REQUIRE(dlb_tensor_copy_into(fortran_host.t, fortran_device.t, &error) == DLB_OK);
  CHECK(read_buffer(fortran_device.dl()->data) == host_elements(host.dl()));
  Owned back = host_tensor(parse("float32"), {7, 5}, 4);
  Owned back_view;
  REQUIRE(dlb_tensor_transpose(back.t, back_view.out(), &error) == DLB_OK);
  REQUIRE(dlb_tensor_copy_into(fortran_device.t, back_view.t, &error) == DLB_OK);
  CHECK(host_elements(back.dl()) == host_elements(host.dl()));
  }
  CHECK(msg(error) == kUntouched);
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("OpenCL <-> CPU through dlb_tensor_copy") {
  const int64_t live = dlb_tensor_live_count();
  {
  Owned host = host_tensor(parse("int32"), {33, 17}, 9);
  Owned device = copy_to(host, kOpenCL);
  CHECK(device.dl()->device.device_type == kDLOpenCL);
  CHECK(device.dl()->device.device_id == 0);
  CHECK(device.t->flags == DLPACK_FLAG_BITMASK_IS_COPIED);
  CHECK(read_buffer(device.dl()->data) == host_elements(host.dl()));
  Owned back = copy_to(device, kCpu);
  CHECK(back.dl()->device.device_type == kDLCPU);
  CHECK(back.t->flags == DLPACK_FLAG_BITMASK_IS_COPIED);
  CHECK(host_elements(back.dl()) == host_elements(host.dl()));
  // A read-only source gives a writable copy.
  Owned read_only;
  REQUIRE(dlb_tensor_share(device.t, DLPACK_FLAG_BITMASK_READ_ONLY, read_only.out(), nullptr) ==
          DLB_OK);
  Owned writable = copy_to(read_only, kCpu);
  CHECK(writable.t->flags == DLPACK_FLAG_BITMASK_IS_COPIED);
  dlb_error error = fresh_error();
  CHECK(dlb_tensor_copy_into(host.t, read_only.t, &error) == DLB_ERR_READ_ONLY);
  CHECK(msg(error) == "cannot copy into a read-only tensor");
  }
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("views of OpenCL tensors keep data and move byte_offset") {
  const int64_t live = dlb_tensor_live_count();
  Owned host = host_tensor(parse("float64"), {6, 8}, 11);
  Owned device = copy_to(host, kOpenCL);
  void* const handle = device.dl()->data;
  dlb_error error = fresh_error();
  Owned sliced;
  REQUIRE(slice_view(device.t, {sl(5, 1, -2), sl(3, 7)}, sliced.out()) == DLB_OK);
  CHECK(sliced.dl()->data == handle);
  CHECK(sliced.dl()->byte_offset == (5 * 8 + 3) * 8);
  CHECK(sliced.dl()->strides[0] == -16);
  CHECK(sliced.dl()->strides[1] == 1);
  Owned selected;
  REQUIRE(dlb_tensor_select(device.t, 1, 6, selected.out(), &error) == DLB_OK);
  CHECK(selected.dl()->data == handle);
  CHECK(selected.dl()->byte_offset == 6 * 8);
  Owned transposed;
  REQUIRE(dlb_tensor_transpose(sliced.t, transposed.out(), &error) == DLB_OK);
  CHECK(transposed.dl()->data == handle);
  CHECK(transposed.dl()->byte_offset == sliced.dl()->byte_offset);
  Owned reshaped;
  const int64_t shape[3] = {2, 3, 8};
  REQUIRE(dlb_tensor_reshape(device.t, 3, shape, reshaped.out(), &error) == DLB_OK);
  CHECK(reshaped.dl()->data == handle);
  CHECK(reshaped.dl()->byte_offset == 0);
  // A view of a view, freed after its source, still reads the right elements.
  Owned nested;
  REQUIRE(dlb_tensor_select(transposed.t, 0, 2, nested.out(), &error) == DLB_OK);
  CHECK(nested.dl()->data == handle);
  CHECK(nested.dl()->byte_offset == (5 * 8 + 5) * 8);
  device = Owned();
  sliced = Owned();
  transposed = Owned();
  Owned values = copy_to(nested, kCpu);
  Owned host_nested;
  {
    Owned a, b;
    REQUIRE(slice_view(host.t, {sl(5, 1, -2), sl(3, 7)}, a.out()) == DLB_OK);
    REQUIRE(dlb_tensor_transpose(a.t, b.out(), &error) == DLB_OK);
    REQUIRE(dlb_tensor_select(b.t, 0, 2, host_nested.out(), &error) == DLB_OK);
  }
  CHECK(host_elements(values.dl()) == host_elements(host_nested.dl()));
  // An opaque-handle view cannot start before its buffer.
  Owned reversed;
  const int64_t rshape[1] = {4};
  const int64_t rstrides[1] = {-1};
  REQUIRE(dlb_tensor_allocate(kOpenCL, parse("int8"), 1, rshape, rstrides, 0, reversed.out(),
                              &error) == DLB_OK);
  CHECK(reversed.dl()->byte_offset == 3);
  CHECK(msg(error) == kUntouched);
  selected = Owned();
  reshaped = Owned();
  nested = Owned();
  values = Owned();
  host_nested = Owned();
  reversed = Owned();
  host = Owned();
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("copy_into within one buffer behaves as if through a temporary") {
  const int64_t live = dlb_tensor_live_count();
  dlb_error error = fresh_error();
  SUBCASE("shifted 1-d ranges (dense, same strides)") {
    Owned host = host_tensor(parse("int32"), {16}, 21);
    Owned device = copy_to(host, kOpenCL);
    Owned a, b;
    REQUIRE(slice_view(device.t, {sl(0, 12)}, a.out()) == DLB_OK);
    REQUIRE(slice_view(device.t, {sl(4, 16)}, b.out()) == DLB_OK);
    REQUIRE(dlb_tensor_copy_into(a.t, b.t, &error) == DLB_OK);
    std::vector<unsigned char> expected = host_elements(host.dl());
    std::memmove(expected.data() + 16, expected.data(), 48);
    CHECK(read_buffer(device.dl()->data) == expected);
    // And back the other way.
    REQUIRE(dlb_tensor_copy_into(b.t, a.t, &error) == DLB_OK);
    std::memmove(expected.data(), expected.data() + 16, 48);
    CHECK(read_buffer(device.dl()->data) == expected);
  }
  SUBCASE("in-place transpose of a square matrix") {
    Owned host = host_tensor(parse("float32"), {40, 40}, 22);
    Owned device = copy_to(host, kOpenCL);
    Owned transposed;
    REQUIRE(dlb_tensor_transpose(device.t, transposed.out(), &error) == DLB_OK);
    REQUIRE(dlb_tensor_copy_into(transposed.t, device.t, &error) == DLB_OK);
    Owned host_t;
    REQUIRE(dlb_tensor_transpose(host.t, host_t.out(), &error) == DLB_OK);
    CHECK(read_buffer(device.dl()->data) == host_elements(host_t.dl()));
  }
  SUBCASE("reversing a vector in place") {
    Owned host = host_tensor(parse("complex128"), {9}, 23);
    Owned device = copy_to(host, kOpenCL);
    Owned reversed;
    REQUIRE(slice_view(device.t, {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1)}, reversed.out()) ==
            DLB_OK);
    REQUIRE(dlb_tensor_copy_into(reversed.t, device.t, &error) == DLB_OK);
    Owned host_reversed;
    REQUIRE(slice_view(host.t, {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1)}, host_reversed.out()) ==
            DLB_OK);
    CHECK(read_buffer(device.dl()->data) == host_elements(host_reversed.dl()));
  }
  SUBCASE("a tensor onto itself") {
    Owned host = host_tensor(parse("int16"), {5, 6}, 24);
    Owned device = copy_to(host, kOpenCL);
    Owned same, view;
    REQUIRE(slice_view(device.t, {all(), sl(DLB_SLICE_NONE, DLB_SLICE_NONE, 2)}, view.out()) ==
            DLB_OK);
    REQUIRE(dlb_tensor_share(view.t, 0, same.out(), nullptr) == DLB_OK);
    REQUIRE(dlb_tensor_copy_into(view.t, same.t, &error) == DLB_OK);
    CHECK(read_buffer(device.dl()->data) == host_elements(host.dl()));
  }
  SUBCASE("interleaved columns of one matrix (overlapping spans, disjoint elements)") {
    Owned host = host_tensor(parse("float64"), {6, 8}, 25);
    Owned device = copy_to(host, kOpenCL);
    Owned even, odd, host_even, host_odd;
    REQUIRE(slice_view(device.t, {all(), sl(0, DLB_SLICE_NONE, 2)}, even.out()) == DLB_OK);
    REQUIRE(slice_view(device.t, {all(), sl(1, DLB_SLICE_NONE, 2)}, odd.out()) == DLB_OK);
    REQUIRE(slice_view(host.t, {all(), sl(0, DLB_SLICE_NONE, 2)}, host_even.out()) == DLB_OK);
    REQUIRE(slice_view(host.t, {all(), sl(1, DLB_SLICE_NONE, 2)}, host_odd.out()) == DLB_OK);
    REQUIRE(dlb_tensor_copy_into(even.t, odd.t, &error) == DLB_OK);
    REQUIRE(dlb_tensor_copy_into(host_even.t, host_odd.t, &error) == DLB_OK);
    CHECK(read_buffer(device.dl()->data) == host_elements(host.dl()));
  }
  CHECK(msg(error) == kUntouched);
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("sub-byte data (packed int4) round-trips through host staging") {
  const int64_t live = dlb_tensor_live_count();
  dlb_error error = fresh_error();
  {
  const DLDataType int4 = parse("int4");
  Owned host = host_tensor(int4, {6, 4}, 31);  // 2 bytes per row, 12 bytes
  Owned device = copy_to(host, kOpenCL);
  CHECK(read_buffer(device.dl()->data) ==
        std::vector<unsigned char>(static_cast<unsigned char*>(host.dl()->data),
                                   static_cast<unsigned char*>(host.dl()->data) + 12));
  Owned back = copy_to(device, kCpu);
  CHECK(std::memcmp(back.dl()->data, host.dl()->data, 12) == 0);
  // A strided packed view: rows 1..4 reversed (byte-aligned), transposed.
  Owned rows, transposed, host_rows, host_transposed;
  REQUIRE(slice_view(device.t, {sl(4, 0, -1)}, rows.out()) == DLB_OK);
  REQUIRE(dlb_tensor_transpose(rows.t, transposed.out(), &error) == DLB_OK);
  REQUIRE(slice_view(host.t, {sl(4, 0, -1)}, host_rows.out()) == DLB_OK);
  REQUIRE(dlb_tensor_transpose(host_rows.t, host_transposed.out(), &error) == DLB_OK);
  Owned packed_device = copy_to(transposed, kOpenCL);
  Owned packed_host = copy_to(host_transposed, kCpu);
  Owned from_device = copy_to(packed_device, kCpu);
  CHECK(std::memcmp(from_device.dl()->data, packed_host.dl()->data, 8) == 0);
  // The nibbles themselves: element (i, j) of the transposed view is host element (4 - j, i).
  auto nibble = [](const DLTensor* t, int64_t linear) {
    const auto* bytes = static_cast<const unsigned char*>(t->data);
    return (bytes[linear / 2] >> (4 * (linear % 2))) & 0xF;
  };
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      CHECK(nibble(from_device.dl(), i * 4 + j) == nibble(host.dl(), (4 - j) * 4 + i));
    }
  }
  // Padded int4 (one byte per element) is copied byte for byte, padding bits included, as the
  // core's host copy does.
  Owned padded;
  const int64_t shape[1] = {5};
  REQUIRE(dlb_tensor_allocate(kCpu, int4, 1, shape, nullptr,
                              DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, padded.out(), &error) ==
          DLB_OK);
  const unsigned char padded_bytes[5] = {0x01, 0xF2, 0x03, 0x74, 0x05};
  std::memcpy(padded.dl()->data, padded_bytes, 5);
  Owned padded_device = copy_to(padded, kOpenCL);
  CHECK(padded_device.t->flags ==
        (DLPACK_FLAG_BITMASK_IS_COPIED | DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED));
  CHECK(read_buffer(padded_device.dl()->data) ==
        std::vector<unsigned char>(padded_bytes, padded_bytes + 5));
  Owned padded_back = copy_to(padded_device, kCpu);
  CHECK(std::memcmp(padded_back.dl()->data, padded_bytes, 5) == 0);
  // A strided padded copy runs on the device, byte for byte like the host's.
  Owned padded_matrix;
  const int64_t matrix_shape[2] = {9, 11};
  REQUIRE(dlb_tensor_allocate(kCpu, int4, 2, matrix_shape, nullptr,
                              DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, padded_matrix.out(),
                              &error) == DLB_OK);
  fill(padded_matrix.dl()->data, 99, 32);
  Owned padded_matrix_device = copy_to(padded_matrix, kOpenCL);
  Owned device_t, host_t;
  REQUIRE(dlb_tensor_transpose(padded_matrix_device.t, device_t.out(), &error) == DLB_OK);
  REQUIRE(dlb_tensor_transpose(padded_matrix.t, host_t.out(), &error) == DLB_OK);
  Owned from_device_t = copy_to(device_t, kCpu);
  Owned from_host_t = copy_to(host_t, kCpu);
  CHECK(from_device_t.t->flags == from_host_t.t->flags);
  CHECK(std::memcmp(from_device_t.dl()->data, from_host_t.dl()->data, 99) == 0);
  }
  CHECK(msg(error) == kUntouched);
  CHECK(dlb_tensor_live_count() == live);
}

// ================================================================================================
// Streams
// ================================================================================================

TEST_CASE("asynchronous copies on a caller's queue complete after dlb_device_synchronize") {
  const int64_t live = dlb_tensor_live_count();
  CallerQueue caller;
  dlb_error error = fresh_error();
  {
  Owned host = host_tensor(parse("float32"), {256, 300}, 41);
  Owned device;
  REQUIRE(dlb_tensor_copy_async(host.t, kOpenCL, caller.queue, device.out(), &error) == DLB_OK);
  CHECK((device.t->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
  REQUIRE(dlb_device_synchronize(kOpenCL, caller.queue, &error) == DLB_OK);
  CHECK(read_buffer(device.dl()->data) == host_elements(host.dl()));

  // A strided device copy and a copy back, both queued, then one wait.
  Owned transposed, compact;
  REQUIRE(dlb_tensor_transpose(device.t, transposed.out(), &error) == DLB_OK);
  REQUIRE(dlb_tensor_copy_async(transposed.t, kOpenCL, caller.queue, compact.out(), &error) ==
          DLB_OK);
  Owned back = host_tensor(parse("float32"), {300, 256}, 42);
  REQUIRE(dlb_tensor_copy_into_async(compact.t, back.t, caller.queue, &error) == DLB_OK);
  REQUIRE(dlb_device_synchronize(kOpenCL, caller.queue, &error) == DLB_OK);
  Owned host_t;
  REQUIRE(dlb_tensor_transpose(host.t, host_t.out(), &error) == DLB_OK);
  CHECK(host_elements(back.dl()) == host_elements(host_t.dl()));

  // Host -> strided device view, queued (write into a temporary, then the kernel).
  Owned target_view;
  REQUIRE(slice_view(device.t, {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1), sl(0, 150)},
                     target_view.out()) == DLB_OK);
  Owned source = host_tensor(parse("float32"), {256, 150}, 43);
  REQUIRE(dlb_tensor_copy_into_async(source.t, target_view.t, caller.queue, &error) == DLB_OK);
  REQUIRE(dlb_device_synchronize(kOpenCL, caller.queue, &error) == DLB_OK);
  Owned host_view;
  REQUIRE(slice_view(host.t, {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1), sl(0, 150)},
                     host_view.out()) == DLB_OK);
  REQUIRE(dlb_tensor_copy_into(source.t, host_view.t, &error) == DLB_OK);
  CHECK(read_buffer(device.dl()->data) == host_elements(host.dl()));

  // Sub-byte data is staged through the host and complete on return, even with a queue.
  Owned int4 = host_tensor(parse("int4"), {7}, 44);
  Owned int4_device;
  REQUIRE(dlb_tensor_copy_async(int4.t, kOpenCL, caller.queue, int4_device.out(), &error) ==
          DLB_OK);
  REQUIRE(dlb_device_synchronize(kOpenCL, caller.queue, &error) == DLB_OK);
  // Seven nibbles: the upper half of the last byte is not an element.
  const std::vector<unsigned char> int4_bytes = read_buffer(int4_device.dl()->data);
  REQUIRE(int4_bytes.size() == 4);
  CHECK(std::memcmp(int4_bytes.data(), int4.dl()->data, 3) == 0);
  CHECK((int4_bytes[3] & 0xF) == (static_cast<unsigned char*>(int4.dl()->data)[3] & 0xF));
  // NULL: the library's queue.
  CHECK(dlb_device_synchronize(kOpenCL, nullptr, &error) == DLB_OK);
  }
  CHECK(msg(error) == kUntouched);
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("a queue of another context is not used for the library's buffers") {
  const int64_t live = dlb_tensor_live_count();
  {
    raw::OtherContext other;
    CallerQueue foreign(other.context);
    dlb_error error = fresh_error();
    Owned host = host_tensor(parse("int64"), {20, 30}, 51);
    Owned device;
    // The copy runs on the library's queue instead and is complete on return.
    REQUIRE(dlb_tensor_copy_async(host.t, kOpenCL, foreign.queue, device.out(), &error) == DLB_OK);
    CHECK(read_buffer(device.dl()->data) == host_elements(host.dl()));
    Owned transposed, back;
    REQUIRE(dlb_tensor_transpose(device.t, transposed.out(), &error) == DLB_OK);
    REQUIRE(dlb_tensor_copy_async(transposed.t, kCpu, foreign.queue, back.out(), &error) == DLB_OK);
    Owned host_t;
    REQUIRE(dlb_tensor_transpose(host.t, host_t.out(), &error) == DLB_OK);
    CHECK(host_elements(back.dl()) == host_elements(host_t.dl()));
    CHECK(msg(error) == kUntouched);
  }
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("the queue handshake orders work across queues") {
  const int64_t live = dlb_tensor_live_count();
  CallerQueue producer, consumer;
  dlb_error error = fresh_error();
  Owned host = host_tensor(parse("float32"), {512, 512}, 61);
  Owned device;
  REQUIRE(dlb_tensor_copy_async(host.t, kOpenCL, producer.queue, device.out(), &error) == DLB_OK);
  Owned transposed;
  REQUIRE(dlb_tensor_transpose(device.t, transposed.out(), &error) == DLB_OK);
  REQUIRE(dlb_opencl_queue_handshake(producer.queue, consumer.queue, &error) == DLB_OK);
  Owned result;
  REQUIRE(dlb_tensor_copy_async(transposed.t, kOpenCL, consumer.queue, result.out(), &error) ==
          DLB_OK);
  REQUIRE(dlb_device_synchronize(kOpenCL, consumer.queue, &error) == DLB_OK);
  Owned host_t;
  REQUIRE(dlb_tensor_transpose(host.t, host_t.out(), &error) == DLB_OK);
  CHECK(read_buffer(result.dl()->data) == host_elements(host_t.dl()));
  // The same queue on both sides: nothing to do.
  CHECK(dlb_opencl_queue_handshake(producer.queue, producer.queue, &error) == DLB_OK);
  CHECK(dlb_opencl_queue_handshake(cl.queue, consumer.queue, &error) == DLB_OK);
  CHECK(msg(error) == kUntouched);
  CHECK(dlb_opencl_queue_handshake(nullptr, consumer.queue, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "producer queue is NULL");
  CHECK(dlb_opencl_queue_handshake(producer.queue, nullptr, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(error) == "consumer queue is NULL");
  {
    raw::OtherContext other;
    CallerQueue foreign(other.context);
    CHECK(dlb_opencl_queue_handshake(producer.queue, foreign.queue, &error) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(error) == "the producer and consumer queues belong to different OpenCL contexts");
  }
  REQUIRE(dlb_device_synchronize(kOpenCL, producer.queue, &error) == DLB_OK);
  device = Owned();
  transposed = Owned();
  result = Owned();
  host_t = Owned();
  host = Owned();
  CHECK(dlb_tensor_live_count() == live);
}

// ================================================================================================
// Buffers made outside the library: wrap, import, check_memory
// ================================================================================================

namespace {

struct ReleaseCounter {
  std::atomic<int> calls{0};
  cl_mem mem = nullptr;
};

void release_buffer(void* ctx) {
  auto* counter = static_cast<ReleaseCounter*>(ctx);
  counter->calls++;
  cl.clReleaseMemObject(counter->mem);
}

// A foreign producer's versioned tensor over a cl_mem; the deleter counts and releases it.
struct ForeignBuffer {
  DLManagedTensorVersioned managed{};
  int64_t shape[2] = {};
  int64_t strides[2] = {};
  ReleaseCounter* counter = nullptr;
  static void deleter(DLManagedTensorVersioned* self) {
    auto* foreign = static_cast<ForeignBuffer*>(self->manager_ctx);
    release_buffer(foreign->counter);
    delete foreign;
  }
};

ForeignBuffer* make_foreign(ReleaseCounter& counter, cl_mem mem, int64_t rows, int64_t cols,
                            uint64_t byte_offset) {
  auto* f = new ForeignBuffer();
  counter.mem = mem;
  f->counter = &counter;
  f->shape[0] = rows;
  f->shape[1] = cols;
  f->strides[0] = cols;
  f->strides[1] = 1;
  f->managed.version = DLPackVersion{1, 3};
  f->managed.manager_ctx = f;
  f->managed.deleter = &ForeignBuffer::deleter;
  DLTensor& t = f->managed.dl_tensor;
  t.data = mem;
  t.device = kOpenCL;
  t.ndim = 2;
  t.dtype = parse("float32");
  t.shape = f->shape;
  t.strides = f->strides;
  t.byte_offset = byte_offset;
  return f;
}

}  // namespace

TEST_CASE("wrap and import a cl_mem made by the caller") {
  const int64_t live = dlb_tensor_live_count();
  dlb_error error = fresh_error();
  std::vector<unsigned char> bytes(256);
  fill(bytes.data(), bytes.size(), 71);
  SUBCASE("wrap with a release callback") {
    ReleaseCounter counter;
    counter.mem = raw::buffer(256);
    write_buffer(counter.mem, bytes);
    int64_t shape[2] = {6, 8};
    DLTensor desc{counter.mem, kOpenCL, 2, parse("float32"), shape, nullptr, 32};
    Owned wrapped;
    REQUIRE(dlb_tensor_wrap(&desc, 0, release_buffer, &counter, wrapped.out(), &error) == DLB_OK);
    CHECK(wrapped.dl()->data == counter.mem);
    Owned host = copy_to(wrapped, kCpu);
    CHECK(host_elements(host.dl()) ==
          std::vector<unsigned char>(bytes.begin() + 32, bytes.begin() + 32 + 192));
    // A view outlives the wrapped tensor; the buffer is released with the last of them.
    Owned view;
    REQUIRE(dlb_tensor_transpose(wrapped.t, view.out(), &error) == DLB_OK);
    wrapped = Owned();
    CHECK(counter.calls.load() == 0);
    Owned transposed = copy_to(view, kCpu);
    Owned host_t;
    REQUIRE(dlb_tensor_transpose(host.t, host_t.out(), &error) == DLB_OK);
    CHECK(host_elements(transposed.dl()) == host_elements(host_t.dl()));
    view = Owned();
    CHECK(counter.calls.load() == 1);
  }
  SUBCASE("import a foreign versioned tensor") {
    ReleaseCounter counter;
    ForeignBuffer* foreign = make_foreign(counter, raw::buffer(256), 4, 8, 64);
    write_buffer(counter.mem, bytes);
    Owned imported;
    REQUIRE(dlb_tensor_import(&foreign->managed, imported.out(), &error) == DLB_OK);
    Owned host = copy_to(imported, kCpu);
    CHECK(host_elements(host.dl()) ==
          std::vector<unsigned char>(bytes.begin() + 64, bytes.begin() + 64 + 128));
    // Written through the library, read back raw.
    Owned source = host_tensor(parse("float32"), {4, 8}, 72);
    REQUIRE(dlb_tensor_copy_into(source.t, imported.t, &error) == DLB_OK);
    const std::vector<unsigned char> after = read_buffer(counter.mem);
    CHECK(std::vector<unsigned char>(after.begin() + 64, after.begin() + 192) ==
          host_elements(source.dl()));
    CHECK(std::vector<unsigned char>(after.begin(), after.begin() + 64) ==
          std::vector<unsigned char>(bytes.begin(), bytes.begin() + 64));
    imported = Owned();
    CHECK(counter.calls.load() == 1);
  }
  SUBCASE("a buffer of a context the library did not make") {
    {
      raw::OtherContext other;
      CallerQueue other_queue(other.context);
      ReleaseCounter counter;
      counter.mem = raw::buffer(256, CL_MEM_READ_WRITE, other.context);
      write_buffer(counter.mem, bytes, other_queue.queue);
      int64_t shape[2] = {8, 8};
      DLTensor desc{counter.mem, kOpenCL, 2, parse("float32"), shape, nullptr, 0};
      Owned wrapped;
      REQUIRE(dlb_tensor_wrap(&desc, 0, release_buffer, &counter, wrapped.out(), &error) == DLB_OK);
      // Strided copies out of and into it are staged through the host.
      Owned transposed;
      REQUIRE(dlb_tensor_transpose(wrapped.t, transposed.out(), &error) == DLB_OK);
      Owned on_library = copy_to(transposed, kOpenCL);
      Owned host = copy_to(wrapped, kCpu);
      Owned host_t;
      REQUIRE(dlb_tensor_transpose(host.t, host_t.out(), &error) == DLB_OK);
      CHECK(device_elements(on_library.dl()) == host_elements(host_t.dl()));
      REQUIRE(dlb_tensor_copy_into(on_library.t, wrapped.t, &error) == DLB_OK);
      CHECK(read_buffer(counter.mem, other_queue.queue) == host_elements(host_t.dl()));
      // Its own queue is used as a stream for it.
      Owned source = host_tensor(parse("float32"), {8, 8}, 73);
      REQUIRE(dlb_tensor_copy_into_async(source.t, wrapped.t, other_queue.queue, &error) == DLB_OK);
      REQUIRE(dlb_device_synchronize(kOpenCL, other_queue.queue, &error) == DLB_OK);
      CHECK(read_buffer(counter.mem, other_queue.queue) == host_elements(source.dl()));
      wrapped = Owned();
      transposed = Owned();
      CHECK(counter.calls.load() == 1);
    }
  }
  SUBCASE("a sub-buffer") {
    cl_mem parent = raw::buffer(512);
    std::vector<unsigned char> big(512);
    fill(big.data(), big.size(), 74);
    write_buffer(parent, big);
    cl_buffer_region region{128, 256};
    cl_int code = CL_SUCCESS;
    ReleaseCounter counter;
    counter.mem = cl.clCreateSubBuffer(parent, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                       &region, &code);
    REQUIRE(code == CL_SUCCESS);
    int64_t shape[1] = {64};
    DLTensor desc{counter.mem, kOpenCL, 1, parse("float32"), shape, nullptr, 0};
    Owned wrapped;
    REQUIRE(dlb_tensor_wrap(&desc, 0, release_buffer, &counter, wrapped.out(), &error) == DLB_OK);
    Owned host = copy_to(wrapped, kCpu);
    CHECK(host_elements(host.dl()) ==
          std::vector<unsigned char>(big.begin() + 128, big.begin() + 384));
    // The parent and the sub-buffer overlap: a copy between them goes through a temporary.
    int64_t parent_shape[1] = {64};
    DLTensor parent_desc{parent, kOpenCL, 1, parse("float32"), parent_shape, nullptr, 160};
    Owned parent_view;
    REQUIRE(dlb_tensor_wrap(&parent_desc, 0, nullptr, nullptr, parent_view.out(), &error) ==
            DLB_OK);
    REQUIRE(dlb_tensor_copy_into(parent_view.t, wrapped.t, &error) == DLB_OK);
    std::vector<unsigned char> expected = big;
    std::memmove(expected.data() + 128, expected.data() + 160, 256);
    CHECK(read_buffer(parent) == expected);
    wrapped = Owned();
    parent_view = Owned();
    CHECK(counter.calls.load() == 1);
    cl.clReleaseMemObject(parent);
  }
  CHECK(msg(error) == kUntouched);
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("check_memory refuses buffers that are too small and handles that are not cl_mem") {
  const int64_t live = dlb_tensor_live_count();
  dlb_error error = fresh_error();
  SUBCASE("wrap: refused, release not called, the caller still owns the buffer") {
    ReleaseCounter counter;
    counter.mem = raw::buffer(64);
    int64_t shape[1] = {32};
    DLTensor desc{counter.mem, kOpenCL, 1, parse("float32"), shape, nullptr, 0};
    DLManagedTensorVersioned* out = reinterpret_cast<DLManagedTensorVersioned*>(0x1);
    CHECK(dlb_tensor_wrap(&desc, 0, release_buffer, &counter, &out, &error) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(error) == "the cl_mem holds 64 bytes but the tensor's elements reach byte 128 "
                        "(byte_offset 0)");
    CHECK(out == nullptr);
    CHECK(counter.calls.load() == 0);
    // Just fitting, then one byte over through byte_offset.
    shape[0] = 16;
    REQUIRE(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &out, &error) == DLB_OK);
    dlb_tensor_free(out);
    desc.byte_offset = 4;
    CHECK(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(error) == "the cl_mem holds 64 bytes but the tensor's elements reach byte 68 "
                        "(byte_offset 4)");
    // Negative strides reach back from byte_offset.
    int64_t strides[1] = {-1};
    desc.strides = strides;
    desc.byte_offset = 60;
    REQUIRE(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &out, &error) == DLB_OK);
    dlb_tensor_free(out);
    desc.byte_offset = 64;
    CHECK(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(error) == "the cl_mem holds 64 bytes but the tensor's elements reach byte 68 "
                        "(byte_offset 64)");
    cl.clReleaseMemObject(counter.mem);
  }
  SUBCASE("import: refused, and the deleter still runs exactly once") {
    ReleaseCounter counter;
    ForeignBuffer* foreign = make_foreign(counter, raw::buffer(64), 4, 8, 0);
    DLManagedTensorVersioned* out = reinterpret_cast<DLManagedTensorVersioned*>(0x1);
    CHECK(dlb_tensor_import(&foreign->managed, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(error) == "the cl_mem holds 64 bytes but the tensor's elements reach byte 128 "
                        "(byte_offset 0)");
    CHECK(out == nullptr);
    CHECK(counter.calls.load() == 1);
  }
  SUBCASE("handles that are not OpenCL buffers") {
    int64_t shape[1] = {4};
    DLManagedTensorVersioned* out = nullptr;
    std::vector<unsigned char> host_memory(64, 0);
    for (void* handle : {reinterpret_cast<void*>(0x7), static_cast<void*>(host_memory.data())}) {
      DLTensor desc{handle, kOpenCL, 1, parse("float32"), shape, nullptr, 0};
      CHECK(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
      char expected[64];
      std::snprintf(expected, sizeof(expected), "data %p is not an OpenCL buffer (cl_mem)", handle);
      CHECK(msg(error) == expected);
      CHECK(out == nullptr);
    }
    // An image is an OpenCL memory object but not a buffer.
    cl_bool images = CL_FALSE;
    REQUIRE(cl.clGetDeviceInfo(cl.device, CL_DEVICE_IMAGE_SUPPORT, sizeof(images), &images,
                               nullptr) == CL_SUCCESS);
    if (images == CL_TRUE) {
      const cl_image_format format{CL_R, CL_UNSIGNED_INT8};
      cl_image_desc image_desc;
      std::memset(&image_desc, 0, sizeof(image_desc));
      image_desc.image_type = CL_MEM_OBJECT_IMAGE2D;
      image_desc.image_width = 4;
      image_desc.image_height = 4;
      cl_int code = CL_SUCCESS;
      cl_mem image = cl.clCreateImage(cl.context, CL_MEM_READ_WRITE, &format, &image_desc, nullptr,
                                      &code);
      REQUIRE(code == CL_SUCCESS);
      DLTensor desc{image, kOpenCL, 1, parse("float32"), shape, nullptr, 0};
      CHECK(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
      char expected[64];
      std::snprintf(expected, sizeof(expected), "data %p is an OpenCL image, not a buffer",
                    static_cast<void*>(image));
      CHECK(msg(error) == expected);
      cl.clReleaseMemObject(image);
    }
    // An empty tensor without memory needs no buffer.
    shape[0] = 0;
    DLTensor empty{nullptr, kOpenCL, 1, parse("float32"), shape, nullptr, 0};
    REQUIRE(dlb_tensor_wrap(&empty, 0, nullptr, nullptr, &out, &error) == DLB_OK);
    dlb_tensor_free(out);
  }
  CHECK(dlb_tensor_live_count() == live);
}

// ================================================================================================
// OpenCL errors and concurrency
// ================================================================================================

TEST_CASE("OpenCL errors name the call and the error code") {
  const int64_t live = dlb_tensor_live_count();
  dlb_error error = fresh_error();
  // A buffer the host may not read or write: transfers fail in OpenCL itself.
  cl_mem mem = raw::buffer(64, CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS);
  int64_t shape[1] = {16};
  DLTensor desc{mem, kOpenCL, 1, parse("float32"), shape, nullptr, 0};
  Owned wrapped;
  REQUIRE(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, wrapped.out(), &error) == DLB_OK);
  DLManagedTensorVersioned* out = reinterpret_cast<DLManagedTensorVersioned*>(0x1);
  CHECK(dlb_tensor_copy(wrapped.t, kCpu, &out, &error) == DLB_ERR_DEVICE);
  CHECK(msg(error) == "clEnqueueReadBuffer failed: CL_INVALID_OPERATION (-59)");
  CHECK(out == nullptr);
  Owned host = host_tensor(parse("float32"), {16}, 81);
  CHECK(dlb_tensor_copy_into(host.t, wrapped.t, &error) == DLB_ERR_DEVICE);
  CHECK(msg(error) == "clEnqueueWriteBuffer failed: CL_INVALID_OPERATION (-59)");
  // Kernels may still use it.
  Owned reversed, copy;
  REQUIRE(slice_view(wrapped.t, {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1)}, reversed.out()) ==
          DLB_OK);
  error = fresh_error();
  REQUIRE(dlb_tensor_copy(reversed.t, kOpenCL, copy.out(), &error) == DLB_OK);
  CHECK(msg(error) == kUntouched);
  wrapped = Owned();
  reversed = Owned();
  copy = Owned();
  host = Owned();
  cl.clReleaseMemObject(mem);
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("concurrent copies from many threads") {
  const int64_t live = dlb_tensor_live_count();
  constexpr int kThreads = 8;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([i, &failures] {
      for (int round = 0; round < 4; ++round) {
        const int64_t rows = 17 + i, cols = 29 + round;
        DLManagedTensorVersioned *host = nullptr, *device = nullptr, *view = nullptr,
                                 *back = nullptr, *host_view = nullptr, *expected = nullptr;
        const int64_t shape[2] = {rows, cols};
        bool ok = dlb_tensor_allocate(kCpu, parse("float64"), 2, shape, nullptr, 0, &host,
                                      nullptr) == DLB_OK;
        if (ok) fill(host->dl_tensor.data, static_cast<size_t>(rows * cols * 8), 1000u + i);
        ok = ok && dlb_tensor_copy(host, kOpenCL, &device, nullptr) == DLB_OK;
        ok = ok && dlb_tensor_transpose(device, &view, nullptr) == DLB_OK;
        ok = ok && dlb_tensor_copy(view, kCpu, &back, nullptr) == DLB_OK;
        ok = ok && dlb_tensor_transpose(host, &host_view, nullptr) == DLB_OK;
        ok = ok && dlb_tensor_copy(host_view, kCpu, &expected, nullptr) == DLB_OK;
        ok = ok && std::memcmp(back->dl_tensor.data, expected->dl_tensor.data,
                               static_cast<size_t>(rows * cols * 8)) == 0;
        if (!ok) failures++;
        for (DLManagedTensorVersioned* t : {host, device, view, back, host_view, expected}) {
          dlb_tensor_free(t);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(failures.load() == 0);
  CHECK(dlb_tensor_live_count() == live);
}

int main(int argc, char** argv) {
  g_self = argv[0];
  if (argc == 2 && std::strcmp(argv[1], "--probe") == 0) return probe();
  // --opencl-layout=gpu runs everything with the kernels laid out for GPUs (see
  // docs/opencl.md), whatever the device; it must be set before the kernels are built.
  if (argc >= 2 && std::strncmp(argv[1], "--opencl-layout=", 16) == 0) {
    setenv("DLB_OPENCL_LAYOUT", argv[1] + 16, 1);
    argv[1] = argv[0];
    ++argv;
    --argc;
  }
  const int skip = raw::check_opencl_or_skip();
  if (skip >= 0) return skip;
  doctest::Context context(argc, argv);
  return context.run();
}
