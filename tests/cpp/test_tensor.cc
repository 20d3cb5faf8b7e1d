// dlbridge::Tensor: RAII, moves, factories, wrap, queries, share, zero-copy views and copies.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "helpers.hpp"

using dlbridge::Device;
using dlbridge::DType;
using dlbridge::Tensor;

using Shape = std::vector<int64_t>;

TEST_SUITE("cpp.tensor.lifecycle") {
  TEST_CASE("an empty Tensor owns nothing and refuses queries as closed") {
    LiveCount live;
    Tensor t;
    CHECK_FALSE(t);
    CHECK(t.get() == nullptr);
    CHECK(t.release() == nullptr);
    CHECK_FALSE(t.is_dlbridge());
    const char* message = DLB_CLOSED_MESSAGE;
    CHECK_DLB_ERROR(t.ndim(), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(t.shape(), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(t.numel(), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(t.flags(), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(t.read_only(), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(t.dtype(), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(t.data(), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(t.share(), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(t.transpose(), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(t.copy(), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(t.view<float>(), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(std::move(t).export_legacy(), DLB_ERR_CLOSED, message);
    Tensor full = Tensor::empty<float>({2});
    CHECK_DLB_ERROR(full.copy_into(t), DLB_ERR_CLOSED, message);
    CHECK_DLB_ERROR(t.copy_into(full), DLB_ERR_CLOSED, message);
    CHECK(live.delta() == 1);
  }

  TEST_CASE("allocate, queries, and exactly one free") {
    LiveCount live;
    {
      Tensor t = Tensor::allocate(Device::cpu(), DType::float32(), {2, 3});
      CHECK(live.delta() == 1);
      REQUIRE(t);
      CHECK(t.get() != nullptr);
      CHECK(t.is_dlbridge());
      CHECK(t.get()->version.major == 1);
      CHECK(t.get()->version.minor == 3);
      CHECK(t.ndim() == 2);
      CHECK(t.shape() == Shape{2, 3});
      CHECK(t.shape(0) == 2);
      CHECK(t.shape(1) == 3);
      CHECK(t.strides() == Shape{3, 1});
      CHECK(t.stride(0) == 3);
      CHECK(t.stride(1) == 1);
      CHECK(t.numel() == 6);
      CHECK(t.byte_size() == 24);
      CHECK(t.dtype() == DType::float32());
      CHECK(t.device() == Device::cpu());
      CHECK(t.flags() == 0);
      CHECK_FALSE(t.read_only());
      CHECK(t.is_c_contiguous());
      CHECK_FALSE(t.is_f_contiguous());
      CHECK(t.host_readable());
      CHECK(t.data() != nullptr);
      CHECK(t.data() == t.dl_tensor().data);
      CHECK(t.byte_offset() == t.dl_tensor().byte_offset);
      CHECK(dlb_tensor_is_aligned(&t.dl_tensor(), DLB_CPU_ALIGNMENT) == 1);
    }
    CHECK(live.delta() == 0);
  }

  TEST_CASE("allocate with strides, flags, scalars and zero-size shapes") {
    LiveCount live;
    Tensor f = Tensor::allocate(Device::cpu(), DType::int16(), {2, 3}, {1, 2});
    CHECK(f.strides() == Shape{1, 2});
    CHECK_FALSE(f.is_c_contiguous());
    CHECK(f.is_f_contiguous());

    Tensor ro = Tensor::allocate(Device::cpu(), DType::uint8(), {4}, {},
                                 DLPACK_FLAG_BITMASK_READ_ONLY);
    CHECK(ro.read_only());
    CHECK(ro.flags() == DLPACK_FLAG_BITMASK_READ_ONLY);

    Tensor scalar = Tensor::allocate(Device::cpu(), DType::float64(), {});
    CHECK(scalar.ndim() == 0);
    CHECK(scalar.shape().empty());
    CHECK(scalar.strides().empty());
    CHECK(scalar.numel() == 1);
    CHECK(scalar.byte_size() == 8);

    Tensor zero = Tensor::allocate(Device::cpu(), DType::float32(), {0, 3});
    CHECK(zero.numel() == 0);
    CHECK(zero.byte_size() == 0);
    CHECK(zero.data() != nullptr);  // the contract: still non-NULL on the CPU
    CHECK(zero.is_c_contiguous());

    Tensor packed = Tensor::allocate(Device::cpu(), DType(kDLInt, 4), {3});
    CHECK(packed.byte_size() == 2);
    Tensor padded = Tensor::allocate(Device::cpu(), DType(kDLInt, 4), {3}, {},
                                     DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
    CHECK(padded.byte_size() == 3);
    CHECK(live.delta() == 6);
  }

  TEST_CASE("empty<T>") {
    Tensor t = Tensor::empty<uint16_t>({5});
    CHECK(t.dtype() == DType::uint16());
    CHECK(t.shape() == Shape{5});
    CHECK(t.device() == Device::cpu());
    Tensor c = Tensor::empty<std::complex<double>>({2, 2}, Device::cpu());
    CHECK(c.dtype() == DType::complex128());
    CHECK(c.byte_size() == 64);
  }

  TEST_CASE("allocate errors carry the core's message and allocate nothing") {
    LiveCount live;
    const Shape bad{2, -3};
    const CResult negative = c_call([&](dlb_error* e) {
      DLManagedTensorVersioned* out = nullptr;
      return dlb_tensor_allocate(DLDevice{kDLCPU, 0}, DLDataType{kDLFloat, 32, 1}, 2, bad.data(),
                                 nullptr, 0, &out, e);
    });
    REQUIRE(negative.status == DLB_ERR_INVALID_ARGUMENT);
    CHECK_DLB_ERROR(Tensor::allocate(Device::cpu(), DType::float32(), bad), negative.status,
                    negative.message);
    CHECK_DLB_ERROR(Tensor::allocate(Device::cpu(), DType::float32(), bad),
                    DLB_ERR_INVALID_ARGUMENT, "shape[1] is -3; extents must not be negative");

    CHECK_DLB_ERROR(Tensor::allocate(Device::cpu(), DType::float32(), Shape(65, 1)),
                    DLB_ERR_INVALID_ARGUMENT, "ndim 65 exceeds the maximum of 64");
    CHECK_DLB_ERROR(Tensor::allocate(Device::cpu(), DType(200, 8), {2}), DLB_ERR_UNSUPPORTED,
                    "dtype code 200 is not a known DLPack type code");
    CHECK_DLB_ERROR(Tensor::allocate(Device::cpu(), DType::float32(), {2}, {}, 1u << 5),
                    DLB_ERR_UNSUPPORTED, "flags 0x20 contain bits unknown to DLPack 1.3");
    CHECK_DLB_ERROR(Tensor::allocate(Device::cpu(), DType::float32(), {1LL << 40, 1LL << 40}),
                    DLB_ERR_OVERFLOW, "element count of shape (1099511627776, 1099511627776) "
                                      "overflows 63 bits");

    CHECK_DLB_ERROR(Tensor::allocate(Device::cpu(), DType::float32(), {2}, {},
                                     DLPACK_FLAG_BITMASK_IS_COPIED),
                    DLB_ERR_INVALID_ARGUMENT,
                    "flag IS_COPIED cannot be requested for a new allocation");
    CHECK_DLB_ERROR(Tensor::allocate(Device(250, 0), DType::float32(), {2}), DLB_ERR_UNSUPPORTED,
                    "device type 250 is not a known DLPack device type");
    CHECK_DLB_ERROR(Tensor::allocate(Device::vulkan(), DType::float32(), {2}), DLB_ERR_UNSUPPORTED,
                    "no backend is registered for vulkan");
    CHECK_DLB_ERROR(Tensor::allocate(Device(kDLCPU, 2), DType::float32(), {2}),
                    DLB_ERR_INVALID_ARGUMENT, "cpu tensors must have device_id 0, not 2");
    // The same text as the C API, for the same input.
    for (const auto& args : {std::make_pair(Device::cpu(), uint64_t{DLPACK_FLAG_BITMASK_IS_COPIED}),
                             std::make_pair(Device(250, 0), uint64_t{0})}) {
      const Shape shape{2};
      const CResult c = c_call([&](dlb_error* e) {
        DLManagedTensorVersioned* out = nullptr;
        return dlb_tensor_allocate(args.first.dl(), DLDataType{kDLFloat, 32, 1}, 1, shape.data(),
                                   nullptr, args.second, &out, e);
      });
      REQUIRE(c.status != DLB_OK);
      CHECK_DLB_ERROR(Tensor::allocate(args.first, DType::float32(), shape, {}, args.second),
                      c.status, c.message);
    }

    // Checked by the C++ layer (the C API cannot know how long the strides array is), with the
    // message every binding uses.
    CHECK_DLB_ERROR(Tensor::allocate(Device::cpu(), DType::float32(), {2, 3}, {1}),
                    DLB_ERR_INVALID_ARGUMENT, DLB_STRIDES_LENGTH_MESSAGE);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("shape(axis) and stride(axis) check the axis") {
    Tensor t = Tensor::empty<float>({2, 3});
    CHECK_THROWS_WITH_AS(t.shape(2), "axis 2 is out of range for a 2-dimensional tensor",
                         std::out_of_range);
    CHECK_THROWS_WITH_AS(t.stride(-1), "axis -1 is out of range for a 2-dimensional tensor",
                         std::out_of_range);
  }
}

TEST_SUITE("cpp.tensor.move") {
  TEST_CASE("move construction leaves the source empty and frees once") {
    LiveCount live;
    Tensor a = Tensor::empty<float>({3});
    DLManagedTensorVersioned* raw = a.get();
    Tensor b(std::move(a));
    CHECK_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is specified as empty
    CHECK(a.get() == nullptr);
    CHECK(b.get() == raw);
    CHECK(live.delta() == 1);
    {
      Tensor c = std::move(b);
      CHECK(c.get() == raw);
      CHECK(live.delta() == 1);
    }
    CHECK(live.delta() == 0);
    // Destroying the moved-from objects frees nothing more (the count cannot go negative).
  }

  TEST_CASE("move assignment frees the target's old tensor exactly once") {
    LiveCount live;
    std::atomic<int> released{0};
    static float memory[4];
    DLTensor desc{};
    int64_t shape[1] = {4};
    desc.data = memory;
    desc.device = DLDevice{kDLCPU, 0};
    desc.ndim = 1;
    desc.dtype = DLDataType{kDLFloat, 32, 1};
    desc.shape = shape;
    Tensor target = Tensor::wrap(desc, 0, &count_release, &released);
    Tensor source = Tensor::empty<float>({2});
    DLManagedTensorVersioned* raw = source.get();
    target = std::move(source);
    CHECK(released.load() == 1);
    CHECK(target.get() == raw);
    CHECK_FALSE(source);  // NOLINT(bugprone-use-after-move)
    CHECK(live.delta() == 1);
    // Self-move-assignment keeps the tensor.
    Tensor& alias = target;
    target = std::move(alias);
    CHECK(target.get() == raw);
    CHECK(live.delta() == 1);
    // Assigning an empty Tensor frees.
    target = Tensor();
    CHECK_FALSE(target);
    CHECK(live.delta() == 0);
    CHECK(released.load() == 1);
  }

  TEST_CASE("swap") {
    Tensor a = Tensor::empty<float>({1});
    Tensor b = Tensor::empty<int8_t>({2});
    DLManagedTensorVersioned* ra = a.get();
    DLManagedTensorVersioned* rb = b.get();
    swap(a, b);
    CHECK(a.get() == rb);
    CHECK(b.get() == ra);
    a.swap(b);
    CHECK(a.get() == ra);
  }

  TEST_CASE("release, from_raw and reset") {
    LiveCount live;
    Tensor t = Tensor::empty<float>({2});
    DLManagedTensorVersioned* raw = t.release();
    CHECK_FALSE(t);
    CHECK(live.delta() == 1);  // released, not freed
    Tensor back = Tensor::from_raw(raw);
    CHECK(back.get() == raw);
    CHECK(Tensor::from_raw(nullptr).get() == nullptr);
    back.reset();
    CHECK_FALSE(back);
    CHECK(live.delta() == 0);

    DLManagedTensorVersioned* other = nullptr;
    dlb_error error{};
    const int64_t shape[1] = {3};
    REQUIRE(dlb_tensor_allocate(DLDevice{kDLCPU, 0}, DLDataType{kDLInt, 32, 1}, 1, shape, nullptr,
                                0, &other, &error) == DLB_OK);
    Tensor holder = Tensor::empty<float>({1});
    CHECK(live.delta() == 2);
    holder.reset(other);  // frees the old one, owns `other`
    CHECK(holder.get() == other);
    CHECK(live.delta() == 1);
    DLManagedTensorVersioned* given = holder.release();
    dlb_tensor_free(given);  // the caller frees what it took
    CHECK(live.delta() == 0);
  }
}

TEST_SUITE("cpp.tensor.wrap") {
  // A 2x3 float description of `memory`; `shape` must outlive the call.
  DLTensor describe(float* memory, int64_t* shape) {
    DLTensor desc{};
    desc.data = memory;
    desc.device = DLDevice{kDLCPU, 0};
    desc.ndim = 2;
    desc.dtype = DLDataType{kDLFloat, 32, 1};
    desc.shape = shape;
    desc.strides = nullptr;
    desc.byte_offset = 0;
    return desc;
  }

  TEST_CASE("wrap with a C release function runs it once, when the last reference goes") {
    LiveCount live;
    std::atomic<int> released{0};
    float memory[6] = {0, 1, 2, 3, 4, 5};
    Tensor share;
    {
      int64_t shape[2] = {2, 3};
      Tensor t = Tensor::wrap(describe(memory, shape), 0, &count_release, &released);
      shape[0] = 99;  // the shape was copied
      CHECK(t.shape() == Shape{2, 3});
      CHECK(t.strides() == Shape{3, 1});
      CHECK(t.data() == memory);
      CHECK(t.cview<float>()(1, 2) == 5.0f);
      share = t.share();
      CHECK(live.delta() == 2);
    }
    CHECK(released.load() == 0);  // the share keeps the memory
    CHECK(share.cview<float>()(1, 0) == 3.0f);
    share.reset();
    CHECK(released.load() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("wrap errors do not call release and leave the memory with the caller") {
    LiveCount live;
    std::atomic<int> released{0};
    int64_t shape[2] = {2, 3};
    DLTensor desc = describe(nullptr, shape);
    const CResult c = c_call([&](dlb_error* e) {
      DLManagedTensorVersioned* out = nullptr;
      return dlb_tensor_wrap(&desc, 0, &count_release, &released, &out, e);
    });
    REQUIRE(c.status == DLB_ERR_INVALID_ARGUMENT);
    CHECK_DLB_ERROR(Tensor::wrap(desc, 0, &count_release, &released), c.status, c.message);
    CHECK_DLB_ERROR(Tensor::wrap(desc, 0, &count_release, &released), DLB_ERR_INVALID_ARGUMENT,
                    "data is NULL but the tensor has 6 elements");
    float memory[6] = {};
    desc = describe(memory, shape);
    desc.device = DLDevice{kDLCPU, 1};
    CHECK_DLB_ERROR(Tensor::wrap(desc, 0, &count_release, &released), DLB_ERR_INVALID_ARGUMENT,
                    "cpu tensors must have device_id 0, not 1");
    CHECK(released.load() == 0);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("wrap with a callable: called once, destroyed once, also on another thread") {
    LiveCount live;
    auto token = std::make_shared<int>(7);  // use_count tracks the callable's copies
    std::atomic<int> calls{0};
    float memory[6] = {};
    int64_t shape[2] = {2, 3};
    Tensor t = Tensor::wrap(describe(memory, shape), DLPACK_FLAG_BITMASK_READ_ONLY,
                            [token, &calls]() noexcept { calls.fetch_add(1); });
    CHECK(t.read_only());
    CHECK(token.use_count() == 2);
    Tensor other = t.share();
    t.reset();
    CHECK(calls.load() == 0);
    std::thread worker([moved = std::move(other)]() mutable { moved.reset(); });
    worker.join();
    CHECK(calls.load() == 1);
    CHECK(token.use_count() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("wrap with a callable: on error it is destroyed without being called") {
    LiveCount live;
    auto token = std::make_shared<int>(7);
    std::atomic<int> calls{0};
    int64_t shape[2] = {2, -1};
    float memory[6] = {};
    CHECK_DLB_ERROR(Tensor::wrap(describe(memory, shape), 0,
                                 [token, &calls]() noexcept { calls.fetch_add(1); }),
                    DLB_ERR_INVALID_ARGUMENT, "shape[1] is -1; extents must not be negative");
    CHECK(calls.load() == 0);
    CHECK(token.use_count() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("from_vector moves the buffer in, zero-copy") {
    LiveCount live;
    std::vector<int32_t> values{10, 11, 12, 13, 14, 15};
    const int32_t* buffer = values.data();
    Tensor t = Tensor::from_vector(std::move(values), {2, 3});
    CHECK(values.empty());  // NOLINT(bugprone-use-after-move): documented as moved from
    CHECK(t.data() == buffer);
    CHECK(t.dtype() == DType::int32());
    CHECK(t.shape() == Shape{2, 3});
    CHECK(t.cview<int32_t>()(1, 1) == 14);
    Tensor view = t.select(0, 1);
    t.reset();
    CHECK(view.cview<int32_t>()(2) == 15);  // the vector lives as long as a view of it
    view.reset();
    CHECK(live.delta() == 0);

    std::vector<double> flat{1.5, 2.5};
    Tensor one_d = Tensor::from_vector(std::move(flat), {2}, DLPACK_FLAG_BITMASK_READ_ONLY);
    CHECK(one_d.shape() == Shape{2});
    CHECK(one_d.read_only());
    CHECK(one_d.cview<double>()(1) == 2.5);

    // {6} is a shape, never flags.
    Tensor six = Tensor::from_vector(std::vector<int8_t>(6), {6});
    CHECK(six.shape() == Shape{6});
    CHECK(six.flags() == 0);

    Tensor empty = Tensor::from_vector(std::vector<uint8_t>());
    CHECK(empty.shape() == Shape{0});
    CHECK(empty.numel() == 0);
  }

  TEST_CASE("from_vector errors leave the vector as it was") {
    LiveCount live;
    std::vector<float> values{1, 2, 3, 4, 5, 6};
    const float* buffer = values.data();
    CHECK_DLB_ERROR(Tensor::from_vector(std::move(values), {2, 4}), DLB_ERR_INVALID_ARGUMENT,
                    "the tensor's elements reach bytes [0, 32) of a buffer of 24 bytes");
    CHECK(values.size() == 6);  // NOLINT(bugprone-use-after-move): restored on error
    CHECK(values.data() == buffer);
    CHECK(values[5] == 6.0f);
    CHECK_DLB_ERROR(Tensor::from_vector(std::move(values), {-2, 3}), DLB_ERR_INVALID_ARGUMENT,
                    "shape[0] is -2; extents must not be negative");
    CHECK(values.size() == 6);  // NOLINT(bugprone-use-after-move)
    CHECK(values.data() == buffer);
    CHECK_DLB_ERROR(Tensor::from_vector(std::move(values), {2, 3}, 1u << 7), DLB_ERR_UNSUPPORTED,
                    "flags 0x80 contain bits unknown to DLPack 1.3");
    CHECK(values.data() == buffer);  // NOLINT(bugprone-use-after-move)
    CHECK(live.delta() == 0);
  }
}

TEST_SUITE("cpp.tensor.share") {
  TEST_CASE("share is a second reference that outlives the original") {
    LiveCount live;
    Tensor t = Tensor::empty<float>({2, 3});
    iota(t);
    Tensor s = t.share();
    CHECK(s.get() != t.get());
    CHECK(s.data() == t.data());
    CHECK(s.shape() == t.shape());
    CHECK(s.get()->dl_tensor.shape != t.get()->dl_tensor.shape);  // its own copy
    CHECK(live.delta() == 2);
    t.view<float>()(0, 0) = 42.0f;
    t.reset();
    CHECK(live.delta() == 1);
    CHECK(s.cview<float>()(0, 0) == 42.0f);
    CHECK(s.cview<float>()(1, 2) == 5.0f);
  }

  TEST_CASE("share with READ_ONLY hands out a read-only alias") {
    Tensor t = Tensor::empty<float>({2});
    Tensor ro = t.share(DLPACK_FLAG_BITMASK_READ_ONLY);
    CHECK(ro.read_only());
    CHECK_FALSE(t.read_only());
    CHECK_DLB_ERROR(ro.view<float>(), DLB_ERR_READ_ONLY, "the tensor is read-only");
    // Flags carry over to further shares.
    CHECK(ro.share().read_only());
  }

  TEST_CASE("share errors") {
    Tensor t = Tensor::empty<float>({2});
    const CResult c = c_call([&](dlb_error* e) {
      DLManagedTensorVersioned* out = nullptr;
      return dlb_tensor_share(t.get(), DLPACK_FLAG_BITMASK_IS_COPIED, &out, e);
    });
    REQUIRE(c.status != DLB_OK);
    CHECK_DLB_ERROR(t.share(DLPACK_FLAG_BITMASK_IS_COPIED), c.status, c.message);
    CHECK_DLB_ERROR(t.share(DLPACK_FLAG_BITMASK_IS_COPIED), DLB_ERR_INVALID_ARGUMENT,
                    "a share can only add the READ_ONLY flag, not 0x2");

    // A foreign tensor held with from_raw is not a dlbridge tensor: share refuses it.
    std::atomic<int> deleted{0};
    {
      Tensor foreign = Tensor::from_raw(make_foreign_versioned(&deleted));
      CHECK_FALSE(foreign.is_dlbridge());
      const CResult f = c_call([&](dlb_error* e) {
        DLManagedTensorVersioned* out = nullptr;
        return dlb_tensor_share(foreign.get(), 0, &out, e);
      });
      REQUIRE(f.status != DLB_OK);
      CHECK_DLB_ERROR(foreign.share(), f.status, f.message);
      const char* not_ours =
          "tensor was not made by dlbridge; import it with dlb_tensor_import first";
      CHECK_DLB_ERROR(foreign.share(), DLB_ERR_INVALID_ARGUMENT, not_ours);
      CHECK_DLB_ERROR(foreign.transpose(), DLB_ERR_INVALID_ARGUMENT, not_ours);
      CHECK_DLB_ERROR(foreign.select(0, 0), DLB_ERR_INVALID_ARGUMENT, not_ours);
      const dlb_slice whole = dlbridge::all();
      const CResult g = c_call([&](dlb_error* e) {
        DLManagedTensorVersioned* out = nullptr;
        return dlb_tensor_slice(foreign.get(), 1, &whole, &out, e);
      });
      REQUIRE(g.status != DLB_OK);
      CHECK_DLB_ERROR(foreign.slice({whole}), g.status, g.message);
      // Queries work on any producer's tensor.
      CHECK(foreign.shape() == Shape{2, 3});
      CHECK(foreign.cview<float>()(1, 1) == 4.0f);
      CHECK(deleted.load() == 0);
    }
    CHECK(deleted.load() == 1);  // from_raw frees through the foreign deleter
  }
}

TEST_SUITE("cpp.tensor.views") {
  TEST_CASE("slice") {
    LiveCount live;
    Tensor t = Tensor::empty<float>({4, 3});
    iota(t);
    Tensor s = t.slice({dlbridge::range(1, 3), dlbridge::range(0, 3, 2)});
    t.reset();  // the view keeps the memory alive
    CHECK(s.shape() == Shape{2, 2});
    CHECK(s.strides() == Shape{3, 2});
    CHECK_FALSE(s.is_c_contiguous());
    auto v = s.cview<float>();
    CHECK(v(0, 0) == 3.0f);
    CHECK(v(0, 1) == 5.0f);
    CHECK(v(1, 0) == 6.0f);
    CHECK(v(1, 1) == 8.0f);
    // Fewer slices than dimensions: the rest are taken whole; Python clamping.
    Tensor u = s.slice({dlbridge::range(-1, 100)});
    CHECK(u.shape() == Shape{1, 2});
    CHECK(u.cview<float>()(0, 1) == 8.0f);
    s.reset();
    u.reset();
    CHECK(live.delta() == 0);
  }

  TEST_CASE("negative strides through slice with step -1") {
    Tensor t = Tensor::empty<float>({3, 4});
    iota(t);
    Tensor r = t.slice({dlbridge::all(-1), dlbridge::all(-1)});
    CHECK(r.shape() == Shape{3, 4});
    CHECK(r.strides() == Shape{-4, -1});
    auto v = r.cview<float>();
    CHECK(v.stride(0) == -4);
    CHECK(v.stride(1) == -1);
    CHECK(v(0, 0) == 11.0f);
    CHECK(v(0, 3) == 8.0f);
    CHECK(v(2, 0) == 3.0f);
    CHECK(v(2, 3) == 0.0f);
    CHECK(v.data() == &t.cview<float>()(2, 3));
    // A reversed view with a step of -2 along one axis.
    Tensor s = t.slice({dlbridge::all(), dlbridge::range(3, dlbridge::kSliceNone, -2)});
    CHECK(s.shape() == Shape{3, 2});
    CHECK(s.cview<float>()(1, 0) == 7.0f);
    CHECK(s.cview<float>()(1, 1) == 5.0f);
    // Writes through a reversed view land in the original.
    Tensor w = t.slice({dlbridge::all(-1)});
    w.view<float>()(0, 0) = -1.0f;
    CHECK(t.cview<float>()(2, 0) == -1.0f);
    // A copy of a reversed view is compact and ordered as the view.
    Tensor c = r.copy();
    CHECK(c.is_c_contiguous());
    CHECK(c.cview<float>()(0, 1) == 10.0f);
  }

  TEST_CASE("select, reshape, permute, transpose outlive the original") {
    LiveCount live;
    Tensor t = Tensor::empty<float>({2, 3});
    iota(t);
    Tensor row = t.select(0, 1);
    Tensor col = t.select(-1, -1);
    Tensor flat = t.reshape({6});
    Tensor inferred = t.reshape({3, -1});
    Tensor perm = t.permute({1, 0});
    Tensor tr = t.transpose();
    CHECK(live.delta() == 7);
    t.reset();
    CHECK(row.shape() == Shape{3});
    CHECK(row.cview<float>()(2) == 5.0f);
    CHECK(col.shape() == Shape{2});
    CHECK(col.cview<float>()(0) == 2.0f);
    CHECK(flat.shape() == Shape{6});
    CHECK(flat.cview<float>()(4) == 4.0f);
    CHECK(inferred.shape() == Shape{3, 2});
    CHECK(inferred.cview<float>()(2, 1) == 5.0f);
    CHECK(perm.shape() == Shape{3, 2});
    CHECK(perm.strides() == Shape{1, 3});
    CHECK(perm.cview<float>()(2, 1) == 5.0f);
    CHECK(tr.shape() == Shape{3, 2});
    CHECK(tr.cview<float>()(0, 1) == 3.0f);
    CHECK(tr.is_f_contiguous());
    row.reset();
    col.reset();
    flat.reset();
    inferred.reset();
    perm.reset();
    tr.reset();
    CHECK(live.delta() == 0);
  }

  TEST_CASE("views keep flags") {
    Tensor t = Tensor::allocate(Device::cpu(), DType::float32(), {2, 2}, {},
                                DLPACK_FLAG_BITMASK_READ_ONLY);
    CHECK(t.transpose().read_only());
    CHECK(t.select(0, 0).read_only());
    CHECK(t.slice({dlbridge::all()}).read_only());
  }

  // Checks that a C++ view call throws the same status and message as the C call.
  template <class Cpp, class C>
  CResult same_error(Cpp&& cpp_call, C&& c_function, int status, const char* message) {
    const CResult c = c_call([&](dlb_error* e) {
      DLManagedTensorVersioned* out = nullptr;
      const int status = c_function(&out, e);
      CHECK(out == nullptr);
      return status;
    });
    REQUIRE(c.status != DLB_OK);
    CHECK(!c.message.empty());
    CHECK_DLB_ERROR(cpp_call(), c.status, c.message);
    CHECK_DLB_ERROR(cpp_call(), status, message);
    return c;
  }

  TEST_CASE("view errors throw the core's status and message") {
    LiveCount live;
    Tensor t = Tensor::empty<float>({2, 3});
    const dlb_slice zero_step = dlbridge::range(0, 2, 0);
    same_error([&] { return t.slice({zero_step}); },
               [&](DLManagedTensorVersioned** out, dlb_error* e) {
                 return dlb_tensor_slice(t.get(), 1, &zero_step, out, e);
               },
               DLB_ERR_INVALID_ARGUMENT, "slice step is 0 in dimension 0");
    const dlb_slice three[3] = {dlbridge::all(), dlbridge::all(), dlbridge::all()};
    same_error([&] { return t.slice({three[0], three[1], three[2]}); },
               [&](DLManagedTensorVersioned** out, dlb_error* e) {
                 return dlb_tensor_slice(t.get(), 3, three, out, e);
               },
               DLB_ERR_INVALID_ARGUMENT, "3 slices given for a tensor with 2 dimensions");
    same_error([&] { return t.select(2, 0); },
               [&](DLManagedTensorVersioned** out, dlb_error* e) {
                 return dlb_tensor_select(t.get(), 2, 0, out, e);
               },
               DLB_ERR_INVALID_ARGUMENT,
               "axis 2 is out of range for a tensor with 2 dimensions");
    same_error([&] { return t.select(0, 5); },
               [&](DLManagedTensorVersioned** out, dlb_error* e) {
                 return dlb_tensor_select(t.get(), 0, 5, out, e);
               },
               DLB_ERR_INVALID_ARGUMENT,
               "index 5 is out of range for axis 0 with extent 2");
    const int64_t five[1] = {5};
    same_error([&] { return t.reshape({5}); },
               [&](DLManagedTensorVersioned** out, dlb_error* e) {
                 return dlb_tensor_reshape(t.get(), 1, five, out, e);
               },
               DLB_ERR_INVALID_ARGUMENT,
               "cannot reshape 6 elements into shape (5)");
    const int32_t twice[2] = {0, 0};
    same_error([&] { return t.permute({0, 0}); },
               [&](DLManagedTensorVersioned** out, dlb_error* e) {
                 return dlb_tensor_permute(t.get(), 2, twice, out, e);
               },
               DLB_ERR_INVALID_ARGUMENT,
               "axis 0 appears twice in the permutation");
    const int32_t one_axis[1] = {0};
    same_error([&] { return t.permute({0}); },
               [&](DLManagedTensorVersioned** out, dlb_error* e) {
                 return dlb_tensor_permute(t.get(), 1, one_axis, out, e);
               },
               DLB_ERR_INVALID_ARGUMENT, "permute needs 2 axes, got 1");
    // A transposed (non-contiguous) tensor cannot be flattened without a copy.
    Tensor tr = t.transpose();
    const int64_t six[1] = {6};
    const CResult layout = same_error([&] { return tr.reshape({6}); },
                                      [&](DLManagedTensorVersioned** out, dlb_error* e) {
                                        return dlb_tensor_reshape(tr.get(), 1, six, out, e);
                                      },
                                      DLB_ERR_LAYOUT,
                                      "cannot reshape a tensor of shape (3, 2) and strides (1, 3) "
                                      "into shape (6) without copying");
    CHECK(layout.status == DLB_ERR_LAYOUT);
    CHECK(live.delta() == 2);
  }
}

TEST_SUITE("cpp.tensor.copy") {
  TEST_CASE("copy makes a compact, writable, IS_COPIED tensor") {
    LiveCount live;
    Tensor t = Tensor::empty<float>({2, 3});
    iota(t);
    Tensor ro = t.transpose().share(DLPACK_FLAG_BITMASK_READ_ONLY);
    Tensor c = ro.copy();
    CHECK(c.device() == Device::cpu());
    CHECK(c.shape() == Shape{3, 2});
    CHECK(c.is_c_contiguous());
    CHECK((c.flags() & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
    CHECK_FALSE(c.read_only());
    CHECK(c.data() != t.data());
    auto v = c.view<float>();
    CHECK(v(0, 1) == 3.0f);
    CHECK(v(2, 1) == 5.0f);
    v(0, 0) = 100.0f;
    CHECK(t.cview<float>()(0, 0) == 0.0f);  // independent memory
    Tensor explicit_cpu = t.copy(Device::cpu());
    CHECK(explicit_cpu.cview<float>()(1, 2) == 5.0f);
    CHECK(live.delta() == 4);
  }

  TEST_CASE("copy to a device without a backend throws the core's error") {
    Tensor t = Tensor::empty<float>({2});
    const Device nowhere(kDLVulkan, 0);
    const CResult c = c_call([&](dlb_error* e) {
      DLManagedTensorVersioned* out = nullptr;
      return dlb_tensor_copy(t.get(), nowhere.dl(), &out, e);
    });
    REQUIRE(c.status != DLB_OK);
    CHECK_DLB_ERROR(t.copy(nowhere), c.status, c.message);
    CHECK_DLB_ERROR(t.copy(nowhere), DLB_ERR_UNSUPPORTED, "no backend is registered for vulkan");
  }

  TEST_CASE("copy_into") {
    LiveCount live;
    Tensor src = Tensor::empty<float>({2, 3});
    iota(src);
    Tensor dst = Tensor::allocate(Device::cpu(), DType::float32(), {2, 3}, {1, 2});
    src.copy_into(dst);
    CHECK(dst.cview<float>()(1, 2) == 5.0f);
    CHECK(dst.cview<float>()(1, 0) == 3.0f);
    // Into a reversed view of itself: overlap is handled as if through a temporary.
    Tensor rev = src.slice({dlbridge::all(), dlbridge::all(-1)});
    src.copy_into(rev);
    CHECK(src.cview<float>()(0, 0) == 2.0f);
    CHECK(src.cview<float>()(0, 2) == 0.0f);

    Tensor wrong_shape = Tensor::empty<float>({3, 2});
    const CResult shape_c = c_call([&](dlb_error* e) {
      return dlb_tensor_copy_into(src.get(), wrong_shape.get(), e);
    });
    REQUIRE(shape_c.status == DLB_ERR_INVALID_ARGUMENT);
    CHECK_DLB_ERROR(src.copy_into(wrong_shape), shape_c.status, shape_c.message);
    CHECK_DLB_ERROR(src.copy_into(wrong_shape), DLB_ERR_INVALID_ARGUMENT,
                    "shape mismatch: source is (2, 3), destination is (3, 2)");

    Tensor wrong_dtype = Tensor::empty<int32_t>({2, 3});
    const CResult dtype_c = c_call([&](dlb_error* e) {
      return dlb_tensor_copy_into(src.get(), wrong_dtype.get(), e);
    });
    REQUIRE(dtype_c.status == DLB_ERR_INVALID_ARGUMENT);
    CHECK_DLB_ERROR(src.copy_into(wrong_dtype), dtype_c.status, dtype_c.message);
    CHECK_DLB_ERROR(src.copy_into(wrong_dtype), DLB_ERR_INVALID_ARGUMENT,
                    "dtype mismatch: source is float32, destination is int32");

    Tensor read_only = dst.share(DLPACK_FLAG_BITMASK_READ_ONLY);
    const CResult ro_c = c_call([&](dlb_error* e) {
      return dlb_tensor_copy_into(src.get(), read_only.get(), e);
    });
    REQUIRE(ro_c.status == DLB_ERR_READ_ONLY);
    CHECK_DLB_ERROR(src.copy_into(read_only), ro_c.status, ro_c.message);
    CHECK_DLB_ERROR(src.copy_into(read_only), DLB_ERR_READ_ONLY,
                    "cannot copy into a read-only tensor");
    CHECK(live.delta() == 6);
  }
}
