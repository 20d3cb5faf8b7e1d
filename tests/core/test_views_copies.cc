// Suite 'core': layout queries, zero-copy views and copies.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support.hpp"

using test::Counter;
using test::cpu;
using test::dtype;
using test::f32;
using test::fresh_error;
using test::msg;

namespace {

// Owns a tensor for the duration of a test case.
struct Owned {
  DLManagedTensorVersioned* t = nullptr;
  Owned() = default;
  explicit Owned(DLManagedTensorVersioned* tensor) : t(tensor) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { dlb_tensor_free(t); }
  DLManagedTensorVersioned** out() { return &t; }
  DLTensor* dl() { return &t->dl_tensor; }
};

// Allocates a CPU tensor of `shape` and fills element i (in row-major order) with i.
template <class T>
DLManagedTensorVersioned* arange(std::vector<int64_t> shape, DLDataType type) {
  DLManagedTensorVersioned* t = nullptr;
  dlb_error err = fresh_error();
  REQUIRE(dlb_tensor_allocate(cpu(), type, static_cast<int32_t>(shape.size()), shape.data(),
                              nullptr, 0, &t, &err) == DLB_OK);
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  T* p = static_cast<T*>(t->dl_tensor.data);
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(i);
  return t;
}

DLManagedTensorVersioned* arange_f32(std::vector<int64_t> shape) {
  return arange<float>(std::move(shape), f32());
}

// Reads element `index` of a host tensor through its strides and byte_offset.
template <class T>
T at(const DLTensor* t, std::vector<int64_t> index) {
  std::vector<int64_t> strides(static_cast<size_t>(t->ndim));
  REQUIRE(dlb_tensor_get_strides(t, static_cast<int32_t>(strides.size()), strides.data(), nullptr) == DLB_OK);
  int64_t offset = 0;
  for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
  T value;
  std::memcpy(&value, static_cast<const char*>(t->data) + t->byte_offset + offset * static_cast<int64_t>(sizeof(T)),
              sizeof(T));
  return value;
}

std::vector<int64_t> shape_of(const DLTensor* t) { return std::vector<int64_t>(t->shape, t->shape + t->ndim); }
std::vector<int64_t> strides_of(const DLTensor* t) {
  return std::vector<int64_t>(t->strides, t->strides + t->ndim);
}

dlb_slice all() { return dlb_slice{DLB_SLICE_NONE, DLB_SLICE_NONE, 1}; }
dlb_slice sl(int64_t start, int64_t stop, int64_t step = 1) { return dlb_slice{start, stop, step}; }

// A borrowed DLTensor over caller arrays, for the query functions.
struct Desc {
  std::vector<int64_t> shape, strides;
  DLTensor t{};
  Desc(std::vector<int64_t> s, std::vector<int64_t> st, DLDataType type = f32(), uint64_t offset = 0,
       void* data = reinterpret_cast<void*>(0x1000))
      : shape(std::move(s)), strides(std::move(st)) {
    t.data = data;
    t.device = cpu();
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = type;
    t.shape = shape.empty() ? nullptr : shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    t.byte_offset = offset;
  }
};

int is_c(std::vector<int64_t> shape, std::vector<int64_t> strides) {
  Desc d(std::move(shape), std::move(strides));
  return dlb_tensor_is_c_contiguous(&d.t);
}
int is_f(std::vector<int64_t> shape, std::vector<int64_t> strides) {
  Desc d(std::move(shape), std::move(strides));
  return dlb_tensor_is_f_contiguous(&d.t);
}

}  // namespace

// ---- queries -------------------------------------------------------------------------------

TEST_CASE("element count, byte size and byte span") {
  dlb_error err = fresh_error();
  int64_t count = -1;
  Desc a({2, 3, 4}, {});
  CHECK(dlb_tensor_element_count(&a.t, &count, &err) == DLB_OK);
  CHECK(count == 24);
  uint64_t bytes = 0;
  CHECK(dlb_tensor_byte_size(&a.t, 0, &bytes, &err) == DLB_OK);
  CHECK(bytes == 96);
  int64_t begin = -1;
  int64_t span = 0;
  CHECK(dlb_tensor_byte_span(&a.t, 0, &begin, &span, &err) == DLB_OK);
  CHECK(begin == 0);
  CHECK(span == 96);

  Desc scalar({}, {});
  CHECK(dlb_tensor_element_count(&scalar.t, &count, &err) == DLB_OK);
  CHECK(count == 1);

  Desc empty({3, 0, 5}, {});
  CHECK(dlb_tensor_element_count(&empty.t, &count, &err) == DLB_OK);
  CHECK(count == 0);
  CHECK(dlb_tensor_byte_span(&empty.t, 0, &begin, &span, &err) == DLB_OK);
  CHECK(span == 0);

  // Negative strides reach back from byte_offset.
  Desc reversed({4}, {-1}, f32(), 12);
  CHECK(dlb_tensor_byte_span(&reversed.t, 0, &begin, &span, &err) == DLB_OK);
  CHECK(begin == 0);
  CHECK(span == 16);
  Desc gapped({2, 2}, {10, 2}, f32(), 8);
  CHECK(dlb_tensor_byte_span(&gapped.t, 0, &begin, &span, &err) == DLB_OK);
  CHECK(begin == 8);
  CHECK(span == (10 + 2 + 1) * 4);

  // Packed sub-byte data: 5 float4 elements take 3 bytes; padded they take 5.
  Desc packed({5}, {1}, dtype(kDLFloat4_e2m1fn, 4));
  CHECK(dlb_tensor_byte_size(&packed.t, 0, &bytes, &err) == DLB_OK);
  CHECK(bytes == 3);
  CHECK(dlb_tensor_byte_span(&packed.t, 0, &begin, &span, &err) == DLB_OK);
  CHECK(span == 3);
  CHECK(dlb_tensor_byte_size(&packed.t, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, &bytes, &err) == DLB_OK);
  CHECK(bytes == 5);

  CHECK(dlb_tensor_element_count(nullptr, &count, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "tensor is NULL");
  CHECK(dlb_tensor_element_count(&a.t, nullptr, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "out is NULL");
  Desc negative({2, -3}, {});
  CHECK(dlb_tensor_element_count(&negative.t, &count, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "shape[1] is -3; extents must not be negative");
  Desc huge({INT64_MAX / 2, 3}, {});
  CHECK(dlb_tensor_element_count(&huge.t, &count, &err) == DLB_ERR_OVERFLOW);
  CHECK(msg(err) == "element count of shape (4611686018427387903, 3) overflows 63 bits");
  Desc far({2}, {INT64_MAX});
  CHECK(dlb_tensor_byte_span(&far.t, 0, &begin, &span, &err) == DLB_ERR_OVERFLOW);
  CHECK(msg(err) == "byte span of the tensor exceeds 2^60 bytes");
}

TEST_CASE("a tensor whose memory would wrap around the address space is refused") {
  dlb_error err = fresh_error();
  // Element 1 sits 2^59 bytes below data: below address 0.
  Desc below({2}, {-(int64_t{1} << 59)}, dtype(kDLInt, 8), 0, reinterpret_cast<void*>(0x1000));
  CHECK(dlb_tensor_validate(&below.t, 0, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) ==
        "the tensor's memory wraps around the address space (data 0x1000, byte_offset 0)");
  // The same layout with byte_offset covering the reach is fine.
  below.t.byte_offset = uint64_t{1} << 59;
  CHECK(dlb_tensor_validate(&below.t, 0, &err) == DLB_OK);
  // Past the top of the address space.
  Desc above({2}, {int64_t{1} << 59}, dtype(kDLInt, 8), 0, reinterpret_cast<void*>(UINTPTR_MAX - 15));
  CHECK(dlb_tensor_validate(&above.t, 0, &err) == DLB_ERR_INVALID_ARGUMENT);
  // Opaque handles are not addresses: only byte_offset counts for them.
  Desc handle({2}, {1}, dtype(kDLInt, 8), 0, reinterpret_cast<void*>(UINTPTR_MAX));
  handle.t.device = DLDevice{kDLOpenCL, 0};
  CHECK(dlb_tensor_validate(&handle.t, 0, &err) == DLB_OK);
}

TEST_CASE("strides are synthesised when NULL") {
  Desc a({2, 3, 4}, {});
  int64_t strides[3] = {};
  CHECK(dlb_tensor_get_strides(&a.t, static_cast<int32_t>(std::size(strides)), strides, nullptr) == DLB_OK);
  CHECK(strides[0] == 12);
  CHECK(strides[1] == 4);
  CHECK(strides[2] == 1);
  Desc b({2, 3}, {1, 2});
  CHECK(dlb_tensor_get_strides(&b.t, static_cast<int32_t>(std::size(strides)), strides, nullptr) == DLB_OK);
  CHECK(strides[0] == 1);
  CHECK(strides[1] == 2);
  int64_t shape[3] = {5, 0, 2};
  dlb_compact_strides(3, shape, strides);
  CHECK(strides[0] == 2);
  CHECK(strides[1] == 2);
  CHECK(strides[2] == 1);
  dlb_error err = fresh_error();
  CHECK(dlb_tensor_get_strides(&a.t, 2, nullptr, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "out is NULL");
}

TEST_CASE("contiguity ignores extent-1 dimensions and treats empty tensors as contiguous") {
  CHECK(is_c({2, 3}, {}) == 1);
  CHECK(is_c({2, 3}, {3, 1}) == 1);
  CHECK(is_c({2, 3}, {1, 2}) == 0);
  CHECK(is_f({2, 3}, {1, 2}) == 1);
  CHECK(is_f({2, 3}, {}) == 0);
  CHECK(is_f({1, 3}, {}) == 1);
  // The stride of an extent-1 dimension is arbitrary.
  CHECK(is_c({2, 1, 3}, {3, 999, 1}) == 1);
  CHECK(is_f({2, 1, 3}, {1, -7, 2}) == 1);
  // Any extent 0: contiguous whatever the strides.
  CHECK(is_c({2, 0, 3}, {5, 7, 11}) == 1);
  CHECK(is_f({2, 0, 3}, {5, 7, 11}) == 1);
  CHECK(is_c({}, {}) == 1);
  CHECK(is_c({4}, {-1}) == 0);
  CHECK(is_c({4}, {2}) == 0);
  CHECK(dlb_tensor_is_c_contiguous(nullptr) == 0);
  Desc bad({2, -1}, {});
  CHECK(dlb_tensor_is_c_contiguous(&bad.t) == 0);
}

TEST_CASE("alignment, host readability and flags") {
  alignas(256) static unsigned char buffer[512];
  Desc a({4}, {}, f32(), 0, buffer);
  CHECK(dlb_tensor_is_aligned(&a.t, 256) == 1);
  a.t.byte_offset = 4;
  CHECK(dlb_tensor_is_aligned(&a.t, 4) == 1);
  CHECK(dlb_tensor_is_aligned(&a.t, 8) == 0);
  CHECK(dlb_tensor_is_aligned(&a.t, 3) == 0);
  CHECK(dlb_tensor_is_aligned(&a.t, 0) == 0);
  CHECK(dlb_tensor_is_aligned(nullptr, 4) == 0);
  // For opaque handles only the offset counts.
  a.t.device = DLDevice{kDLOpenCL, 0};
  a.t.data = reinterpret_cast<void*>(0x3);
  a.t.byte_offset = 256;
  CHECK(dlb_tensor_is_aligned(&a.t, 256) == 1);

  CHECK(dlb_tensor_is_host_readable(&a.t) == 0);
  a.t.device = DLDevice{kDLCUDAHost, 0};
  CHECK(dlb_tensor_is_host_readable(&a.t) == 1);
  CHECK(dlb_tensor_is_host_readable(nullptr) == 0);

  Owned t(arange_f32({2}));
  CHECK(dlb_tensor_flags(t.t) == 0);
  CHECK(dlb_tensor_is_read_only(t.t) == 0);
  CHECK(dlb_tensor_flags(nullptr) == 0);
  CHECK(dlb_tensor_is_read_only(nullptr) == 0);
}

// ---- views ---------------------------------------------------------------------------------

TEST_CASE("slices follow Python semantics") {
  const int64_t start = dlb_tensor_live_count();
  Owned base(arange_f32({10}));
  dlb_error err = fresh_error();
  struct Case {
    dlb_slice s;
    std::vector<float> expected;
  };
  const Case cases[] = {
      {sl(2, 5), {2, 3, 4}},
      {sl(-3, DLB_SLICE_NONE), {7, 8, 9}},
      {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1), {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {sl(8, 2, -2), {8, 6, 4}},
      {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, 3), {0, 3, 6, 9}},
      {sl(-100, 100), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {sl(100, -100, -4), {9, 5, 1}},
      {sl(5, 5), {}},
      {sl(5, 2), {}},
      {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, DLB_SLICE_NONE), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {sl(-1, DLB_SLICE_NONE, -1), {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
      {sl(3, -1, -1), {}},
  };
  for (const Case& c : cases) {
    Owned view;
    REQUIRE(dlb_tensor_slice(base.t, 1, &c.s, view.out(), &err) == DLB_OK);
    REQUIRE(view.dl()->shape[0] == static_cast<int64_t>(c.expected.size()));
    for (size_t i = 0; i < c.expected.size(); ++i) {
      CHECK(at<float>(view.dl(), {static_cast<int64_t>(i)}) == c.expected[i]);
    }
    // A CPU view's data points at its first element; byte_offset stays 0.
    CHECK(view.dl()->byte_offset == 0);
  }
  CHECK(dlb_tensor_live_count() == start + 1);
}

TEST_CASE("2-d slices with negative steps, byte_offset and slices of slices") {
  Owned base(arange_f32({4, 6}));
  dlb_error err = fresh_error();
  dlb_slice s[2] = {sl(3, 0, -1), sl(1, 6, 2)};
  Owned v;
  REQUIRE(dlb_tensor_slice(base.t, 2, s, v.out(), &err) == DLB_OK);
  CHECK(shape_of(v.dl()) == std::vector<int64_t>{3, 3});
  CHECK(strides_of(v.dl()) == std::vector<int64_t>{-6, 2});
  CHECK(v.dl()->data == static_cast<char*>(base.dl()->data) + (3 * 6 + 1) * 4);
  CHECK(v.dl()->byte_offset == 0);
  CHECK(at<float>(v.dl(), {0, 0}) == 19);
  CHECK(at<float>(v.dl(), {2, 2}) == 11);
  // A slice of that slice composes offsets and steps.
  dlb_slice s2[2] = {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1), sl(1, DLB_SLICE_NONE)};
  Owned v2;
  REQUIRE(dlb_tensor_slice(v.t, 2, s2, v2.out(), &err) == DLB_OK);
  CHECK(shape_of(v2.dl()) == std::vector<int64_t>{3, 2});
  CHECK(at<float>(v2.dl(), {0, 0}) == 9);
  CHECK(at<float>(v2.dl(), {2, 1}) == 23);
  // Fewer slices than dimensions: the rest is taken whole.
  dlb_slice first = sl(1, 2);
  Owned row;
  REQUIRE(dlb_tensor_slice(base.t, 1, &first, row.out(), &err) == DLB_OK);
  CHECK(shape_of(row.dl()) == std::vector<int64_t>{1, 6});
  CHECK(at<float>(row.dl(), {0, 5}) == 11);
}

TEST_CASE("views keep the memory alive after the base is freed, and carry flags") {
  Counter released;
  std::vector<float> data{1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  DLTensor desc{data.data(), cpu(), 2, f32(), shape, nullptr, 0};
  const int64_t start = dlb_tensor_live_count();
  DLManagedTensorVersioned* base = nullptr;
  REQUIRE(dlb_tensor_wrap(&desc, DLPACK_FLAG_BITMASK_READ_ONLY, test::count_release, &released, &base,
                          nullptr) == DLB_OK);
  DLManagedTensorVersioned *t = nullptr, *r = nullptr, *s = nullptr, *p = nullptr, *sel = nullptr;
  dlb_slice rev = sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1);
  int64_t flat[1] = {6};
  int32_t axes[2] = {1, 0};
  REQUIRE(dlb_tensor_transpose(base, &t, nullptr) == DLB_OK);
  REQUIRE(dlb_tensor_reshape(base, 1, flat, &r, nullptr) == DLB_OK);
  REQUIRE(dlb_tensor_slice(r, 1, &rev, &s, nullptr) == DLB_OK);
  REQUIRE(dlb_tensor_permute(t, 2, axes, &p, nullptr) == DLB_OK);
  REQUIRE(dlb_tensor_select(p, 0, 1, &sel, nullptr) == DLB_OK);
  for (DLManagedTensorVersioned* v : {t, r, s, p, sel}) {
    CHECK(dlb_tensor_is_read_only(v) == 1);
    CHECK(v->version.major == 1);
    CHECK(v->version.minor == 3);
  }
  CHECK(dlb_tensor_live_count() == start + 6);
  dlb_tensor_free(base);
  dlb_tensor_free(r);
  CHECK(released.get() == 0);
  CHECK(at<float>(&s->dl_tensor, {0}) == 6);
  CHECK(at<float>(&t->dl_tensor, {2, 1}) == 6);
  CHECK(at<float>(&sel->dl_tensor, {2}) == 6);
  dlb_tensor_free(t);
  dlb_tensor_free(p);
  dlb_tensor_free(s);
  CHECK(released.get() == 0);
  dlb_tensor_free(sel);
  CHECK(released.get() == 1);
  CHECK(dlb_tensor_live_count() == start);
}

TEST_CASE("slice and select errors") {
  Owned base(arange_f32({2, 3}));
  dlb_error err = fresh_error();
  Owned v;
  dlb_slice zero[1] = {sl(0, 2, 0)};
  CHECK(dlb_tensor_slice(base.t, 1, zero, v.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "slice step is 0 in dimension 0");
  CHECK(v.t == nullptr);
  dlb_slice three[3] = {all(), all(), all()};
  CHECK(dlb_tensor_slice(base.t, 3, three, v.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "3 slices given for a tensor with 2 dimensions");
  CHECK(dlb_tensor_slice(base.t, -1, three, v.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "-1 slices given for a tensor with 2 dimensions");
  CHECK(dlb_tensor_slice(base.t, 1, nullptr, v.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "slices is NULL");
  CHECK(dlb_tensor_slice(base.t, 1, three, nullptr, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "out is NULL");
  CHECK(dlb_tensor_slice(nullptr, 1, three, v.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "tensor is NULL");

  CHECK(dlb_tensor_select(base.t, 2, 0, v.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "axis 2 is out of range for a tensor with 2 dimensions");
  CHECK(dlb_tensor_select(base.t, -3, 0, v.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "axis -3 is out of range for a tensor with 2 dimensions");
  CHECK(dlb_tensor_select(base.t, 1, 3, v.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "index 3 is out of range for axis 1 with extent 3");
  CHECK(dlb_tensor_select(base.t, -1, -4, v.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "index -4 is out of range for axis 1 with extent 3");
  REQUIRE(dlb_tensor_select(base.t, -1, -1, v.out(), &err) == DLB_OK);
  CHECK(shape_of(v.dl()) == std::vector<int64_t>{2});
  CHECK(at<float>(v.dl(), {1}) == 5);

  // A tensor that dlbridge did not make must be imported before it is viewed.
  Counter deleted;
  test::ForeignVersioned* foreign = test::make_foreign(deleted, f32(), {2, 2});
  Owned w;
  CHECK(dlb_tensor_slice(&foreign->managed, 0, nullptr, w.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "tensor was not made by dlbridge; import it with dlb_tensor_import first");
  CHECK(dlb_tensor_transpose(&foreign->managed, w.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(deleted.get() == 0);
  foreign->managed.deleter(&foreign->managed);
  CHECK(deleted.get() == 1);
}

TEST_CASE("packed sub-byte views start on byte boundaries") {
  const DLDataType f4 = dtype(kDLFloat4_e2m1fn, 4);
  int64_t shape[1] = {8};
  Owned t;
  dlb_error err = fresh_error();
  REQUIRE(dlb_tensor_allocate(cpu(), f4, 1, shape, nullptr, 0, t.out(), &err) == DLB_OK);
  Owned v;
  dlb_slice odd = sl(1, 8);
  CHECK(dlb_tensor_slice(t.t, 1, &odd, v.out(), &err) == DLB_ERR_LAYOUT);
  CHECK(msg(err) ==
        "a view of packed float4_e2m1fn data must start on a byte boundary, not at bit 4 of a byte");
  dlb_slice even = sl(2, 8, 2);
  REQUIRE(dlb_tensor_slice(t.t, 1, &even, v.out(), &err) == DLB_OK);
  CHECK(v.dl()->data == static_cast<char*>(t.dl()->data) + 1);
  CHECK(v.dl()->byte_offset == 0);
  // Padded data has one byte per element, so any start works.
  Owned p, pv;
  REQUIRE(dlb_tensor_allocate(cpu(), f4, 1, shape, nullptr, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
                              p.out(), &err) == DLB_OK);
  REQUIRE(dlb_tensor_slice(p.t, 1, &odd, pv.out(), &err) == DLB_OK);
  CHECK(pv.dl()->data == static_cast<char*>(p.dl()->data) + 1);
  CHECK(pv.dl()->byte_offset == 0);
}

TEST_CASE("reshape: contiguous, inferred extents, strided when possible") {
  Owned base(arange_f32({2, 3, 4}));
  dlb_error err = fresh_error();
  Owned r;
  int64_t to2[2] = {6, -1};
  REQUIRE(dlb_tensor_reshape(base.t, 2, to2, r.out(), &err) == DLB_OK);
  CHECK(shape_of(r.dl()) == std::vector<int64_t>{6, 4});
  CHECK(strides_of(r.dl()) == std::vector<int64_t>{4, 1});
  CHECK(at<float>(r.dl(), {5, 3}) == 23);

  int64_t scalar_shape[1] = {1};
  Owned one(arange_f32({1, 1}));
  Owned s;
  REQUIRE(dlb_tensor_reshape(one.t, 0, nullptr, s.out(), &err) == DLB_OK);
  CHECK(s.dl()->ndim == 0);
  Owned back;
  REQUIRE(dlb_tensor_reshape(s.t, 1, scalar_shape, back.out(), &err) == DLB_OK);

  // Every other element of the last axis: (2, 3, 2) with strides (12, 4, 2) merges to (6, 2).
  dlb_slice every_other[3] = {all(), all(), sl(DLB_SLICE_NONE, DLB_SLICE_NONE, 2)};
  Owned strided;
  REQUIRE(dlb_tensor_slice(base.t, 3, every_other, strided.out(), &err) == DLB_OK);
  int64_t merged[2] = {6, 2};
  Owned m;
  REQUIRE(dlb_tensor_reshape(strided.t, 2, merged, m.out(), &err) == DLB_OK);
  CHECK(strides_of(m.dl()) == std::vector<int64_t>{4, 2});
  CHECK(at<float>(m.dl(), {5, 1}) == 22);
  // Splitting a strided dimension works too: (2, 3, 2) -> (2, 3, 2, 1).
  int64_t split[4] = {2, 3, 2, 1};
  Owned sp;
  REQUIRE(dlb_tensor_reshape(strided.t, 4, split, sp.out(), &err) == DLB_OK);
  CHECK(at<float>(sp.dl(), {1, 2, 1, 0}) == 22);

  // A transpose cannot be flattened without copying.
  Owned t;
  REQUIRE(dlb_tensor_transpose(base.t, t.out(), &err) == DLB_OK);
  int64_t flat[1] = {24};
  Owned f;
  CHECK(dlb_tensor_reshape(t.t, 1, flat, f.out(), &err) == DLB_ERR_LAYOUT);
  CHECK(msg(err) ==
        "cannot reshape a tensor of shape (4, 3, 2) and strides (1, 4, 12) into shape (24) without copying");
  CHECK(f.t == nullptr);

  // Zero-size tensors reshape freely.
  Owned e(arange_f32({0, 5}));
  int64_t e_shape[3] = {5, 0, 7};
  Owned er;
  REQUIRE(dlb_tensor_reshape(e.t, 3, e_shape, er.out(), &err) == DLB_OK);
  CHECK(shape_of(er.dl()) == std::vector<int64_t>{5, 0, 7});
}

TEST_CASE("reshape errors") {
  Owned base(arange_f32({2, 3, 4}));
  dlb_error err = fresh_error();
  Owned r;
  int64_t bad_count[2] = {5, 5};
  CHECK(dlb_tensor_reshape(base.t, 2, bad_count, r.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "cannot reshape 24 elements into shape (5, 5)");
  int64_t not_divisible[2] = {5, -1};
  CHECK(dlb_tensor_reshape(base.t, 2, not_divisible, r.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "cannot reshape 24 elements into shape (5, -1)");
  int64_t two_inferred[2] = {-1, -1};
  CHECK(dlb_tensor_reshape(base.t, 2, two_inferred, r.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "shape (-1, -1) has more than one -1 extent");
  int64_t negative[2] = {-2, -12};
  CHECK(dlb_tensor_reshape(base.t, 2, negative, r.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "shape[0] is -2; extents must not be negative");
  int64_t zero_infer[2] = {0, -1};
  CHECK(dlb_tensor_reshape(base.t, 2, zero_infer, r.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) ==
        "cannot infer the -1 extent of shape (0, -1): the other extents multiply to 0");
  CHECK(dlb_tensor_reshape(base.t, -1, bad_count, r.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "ndim -1 is negative");
  CHECK(dlb_tensor_reshape(base.t, 65, bad_count, r.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "ndim 65 exceeds the maximum of 64");
  CHECK(dlb_tensor_reshape(base.t, 2, nullptr, r.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "shape is NULL but ndim is 2");
  int64_t overflow[3] = {INT64_MAX, 4, -1};
  CHECK(dlb_tensor_reshape(base.t, 3, overflow, r.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "cannot reshape 24 elements into shape (9223372036854775807, 4, -1)");
  CHECK(r.t == nullptr);
}

TEST_CASE("permute and transpose") {
  Owned base(arange_f32({2, 3, 4}));
  dlb_error err = fresh_error();
  Owned p;
  int32_t axes[3] = {2, 0, -2};
  REQUIRE(dlb_tensor_permute(base.t, 3, axes, p.out(), &err) == DLB_OK);
  CHECK(shape_of(p.dl()) == std::vector<int64_t>{4, 2, 3});
  CHECK(strides_of(p.dl()) == std::vector<int64_t>{1, 12, 4});
  CHECK(at<float>(p.dl(), {3, 1, 2}) == 12 + 8 + 3);
  Owned t;
  REQUIRE(dlb_tensor_transpose(base.t, t.out(), &err) == DLB_OK);
  CHECK(shape_of(t.dl()) == std::vector<int64_t>{4, 3, 2});
  CHECK(at<float>(t.dl(), {3, 2, 1}) == 23);

  Owned bad;  // error calls set *out to NULL: keep them away from the tensors above
  int32_t short_axes[2] = {0, 1};
  CHECK(dlb_tensor_permute(base.t, 2, short_axes, bad.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "permute needs 3 axes, got 2");
  int32_t repeated[3] = {0, 1, -3};
  CHECK(dlb_tensor_permute(base.t, 3, repeated, bad.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "axis 0 appears twice in the permutation");
  int32_t outside[3] = {0, 1, 3};
  CHECK(dlb_tensor_permute(base.t, 3, outside, bad.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "axis 3 is out of range for a tensor with 3 dimensions");
  CHECK(dlb_tensor_permute(base.t, 3, nullptr, bad.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "axes is NULL");
  CHECK(dlb_tensor_transpose(nullptr, bad.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "tensor is NULL");

  // 0-d tensors transpose to themselves.
  Owned scalar;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), 0, nullptr, nullptr, 0, scalar.out(), &err) == DLB_OK);
  Owned st;
  REQUIRE(dlb_tensor_transpose(scalar.t, st.out(), &err) == DLB_OK);
  CHECK(st.dl()->ndim == 0);
}

TEST_CASE("views of opaque-handle tensors move byte_offset only") {
  // A wrapped OpenCL-like handle: the library must never do arithmetic on it.
  void* handle = reinterpret_cast<void*>(0x7);
  int64_t shape[2] = {4, 4};
  DLTensor desc{handle, DLDevice{kDLOpenCL, 0}, 2, f32(), shape, nullptr, 16};
  Owned t;
  dlb_error err = fresh_error();
  REQUIRE(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, t.out(), &err) == DLB_OK);
  dlb_slice s[2] = {sl(3, DLB_SLICE_NONE, -1), sl(1, 3)};
  Owned v;
  REQUIRE(dlb_tensor_slice(t.t, 2, s, v.out(), &err) == DLB_OK);
  CHECK(v.dl()->data == handle);
  CHECK(v.dl()->byte_offset == 16 + (3 * 4 + 1) * 4);
  Owned sel;
  REQUIRE(dlb_tensor_select(t.t, 1, 2, sel.out(), &err) == DLB_OK);
  CHECK(sel.dl()->data == handle);
  CHECK(sel.dl()->byte_offset == 16 + 2 * 4);
}

// ---- copies --------------------------------------------------------------------------------

namespace {

// Checks that `copy` holds the elements of `view` in row-major order, compactly.
template <class T>
void check_same_elements(const DLTensor* view, const DLTensor* copy) {
  REQUIRE(copy->ndim == view->ndim);
  REQUIRE(dlb_tensor_is_c_contiguous(copy) == 1);
  int64_t n = 0;
  REQUIRE(dlb_tensor_element_count(view, &n, nullptr) == DLB_OK);
  std::vector<int64_t> strides(static_cast<size_t>(view->ndim));
  REQUIRE(dlb_tensor_get_strides(view, static_cast<int32_t>(strides.size()), strides.data(), nullptr) == DLB_OK);
  std::vector<int64_t> index(static_cast<size_t>(view->ndim), 0);
  const char* in = static_cast<const char*>(view->data) + view->byte_offset;
  const char* out = static_cast<const char*>(copy->data) + copy->byte_offset;
  int64_t offset = 0, mismatches = 0, first_mismatch = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(in + offset * static_cast<int64_t>(sizeof(T)), out + i * static_cast<int64_t>(sizeof(T)),
                    sizeof(T)) != 0) {
      if (mismatches++ == 0) first_mismatch = i;
    }
    for (int32_t d = view->ndim - 1; d >= 0; --d) {
      const size_t k = static_cast<size_t>(d);
      offset += strides[k];
      if (++index[k] < view->shape[d]) break;
      offset -= strides[k] * view->shape[d];
      index[k] = 0;
    }
  }
  CHECK_MESSAGE(mismatches == 0, "first differing element: " << first_mismatch);
}

template <class T>
void check_copy_of(DLManagedTensorVersioned* view) {
  Owned copy;
  dlb_error err = fresh_error();
  REQUIRE(dlb_tensor_copy(view, cpu(), copy.out(), &err) == DLB_OK);
  CHECK((copy.t->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
  CHECK((copy.t->flags & DLPACK_FLAG_BITMASK_READ_ONLY) == 0);
  CHECK(copy.dl()->data != view->dl_tensor.data);
  check_same_elements<T>(&view->dl_tensor, copy.dl());
}

struct Bytes16 {
  uint64_t lo, hi;
};

}  // namespace

TEST_CASE("copies of every layout are exact") {
  Owned base(arange_f32({5, 7}));
  dlb_error err = fresh_error();
  check_copy_of<float>(base.t);
  Owned t;
  REQUIRE(dlb_tensor_transpose(base.t, t.out(), &err) == DLB_OK);
  check_copy_of<float>(t.t);
  dlb_slice s[2] = {sl(4, DLB_SLICE_NONE, -2), sl(6, 0, -3)};
  Owned v;
  REQUIRE(dlb_tensor_slice(base.t, 2, s, v.out(), &err) == DLB_OK);
  CHECK(v.dl()->data != base.dl()->data);
  check_copy_of<float>(v.t);
  Owned sel;
  REQUIRE(dlb_tensor_select(t.t, 0, 3, sel.out(), &err) == DLB_OK);
  check_copy_of<float>(sel.t);

  // Zero-size and 0-d tensors.
  Owned empty(arange_f32({3, 0}));
  Owned ec;
  REQUIRE(dlb_tensor_copy(empty.t, cpu(), ec.out(), &err) == DLB_OK);
  CHECK(shape_of(ec.dl()) == std::vector<int64_t>{3, 0});
  Owned scalar;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), 0, nullptr, nullptr, 0, scalar.out(), &err) == DLB_OK);
  *static_cast<float*>(scalar.dl()->data) = 42.5f;
  Owned sc;
  REQUIRE(dlb_tensor_copy(scalar.t, cpu(), sc.out(), &err) == DLB_OK);
  CHECK(*static_cast<float*>(sc.dl()->data) == 42.5f);
}

TEST_CASE("copies of every element size, through transposes large enough for the fast paths") {
  dlb_error err = fresh_error();
  auto run = [&](auto tag, DLDataType type, std::vector<int64_t> shape) {
    using T = decltype(tag);
    Owned base(arange<T>(shape, type));
    Owned t;
    REQUIRE(dlb_tensor_transpose(base.t, t.out(), &err) == DLB_OK);
    check_copy_of<T>(t.t);
    dlb_slice s[2] = {sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1), sl(1, DLB_SLICE_NONE, 2)};
    Owned v;
    REQUIRE(dlb_tensor_slice(base.t, 2, s, v.out(), &err) == DLB_OK);
    check_copy_of<T>(v.t);
  };
  run(uint8_t{}, dtype(kDLUInt, 8), {67, 45});
  run(uint16_t{}, dtype(kDLUInt, 16), {67, 45});
  run(float{}, f32(), {67, 45});
  run(double{}, dtype(kDLFloat, 64), {67, 45});
  run(int64_t{}, dtype(kDLInt, 64), {33, 19});
  // 9 MiB of float32: large enough for the streaming-store transpose, with ragged edges.
  run(float{}, f32(), {1537, 1531});
  run(double{}, dtype(kDLFloat, 64), {1031, 1029});
}

TEST_CASE("16-byte and odd-sized elements copy exactly") {
  dlb_error err = fresh_error();
  // complex128: 16 bytes.
  int64_t shape[2] = {9, 11};
  Owned c;
  REQUIRE(dlb_tensor_allocate(cpu(), dtype(kDLComplex, 128), 2, shape, nullptr, 0, c.out(), &err) == DLB_OK);
  auto* p = static_cast<Bytes16*>(c.dl()->data);
  for (uint64_t i = 0; i < 99; ++i) p[i] = Bytes16{i, ~i};
  Owned ct;
  REQUIRE(dlb_tensor_transpose(c.t, ct.out(), &err) == DLB_OK);
  check_copy_of<Bytes16>(ct.t);
  // uint8x3: 3-byte elements take the generic path.
  Owned o;
  REQUIRE(dlb_tensor_allocate(cpu(), dtype(kDLUInt, 8, 3), 2, shape, nullptr, 0, o.out(), &err) == DLB_OK);
  auto* bytes = static_cast<unsigned char*>(o.dl()->data);
  for (int i = 0; i < 99 * 3; ++i) bytes[i] = static_cast<unsigned char>(i * 7);
  Owned ot, oc;
  REQUIRE(dlb_tensor_transpose(o.t, ot.out(), &err) == DLB_OK);
  REQUIRE(dlb_tensor_copy(ot.t, cpu(), oc.out(), &err) == DLB_OK);
  const auto* out = static_cast<const unsigned char*>(oc.dl()->data);
  for (int r = 0; r < 11; ++r) {
    for (int k = 0; k < 9; ++k) {
      for (int b = 0; b < 3; ++b) {
        CHECK(out[(r * 9 + k) * 3 + b] == bytes[(k * 11 + r) * 3 + b]);
      }
    }
  }
}

TEST_CASE("packed and padded sub-byte copies") {
  dlb_error err = fresh_error();
  const DLDataType i4 = dtype(kDLInt, 4);
  int64_t shape[2] = {3, 5};
  Owned packed;
  REQUIRE(dlb_tensor_allocate(cpu(), i4, 2, shape, nullptr, 0, packed.out(), &err) == DLB_OK);
  // 15 nibbles in 8 bytes: element i holds i, little bit-endian within each byte.
  auto* bytes = static_cast<unsigned char*>(packed.dl()->data);
  std::memset(bytes, 0, 8);
  for (int i = 0; i < 15; ++i) bytes[i / 2] |= static_cast<unsigned char>(i << (4 * (i % 2)));
  auto nibble = [](const unsigned char* b, int i) { return (b[i / 2] >> (4 * (i % 2))) & 0xF; };

  // Transposed copy of packed data: goes element by element at bit positions.
  Owned t, tc;
  REQUIRE(dlb_tensor_transpose(packed.t, t.out(), &err) == DLB_OK);
  REQUIRE(dlb_tensor_copy(t.t, cpu(), tc.out(), &err) == DLB_OK);
  uint64_t size = 0;
  REQUIRE(dlb_tensor_byte_size(tc.dl(), tc.t->flags, &size, &err) == DLB_OK);
  CHECK(size == 8);
  const auto* out = static_cast<const unsigned char*>(tc.dl()->data);
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 3; ++c) CHECK(nibble(out, r * 3 + c) == c * 5 + r);
  }

  // Packed into padded: one element per byte, zero-extended.
  Owned padded;
  REQUIRE(dlb_tensor_allocate(cpu(), i4, 2, shape, nullptr, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED,
                              padded.out(), &err) == DLB_OK);
  std::memset(padded.dl()->data, 0xFF, 15);
  REQUIRE(dlb_tensor_copy_into(packed.t, padded.t, &err) == DLB_OK);
  const auto* pad = static_cast<const unsigned char*>(padded.dl()->data);
  for (int i = 0; i < 15; ++i) CHECK(pad[i] == i);
  // And back, into a packed tensor whose neighbouring bits must survive: write the middle row
  // of a packed (3, 5) tensor filled with 0xF.
  Owned target;
  REQUIRE(dlb_tensor_allocate(cpu(), i4, 2, shape, nullptr, 0, target.out(), &err) == DLB_OK);
  std::memset(target.dl()->data, 0xFF, 8);
  dlb_slice middle = sl(1, 2);
  Owned row_dst, row_src;
  REQUIRE(dlb_tensor_slice(padded.t, 1, &middle, row_src.out(), &err) == DLB_OK);
  // Row 1 of packed data starts at nibble 5, which is not a byte boundary: not a view...
  CHECK(dlb_tensor_slice(target.t, 1, &middle, row_dst.out(), &err) == DLB_ERR_LAYOUT);
  // ...so write rows 0 and 2 (both byte-aligned starts? row 2 starts at nibble 10: yes).
  dlb_slice last = sl(2, 3);
  Owned src2, dst2;
  REQUIRE(dlb_tensor_slice(padded.t, 1, &last, src2.out(), &err) == DLB_OK);
  REQUIRE(dlb_tensor_slice(target.t, 1, &last, dst2.out(), &err) == DLB_OK);
  REQUIRE(dlb_tensor_copy_into(src2.t, dst2.t, &err) == DLB_OK);
  const auto* tb = static_cast<const unsigned char*>(target.dl()->data);
  for (int i = 0; i < 10; ++i) CHECK(nibble(tb, i) == 0xF);
  for (int i = 10; i < 15; ++i) CHECK(nibble(tb, i) == i);
  CHECK(nibble(tb, 15) == 0xF);  // the padding nibble after the last element is untouched
}

TEST_CASE("copy_into: any strides, errors, overlap") {
  dlb_error err = fresh_error();
  Owned src(arange_f32({4, 3}));
  Owned dst_base(arange_f32({3, 4}));
  Owned dst;
  REQUIRE(dlb_tensor_transpose(dst_base.t, dst.out(), &err) == DLB_OK);
  REQUIRE(dlb_tensor_copy_into(src.t, dst.t, &err) == DLB_OK);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 3; ++c) CHECK(at<float>(dst_base.dl(), {c, r}) == static_cast<float>(r * 3 + c));
  }

  Owned wrong_shape(arange_f32({3, 4}));
  CHECK(dlb_tensor_copy_into(src.t, wrong_shape.t, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "shape mismatch: source is (4, 3), destination is (3, 4)");
  Owned wrong_type(arange<int32_t>({4, 3}, dtype(kDLInt, 32)));
  CHECK(dlb_tensor_copy_into(src.t, wrong_type.t, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "dtype mismatch: source is float32, destination is int32");
  Owned read_only;
  REQUIRE(dlb_tensor_share(wrong_shape.t, DLPACK_FLAG_BITMASK_READ_ONLY, read_only.out(), &err) == DLB_OK);
  CHECK(dlb_tensor_copy_into(src.t, read_only.t, &err) == DLB_ERR_READ_ONLY);
  CHECK(msg(err) == "cannot copy into a read-only tensor");
  CHECK(dlb_tensor_copy_into(nullptr, dst.t, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "source tensor is NULL");
  CHECK(dlb_tensor_copy_into(src.t, nullptr, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "destination tensor is NULL");

  // Overlap: shift a row of 10 elements right by one through two views of one buffer.
  Owned line(arange_f32({10}));
  dlb_slice head = sl(0, 9), tail = sl(1, 10);
  Owned a, b;
  REQUIRE(dlb_tensor_slice(line.t, 1, &head, a.out(), &err) == DLB_OK);
  REQUIRE(dlb_tensor_slice(line.t, 1, &tail, b.out(), &err) == DLB_OK);
  REQUIRE(dlb_tensor_copy_into(a.t, b.t, &err) == DLB_OK);
  const float* l = static_cast<const float*>(line.dl()->data);
  CHECK(l[0] == 0);
  for (int i = 1; i < 10; ++i) CHECK(l[i] == static_cast<float>(i - 1));
  // Reversing in place through a reversed view of the same memory.
  Owned rev;
  dlb_slice backwards = sl(DLB_SLICE_NONE, DLB_SLICE_NONE, -1);
  REQUIRE(dlb_tensor_slice(line.t, 1, &backwards, rev.out(), &err) == DLB_OK);
  REQUIRE(dlb_tensor_copy_into(rev.t, line.t, &err) == DLB_OK);
  for (int i = 0; i < 9; ++i) CHECK(l[i] == static_cast<float>(8 - i));
  CHECK(l[9] == 0);
  // Copying a tensor onto itself changes nothing.
  REQUIRE(dlb_tensor_copy_into(line.t, line.t, &err) == DLB_OK);
  CHECK(l[0] == 8);
}

TEST_CASE("copy errors") {
  dlb_error err = fresh_error();
  Owned src(arange_f32({2}));
  Owned out;
  CHECK(dlb_tensor_copy(src.t, DLDevice{kDLVulkan, 0}, out.out(), &err) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(err) == "no backend is registered for vulkan");
  CHECK(dlb_tensor_copy(src.t, DLDevice{static_cast<DLDeviceType>(5), 0}, out.out(), &err) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(err) == "device type 5 is not a known DLPack device type");
  CHECK(dlb_tensor_copy(nullptr, cpu(), out.out(), &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "tensor is NULL");
  CHECK(dlb_tensor_copy(src.t, cpu(), nullptr, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "out is NULL");
  // A source on a device without a backend cannot be read.
  int64_t shape[1] = {4};
  DLTensor desc{reinterpret_cast<void*>(0x10), DLDevice{kDLMetal, 0}, 1, f32(), shape, nullptr, 0};
  Owned metal;
  REQUIRE(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, metal.out(), &err) == DLB_OK);
  CHECK(dlb_tensor_copy(metal.t, cpu(), out.out(), &err) == DLB_ERR_UNSUPPORTED);
  CHECK(msg(err) == "no backend is registered for metal");
  CHECK(out.t == nullptr);
  // CUDA pinned and managed memory are host-readable: copies need no backend.
  std::vector<float> pinned{1, 2, 3, 4};
  DLTensor host_desc{pinned.data(), DLDevice{kDLCUDAHost, 0}, 1, f32(), shape, nullptr, 0};
  Owned pinned_tensor, pinned_copy;
  REQUIRE(dlb_tensor_wrap(&host_desc, 0, nullptr, nullptr, pinned_tensor.out(), &err) == DLB_OK);
  REQUIRE(dlb_tensor_copy(pinned_tensor.t, cpu(), pinned_copy.out(), &err) == DLB_OK);
  CHECK(static_cast<float*>(pinned_copy.dl()->data)[3] == 4);
}
