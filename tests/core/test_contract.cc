// Suite 'core': contract fixes found by independent testing (issue 11): scalars' shape and
// strides, validation on legacy export, one rule for which shapes exist, contiguity queries on
// malformed tensors, IS_COPIED on aliases, backend failures without a message, deep ownership
// chains (through legacy exports and imports, and through release callbacks and shares), and
// offsets folded into `data` for address-based devices.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <pthread.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "support.hpp"

using test::Counter;
using test::cpu;
using test::f32;

namespace {

// A report reset before every call, so a stale message cannot pass for a new one.
struct Report {
  dlb_error e;
  dlb_error* fresh() {
    std::snprintf(e.message, sizeof(e.message), "<untouched>");
    return &e;
  }
  std::string text() const { return e.message; }
};

constexpr uint64_t kCopied = DLPACK_FLAG_BITMASK_IS_COPIED;
constexpr uint64_t kReadOnly = DLPACK_FLAG_BITMASK_READ_ONLY;

// A borrowed CPU DLTensor over caller arrays.
DLTensor describe(void* data, std::vector<int64_t>& shape, int64_t* strides = nullptr,
                  uint64_t byte_offset = 0) {
  DLTensor t{};
  t.data = data;
  t.device = cpu();
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = f32();
  t.shape = shape.empty() ? nullptr : shape.data();
  t.strides = strides;
  t.byte_offset = byte_offset;
  return t;
}

// The storage rule for 0-d tensors: shape and strides point at one slot each, holding 1.
void check_scalar_dims(const DLManagedTensorVersioned* t) {
  REQUIRE(t != nullptr);
  CHECK(t->dl_tensor.ndim == 0);
  REQUIRE(t->dl_tensor.shape != nullptr);
  REQUIRE(t->dl_tensor.strides != nullptr);
  CHECK(t->dl_tensor.shape[0] == 1);
  CHECK(t->dl_tensor.strides[0] == 1);
}

}  // namespace

TEST_CASE("0-d tensors: shape and strides point at a valid slot holding 1, however made") {
  const int64_t live = dlb_tensor_live_count();
  Report err;
  float value = 3.0f;
  std::vector<int64_t> none;
  DLTensor scalar = describe(&value, none);

  DLManagedTensorVersioned* wrapped = nullptr;
  REQUIRE(dlb_tensor_wrap(&scalar, 0, nullptr, nullptr, &wrapped, err.fresh()) == DLB_OK);
  check_scalar_dims(wrapped);

  DLManagedTensorVersioned* allocated = nullptr;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), 0, nullptr, nullptr, 0, &allocated, err.fresh()) ==
          DLB_OK);
  check_scalar_dims(allocated);

  Counter counter;
  test::ForeignVersioned* foreign = test::make_foreign(counter, f32(), {});
  DLManagedTensorVersioned* imported = nullptr;
  REQUIRE(dlb_tensor_import(&foreign->managed, &imported, err.fresh()) == DLB_OK);
  check_scalar_dims(imported);

  test::ForeignLegacy* legacy = test::make_foreign_legacy(counter, f32(), {});
  DLManagedTensorVersioned* imported_legacy = nullptr;
  REQUIRE(dlb_tensor_import_legacy(&legacy->managed, &imported_legacy, err.fresh()) == DLB_OK);
  check_scalar_dims(imported_legacy);

  const int64_t three = 3;
  DLManagedTensorVersioned* vector = nullptr;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), 1, &three, nullptr, 0, &vector, err.fresh()) == DLB_OK);
  DLManagedTensorVersioned* selected = nullptr;
  REQUIRE(dlb_tensor_select(vector, 0, 1, &selected, err.fresh()) == DLB_OK);
  check_scalar_dims(selected);

  const int64_t one = 1;
  DLManagedTensorVersioned* single = nullptr;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), 1, &one, nullptr, 0, &single, err.fresh()) == DLB_OK);
  DLManagedTensorVersioned* reshaped = nullptr;
  REQUIRE(dlb_tensor_reshape(single, 0, nullptr, &reshaped, err.fresh()) == DLB_OK);
  check_scalar_dims(reshaped);

  DLManagedTensorVersioned* copied = nullptr;
  REQUIRE(dlb_tensor_copy(wrapped, cpu(), &copied, err.fresh()) == DLB_OK);
  check_scalar_dims(copied);
  CHECK(*static_cast<float*>(copied->dl_tensor.data) == 3.0f);

  DLManagedTensorVersioned* shared = nullptr;
  REQUIRE(dlb_tensor_share(wrapped, 0, &shared, err.fresh()) == DLB_OK);
  check_scalar_dims(shared);

  for (DLManagedTensorVersioned* t : {wrapped, allocated, imported, imported_legacy, vector,
                                      selected, single, reshaped, copied, shared}) {
    dlb_tensor_free(t);
  }
  CHECK(counter.get() == 2);
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("export_legacy validates a foreign tensor and refuses flag bits it cannot carry") {
  Report err;
  Counter counter;
  {
    test::ForeignVersioned* f = test::make_foreign(counter, f32(), {2, 3});
    f->managed.dl_tensor.ndim = -4;
    DLManagedTensor* out = nullptr;
    CHECK(dlb_tensor_export_legacy(&f->managed, &out, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "ndim -4 is negative");
    CHECK(out == nullptr);
    CHECK(counter.get() == 0);  // on error the caller still owns src
    f->managed.deleter(&f->managed);
  }
  {
    // A bit from a newer minor version is refused, not dropped.
    test::ForeignVersioned* f = test::make_foreign(counter, f32(), {2});
    f->managed.version.minor = 4;
    f->managed.flags = uint64_t{1} << 8;
    DLManagedTensor* out = nullptr;
    CHECK(dlb_tensor_export_legacy(&f->managed, &out, err.fresh()) == DLB_ERR_UNSUPPORTED);
    CHECK(err.text() == "flags 0x100 contain bits unknown to DLPack 1.3");
    CHECK(out == nullptr);
    f->managed.deleter(&f->managed);
  }
  {
    // A foreign shape with a negative extent.
    test::ForeignVersioned* f = test::make_foreign(counter, f32(), {2, 3});
    f->shape[1] = -3;
    DLManagedTensor* out = nullptr;
    CHECK(dlb_tensor_export_legacy(&f->managed, &out, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() == "shape[1] is -3; extents must not be negative");
    f->managed.deleter(&f->managed);
  }
  {
    // IS_COPIED is informational: dropped on export.
    test::ForeignVersioned* f = test::make_foreign(counter, f32(), {2});
    f->managed.flags = kCopied;
    DLManagedTensor* out = nullptr;
    REQUIRE(dlb_tensor_export_legacy(&f->managed, &out, err.fresh()) == DLB_OK);
    CHECK(err.text() == "<untouched>");
    out->deleter(out);
  }
  CHECK(counter.get() == 4);
}

TEST_CASE("validation, reshape and allocate agree: an empty shape exists whatever its other extents") {
  Report err;
  const int64_t live = dlb_tensor_live_count();
  std::vector<int64_t> shape{INT64_MAX, 2, 0};
  DLTensor desc = describe(nullptr, shape);
  CHECK(dlb_tensor_validate(&desc, 0, err.fresh()) == DLB_OK);
  int64_t count = -1;
  CHECK(dlb_tensor_element_count(&desc, &count, err.fresh()) == DLB_OK);
  CHECK(count == 0);

  DLManagedTensorVersioned* allocated = nullptr;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), 3, shape.data(), nullptr, 0, &allocated,
                              err.fresh()) == DLB_OK);

  const int64_t zero = 0;
  DLManagedTensorVersioned* empty = nullptr;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), 1, &zero, nullptr, 0, &empty, err.fresh()) == DLB_OK);
  DLManagedTensorVersioned* reshaped = nullptr;
  CHECK(dlb_tensor_reshape(empty, 3, shape.data(), &reshaped, err.fresh()) == DLB_OK);
  REQUIRE(reshaped != nullptr);
  CHECK(std::vector<int64_t>(reshaped->dl_tensor.shape, reshaped->dl_tensor.shape + 3) == shape);
  CHECK(dlb_tensor_validate(&reshaped->dl_tensor, reshaped->flags, err.fresh()) == DLB_OK);

  // Reshaping the huge empty shape back, and inferring a 0 extent beside a huge product.
  DLManagedTensorVersioned* back = nullptr;
  CHECK(dlb_tensor_reshape(allocated, 1, &zero, &back, err.fresh()) == DLB_OK);
  const int64_t infer[] = {INT64_MAX, 2, -1};
  DLManagedTensorVersioned* inferred = nullptr;
  CHECK(dlb_tensor_reshape(empty, 3, infer, &inferred, err.fresh()) == DLB_OK);
  REQUIRE(inferred != nullptr);
  CHECK(inferred->dl_tensor.shape[2] == 0);

  // A non-empty shape whose product overflows still does not exist.
  const int64_t huge[] = {INT64_MAX, 2};
  DLManagedTensorVersioned* refused = nullptr;
  CHECK(dlb_tensor_reshape(empty, 2, huge, &refused, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
  CHECK(err.text() == "cannot reshape 0 elements into shape (9223372036854775807, 2)");

  for (DLManagedTensorVersioned* t : {allocated, empty, reshaped, back, inferred}) dlb_tensor_free(t);
  CHECK(dlb_tensor_live_count() == live);
}

TEST_CASE("contiguity queries return 0 for malformed tensors") {
  float data[4] = {};
  std::vector<int64_t> zero_then_negative{0, -1};
  DLTensor t = describe(data, zero_then_negative);
  CHECK(dlb_tensor_is_c_contiguous(&t) == 0);
  CHECK(dlb_tensor_is_f_contiguous(&t) == 0);

  std::vector<int64_t> ones(100, 1);
  DLTensor wide = describe(data, ones);
  CHECK(dlb_tensor_is_c_contiguous(&wide) == 0);
  CHECK(dlb_tensor_is_f_contiguous(&wide) == 0);

  std::vector<int64_t> two{2};
  DLTensor negative = describe(data, two);
  negative.ndim = -1;
  CHECK(dlb_tensor_is_c_contiguous(&negative) == 0);
  CHECK(dlb_tensor_is_f_contiguous(&negative) == 0);

  // An element count that overflows is malformed too.
  std::vector<int64_t> overflow{INT64_MAX, 3};
  DLTensor big = describe(data, overflow);
  CHECK(dlb_tensor_is_c_contiguous(&big) == 0);
  CHECK(dlb_tensor_is_f_contiguous(&big) == 0);

  // Well-formed tensors are unchanged: an extent 0 counts as contiguous.
  std::vector<int64_t> empty{0, 5};
  DLTensor ok = describe(data, empty);
  CHECK(dlb_tensor_is_c_contiguous(&ok) == 1);
  CHECK(dlb_tensor_is_f_contiguous(&ok) == 1);
}

TEST_CASE("shares and views of a copied tensor drop IS_COPIED") {
  Report err;
  const int64_t shape[] = {2, 3};
  DLManagedTensorVersioned* src = nullptr;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), 2, shape, nullptr, 0, &src, err.fresh()) == DLB_OK);
  DLManagedTensorVersioned* copy = nullptr;
  REQUIRE(dlb_tensor_copy(src, cpu(), &copy, err.fresh()) == DLB_OK);
  CHECK(copy->flags == kCopied);

  DLManagedTensorVersioned* shared = nullptr;
  REQUIRE(dlb_tensor_share(copy, kReadOnly, &shared, err.fresh()) == DLB_OK);
  CHECK(shared->flags == kReadOnly);
  DLManagedTensorVersioned* transposed = nullptr;
  REQUIRE(dlb_tensor_transpose(copy, &transposed, err.fresh()) == DLB_OK);
  CHECK(transposed->flags == 0);
  DLManagedTensorVersioned* row = nullptr;
  REQUIRE(dlb_tensor_select(copy, 0, 1, &row, err.fresh()) == DLB_OK);
  CHECK(row->flags == 0);
  CHECK(copy->flags == kCopied);  // the original keeps it

  for (DLManagedTensorVersioned* t : {src, copy, shared, transposed, row}) dlb_tensor_free(t);
}

namespace {

// A plug-in backend for a device type whose data is a handle (malloc'd host memory here).
// Each callback fails as configured, with or without a message.
struct Fake {
  int fail_allocate = DLB_OK, fail_copy_bytes = DLB_OK, fail_copy_tensor = DLB_OK;
  int fail_synchronize = DLB_OK, fail_check = DLB_OK;
  const char* message = nullptr;  // NULL: fail without filling the report

  static int give(const Fake* f, int status, dlb_error* error) {
    if (status != DLB_OK && f->message != nullptr && error != nullptr) {
      std::snprintf(error->message, sizeof(error->message), "%s", f->message);
    }
    return status;
  }
  static int allocate(void* ctx, DLDevice, uint64_t nbytes, void** out, dlb_error* error) {
    auto* f = static_cast<Fake*>(ctx);
    if (f->fail_allocate != DLB_OK) return give(f, f->fail_allocate, error);
    *out = std::malloc(nbytes + 1);
    return DLB_OK;
  }
  static void release(void*, DLDevice, void* data) { std::free(data); }
  static int copy_bytes(void* ctx, DLDevice, void*, uint64_t, DLDevice, const void*, uint64_t,
                        uint64_t, void*, dlb_error* error) {
    auto* f = static_cast<Fake*>(ctx);
    return give(f, f->fail_copy_bytes, error);
  }
  static int copy_tensor(void* ctx, const DLTensor*, uint64_t, const DLTensor*, uint64_t, void*,
                         dlb_error* error) {
    auto* f = static_cast<Fake*>(ctx);
    return give(f, f->fail_copy_tensor, error);
  }
  static int synchronize(void* ctx, DLDevice, void*, dlb_error* error) {
    auto* f = static_cast<Fake*>(ctx);
    return give(f, f->fail_synchronize, error);
  }
  static int check(void* ctx, const DLTensor*, uint64_t, dlb_error* error) {
    auto* f = static_cast<Fake*>(ctx);
    return give(f, f->fail_check, error);
  }
};

constexpr int32_t kFakeType = kDLVulkan;

void register_fake(Fake* fake, bool with_copy_tensor) {
  dlb_backend b{};
  b.struct_size = sizeof(b);
  b.device_type = kFakeType;
  b.name = "fake";
  b.ctx = fake;
  b.allocate = &Fake::allocate;
  b.free = &Fake::release;
  b.copy_bytes = &Fake::copy_bytes;
  b.copy_tensor = with_copy_tensor ? &Fake::copy_tensor : nullptr;
  b.synchronize = &Fake::synchronize;
  b.check_memory = &Fake::check;
  REQUIRE(dlb_backend_register(&b, nullptr) == DLB_OK);
}

}  // namespace

TEST_CASE("a backend that fails without a message: the core names the backend and the operation") {
  Report err;
  const DLDevice dev{static_cast<DLDeviceType>(kFakeType), 0};
  const int64_t shape[] = {4};
  DLManagedTensorVersioned* host = nullptr;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), 1, shape, nullptr, 0, &host, err.fresh()) == DLB_OK);

  Fake fake;
  register_fake(&fake, false);
  SUBCASE("allocate") {
    fake.fail_allocate = DLB_ERR_OUT_OF_MEMORY;
    DLManagedTensorVersioned* out = nullptr;
    CHECK(dlb_tensor_allocate(dev, f32(), 1, shape, nullptr, 0, &out, err.fresh()) ==
          DLB_ERR_OUT_OF_MEMORY);
    CHECK(err.text() == "backend 'fake' failed in allocate with DLB_ERR_OUT_OF_MEMORY and gave no message");
  }
  SUBCASE("copy_bytes") {
    fake.fail_copy_bytes = DLB_ERR_DEVICE;
    DLManagedTensorVersioned* out = nullptr;
    CHECK(dlb_tensor_copy(host, dev, &out, err.fresh()) == DLB_ERR_DEVICE);
    CHECK(err.text() == "backend 'fake' failed in copy_bytes with DLB_ERR_DEVICE and gave no message");
    CHECK(out == nullptr);
  }
  SUBCASE("synchronize") {
    fake.fail_synchronize = DLB_ERR_DEVICE;
    CHECK(dlb_device_synchronize(dev, nullptr, err.fresh()) == DLB_ERR_DEVICE);
    CHECK(err.text() == "backend 'fake' failed in synchronize with DLB_ERR_DEVICE and gave no message");
  }
  SUBCASE("check_memory") {
    fake.fail_check = DLB_ERR_INVALID_ARGUMENT;
    float value = 0;
    std::vector<int64_t> one{1};
    DLTensor t = describe(&value, one);
    t.device = dev;
    DLManagedTensorVersioned* out = nullptr;
    CHECK(dlb_tensor_wrap(&t, 0, nullptr, nullptr, &out, err.fresh()) == DLB_ERR_INVALID_ARGUMENT);
    CHECK(err.text() ==
          "backend 'fake' failed in check_memory with DLB_ERR_INVALID_ARGUMENT and gave no message");
  }
  SUBCASE("a backend's own message is passed on unchanged") {
    fake.fail_copy_bytes = DLB_ERR_DEVICE;
    fake.message = "fake: bus error";
    DLManagedTensorVersioned* out = nullptr;
    CHECK(dlb_tensor_copy(host, dev, &out, err.fresh()) == DLB_ERR_DEVICE);
    CHECK(err.text() == "fake: bus error");
  }
  CHECK(dlb_backend_unregister(kFakeType, nullptr) == DLB_OK);

  Fake direct;
  register_fake(&direct, true);
  direct.fail_copy_tensor = DLB_ERR_DEVICE;
  DLManagedTensorVersioned* out = nullptr;
  CHECK(dlb_tensor_copy(host, dev, &out, err.fresh()) == DLB_ERR_DEVICE);
  CHECK(err.text() == "backend 'fake' failed in copy_tensor with DLB_ERR_DEVICE and gave no message");
  CHECK(dlb_backend_unregister(kFakeType, nullptr) == DLB_OK);
  dlb_tensor_free(host);
}

namespace {

// A foreign framework that re-exports a dlbridge tensor as a legacy tensor of its own: its
// deleter records its level, then frees the dlbridge tensor it holds.
struct Rewrap {
  DLManagedTensor managed;
  DLManagedTensorVersioned* inner;
  int64_t level;
  std::vector<int64_t>* order;
  static void deleter(DLManagedTensor* self) {
    auto* r = static_cast<Rewrap*>(self->manager_ctx);
    r->order->push_back(r->level);
    DLManagedTensorVersioned* inner = r->inner;
    delete r;
    dlb_tensor_free(inner);
  }
};

constexpr int64_t kLevels = 300000;

struct Chain {
  DLManagedTensorVersioned* top = nullptr;
  std::vector<int64_t> order;
  Counter released;
};

// Builds kLevels levels alternating dlbridge's own legacy export and a foreign re-export, each
// imported back with dlb_tensor_import_legacy.
void build_chain(Chain* chain, float* data) {
  std::vector<int64_t> shape{2};
  DLTensor desc = describe(data, shape);
  Report err;
  REQUIRE(dlb_tensor_wrap(&desc, 0, &test::count_release, &chain->released, &chain->top,
                          err.fresh()) == DLB_OK);
  chain->order.reserve(kLevels);
  for (int64_t level = 0; level < kLevels; ++level) {
    DLManagedTensor* legacy = nullptr;
    if (level % 2 == 0) {
      REQUIRE(dlb_tensor_export_legacy(chain->top, &legacy, err.fresh()) == DLB_OK);
    } else {
      auto* r = new Rewrap{{}, chain->top, level, &chain->order};
      r->managed.dl_tensor = chain->top->dl_tensor;
      r->managed.manager_ctx = r;
      r->managed.deleter = &Rewrap::deleter;
      legacy = &r->managed;
    }
    REQUIRE(dlb_tensor_import_legacy(legacy, &chain->top, err.fresh()) == DLB_OK);
  }
}

void* free_top(void* arg) {
  dlb_tensor_free(static_cast<Chain*>(arg)->top);
  return nullptr;
}

}  // namespace

TEST_CASE("deep ownership chains are released iteratively, each deleter once and in order") {
  const int64_t live = dlb_tensor_live_count();
  float data[2] = {1, 2};
  Chain chain;
  build_chain(&chain, data);
  CHECK(dlb_tensor_live_count() == live + kLevels + 1);

  // A thread with a 256 KiB stack: recursion over 300000 levels would overflow it many times.
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, &attr, &free_top, &chain) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);

  CHECK(chain.released.get() == 1);
  CHECK(dlb_tensor_live_count() == live);
  REQUIRE(chain.order.size() == static_cast<size_t>(kLevels / 2));
  bool descending = true;
  for (size_t i = 0; i < chain.order.size(); ++i) {
    descending = descending && chain.order[i] == kLevels - 1 - 2 * static_cast<int64_t>(i);
  }
  CHECK(descending);
}

namespace {

// Wrapped memory whose release callback frees a share of the next level's tensor: each share
// holds the last reference to its root, so freeing it releases that root and calls the next
// callback, which frees the next share, and so on.
struct ShareLevel {
  DLManagedTensorVersioned* next_share = nullptr;
  int64_t level = 0;
  std::vector<int64_t>* order = nullptr;
};

void free_next_share(void* ctx) {
  auto* l = static_cast<ShareLevel*>(ctx);
  l->order->push_back(l->level);
  dlb_tensor_free(l->next_share);
}

struct ShareChain {
  std::vector<ShareLevel> levels;
  std::vector<int64_t> order;
  DLManagedTensorVersioned* top = nullptr;
};

void* free_share_chain_top(void* arg) {
  dlb_tensor_free(static_cast<ShareChain*>(arg)->top);
  return nullptr;
}

}  // namespace

TEST_CASE("deep chains through release callbacks and shares are released iteratively, in order") {
  const int64_t live = dlb_tensor_live_count();
  float data[2] = {1, 2};
  std::vector<int64_t> shape{2};
  DLTensor desc = describe(data, shape);
  Report err;
  ShareChain chain;
  chain.levels.resize(static_cast<size_t>(kLevels));
  chain.order.reserve(static_cast<size_t>(kLevels));
  // Built from the last level up: level k's callback frees the share of level k + 1.
  DLManagedTensorVersioned* next_share = nullptr;
  for (int64_t level = kLevels - 1; level >= 0; --level) {
    ShareLevel& l = chain.levels[static_cast<size_t>(level)];
    l = ShareLevel{next_share, level, &chain.order};
    DLManagedTensorVersioned* wrapped = nullptr;
    REQUIRE(dlb_tensor_wrap(&desc, 0, &free_next_share, &l, &wrapped, err.fresh()) == DLB_OK);
    REQUIRE(dlb_tensor_share(wrapped, 0, &next_share, err.fresh()) == DLB_OK);
    dlb_tensor_free(wrapped);  // the share now holds the last reference
  }
  chain.top = next_share;
  CHECK(dlb_tensor_live_count() == live + kLevels);
  CHECK(chain.order.empty());

  // A thread with a 256 KiB stack: recursion over 300000 levels would overflow it many times.
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, &attr, &free_share_chain_top, &chain) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);

  CHECK(dlb_tensor_live_count() == live);
  REQUIRE(chain.order.size() == static_cast<size_t>(kLevels));
  bool ascending = true;
  for (size_t i = 0; i < chain.order.size(); ++i) {
    ascending = ascending && chain.order[i] == static_cast<int64_t>(i);
  }
  CHECK(ascending);

  // The queue is empty again: a tensor released on this thread runs its callback at once.
  Counter released;
  DLManagedTensorVersioned* t = nullptr;
  REQUIRE(dlb_tensor_wrap(&desc, 0, &test::count_release, &released, &t, err.fresh()) == DLB_OK);
  dlb_tensor_free(t);
  CHECK(released.get() == 1);
}

TEST_CASE("tensors handed out for address-based devices fold the offset into data") {
  Report err;
  const int64_t shape[] = {4, 4};
  DLManagedTensorVersioned* base = nullptr;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), 2, shape, nullptr, 0, &base, err.fresh()) == DLB_OK);
  char* const origin = static_cast<char*>(base->dl_tensor.data);

  const dlb_slice inner[] = {{1, DLB_SLICE_NONE, 1}, {1, DLB_SLICE_NONE, 1}};
  DLManagedTensorVersioned* view = nullptr;
  REQUIRE(dlb_tensor_slice(base, 2, inner, &view, err.fresh()) == DLB_OK);
  CHECK(view->dl_tensor.data == origin + (4 + 1) * 4);
  CHECK(view->dl_tensor.byte_offset == 0);
  DLManagedTensorVersioned* row = nullptr;
  REQUIRE(dlb_tensor_select(view, 0, 2, &row, err.fresh()) == DLB_OK);
  CHECK(row->dl_tensor.data == origin + (3 * 4 + 1) * 4);
  CHECK(row->dl_tensor.byte_offset == 0);

  // Negative strides in an allocation: data points at the first element.
  const int64_t reversed[] = {-1};
  const int64_t four = 4;
  DLManagedTensorVersioned* backwards = nullptr;
  REQUIRE(dlb_tensor_allocate(cpu(), f32(), 1, &four, reversed, 0, &backwards, err.fresh()) ==
          DLB_OK);
  CHECK(backwards->dl_tensor.byte_offset == 0);

  // A wrap or import honours its producer's byte_offset by folding it into data too.
  float values[6] = {0, 1, 2, 3, 4, 5};
  std::vector<int64_t> two{2};
  DLTensor desc = describe(values, two, nullptr, 8);
  DLManagedTensorVersioned* wrapped = nullptr;
  REQUIRE(dlb_tensor_wrap(&desc, 0, nullptr, nullptr, &wrapped, err.fresh()) == DLB_OK);
  CHECK(wrapped->dl_tensor.data == values + 2);
  CHECK(wrapped->dl_tensor.byte_offset == 0);
  Counter counter;
  test::ForeignVersioned* f = test::make_foreign(counter, f32(), {2});
  f->storage.resize(64);
  f->managed.dl_tensor.data = f->storage.data();
  f->managed.dl_tensor.byte_offset = 12;
  DLManagedTensorVersioned* imported = nullptr;
  REQUIRE(dlb_tensor_import(&f->managed, &imported, err.fresh()) == DLB_OK);
  CHECK(imported->dl_tensor.data == f->storage.data() + 12);
  CHECK(imported->dl_tensor.byte_offset == 0);
  dlb_tensor_free(imported);
  CHECK(counter.get() == 1);
  DLManagedTensorVersioned* shared = nullptr;
  REQUIRE(dlb_tensor_share(wrapped, 0, &shared, err.fresh()) == DLB_OK);
  CHECK(shared->dl_tensor.data == values + 2);
  CHECK(shared->dl_tensor.byte_offset == 0);
  DLManagedTensor* legacy = nullptr;
  REQUIRE(dlb_tensor_export_legacy(shared, &legacy, err.fresh()) == DLB_OK);
  CHECK(legacy->dl_tensor.data == values + 2);
  CHECK(legacy->dl_tensor.byte_offset == 0);
  DLManagedTensor* legacy2 = nullptr;
  REQUIRE(dlb_tensor_export_legacy(wrapped, &legacy2, err.fresh()) == DLB_OK);
  CHECK(legacy2->dl_tensor.data == values + 2);
  CHECK(legacy2->dl_tensor.byte_offset == 0);

  // Opaque handles keep the offset in byte_offset.
  std::vector<int64_t> eight{8};
  DLTensor handle = describe(reinterpret_cast<void*>(0x5000), eight, nullptr, 16);
  handle.device = DLDevice{kDLOpenCL, 0};
  DLManagedTensorVersioned* cl = nullptr;
  REQUIRE(dlb_tensor_wrap(&handle, 0, nullptr, nullptr, &cl, err.fresh()) == DLB_OK);
  const dlb_slice tail[] = {{2, DLB_SLICE_NONE, 1}};
  DLManagedTensorVersioned* cl_view = nullptr;
  REQUIRE(dlb_tensor_slice(cl, 1, tail, &cl_view, err.fresh()) == DLB_OK);
  CHECK(cl_view->dl_tensor.data == reinterpret_cast<void*>(0x5000));
  CHECK(cl_view->dl_tensor.byte_offset == 16 + 2 * 4);

  legacy->deleter(legacy);
  legacy2->deleter(legacy2);
  for (DLManagedTensorVersioned* t : {base, view, row, backwards, cl, cl_view}) dlb_tensor_free(t);
}

TEST_CASE("storage size of packed data whose bit count passes 2^64 but whose bytes fit") {
  // Found by fuzz_validate_diff: 8448150372568006655 uint2x3 elements take 6.3e18 bytes.
  Report err;
  uint64_t bytes = 0;
  CHECK(dlb_dtype_storage_size(DLDataType{kDLUInt, 2, 3}, 8448150372568006655, 0, &bytes,
                               err.fresh()) == DLB_OK);
  CHECK(bytes == 6336112779426004992u);  // ceil(8448150372568006655 * 6 / 8)
  CHECK(dlb_dtype_storage_size(DLDataType{kDLUInt, 2, 3}, INT64_MAX, 0, &bytes, err.fresh()) ==
        DLB_OK);
  CHECK(dlb_dtype_storage_size(DLDataType{kDLUInt, 4, 4}, INT64_MAX, 0, &bytes, err.fresh()) ==
        DLB_ERR_OVERFLOW);
  CHECK(err.text() == "storage for 9223372036854775807 elements of uint4x4 overflows 63 bits");
}
