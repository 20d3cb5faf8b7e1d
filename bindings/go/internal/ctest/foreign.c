/* foreign.c - the one foreign DLPack producer and consumer of the bindings' tests
 * (tests/foreign/foreign_dlpack.c: no dlbridge inside), compiled into this package: cgo compiles
 * only the C files of a package's own folder. ctest.go puts tests/foreign on the include path. */
#include "foreign_dlpack.c"
