/* runner.c - the shared C runner of the interop matrix and its case table, compiled into the Go
 * host by cgo (cgo compiles only the C files of the package's own folder). */
#include "interop_runner.c"
#include "interop_cases.c"
