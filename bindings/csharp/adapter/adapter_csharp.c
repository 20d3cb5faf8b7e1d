/* adapter_csharp.c - the C# adapter as a native library any host can load: it embeds Mono
 * (bindings/vmhost/mono_host.c), loads the adapter's assembly named by DLBRIDGE_CSHARP_ADAPTER
 * (DLBridge.Adapter.exe: Subject.cs and the C# host, over the binding's public API) and exports
 * dlpack_conformance_subject(), the adapter's one table that assembly builds (reverse P/Invoke
 * function pointers into it, DLBridge.Conformance.Subject.Table()): the conformance kit's C#
 * subject (run the kit with --no-fault-guard) and, through its exchange extension, the interop
 * matrix's C# side. DLBridge.dll and libdlbridge_csharp.so are found through MONO_PATH and
 * LD_LIBRARY_PATH. */
#include <stddef.h>

#include "dlpack_conformance.h"
#include "mono_host.h"

#define ADAPTER_ASSEMBLY "DLBRIDGE_CSHARP_ADAPTER"

DLPC_EXPORT const dlpc_subject* dlpack_conformance_subject(void) {
  static const dlpc_subject* table = NULL;
  if (table == NULL)
    table = (const dlpc_subject*)mono_host_call_pointer("csharp adapter", ADAPTER_ASSEMBLY,
                                                        "DLBridge.Conformance", "Subject", "Table");
  return table;
}
