/* The Java module: dlbridge.i includes typemaps_java.i itself. */
%module(jniclassname="DLBridgeJNI") DLBridgeNative
%pragma(java) moduleclassmodifiers="final class"
%pragma(java) jniclassclassmodifiers="final class"
%pragma(java) jniclasscode=%{
  static {
    NativeLoader.load();
  }
%}
%include "dlbridge.i"
