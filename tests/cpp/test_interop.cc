// Import and export: foreign versioned and legacy producers, LegacyTensor, round trips.
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "helpers.hpp"

using dlbridge::Device;
using dlbridge::DType;
using dlbridge::LegacyTensor;
using dlbridge::Tensor;

using Shape = std::vector<int64_t>;

TEST_SUITE("cpp.import") {
  TEST_CASE("import of a foreign versioned tensor: zero-copy, deleter runs once on free") {
    LiveCount live;
    std::atomic<int> deleted{0};
    DLManagedTensorVersioned* src = make_foreign_versioned(&deleted);
    void* data = src->dl_tensor.data;
    {
      Tensor t = Tensor::import(src);
      CHECK(t.is_dlbridge());
      CHECK(t.get() != src);  // a dlbridge block around the foreign tensor
      CHECK(t.get()->version.minor == 3);
      CHECK(t.data() == data);
      CHECK(t.shape() == Shape{2, 3});
      CHECK(t.dtype() == DType::float32());
      CHECK(t.cview<float>()(1, 2) == 5.0f);
      Tensor view = t.select(0, 0);  // views need a dlbridge tensor: import makes one
      t.reset();
      CHECK(deleted.load() == 0);
      CHECK(view.cview<float>()(1) == 1.0f);
    }
    CHECK(deleted.load() == 1);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("import of a newer minor with known fields is accepted") {
    std::atomic<int> deleted{0};
    {
      Tensor t = Tensor::import(make_foreign_versioned(&deleted, 1, 9));
      CHECK(t.numel() == 6);
    }
    CHECK(deleted.load() == 1);
  }

  TEST_CASE("rejected imports have already called the deleter exactly once") {
    LiveCount live;
    std::atomic<int> deleted{0};
    // The expected text is what the C API reports for the same input.
    auto expected = [&](auto&& mutate) {
      std::atomic<int> c_deleted{0};
      DLManagedTensorVersioned* c_src = make_foreign_versioned(&c_deleted);
      mutate(c_src);
      const CResult c = c_call([&](dlb_error* e) {
        DLManagedTensorVersioned* out = nullptr;
        return dlb_tensor_import(c_src, &out, e);
      });
      CHECK(c_deleted.load() == 1);
      return c;
    };

    auto major2 = [](DLManagedTensorVersioned* m) { m->version.major = 2; };
    const CResult c_major = expected(major2);
    REQUIRE(c_major.status == DLB_ERR_UNSUPPORTED_VERSION);
    DLManagedTensorVersioned* src = make_foreign_versioned(&deleted);
    major2(src);
    CHECK_DLB_ERROR(Tensor::import(src), c_major.status, c_major.message);
    CHECK(c_major.message ==
          "DLPack major version 2 is not supported (dlbridge accepts major version 1)");
    CHECK(deleted.load() == 1);

    auto negative = [](DLManagedTensorVersioned* m) {
      static_cast<ForeignVersioned*>(m->manager_ctx)->shape[1] = -3;
    };
    const CResult c_negative = expected(negative);
    REQUIRE(c_negative.status == DLB_ERR_INVALID_ARGUMENT);
    src = make_foreign_versioned(&deleted);
    negative(src);
    CHECK_DLB_ERROR(Tensor::import(src), DLB_ERR_INVALID_ARGUMENT,
                    "shape[1] is -3; extents must not be negative");
    CHECK(c_negative.message == "shape[1] is -3; extents must not be negative");
    CHECK(deleted.load() == 2);

    auto unknown_flag = [](DLManagedTensorVersioned* m) { m->flags = uint64_t{1} << 10; };
    const CResult c_flag = expected(unknown_flag);
    src = make_foreign_versioned(&deleted);
    unknown_flag(src);
    CHECK_DLB_ERROR(Tensor::import(src), DLB_ERR_UNSUPPORTED,
                    "flags 0x400 contain bits unknown to DLPack 1.3");
    CHECK(c_flag.message == "flags 0x400 contain bits unknown to DLPack 1.3");
    CHECK(deleted.load() == 3);

    auto unknown_device = [](DLManagedTensorVersioned* m) {
      m->dl_tensor.device.device_type = static_cast<DLDeviceType>(240);
    };
    src = make_foreign_versioned(&deleted);
    unknown_device(src);
    CHECK_DLB_ERROR(Tensor::import(src), DLB_ERR_UNSUPPORTED,
                    "device type 240 is not a known DLPack device type");
    CHECK(deleted.load() == 4);

    auto null_data = [](DLManagedTensorVersioned* m) { m->dl_tensor.data = nullptr; };
    src = make_foreign_versioned(&deleted);
    null_data(src);
    CHECK_DLB_ERROR(Tensor::import(src), DLB_ERR_INVALID_ARGUMENT,
                    "data is NULL but the tensor has 6 elements");
    CHECK(deleted.load() == 5);

    // NULL: an error with nothing to free.
    const CResult c_null = c_call([](dlb_error* e) {
      DLManagedTensorVersioned* out = nullptr;
      return dlb_tensor_import(nullptr, &out, e);
    });
    REQUIRE(c_null.status == DLB_ERR_INVALID_ARGUMENT);
    CHECK_DLB_ERROR(Tensor::import(nullptr), c_null.status, c_null.message);
    CHECK_DLB_ERROR(Tensor::import(nullptr), DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
    CHECK_DLB_ERROR(Tensor::import_legacy(static_cast<DLManagedTensor*>(nullptr)),
                    DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
    CHECK(live.delta() == 0);
  }

  TEST_CASE("a rejected tensor without a deleter is fine") {
    ForeignVersioned owner;
    std::atomic<int> unused{0};
    owner.deleted = &unused;
    DLManagedTensorVersioned& m = owner.managed;
    m.version = DLPackVersion{7, 0};
    m.manager_ctx = nullptr;
    m.deleter = nullptr;
    m.flags = 0;
    CHECK_THROWS_AS(Tensor::import(&m), dlbridge::Error);
  }

  TEST_CASE("importing a dlbridge tensor returns it as is") {
    LiveCount live;
    Tensor t = Tensor::empty<float>({2});
    DLManagedTensorVersioned* raw = t.get();
    Tensor back = Tensor::import(t.release());
    CHECK(back.get() == raw);
    CHECK(live.delta() == 1);
  }

  TEST_CASE("import_legacy: flags 0, NULL strides accepted, deleter once") {
    LiveCount live;
    std::atomic<int> deleted{0};
    DLManagedTensor* src = make_foreign_legacy(&deleted);
    {
      Tensor t = Tensor::import_legacy(src);
      CHECK(t.flags() == 0);
      CHECK(t.shape() == Shape{2, 3});
      CHECK(t.strides() == Shape{3, 1});
      CHECK(t.cview<float>()(1, 0) == 3.0f);
      CHECK(t.get()->version.major == 1);
      CHECK(t.get()->version.minor == 3);
      CHECK(t.get()->dl_tensor.strides != nullptr);  // dlbridge tensors always carry strides
      Tensor s = t.share();
      t.reset();
      CHECK(deleted.load() == 0);
    }
    CHECK(deleted.load() == 1);

    // Rejected: the deleter has already run.
    src = make_foreign_legacy(&deleted);
    src->dl_tensor.ndim = -1;
    CHECK_DLB_ERROR(Tensor::import_legacy(src), DLB_ERR_INVALID_ARGUMENT, "ndim -1 is negative");
    CHECK(deleted.load() == 2);

    // Through a LegacyTensor: it is left empty in every case.
    LegacyTensor holder = LegacyTensor::from_raw(make_foreign_legacy(&deleted));
    {
      Tensor t = Tensor::import_legacy(std::move(holder));
      CHECK_FALSE(holder);  // NOLINT(bugprone-use-after-move)
      CHECK(t.numel() == 6);
    }
    CHECK(deleted.load() == 3);
    holder = LegacyTensor::from_raw(make_foreign_legacy(&deleted));
    holder.get()->dl_tensor.dtype.lanes = 0;
    CHECK_DLB_ERROR(Tensor::import_legacy(std::move(holder)), DLB_ERR_INVALID_ARGUMENT,
                    "dtype lanes is 0; it must be at least 1");
    CHECK_FALSE(holder);  // NOLINT(bugprone-use-after-move)
    CHECK(deleted.load() == 4);
    CHECK(live.delta() == 0);
  }
}

TEST_SUITE("cpp.legacy") {
  TEST_CASE("LegacyTensor owns, moves, releases and frees exactly once") {
    std::atomic<int> deleted{0};
    LegacyTensor empty;
    CHECK_FALSE(empty);
    CHECK(empty.get() == nullptr);
    CHECK(empty.release() == nullptr);
    CHECK_FALSE(LegacyTensor::from_raw(nullptr));
    {
      LegacyTensor a = LegacyTensor::from_raw(make_foreign_legacy(&deleted));
      DLManagedTensor* raw = a.get();
      LegacyTensor b(std::move(a));
      CHECK_FALSE(a);  // NOLINT(bugprone-use-after-move)
      CHECK(b.get() == raw);
      LegacyTensor c;
      c = std::move(b);
      CHECK(c.get() == raw);
      LegacyTensor& alias = c;
      c = std::move(alias);
      CHECK(c.get() == raw);
      CHECK(deleted.load() == 0);
      c = LegacyTensor::from_raw(make_foreign_legacy(&deleted));  // frees the first
      CHECK(deleted.load() == 1);
      c.reset(make_foreign_legacy(&deleted));
      CHECK(deleted.load() == 2);
      DLManagedTensor* given = c.release();
      CHECK_FALSE(c);
      given->deleter(given);  // the consumer's single call
      CHECK(deleted.load() == 3);
      c.reset(make_foreign_legacy(&deleted));
      c.reset();
      CHECK(deleted.load() == 4);
      c = LegacyTensor::from_raw(make_foreign_legacy(&deleted));
    }
    CHECK(deleted.load() == 5);
  }
}

TEST_SUITE("cpp.export") {
  TEST_CASE("export_legacy moves the tensor into a LegacyTensor") {
    LiveCount live;
    Tensor t = Tensor::empty<float>({2, 3});
    iota(t);
    void* data = t.data();
    LegacyTensor legacy = std::move(t).export_legacy();
    CHECK_FALSE(t);  // NOLINT(bugprone-use-after-move): emptied on success
    REQUIRE(legacy);
    const DLTensor& dl = legacy.get()->dl_tensor;
    CHECK(dl.data == data);
    CHECK(dl.ndim == 2);
    CHECK(dl.shape[0] == 2);
    CHECK(dl.shape[1] == 3);
    CHECK(dl.dtype.code == kDLFloat);
    CHECK((legacy.get()->deleter != nullptr));
    CHECK(live.delta() == 1);
    legacy.reset();
    CHECK(live.delta() == 0);
  }

  TEST_CASE("legacy round trip: export, hand over, import, read, free") {
    LiveCount live;
    Tensor t = Tensor::empty<int32_t>({3});
    auto v = t.view<int32_t>();
    v(0) = 7;
    v(1) = 8;
    v(2) = 9;
    DLManagedTensor* raw = std::move(t).export_legacy().release();  // to a legacy consumer
    CHECK(live.delta() == 1);
    Tensor back = Tensor::import_legacy(raw);  // the consumer hands it back
    CHECK(back.dtype() == DType::int32());
    CHECK(back.cview<int32_t>()(2) == 9);
    back.reset();
    CHECK(live.delta() == 0);

    // A legacy consumer frees by calling the deleter itself.
    Tensor u = Tensor::empty<float>({1});
    DLManagedTensor* given = std::move(u).export_legacy().release();
    given->deleter(given);
    CHECK(live.delta() == 0);
  }

  TEST_CASE("export_legacy errors leave the tensor with the caller") {
    LiveCount live;
    Tensor ro = Tensor::allocate(Device::cpu(), DType::float32(), {2}, {},
                                 DLPACK_FLAG_BITMASK_READ_ONLY);
    DLManagedTensorVersioned* raw = ro.get();
    const CResult c_ro = c_call([&](dlb_error* e) {
      DLManagedTensor* out = nullptr;
      return dlb_tensor_export_legacy(raw, &out, e);
    });
    REQUIRE(c_ro.status == DLB_ERR_READ_ONLY);
    CHECK_DLB_ERROR(std::move(ro).export_legacy(), c_ro.status, c_ro.message);
    CHECK_DLB_ERROR(std::move(ro).export_legacy(), DLB_ERR_READ_ONLY,
                    "cannot export a read-only tensor as a legacy DLManagedTensor, which has no "
                    "READ_ONLY flag");
    CHECK(ro.get() == raw);  // NOLINT(bugprone-use-after-move): kept on error
    CHECK(ro.read_only());

    Tensor padded = Tensor::allocate(Device::cpu(), DType(kDLUInt, 4), {4}, {},
                                     DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
    const CResult c_padded = c_call([&](dlb_error* e) {
      DLManagedTensor* out = nullptr;
      return dlb_tensor_export_legacy(padded.get(), &out, e);
    });
    REQUIRE(c_padded.status == DLB_ERR_UNSUPPORTED);
    CHECK_DLB_ERROR(std::move(padded).export_legacy(), c_padded.status, c_padded.message);
    CHECK_DLB_ERROR(std::move(padded).export_legacy(), DLB_ERR_UNSUPPORTED,
                    "cannot export padded sub-byte data as a legacy DLManagedTensor, which has no "
                    "IS_SUBBYTE_TYPE_PADDED flag");
    CHECK(padded);  // NOLINT(bugprone-use-after-move)
    CHECK(live.delta() == 2);
    ro.reset();
    padded.reset();
    CHECK(live.delta() == 0);
  }

  TEST_CASE("versioned round trip: release to a consumer, import back, or consumer frees") {
    LiveCount live;
    Tensor t = Tensor::empty<double>({2});
    t.view<double>()(1) = 2.5;
    DLManagedTensorVersioned* raw = t.release();
    CHECK(raw->version.major == 1);
    CHECK((raw->deleter != nullptr));
    Tensor back = Tensor::import(raw);
    CHECK(back.get() == raw);
    CHECK(back.cview<double>()(1) == 2.5);
    DLManagedTensorVersioned* again = back.release();
    again->deleter(again);  // a DLPack consumer's single deleter call
    CHECK(live.delta() == 0);
  }

  TEST_CASE("foreign -> import -> export_legacy -> import_legacy keeps one deleter call") {
    LiveCount live;
    std::atomic<int> deleted{0};
    {
      Tensor t = Tensor::import(make_foreign_versioned(&deleted));
      LegacyTensor legacy = std::move(t).export_legacy();
      Tensor back = Tensor::import_legacy(std::move(legacy));
      CHECK(back.cview<float>()(1, 1) == 4.0f);
      CHECK(deleted.load() == 0);
    }
    CHECK(deleted.load() == 1);
    CHECK(live.delta() == 0);
  }
}
