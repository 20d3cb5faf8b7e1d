/* The Java module: Java typemaps first, then the language-neutral interface. */
%module(jniclassname="DLBridgeJNI") DLBridgeNative
%pragma(java) moduleclassmodifiers="final class"
%pragma(java) jniclassclassmodifiers="final class"
%pragma(java) jniclasscode=%{
  static {
    NativeLoader.load();
  }
%}
%include "typemaps_java.i"
%include "dlbridge.i"
