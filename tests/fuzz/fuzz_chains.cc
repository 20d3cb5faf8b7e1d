// fuzz_chains: ownership chains. A pool of live tensors grows by wraps, foreign producers'
// tensors (versioned and legacy), shares, views, copies, legacy exports imported back, and
// foreign frameworks re-exporting a dlbridge tensor (versioned or legacy, imported back), in the
// order and to the depth the input says, and shrinks by frees in any order. Every release
// callback and foreign deleter must run exactly once (a second call aborts at once), none may
// run while a tensor still depends on it, every live tensor's memory stays readable, and at the
// end the library's live count is back where it started.
//
// Input: a sequence of (op byte, argument byte) pairs; see the switch below.
#include "fuzz_common.h"

#include <vector>

namespace {

constexpr size_t kMaxPool = 24;
constexpr int kMaxObjects = 4096;

// One foreign owner (a wrapped buffer's release, a producer's deleter): called at most once.
struct Owner {
  bool released = false;
};
Owner g_owners[kMaxObjects];
int g_created = 0, g_released = 0;

int new_owner() {
  FUZZ_CHECK(g_created < kMaxObjects);
  g_owners[g_created].released = false;
  return g_created++;
}
void release_owner(int id) {
  FUZZ_CHECK(id >= 0 && id < g_created);
  FUZZ_CHECK(!g_owners[id].released);  // exactly once
  g_owners[id].released = true;
  ++g_released;
}

float g_values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
int64_t g_shape[2] = {2, 4};

void release_cb(void* ctx) { release_owner(static_cast<int>(reinterpret_cast<intptr_t>(ctx))); }

// A foreign producer's tensor over g_values, or a foreign framework's re-export of a dlbridge
// tensor (`inner`, freed by the deleter after the owner is marked).
template <class Managed>
struct Foreign {
  Managed managed;
  int id;
  DLManagedTensorVersioned* inner;
  static void deleter(Managed* self) {
    auto* f = static_cast<Foreign*>(self->manager_ctx);
    release_owner(f->id);
    DLManagedTensorVersioned* inner = f->inner;
    delete f;
    dlb_tensor_free(inner);
  }
};

template <class Managed>
Managed* make_foreign(const DLTensor* over, DLManagedTensorVersioned* inner) {
  auto* f = new Foreign<Managed>{};
  f->id = new_owner();
  f->inner = inner;
  f->managed.manager_ctx = f;
  f->managed.deleter = &Foreign<Managed>::deleter;
  if (over != nullptr) {
    f->managed.dl_tensor = *over;
  } else {
    DLTensor& t = f->managed.dl_tensor;
    t.data = g_values;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = 2;
    t.dtype = DLDataType{kDLFloat, 32, 1};
    t.shape = g_shape;
    t.strides = nullptr;
    t.byte_offset = 0;
  }
  return &f->managed;
}

void set_version(DLManagedTensorVersioned* m) { m->version = DLPackVersion{1, 3}; }

// Reads every live tensor's first element: a use after free shows under ASan.
void touch(const DLManagedTensorVersioned* t) {
  FUZZ_CHECK(t->dl_tensor.shape != nullptr && t->dl_tensor.strides != nullptr);
  int64_t count = 0;
  FUZZ_CHECK(dlb_tensor_element_count(&t->dl_tensor, &count, nullptr) == DLB_OK);
  if (count == 0) return;
  float v;
  std::memcpy(&v, static_cast<const char*>(t->dl_tensor.data) + t->dl_tensor.byte_offset, sizeof v);
  FUZZ_CHECK(v >= 1 && v <= 8);
  FUZZ_CHECK(t->dl_tensor.byte_offset == 0);  // CPU: offsets are folded into data
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Reader in(data, size);
  const int64_t live_before = dlb_tensor_live_count();
  g_created = 0;
  g_released = 0;
  std::vector<DLManagedTensorVersioned*> pool;
  dlb_error err;

  // `t` by reference: it is read after the call that fills it, whatever the argument order.
  auto add = [&](int status, DLManagedTensorVersioned* const& t) {
    FUZZ_CHECK_MSG(status == DLB_OK, status, err);
    FUZZ_CHECK(t != nullptr && dlb_tensor_is_dlbridge(t));
    pool.push_back(t);
  };
  auto take = [&](uint8_t arg) {
    const size_t i = arg % pool.size();
    DLManagedTensorVersioned* t = pool[i];
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(i));
    return t;
  };

  while (in.remaining() > 0) {
    const uint8_t op = in.u8();
    const uint8_t arg = in.u8();
    if (pool.empty() || (op % 12 < 3 && pool.size() < kMaxPool)) {
      // A new root: wrapped memory, or a foreign producer's versioned or legacy tensor.
      DLManagedTensorVersioned* t = nullptr;
      switch (op % 3) {
        case 0: {
          DLTensor desc{g_values, {kDLCPU, 0}, 2, {kDLFloat, 32, 1}, g_shape, nullptr, 0};
          const int id = new_owner();
          add(dlb_tensor_wrap(&desc, 0, release_cb, reinterpret_cast<void*>(intptr_t{id}), &t, &err), t);
          break;
        }
        case 1: {
          DLManagedTensorVersioned* f = make_foreign<DLManagedTensorVersioned>(nullptr, nullptr);
          set_version(f);
          add(dlb_tensor_import(f, &t, &err), t);
          break;
        }
        default:
          add(dlb_tensor_import_legacy(make_foreign<DLManagedTensor>(nullptr, nullptr), &t, &err), t);
      }
      continue;
    }
    DLManagedTensorVersioned* src = pool[arg % pool.size()];
    DLManagedTensorVersioned* t = nullptr;
    switch (op % 12) {
      case 3:
        if (pool.size() < kMaxPool) add(dlb_tensor_share(src, arg & 1, &t, &err), t);
        break;
      case 4: {
        if (pool.size() >= kMaxPool) break;
        const dlb_slice s{arg % 2, DLB_SLICE_NONE, (arg & 4) != 0 ? -1 : 1};
        const int st = dlb_tensor_slice(src, 1, &s, &t, &err);
        if (src->dl_tensor.ndim >= 1) add(st, t);
        else FUZZ_CHECK(st == DLB_ERR_INVALID_ARGUMENT);
        break;
      }
      case 5:
        if (pool.size() < kMaxPool) add(dlb_tensor_transpose(src, &t, &err), t);
        break;
      case 6:
        if (pool.size() < kMaxPool && src->dl_tensor.ndim > 0 && src->dl_tensor.shape[0] > 0) {
          add(dlb_tensor_select(src, 0, 0, &t, &err), t);
        }
        break;
      case 7: {
        // Legacy export then import back, repeated to the depth the input says.
        DLManagedTensorVersioned* cur = take(arg);
        const int depth = 1 + in.u8() % 64;
        for (int d = 0; d < depth; ++d) {
          DLManagedTensor* legacy = nullptr;
          const int st = dlb_tensor_export_legacy(cur, &legacy, &err);
          if (st != DLB_OK) {  // READ_ONLY shares cannot go legacy: the caller keeps src
            FUZZ_CHECK_MSG(st == DLB_ERR_READ_ONLY && dlb_tensor_is_read_only(cur), st, err);
            break;
          }
          FUZZ_CHECK(legacy->dl_tensor.byte_offset == 0);
          FUZZ_CHECK(dlb_tensor_import_legacy(legacy, &cur, &err) == DLB_OK);
        }
        pool.push_back(cur);
        break;
      }
      case 8: {
        // A foreign framework re-exports a dlbridge tensor; it is imported back.
        DLManagedTensorVersioned* inner = take(arg);
        if ((arg & 0x80) != 0) {
          DLManagedTensor* f = make_foreign<DLManagedTensor>(&inner->dl_tensor, inner);
          add(dlb_tensor_import_legacy(f, &t, &err), t);
        } else {
          DLManagedTensorVersioned* f =
              make_foreign<DLManagedTensorVersioned>(&inner->dl_tensor, inner);
          set_version(f);
          f->flags = inner->flags;
          add(dlb_tensor_import(f, &t, &err), t);
        }
        break;
      }
      case 9:
        if (pool.size() < kMaxPool) {
          add(dlb_tensor_copy(src, DLDevice{kDLCPU, 0}, &t, &err), t);
          FUZZ_CHECK((t->flags & DLPACK_FLAG_BITMASK_IS_COPIED) != 0);
        }
        break;
      case 10: {
        // Import of a dlbridge tensor is the tensor itself.
        DLManagedTensorVersioned* own = take(arg);
        FUZZ_CHECK(dlb_tensor_import(own, &t, &err) == DLB_OK && t == own);
        pool.push_back(t);
        break;
      }
      default:
        dlb_tensor_free(take(arg));
    }
    for (DLManagedTensorVersioned* live : pool) touch(live);
  }
  // Free what is left in the order the input's tail gives.
  while (!pool.empty()) dlb_tensor_free(take(in.u8()));
  FUZZ_CHECK(g_released == g_created);
  FUZZ_CHECK(dlb_tensor_live_count() == live_before);
  return 0;
}
