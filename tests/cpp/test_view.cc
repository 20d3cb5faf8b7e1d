// TensorView<T> and ConstTensorView<T>: dtype, read-only and host checks, strides, byte_offset,
// bounds.
#include <complex>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "helpers.hpp"

using dlbridge::ConstTensorView;
using dlbridge::Device;
using dlbridge::DType;
using dlbridge::Tensor;
using dlbridge::TensorView;

TEST_SUITE("cpp.view") {
  TEST_CASE("element types and constness") {
    Tensor t = Tensor::empty<float>({2, 3});
    auto v = t.view<float>();
    auto c = t.cview<float>();
    static_assert(std::is_same<decltype(v), TensorView<float>>::value, "");
    static_assert(std::is_same<decltype(c), ConstTensorView<float>>::value, "");
    static_assert(std::is_same<decltype(v(0, 0)), float&>::value, "");
    static_assert(std::is_same<decltype(c(0, 0)), const float&>::value, "");
    static_assert(std::is_same<decltype(c.at({0, 0})), const float&>::value, "");
    static_assert(std::is_same<decltype(v.data()), float*>::value, "");
    static_assert(std::is_same<decltype(c.data()), const float*>::value, "");
    static_assert(std::is_same<ConstTensorView<float>::value_type, float>::value, "");
    static_assert(std::is_convertible<TensorView<float>, ConstTensorView<float>>::value, "");
    static_assert(!std::is_convertible<ConstTensorView<float>, TensorView<float>>::value, "");
    static_assert(!std::is_convertible<TensorView<float>, ConstTensorView<int32_t>>::value, "");
    v(1, 2) = 9.0f;
    const ConstTensorView<float> converted = v;
    CHECK(converted(1, 2) == 9.0f);
    CHECK(c.at({1, 2}) == 9.0f);
    const Tensor& const_ref = t;
    CHECK(const_ref.cview<float>()(1, 2) == 9.0f);
  }

  TEST_CASE("shape, stride, size, ndim, data") {
    Tensor t = Tensor::allocate(Device::cpu(), DType::int32(), {2, 3}, {1, 2});
    auto v = t.view<int32_t>();
    CHECK(v.ndim() == 2);
    CHECK(v.shape(0) == 2);
    CHECK(v.shape(1) == 3);
    CHECK(v.stride(0) == 1);
    CHECK(v.stride(1) == 2);
    CHECK(v.size() == 6);
    CHECK(static_cast<void*>(v.data()) ==
          static_cast<char*>(t.data()) + t.byte_offset());
    CHECK_THROWS_WITH_AS(v.shape(2), "axis 2 is out of range for a 2-dimensional view",
                         std::out_of_range);
    CHECK_THROWS_WITH_AS(v.stride(-1), "axis -1 is out of range for a 2-dimensional view",
                         std::out_of_range);
    // Column-major strides are honoured.
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) v(i, j) = 10 * i + j;
    }
    const int32_t* raw = v.data();
    CHECK(raw[0] == 0);
    CHECK(raw[1] == 10);
    CHECK(raw[2] == 1);
    CHECK(raw[5] == 12);
  }

  TEST_CASE("index checks") {
    Tensor t = Tensor::empty<float>({2, 3});
    auto v = t.view<float>();
    CHECK_DLB_ERROR(v(0, 3), DLB_ERR_INVALID_ARGUMENT, "index 3 is out of range for axis 1 with extent 3");
    CHECK_DLB_ERROR(v(2, 0), DLB_ERR_INVALID_ARGUMENT, "index 2 is out of range for axis 0 with extent 2");
    CHECK_DLB_ERROR(v(-3, 0), DLB_ERR_INVALID_ARGUMENT, "index -3 is out of range for axis 0 with extent 2");
    // Negative indices count from the end.
    v(1, 2) = 9.0f;
    CHECK(v(-1, -1) == 9.0f);
    CHECK_DLB_ERROR(v.at({1, 7}), DLB_ERR_INVALID_ARGUMENT, "index 7 is out of range for axis 1 with extent 3");
    CHECK_DLB_ERROR(v(1), DLB_ERR_INVALID_ARGUMENT, "1 indices given for a tensor with 2 dimensions");
    CHECK_DLB_ERROR(v.at({0, 0, 0}), DLB_ERR_INVALID_ARGUMENT,
                    "3 indices given for a tensor with 2 dimensions");
    CHECK_DLB_ERROR(v(), DLB_ERR_INVALID_ARGUMENT, "0 indices given for a tensor with 2 dimensions");
    // Any integer type works as an index.
    const std::size_t i = 1;
    const unsigned short j = 2;
    const long long k = 0;
    v(i, j) = 1.0f;
    v(k, 1L) = 2.0f;
    CHECK(v(1, 2) == 1.0f);
    CHECK(v.at({0, 1}) == 2.0f);
  }

  TEST_CASE("scalars and empty tensors") {
    Tensor s = Tensor::empty<double>({});
    auto v = s.view<double>();
    CHECK(v.ndim() == 0);
    CHECK(v.size() == 1);
    v() = 3.5;
    CHECK(s.cview<double>().at({}) == 3.5);
    CHECK_DLB_ERROR(v(0), DLB_ERR_INVALID_ARGUMENT, "1 indices given for a tensor with 0 dimensions");

    Tensor e = Tensor::empty<float>({3, 0});
    auto ev = e.view<float>();
    CHECK(ev.size() == 0);
    CHECK_DLB_ERROR(ev(0, 0), DLB_ERR_INVALID_ARGUMENT, "index 0 is out of range for axis 1 with extent 0");
  }

  TEST_CASE("dtype mismatch names both dtypes") {
    Tensor t = Tensor::empty<int32_t>({2});
    CHECK_DLB_ERROR(t.view<float>(), DLB_ERR_INVALID_ARGUMENT,
                    "the tensor holds int32 elements, not float32");
    CHECK_DLB_ERROR(t.cview<uint32_t>(), DLB_ERR_INVALID_ARGUMENT,
                    "the tensor holds int32 elements, not uint32");
    Tensor vec = Tensor::allocate(Device::cpu(), DType::float32().with_lanes(4), {2});
    CHECK_DLB_ERROR(vec.view<float>(), DLB_ERR_INVALID_ARGUMENT,
                    "the tensor holds float32x4 elements, not float32");
  }

  TEST_CASE("READ_ONLY tensors give only const views") {
    Tensor t = Tensor::allocate(Device::cpu(), DType::float32(), {2}, {},
                                DLPACK_FLAG_BITMASK_READ_ONLY);
    CHECK_DLB_ERROR(t.view<float>(), DLB_ERR_READ_ONLY, "the tensor is read-only");
    CHECK_NOTHROW(t.cview<float>());
    // The dtype is checked first.
    CHECK_DLB_ERROR(t.view<int32_t>(), DLB_ERR_INVALID_ARGUMENT,
                    "the tensor holds float32 elements, not int32");
  }

  TEST_CASE("memory the host cannot read is refused") {
    float memory[4] = {};  // stands in for a device pointer; never dereferenced
    int64_t shape[1] = {4};
    DLTensor desc{};
    desc.data = memory;
    desc.device = DLDevice{kDLCUDA, 1};
    desc.ndim = 1;
    desc.dtype = DLDataType{kDLFloat, 32, 1};
    desc.shape = shape;
    Tensor t = Tensor::wrap(desc, 0, nullptr, nullptr);
    CHECK(t.device() == Device::cuda(1));
    CHECK_FALSE(t.host_readable());
    const std::string message =
        "cuda:1 memory is not readable by the host: copy the tensor to the cpu first";
    CHECK_DLB_ERROR(t.view<float>(), DLB_ERR_UNSUPPORTED, message);
    CHECK_DLB_ERROR(t.cview<float>(), DLB_ERR_UNSUPPORTED, message);

    // Pinned host memory is host-readable.
    desc.device = DLDevice{kDLCUDAHost, 0};
    Tensor pinned = Tensor::wrap(desc, 0, nullptr, nullptr);
    CHECK(pinned.view<float>()(3) == 0.0f);
  }

  TEST_CASE("byte_offset and negative strides of wrapped memory") {
    float memory[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int64_t shape[1] = {3};
    int64_t strides[1] = {-2};
    DLTensor desc{};
    desc.data = memory;
    desc.device = DLDevice{kDLCPU, 0};
    desc.ndim = 1;
    desc.dtype = DLDataType{kDLFloat, 32, 1};
    desc.shape = shape;
    desc.strides = strides;
    desc.byte_offset = 6 * sizeof(float);  // first element is memory[6]
    Tensor t = Tensor::wrap(desc, 0, nullptr, nullptr);
    auto v = t.cview<float>();
    CHECK(v.data() == memory + 6);
    CHECK(v(0) == 6.0f);
    CHECK(v(1) == 4.0f);
    CHECK(v(2) == 2.0f);
    // Sliced again in reverse: back to increasing order.
    Tensor r = t.slice({dlbridge::all(-1)});
    CHECK(r.strides() == std::vector<int64_t>{2});
    auto rv = r.cview<float>();
    CHECK(rv(0) == 2.0f);
    CHECK(rv(2) == 6.0f);
  }

  TEST_CASE("a foreign tensor with NULL strides reads as row-major") {
    std::atomic<int> deleted{0};
    DLManagedTensorVersioned* raw = make_foreign_versioned(&deleted);
    raw->dl_tensor.strides = nullptr;
    {
      Tensor t = Tensor::from_raw(raw);  // held without import: strides stay NULL
      CHECK(t.get()->dl_tensor.strides == nullptr);
      CHECK(t.strides() == std::vector<int64_t>{3, 1});
      CHECK(t.stride(0) == 3);
      auto v = t.cview<float>();
      CHECK(v.stride(0) == 3);
      CHECK(v(1, 1) == 4.0f);
    }
    CHECK(deleted.load() == 1);
  }

  TEST_CASE("a malformed tensor taken with from_raw is validated before it is viewed") {
    std::atomic<int> deleted{0};
    DLManagedTensorVersioned* raw = make_foreign_versioned(&deleted);
    static_cast<ForeignVersioned*>(raw->manager_ctx)->shape[1] = -3;
    {
      Tensor t = Tensor::from_raw(raw);
      CHECK_DLB_ERROR(t.cview<float>(), DLB_ERR_INVALID_ARGUMENT,
                      "shape[1] is -3; extents must not be negative");
      CHECK(t.shape() == std::vector<int64_t>{2, -3});
      raw->dl_tensor.ndim = -1;
      CHECK_DLB_ERROR(t.shape(), DLB_ERR_INVALID_ARGUMENT, "ndim -1 is negative");
      CHECK_DLB_ERROR(t.strides(), DLB_ERR_INVALID_ARGUMENT, "ndim -1 is negative");
      CHECK_DLB_ERROR(t.shape(0), DLB_ERR_INVALID_ARGUMENT, "ndim -1 is negative");
      raw->dl_tensor.ndim = 2;
      raw->dl_tensor.shape = nullptr;
      CHECK_DLB_ERROR(t.view<float>(), DLB_ERR_INVALID_ARGUMENT, "shape is NULL but ndim is 2");
      CHECK_DLB_ERROR(t.shape(), DLB_ERR_INVALID_ARGUMENT, "shape is NULL but ndim is 2");
    }
    CHECK(deleted.load() == 1);
  }

  TEST_CASE("negative strides of an allocation: every element is inside the memory") {
    Tensor t = Tensor::allocate(Device::cpu(), DType::int64(), {3, 2}, {-2, -1});
    CHECK(t.strides() == std::vector<int64_t>{-2, -1});
    CHECK(t.byte_offset() == 0);  // data is the first element; the rest lies before it
    auto v = t.view<int64_t>();
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 2; ++j) v(i, j) = 10 * i + j;
    }
    const auto* base = static_cast<const int64_t*>(t.data()) - 5;
    CHECK(base[5] == 0);   // v(0, 0)
    CHECK(base[0] == 21);  // v(2, 1)
    Tensor c = t.copy();
    CHECK(c.strides() == std::vector<int64_t>{2, 1});
    CHECK(c.cview<int64_t>()(2, 0) == 20);
  }

  TEST_CASE("bool, complex and integer element types") {
    Tensor b = Tensor::empty<bool>({3});
    CHECK(b.dtype() == DType::boolean());
    auto bv = b.view<bool>();
    bv(0) = true;
    bv(1) = false;
    bv(2) = true;
    CHECK(b.cview<bool>()(2));
    CHECK(static_cast<const unsigned char*>(b.data())[b.byte_offset()] == 1);

    Tensor z = Tensor::empty<std::complex<float>>({2});
    z.view<std::complex<float>>()(1) = {1.0f, -2.0f};
    CHECK(z.cview<std::complex<float>>()(1).imag() == -2.0f);
    Tensor reinterpreted = z.share();  // same memory, same dtype
    CHECK(reinterpreted.cview<std::complex<float>>()(1).real() == 1.0f);

    Tensor u = Tensor::from_vector(std::vector<uint64_t>{1, 2, 3});
    CHECK(u.cview<uint64_t>()(2) == 3u);
    CHECK(u.cview<unsigned long long>()(0) == 1u);  // the same dtype under another name
  }

  TEST_CASE("a view of a share outlives the original Tensor object") {
    LiveCount live;
    Tensor t = Tensor::empty<int16_t>({4});
    Tensor keep = t.share();
    auto v = t.view<int16_t>();
    t.reset();  // `keep` still references the memory, so `v` stays valid
    v(3) = 33;
    CHECK(keep.cview<int16_t>()(3) == 33);
    CHECK(live.delta() == 1);
  }
}
