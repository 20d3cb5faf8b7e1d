/* adapter_csharp.c - the C# adapter as a native library any host can load: it embeds Mono
 * (bindings/vmhost/mono_host.c), loads the adapter's assembly named by DLBRIDGE_CSHARP_ADAPTER
 * (DLBridge.Adapter.exe: Agent.cs, Subject.cs and the C# host, over the binding's public API) and
 * returns the tables that assembly builds, reverse P/Invoke function pointers into it:
 *  - interop_agent_get(): the interop matrix's C# agent (DLBridge.Interop.Agent.Table());
 *  - dlpack_conformance_subject(): the conformance kit's C# subject
 *    (DLBridge.Conformance.Subject.Table()); run the kit with --no-fault-guard.
 * DLBridge.dll and libdlbridge_csharp.so are found through MONO_PATH and LD_LIBRARY_PATH. */
#include <stddef.h>

#include "dlpack_conformance.h"
#include "interop_agent.h"
#include "mono_host.h"

#define ADAPTER_ASSEMBLY "DLBRIDGE_CSHARP_ADAPTER"

DLPC_EXPORT const interop_agent* interop_agent_get(void) {
  static const interop_agent* table = NULL;
  if (table == NULL)
    table = (const interop_agent*)mono_host_call_pointer("csharp agent", ADAPTER_ASSEMBLY,
                                                         "DLBridge.Interop", "Agent", "Table");
  return table;
}

DLPC_EXPORT const dlpc_subject* dlpack_conformance_subject(void) {
  static const dlpc_subject* table = NULL;
  if (table == NULL)
    table = (const dlpc_subject*)mono_host_call_pointer("csharp subject", ADAPTER_ASSEMBLY,
                                                        "DLBridge.Conformance", "Subject", "Table");
  return table;
}
