/* mono_host.h - Mono inside a native process, for the native libraries that present C# code
 * through a C table (the interop matrix's C# agent, the conformance kit's C# subject): start
 * Mono once, load an assembly, call a static method that returns the table's address.
 * Compiled into each such library (hidden symbols); it links libmono-2.0. */
#ifndef DLBRIDGE_MONO_HOST_H_
#define DLBRIDGE_MONO_HOST_H_

/* Starts Mono in this process unless it runs already (signal chaining on, so that inside a JVM
 * Mono's handlers forward the faults that are not in managed code to the handlers they
 * replaced), loads the assembly at the path held by the environment variable `assembly_var`,
 * and returns what the static method `name_space`.`class_name`.`method`() (an IntPtr) returns.
 * The assembly's dependencies (DLBridge.dll, libdlbridge_csharp.so) are found through
 * MONO_PATH and LD_LIBRARY_PATH. NULL on failure, after a line on stderr that starts with
 * `who`. */
void* mono_host_call_pointer(const char* who, const char* assembly_var, const char* name_space,
                             const char* class_name, const char* method);

#endif /* DLBRIDGE_MONO_HOST_H_ */
