/* The Java module: dlbridge.i includes typemaps_java.i itself; java_memory.i (bindings/java/native)
 * adds what JNI must do for Java: direct buffers over native memory, arrays pinned for copies. */
%module(jniclassname="DLBridgeJNI") DLBridgeNative
%pragma(java) moduleclassmodifiers="final class"
%pragma(java) jniclassclassmodifiers="final class"
%pragma(java) jniclasscode=%{
  static {
    NativeLoader.load();
  }
%}
%include "dlbridge.i"
%include "java_memory.i"
