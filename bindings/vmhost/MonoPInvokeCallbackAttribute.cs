// Compiled into each assembly whose static methods native code calls through function pointers
// (the C# adapter's agent and subject, bindings/csharp/adapter): Mono recognises this attribute by
// name on such a method (required under full AOT; it documents the entry points under the JIT).
using System;

namespace DLBridge.VmHost {
  [AttributeUsage(AttributeTargets.Method)]
  internal sealed class MonoPInvokeCallbackAttribute : Attribute {
    public MonoPInvokeCallbackAttribute(Type delegateType) { DelegateType = delegateType; }
    public Type DelegateType { get; private set; }
  }
}
