/* Prints, as Rust source, the conformance contract's constants and a compile-time assertion of
 * the size and the field offsets of the dlpc structs that src/conformance.rs and src/interop.rs
 * mirror by hand.
 * Meson compiles it with the project's warnings and runs it; the adapter's build.rs includes
 * what it prints, so the crate does not build if its mirror drifts from dlpack_conformance.h. */
#include <stddef.h>
#include <stdio.h>

#include "dlpack_conformance.h"

#define CONSTANT(type, name) printf("pub const %s: %s = %lld;\n", #name, type, (long long)(name));
#define SIZE(rust, c) \
  printf("const _: () = assert!(std::mem::size_of::<%s>() == %zu);\n", rust, sizeof(c));
#define FIELD(rust, c, field)                                                              \
  printf("const _: () = assert!(std::mem::offset_of!(%s, %s) == %zu);\n", rust, #field, \
         offsetof(c, field));

int main(void) {
  CONSTANT("u32", DLPC_CONTRACT_VERSION)
  CONSTANT("usize", DLPC_MAX_NDIM)
  CONSTANT("i32", DLPC_OK)
  CONSTANT("i32", DLPC_UNSUPPORTED)
  CONSTANT("i32", DLPC_REFUSED)
  CONSTANT("i32", DLPC_ERROR)

  SIZE("CaseSpec", dlpc_case_spec)
  FIELD("CaseSpec", dlpc_case_spec, struct_size)
  FIELD("CaseSpec", dlpc_case_spec, case_id)
  FIELD("CaseSpec", dlpc_case_spec, check)
  FIELD("CaseSpec", dlpc_case_spec, dtype)
  FIELD("CaseSpec", dlpc_case_spec, ndim)
  FIELD("CaseSpec", dlpc_case_spec, shape)
  FIELD("CaseSpec", dlpc_case_spec, strides)
  FIELD("CaseSpec", dlpc_case_spec, offset_elements)
  FIELD("CaseSpec", dlpc_case_spec, flags)
  FIELD("CaseSpec", dlpc_case_spec, values)
  FIELD("CaseSpec", dlpc_case_spec, values_size)

  SIZE("ConsumeReport", dlpc_consume_report)
  FIELD("ConsumeReport", dlpc_consume_report, struct_size)
  FIELD("ConsumeReport", dlpc_consume_report, handle)
  FIELD("ConsumeReport", dlpc_consume_report, first_element)
  FIELD("ConsumeReport", dlpc_consume_report, ndim)
  FIELD("ConsumeReport", dlpc_consume_report, shape)
  FIELD("ConsumeReport", dlpc_consume_report, strides_known)
  FIELD("ConsumeReport", dlpc_consume_report, strides)
  FIELD("ConsumeReport", dlpc_consume_report, writable)
  FIELD("ConsumeReport", dlpc_consume_report, values)
  FIELD("ConsumeReport", dlpc_consume_report, values_capacity)
  FIELD("ConsumeReport", dlpc_consume_report, values_size)
  FIELD("ConsumeReport", dlpc_consume_report, message)

  SIZE("Subject", dlpc_subject)
  FIELD("Subject", dlpc_subject, struct_size)
  FIELD("Subject", dlpc_subject, contract_version)
  FIELD("Subject", dlpc_subject, name)
  FIELD("Subject", dlpc_subject, ctx)
  FIELD("Subject", dlpc_subject, produce_versioned)
  FIELD("Subject", dlpc_subject, produce_legacy)
  FIELD("Subject", dlpc_subject, consume_versioned)
  FIELD("Subject", dlpc_subject, consume_legacy)
  FIELD("Subject", dlpc_subject, release)
  FIELD("Subject", dlpc_subject, live_count)
  FIELD("Subject", dlpc_subject, language)
  FIELD("Subject", dlpc_subject, exchange_produce)
  FIELD("Subject", dlpc_subject, releases)

  CONSTANT("usize", DLPC_EXCHANGE_MAX_NDIM)
  CONSTANT("i64", DLPC_EXCHANGE_OP_NONE)
  CONSTANT("i64", DLPC_EXCHANGE_OP_TRANSPOSE)
  CONSTANT("i64", DLPC_EXCHANGE_OP_SLICE)
  CONSTANT("i64", DLPC_EXCHANGE_OP_SELECT)
  CONSTANT("i64", DLPC_EXCHANGE_OP_READ_ONLY)
  CONSTANT("i64", DLPC_EXCHANGE_OP_COPY)
  SIZE("ExchangeCase", dlpc_exchange_case)
  FIELD("ExchangeCase", dlpc_exchange_case, dtype_code)
  FIELD("ExchangeCase", dlpc_exchange_case, base_shape)
  FIELD("ExchangeCase", dlpc_exchange_case, op_args)
  FIELD("ExchangeCase", dlpc_exchange_case, legacy_refused)
  SIZE("ExchangeReport", dlpc_exchange_report)
  FIELD("ExchangeReport", dlpc_exchange_report, status)
  FIELD("ExchangeReport", dlpc_exchange_report, base)
  FIELD("ExchangeReport", dlpc_exchange_report, message)
  return 0;
}
