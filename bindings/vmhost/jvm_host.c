/* jvm_host.c - see jvm_host.h. */
#include "jvm_host.h"

#include <stdio.h>
#include <stdlib.h>

JavaVM* jvm_host_vm(const char* who, const char* class_path_var, const char* jni_lib_var) {
  JavaVM* vm = NULL;
  JavaVMInitArgs args;
  JavaVMOption options[3];
  JNIEnv* env = NULL;
  /* The JVM keeps the option strings: static, and one JVM per process. */
  static char class_path[8192], jni_lib[4096];
  const char* cp = getenv(class_path_var);
  const char* lib = getenv(jni_lib_var);
  jsize n = 0;
  if (JNI_GetCreatedJavaVMs(&vm, 1, &n) == JNI_OK && n == 1) return vm;
  if (cp == NULL || lib == NULL) {
    fprintf(stderr, "%s: set %s and %s to start a JVM\n", who, class_path_var, jni_lib_var);
    return NULL;
  }
  snprintf(class_path, sizeof class_path, "-Djava.class.path=%s", cp);
  snprintf(jni_lib, sizeof jni_lib, "-Ddlbridge.native.path=%s", lib);
  options[0].optionString = class_path;
  options[1].optionString = jni_lib;
  options[2].optionString = (char*)"-Xrs"; /* leave SIGINT/SIGTERM to the host */
  args.version = JNI_VERSION_1_8;
  args.nOptions = 3;
  args.options = options;
  args.ignoreUnrecognized = JNI_FALSE;
  if (JNI_CreateJavaVM(&vm, (void**)&env, &args) != JNI_OK) {
    fprintf(stderr, "%s: JNI_CreateJavaVM failed\n", who);
    return NULL;
  }
  return vm;
}

JNIEnv* jvm_host_env(JavaVM* vm, int* attached) {
  JNIEnv* env = NULL;
  if (attached != NULL) *attached = 0;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) == JNI_OK) return env;
  if ((*vm)->AttachCurrentThread(vm, (void**)&env, NULL) != JNI_OK) return NULL;
  if (attached != NULL) *attached = 1;
  return env;
}

void jvm_host_detach(JavaVM* vm, int attached) {
  if (attached) (*vm)->DetachCurrentThread(vm);
}

void jvm_host_exception_text(JNIEnv* env, const char* what, char* msg, size_t size) {
  jthrowable ex = (*env)->ExceptionOccurred(env);
  snprintf(msg, size, "%s", what);
  if (ex != NULL) {
    jclass obj;
    jmethodID to_string;
    jstring text;
    (*env)->ExceptionClear(env);
    obj = (*env)->FindClass(env, "java/lang/Object");
    to_string = (*env)->GetMethodID(env, obj, "toString", "()Ljava/lang/String;");
    text = (jstring)(*env)->CallObjectMethod(env, ex, to_string);
    if (text != NULL && !(*env)->ExceptionCheck(env)) {
      const char* s = (*env)->GetStringUTFChars(env, text, NULL);
      if (s != NULL) {
        snprintf(msg, size, "%.*s", (int)(size - 1), s);
        (*env)->ReleaseStringUTFChars(env, text, s);
      }
    }
    (*env)->ExceptionClear(env);
    (*env)->DeleteLocalRef(env, ex);
  }
}

jlong jvm_host_static_long(JavaVM* vm, jclass cls, jmethodID method) {
  JNIEnv* env = jvm_host_env(vm, NULL);
  jlong n;
  if (env == NULL) return -1;
  n = (*env)->CallStaticLongMethod(env, cls, method);
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionDescribe(env);
    (*env)->ExceptionClear(env);
    return -1;
  }
  return n;
}

jclass jvm_host_class(JNIEnv* env, const char* name) {
  jclass cls = (*env)->FindClass(env, name);
  jclass global;
  if (cls == NULL) {
    (*env)->ExceptionDescribe(env);
    (*env)->ExceptionClear(env);
    return NULL;
  }
  global = (jclass)(*env)->NewGlobalRef(env, cls);
  (*env)->DeleteLocalRef(env, cls);
  return global;
}
