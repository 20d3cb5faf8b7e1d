/* interop_cases.c - the case table of the interop matrix and the rules that give its values
 * (see interop_runner.h). Part of the runner every host links, and compiled into the C adapter. */
#include "interop_runner.h"

#define NONE INT64_MIN /* an omitted slice bound (DLB_SLICE_NONE) */

/* name, code, bits, base_ndim, base_shape, op, op_args, ndim, shape, strides, first, flags,
 * legacy_refused. DLPack codes: 0 int, 1 uint, 2 float. */
const dlpc_exchange_case interop_cases[] = {
    {"float32 2x3", 2, 32, 2, {2, 3}, DLPC_EXCHANGE_OP_NONE, {0, 0, 0}, 2, {2, 3}, {3, 1}, 0, 0, 0},
    {"int32 transposed", 0, 32, 2, {2, 3}, DLPC_EXCHANGE_OP_TRANSPOSE, {0, 0, 0}, 2, {3, 2}, {1, 3}, 0, 0, 0},
    {"float64 row slice (offset)", 2, 64, 2, {4, 3}, DLPC_EXCHANGE_OP_SLICE, {1, 3, 1}, 2, {2, 3}, {3, 1}, 3, 0, 0},
    {"int64 column select", 0, 64, 2, {3, 4}, DLPC_EXCHANGE_OP_SELECT, {1, 2, 0}, 1, {3, 0}, {4, 0}, 2, 0, 0},
    {"uint8 0-d", 1, 8, 1, {5, 0}, DLPC_EXCHANGE_OP_SELECT, {0, 3, 0}, 0, {0, 0}, {0, 0}, 3, 0, 0},
    {"float32 empty 0x3", 2, 32, 2, {0, 3}, DLPC_EXCHANGE_OP_NONE, {0, 0, 0}, 2, {0, 3}, {3, 1}, 0, 0, 0},
    {"float32 read-only", 2, 32, 2, {2, 2}, DLPC_EXCHANGE_OP_READ_ONLY, {0, 0, 0}, 2, {2, 2}, {2, 1}, 0, 1, 1},
    {"uint8 2x4", 1, 8, 2, {2, 4}, DLPC_EXCHANGE_OP_NONE, {0, 0, 0}, 2, {2, 4}, {4, 1}, 0, 0, 0},
    {"int64 negative stride", 0, 64, 1, {5, 0}, DLPC_EXCHANGE_OP_SLICE, {NONE, NONE, -2}, 1, {3, 0}, {-2, 0}, 4, 0, 0},
    {"float32 copy (IS_COPIED)", 2, 32, 2, {2, 3}, DLPC_EXCHANGE_OP_COPY, {0, 0, 0}, 2, {2, 3}, {3, 1}, 0, 2, 0},
};
const int interop_case_count = (int)(sizeof interop_cases / sizeof interop_cases[0]);

double interop_base_value(int64_t dtype_code, int64_t i) {
  if (dtype_code == 1) return (double)(i * 3 + 1);
  if (dtype_code == 2) return (double)(i * 3 - 4) / 2.0;
  return (double)(i * 3 - 4);
}
