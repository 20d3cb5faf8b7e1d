/* jvm_host.h - a JVM inside a native process, for the native libraries that present Java code
 * through a C table (the interop matrix's Java agent, the conformance kit's Java subject): find
 * the JVM the process runs or start one, get a JNIEnv on any thread, turn a pending Java
 * exception into text. Compiled into each such library (hidden symbols); it links libjvm. */
#ifndef DLBRIDGE_JVM_HOST_H_
#define DLBRIDGE_JVM_HOST_H_

#include <jni.h>
#include <stddef.h>

/* The JVM of this process: the one already running (this library loaded by a Java program), or
 * a new one (JNI_CreateJavaVM) whose class path is the value of the environment variable
 * `class_path_var` and whose dlbridge JNI library (-Ddlbridge.native.path) is the value of
 * `jni_lib_var`. SIGINT and SIGTERM stay the host's (-Xrs). NULL on failure, after a line on
 * stderr that starts with `who`. */
JavaVM* jvm_host_vm(const char* who, const char* class_path_var, const char* jni_lib_var);

/* A JNIEnv for the calling thread, attaching it to `vm` if it is not yet; *attached (may be
 * NULL) is set to 1 when this call attached it (the caller then detaches it with
 * jvm_host_detach when its work is done, e.g. on a thread that is about to end). NULL when
 * the thread cannot be attached. */
JNIEnv* jvm_host_env(JavaVM* vm, int* attached);

/* Detaches the calling thread if `attached` (as set by jvm_host_env). */
void jvm_host_detach(JavaVM* vm, int attached);

/* Copies the pending Java exception's toString() into msg (or `what` when there is none or it
 * cannot be read) and clears it. */
void jvm_host_exception_text(JNIEnv* env, const char* what, char* msg, size_t size);

/* cls.method(), a static method returning long (a count), on the calling thread; -1 (after
 * printing the exception on stderr) when it throws or the thread cannot be attached. */
jlong jvm_host_static_long(JavaVM* vm, jclass cls, jmethodID method);

/* A global reference to class `name` (JNI form, "org/dlbridge/..."), or NULL after printing
 * the exception on stderr. */
jclass jvm_host_class(JNIEnv* env, const char* name);

#endif /* DLBRIDGE_JVM_HOST_H_ */
