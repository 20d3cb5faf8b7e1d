// The AVX2 build of the x86-64 transpose kernels (copy_transpose_kernels.hpp). Only the
// functions here carry the AVX2 target, and copy_transpose.cc calls them only on CPUs that
// have it, so the library still runs on x86-64 CPUs without AVX2.
#include <cstddef>
#include <cstdint>

#include "copy_transpose.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

#define DLB_KERNEL __attribute__((target("avx2")))
#include "copy_transpose_kernels.hpp"

namespace dlb {
namespace {

// Each register holds two source rows, kCols apart, one per 128-bit lane: the unpacks work
// within lanes, so one register tile transposes two blocks at once and every destination row
// comes out as 32 contiguous bytes.
struct V256 {
  using T = __m256i;
  static constexpr int64_t kRowsPerRegister = 2;
  DLB_KERNEL static T load_rows(const char* p, int64_t second) {
    const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i high = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + second));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1);
  }
  DLB_KERNEL static void store(char* p, T v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
  }
  // `d` and `line` are 64-byte aligned.
  DLB_KERNEL static void stream_line(char* d, const char* line) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d),
                        _mm256_load_si256(reinterpret_cast<const __m256i*>(line)));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 32),
                        _mm256_load_si256(reinterpret_cast<const __m256i*>(line + 32)));
  }
  // 64 bytes, anywhere.
  DLB_KERNEL static void copy_line(char* d, const char* line) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(line)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + 32),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(line + 32)));
  }
  DLB_KERNEL static void fence() { _mm_sfence(); }
  DLB_KERNEL static T lo8(T a, T b) { return _mm256_unpacklo_epi8(a, b); }
  DLB_KERNEL static T hi8(T a, T b) { return _mm256_unpackhi_epi8(a, b); }
  DLB_KERNEL static T lo16(T a, T b) { return _mm256_unpacklo_epi16(a, b); }
  DLB_KERNEL static T hi16(T a, T b) { return _mm256_unpackhi_epi16(a, b); }
  DLB_KERNEL static T lo32(T a, T b) { return _mm256_unpacklo_epi32(a, b); }
  DLB_KERNEL static T hi32(T a, T b) { return _mm256_unpackhi_epi32(a, b); }
  DLB_KERNEL static T lo64(T a, T b) { return _mm256_unpacklo_epi64(a, b); }
  DLB_KERNEL static T hi64(T a, T b) { return _mm256_unpackhi_epi64(a, b); }
};

}  // namespace

DLB_KERNEL void transpose_avx2(char* d, const char* s, int64_t nj, int64_t nk, int64_t jds,
                               int64_t kss, size_t size, bool stream) {
  kernels::transpose_any<V256>(d, s, nj, nk, jds, kss, size, stream);
}

}  // namespace dlb
#endif
