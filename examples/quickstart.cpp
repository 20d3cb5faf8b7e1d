// quickstart.cpp - quickstart.c in C++ with dlbridge.hpp: tensors free themselves when they go
// out of scope, and a failed call throws dlbridge::Error carrying the status and the message.
#include <cstdio>
#include <iostream>

#include "dlbridge/dlbridge.hpp"

int main() {
  try {
    // An uninitialised 2x3 float32 tensor on the CPU, owned by `matrix`.
    dlbridge::Tensor matrix = dlbridge::Tensor::empty<float>({2, 3});
    auto values = matrix.view<float>();
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) values(i, j) = static_cast<float>(i * 3 + j);
    }

    // A 3x2 view over the same memory; it keeps that memory alive on its own.
    const dlbridge::Tensor transposed = matrix.transpose();
    const auto t = transposed.cview<float>();
    std::cout << "transposed (" << t.shape(0) << " x " << t.shape(1) << "):\n";
    for (int64_t i = 0; i < t.shape(0); ++i) {
      for (int64_t j = 0; j < t.shape(1); ++j) std::cout << ' ' << t(i, j);
      std::cout << '\n';
    }

    // Errors arrive as exceptions: a transposed view cannot be flattened without a copy.
    try {
      (void)transposed.reshape({6});
    } catch (const dlbridge::Error& e) {
      std::cout << "reshape of the transposed view: " << e.status_name() << ": " << e.what()
                << '\n';
    }
  } catch (const dlbridge::Error& e) {
    std::cerr << "dlbridge error " << e.status_name() << ": " << e.what() << '\n';
    return 1;
  }
  // Both tensors were freed when their scope ended.
  std::cout << "live tensors after freeing: " << dlbridge::live_count() << '\n';
  return dlbridge::live_count() == 0 ? 0 : 1;
}
