/* interop_cases.c - the case table of the interop matrix and the rules that give its values
 * (see interop_agent.h). Part of the runner every host links, and compiled into the C adapter. */
#include "interop_agent.h"

#define NONE INT64_MIN /* an omitted slice bound (DLB_SLICE_NONE) */

/* name, code, bits, base_ndim, base_shape, op, op_args, ndim, shape, strides, first, flags,
 * legacy_refused. DLPack codes: 0 int, 1 uint, 2 float. */
const interop_case interop_cases[] = {
    {"float32 2x3", 2, 32, 2, {2, 3}, INTEROP_OP_NONE, {0, 0, 0}, 2, {2, 3}, {3, 1}, 0, 0, 0},
    {"int32 transposed", 0, 32, 2, {2, 3}, INTEROP_OP_TRANSPOSE, {0, 0, 0}, 2, {3, 2}, {1, 3}, 0, 0, 0},
    {"float64 row slice (offset)", 2, 64, 2, {4, 3}, INTEROP_OP_SLICE, {1, 3, 1}, 2, {2, 3}, {3, 1}, 3, 0, 0},
    {"int64 column select", 0, 64, 2, {3, 4}, INTEROP_OP_SELECT, {1, 2, 0}, 1, {3, 0}, {4, 0}, 2, 0, 0},
    {"uint8 0-d", 1, 8, 1, {5, 0}, INTEROP_OP_SELECT, {0, 3, 0}, 0, {0, 0}, {0, 0}, 3, 0, 0},
    {"float32 empty 0x3", 2, 32, 2, {0, 3}, INTEROP_OP_NONE, {0, 0, 0}, 2, {0, 3}, {3, 1}, 0, 0, 0},
    {"float32 read-only", 2, 32, 2, {2, 2}, INTEROP_OP_READ_ONLY, {0, 0, 0}, 2, {2, 2}, {2, 1}, 0, 1, 1},
    {"uint8 2x4", 1, 8, 2, {2, 4}, INTEROP_OP_NONE, {0, 0, 0}, 2, {2, 4}, {4, 1}, 0, 0, 0},
    {"int64 negative stride", 0, 64, 1, {5, 0}, INTEROP_OP_SLICE, {NONE, NONE, -2}, 1, {3, 0}, {-2, 0}, 4, 0, 0},
    {"float32 copy (IS_COPIED)", 2, 32, 2, {2, 3}, INTEROP_OP_COPY, {0, 0, 0}, 2, {2, 3}, {3, 1}, 0, 2, 0},
};
const int interop_case_count = (int)(sizeof interop_cases / sizeof interop_cases[0]);

double interop_base_value(int64_t dtype_code, int64_t i) {
  if (dtype_code == 1) return (double)(i * 3 + 1);
  if (dtype_code == 2) return (double)(i * 3 - 4) / 2.0;
  return (double)(i * 3 - 4);
}

int64_t interop_element_count(const interop_case* c) {
  int64_t n = 1;
  int64_t d;
  for (d = 0; d < c->ndim; ++d) n *= c->shape[d];
  return n;
}

double interop_expected_value(const interop_case* c, int64_t k) {
  int64_t pos = c->first;
  int64_t d;
  for (d = c->ndim - 1; d >= 0; --d) {
    pos += (k % c->shape[d]) * c->strides[d];
    k /= c->shape[d];
  }
  return interop_base_value(c->dtype_code, pos);
}

double interop_expected_checksum(const interop_case* c) {
  double sum = 0.0;
  int64_t k;
  int64_t n = interop_element_count(c);
  for (k = 0; k < n; ++k) sum += interop_expected_value(c, k) * (double)(k + 1);
  return sum;
}
