/* typemaps_csharp.i - what dlbridge.i needs from C# (see the list at the top of dlbridge.i).
 * Included by dlbridge.i when SWIG runs with -csharp. The module file is
 * generators/swig/dlbridge_csharp.i; the hand-written native part is
 * bindings/csharp/native/dlbridge_csharp.c. The generated classes are `unsafe` (the module
 * file's pragmas: arrays are pinned with `fixed` for the call), so the assembly is compiled with
 * -unsafe. */

/* Built with -DSWIG_CSHARP_NO_EXCEPTION_HELPER -DSWIG_CSHARP_NO_STRING_HELPER (see
 * bindings/csharp/meson.build): no generated type initializer calls into the native library, so
 * a missing libdlbridge_csharp.so surfaces as one exception from the first call (the gate below),
 * not as nested TypeInitializationExceptions. Exceptions come from the hook below; strings are
 * read in place (below). */

/* 5. DLPack's enums and the header's macros as C# constants (`const`: a `switch` can use them),
 * their values copied from the header by SWIG. The DLPack dtype codes are spelled `0U` there:
 * they are C# `uint` constants. The few values whose C spelling is no C# expression are spelled
 * here in C#, each checked against the header when the wrapper compiles. */
%include "enumsimple.swg"
%csconst(1);
%typemap(cstype) enum DLDataTypeCode "uint"
%define DLB_CS_CONSTANT(NAME, CS_VALUE, C_VALUE)
%csconstvalue(CS_VALUE) NAME;
%{
typedef char dlbx_csharp_constant_##NAME[(NAME) == (C_VALUE) ? 1 : -1];
%}
%enddef
DLB_CS_CONSTANT(DLPACK_FLAG_BITMASK_READ_ONLY, "1UL", 1u)
DLB_CS_CONSTANT(DLPACK_FLAG_BITMASK_IS_COPIED, "2UL", 2u)
DLB_CS_CONSTANT(DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, "4UL", 4u)
DLB_CS_CONSTANT(DLB_SLICE_NONE, "long.MinValue", INT64_MIN)
DLB_CS_CONSTANT(DLB_CUDA_STREAM_NONE, "long.MinValue", INT64_MIN)

/* 1. The one exception hook (bindings/csharp/native/dlbridge_csharp.c, the only C the C# binding
 * writes by hand): the managed side registers a callback (DLBridge.NativeLibrary, before the
 * first call) that records the binding's exception for (status, message) as the calling
 * thread's pending exception; the C# wrapper of every function returning dlb_status throws it
 * when the call returns. */
%{
#include "dlbridge_csharp.h"
#define DLB_THROW_STATUS(status, message) dlbx_csharp_throw_status((int32_t)(status), (message))
%}

/* The gate: every generated method first asks DLBridge.NativeLibrary whether the native library
 * loaded (one read of a static field), so that its absence is one clear exception wherever the
 * first call comes from. dlbridge.i applies `long long` to dlb_status (and to addresses, DLDevice)
 * after this file, copying what `long long` has then: so the status check sits on `long long`,
 * and every function returning a 64-bit integer checks for a pending exception unconditionally
 * (SWIG's own $excode would expand only for typemaps marked canthrow); one read of a static
 * counter when nothing is pending. int64_t and uint64_t got their typemaps before this file
 * (dlbridge.i's %apply), so they are named here too. */
%typemap(csout) long long {
    global::DLBridge.NativeLibrary.Check();
    long ret = $imcall;
    if (global::DLBridge.NativeExceptions.AnyPending) global::DLBridge.NativeExceptions.ThrowPending();
    return ret;
  }
%define DLB_CS_GATED(TYPE)
%typemap(csout) TYPE {
    global::DLBridge.NativeLibrary.Check();
    return $imcall;
  }
%enddef
DLB_CS_GATED(int)
DLB_CS_GATED(unsigned int)
DLB_CS_GATED(unsigned long long)
DLB_CS_GATED(int64_t)
DLB_CS_GATED(uint64_t)
%typemap(csout) void {
    global::DLBridge.NativeLibrary.Check();
    $imcall;
  }
/* dlbridge.i wraps dlb_channel_options_set_key's call in %exception (to wipe the key's copy);
 * SWIG's C# then warns that a csout without $excode cannot throw what it raises. Nothing here
 * raises there, and the csout above throws the pending exception of every call anyway. */
%warnfilter(844) dlb_channel_options_set_key;
/* Strings the library returns are static: their address crosses, C# reads the UTF-8 in place. */
%typemap(ctype, out="const char *") char * "char *"
%typemap(imtype, out="global::System.IntPtr") char * "string"
%typemap(out) char * %{ $result = $1; %}
%typemap(csout) char * {
    global::DLBridge.NativeLibrary.Check();
    return global::DLBridge.NativeExceptions.Utf8($imcall);
  }

/* 2. Arrays cross as a {length, data} pair (dlbx_csharp_array, DLBridge.NativeArray) that the C#
 * wrapper fills from the managed array it pins with `fixed` for the duration of the call; a null
 * array has length -1. long[], int[] and byte[] have the widths of int64_t, int32_t, int8_t. */
%{
#define DLB_ARRAY_LENGTH(a) ((a).length)
#define DLB_ARRAY_GET_I64(a, n, dst) memcpy((dst), (a).data, (size_t)(n) * sizeof(int64_t))
#define DLB_ARRAY_SET_I64(a, n, src) memcpy((a).data, (src), (size_t)(n) * sizeof(int64_t))
#define DLB_ARRAY_GET_I32(a, n, dst) memcpy((dst), (a).data, (size_t)(n) * sizeof(int32_t))
#define DLB_ARRAY_SET_I32(a, n, src) memcpy((a).data, (src), (size_t)(n) * sizeof(int32_t))
#define DLB_ARRAY_GET_I8(a, n, dst) memcpy((dst), (a).data, (size_t)(n) * sizeof(int8_t))
#define DLB_ARRAY_SET_I8(a, n, src) memcpy((a).data, (src), (size_t)(n) * sizeof(int8_t))
%}

/* 3. The C# types of an array parameter group. */
%define DLB_ARRAY_TYPES_CS(PARAMS, CSTYPE, PTRTYPE)
%typemap(ctype) PARAMS "dlbx_csharp_array"
%typemap(imtype) PARAMS "global::DLBridge.NativeArray"
%typemap(cstype) PARAMS "CSTYPE"
%typemap(csin, pre="    fixed (PTRTYPE swig_ptr_$csinput = $csinput) {",
         terminator="    }") PARAMS
    "new global::DLBridge.NativeArray($csinput == null ? -1 : $csinput.Length, swig_ptr_$csinput)"
%enddef
%define DLB_ARRAY_TYPES_I64(PARAMS) DLB_ARRAY_TYPES_CS(PARAMS, long[], long*) %enddef
%define DLB_ARRAY_TYPES_I32(PARAMS) DLB_ARRAY_TYPES_CS(PARAMS, int[], int*) %enddef
%define DLB_ARRAY_TYPES_I8(PARAMS) DLB_ARRAY_TYPES_CS(PARAMS, byte[], byte*) %enddef
%define DLB_ARRAY_TYPES(PARAMS, KIND)
DLB_ARRAY_TYPES_##KIND(PARAMS)
%enddef

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
