/* The DLPack conformance kit: the values the kit's tensors hold (dlpc_expected_values) and the
 * helpers the checks share to lay them out, compare them and word their results. */
#define _GNU_SOURCE
#include "conformance_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- values --------------------------------------------------------------------------------- */

int is_subbyte(DLDataType t) { return (uint32_t)t.bits * t.lanes < 8; }

/* Bits one element occupies in storage. */
uint32_t storage_bits(DLDataType t, uint64_t flags) {
  uint32_t bits = (uint32_t)t.bits * t.lanes;
  return (bits < 8 && (flags & PADDED)) ? 8 : bits;
}

static uint64_t storage_size(DLDataType t, int64_t count, uint64_t flags) {
  return ((uint64_t)count * storage_bits(t, flags) + 7) / 8;
}

static uint16_t half_of(unsigned n) {
  if (n == 0) return 0;
  int e = 0;
  while ((1u << (e + 1)) <= n) ++e;
  unsigned mantissa = (unsigned)(((double)n / (double)(1u << e) - 1.0) * 1024.0);
  return (uint16_t)(((unsigned)(e + 15) << 10) | mantissa);
}

static int dtype_supported(DLDataType t) {
  if (t.lanes != 1) return 0;
  switch (t.code) {
    case kDLInt:
    case kDLUInt: return t.bits == 4 || t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLFloat: return t.bits == 16 || t.bits == 32 || t.bits == 64;
    case kDLBfloat: return t.bits == 16;
    case kDLComplex: return t.bits == 64 || t.bits == 128;
    case kDLBool: return t.bits == 8;
    default: return 0;
  }
}

uint64_t dlpc_expected_values(DLDataType t, int64_t count, uint64_t flags, void* out,
                              uint64_t capacity) {
  if (!dtype_supported(t) || count < 0) return 0;
  uint64_t size = storage_size(t, count, flags);
  unsigned char* buf = (unsigned char*)calloc(size ? size : 1, 1);
  if (!buf) return 0;
  uint32_t ebits = storage_bits(t, flags);
  for (int64_t i = 0; i < count; ++i) {
    unsigned v = (t.code == kDLBool) ? (unsigned)(i % 2) : (unsigned)(i % 7 + 1);
    if (ebits < 8) {
      buf[(i * ebits) / 8] |= (unsigned char)(v << ((i * ebits) % 8));
      continue;
    }
    unsigned char* p = buf + (size_t)i * (ebits / 8);
    if (t.code == kDLInt || t.code == kDLUInt || t.code == kDLBool) {
      uint64_t x = v;
      memcpy(p, &x, ebits / 8); /* little-endian hosts: the low bytes first */
    } else if (t.code == kDLFloat && t.bits == 16) {
      uint16_t h = half_of(v);
      memcpy(p, &h, 2);
    } else if ((t.code == kDLFloat && t.bits == 32) || (t.code == kDLComplex && t.bits == 64)) {
      float f = (float)v;
      memcpy(p, &f, 4);
    } else if ((t.code == kDLFloat && t.bits == 64) || (t.code == kDLComplex && t.bits == 128)) {
      double d = (double)v;
      memcpy(p, &d, 8);
    } else if (t.code == kDLBfloat) {
      float f = (float)v;
      uint32_t w;
      memcpy(&w, &f, 4);
      uint16_t b = (uint16_t)(w >> 16);
      memcpy(p, &b, 2);
    }
  }
  if (out) memcpy(out, buf, size < capacity ? size : capacity);
  free(buf);
  return size;
}

/* ---- layout helpers ------------------------------------------------------------------------- */

int64_t shape_count(int32_t ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int32_t d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

void compact_strides(int32_t ndim, const int64_t* shape, int64_t* out) {
  int64_t s = 1;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    out[d] = s;
    s *= shape[d] > 0 ? shape[d] : 1;
  }
}

/* Element offset (in elements, from the first element) of C-order element i. */
static int64_t element_offset(int32_t ndim, const int64_t* shape, const int64_t* strides, int64_t i) {
  int64_t off = 0;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    off += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return off;
}

static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* Copies the elements of a strided tensor starting at `first` into `out` (compact, C order). */
void gather(const unsigned char* first, DLDataType t, uint64_t flags, int32_t ndim,
            const int64_t* shape, const int64_t* strides, unsigned char* out) {
  uint32_t ebits = storage_bits(t, flags);
  int64_t n = shape_count(ndim, shape);
  memset(out, 0, storage_size(t, n, flags));
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = ndim ? element_offset(ndim, shape, strides, i) : 0;
    if (ebits >= 8) {
      memcpy(out + (size_t)i * (ebits / 8), first + off * (int64_t)(ebits / 8), ebits / 8);
    } else {
      int64_t bit = off * (int64_t)ebits;
      unsigned v = (first[floor_div(bit, 8)] >> (bit - 8 * floor_div(bit, 8))) & ((1u << ebits) - 1);
      out[(i * ebits) / 8] |= (unsigned char)(v << ((i * ebits) % 8));
    }
  }
}

/* The inverse: writes compact values into a strided layout at `first`. */
void scatter(unsigned char* first, DLDataType t, uint64_t flags, int32_t ndim,
             const int64_t* shape, const int64_t* strides, const unsigned char* values) {
  uint32_t ebits = storage_bits(t, flags);
  int64_t n = shape_count(ndim, shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = ndim ? element_offset(ndim, shape, strides, i) : 0;
    if (ebits >= 8) {
      memcpy(first + off * (int64_t)(ebits / 8), values + (size_t)i * (ebits / 8), ebits / 8);
    } else {
      unsigned v = (values[(i * ebits) / 8] >> ((i * ebits) % 8)) & ((1u << ebits) - 1);
      int64_t bit = off * (int64_t)ebits;
      unsigned char* p = first + floor_div(bit, 8);
      unsigned shift = (unsigned)(bit - 8 * floor_div(bit, 8));
      *p = (unsigned char)((*p & ~(((1u << ebits) - 1) << shift)) | (v << shift));
    }
  }
}

/* Lowest and one-past-highest element offsets a layout touches. */
void offset_range(int32_t ndim, const int64_t* shape, const int64_t* strides, int64_t* lo,
                  int64_t* hi) {
  *lo = 0;
  *hi = 1;
  for (int32_t d = 0; d < ndim; ++d) {
    if (shape[d] == 0) {
      *hi = 0;
      return;
    }
    int64_t reach = (shape[d] - 1) * strides[d];
    if (reach < 0) *lo += reach; else *hi += reach;
  }
}

/* Compares storage bytes of `count` elements; the bits after the last packed sub-byte element
 * carry nothing and are ignored. */
int values_equal(const unsigned char* a, const unsigned char* b, DLDataType t, uint64_t flags,
                 int64_t count) {
  uint64_t size = storage_size(t, count, flags);
  if (size == 0) return 1;
  if (memcmp(a, b, size - 1) != 0) return 0;
  unsigned used = (unsigned)(((uint64_t)count * storage_bits(t, flags)) % 8);
  unsigned mask = used ? (1u << used) - 1 : 0xFFu;
  return ((a[size - 1] ^ b[size - 1]) & mask) == 0;
}

void say(dlpc_result* r, int outcome, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  r->outcome = outcome;
  vsnprintf(r->reason, sizeof r->reason, fmt, ap);
  va_end(ap);
}

char* format_dims(char* buf, size_t size, int32_t ndim, const int64_t* v) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int32_t d = 0; d < ndim && used < size; ++d)
    used += (size_t)snprintf(buf + used, size - used, d ? ",%lld" : "%lld", (long long)v[d]);
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}
