/* agent_csharp.c - the C# agent as a native library any host can load: it embeds Mono
 * (mono_jit_init), loads the assembly named by INTEROP_CSHARP_ASSEMBLY (InteropHost.exe, which
 * holds the C# agent, tests/interop/csharp/Agent.cs) and returns the table that
 * DLBridge.Interop.Agent.Table() builds: reverse P/Invoke function pointers into the C# agent.
 * DLBridge.dll and libdlbridge_csharp.so are found through MONO_PATH and LD_LIBRARY_PATH.
 *
 * Signal chaining is on (mono_set_signal_chaining) so that, loaded into a JVM, Mono's handlers
 * forward the faults that are not in managed code to the handlers they replaced (HotSpot's). */
#include <mono/jit/jit.h>
#include <mono/metadata/assembly.h>
#include <mono/metadata/class.h>
#include <mono/metadata/mono-config.h>
#include <mono/metadata/object.h>
#include <mono/metadata/threads.h>
#include <stdio.h>
#include <stdlib.h>

#include "interop_agent.h"

#if defined(__GNUC__)
#define AGENT_EXPORT __attribute__((visibility("default")))
#else
#define AGENT_EXPORT
#endif

static const interop_agent* g_table = NULL;

AGENT_EXPORT const interop_agent* interop_agent_get(void) {
  const char* path = getenv("INTEROP_CSHARP_ASSEMBLY");
  MonoDomain* domain;
  MonoAssembly* assembly;
  MonoClass* klass;
  MonoMethod* method;
  MonoObject* exc = NULL;
  MonoObject* result;
  if (g_table != NULL) return g_table;
  if (path == NULL) {
    fprintf(stderr, "csharp agent: set INTEROP_CSHARP_ASSEMBLY to InteropHost.exe\n");
    return NULL;
  }
  mono_set_signal_chaining(1);
  mono_config_parse(NULL);
  domain = mono_jit_init("interop");
  if (domain == NULL) {
    fprintf(stderr, "csharp agent: mono_jit_init failed\n");
    return NULL;
  }
  assembly = mono_domain_assembly_open(domain, path);
  if (assembly == NULL) {
    fprintf(stderr, "csharp agent: cannot load %s\n", path);
    return NULL;
  }
  klass = mono_class_from_name(mono_assembly_get_image(assembly), "DLBridge.Interop", "Agent");
  method = klass != NULL ? mono_class_get_method_from_name(klass, "Table", 0) : NULL;
  if (method == NULL) {
    fprintf(stderr, "csharp agent: no DLBridge.Interop.Agent.Table() in %s\n", path);
    return NULL;
  }
  result = mono_runtime_invoke(method, NULL, NULL, &exc);
  if (exc != NULL || result == NULL) {
    fprintf(stderr, "csharp agent: Agent.Table() threw\n");
    return NULL;
  }
  g_table = *(const interop_agent* const*)mono_object_unbox(result);
  return g_table;
}
