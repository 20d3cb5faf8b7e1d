// Handing dlbridge tensors to other conventions: the legacy DLManagedTensor struct
// (dlb_tensor_export_legacy, whose deleter frees the versioned source) and the allocator of the
// DLPack exchange API. Both stand on the public calls and validation; the tensor's block is
// tensor.cc's.
#include <cstdlib>

#include "internal.hpp"

namespace {

// The legacy struct handed out by dlb_tensor_export_legacy: its deleter frees the source.
struct LegacyExport {
  DLManagedTensor legacy;
  DLManagedTensorVersioned* source;
};

void legacy_export_deleter(DLManagedTensor* self) {
  auto* exported = static_cast<LegacyExport*>(self->manager_ctx);
  DLManagedTensorVersioned* source = exported->source;
  std::free(exported);
  if (source->deleter != nullptr) source->deleter(source);
}

}  // namespace

extern "C" {

DLB_API dlb_status dlb_tensor_export_legacy(DLManagedTensorVersioned* src, DLManagedTensor** out,
                                     dlb_error* error) {
  if (out == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (src == nullptr) return dlb::fail(error, DLB_ERR_INVALID_ARGUMENT, "tensor is NULL");
  if (src->version.major != DLPACK_MAJOR_VERSION) {
    return dlb::fail(error, DLB_ERR_UNSUPPORTED_VERSION,
                     "DLPack major version %u is not supported (dlbridge accepts major version %d)",
                     static_cast<unsigned>(src->version.major), DLPACK_MAJOR_VERSION);
  }
  // Everything that enters is validated, like an import (a foreign producer's tensor may be
  // anything); then one rule for the flags, which the legacy struct cannot carry: a bit is
  // dropped only when the legacy consumer reads the same tensor without it.
  int status = dlb::validate_tensor_inline(&src->dl_tensor, src->flags, nullptr, error);
  if (status == DLB_OK && !dlb_tensor_is_dlbridge(src)) {
    status = dlb::check_device_memory(&src->dl_tensor, src->flags, error);
  }
  if (status != DLB_OK) return status;
  if ((src->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0) {
    return dlb::fail(error, DLB_ERR_READ_ONLY,
                     "cannot export a read-only tensor as a legacy DLManagedTensor, which has no "
                     "READ_ONLY flag");
  }
  if (dlb_dtype_is_subbyte(src->dl_tensor.dtype) &&
      (src->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) != 0) {
    return dlb::fail(error, DLB_ERR_UNSUPPORTED,
                     "cannot export padded sub-byte data as a legacy DLManagedTensor, which has no "
                     "IS_SUBBYTE_TYPE_PADDED flag");
  }
  auto* exported = static_cast<LegacyExport*>(std::malloc(sizeof(LegacyExport)));
  if (exported == nullptr) {
    return dlb::fail(error, DLB_ERR_OUT_OF_MEMORY, "out of memory exporting a tensor");
  }
  exported->legacy.dl_tensor = src->dl_tensor;
  DLTensor& t = exported->legacy.dl_tensor;
  dlb::fold_offset(t.device.device_type, &t.data, &t.byte_offset);
  exported->legacy.manager_ctx = exported;
  exported->legacy.deleter = legacy_export_deleter;
  exported->source = src;
  *out = &exported->legacy;
  return DLB_OK;
}

DLB_API void dlb_tensor_free_legacy(DLManagedTensor* tensor) {
  if (tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
}

DLB_API int dlb_exchange_allocator(DLTensor* prototype, DLManagedTensorVersioned** out,
                                   void* error_ctx,
                                   void (*SetError)(void* error_ctx, const char* kind,
                                                    const char* message)) {
  dlb_error error;
  int status;
  if (out != nullptr) *out = nullptr;
  if (prototype == nullptr) {
    status = dlb::fail(&error, DLB_ERR_INVALID_ARGUMENT, "prototype is NULL");
  } else {
    status = dlb_tensor_allocate(prototype->device, prototype->dtype, prototype->ndim,
                                 prototype->shape, nullptr, 0, out, &error);
  }
  if (status == DLB_OK) return 0;
  if (SetError != nullptr) SetError(error_ctx, dlb_status_name(status), error.message);
  return -1;
}

}  // extern "C"
