/*
 * dlbridge.hpp - header-only C++17 helpers over the dlbridge C API (dlbridge.h).
 *
 * What this layer adds to the C API, and nothing more:
 *  - RAII: dlbridge::Tensor owns one DLManagedTensorVersioned* and frees it exactly once (with
 *    dlb_tensor_free) when it is destroyed; dlbridge::LegacyTensor does the same for a legacy
 *    DLManagedTensor*. Both are move-only; a moved-from object is empty and frees nothing.
 *  - Exceptions instead of status codes, on the caller's side only: every C call is made with a
 *    dlb_error, and a status other than DLB_OK becomes a dlbridge::Error carrying that status and
 *    the core's message verbatim. The C functions never throw; callbacks this header hands to the
 *    C library (release trampolines) are noexcept, so no exception ever crosses the C boundary.
 *  - Value types for dtypes and devices (DType, Device) that stay open: any integer code is
 *    representable, so a tensor from a newer producer never becomes undefined behaviour.
 *  - Typed, bounds-checked element access on the host (TensorView<T>, ConstTensorView<T>).
 *  - Channels between processes (dlbridge::Listener, dlbridge::Channel: move-only owners that
 *    close in their destructor), in dlbridge/channel.hpp, which this header includes.
 *
 * Ownership rules follow the C API one for one, and each function below restates its own:
 * a function that "consumes" a raw pointer takes it over whether it succeeds or throws; a
 * function that "borrows" leaves ownership where it was.
 *
 * Thread safety: one Tensor object must not be used from two threads at once without external
 * synchronisation (like any C++ object); distinct Tensor objects, including shares and views of
 * the same memory, may be used and destroyed on any threads.
 *
 * Requires C++17 and exceptions. Link with the dlbridge library.
 *
 * This is the header to include. It is an umbrella over the parts, one header per concern,
 * each of which also compiles when included on its own:
 *   dlbridge/error.hpp    Error, and the status-to-exception helpers (detail::check, ...)
 *   dlbridge/dtype.hpp    DType, dtype_traits, dtype_of<T>()
 *   dlbridge/device.hpp   Device
 *   dlbridge/slice.hpp    kSliceNone, range(), all(); live_count(), version_string(),
 *                         synchronize()
 *   dlbridge/runtime.hpp  the cuda and opencl namespaces
 *   dlbridge/legacy.hpp   LegacyTensor
 *   dlbridge/view.hpp     BasicTensorView, TensorView<T>, ConstTensorView<T>
 *   dlbridge/tensor.hpp   Tensor
 *   dlbridge/channel.hpp  Listener, Channel
 */
#ifndef DLBRIDGE_DLBRIDGE_HPP_
#define DLBRIDGE_DLBRIDGE_HPP_

// The parts, in dependency order.
#include "dlbridge/error.hpp"
#include "dlbridge/dtype.hpp"
#include "dlbridge/device.hpp"
#include "dlbridge/slice.hpp"
#include "dlbridge/runtime.hpp"
#include "dlbridge/legacy.hpp"
#include "dlbridge/view.hpp"
#include "dlbridge/tensor.hpp"

// Channels: tensors across processes (Listener, Channel), in a header of their own.
#include "dlbridge/channel.hpp"

#endif  // DLBRIDGE_DLBRIDGE_HPP_
