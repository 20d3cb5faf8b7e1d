// The x86-64 transpose kernels, written once over a vector type and compiled once per
// instruction set: copy_transpose.cc instantiates them with SSE2 (V128, part of x86-64) and
// copy_transpose_avx2.cc with AVX2 (V256, chosen at run time). The including file defines
// DLB_KERNEL as the target attribute of its instruction set before including this header and
// includes every standard header it needs first, so that nothing shared with the rest of the
// program is compiled for an instruction set the CPU may lack; everything here has internal
// linkage for the same reason.
//
// A block to copy has its destination contiguous along k and its source contiguous along j:
// dst(a, b) at d + a * jds + b * E and src(a, b) at s + a * E + b * kss.
//
// Register tiles: n = 16 / E registers each hold 16 source bytes of one row (two rows with
// V256, one per 128-bit lane), and log2(n) rounds of unpacks, each pairing registers h apart
// and interleaving units twice as wide as the last, leave register i holding destination row
// i. The unpacks only move bits, so every payload (NaNs included) is copied exactly.
//
// Blocks beyond the first-level cache: the destination is written a few whole lines per row at
// a time. Band tiles (64 / E destination rows by band_lines(E) lines) are transposed into a small
// buffer and copied out row by row, each row's lines back to back; the walk goes down all rows
// of one band of columns before the next band. Measured on a 2-core AMD EPYC (Zen 3) VM against
// the other orders: a line written in pieces is flushed in pieces (streaming stores are worth
// it only for whole lines), a destination written one line per row, row after row, pays a new
// DRAM page for every line (half the speed), and the buffer keeps rows a power of two apart
// from evicting each other's lines while they are written.
//
// The read side of 1- and 2-byte elements: a band tile of them reads 64 B from each of 256 or
// 128 source rows, and with power-of-two row strides those lines share a handful of cache sets,
// so neither the hardware prefetchers nor the caches keep them. Measured here, those reads
// alone took about as long as a memcpy of the same bytes, and the transpose then paid the
// transposing and the writes on top. Two changes overlap them instead: the band tile's source
// lines are read into a buffer first, and while a tile is written out the next tile's source
// lines are prefetched, one per line written, so that the reads overlap the transposing and
// the writes. The set aliasing pushes many of them out of the second-level cache again before
// they are read; they go to the third (a victim cache on Zen 3), which is presumably where the
// next tile finds them (not checked with counters). Measured: uint8 transposes of 64 MiB 4.3
// -> 6.8 GB/s, uint16 6.2 -> 7.7 GB/s with AVX2, against about 8.5 GB/s for memcpy. float32
// tiles (64 rows) gain from the same with AVX2; float64 tiles (32 rows) do not. Blocks small
// enough to be in cache go without (kBufferedReadsBytes).
#ifndef DLBRIDGE_SRC_COPY_TRANSPOSE_KERNELS_HPP_
#define DLBRIDGE_SRC_COPY_TRANSPOSE_KERNELS_HPP_

#ifndef DLB_KERNEL
#error "define DLB_KERNEL (the target attribute of the instruction set) before including this"
#endif

namespace dlb {

// The entry points of the two instruction sets (the generic driver below, instantiated):
// copy the nj x nk block described above; `stream` asks for streaming stores.
void transpose_sse2(char* d, const char* s, int64_t nj, int64_t nk, int64_t jds, int64_t kss,
                    size_t size, bool stream);
void transpose_avx2(char* d, const char* s, int64_t nj, int64_t nk, int64_t jds, int64_t kss,
                    size_t size, bool stream);

namespace {
namespace kernels {

constexpr int64_t kLineBytes = 64;
// Destination lines per row of a band tile: 4 for every size (bytes measured 4.3 GB/s with 2
// lines, 5 with 4, and 6.8 with 4 and the prefetches; 8 was no faster). A band tile and its
// source buffer then take 32 KiB of stack for bytes, 16 KiB for uint16, 8 KiB or less otherwise.
constexpr int64_t band_lines(int64_t) { return 4; }
// Whether the band tiles of E-byte elements with vector type V may read their source lines into
// a buffer first and prefetch the next tile's (see above and band_tile): 1- and 2-byte
// elements, and float32 with AVX2 (measured: 64 MiB transposes 7.5 -> 8.4 GB/s; with SSE2 no
// better, and no better for 8-byte elements, whose tiles read 32 rows).
template <class V, int E>
constexpr bool reads_through_buffer() {
  return E <= 2 || (E == 4 && V::kRowsPerRegister == 2);
}
// They do so for streamed blocks and for blocks of at least this many bytes: a smaller source
// is often still in cache, where the buffer is only extra work (measured with the source in
// cache: 64 KiB to 1 MiB transposes of uint16 and float32 a third slower with it, 4 MiB ones a
// little faster).
constexpr int64_t kBufferedReadsBytes = 4 << 20;
// Destination bytes per band of the register-tile walk, for blocks small enough to stay in the
// first-level cache.
constexpr int64_t kPlainBandBytes = 256;
// From this many bytes on, plain stores go through the band tiles too (measured: float32
// transposes of 256 KiB to 4 MiB twice as fast as with the register tiles alone).
constexpr int64_t kBandedPlainBytes = 32 << 10;

template <int kWidth, class V>
DLB_KERNEL inline typename V::T unpack(typename V::T a, typename V::T b, bool high) {
  if (kWidth == 1) return high ? V::hi8(a, b) : V::lo8(a, b);
  if (kWidth == 2) return high ? V::hi16(a, b) : V::lo16(a, b);
  if (kWidth == 4) return high ? V::hi32(a, b) : V::lo32(a, b);
  return high ? V::hi64(a, b) : V::lo64(a, b);
}

// One round of the network: registers h apart are interleaved in units of kWidth bytes.
template <class V, int kCount, int kHalf, int kWidth>
DLB_KERNEL inline void unpack_round(typename V::T* x) {
  typename V::T y[kCount];
  for (int g = 0; g < kCount; g += 2 * kHalf) {
    for (int q = 0; q < kHalf; ++q) {
      y[g + 2 * q] = unpack<kWidth, V>(x[g + q], x[g + q + kHalf], false);
      y[g + 2 * q + 1] = unpack<kWidth, V>(x[g + q], x[g + q + kHalf], true);
    }
  }
  for (int i = 0; i < kCount; ++i) x[i] = y[i];
}

template <class V, int E>
DLB_KERNEL inline void transpose_registers(typename V::T* x) {
  constexpr int n = 16 / E;
  unpack_round<V, n, 1, E>(x);
  if constexpr (n >= 4) unpack_round<V, n, 2, 2 * E>(x);
  if constexpr (n >= 8) unpack_round<V, n, 4, 4 * E>(x);
  if constexpr (n >= 16) unpack_round<V, n, 8, 8 * E>(x);
}

// The register tile of element size E: reads kRows source rows (stride kss) of 16 / E elements
// each, writes 16 / E destination rows (stride ds) of kRows elements each.
template <class V, int E>
struct RegisterTile {
  static constexpr int64_t kCols = 16 / E;
  static constexpr int64_t kRows = kCols * V::kRowsPerRegister;

  DLB_KERNEL static inline void copy(char* d, int64_t ds, const char* s, int64_t kss) {
    typename V::T x[kCols];
    const int64_t second = kCols * kss;
    for (int64_t i = 0; i < kCols; ++i, s += kss) x[i] = V::load_rows(s, second);
    transpose_registers<V, E>(x);
    for (int64_t i = 0; i < kCols; ++i, d += ds) V::store(d, x[i]);
  }
};

// The portable element loop, for the edges the register tiles do not cover.
template <int E>
DLB_KERNEL inline void element_loop(char* d, const char* s, int64_t nj, int64_t nk, int64_t jds,
                                    int64_t kss) {
  for (int64_t a = 0; a < nj; ++a) {
    char* drow = d + a * jds;
    const char* scol = s + a * E;
    for (int64_t b = 0; b < nk; ++b) __builtin_memcpy(drow + b * E, scol + b * kss, E);
  }
}

// Plain stores: register tiles in bands of kPlainBandBytes destination bytes, then the edges.
template <class V, int E>
DLB_KERNEL inline void transpose_plain(char* d, const char* s, int64_t nj, int64_t nk, int64_t jds,
                                       int64_t kss) {
  using Tile = RegisterTile<V, E>;
  const int64_t nj_tiled = nj - nj % Tile::kCols;
  const int64_t nk_tiled = nk - nk % Tile::kRows;
  constexpr int64_t band = kPlainBandBytes / E > Tile::kRows ? kPlainBandBytes / E : Tile::kRows;
  for (int64_t k0 = 0; k0 < nk_tiled; k0 += band) {
    const int64_t k1 = k0 + band < nk_tiled ? k0 + band : nk_tiled;
    for (int64_t j = 0; j < nj_tiled; j += Tile::kCols) {
      for (int64_t k = k0; k < k1; k += Tile::kRows) {
        Tile::copy(d + j * jds + k * E, jds, s + j * E + k * kss, kss);
      }
    }
  }
  element_loop<E>(d + nk_tiled * E, s + nk_tiled * kss, nj_tiled, nk - nk_tiled, jds, kss);
  element_loop<E>(d + nj_tiled * jds, s + nj_tiled * E, nj - nj_tiled, nk, jds, kss);
}

// One band tile: kLine destination rows (kLine source columns) by `lines` destination lines,
// transposed into `buffer` (a row of band_lines(E) lines per destination row), then written out
// row after row, each row's lines back to back (streamed: `to` is 64-byte aligned). While it
// writes, it prefetches the first line of each of the `next_rows` source rows from `next` on
// (the next tile's source lines; none when next_rows is 0). kBuffered: the source lines are
// read into a buffer first (reads_through_buffer).
template <class V, int E, bool kStream, bool kBuffered>
DLB_KERNEL inline void band_tile(char* d, int64_t jds, const char* s, int64_t kss, int64_t lines,
                                 char* buffer, const char* next, int64_t next_rows) {
  using Tile = RegisterTile<V, E>;
  constexpr int64_t kLine = kLineBytes / E;
  constexpr int64_t kPitch = band_lines(E) * kLineBytes;
  // A register tile reads kRows source rows at once (32 for AVX2 bytes, 16 for AVX2 uint16 and
  // SSE2 bytes); rows a power of two apart share one set of the first-level cache, which holds
  // 8 lines of it, so the tiles that read the same lines would miss again and again. These band
  // tiles read their source lines into a buffer first instead, whole lines one after the
  // other. Measured on 64 MiB: AVX2 uint8 0.5 -> 0.6 x memcpy before the prefetches; with
  // them, AVX2 uint16 6.2 -> 7.7 GB/s and float32 7.5 -> 8.4 GB/s (neither gains from the
  // prefetches without the buffer), SSE2 uint8 4.3 -> 5.5 and uint16 4.5 -> 6.2 GB/s.
  alignas(64) char source[kBuffered ? band_lines(E) * kLine * kLineBytes : 1];
  const char* from = s;
  int64_t from_pitch = kss;
  if (kBuffered) {
    for (int64_t k = 0; k < lines * kLine; ++k) V::copy_line(source + k * kLineBytes, s + k * kss);
    from = source;
    from_pitch = kLineBytes;
  }
  // Source rows outermost: the lines of one group of rows are used up before the next group.
  for (int64_t k = 0; k < lines * kLine; k += Tile::kRows) {
    for (int64_t j = 0; j < kLine; j += Tile::kCols) {
      Tile::copy(buffer + j * kPitch + k * E, kPitch, from + j * E + k * from_pitch, from_pitch);
    }
  }
  // One prefetch per line written: a tile writes kLine * lines lines and reads lines * kLine
  // source lines, so the counts match. Hint T1 (prefetcht1): into the second-level cache.
  int64_t prefetched = 0;
  for (int64_t r = 0; r < kLine; ++r) {
    for (int64_t line = 0; line < lines; ++line) {
      if (prefetched < next_rows) __builtin_prefetch(next + prefetched++ * kss, 0, 2);
      char* to = d + r * jds + line * kLineBytes;
      const char* from = buffer + r * kPitch + line * kLineBytes;
      if (kStream) V::stream_line(to, from);
      else V::copy_line(to, from);
    }
  }
}

// The band tiles of the banded walk below: rows head to k_end (whole lines of the
// destination) of the first nj_tiled columns, a band of band_lines(E) lines at a time.
template <class V, int E, bool kStream, bool kBuffered>
DLB_KERNEL inline void band_walk(char* d, const char* s, int64_t nj_tiled, int64_t head,
                                 int64_t k_end, int64_t jds, int64_t kss) {
  constexpr int64_t kLine = kLineBytes / E;
  constexpr int64_t band = band_lines(E) * kLine;
  alignas(64) char buffer[kLine * band_lines(E) * kLineBytes];
  for (int64_t k0 = head; k0 < k_end; k0 += band) {
    const int64_t lines = (k0 + band < k_end ? band : k_end - k0) / kLine;
    for (int64_t j = 0; j < nj_tiled; j += kLine) {
      // The next tile: the next kLine columns of these rows, or the first of the next band.
      const char* next = nullptr;
      int64_t next_rows = 0;
      if (kBuffered && j + kLine < nj_tiled) {
        next = s + (j + kLine) * E + k0 * kss;
        next_rows = lines * kLine;
      } else if (kBuffered && k0 + band < k_end) {
        next = s + (k0 + band) * kss;
        next_rows = k0 + 2 * band < k_end ? band : k_end - k0 - band;
      }
      band_tile<V, E, kStream, kBuffered>(d + j * jds + k0 * E, jds, s + j * E + k0 * kss, kss,
                                          lines, buffer, next, next_rows);
    }
  }
}

// The banded walk over whole band tiles; the columns before `head`, after the last whole line
// and the rows past the last whole tile go to the register tiles alone. Streaming stores need
// whole, aligned destination lines: every row must start at the same offset within a line
// (jds a multiple of 64) and d must hold whole elements of a line; the columns before the first
// line boundary are the head. Returns false when the layout does not allow the walk.
template <class V, int E, bool kStream>
DLB_KERNEL inline bool transpose_banded(char* d, const char* s, int64_t nj, int64_t nk,
                                        int64_t jds, int64_t kss) {
  constexpr int64_t kLine = kLineBytes / E;
  int64_t head = 0;
  if (kStream) {
    const uintptr_t misalignment = reinterpret_cast<uintptr_t>(d) % kLineBytes;
    if (jds % kLineBytes != 0 || misalignment % E != 0) return false;
    head = static_cast<int64_t>((kLineBytes - misalignment) % kLineBytes) / E;
  }
  if (nj < kLine || nk < head + kLine) return false;
  const int64_t nj_tiled = nj - nj % kLine;
  const int64_t k_end = head + (nk - head) / kLine * kLine;
  constexpr bool kMayBuffer = reads_through_buffer<V, E>();
  if (kMayBuffer && (kStream || nj * nk * E >= kBufferedReadsBytes)) {
    band_walk<V, E, kStream, kMayBuffer>(d, s, nj_tiled, head, k_end, jds, kss);
  } else {
    band_walk<V, E, kStream, false>(d, s, nj_tiled, head, k_end, jds, kss);
  }
  if (kStream) V::fence();
  transpose_plain<V, E>(d, s, nj_tiled, head, jds, kss);
  transpose_plain<V, E>(d + k_end * E, s + k_end * kss, nj_tiled, nk - k_end, jds, kss);
  transpose_plain<V, E>(d + nj_tiled * jds, s + nj_tiled * E, nj - nj_tiled, nk, jds, kss);
  return true;
}

template <class V, int E>
DLB_KERNEL inline void transpose_elements(char* d, const char* s, int64_t nj, int64_t nk,
                                          int64_t jds, int64_t kss, bool stream) {
  if (stream) {
    if (transpose_banded<V, E, true>(d, s, nj, nk, jds, kss)) return;
  } else if (nj * nk * E >= kBandedPlainBytes &&
             transpose_banded<V, E, false>(d, s, nj, nk, jds, kss)) {
    return;
  }
  transpose_plain<V, E>(d, s, nj, nk, jds, kss);
}

template <class V>
DLB_KERNEL inline void transpose_any(char* d, const char* s, int64_t nj, int64_t nk, int64_t jds,
                                     int64_t kss, size_t size, bool stream) {
  switch (size) {
    case 1: transpose_elements<V, 1>(d, s, nj, nk, jds, kss, stream); return;
    case 2: transpose_elements<V, 2>(d, s, nj, nk, jds, kss, stream); return;
    case 4: transpose_elements<V, 4>(d, s, nj, nk, jds, kss, stream); return;
    default: transpose_elements<V, 8>(d, s, nj, nk, jds, kss, stream); return;
  }
}

}  // namespace kernels
}  // namespace
}  // namespace dlb

#endif  // DLBRIDGE_SRC_COPY_TRANSPOSE_KERNELS_HPP_
