/* interop_runner.h - the cross-language interop matrix (tests/interop/README.md), run over the
 * tables of the languages under test. Each language takes part through its adapter's one table,
 * the conformance kit's dlpc_subject (conformance/include/dlpack_conformance.h) with the exchange
 * extension filled in: exchange_produce makes and exports a case with the binding's public API,
 * and the kit's consume_versioned / consume_legacy and release import it, report what the
 * binding sees, and drop it. The runner checks every report against the case, so the rules of
 * what a consumer must see are written here once, not in every language. Used by every host. */
#ifndef DLBRIDGE_INTEROP_RUNNER_H_
#define DLBRIDGE_INTEROP_RUNNER_H_

#include "dlpack_conformance.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The case table (interop_cases.c). */
extern const dlpc_exchange_case interop_cases[];
extern const int interop_case_count;

/* Element i of every base tensor: integers i*3-4, unsigned i*3+1, floats (i*3-4)/2 (exact in
 * every dtype used). Producers in other languages mirror this one rule. */
double interop_base_value(int64_t dtype_code, int64_t i);

/* Loads the adapter library at `path` (dlopen, local symbols) and returns its table, or NULL
 * with a message on stderr when it has none or its table lacks the exchange extension or a
 * consumer. The library stays loaded; the table is the library's. */
const dlpc_subject* interop_load_subject(const char* path);

/* Checks that `subject` (a table a host made itself) can take part; NULL-safe. Returns it, or
 * NULL with a message on stderr naming `who`. */
const dlpc_subject* interop_check_subject(const dlpc_subject* subject, const char* who);

/* Runs every ordered pair of `subjects` (producer, consumer), each in both protocols (versioned,
 * legacy), over every case; only pairs with at least one side whose language is `must_include`
 * when that is not NULL. `host` names the host in the table. With `sabotage` non-zero every
 * expected checksum is off by one, so that every cell must FAIL (the test of the test). Prints
 * the table and, as its last line, "N passed, N failed" (with sabotage: cells that failed as
 * they must count as passed). Returns the number of failed cells. */
int interop_run_matrix(const dlpc_subject* const* subjects, int count, const char* host,
                       const char* must_include, int sabotage);

#ifdef __cplusplus
}
#endif

#endif /* DLBRIDGE_INTEROP_RUNNER_H_ */
