// The transpose kernels of the host copies: which instruction set runs them, the portable
// loop, and the SSE2 build of the x86-64 kernels (copy_transpose_kernels.hpp; the AVX2 build is
// copy_transpose_avx2.cc).
#include "copy_transpose.hpp"

#include <atomic>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#define DLB_COPY_X86 1
#endif

#if defined(DLB_COPY_X86)
#define DLB_KERNEL  // SSE2 is part of x86-64: the library's own target
#include "copy_transpose_kernels.hpp"
#endif

namespace dlb {
namespace {

// Below this the destination may still be in cache when the caller reads it, and streaming
// would push it out: the size of a last-level cache share of a small machine.
constexpr uint64_t kDefaultStreamingThreshold = uint64_t{8} << 20;

// -1: no test has forced an instruction set.
std::atomic<int> forced_isa{-1};
std::atomic<uint64_t> forced_threshold{kDefaultStreamingThreshold};

CopyIsa best_isa() {
#if defined(DLB_COPY_X86)
  // __builtin_cpu_supports also checks that the OS saves the AVX registers.
  if (__builtin_cpu_supports("avx2")) return CopyIsa::kAvx2;
  return CopyIsa::kSse2;
#else
  return CopyIsa::kPortable;
#endif
}

// The portable loop: blocks of kBlock x kBlock elements, so that the lines read and the lines
// written by one block stay in cache while it is copied.
template <size_t E>
void portable_tile(char* d, const char* s, const StridedDim& j, const StridedDim& k) {
  constexpr int64_t kBlock = E >= 8 ? 16 : 32;
  for (int64_t j0 = 0; j0 < j.n; j0 += kBlock) {
    const int64_t j1 = j0 + kBlock < j.n ? j0 + kBlock : j.n;
    for (int64_t k0 = 0; k0 < k.n; k0 += kBlock) {
      const int64_t k1 = k0 + kBlock < k.n ? k0 + kBlock : k.n;
      for (int64_t a = j0; a < j1; ++a) {
        char* drow = d + a * j.ds;
        const char* srow = s + a * j.ss;
        for (int64_t b = k0; b < k1; ++b) std::memcpy(drow + b * k.ds, srow + b * k.ss, E);
      }
    }
  }
}

void portable_tile_any(char* d, const char* s, const StridedDim& j, const StridedDim& k,
                       size_t size) {
  switch (size) {
    case 1: portable_tile<1>(d, s, j, k); return;
    case 2: portable_tile<2>(d, s, j, k); return;
    case 4: portable_tile<4>(d, s, j, k); return;
    case 8: portable_tile<8>(d, s, j, k); return;
    case 16: portable_tile<16>(d, s, j, k); return;
    default:
      for (int64_t a = 0; a < j.n; ++a) {
        for (int64_t b = 0; b < k.n; ++b) {
          std::memcpy(d + a * j.ds + b * k.ds, s + a * j.ss + b * k.ss, size);
        }
      }
  }
}

#if defined(DLB_COPY_X86)
struct V128 {
  using T = __m128i;
  static constexpr int64_t kRowsPerRegister = 1;
  static T load_rows(const char* p, int64_t) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  static void store(char* p, T v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }
  // `d` and `line` are 64-byte aligned.
  static void stream_line(char* d, const char* line) {
    for (int i = 0; i < 4; ++i) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16 * i),
                       _mm_load_si128(reinterpret_cast<const __m128i*>(line + 16 * i)));
    }
  }
  // 64 bytes, anywhere.
  static void copy_line(char* d, const char* line) {
    for (int i = 0; i < 4; ++i) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16 * i),
                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(line + 16 * i)));
    }
  }
  static void fence() { _mm_sfence(); }
  static T lo8(T a, T b) { return _mm_unpacklo_epi8(a, b); }
  static T hi8(T a, T b) { return _mm_unpackhi_epi8(a, b); }
  static T lo16(T a, T b) { return _mm_unpacklo_epi16(a, b); }
  static T hi16(T a, T b) { return _mm_unpackhi_epi16(a, b); }
  static T lo32(T a, T b) { return _mm_unpacklo_epi32(a, b); }
  static T hi32(T a, T b) { return _mm_unpackhi_epi32(a, b); }
  static T lo64(T a, T b) { return _mm_unpacklo_epi64(a, b); }
  static T hi64(T a, T b) { return _mm_unpackhi_epi64(a, b); }
};
#endif

}  // namespace

#if defined(DLB_COPY_X86)
void transpose_sse2(char* d, const char* s, int64_t nj, int64_t nk, int64_t jds, int64_t kss,
                    size_t size, bool stream) {
  kernels::transpose_any<V128>(d, s, nj, nk, jds, kss, size, stream);
}
#endif

bool copy_isa_supported(CopyIsa isa) {
  return static_cast<int>(isa) >= 0 && static_cast<int>(isa) <= static_cast<int>(best_isa());
}

CopyIsa active_copy_isa() {
  const int forced = forced_isa.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<CopyIsa>(forced);
  static const CopyIsa best = best_isa();
  return best;
}

uint64_t streaming_threshold() { return forced_threshold.load(std::memory_order_relaxed); }

bool force_copy_kernels(CopyIsa isa, uint64_t threshold) {
  if (!copy_isa_supported(isa)) return false;
  forced_isa.store(static_cast<int>(isa), std::memory_order_relaxed);
  forced_threshold.store(threshold, std::memory_order_relaxed);
  return true;
}

void restore_copy_kernels() {
  forced_isa.store(-1, std::memory_order_relaxed);
  forced_threshold.store(kDefaultStreamingThreshold, std::memory_order_relaxed);
}

void transpose_block(char* d, const char* s, const StridedDim& j, const StridedDim& k, size_t size,
                     CopyIsa isa, bool stream) {
  const int64_t e = static_cast<int64_t>(size);
  const bool registers = isa != CopyIsa::kPortable && k.ds == e && j.ss == e &&
                         (size == 1 || size == 2 || size == 4 || size == 8);
  if (!registers) {
    portable_tile_any(d, s, j, k, size);
    return;
  }
#if defined(DLB_COPY_X86)
  if (isa == CopyIsa::kAvx2) {
    transpose_avx2(d, s, j.n, k.n, j.ds, k.ss, size, stream);
  } else {
    transpose_sse2(d, s, j.n, k.n, j.ds, k.ss, size, stream);
  }
#else
  (void)stream;
  portable_tile_any(d, s, j, k, size);
#endif
}

}  // namespace dlb
