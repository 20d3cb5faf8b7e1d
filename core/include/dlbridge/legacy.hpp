/*
 * dlbridge/legacy.hpp - dlbridge::LegacyTensor, the move-only owner of a legacy DLManagedTensor*
 * (DLPack < 1.0) that Tensor::export_legacy() returns and Tensor::import_legacy() takes.
 * Part of dlbridge/dlbridge.hpp, which includes it; including this header alone works too.
 */
#ifndef DLBRIDGE_LEGACY_HPP_
#define DLBRIDGE_LEGACY_HPP_

#include <utility>

#include "dlbridge/dlbridge.h"

namespace dlbridge {

/* ========================================================================================== */
/* Legacy tensors                                                                             */
/* ========================================================================================== */

/* A move-only owner of a legacy DLManagedTensor* (DLPack < 1.0), as produced by
 * Tensor::export_legacy() for consumers that only speak the legacy struct. The destructor frees
 * the tensor (dlb_tensor_free_legacy: its deleter runs exactly once); release() hands the raw
 * pointer to a consumer instead, which then must call its deleter exactly once. */
class LegacyTensor {
 public:
  /* An empty owner. */
  LegacyTensor() noexcept = default;
  LegacyTensor(const LegacyTensor&) = delete;
  LegacyTensor& operator=(const LegacyTensor&) = delete;
  /* Moves ownership; `other` becomes empty. */
  LegacyTensor(LegacyTensor&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)) {}
  /* Frees what this held, then takes over `other`'s tensor; `other` becomes empty. */
  LegacyTensor& operator=(LegacyTensor&& other) noexcept {
    if (this != &other) reset(std::exchange(other.ptr_, nullptr));
    return *this;
  }
  /* Frees the held tensor, if any. */
  ~LegacyTensor() { dlb_tensor_free_legacy(ptr_); }

  /* Takes ownership of a raw legacy tensor from any producer (NULL gives an empty owner). No
   * validation happens here; import it with Tensor::import_legacy() to validate it. */
  static LegacyTensor from_raw(DLManagedTensor* tensor) noexcept {
    LegacyTensor result;
    result.ptr_ = tensor;
    return result;
  }

  /* Gives up ownership: returns the raw pointer (NULL if empty) and leaves this empty. The
   * caller must now call its deleter exactly once (or hand it to a consumer that will). */
  DLManagedTensor* release() noexcept { return std::exchange(ptr_, nullptr); }

  /* Frees the held tensor (if any) and takes ownership of `tensor` (may be NULL). */
  void reset(DLManagedTensor* tensor = nullptr) noexcept {
    DLManagedTensor* old = std::exchange(ptr_, tensor);
    dlb_tensor_free_legacy(old);
  }

  /* The raw pointer, still owned by this object (NULL if empty). */
  DLManagedTensor* get() const noexcept { return ptr_; }

  /* True unless empty. */
  explicit operator bool() const noexcept { return ptr_ != nullptr; }

 private:
  DLManagedTensor* ptr_ = nullptr;
};

}  // namespace dlbridge

#endif  // DLBRIDGE_LEGACY_HPP_
