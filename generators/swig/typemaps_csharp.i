/* typemaps_csharp.i - what dlbridge.i needs from C# (see the list at the top of dlbridge.i).
 * Included by dlbridge.i when SWIG runs with -csharp. The module file is
 * bindings/csharp/dlbridge_csharp.i; the hand-written native part is
 * bindings/csharp/native/dlbridge_csharp.c. Generated methods are `unsafe` (arrays are pinned
 * with `fixed` for the call), so the assembly is compiled with -unsafe. */

/* 5. DLPack's enums as plain int constants, each read from the C value when the class loads
 * (%csconst(0)): SWIG would otherwise copy the C spelling (`2U`, `(1UL << 0UL)`) into C#. */
%include "enumsimple.swg"
%csconst(0);

/* 1. The one exception hook (bindings/csharp/native/dlbridge_csharp.c, the only C the C# binding
 * writes by hand): the managed side registers a callback at type initialisation that records a
 * DLBridge.DLPackException(status, message) as SWIG's pending exception of the calling thread;
 * the C# wrapper of every function returning dlb_status throws it when the call returns. */
%{
#include "dlbridge_csharp.h"
#define DLB_THROW_STATUS(status, message) dlb_cs_throw_status((int32_t)(status), (message))
%}
%pragma(csharp) imclasscode=%{
  // Registers the exception callback before any other native call of this class.
  internal static readonly global::DLBridge.NativeExceptions.Token exceptionRegistration =
      global::DLBridge.NativeExceptions.Register();
%}
/* dlbridge.i applies `long long` to dlb_status after this file, copying what `long long` has
 * then: so the check sits on `long long`, and every function returning a 64-bit integer (the
 * fallible ones, and dlb_tensor_live_count) checks for a pending exception unconditionally
 * (SWIG's own $excode would expand only for typemaps marked canthrow). The check is one read of
 * a static counter when nothing is pending. */
%typemap(csout) long long {
    long ret = $imcall;
    if (global::DLBridge.NativeExceptions.AnyPending) global::DLBridge.NativeExceptions.ThrowPending();
    return ret;
  }

/* 2. Arrays cross as a {length, data} pair (dlb_cs_array, DLBridge.NativeArray) that the C#
 * wrapper fills from the managed array it pins with `fixed` for the duration of the call; a null
 * array has length -1. long[], int[] and byte[] have the widths of int64_t, int32_t, int8_t. */
%{
#define DLB_ARRAY_LENGTH(a) ((a).length)
#define DLB_ARRAY_GET_I64(a, n, dst) memcpy((dst), (a).data, (size_t)(n) * sizeof(int64_t))
#define DLB_ARRAY_SET_I64(a, n, src) memcpy((a).data, (src), (size_t)(n) * sizeof(int64_t))
#define DLB_ARRAY_GET_I32(a, n, dst) memcpy((dst), (a).data, (size_t)(n) * sizeof(int32_t))
#define DLB_ARRAY_SET_I32(a, n, src) memcpy((a).data, (src), (size_t)(n) * sizeof(int32_t))
#define DLB_ARRAY_SET_I8(a, n, src) memcpy((a).data, (src), (size_t)(n) * sizeof(int8_t))
%}

/* 3. The C# types of an array parameter group. */
%define DLB_ARRAY_TYPES_CS(PARAMS, CSTYPE, PTRTYPE)
%typemap(ctype) PARAMS "dlb_cs_array"
%typemap(imtype) PARAMS "global::DLBridge.NativeArray"
%typemap(cstype) PARAMS "CSTYPE"
%typemap(csin, pre="    fixed (PTRTYPE swig_ptr_$csinput = $csinput) {",
         terminator="    }") PARAMS
    "global::DLBridge.NativeArray.Of($csinput == null ? -1 : $csinput.Length, swig_ptr_$csinput)"
%enddef
%define DLB_ARRAY_TYPES_I64(PARAMS) DLB_ARRAY_TYPES_CS(PARAMS, long[], long*) %enddef
%define DLB_ARRAY_TYPES_I32(PARAMS) DLB_ARRAY_TYPES_CS(PARAMS, int[], int*) %enddef
%define DLB_ARRAY_TYPES_I8(PARAMS) DLB_ARRAY_TYPES_CS(PARAMS, byte[], byte*) %enddef
%define DLB_ARRAY_TYPES(PARAMS, KIND)
DLB_ARRAY_TYPES_##KIND(PARAMS)
%enddef
%csmethodmodifiers "public unsafe";

/* 4. uint64_t is C#'s ulong (SWIG's `unsigned long long`): 64 bits, nothing to add. size_t
 * would become a 32-bit uint; the headers use uint64_t for every size, and should a size_t
 * appear it is 64 bits here too. */
%apply unsigned long long { size_t };
/* C `long` is 64 bits on LP64, 32 in SWIG's C# typemaps: the header's `(1UL << 0UL)` flag
 * constants would become a 32-bit uint, dropping any flag above bit 31 that DLPack adds. */
%apply long long { long };
%apply unsigned long long { unsigned long };

/* The release function of dlbx_tensor_wrap (dlbridge.i) is the shared engine's: C# wraps with a
 * GCHandle as the token, takes it back from dlbx_tensor_free or drains it (src/Lifecycle.cs). */
%{
#define DLBX_RELEASE_FN dlbx_release
%}
