/* The DLPack conformance kit: the catalogue of cases (dlpc_case_count, dlpc_case_get) and
 * dlpc_run_case, which sets each case up and runs it through the consumer or producer checks.
 * Every case cites the section of the DLPack facts (shared/dlpack-abi.md, "Rules" and the
 * sections before it) whose rule it checks; README.md lists them. */
#define _GNU_SOURCE
#include "conformance_internal.h"

#include <pthread.h>
#include <string.h>

/* ---- the catalogue ------------------------------------------------------------------------ */

enum { PV = 1, PL = 2, CV = 4, CL = 8 };

typedef struct check_def {
  const char* name;
  unsigned roles;
  const char* rule;
  const char* passes;
} check_def;

static const check_def kChecks[] = {
  {"deleter-once", PV | PL | CV | CL, "Rules 1 (Ownership): deleter exactly once",
   "producer: one deleter call releases the export (live count -1); consumer: the deleter runs "
   "not before release, exactly once after"},
  {"deleter-other-thread", PV | PL | CV | CL, "Rules 3: a deleter may run on any thread",
   "the deleter (producer) or the release (consumer) runs on a new thread, exactly once"},
  {"version-stamp", PV, "Rules 4 (Versions): stamp exports with the version you implement",
   "version.major == 1 and flags hold only known bits"},
  {"strides-non-null", PV, "Rules 6 (Strides): non-NULL when ndim > 0 since 1.2",
   "a 1.2+ export with ndim > 0 has strides"},
  {"null-strides", CV | CL, "Rules 6 (Strides): importers accept NULL as compact row-major",
   "NULL strides (a 1.1 / legacy producer) read as C order"},
  {"negative-strides", PV | PL | CV | CL, "Rules 6 (Strides): negative strides are legal",
   "a [3,4] tensor with strides [-4,1] exported / read with its values"},
  {"strided", PV | PL | CV | CL, "Rules 6 (Strides): strides are in elements, not bytes",
   "a [4,2] view with strides [4,2] exported / read with its values"},
  {"extent-one-strides", CV | CL, "Rules 6 (Strides): strides of extent-1 dimensions are arbitrary",
   "shape [3,1] with strides [1,1000] accepted and read"},
  {"byte-offset", PV | PL | CV | CL, "Rules 8 (byte_offset): the first element is at data + byte_offset",
   "a view 5 elements into its allocation; the consumer reads from data + byte_offset"},
  {"read-only", PV | PL | CV, "Rules 5 (Flags): READ_ONLY, the consumer must not write; legacy has no flags",
   "versioned export carries READ_ONLY; a legacy read-only export is refused; the consumer's "
   "object is not writable and the (write-protected) data is unchanged"},
  {"is-copied", PV | CV, "Rules 5 (Flags): IS_COPIED set whenever the producer made a copy",
   "an export asked to be a copy carries IS_COPIED; the consumer accepts it"},
  {"subbyte-packed", PV | PL | CV | CL, "Data type codes: sub-byte types packed, ceil(numel*bits*lanes/8) bytes",
   "int4 [5] in 3 bytes, element i at bits 4*i"},
  {"subbyte-padded", PV | CV, "Flags: IS_SUBBYTE_TYPE_PADDED, each element padded to a byte",
   "uint4 [5] in 5 bytes with the flag set / read"},
  {"zero-dim", PV | PL | CV | CL, "Rules 7 (Shape): ndim == 0 is a scalar, shape/strides may be NULL",
   "a 0-d float64 with one element"},
  {"zero-size", PV | PL | CV | CL, "Rules 2 and 9: zero-size tensors are deleted too; data may be NULL",
   "[0,3]: exported and released once / accepted with NULL data and deleted once"},
  {"alignment", PV | PL | CV | CL, "Rules 8: do not rely on 256-byte alignment",
   "producer: reported only; consumer: data aligned only to the element size is accepted"},
  {"major-version", CV, "Rules 4 (Versions): major other than 1, deleter only, read nothing else",
   "major 2 refused, deleter once, dl_tensor (on an inaccessible page) never read"},
  {"unknown-flag", CV, "Rules 4 (Versions): unknown flag bits refused, deleter called",
   "flags bit 40 refused, deleter once"},
  {"unknown-dtype", CV | CL, "Rules 4 and 10: unknown dtype code refused, deleter called",
   "dtype code 99 (version 1.99) refused, deleter once"},
  {"unknown-device", CV | CL, "Rules 4 and 10: unknown device type refused, deleter called",
   "device type 99 refused, deleter once"},
  {"newer-minor", CV, "Rules 4 (Versions): a newer minor with only known values is usable",
   "version 1.99 with known values accepted"},
  {"invalid-shape", CV | CL, "Rules 7 and 2: negative extents invalid; a rejected import still deletes",
   "shape [2,-3] refused, deleter once"},
  {"struct-layout", CV | CL, "Structs: the two managed structs are laid out differently",
   "a struct ending at an inaccessible page read within its own 64 / 80 bytes"},
  {"versioned-legacy", PL | CL, "Structs / Rules 5: versioned and legacy carry the same tensor",
   "the legacy export (import) of a tensor matches the versioned one"},
  {"dtypes", PV | PL | CV | CL, "Data type codes: code, bits, lanes; native byte order",
   "every dtype the subject supports of int8 uint16 int64 float16 bfloat16 float64 complex64 bool "
   "carries its values"},
};
#define NCHECKS ((int)(sizeof(kChecks) / sizeof(kChecks[0])))

static dlpc_case g_cases[NCHECKS * 4];
static int g_case_count = 0;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void build_catalogue(void) {
  static const unsigned kBits[4] = {PV, PL, CV, CL};
  for (int c = 0; c < NCHECKS; ++c) {
    for (int k = 0; k < 4; ++k) {
      if (!(kChecks[c].roles & kBits[k])) continue;
      dlpc_case* out = &g_cases[g_case_count];
      out->id = g_case_count;
      out->check = kChecks[c].name;
      out->role = k < 2 ? DLPC_ROLE_PRODUCER : DLPC_ROLE_CONSUMER;
      out->protocol = (k % 2) ? DLPC_PROTOCOL_LEGACY : DLPC_PROTOCOL_VERSIONED;
      out->rule = kChecks[c].rule;
      out->passes = kChecks[c].passes;
      ++g_case_count;
    }
  }
}

int32_t dlpc_case_count(void) {
  pthread_once(&g_once, build_catalogue);
  return g_case_count;
}

const dlpc_case* dlpc_case_get(int32_t i) {
  pthread_once(&g_once, build_catalogue);
  return (i >= 0 && i < g_case_count) ? &g_cases[i] : NULL;
}

/* ---- the cases ------------------------------------------------------------------------------ */

static const DLDataType kF32 = {kDLFloat, 32, 1};

static int run_dtypes(const dlpc_subject* s, const dlpc_case* c, dlpc_result* r) {
  static const DLDataType kTypes[] = {{kDLInt, 8, 1},   {kDLUInt, 16, 1},   {kDLInt, 64, 1},
                                      {kDLFloat, 16, 1}, {kDLBfloat, 16, 1}, {kDLFloat, 64, 1},
                                      {kDLComplex, 64, 1}, {kDLBool, 8, 1}};
  static const char* kNames[] = {"int8", "uint16", "int64", "float16", "bfloat16", "float64", "complex64", "bool"};
  char passed[256] = "", skipped[256] = "";
  int npass = 0;
  int64_t shape[2] = {2, 3};
  for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; ++i) {
    desc d = make_desc(kTypes[i], 2, shape);
    dlpc_result one;
    memset(&one, 0, sizeof one);
    if (c->role == DLPC_ROLE_PRODUCER)
      produce_case(s, c, &d, 0, NULL, &one);
    else
      consume_case(s, c->protocol == DLPC_PROTOCOL_LEGACY, &d, EXPECT_ACCEPT, 0, &one, NULL);
    if (one.outcome == DLPC_FAIL) {
      say(r, DLPC_FAIL, "%s: %s", kNames[i], one.reason);
      return r->outcome;
    }
    char* list = one.outcome == DLPC_PASS ? passed : skipped;
    if (one.outcome == DLPC_PASS) ++npass;
    strncat(list, list[0] ? " " : "", sizeof passed - strlen(list) - 1);
    strncat(list, kNames[i], sizeof passed - strlen(list) - 1);
  }
  if (!npass) say(r, DLPC_SKIP, "no dtype supported (%s)", skipped);
  else say(r, DLPC_PASS, "%s carry their values%s%s%s", passed, skipped[0] ? "; not supported: " : "",
           skipped, skipped[0] ? "" : "");
  return r->outcome;
}

static int run_versioned_legacy(const dlpc_subject* s, const dlpc_case* c, dlpc_result* r) {
  int64_t shape[2] = {3, 4};
  desc d = make_desc(kF32, 2, shape);
  d.has_strides = 1;
  d.strides[0] = 1;
  d.strides[1] = 3; /* column-major: a layout the two structs must both carry */
  if (c->role == DLPC_ROLE_CONSUMER) {
    if (!s->consume_legacy || !s->consume_versioned) {
      say(r, DLPC_SKIP, "the subject lacks a %s consumer", s->consume_legacy ? "versioned" : "legacy");
      return r->outcome;
    }
    dlpc_result rv, rl;
    memset(&rv, 0, sizeof rv);
    memset(&rl, 0, sizeof rl);
    consume_case(s, 0, &d, EXPECT_ACCEPT, 0, &rv, NULL);
    consume_case(s, 1, &d, EXPECT_ACCEPT, 0, &rl, NULL);
    if (rv.outcome != rl.outcome) {
      say(r, DLPC_FAIL, "versioned: %s; legacy: %s", rv.reason, rl.reason);
    } else if (rv.outcome != DLPC_PASS) {
      say(r, rv.outcome, "versioned: %s; legacy: %s", rv.reason, rl.reason);
    } else {
      say(r, DLPC_PASS, "a column-major [3,4] read the same through both structs");
    }
    return r->outcome;
  }
  if (!s->produce_legacy || !s->produce_versioned) {
    say(r, DLPC_SKIP, "the subject lacks a %s producer", s->produce_legacy ? "versioned" : "legacy");
    return r->outcome;
  }
  /* One export at a time, each checked against the same request and released before the next,
   * so the live count sees one tensor each time. */
  produced p;
  dlpc_result part[2];
  for (int legacy = 0; legacy < 2; ++legacy) {
    memset(&part[legacy], 0, sizeof part[legacy]);
    produce(s, c, legacy, &d, &p);
    if (p.rc == DLPC_UNSUPPORTED || p.rc == DLPC_REFUSED) {
      say(&part[legacy], DLPC_SKIP, "not exported: %s", p.message);
      continue;
    }
    if (p.rc != DLPC_OK) {
      say(&part[legacy], DLPC_FAIL, "export failed: %s", p.message);
      continue;
    }
    if (p.problem[0]) say(&part[legacy], DLPC_FAIL, "%s", p.problem);
    else say(&part[legacy], DLPC_PASS, "ok");
    release_produced(s, &p, 0, &part[legacy]);
  }
  if (part[0].outcome == DLPC_PASS && part[1].outcome == DLPC_PASS) {
    say(r, DLPC_PASS, "a column-major [3,4] exported the same through both structs");
  } else {
    int outcome = (part[0].outcome == DLPC_FAIL || part[1].outcome == DLPC_FAIL) ? DLPC_FAIL : DLPC_SKIP;
    say(r, outcome, "versioned: %.200s; legacy: %.200s", part[0].reason, part[1].reason);
  }
  return r->outcome;
}

int dlpc_run_case(const dlpc_subject* s, int32_t i, dlpc_result* r) {
  const dlpc_case* c = dlpc_case_get(i);
  if (!c || !s || !r) return -1;
  memset(r, 0, sizeof *r);
  if (s->struct_size < DLPC_SUBJECT_BASE_SIZE || s->contract_version != DLPC_CONTRACT_VERSION) {
    say(r, DLPC_FAIL, "the subject's table has struct_size %llu / contract %u, the kit expects at least %zu / %d",
        (unsigned long long)s->struct_size, s->contract_version, DLPC_SUBJECT_BASE_SIZE, DLPC_CONTRACT_VERSION);
    return r->outcome;
  }
  int producer = c->role == DLPC_ROLE_PRODUCER;
  int legacy = c->protocol == DLPC_PROTOCOL_LEGACY;
  const char* k = c->check;
  int64_t s23[2] = {2, 3};
  desc d = make_desc(kF32, 2, s23);
  int expect = EXPECT_ACCEPT;
  int thread = 0;
  const char* note = NULL;
  extra_check extra = NULL;
  if (!strcmp(k, "deleter-once")) {
  } else if (!strcmp(k, "deleter-other-thread")) {
    thread = 1;
  } else if (!strcmp(k, "version-stamp")) {
    extra = extra_version;
  } else if (!strcmp(k, "strides-non-null")) {
    extra = extra_strides;
  } else if (!strcmp(k, "null-strides")) {
    d.minor = 1; /* a 1.1 producer may leave them NULL; kit_make leaves them NULL */
  } else if (!strcmp(k, "negative-strides")) {
    int64_t sh[2] = {3, 4};
    d = make_desc(kF32, 2, sh);
    d.has_strides = 1;
    d.strides[0] = -4;
    d.strides[1] = 1;
  } else if (!strcmp(k, "strided")) {
    int64_t sh[2] = {4, 2};
    d = make_desc(kF32, 2, sh);
    d.has_strides = 1;
    d.strides[0] = 4;
    d.strides[1] = 2;
  } else if (!strcmp(k, "extent-one-strides")) {
    int64_t sh[2] = {3, 1};
    d = make_desc(kF32, 2, sh);
    d.has_strides = 1;
    d.strides[0] = 1;
    d.strides[1] = 1000;
  } else if (!strcmp(k, "byte-offset")) {
    d.offset_elements = 5;
  } else if (!strcmp(k, "read-only")) {
    d.flags = RO;
    d.protect_data = 1;
    extra = extra_read_only;
    if (producer && legacy) {
      /* The legacy struct has no flags: a conforming producer refuses (or is asked in vain). */
      if (!s->produce_legacy) {
        say(r, DLPC_SKIP, "the subject has no legacy producer");
        return r->outcome;
      }
      produced p;
      produce(s, c, 1, &d, &p);
      if (p.rc == DLPC_REFUSED) {
        say(r, DLPC_PASS, "refused: %s", p.message);
      } else if (p.rc == DLPC_UNSUPPORTED) {
        say(r, DLPC_SKIP, "the subject cannot make a read-only tensor: %s", p.message);
      } else if (p.rc == DLPC_OK) {
        say(r, DLPC_FAIL, "a READ_ONLY tensor exported through the legacy struct, which cannot say so");
        dlpc_result rr;
        memset(&rr, 0, sizeof rr);
        release_produced(s, &p, 0, &rr);
      } else {
        say(r, DLPC_FAIL, "the export failed: %s", p.message);
      }
      return r->outcome;
    }
  } else if (!strcmp(k, "is-copied")) {
    d.flags = COPIED;
    extra = extra_copied;
  } else if (!strcmp(k, "subbyte-packed")) {
    int64_t sh[1] = {5};
    DLDataType i4 = {kDLInt, 4, 1};
    d = make_desc(i4, 1, sh);
  } else if (!strcmp(k, "subbyte-padded")) {
    int64_t sh[1] = {5};
    DLDataType u4 = {kDLUInt, 4, 1};
    d = make_desc(u4, 1, sh);
    d.flags = PADDED;
  } else if (!strcmp(k, "zero-dim")) {
    DLDataType f64 = {kDLFloat, 64, 1};
    d = make_desc(f64, 0, NULL);
    d.null_shape = 1;
    extra = extra_zero_dim;
  } else if (!strcmp(k, "zero-size")) {
    int64_t sh[2] = {0, 3};
    DLDataType i32 = {kDLInt, 32, 1};
    d = make_desc(i32, 2, sh);
    d.null_data = 1;
    extra = extra_zero_size;
    note = "NULL data";
  } else if (!strcmp(k, "alignment")) {
    d.misalign = 4;
    extra = extra_alignment;
    note = "data 4 bytes past a 256-byte boundary";
  } else if (!strcmp(k, "major-version")) {
    d.major = 2;
    d.minor = 0;
    d.poison_tensor = 1;
    expect = EXPECT_REFUSE;
    note = "dl_tensor not read";
  } else if (!strcmp(k, "unknown-flag")) {
    d.flags = (uint64_t)1 << 40;
    expect = EXPECT_REFUSE;
  } else if (!strcmp(k, "unknown-dtype")) {
    d.patch_code = 99;
    d.minor = 99;
    expect = EXPECT_REFUSE;
  } else if (!strcmp(k, "unknown-device")) {
    d.device_type = 99;
    expect = EXPECT_REFUSE;
  } else if (!strcmp(k, "newer-minor")) {
    d.minor = 99;
  } else if (!strcmp(k, "invalid-shape")) {
    d.patch_extent = -3;
    expect = EXPECT_REFUSE;
  } else if (!strcmp(k, "struct-layout")) {
    note = "struct read within its bounds";
  } else if (!strcmp(k, "versioned-legacy")) {
    return run_versioned_legacy(s, c, r);
  } else if (!strcmp(k, "dtypes")) {
    return run_dtypes(s, c, r);
  }
  if (producer) return produce_case(s, c, &d, thread, extra, r);
  return consume_case(s, legacy, &d, expect, thread, r, note);
}
