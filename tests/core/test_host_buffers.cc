// The rules a binding needs to hand a language's arrays to the core and back, each checked here
// once with its exact message: wrapping a buffer of known size (dlb_tensor_wrap_buffer), typed
// host access (dlb_tensor_host_elements), copies of any layout to and from a host buffer
// (dlb_tensor_copy_to_host, dlb_tensor_copy_from_host), and the closed-object status.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "lifecycle.hpp"

namespace {

using test::Counter;
using test::cpu;
using test::dtype;
using test::Error;
using test::f32;
using test::kReadOnly;
using test::kUntouched;
using test::Live;

constexpr DLDataType kAnyDType{0, 0, 0};

void count_release(void* ctx) { ++*static_cast<int*>(ctx); }

DLTensor describe(void* data, std::vector<int64_t>& shape, std::vector<int64_t>* strides,
                  DLDataType type, uint64_t byte_offset = 0) {
  DLTensor t{};
  t.data = data;
  t.device = cpu();
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = type;
  t.shape = shape.empty() ? nullptr : shape.data();
  t.strides = strides == nullptr ? nullptr : strides->data();
  t.byte_offset = byte_offset;
  return t;
}

// A float32 tensor of `shape` holding 0, 1, 2, ... in C order.
DLManagedTensorVersioned* iota(std::vector<int64_t> shape) {
  DLManagedTensorVersioned* t = nullptr;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), static_cast<int32_t>(shape.size()), shape.data(),
                              nullptr, 0, &t, nullptr) == DLB_OK);
  float* v = static_cast<float*>(t->dl_tensor.data);
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return t;
}

}  // namespace

TEST_SUITE("core.host_buffers") {
  TEST_CASE("dlb_tensor_wrap_buffer: inside the buffer, wrapped; beyond it, refused before anything is built") {
    Live live;
    Error err;
    float data[8] = {};
    int released = 0;
    std::vector<int64_t> shape{2, 3};
    DLTensor t = describe(data, shape, nullptr, f32());
    DLManagedTensorVersioned* out = nullptr;
    REQUIRE(dlb_tensor_wrap_buffer(&t, sizeof data, 0, count_release, &released, &out, err.fresh()) == DLB_OK);
    CHECK(err.text() == kUntouched);
    CHECK(out->dl_tensor.data == data);
    dlb_tensor_free(out);
    CHECK(released == 1);

    // 6 floats from byte 12: bytes [12, 36) of a 32-byte buffer.
    t.byte_offset = 12;
    out = test::kPresetOut;
    CHECK(dlb_tensor_wrap_buffer(&t, sizeof data, 0, count_release, &released, &out, err.fresh()) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "the tensor's elements reach bytes [12, 36) of a buffer of 32 bytes");
    CHECK(out == nullptr);
    CHECK(released == 1);  // a refused wrap never releases

    // Negative strides reaching before data.
    std::vector<int64_t> back{-1};
    std::vector<int64_t> one{4};
    t = describe(data, one, &back, f32());
    CHECK(dlb_tensor_wrap_buffer(&t, sizeof data, 0, count_release, &released, &out, err.fresh()) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "the tensor's elements reach bytes [-12, 4) of a buffer of 32 bytes");
    t.byte_offset = 12;  // the first element is the last of the four: [0, 16)
    REQUIRE(dlb_tensor_wrap_buffer(&t, 16, 0, count_release, &released, &out, err.fresh()) == DLB_OK);
    dlb_tensor_free(out);
    CHECK(released == 2);

    // An empty tensor touches no byte: any buffer, even of size 0, holds it.
    std::vector<int64_t> empty{0, 3};
    t = describe(nullptr, empty, nullptr, f32());
    REQUIRE(dlb_tensor_wrap_buffer(&t, 0, 0, nullptr, nullptr, &out, err.fresh()) == DLB_OK);
    dlb_tensor_free(out);

    // Packed sub-byte data: 5 int4 take 3 bytes.
    uint8_t nibbles[3] = {};
    std::vector<int64_t> five{5};
    t = describe(nibbles, five, nullptr, dtype(kDLInt, 4));
    REQUIRE(dlb_tensor_wrap_buffer(&t, 3, 0, nullptr, nullptr, &out, err.fresh()) == DLB_OK);
    dlb_tensor_free(out);
    CHECK(dlb_tensor_wrap_buffer(&t, 2, 0, nullptr, nullptr, &out, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "the tensor's elements reach bytes [0, 3) of a buffer of 2 bytes");

    // Validation comes first, with its own message.
    std::vector<int64_t> negative{-2};
    t = describe(data, negative, nullptr, f32());
    CHECK(dlb_tensor_wrap_buffer(&t, sizeof data, 0, nullptr, nullptr, &out, err.fresh()) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "shape[0] is -2; extents must not be negative");
    CHECK(live.delta() == 0);
  }

  TEST_CASE("dlb_tensor_wrap is dlb_tensor_wrap_buffer without a bound") {
    float data[6] = {};
    std::vector<int64_t> shape{1000};
    DLTensor t = describe(data, shape, nullptr, f32());
    DLManagedTensorVersioned* out = nullptr;
    REQUIRE(dlb_tensor_wrap(&t, 0, nullptr, nullptr, &out, nullptr) == DLB_OK);
    dlb_tensor_free(out);
  }

  TEST_CASE("dlb_tensor_host_elements: the typed array of a contiguous host tensor, or the core's refusal") {
    Live live;
    Error err;
    DLManagedTensorVersioned* t = iota({2, 3});
    void* data = nullptr;
    int64_t count = -1;
    REQUIRE(dlb_tensor_host_elements(t, f32(), DLB_ACCESS_WRITE, &data, &count, err.fresh()) == DLB_OK);
    CHECK(data == t->dl_tensor.data);
    CHECK(count == 6);

    CHECK(dlb_tensor_host_elements(t, dtype(kDLInt, 32), 0, &data, &count, err.fresh()) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "the tensor holds float32 elements, not int32");
    CHECK(data == nullptr);
    CHECK(count == 0);

    DLManagedTensorVersioned* tr = nullptr;
    REQUIRE(dlb_tensor_transpose(t, &tr, nullptr) == DLB_OK);
    CHECK(dlb_tensor_host_elements(tr, f32(), DLB_ACCESS_READ, &data, &count, err.fresh()) == DLB_ERR_LAYOUT);
    CHECK(err.text() == "the tensor is not C-contiguous: copy it to a contiguous tensor first");
    // A strided view asks for any layout: the first element, whatever the strides.
    REQUIRE(dlb_tensor_host_elements(tr, f32(), DLB_ACCESS_ANY_LAYOUT | DLB_ACCESS_WRITE, &data, &count,
                                     err.fresh()) == DLB_OK);
    CHECK(data == tr->dl_tensor.data);
    CHECK(count == 6);

    DLManagedTensorVersioned* ro = nullptr;
    REQUIRE(dlb_tensor_share(t, kReadOnly, &ro, nullptr) == DLB_OK);
    CHECK(dlb_tensor_host_elements(ro, f32(), DLB_ACCESS_WRITE, &data, &count, err.fresh()) == DLB_ERR_READ_ONLY);
    CHECK(err.text() == "the tensor is read-only");
    REQUIRE(dlb_tensor_host_elements(ro, f32(), 0, &data, &count, err.fresh()) == DLB_OK);
    CHECK(count == 6);

    DLManagedTensorVersioned* packed = nullptr;
    const int64_t five = 5;
    REQUIRE(dlb_tensor_allocate(cpu(), dtype(kDLInt, 4), 1, &five, nullptr, 0, &packed, nullptr) == DLB_OK);
    CHECK(dlb_tensor_host_elements(packed, dtype(kDLInt, 4), 0, &data, &count, err.fresh()) ==
          DLB_ERR_UNSUPPORTED);
    CHECK(err.text() == "int4 elements are packed below a byte: they have no address of their own");

    CHECK(dlb_tensor_host_elements(nullptr, f32(), 0, &data, &count, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "tensor is NULL");
    for (auto* x : {t, tr, ro, packed}) dlb_tensor_free(x);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("dlb_tensor_typed_element: one element as a dtype, any layout, with each refusal in order") {
    Live live;
    Error err;
    DLManagedTensorVersioned* t = iota({2, 3});
    DLManagedTensorVersioned* tr = nullptr;
    REQUIRE(dlb_tensor_transpose(t, &tr, nullptr) == DLB_OK);
    void* data = nullptr;
    const int64_t at_2_1[2] = {2, 1}, from_end[2] = {-1, -1};
    // Through the transposed view's strides: tr[2][1] is t[1][2] = 5.
    REQUIRE(dlb_tensor_typed_element(tr, f32(), DLB_ACCESS_WRITE, 2, at_2_1, &data, err.fresh()) == DLB_OK);
    CHECK(*static_cast<float*>(data) == 5.0f);
    REQUIRE(dlb_tensor_typed_element(t, f32(), DLB_ACCESS_READ, 2, from_end, &data, err.fresh()) == DLB_OK);
    CHECK(*static_cast<float*>(data) == 5.0f);

    // The dtype before the index: the same precedence as host_elements then element_data.
    CHECK(dlb_tensor_typed_element(t, dtype(kDLInt, 32), 0, 1, at_2_1, &data, err.fresh()) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "the tensor holds float32 elements, not int32");
    CHECK(data == nullptr);
    CHECK(dlb_tensor_typed_element(t, f32(), 0, 1, at_2_1, &data, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "1 indices given for a tensor with 2 dimensions");
    CHECK(dlb_tensor_typed_element(t, f32(), 0, 2, at_2_1, &data, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "index 2 is out of range for axis 0 with extent 2");
    CHECK(dlb_tensor_typed_element(t, f32(), 0, 2, nullptr, &data, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "index is NULL");

    DLManagedTensorVersioned* ro = nullptr;
    REQUIRE(dlb_tensor_share(t, kReadOnly, &ro, nullptr) == DLB_OK);
    CHECK(dlb_tensor_typed_element(ro, f32(), DLB_ACCESS_WRITE, 2, from_end, &data, err.fresh()) ==
          DLB_ERR_READ_ONLY);
    CHECK(err.text() == "the tensor is read-only");
    REQUIRE(dlb_tensor_typed_element(ro, f32(), DLB_ACCESS_READ, 2, from_end, &data, err.fresh()) == DLB_OK);

    DLManagedTensorVersioned* packed = nullptr;
    const int64_t five = 5, two = 2;
    REQUIRE(dlb_tensor_allocate(cpu(), dtype(kDLInt, 4), 1, &five, nullptr, 0, &packed, nullptr) == DLB_OK);
    CHECK(dlb_tensor_typed_element(packed, dtype(kDLInt, 4), 0, 1, &two, &data, err.fresh()) ==
          DLB_ERR_UNSUPPORTED);
    CHECK(err.text() == "int4 elements are packed below a byte: they have no address of their own");

    // Packed lanes that fill a byte (int4x2) have an address each, as the header says.
    DLManagedTensorVersioned* pairs = nullptr;
    DLDataType int4x2 = dtype(kDLInt, 4);
    int4x2.lanes = 2;
    REQUIRE(dlb_tensor_allocate(cpu(), int4x2, 1, &five, nullptr, 0, &pairs, nullptr) == DLB_OK);
    REQUIRE(dlb_tensor_typed_element(pairs, int4x2, DLB_ACCESS_WRITE, 1, &two, &data, err.fresh()) == DLB_OK);
    CHECK(data == static_cast<char*>(pairs->dl_tensor.data) + 2);
    REQUIRE(dlb_tensor_element_data(pairs, 1, &two, 1, &data, err.fresh()) == DLB_OK);
    CHECK(data == static_cast<char*>(pairs->dl_tensor.data) + 2);

    // No wildcard: an all-zero dtype names no type, and is refused as validation refuses it.
    CHECK(dlb_tensor_typed_element(t, DLDataType{0, 0, 0}, DLB_ACCESS_WRITE, 2, from_end, &data,
                                   err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "dtype int with 0 bits is not a valid DLPack type");
    CHECK(data == nullptr);
    int64_t count = 0;
    CHECK(dlb_tensor_host_elements(t, DLDataType{0, 0, 0}, DLB_ACCESS_WRITE, &data, &count,
                                   err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "dtype int with 0 bits is not a valid DLPack type");
    dlb_tensor_free(pairs);

    CHECK(dlb_tensor_typed_element(nullptr, f32(), 0, 0, nullptr, &data, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "tensor is NULL");
    CHECK(dlb_tensor_typed_element(t, f32(), 0, 2, from_end, nullptr, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "out_data is NULL");
    for (auto* x : {t, tr, ro, packed}) dlb_tensor_free(x);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("dlb_tensor_copy_to_host: every layout comes out in C order") {
    Live live;
    Error err;
    DLManagedTensorVersioned* t = iota({3, 4});
    DLManagedTensorVersioned* tr = nullptr;
    REQUIRE(dlb_tensor_transpose(t, &tr, nullptr) == DLB_OK);
    float out[12];
    REQUIRE(dlb_tensor_copy_to_host(tr, f32(), out, sizeof out, err.fresh()) == DLB_OK);
    CHECK(err.text() == kUntouched);
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 3; ++j) CHECK(out[i * 3 + j] == static_cast<float>(j * 4 + i));
    }

    // x[::-1, ::2]: negative and step strides.
    const dlb_slice slices[2] = {{DLB_SLICE_NONE, DLB_SLICE_NONE, -1}, {DLB_SLICE_NONE, DLB_SLICE_NONE, 2}};
    DLManagedTensorVersioned* sl = nullptr;
    REQUIRE(dlb_tensor_slice(t, 2, slices, &sl, nullptr) == DLB_OK);
    float six[6];
    REQUIRE(dlb_tensor_copy_to_host(sl, f32(), six, sizeof six, err.fresh()) == DLB_OK);
    const float expected[6] = {8, 10, 4, 6, 0, 2};
    CHECK(std::memcmp(six, expected, sizeof six) == 0);

    // Raw bytes of any dtype.
    REQUIRE(dlb_tensor_copy_to_host(sl, kAnyDType, six, sizeof six, err.fresh()) == DLB_OK);
    CHECK(std::memcmp(six, expected, sizeof six) == 0);

    CHECK(dlb_tensor_copy_to_host(sl, dtype(kDLInt, 32), six, sizeof six, err.fresh()) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "the tensor holds float32 elements, not int32");
    CHECK(dlb_tensor_copy_to_host(sl, f32(), six, 20, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "the buffer holds 20 bytes but the tensor's 6 float32 elements take 24");
    CHECK(dlb_tensor_copy_to_host(sl, f32(), nullptr, 24, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "buffer is NULL");
    CHECK(dlb_tensor_copy_to_host(nullptr, f32(), six, 24, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "tensor is NULL");

    // Empty tensors need no buffer.
    DLManagedTensorVersioned* empty = iota({0, 3});
    CHECK(dlb_tensor_copy_to_host(empty, f32(), nullptr, 0, err.fresh()) == DLB_OK);

    // A zero-stride (broadcast) view: every row is the same.
    std::vector<int64_t> shape{3, 4}, strides{0, 1};
    DLTensor b = describe(t->dl_tensor.data, shape, &strides, f32());
    DLManagedTensorVersioned* broadcast = nullptr;
    REQUIRE(dlb_tensor_wrap(&b, kReadOnly, nullptr, nullptr, &broadcast, nullptr) == DLB_OK);
    float rows[12];
    REQUIRE(dlb_tensor_copy_to_host(broadcast, f32(), rows, sizeof rows, err.fresh()) == DLB_OK);
    for (int i = 0; i < 12; ++i) CHECK(rows[i] == static_cast<float>(i % 4));

    // Packed sub-byte data: the packed bytes, ceil(5 * 4 / 8) of them.
    DLManagedTensorVersioned* packed = nullptr;
    const int64_t five = 5;
    REQUIRE(dlb_tensor_allocate(cpu(), dtype(kDLUInt, 4), 1, &five, nullptr, 0, &packed, nullptr) == DLB_OK);
    const uint8_t nibbles[3] = {0x21, 0x43, 0x05};
    std::memcpy(packed->dl_tensor.data, nibbles, 3);
    uint8_t back[3] = {};
    REQUIRE(dlb_tensor_copy_to_host(packed, dtype(kDLUInt, 4), back, 3, err.fresh()) == DLB_OK);
    CHECK(back[0] == 0x21);
    CHECK(back[1] == 0x43);
    CHECK((back[2] & 0x0f) == 0x05);
    for (auto* x : {t, tr, sl, empty, broadcast, packed}) dlb_tensor_free(x);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("dlb_tensor_copy_from_host: into any layout; READ_ONLY, dtype and size refused") {
    Live live;
    Error err;
    DLManagedTensorVersioned* t = iota({3, 4});
    DLManagedTensorVersioned* tr = nullptr;
    REQUIRE(dlb_tensor_transpose(t, &tr, nullptr) == DLB_OK);
    std::vector<float> values(12);
    std::iota(values.begin(), values.end(), 100.0f);
    REQUIRE(dlb_tensor_copy_from_host(tr, f32(), values.data(), 48, err.fresh()) == DLB_OK);
    const float* v = static_cast<const float*>(t->dl_tensor.data);
    // tr[i][j] = t[j][i] = values[i * 3 + j]
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 3; ++j) CHECK(v[j * 4 + i] == values[static_cast<size_t>(i * 3 + j)]);
    }

    DLManagedTensorVersioned* ro = nullptr;
    REQUIRE(dlb_tensor_share(t, kReadOnly, &ro, nullptr) == DLB_OK);
    CHECK(dlb_tensor_copy_from_host(ro, f32(), values.data(), 48, err.fresh()) == DLB_ERR_READ_ONLY);
    CHECK(err.text() == "cannot copy into a read-only tensor");
    CHECK(dlb_tensor_copy_from_host(tr, dtype(kDLFloat, 64), values.data(), 48, err.fresh()) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "the tensor holds float32 elements, not float64");
    CHECK(dlb_tensor_copy_from_host(tr, f32(), values.data(), 44, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "the buffer holds 44 bytes but the tensor's 12 float32 elements take 48");

    // The source overlapping the destination: as if through a temporary (a transpose in place
    // of a tensor's own memory, read in C order).
    std::vector<float> before(v, v + 12);
    REQUIRE(dlb_tensor_copy_from_host(tr, f32(), t->dl_tensor.data, 48, err.fresh()) == DLB_OK);
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 3; ++j) CHECK(v[j * 4 + i] == before[static_cast<size_t>(i * 3 + j)]);
    }
    for (auto* x : {t, tr, ro}) dlb_tensor_free(x);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("DLB_ERR_CLOSED has a name and one message for every binding") {
    CHECK(std::string(dlb_status_name(DLB_ERR_CLOSED)) == "DLB_ERR_CLOSED");
    CHECK(std::string(DLB_CLOSED_MESSAGE) == "the tensor is closed");
  }
}
