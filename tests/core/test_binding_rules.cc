// The rules the core exports so that bindings re-implement none of them: element count of a
// shape, shape and strides into a caller's array, host access to a tensor's memory, whether a
// tensor holds its memory alone, and the one rule for outputs on error.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "support.hpp"

using namespace test;

namespace {

DLManagedTensorVersioned* allocate(std::vector<int64_t> shape, uint64_t flags = 0,
                                   DLDataType dt = f32()) {
  DLManagedTensorVersioned* t = nullptr;
  dlb_error err{};
  REQUIRE(dlb_tensor_allocate(cpu(), dt, static_cast<int32_t>(shape.size()), shape.data(),
                              nullptr, flags, &t, &err) == DLB_OK);
  return t;
}

// A wrapped OpenCL handle over `t`'s address: the host cannot read it, whatever the address says.
DLManagedTensorVersioned* opencl_alias(const DLManagedTensorVersioned* t) {
  static int64_t shape[] = {4};
  DLTensor desc{};
  desc.data = t->dl_tensor.data;
  desc.device = DLDevice{kDLOpenCL, 0};
  desc.ndim = 1;
  desc.dtype = f32();
  desc.shape = shape;
  DLManagedTensorVersioned* cl = nullptr;
  dlb_error err{};
  REQUIRE(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &cl, &err) == DLB_OK);
  return cl;
}

}  // namespace

TEST_CASE("dlb_shape_element_count applies the validation rule") {
  dlb_error err{};
  int64_t n = -1;
  const int64_t shape[] = {2, 3, 4};
  CHECK(dlb_shape_element_count(3, shape, &n, &err) == DLB_OK);
  CHECK(n == 24);
  CHECK(dlb_shape_element_count(0, nullptr, &n, &err) == DLB_OK);
  CHECK(n == 1);

  // An extent of 0 makes the count 0 even when the other extents would overflow.
  const int64_t empty[] = {INT64_MAX, 2, 0};
  CHECK(dlb_shape_element_count(3, empty, &n, &err) == DLB_OK);
  CHECK(n == 0);

  const int64_t huge[] = {INT64_MAX, 2};
  n = 7;
  CHECK(dlb_shape_element_count(2, huge, &n, &err) == DLB_ERR_OVERFLOW);
  CHECK(msg(err) == "element count of shape (9223372036854775807, 2) overflows 63 bits");
  CHECK(n == 0);

  const int64_t negative[] = {2, -1};
  CHECK(dlb_shape_element_count(2, negative, &n, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "shape[1] is -1; extents must not be negative");
  CHECK(dlb_shape_element_count(-1, shape, &n, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "ndim -1 is negative");
  CHECK(dlb_shape_element_count(DLB_MAX_NDIM + 1, shape, &n, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "ndim 65 exceeds the maximum of 64");
  CHECK(dlb_shape_element_count(2, nullptr, &n, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "shape is NULL but ndim is 2");
  CHECK(dlb_shape_element_count(2, shape, nullptr, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "out is NULL");
}

TEST_CASE("dlb_tensor_get_shape and dlb_tensor_get_strides check the caller's capacity") {
  DLManagedTensorVersioned* t = allocate({2, 3});
  DLManagedTensorVersioned* tt = nullptr;
  dlb_error err{};
  REQUIRE(dlb_tensor_transpose(t, &tt, &err) == DLB_OK);
  int64_t values[3] = {-1, -1, -1};
  CHECK(dlb_tensor_get_shape(&tt->dl_tensor, 3, values, &err) == DLB_OK);
  CHECK(values[0] == 3);
  CHECK(values[1] == 2);
  CHECK(values[2] == -1);
  CHECK(dlb_tensor_get_strides(&tt->dl_tensor, 2, values, &err) == DLB_OK);
  CHECK(values[0] == 1);
  CHECK(values[1] == 3);

  CHECK(dlb_tensor_get_shape(&tt->dl_tensor, 1, values, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "output has room for 1 values but the tensor has 2 dimensions");
  CHECK(dlb_tensor_get_strides(&tt->dl_tensor, 1, values, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "output has room for 1 values but the tensor has 2 dimensions");
  CHECK(dlb_tensor_get_shape(&tt->dl_tensor, 2, nullptr, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "out is NULL");
  CHECK(dlb_tensor_get_shape(nullptr, 2, values, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "tensor is NULL");

  // A scalar needs no room at all.
  DLManagedTensorVersioned* s = allocate({});
  CHECK(dlb_tensor_get_shape(&s->dl_tensor, 0, nullptr, &err) == DLB_OK);
  CHECK(dlb_tensor_get_strides(&s->dl_tensor, 0, nullptr, &err) == DLB_OK);
  dlb_tensor_free(s);
  dlb_tensor_free(tt);
  dlb_tensor_free(t);
}

TEST_CASE("dlb_tensor_host_data hands out host memory only where the rules allow") {
  dlb_error err{};
  void* data = nullptr;
  uint64_t size = 0;
  DLManagedTensorVersioned* t = allocate({2, 3});
  CHECK(dlb_tensor_host_data(t, 1, &data, &size, &err) == DLB_OK);
  CHECK(data == t->dl_tensor.data);
  CHECK(size == 24);

  SUBCASE("a view starts at its first element") {
    DLManagedTensorVersioned* row = nullptr;
    REQUIRE(dlb_tensor_select(t, 0, 1, &row, &err) == DLB_OK);
    CHECK(dlb_tensor_host_data(row, 0, &data, &size, &err) == DLB_OK);
    CHECK(data == static_cast<char*>(t->dl_tensor.data) + 12);
    CHECK(size == 12);
    dlb_tensor_free(row);
  }
  SUBCASE("a non-contiguous view is refused") {
    DLManagedTensorVersioned* tt = nullptr;
    REQUIRE(dlb_tensor_transpose(t, &tt, &err) == DLB_OK);
    data = t;
    size = 5;
    CHECK(dlb_tensor_host_data(tt, 0, &data, &size, &err) == DLB_ERR_LAYOUT);
    CHECK(msg(err) == "the tensor is not C-contiguous: copy it to a contiguous tensor first");
    CHECK(data == nullptr);
    CHECK(size == 0);
    dlb_tensor_free(tt);
  }
  SUBCASE("READ_ONLY refuses write access and allows reads") {
    DLManagedTensorVersioned* ro = nullptr;
    REQUIRE(dlb_tensor_share(t, DLPACK_FLAG_BITMASK_READ_ONLY, &ro, &err) == DLB_OK);
    CHECK(dlb_tensor_host_data(ro, 1, &data, &size, &err) == DLB_ERR_READ_ONLY);
    CHECK(msg(err) == "the tensor is read-only");
    CHECK(dlb_tensor_host_data(ro, 0, &data, &size, &err) == DLB_OK);
    CHECK(size == 24);
    dlb_tensor_free(ro);
  }
  SUBCASE("device memory is refused") {
    DLManagedTensorVersioned* cl = opencl_alias(t);
    CHECK(dlb_tensor_host_data(cl, 0, &data, &size, &err) == DLB_ERR_UNSUPPORTED);
    CHECK(msg(err) == "opencl:0 memory is not readable by the host: copy the tensor to the cpu first");
    dlb_tensor_free(cl);
  }
  SUBCASE("packed sub-byte data counts bits, not elements") {
    DLManagedTensorVersioned* bits = allocate({3, 5}, 0, dtype(kDLUInt, 1));
    CHECK(dlb_tensor_host_data(bits, 1, &data, &size, &err) == DLB_OK);
    CHECK(size == 2);
    dlb_tensor_free(bits);
  }
  CHECK(dlb_tensor_host_data(nullptr, 0, &data, &size, &err) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(msg(err) == "tensor is NULL");
  dlb_tensor_free(t);
}

TEST_CASE("dlb_tensor_element_data addresses one element through any strides") {
  dlb_error err{};
  void* data = nullptr;
  DLManagedTensorVersioned* t = allocate({2, 3});
  char* base = static_cast<char*>(t->dl_tensor.data);
  const int64_t at_1_2[] = {1, 2};
  CHECK(dlb_tensor_element_data(t, 2, at_1_2, 1, &data, &err) == DLB_OK);
  CHECK(data == base + 4 * 5);
  const int64_t from_end[] = {-1, -3};
  CHECK(dlb_tensor_element_data(t, 2, from_end, 0, &data, &err) == DLB_OK);
  CHECK(data == base + 4 * 3);

  SUBCASE("a transposed, offset view") {
    DLManagedTensorVersioned* row = nullptr;
    DLManagedTensorVersioned* tt = nullptr;
    REQUIRE(dlb_tensor_transpose(t, &tt, &err) == DLB_OK);
    const int64_t at_2_1[] = {2, 1};
    CHECK(dlb_tensor_element_data(tt, 2, at_2_1, 1, &data, &err) == DLB_OK);
    CHECK(data == base + 4 * 5);
    REQUIRE(dlb_tensor_select(tt, 0, 1, &row, &err) == DLB_OK);
    const int64_t at_1[] = {1};
    CHECK(dlb_tensor_element_data(row, 1, at_1, 0, &data, &err) == DLB_OK);
    CHECK(data == base + 4 * 4);
    dlb_tensor_free(row);
    dlb_tensor_free(tt);
  }
  SUBCASE("a 0-d tensor has one element at no index") {
    DLManagedTensorVersioned* scalar = nullptr;
    REQUIRE(dlb_tensor_select(t, 0, 1, &scalar, &err) == DLB_OK);
    DLManagedTensorVersioned* one = nullptr;
    REQUIRE(dlb_tensor_select(scalar, 0, 2, &one, &err) == DLB_OK);
    CHECK(dlb_tensor_element_data(one, 0, nullptr, 1, &data, &err) == DLB_OK);
    CHECK(data == base + 4 * 5);
    dlb_tensor_free(one);
    dlb_tensor_free(scalar);
  }
  SUBCASE("each mistake is named") {
    const int64_t one_index[] = {1};
    data = t;
    CHECK(dlb_tensor_element_data(t, 1, one_index, 0, &data, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(err) == "1 indices given for a tensor with 2 dimensions");
    CHECK(data == nullptr);
    const int64_t too_far[] = {1, 3};
    CHECK(dlb_tensor_element_data(t, 2, too_far, 0, &data, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(err) == "index 3 is out of range for axis 1 with extent 3");
    const int64_t too_low[] = {-3, 0};
    CHECK(dlb_tensor_element_data(t, 2, too_low, 0, &data, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(err) == "index -3 is out of range for axis 0 with extent 2");
    CHECK(dlb_tensor_element_data(t, 2, nullptr, 0, &data, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(err) == "index is NULL");
    CHECK(dlb_tensor_element_data(nullptr, 2, at_1_2, 0, &data, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(err) == "tensor is NULL");
    CHECK(dlb_tensor_element_data(t, 2, at_1_2, 0, nullptr, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(err) == "out_data is NULL");
  }
  SUBCASE("READ_ONLY refuses write access and allows reads") {
    DLManagedTensorVersioned* ro = nullptr;
    REQUIRE(dlb_tensor_share(t, DLPACK_FLAG_BITMASK_READ_ONLY, &ro, &err) == DLB_OK);
    CHECK(dlb_tensor_element_data(ro, 2, at_1_2, 1, &data, &err) == DLB_ERR_READ_ONLY);
    CHECK(msg(err) == "the tensor is read-only");
    CHECK(dlb_tensor_element_data(ro, 2, at_1_2, 0, &data, &err) == DLB_OK);
    CHECK(data == base + 4 * 5);
    dlb_tensor_free(ro);
  }
  SUBCASE("packed sub-byte elements have no address; padded ones do") {
    DLManagedTensorVersioned* bits = allocate({3, 5}, 0, dtype(kDLUInt, 4));
    CHECK(dlb_tensor_element_data(bits, 2, at_1_2, 0, &data, &err) == DLB_ERR_UNSUPPORTED);
    CHECK(msg(err) == "uint4 elements are packed below a byte: they have no address of their own");
    dlb_tensor_free(bits);
    DLManagedTensorVersioned* padded =
        allocate({3, 5}, DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, dtype(kDLUInt, 4));
    CHECK(dlb_tensor_element_data(padded, 2, at_1_2, 1, &data, &err) == DLB_OK);
    CHECK(data == static_cast<char*>(padded->dl_tensor.data) + 7);
    dlb_tensor_free(padded);
  }
  SUBCASE("device memory is refused") {
    DLManagedTensorVersioned* cl = opencl_alias(t);
    CHECK(dlb_tensor_element_data(cl, 1, at_1_2, 0, &data, &err) == DLB_ERR_UNSUPPORTED);
    CHECK(msg(err) == "opencl:0 memory is not readable by the host: copy the tensor to the cpu first");
    dlb_tensor_free(cl);
  }
  dlb_tensor_free(t);
}

TEST_CASE("dlb_tensor_is_exclusive follows the core's reference count") {
  dlb_error err{};
  DLManagedTensorVersioned* t = allocate({4});
  CHECK(dlb_tensor_is_exclusive(t) == 1);

  DLManagedTensorVersioned* view = nullptr;
  REQUIRE(dlb_tensor_slice(t, 0, nullptr, &view, &err) == DLB_OK);
  CHECK(dlb_tensor_is_exclusive(t) == 0);
  CHECK(dlb_tensor_is_exclusive(view) == 0);
  dlb_tensor_free(view);
  // The view is gone: the memory is the caller's alone again.
  CHECK(dlb_tensor_is_exclusive(t) == 1);

  DLManagedTensorVersioned* share = nullptr;
  REQUIRE(dlb_tensor_share(t, 0, &share, &err) == DLB_OK);
  CHECK(dlb_tensor_is_exclusive(t) == 0);
  CHECK(dlb_tensor_is_exclusive(share) == 0);
  dlb_tensor_free(t);
  // A share whose root was freed is still a share: never exclusive.
  CHECK(dlb_tensor_is_exclusive(share) == 0);
  dlb_tensor_free(share);

  // Wrapped memory was handed over: exclusive.
  float buffer[4] = {};
  int64_t shape[] = {4};
  DLTensor desc{};
  desc.data = buffer;
  desc.device = cpu();
  desc.ndim = 1;
  desc.dtype = f32();
  desc.shape = shape;
  DLManagedTensorVersioned* wrapped = nullptr;
  REQUIRE(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &wrapped, &err) == DLB_OK);
  CHECK(dlb_tensor_is_exclusive(wrapped) == 1);
  dlb_tensor_free(wrapped);

  // Imports: only a producer's IS_COPIED promises that nobody else holds the memory.
  Counter counter;
  ForeignVersioned* plain = make_foreign(counter, f32(), {3});
  DLManagedTensorVersioned* imported = nullptr;
  REQUIRE(dlb_tensor_import(&plain->managed, &imported, &err) == DLB_OK);
  CHECK(dlb_tensor_is_exclusive(imported) == 0);
  dlb_tensor_free(imported);
  ForeignVersioned* copied = make_foreign(counter, f32(), {3});
  copied->managed.flags = DLPACK_FLAG_BITMASK_IS_COPIED;
  REQUIRE(dlb_tensor_import(&copied->managed, &imported, &err) == DLB_OK);
  CHECK(dlb_tensor_is_exclusive(imported) == 1);
  dlb_tensor_free(imported);
  ForeignLegacy* legacy = make_foreign_legacy(counter, f32(), {3});
  REQUIRE(dlb_tensor_import_legacy(&legacy->managed, &imported, &err) == DLB_OK);
  CHECK(dlb_tensor_is_exclusive(imported) == 0);
  dlb_tensor_free(imported);
  CHECK(counter.get() == 3);

  // A foreign tensor that was never imported, and NULL.
  ForeignVersioned* foreign = make_foreign(counter, f32(), {3});
  CHECK(dlb_tensor_is_exclusive(&foreign->managed) == 0);
  foreign->managed.deleter(&foreign->managed);
  CHECK(dlb_tensor_is_exclusive(nullptr) == 0);
}

TEST_CASE("every output is cleared on error") {
  dlb_error err{};
  SUBCASE("tensor outputs") {
    DLManagedTensorVersioned* out = reinterpret_cast<DLManagedTensorVersioned*>(&err);
    const int64_t negative[] = {-1};
    CHECK(dlb_tensor_allocate(cpu(), f32(), 1, negative, nullptr, 0, &out, &err) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(out == nullptr);
  }
  SUBCASE("numbers") {
    int64_t count = 5;
    uint64_t bytes = 5;
    int64_t begin = 5, span = 5;
    DLTensor bad{};
    bad.ndim = -1;
    CHECK(dlb_tensor_element_count(&bad, &count, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(count == 0);
    CHECK(dlb_tensor_byte_size(&bad, 0, &bytes, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(bytes == 0);
    CHECK(dlb_tensor_byte_span(&bad, 0, &begin, &span, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(begin == 0);
    CHECK(span == 0);
    bytes = 5;
    CHECK(dlb_dtype_storage_size(f32(), -1, 0, &bytes, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(bytes == 0);
    int32_t devices = 5;
    CHECK(dlb_cuda_device_count(&devices, &err) != DLB_OK);  // no GPU on the test machines
    CHECK(devices == 0);
  }
  SUBCASE("structs and text") {
    DLDevice device{kDLCUDA, 3};
    CHECK(dlb_device_parse("nowhere:1", &device, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(device.device_type == 0);
    CHECK(device.device_id == 0);
    DLDataType dt = f32();
    CHECK(dlb_dtype_parse("float7", &dt, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(dt.code == 0);
    CHECK(dt.bits == 0);
    CHECK(dt.lanes == 0);
    char text[4] = {'x', 'y', 'z', '\0'};
    CHECK(dlb_device_format(DLDevice{kDLCUDA, 1}, text, sizeof text, &err) ==
          DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(err) == "buffer of 4 bytes is too small for device name 'cuda:1'");
    CHECK(std::string(text).empty());
    text[0] = 'x';
    CHECK(dlb_dtype_format(f32(), text, sizeof text, &err) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(msg(err) == "buffer of 4 bytes is too small for dtype name 'float32'");
    CHECK(std::string(text).empty());
  }
}

TEST_CASE("predicates take plain ints and never fail on out-of-range codes") {
  CHECK(dlb_dtype_bits_allowed(kDLFloat, 32) == 1);
  CHECK(dlb_dtype_bits_allowed(kDLFloat, 256 + 32) == 0);
  CHECK(dlb_dtype_bits_allowed(-1, 8) == 0);
  CHECK(dlb_dtype_bits_allowed(256 + kDLFloat, 32) == 0);
  CHECK((dlb_dtype_code_name(256 + kDLFloat) == nullptr));
  CHECK((dlb_dtype_code_name(-1) == nullptr));
  CHECK(std::string(dlb_dtype_code_name(kDLFloat)) == "float");
}
