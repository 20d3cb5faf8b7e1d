/* mono_host.c - see mono_host.h. */
#include "mono_host.h"

#include <mono/jit/jit.h>
#include <mono/metadata/appdomain.h>
#include <mono/metadata/assembly.h>
#include <mono/metadata/class.h>
#include <mono/metadata/mono-config.h>
#include <mono/metadata/object.h>
#include <mono/metadata/threads.h>
#include <stdio.h>
#include <stdlib.h>

void* mono_host_call_pointer(const char* who, const char* assembly_var, const char* name_space,
                             const char* class_name, const char* method_name) {
  const char* path = getenv(assembly_var);
  MonoDomain* domain = mono_get_root_domain();
  MonoAssembly* assembly;
  MonoClass* klass;
  MonoMethod* method;
  MonoObject* exc = NULL;
  MonoObject* result;
  if (path == NULL) {
    fprintf(stderr, "%s: set %s to the assembly to load\n", who, assembly_var);
    return NULL;
  }
  if (domain == NULL) {
    mono_set_signal_chaining(1);
    mono_config_parse(NULL);
    domain = mono_jit_init(who);
    if (domain == NULL) {
      fprintf(stderr, "%s: mono_jit_init failed\n", who);
      return NULL;
    }
  } else {
    /* Mono runs already (a second library, or a Mono host): this thread may be a new one. */
    mono_thread_attach(domain);
  }
  assembly = mono_domain_assembly_open(domain, path);
  if (assembly == NULL) {
    fprintf(stderr, "%s: cannot load %s\n", who, path);
    return NULL;
  }
  klass = mono_class_from_name(mono_assembly_get_image(assembly), name_space, class_name);
  method = klass != NULL ? mono_class_get_method_from_name(klass, method_name, 0) : NULL;
  if (method == NULL) {
    fprintf(stderr, "%s: no %s.%s.%s() in %s\n", who, name_space, class_name, method_name, path);
    return NULL;
  }
  result = mono_runtime_invoke(method, NULL, NULL, &exc);
  if (exc != NULL || result == NULL) {
    fprintf(stderr, "%s: %s.%s() threw\n", who, class_name, method_name);
    return NULL;
  }
  return *(void* const*)mono_object_unbox(result);
}
