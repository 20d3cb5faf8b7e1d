// CUDA copy benchmark: dlbridge's copies against the raw CUDA runtime call moving the same
// bytes, measured in the same process, reported as ratios (higher is better; 100% = as fast as
// the raw call).
//   host <-> device, pinned and pageable, 1 MiB to 1 GiB:  dlb_tensor_copy_into vs cudaMemcpy
//                                                           (target >= 95%)
//   strided -> contiguous on the device:                    dlb_tensor_copy_into vs a
//                                                           device-to-device cudaMemcpy of the
//                                                           output's bytes (target >= 80%)
// Usage: bench_cuda [--quick]   (--quick: small sizes, few repetitions: a smoke test)
// Exits 77 when no GPU is usable.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime_api.h>

#include "dlbridge/dlbridge.h"

namespace {

bool g_quick = false;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check(int status, const dlb_error& error, const char* what) {
  if (status != DLB_OK) {
    std::fprintf(stderr, "%s failed: %s\n", what, error.message);
    std::exit(1);
  }
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

DLManagedTensorVersioned* allocate(DLDevice device, DLDataType dtype, std::vector<int64_t> shape) {
  DLManagedTensorVersioned* t = nullptr;
  dlb_error error;
  check(dlb_tensor_allocate(device, dtype, static_cast<int32_t>(shape.size()), shape.data(), nullptr, 0,
                            &t, &error),
        error, "dlb_tensor_allocate");
  return t;
}

// Best time over `reps` runs of `body` (after one warm-up run).
template <typename Body>
double best_seconds(int reps, Body body) {
  body();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const double start = now_seconds();
    body();
    const double elapsed = now_seconds() - start;
    if (elapsed < best) best = elapsed;
  }
  return best;
}

int reps_for(uint64_t bytes) {
  if (g_quick) return 2;
  return bytes >= (uint64_t{256} << 20) ? 5 : bytes >= (uint64_t{16} << 20) ? 10 : 30;
}

void row(const char* what, uint64_t bytes, double ours, double raw, double target) {
  const double ratio = raw / ours;
  std::printf("%-34s %9.1f MiB %9.2f GB/s %9.2f GB/s %7.1f%%  %s\n", what, static_cast<double>(bytes) / (1 << 20),
              static_cast<double>(bytes) / ours / 1e9, static_cast<double>(bytes) / raw / 1e9, 100.0 * ratio,
              ratio >= target ? "ok" : "MISS");
}

void host_device(bool pinned) {
  const DLDataType u8{kDLUInt, 8, 1};
  const uint64_t sizes_full[] = {uint64_t{1} << 20, uint64_t{16} << 20, uint64_t{64} << 20,
                                 uint64_t{256} << 20, uint64_t{1} << 30};
  const uint64_t sizes_quick[] = {uint64_t{1} << 20, uint64_t{4} << 20};
  const uint64_t* sizes = g_quick ? sizes_quick : sizes_full;
  const int count = g_quick ? 2 : 5;
  for (int i = 0; i < count; ++i) {
    const uint64_t bytes = sizes[i];
    const int64_t n = static_cast<int64_t>(bytes);
    DLManagedTensorVersioned* host = allocate(pinned ? DLDevice{kDLCUDAHost, 0} : DLDevice{kDLCPU, 0}, u8, {n});
    DLManagedTensorVersioned* device = allocate(DLDevice{kDLCUDA, 0}, u8, {n});
    std::memset(host->dl_tensor.data, 1, bytes);
    dlb_error error;
    const int reps = reps_for(bytes);
    const double ours_h2d = best_seconds(reps, [&] { check(dlb_tensor_copy_into(host, device, &error), error, "h2d"); });
    const double raw_h2d = best_seconds(reps, [&] {
      check_cuda(cudaMemcpy(device->dl_tensor.data, host->dl_tensor.data, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    });
    const double ours_d2h = best_seconds(reps, [&] { check(dlb_tensor_copy_into(device, host, &error), error, "d2h"); });
    const double raw_d2h = best_seconds(reps, [&] {
      check_cuda(cudaMemcpy(host->dl_tensor.data, device->dl_tensor.data, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    });
    row(pinned ? "host->device, pinned" : "host->device, pageable", bytes, ours_h2d, raw_h2d, 0.95);
    row(pinned ? "device->host, pinned" : "device->host, pageable", bytes, ours_d2h, raw_d2h, 0.95);
    dlb_tensor_free(host);
    dlb_tensor_free(device);
  }
}

// Copies a view of a device tensor into a compact device tensor; the baseline moves the
// output's bytes with one device-to-device cudaMemcpy.
void strided(const char* what, DLDataType dtype, std::vector<int64_t> shape,
             int (*make_view)(DLManagedTensorVersioned*, DLManagedTensorVersioned**)) {
  DLManagedTensorVersioned* base = allocate(DLDevice{kDLCUDA, 0}, dtype, shape);
  DLManagedTensorVersioned* src = nullptr;
  if (make_view(base, &src) != DLB_OK) std::exit(1);
  DLManagedTensorVersioned* dst = allocate(DLDevice{kDLCUDA, 0}, dtype,
                                           std::vector<int64_t>(src->dl_tensor.shape, src->dl_tensor.shape + src->dl_tensor.ndim));
  int64_t count = 0;
  dlb_tensor_element_count(&dst->dl_tensor, &count, nullptr);
  const uint64_t bytes = static_cast<uint64_t>(count) * (dtype.bits * dtype.lanes / 8);
  DLManagedTensorVersioned* plain = allocate(DLDevice{kDLCUDA, 0}, DLDataType{kDLUInt, 8, 1}, {static_cast<int64_t>(bytes)});
  dlb_error error;
  const int reps = reps_for(bytes);
  const double ours = best_seconds(reps, [&] { check(dlb_tensor_copy_into(src, dst, &error), error, what); });
  const double raw = best_seconds(reps, [&] {
    check_cuda(cudaMemcpy(plain->dl_tensor.data, dst->dl_tensor.data, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  });
  row(what, bytes, ours, raw, 0.80);
  dlb_tensor_free(plain);
  dlb_tensor_free(dst);
  dlb_tensor_free(src);
  dlb_tensor_free(base);
}

int transpose(DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) { return dlb_tensor_transpose(t, out, nullptr); }
int every_other_column(DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
  const dlb_slice s[] = {{DLB_SLICE_NONE, DLB_SLICE_NONE, 1}, {DLB_SLICE_NONE, DLB_SLICE_NONE, 2}};
  return dlb_tensor_slice(t, 2, s, out, nullptr);
}
int reversed_rows(DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
  const dlb_slice s[] = {{DLB_SLICE_NONE, DLB_SLICE_NONE, -1}, {DLB_SLICE_NONE, DLB_SLICE_NONE, -1}};
  return dlb_tensor_slice(t, 2, s, out, nullptr);
}
int column_block(DLManagedTensorVersioned* t, DLManagedTensorVersioned** out) {
  const dlb_slice s[] = {{DLB_SLICE_NONE, DLB_SLICE_NONE, 1}, {0, -64, 1}};
  return dlb_tensor_slice(t, 2, s, out, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  g_quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  dlb_error error;
  if (dlb_cuda_is_available(&error) != DLB_OK) {
    std::printf("bench_cuda: CUDA is not usable here (%s): skipped\n", error.message);
    return 77;
  }
  cudaDeviceProp prop;
  check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  int runtime_version = 0, driver_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  cudaDriverGetVersion(&driver_version);
  std::printf("GPU: %s (compute capability %d.%d), CUDA runtime %d, driver %d\n", prop.name, prop.major,
              prop.minor, runtime_version, driver_version);
  std::printf("%-34s %13s %14s %14s %8s\n", "copy", "size", "dlbridge", "raw CUDA", "ratio");
  host_device(true);
  host_device(false);
  const int64_t side = g_quick ? 1024 : 8192;
  strided("transpose float32 (device)", DLDataType{kDLFloat, 32, 1}, {side, side}, transpose);
  strided("transpose float64 (device)", DLDataType{kDLFloat, 64, 1}, {side, side / 2}, transpose);
  strided("transpose uint8 (device)", DLDataType{kDLUInt, 8, 1}, {side, side}, transpose);
  strided("x[:, ::2] float32 (device)", DLDataType{kDLFloat, 32, 1}, {side, side}, every_other_column);
  strided("x[::-1, ::-1] float32 (device)", DLDataType{kDLFloat, 32, 1}, {side, side}, reversed_rows);
  strided("x[:, :-64] uint8 (device)", DLDataType{kDLUInt, 8, 1}, {side, side}, column_block);
  return 0;
}
