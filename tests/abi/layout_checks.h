/*
 * layout_checks.h - dlbridge's dlpack.h against /work/shared/dlpack-abi.md, value by value.
 *
 * Compiled twice: as C99 with -pedantic (layout_c99.c) and as C++17 (layout_cpp.cc). The checks
 * run at run time so that one run reports every difference, not just the first; each prints
 * "MISMATCH <expression>: got X, want Y". dlbridge.h is included too, so both builds also prove
 * that the public API header compiles in that language with -Wall -Wextra -pedantic.
 */
#ifndef DLB_TESTS_LAYOUT_CHECKS_H_
#define DLB_TESTS_LAYOUT_CHECKS_H_

#include <dlbridge/dlbridge.h>
#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The version macros must also work in #if. */
#if DLPACK_MAJOR_VERSION != 1
#error "DLPACK_MAJOR_VERSION must be 1"
#endif
#if DLPACK_MINOR_VERSION != 3
#error "DLPACK_MINOR_VERSION must be 3"
#endif
#if DLPACK_FLAG_BITMASK_READ_ONLY != 1 || DLPACK_FLAG_BITMASK_IS_COPIED != 2 || \
    DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED != 4
#error "DLPACK_FLAG_BITMASK_* values differ from the standard"
#endif

static int layout_checks_run_ = 0;
static int layout_checks_failed_ = 0;

static void layout_expect_(const char* what, unsigned long long got, unsigned long long want) {
  layout_checks_run_++;
  if (got != want) {
    layout_checks_failed_++;
    printf("MISMATCH %s: got %llu, want %llu\n", what, got, want);
  }
}

#define EXPECT_VALUE(expr, want) \
  layout_expect_(#expr, (unsigned long long)(expr), (unsigned long long)(want))
#define EXPECT_SIZE(type, want) EXPECT_VALUE(sizeof(type), want)
#define EXPECT_OFFSET(type, member, want) EXPECT_VALUE(offsetof(type, member), want)
#define EXPECT_MEMBER_SIZE(type, member, want)                                                     \
  layout_expect_("sizeof(" #type "::" #member ")", (unsigned long long)sizeof(((type*)0)->member), \
                 (unsigned long long)(want))

/* Runs every check; returns the number of failures. */
static int layout_run_checks(void) {
  /* versions */
  EXPECT_VALUE(DLPACK_MAJOR_VERSION, 1);
  EXPECT_VALUE(DLPACK_MINOR_VERSION, 3);

  /* device types, including the post-1.3 ones */
  EXPECT_VALUE(kDLCPU, 1);
  EXPECT_VALUE(kDLCUDA, 2);
  EXPECT_VALUE(kDLCUDAHost, 3);
  EXPECT_VALUE(kDLOpenCL, 4);
  EXPECT_VALUE(kDLVulkan, 7);
  EXPECT_VALUE(kDLMetal, 8);
  EXPECT_VALUE(kDLVPI, 9);
  EXPECT_VALUE(kDLROCM, 10);
  EXPECT_VALUE(kDLROCMHost, 11);
  EXPECT_VALUE(kDLExtDev, 12);
  EXPECT_VALUE(kDLCUDAManaged, 13);
  EXPECT_VALUE(kDLOneAPI, 14);
  EXPECT_VALUE(kDLWebGPU, 15);
  EXPECT_VALUE(kDLHexagon, 16);
  EXPECT_VALUE(kDLMAIA, 17);
  EXPECT_VALUE(kDLTrn, 18);
  EXPECT_VALUE(kDLTPU, 19);
  EXPECT_VALUE(kDLTPUHost, 20);

  /* dtype codes, including the post-1.3 one */
  EXPECT_VALUE(kDLInt, 0);
  EXPECT_VALUE(kDLUInt, 1);
  EXPECT_VALUE(kDLFloat, 2);
  EXPECT_VALUE(kDLOpaqueHandle, 3);
  EXPECT_VALUE(kDLBfloat, 4);
  EXPECT_VALUE(kDLComplex, 5);
  EXPECT_VALUE(kDLBool, 6);
  EXPECT_VALUE(kDLFloat8_e3m4, 7);
  EXPECT_VALUE(kDLFloat8_e4m3, 8);
  EXPECT_VALUE(kDLFloat8_e4m3b11fnuz, 9);
  EXPECT_VALUE(kDLFloat8_e4m3fn, 10);
  EXPECT_VALUE(kDLFloat8_e4m3fnuz, 11);
  EXPECT_VALUE(kDLFloat8_e5m2, 12);
  EXPECT_VALUE(kDLFloat8_e5m2fnuz, 13);
  EXPECT_VALUE(kDLFloat8_e8m0fnu, 14);
  EXPECT_VALUE(kDLFloat6_e2m3fn, 15);
  EXPECT_VALUE(kDLFloat6_e3m2fn, 16);
  EXPECT_VALUE(kDLFloat4_e2m1fn, 17);
  EXPECT_VALUE(kDLBcomplex, 18);

  /* flag bits, and the width of the flags word they live in */
  EXPECT_VALUE(DLPACK_FLAG_BITMASK_READ_ONLY, 1);
  EXPECT_VALUE(DLPACK_FLAG_BITMASK_IS_COPIED, 2);
  EXPECT_VALUE(DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, 4);

  /* enums: 32 bits wide (DLDeviceType is stored in DLDevice) */
  EXPECT_SIZE(DLDeviceType, 4);

  /* DLPackVersion */
  EXPECT_SIZE(DLPackVersion, 8);
  EXPECT_OFFSET(DLPackVersion, major, 0);
  EXPECT_OFFSET(DLPackVersion, minor, 4);
  EXPECT_MEMBER_SIZE(DLPackVersion, major, 4);
  EXPECT_MEMBER_SIZE(DLPackVersion, minor, 4);

  /* DLDevice */
  EXPECT_SIZE(DLDevice, 8);
  EXPECT_OFFSET(DLDevice, device_type, 0);
  EXPECT_OFFSET(DLDevice, device_id, 4);
  EXPECT_MEMBER_SIZE(DLDevice, device_type, 4);
  EXPECT_MEMBER_SIZE(DLDevice, device_id, 4);

  /* DLDataType */
  EXPECT_SIZE(DLDataType, 4);
  EXPECT_OFFSET(DLDataType, code, 0);
  EXPECT_OFFSET(DLDataType, bits, 1);
  EXPECT_OFFSET(DLDataType, lanes, 2);
  EXPECT_MEMBER_SIZE(DLDataType, code, 1);
  EXPECT_MEMBER_SIZE(DLDataType, bits, 1);
  EXPECT_MEMBER_SIZE(DLDataType, lanes, 2);

  /* DLTensor */
  EXPECT_SIZE(DLTensor, 48);
  EXPECT_OFFSET(DLTensor, data, 0);
  EXPECT_OFFSET(DLTensor, device, 8);
  EXPECT_OFFSET(DLTensor, ndim, 16);
  EXPECT_OFFSET(DLTensor, dtype, 20);
  EXPECT_OFFSET(DLTensor, shape, 24);
  EXPECT_OFFSET(DLTensor, strides, 32);
  EXPECT_OFFSET(DLTensor, byte_offset, 40);
  EXPECT_MEMBER_SIZE(DLTensor, ndim, 4);
  EXPECT_MEMBER_SIZE(DLTensor, byte_offset, 8);

  /* DLManagedTensor (legacy) */
  EXPECT_SIZE(DLManagedTensor, 64);
  EXPECT_OFFSET(DLManagedTensor, dl_tensor, 0);
  EXPECT_OFFSET(DLManagedTensor, manager_ctx, 48);
  EXPECT_OFFSET(DLManagedTensor, deleter, 56);

  /* DLManagedTensorVersioned */
  EXPECT_SIZE(DLManagedTensorVersioned, 80);
  EXPECT_OFFSET(DLManagedTensorVersioned, version, 0);
  EXPECT_OFFSET(DLManagedTensorVersioned, manager_ctx, 8);
  EXPECT_OFFSET(DLManagedTensorVersioned, deleter, 16);
  EXPECT_OFFSET(DLManagedTensorVersioned, flags, 24);
  EXPECT_OFFSET(DLManagedTensorVersioned, dl_tensor, 32);
  EXPECT_MEMBER_SIZE(DLManagedTensorVersioned, flags, 8);

  /* The C exchange API (1.3) */
  EXPECT_SIZE(DLPackExchangeAPIHeader, 16);
  EXPECT_OFFSET(DLPackExchangeAPIHeader, version, 0);
  EXPECT_OFFSET(DLPackExchangeAPIHeader, prev_api, 8);
  EXPECT_SIZE(DLPackExchangeAPI, 56);
  EXPECT_OFFSET(DLPackExchangeAPI, header, 0);
  EXPECT_OFFSET(DLPackExchangeAPI, managed_tensor_allocator, 16);
  EXPECT_OFFSET(DLPackExchangeAPI, managed_tensor_from_py_object_no_sync, 24);
  EXPECT_OFFSET(DLPackExchangeAPI, managed_tensor_to_py_object_no_sync, 32);
  EXPECT_OFFSET(DLPackExchangeAPI, dltensor_from_py_object_no_sync, 40);
  EXPECT_OFFSET(DLPackExchangeAPI, current_work_stream, 48);

  return layout_checks_failed_;
}

/* Prints the summary; returns the process exit status. */
static int layout_report(const char* language) {
  if (layout_checks_failed_ != 0) {
    printf("%s: %d of %d layout checks failed\n", language, layout_checks_failed_,
           layout_checks_run_);
    return 1;
  }
  printf("%s: all %d layout checks passed\n", language, layout_checks_run_);
  return 0;
}

#endif /* DLB_TESTS_LAYOUT_CHECKS_H_ */
