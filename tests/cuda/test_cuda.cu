// Suite 'cuda' on a machine with a GPU: allocation on every CUDA memory kind, byte-exact round
// trips for every dtype and layout, on-device strided copies, overlapping copies, the DLPack
// stream handshake for every consumer stream value, memory checks on import, and two-GPU paths
// (skipped with one GPU). Exits 77 without a usable GPU, unless DLB_REQUIRE_CUDA=1.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dlbridge/dlbridge.h"

namespace {

struct Free {
  void operator()(DLManagedTensorVersioned* t) const { dlb_tensor_free(t); }
};
using Tensor = std::unique_ptr<DLManagedTensorVersioned, Free>;

std::string message(const dlb_error& error) { return error.message; }

Tensor allocate(DLDevice device, DLDataType dtype, std::vector<int64_t> shape, uint64_t flags = 0) {
  DLManagedTensorVersioned* out = nullptr;
  dlb_error error;
  const int status = dlb_tensor_allocate(device, dtype, static_cast<int32_t>(shape.size()), shape.data(),
                                         nullptr, flags, &out, &error);
  INFO(error.message);
  REQUIRE(status == DLB_OK);
  return Tensor(out);
}

Tensor copy_to(const DLManagedTensorVersioned* src, DLDevice device, void* stream = nullptr) {
  DLManagedTensorVersioned* out = nullptr;
  dlb_error error;
  const int status = dlb_tensor_copy_async(src, device, stream, &out, &error);
  INFO(error.message);
  REQUIRE(status == DLB_OK);
  CHECK((out->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
  return Tensor(out);
}

uint64_t storage_bytes(const DLManagedTensorVersioned* t) {
  int64_t count = 0;
  REQUIRE(dlb_tensor_element_count(&t->dl_tensor, &count, nullptr) == DLB_OK);
  uint64_t bytes = 0;
  REQUIRE(dlb_dtype_storage_size(t->dl_tensor.dtype, count, t->flags, &bytes, nullptr) == DLB_OK);
  return bytes;
}

// Fills a compact CPU tensor with pseudo-random bytes.
void fill(DLManagedTensorVersioned* t, unsigned seed) {
  std::mt19937 rng(seed);
  unsigned char* bytes = static_cast<unsigned char*>(t->dl_tensor.data) + t->dl_tensor.byte_offset;
  const uint64_t n = storage_bytes(t);
  for (uint64_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(rng());
}

// Compact copies of two tensors on the CPU must hold the same bytes.
void check_same(const DLManagedTensorVersioned* a, const DLManagedTensorVersioned* b) {
  Tensor ha = copy_to(a, DLDevice{kDLCPU, 0});
  Tensor hb = copy_to(b, DLDevice{kDLCPU, 0});
  const uint64_t n = storage_bytes(ha.get());
  REQUIRE(storage_bytes(hb.get()) == n);
  CHECK(std::memcmp(ha->dl_tensor.data, hb->dl_tensor.data, static_cast<size_t>(n)) == 0);
}

using ViewFn = int (*)(DLManagedTensorVersioned*, DLManagedTensorVersioned**);

Tensor view(DLManagedTensorVersioned* base, ViewFn make) {
  DLManagedTensorVersioned* out = nullptr;
  REQUIRE(make(base, &out) == DLB_OK);
  return Tensor(out);
}

int transpose_view(DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
  return dlb_tensor_transpose(t, out, nullptr);
}
int reverse_step2_view(DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
  const dlb_slice slices[] = {{DLB_SLICE_NONE, DLB_SLICE_NONE, -1}, {1, DLB_SLICE_NONE, 2}};
  return dlb_tensor_slice(t, 2, slices, out, nullptr);
}
int offset_view(DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
  const dlb_slice slices[] = {{1, -1, 1}, {3, DLB_SLICE_NONE, 1}};  // a byte_offset view
  return dlb_tensor_slice(t, 2, slices, out, nullptr);
}
int empty_view(DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
  const dlb_slice slices[] = {{2, 2, 1}};
  return dlb_tensor_slice(t, 1, slices, out, nullptr);
}
int scalar_view(DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
  DLManagedTensorVersioned* row = nullptr;
  int status = dlb_tensor_select(t, 0, 5, &row, nullptr);
  if (status != DLB_OK) return status;
  status = dlb_tensor_select(row, 0, -3, out, nullptr);
  dlb_tensor_free(row);
  return status;
}

std::vector<DLDataType> all_dtypes() {
  return {
      {kDLInt, 8, 1},      {kDLInt, 16, 1},     {kDLInt, 32, 1},      {kDLInt, 64, 1},
      {kDLUInt, 8, 1},     {kDLUInt, 64, 1},    {kDLFloat, 16, 1},    {kDLFloat, 32, 1},
      {kDLFloat, 64, 1},   {kDLBfloat, 16, 1},  {kDLComplex, 64, 1},  {kDLComplex, 128, 1},
      {kDLBool, 8, 1},     {kDLFloat8_e4m3fn, 8, 1}, {kDLFloat, 32, 3}, {kDLFloat, 16, 3},
      {kDLInt, 4, 1},      {kDLFloat4_e2m1fn, 4, 1},
  };
}

__global__ void spin_then_fill(float* data, int n, float value, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  for (int i = threadIdx.x; i < n; i += blockDim.x) data[i] = value;
}

int32_t device_count() {
  int32_t count = 0;
  REQUIRE(dlb_cuda_device_count(&count, nullptr) == DLB_OK);
  return count;
}

}  // namespace

TEST_CASE("queries: devices and pointers") {
  const int32_t count = device_count();
  CHECK(count >= 1);
  CHECK(dlb_cuda_is_available(nullptr) == DLB_OK);
  void* device_memory = nullptr;
  void* pinned = nullptr;
  void* managed = nullptr;
  REQUIRE(cudaMalloc(&device_memory, 64) == cudaSuccess);
  REQUIRE(cudaMallocHost(&pinned, 64) == cudaSuccess);
  REQUIRE(cudaMallocManaged(&managed, 64) == cudaSuccess);
  int local = 0;
  DLDevice d;
  REQUIRE(dlb_cuda_pointer_device(device_memory, &d, nullptr) == DLB_OK);
  CHECK(d.device_type == kDLCUDA);
  CHECK(d.device_id == 0);
  REQUIRE(dlb_cuda_pointer_device(static_cast<char*>(device_memory) + 8, &d, nullptr) == DLB_OK);
  CHECK(d.device_type == kDLCUDA);
  REQUIRE(dlb_cuda_pointer_device(pinned, &d, nullptr) == DLB_OK);
  CHECK(d.device_type == kDLCUDAHost);
  REQUIRE(dlb_cuda_pointer_device(managed, &d, nullptr) == DLB_OK);
  CHECK(d.device_type == kDLCUDAManaged);
  REQUIRE(dlb_cuda_pointer_device(&local, &d, nullptr) == DLB_OK);
  CHECK(d.device_type == kDLCPU);
  REQUIRE(dlb_cuda_pointer_device(nullptr, &d, nullptr) == DLB_OK);
  CHECK(d.device_type == kDLCPU);
  cudaFree(device_memory);
  cudaFreeHost(pinned);
  cudaFree(managed);
}

TEST_CASE("allocation on every kind of CUDA memory, and bad device ids") {
  for (DLDevice device : {DLDevice{kDLCUDA, 0}, DLDevice{kDLCUDAHost, 0}, DLDevice{kDLCUDAManaged, 0}}) {
    CAPTURE(device.device_type);
    for (DLDataType dtype : all_dtypes()) {
      Tensor t = allocate(device, dtype, {3, 5});
      CHECK(t->dl_tensor.device.device_type == device.device_type);
      DLDevice where;
      REQUIRE(dlb_cuda_pointer_device(t->dl_tensor.data, &where, nullptr) == DLB_OK);
      CHECK(where.device_type == device.device_type);
    }
    Tensor empty = allocate(device, DLDataType{kDLFloat, 32, 1}, {0, 4});
    CHECK((empty->dl_tensor.data != nullptr));
  }
  const int32_t count = device_count();
  const int64_t shape[] = {2};
  DLManagedTensorVersioned* out = nullptr;
  dlb_error error;
  CHECK(dlb_tensor_allocate(DLDevice{kDLCUDA, count}, DLDataType{kDLFloat, 32, 1}, 1, shape, nullptr, 0,
                            &out, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(message(error) == "cuda device " + std::to_string(count) + " does not exist (" +
                              std::to_string(count) + " visible)");
  CHECK(dlb_tensor_allocate(DLDevice{kDLCUDAHost, 1}, DLDataType{kDLFloat, 32, 1}, 1, shape, nullptr, 0,
                            &out, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(message(error) == "cuda_host memory uses device_id 0 (the DLPack convention), not 1");
  CHECK(dlb_tensor_allocate(DLDevice{kDLCUDAManaged, 2}, DLDataType{kDLFloat, 32, 1}, 1, shape, nullptr,
                            0, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(message(error) == "cuda_managed memory uses device_id 0 (the DLPack convention), not 2");
}

TEST_CASE("round trips for every dtype and layout, host <-> device and on the device") {
  const DLDevice cpu{kDLCPU, 0}, gpu{kDLCUDA, 0};
  const ViewFn views[] = {transpose_view, reverse_step2_view, offset_view, empty_view, scalar_view};
  for (DLDataType dtype : all_dtypes()) {
    CAPTURE(static_cast<int>(dtype.code));
    CAPTURE(static_cast<int>(dtype.bits));
    CAPTURE(static_cast<int>(dtype.lanes));
    Tensor host = allocate(cpu, dtype, {37, 70});
    fill(host.get(), dtype.code * 1000u + dtype.bits * 10u + dtype.lanes);
    // contiguous there and back
    Tensor device = copy_to(host.get(), gpu);
    CHECK(device->dl_tensor.device.device_type == kDLCUDA);
    check_same(device.get(), host.get());
    for (ViewFn make : views) {
      // The same view of the same data, on each side. Views of packed sub-byte data must start
      // on a byte: where the host refuses one, the device must refuse it the same way.
      DLManagedTensorVersioned* hv = nullptr;
      DLManagedTensorVersioned* dv = nullptr;
      const int host_status = make(host.get(), &hv);
      const int device_status = make(device.get(), &dv);
      Tensor host_view(hv), device_view(dv);
      CHECK(host_status == device_status);
      if (host_status != DLB_OK) {
        CHECK(host_status == DLB_ERR_LAYOUT);
        CHECK(dtype.bits * dtype.lanes < 8);
        continue;
      }
      check_same(device_view.get(), host_view.get());              // device strided -> host
      Tensor on_device = copy_to(device_view.get(), gpu);           // strided -> contiguous on device
      check_same(on_device.get(), host_view.get());
      Tensor uploaded = copy_to(host_view.get(), gpu);              // host strided -> device
      check_same(uploaded.get(), host_view.get());
      // and into a strided destination on the device
      Tensor target = copy_to(host.get(), gpu);
      Tensor target_view = view(target.get(), make);
      dlb_error error;
      const int status = dlb_tensor_copy_into(host_view.get(), target_view.get(), &error);
      INFO(error.message);
      CHECK(status == DLB_OK);
      check_same(target_view.get(), host_view.get());
    }
    // A 3-d permutation of a device tensor.
    Tensor host3 = allocate(cpu, dtype, {9, 40, 33});
    fill(host3.get(), 77);
    Tensor device3 = copy_to(host3.get(), gpu);
    const int32_t axes[] = {2, 0, 1};
    DLManagedTensorVersioned* hp = nullptr;
    DLManagedTensorVersioned* dp = nullptr;
    REQUIRE(dlb_tensor_permute(host3.get(), 3, axes, &hp, nullptr) == DLB_OK);
    REQUIRE(dlb_tensor_permute(device3.get(), 3, axes, &dp, nullptr) == DLB_OK);
    Tensor host_permuted(hp), device_permuted(dp);
    Tensor compact = copy_to(device_permuted.get(), gpu);
    check_same(compact.get(), host_permuted.get());
  }
}

TEST_CASE("pinned and managed memory are readable from the host") {
  const DLDataType f32{kDLFloat, 32, 1};
  Tensor pinned = allocate(DLDevice{kDLCUDAHost, 0}, f32, {1000});
  float* p = static_cast<float*>(pinned->dl_tensor.data);
  for (int i = 0; i < 1000; ++i) p[i] = static_cast<float>(i) * 0.5f;
  Tensor device = copy_to(pinned.get(), DLDevice{kDLCUDA, 0});
  Tensor managed = copy_to(device.get(), DLDevice{kDLCUDAManaged, 0});
  const float* m = static_cast<const float*>(managed->dl_tensor.data);
  for (int i = 0; i < 1000; ++i) REQUIRE(m[i] == static_cast<float>(i) * 0.5f);
  // managed -> pinned through the host path
  Tensor back = copy_to(managed.get(), DLDevice{kDLCUDAHost, 0});
  CHECK(std::memcmp(back->dl_tensor.data, p, 4000) == 0);
}

TEST_CASE("overlapping copy_into within one device buffer") {
  const DLDataType i32{kDLInt, 32, 1};
  Tensor host = allocate(DLDevice{kDLCPU, 0}, i32, {100});
  int32_t* h = static_cast<int32_t*>(host->dl_tensor.data);
  for (int i = 0; i < 100; ++i) h[i] = i;
  Tensor device = copy_to(host.get(), DLDevice{kDLCUDA, 0});
  const dlb_slice head[] = {{0, 99, 1}}, tail[] = {{1, 100, 1}}, reversed[] = {{DLB_SLICE_NONE, DLB_SLICE_NONE, -1}};
  DLManagedTensorVersioned *a = nullptr, *b = nullptr, *r = nullptr;
  REQUIRE(dlb_tensor_slice(device.get(), 1, head, &a, nullptr) == DLB_OK);
  REQUIRE(dlb_tensor_slice(device.get(), 1, tail, &b, nullptr) == DLB_OK);
  REQUIRE(dlb_tensor_slice(device.get(), 1, reversed, &r, nullptr) == DLB_OK);
  Tensor va(a), vb(b), vr(r);
  REQUIRE(dlb_tensor_copy_into(va.get(), vb.get(), nullptr) == DLB_OK);  // x[1:] = x[:-1]
  Tensor result = copy_to(device.get(), DLDevice{kDLCPU, 0});
  const int32_t* out = static_cast<const int32_t*>(result->dl_tensor.data);
  CHECK(out[0] == 0);
  for (int i = 1; i < 100; ++i) REQUIRE(out[i] == i - 1);
  REQUIRE(dlb_tensor_copy_into(vr.get(), device.get(), nullptr) == DLB_OK);  // x[:] = x[::-1]
  Tensor reversed_result = copy_to(device.get(), DLDevice{kDLCPU, 0});
  const int32_t* rev = static_cast<const int32_t*>(reversed_result->dl_tensor.data);
  for (int i = 0; i < 100; ++i) REQUIRE(rev[i] == out[99 - i]);
}

TEST_CASE("asynchronous copies on a caller's stream") {
  cudaStream_t stream;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  const DLDataType f64{kDLFloat, 64, 1};
  Tensor host = allocate(DLDevice{kDLCUDAHost, 0}, f64, {512, 300});
  fill(host.get(), 5);
  Tensor device = copy_to(host.get(), DLDevice{kDLCUDA, 0}, stream);
  Tensor transposed = view(device.get(), transpose_view);
  Tensor compact = copy_to(transposed.get(), DLDevice{kDLCUDA, 0}, stream);
  Tensor back = copy_to(compact.get(), DLDevice{kDLCUDAHost, 0}, stream);
  REQUIRE(dlb_device_synchronize(DLDevice{kDLCUDA, 0}, stream, nullptr) == DLB_OK);
  Tensor host_t = view(host.get(), transpose_view);
  check_same(back.get(), host_t.get());
  REQUIRE(dlb_device_synchronize(DLDevice{kDLCUDA, 0}, nullptr, nullptr) == DLB_OK);
  cudaStreamDestroy(stream);
}

TEST_CASE("the stream handshake for every consumer stream value") {
  const int n = 1 << 16;
  const DLDataType f32{kDLFloat, 32, 1};
  cudaStream_t producer, consumer;
  REQUIRE(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking) == cudaSuccess);
  int clock_khz = 0;
  REQUIRE(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0) == cudaSuccess);
  const long long cycles = static_cast<long long>(clock_khz) * 50;  // about 50 ms
  struct Case {
    const char* name;
    int64_t value;
    cudaStream_t reader;  // the stream the consumer then reads on
  };
  const Case cases[] = {
      {"none (legacy default)", DLB_CUDA_STREAM_NONE, cudaStreamLegacy},
      {"1 (legacy default)", 1, cudaStreamLegacy},
      {"2 (per-thread default)", 2, cudaStreamPerThread},
      {"a stream handle", static_cast<int64_t>(reinterpret_cast<uintptr_t>(consumer)), consumer},
  };
  float value = 1.0f;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Tensor data = allocate(DLDevice{kDLCUDA, 0}, f32, {n});
    Tensor out = allocate(DLDevice{kDLCUDAHost, 0}, f32, {n});
    std::memset(out->dl_tensor.data, 0, sizeof(float) * n);
    // Zeroed on the producer's stream: a legacy-stream memset would not be ordered before the
    // kernel on a non-blocking stream.
    REQUIRE(cudaMemsetAsync(data->dl_tensor.data, 0, sizeof(float) * n, producer) == cudaSuccess);
    value += 1.0f;
    // The producer writes slowly on its stream...
    spin_then_fill<<<1, 256, 0, producer>>>(static_cast<float*>(data->dl_tensor.data), n, value, cycles);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    // ... hands over to the consumer's stream ...
    dlb_error error;
    REQUIRE(dlb_cuda_stream_handshake(0, producer, c.value, &error) == DLB_OK);
    // ... which reads on its own stream without any host synchronisation in between.
    REQUIRE(dlb_tensor_copy_into_async(data.get(), out.get(), c.reader, &error) == DLB_OK);
    REQUIRE(cudaStreamSynchronize(c.reader) == cudaSuccess);
    const float* o = static_cast<const float*>(out->dl_tensor.data);
    CHECK(o[0] == value);
    CHECK(o[n - 1] == value);
    REQUIRE(cudaStreamSynchronize(producer) == cudaSuccess);
  }
  // -1: no synchronisation requested; nothing is done.
  CHECK(dlb_cuda_stream_handshake(0, producer, -1, nullptr) == DLB_OK);
  // The same stream on both sides: nothing to do.
  CHECK(dlb_cuda_stream_handshake(0, consumer, static_cast<int64_t>(reinterpret_cast<uintptr_t>(consumer)),
                                  nullptr) == DLB_OK);
  dlb_error error;
  CHECK(dlb_cuda_stream_handshake(0, producer, 0, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(dlb_cuda_stream_handshake(device_count(), producer, 1, &error) == DLB_ERR_INVALID_ARGUMENT);
  cudaStreamDestroy(producer);
  cudaStreamDestroy(consumer);
}

namespace {
struct Deleted {
  int calls = 0;
};
void count_release(void* ctx) { static_cast<Deleted*>(ctx)->calls++; }
struct Foreign {
  DLManagedTensorVersioned managed;
  int64_t shape[1];
  Deleted* deleted;
};
void foreign_deleter(DLManagedTensorVersioned* t) {
  Foreign* f = reinterpret_cast<Foreign*>(t);
  f->deleted->calls++;
  delete f;
}
}  // namespace

TEST_CASE("imports and wraps check that CUDA memory is what it claims") {
  std::vector<float> host(16);
  int64_t shape[] = {16};
  const DLDataType f32{kDLFloat, 32, 1};
  Deleted released;
  DLManagedTensorVersioned* out = nullptr;
  dlb_error error;
  DLTensor desc{host.data(), DLDevice{kDLCUDA, 0}, 1, f32, shape, nullptr, 0};
  CHECK(dlb_tensor_wrap(&desc, 0, count_release, &released, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(message(error) == "the data of a cuda:0 tensor is memory CUDA does not know, not device memory of cuda:0");
  CHECK(released.calls == 0);  // a refused wrap leaves the memory with the caller

  void* device_memory = nullptr;
  REQUIRE(cudaMalloc(&device_memory, 64) == cudaSuccess);
  Deleted deleted;
  Foreign* foreign = new Foreign{};
  foreign->shape[0] = 16;
  foreign->deleted = &deleted;
  foreign->managed.version = DLPackVersion{1, 3};
  foreign->managed.deleter = foreign_deleter;
  foreign->managed.dl_tensor = DLTensor{device_memory, DLDevice{kDLCUDAHost, 0}, 1, f32, foreign->shape, nullptr, 0};
  CHECK(dlb_tensor_import(&foreign->managed, &out, &error) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(message(error) == "the data of a cuda_host:0 tensor is device memory of cuda:0, not pinned host memory");
  CHECK(deleted.calls == 1);  // a rejected import still calls the deleter, once

  // Device memory wrapped correctly, and managed memory travelling as a cuda tensor: accepted.
  desc.data = device_memory;
  REQUIRE(dlb_tensor_wrap(&desc, 0, count_release, &released, &out, &error) == DLB_OK);
  dlb_tensor_free(out);
  CHECK(released.calls == 1);
  void* managed = nullptr;
  REQUIRE(cudaMallocManaged(&managed, 64) == cudaSuccess);
  desc.data = managed;
  REQUIRE(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &out, &error) == DLB_OK);
  dlb_tensor_free(out);
  cudaFree(managed);
  cudaFree(device_memory);
}

TEST_CASE("two GPUs: peer copies, dense and strided") {
  const int32_t count = device_count();
  if (count < 2) {
    MESSAGE("one GPU: the two-GPU paths are skipped");
    return;
  }
  int current = -1;
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const DLDataType f32{kDLFloat, 32, 1};
  Tensor host = allocate(DLDevice{kDLCPU, 0}, f32, {300, 200});
  fill(host.get(), 11);
  Tensor d0 = copy_to(host.get(), DLDevice{kDLCUDA, 0});
  Tensor d1 = copy_to(d0.get(), DLDevice{kDLCUDA, 1});
  CHECK(d1->dl_tensor.device.device_id == 1);
  check_same(d1.get(), host.get());
  Tensor t0 = view(d0.get(), transpose_view);
  Tensor t1 = copy_to(t0.get(), DLDevice{kDLCUDA, 1});
  Tensor ht = view(host.get(), transpose_view);
  check_same(t1.get(), ht.get());
  REQUIRE(cudaGetDevice(&current) == cudaSuccess);
  CHECK(current == 0);  // the library restored the caller's current device
}

int main(int argc, char** argv) {
  dlb_error error;
  if (dlb_cuda_is_available(&error) != DLB_OK) {
    const char* require = std::getenv("DLB_REQUIRE_CUDA");
    std::printf("CUDA is not usable here: %s\n", error.message);
    return require != nullptr && std::strcmp(require, "1") == 0 ? 1 : 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
