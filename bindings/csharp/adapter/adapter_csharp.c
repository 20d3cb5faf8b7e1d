/* adapter_csharp.c - the C# adapter as a native library any host can load: it embeds Mono
 * (bindings/vmhost/mono_host.c), loads the assembly named by DLBRIDGE_CSHARP_ADAPTER
 * (DLBridge.Adapter.exe) and exports the table it builds (Subject.cs): the conformance kit's C#
 * subject (run the kit with --no-fault-guard) and the interop matrix's C# side. DLBridge.dll and
 * libdlbridge_csharp.so are found through MONO_PATH and LD_LIBRARY_PATH. */
#include <stddef.h>

#include "dlpack_conformance.h"
#include "mono_host.h"

DLPC_EXPORT const dlpc_subject* dlpack_conformance_subject(void) {
  static const dlpc_subject* table = NULL;
  if (table == NULL)
    table = (const dlpc_subject*)mono_host_call_pointer("csharp adapter", "DLBRIDGE_CSHARP_ADAPTER",
                                                        "DLBridge.Conformance", "Subject", "Table");
  return table;
}
