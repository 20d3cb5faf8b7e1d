/* interop_runner.h - runs the interop matrix over a set of loaded agents (used by every host). */
#ifndef DLBRIDGE_INTEROP_RUNNER_H_
#define DLBRIDGE_INTEROP_RUNNER_H_

#include "interop_agent.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Loads the agent library at `path` (dlopen, local symbols) and returns its table, or NULL
 * with a message on stderr. The library stays loaded. */
const interop_agent* interop_load_agent(const char* path);

/* Runs every ordered pair of `agents` (producer, consumer), each in both protocols (versioned,
 * legacy), over every case; only pairs with at least one side named `must_include` when that is
 * not NULL. `host` names the host in the table. With `sabotage` non-zero every expected checksum
 * is off by one, so that every cell must FAIL (the test of the test). Prints the table and, as
 * its last line, "N passed, N failed" (with sabotage: cells that failed as they must count as
 * passed). Returns the number of failed cells. */
int interop_run_matrix(const interop_agent* const* agents, int count, const char* host,
                       const char* must_include, int sabotage);

#ifdef __cplusplus
}
#endif

#endif /* DLBRIDGE_INTEROP_RUNNER_H_ */
