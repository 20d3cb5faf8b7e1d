/* dlbridge's C# binding as a DLPack conformance subject: exports dlpack_conformance_subject() by
 * embedding Mono (tests/vmhost/mono_host.c, shared with the interop matrix's C# agent), loading
 * the assembly named by DLPC_CSHARP_ASSEMBLY (ConformanceSubject.dll, built from Subject.cs with
 * the binding's public API) and returning the table DLBridge.Conformance.Subject.Table() builds:
 * reverse P/Invoke function pointers into it. DLBridge.dll and libdlbridge_csharp.so are found
 * through MONO_PATH and LD_LIBRARY_PATH. Run with dlpack-conformance --no-fault-guard. */
#include <stddef.h>

#include "dlpack_conformance.h"
#include "mono_host.h"

DLPC_EXPORT const dlpc_subject* dlpack_conformance_subject(void) {
  static const dlpc_subject* table = NULL;
  if (table == NULL)
    table = (const dlpc_subject*)mono_host_call_pointer("csharp subject", "DLPC_CSHARP_ASSEMBLY",
                                                        "DLBridge.Conformance", "Subject", "Table");
  return table;
}
