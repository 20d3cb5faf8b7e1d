/* agent_csharp.c - the C# agent as a native library any host can load: it embeds Mono
 * (tests/vmhost/mono_host.c), loads the assembly named by INTEROP_CSHARP_ASSEMBLY
 * (InteropHost.exe, which holds the C# agent, tests/interop/csharp/Agent.cs) and returns the
 * table that DLBridge.Interop.Agent.Table() builds: reverse P/Invoke function pointers into the
 * C# agent. DLBridge.dll and libdlbridge_csharp.so are found through MONO_PATH and
 * LD_LIBRARY_PATH. */
#include <stddef.h>

#include "interop_agent.h"
#include "mono_host.h"

#if defined(__GNUC__)
#define AGENT_EXPORT __attribute__((visibility("default")))
#else
#define AGENT_EXPORT
#endif

static const interop_agent* g_table = NULL;

AGENT_EXPORT const interop_agent* interop_agent_get(void) {
  if (g_table == NULL)
    g_table = (const interop_agent*)mono_host_call_pointer("csharp agent", "INTEROP_CSHARP_ASSEMBLY",
                                                           "DLBridge.Interop", "Agent", "Table");
  return g_table;
}
