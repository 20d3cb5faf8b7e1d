/* The C# module: dlbridge.i includes typemaps_csharp.i itself. Generated as internal classes of
 * namespace DLBridge (DLBridgeNative, DLBridgeNativePINVOKE); the public API is src/*.cs. */
%module(imclassname="DLBridgeNativePINVOKE") DLBridgeNative
%pragma(csharp) moduleclassmodifiers="internal static unsafe class"
%pragma(csharp) imclassclassmodifiers="internal unsafe class"
%include "dlbridge.i"
