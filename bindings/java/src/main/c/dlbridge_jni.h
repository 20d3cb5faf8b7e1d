/* dlbridge_jni.h - shared by the SWIG wrapper (through typemaps_java.i) and dlbridge_jni.c. */
#ifndef DLBRIDGE_JNI_H_
#define DLBRIDGE_JNI_H_

#include <jni.h>
#include <stdint.h>

/* Raises org.dlbridge.DLPackException(status, message) in `env`. If the class or its
 * constructor cannot be had, the JVM's own error (NoClassDefFoundError, ...) stays pending. */
__attribute__((visibility("hidden"))) void dlb_java_throw_status(JNIEnv* env, int32_t status,
                                                                 const char* message);

#endif /* DLBRIDGE_JNI_H_ */
