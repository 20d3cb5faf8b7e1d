// The transpose kernels of the host copies (copy_transpose.cc): the inner 2-d block of a strided
// copy whose destination is contiguous along one dimension and whose source is contiguous along
// another. Private to the library; the tests of the kernels (tests/core/test_copy_kernels.cc)
// include it to run every kernel on any machine that has its instructions.
#ifndef DLBRIDGE_SRC_COPY_TRANSPOSE_HPP_
#define DLBRIDGE_SRC_COPY_TRANSPOSE_HPP_

#include <cstddef>
#include <cstdint>

#include "internal.hpp"

namespace dlb {

// The instruction sets the transpose kernels are written for, weakest first. kPortable is plain
// C++ and runs everywhere; kSse2 and kAvx2 exist on x86-64 only.
enum class CopyIsa : int { kPortable = 0, kSse2 = 1, kAvx2 = 2 };

// Whether this build and this CPU can run the kernels of `isa`.
bool copy_isa_supported(CopyIsa isa);

// The kernels host copies use: the strongest this CPU runs, unless a test forced others.
CopyIsa active_copy_isa();

// Host copies that write at least this many bytes use streaming (non-temporal) stores where the
// kernel has them: such an output does not stay in cache anyway, and streaming spares reading
// every destination line before writing it.
uint64_t streaming_threshold();

// For tests: makes host copies use `isa` and `threshold` until the next call (returns false and
// changes nothing when the CPU cannot run `isa`). restore_copy_kernels() goes back to the
// defaults. Not for concurrent use with copies on other threads that must keep the defaults.
bool force_copy_kernels(CopyIsa isa, uint64_t threshold);
void restore_copy_kernels();

// Copies the j.n x k.n block of `size`-byte elements whose element (a, b) is at
// s + a * j.ss + b * k.ss to d + a * j.ds + b * k.ds (strides in bytes, any sign; the two
// ranges must not overlap) with the kernels of `isa`, which must be supported. The register
// transposes need k.ds == size and j.ss == size (the destination contiguous along k, the source
// along j) and a size of 1, 2, 4 or 8; other blocks are copied by the portable loop. `stream`
// asks for streaming stores, which the kernels use where whole destination lines can be written
// at once.
void transpose_block(char* d, const char* s, const StridedDim& j, const StridedDim& k, size_t size,
                     CopyIsa isa, bool stream);

}  // namespace dlb

#endif  // DLBRIDGE_SRC_COPY_TRANSPOSE_HPP_
