// OpenCL C source of the backend's copy kernels. The build embeds this file in the library
// (embed_cl.py writes it as the string kKernelSource into the build directory).
//
// The copy kernels, compiled once per context. Positions and strides are in words of the
// kernel's type (1 to 16 bytes) and 64-bit, so any buffer and any stride works; strides may be
// negative. `outer_*` hold up to 8 outer dimensions (outermost first) whose offsets a work-item
// finds by dividing its row number; the innermost dimension (and, for a transpose, the one the
// source is contiguous along) are arguments of their own.
//
// Two layouts of the work, chosen per device at build time:
//  - GPUs and other devices run the work-items of a group side by side, so adjacent work-items
//    take adjacent elements (coalesced accesses), and a transpose goes through a local-memory
//    tile;
//  - CPU devices (DLB_CPU_LAYOUT) run a group's work-items one after another on one core, so
//    each work-item copies a contiguous run of a row, or a whole 32x32 block of a transpose,
//    and streams through memory.
#define DLB_TILE 32
#define DLB_TILE_ROWS 8

#define DLB_UNPACK_OUTER                                           \
  long n[8], s[8], d[8];                                           \
  vstore8(outer_n, 0, n);                                          \
  vstore8(outer_src, 0, s);                                        \
  vstore8(outer_dst, 0, d);

/* Word offsets of row `row` of the outer dimensions in both tensors. */
#define DLB_OUTER_OFFSETS(row)                                     \
  long so = src_base, dof = dst_base, rest = (row);                \
  for (int a = nouter - 1; a >= 0; --a) {                          \
    const long i = rest % n[a];                                    \
    rest /= n[a];                                                  \
    so += i * s[a];                                                \
    dof += i * d[a];                                               \
  }

#define DLB_ROWS_PARAMS(T)                                                                    \
  __global T* dst, long dst_base, __global const T* src, long src_base, long8 outer_n,        \
  long8 outer_src, long8 outer_dst, int nouter, long rows, long kn, long ks, long kd,          \
  long chunk
#define DLB_TILES_PARAMS(T)                                                                   \
  __global T* dst, long dst_base, __global const T* src, long src_base, long8 outer_n,        \
  long8 outer_src, long8 outer_dst, int nouter, long rows, long jn, long js, long jd,          \
  long kn, long ks, long kd

#if DLB_CPU_LAYOUT

/* Each work-item copies `chunk` consecutive elements of one row. */
#define DLB_ROWS_KERNEL(T, S)                                                                 \
__kernel void dlb_rows_##S(DLB_ROWS_PARAMS(T)) {                                              \
  DLB_UNPACK_OUTER                                                                            \
  const long per_row = (kn + chunk - 1) / chunk;                                              \
  const long total = rows * per_row;                                                          \
  for (long item = (long)get_global_id(0); item < total; item += (long)get_global_size(0)) { \
    const long row = item / per_row, k0 = (item % per_row) * chunk;                           \
    const long k1 = min(kn, k0 + chunk);                                                      \
    DLB_OUTER_OFFSETS(row)                                                                    \
    if (ks == 1 && kd == 1) {                                                                 \
      for (long k = k0; k < k1; ++k) dst[dof + k] = src[so + k];                              \
    } else {                                                                                  \
      for (long k = k0; k < k1; ++k) dst[dof + k * kd] = src[so + k * ks];                    \
    }                                                                                         \
  }                                                                                           \
}

/* A transpose in registers, for a block whose source is contiguous along j and destination
 * along k: N vector loads along j, N vector stores along k (N = 8; 4 for 8-byte words), so
 * that every access is a run of words. Power-of-two strides make the lines of a 32x32 block
 * compete for a few cache sets; runs of N words waste less of each line fetched. */
#define DLB_T4(i) (r0.s##i, r1.s##i, r2.s##i, r3.s##i)
#define DLB_T8(i) (r0.s##i, r1.s##i, r2.s##i, r3.s##i, r4.s##i, r5.s##i, r6.s##i, r7.s##i)
#define DLB_BLOCK_4X4(E, V)                                                                   \
  for (long jb = j0; jb < j1; jb += 4) {                                                      \
    for (long kb = k0; kb < k1; kb += 4) {                                                    \
      __global const E* sp = src + so + jb + kb * ks;                                         \
      const V r0 = vload4(0, sp), r1 = vload4(0, sp + ks), r2 = vload4(0, sp + 2 * ks),       \
              r3 = vload4(0, sp + 3 * ks);                                                    \
      __global E* dp = dst + dof + jb * jd + kb;                                              \
      vstore4((V)DLB_T4(0), 0, dp);                                                           \
      vstore4((V)DLB_T4(1), 0, dp + jd);                                                      \
      vstore4((V)DLB_T4(2), 0, dp + 2 * jd);                                                  \
      vstore4((V)DLB_T4(3), 0, dp + 3 * jd);                                                  \
    }                                                                                         \
  }
#define DLB_BLOCK_8X8(E, V)                                                                   \
  for (long jb = j0; jb < j1; jb += 8) {                                                      \
    for (long kb = k0; kb < k1; kb += 8) {                                                    \
      __global const E* sp = src + so + jb + kb * ks;                                         \
      const V r0 = vload8(0, sp), r1 = vload8(0, sp + ks), r2 = vload8(0, sp + 2 * ks),       \
              r3 = vload8(0, sp + 3 * ks), r4 = vload8(0, sp + 4 * ks),                       \
              r5 = vload8(0, sp + 5 * ks), r6 = vload8(0, sp + 6 * ks),                       \
              r7 = vload8(0, sp + 7 * ks);                                                    \
      __global E* dp = dst + dof + jb * jd + kb;                                              \
      vstore8((V)DLB_T8(0), 0, dp);                                                           \
      vstore8((V)DLB_T8(1), 0, dp + jd);                                                      \
      vstore8((V)DLB_T8(2), 0, dp + 2 * jd);                                                  \
      vstore8((V)DLB_T8(3), 0, dp + 3 * jd);                                                  \
      vstore8((V)DLB_T8(4), 0, dp + 4 * jd);                                                  \
      vstore8((V)DLB_T8(5), 0, dp + 5 * jd);                                                  \
      vstore8((V)DLB_T8(6), 0, dp + 6 * jd);                                                  \
      vstore8((V)DLB_T8(7), 0, dp + 7 * jd);                                                  \
    }                                                                                         \
  }
/* Per word size: whether a register block exists (16-byte words have no wider vector) and
 * which. */
#define DLB_HAS_REGISTER_BLOCK_1 1
#define DLB_HAS_REGISTER_BLOCK_2 1
#define DLB_HAS_REGISTER_BLOCK_4 1
#define DLB_HAS_REGISTER_BLOCK_8 1
#define DLB_HAS_REGISTER_BLOCK_16 0
#define DLB_REGISTER_BLOCK_1 DLB_BLOCK_8X8(uchar, uchar8)
#define DLB_REGISTER_BLOCK_2 DLB_BLOCK_8X8(ushort, ushort8)
#define DLB_REGISTER_BLOCK_4 DLB_BLOCK_8X8(uint, uint8)
#define DLB_REGISTER_BLOCK_8 DLB_BLOCK_4X4(ulong, ulong4)
#define DLB_REGISTER_BLOCK_16

/* Each work-item copies one 32x32 block of the (j, k) plane, through registers when it is a
 * whole block of a plain transpose, element by element otherwise (edges, other strides). */
#define DLB_TILES_KERNEL(T, S)                                                                \
__kernel void dlb_tiles_##S(DLB_TILES_PARAMS(T)) {                                            \
  DLB_UNPACK_OUTER                                                                            \
  const long tiles_k = (kn + DLB_TILE - 1) / DLB_TILE;                                        \
  const long per_row = tiles_k * ((jn + DLB_TILE - 1) / DLB_TILE);                            \
  const long total = rows * per_row;                                                          \
  for (long item = (long)get_global_id(0); item < total; item += (long)get_global_size(0)) { \
    const long row = item / per_row, t = item % per_row;                                      \
    const long j0 = (t / tiles_k) * DLB_TILE, k0 = (t % tiles_k) * DLB_TILE;                  \
    const long j1 = min(jn, j0 + DLB_TILE), k1 = min(kn, k0 + DLB_TILE);                      \
    DLB_OUTER_OFFSETS(row)                                                                    \
    if (DLB_HAS_REGISTER_BLOCK_##S && js == 1 && kd == 1 && j1 - j0 == DLB_TILE &&            \
        k1 - k0 == DLB_TILE) {                                                                \
      DLB_REGISTER_BLOCK_##S                                                                  \
    } else {                                                                                  \
      for (long j = j0; j < j1; ++j) {                                                        \
        for (long k = k0; k < k1; ++k) dst[dof + j * jd + k * kd] = src[so + j * js + k * ks]; \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
}

#else

/* dst[k] = src[k] along the innermost dimension, for every row of the outer ones; adjacent
 * work-items take adjacent elements. */
#define DLB_ROWS_KERNEL(T, S)                                                                 \
__kernel void dlb_rows_##S(DLB_ROWS_PARAMS(T)) {                                              \
  DLB_UNPACK_OUTER                                                                            \
  const long kstep = (long)get_global_size(0);                                                \
  for (long row = (long)get_global_id(1); row < rows; row += (long)get_global_size(1)) {     \
    DLB_OUTER_OFFSETS(row)                                                                    \
    for (long k = (long)get_global_id(0); k < kn; k += kstep) {                               \
      dst[dof + k * kd] = src[so + k * ks];                                                   \
    }                                                                                         \
  }                                                                                           \
}

/* A work-group reads a 32x32 tile along j (where the source is contiguous) into local memory
 * and writes it along k (where the destination is), so that both sides are accessed in runs. */
#define DLB_TILES_KERNEL(T, S)                                                                \
__kernel __attribute__((reqd_work_group_size(DLB_TILE, DLB_TILE_ROWS, 1)))                   \
void dlb_tiles_##S(DLB_TILES_PARAMS(T)) {                                                     \
  __local T tile[DLB_TILE][DLB_TILE + 1];                                                     \
  DLB_UNPACK_OUTER                                                                            \
  const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);                             \
  const long tiles_k = (kn + DLB_TILE - 1) / DLB_TILE;                                        \
  const long tiles = tiles_k * ((jn + DLB_TILE - 1) / DLB_TILE);                              \
  for (long row = (long)get_group_id(1); row < rows; row += (long)get_num_groups(1)) {       \
    DLB_OUTER_OFFSETS(row)                                                                    \
    for (long t = (long)get_group_id(0); t < tiles; t += (long)get_num_groups(0)) {          \
      const long j0 = (t / tiles_k) * DLB_TILE, k0 = (t % tiles_k) * DLB_TILE;                \
      for (int r = ly; r < DLB_TILE; r += DLB_TILE_ROWS) {                                    \
        const long j = j0 + lx, k = k0 + r;                                                   \
        if (j < jn && k < kn) tile[r][lx] = src[so + j * js + k * ks];                        \
      }                                                                                       \
      barrier(CLK_LOCAL_MEM_FENCE);                                                           \
      for (int r = ly; r < DLB_TILE; r += DLB_TILE_ROWS) {                                    \
        const long j = j0 + r, k = k0 + lx;                                                   \
        if (j < jn && k < kn) dst[dof + j * jd + k * kd] = tile[lx][r];                       \
      }                                                                                       \
      barrier(CLK_LOCAL_MEM_FENCE);                                                           \
    }                                                                                         \
  }                                                                                           \
}

#endif

DLB_ROWS_KERNEL(uchar, 1)
DLB_ROWS_KERNEL(ushort, 2)
DLB_ROWS_KERNEL(uint, 4)
DLB_ROWS_KERNEL(ulong, 8)
DLB_ROWS_KERNEL(uint4, 16)
#if DLB_WITH_TILES
DLB_TILES_KERNEL(uchar, 1)
DLB_TILES_KERNEL(ushort, 2)
DLB_TILES_KERNEL(uint, 4)
DLB_TILES_KERNEL(ulong, 8)
DLB_TILES_KERNEL(uint4, 16)
#endif
