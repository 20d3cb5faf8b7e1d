// Compiled into each assembly whose static methods native code calls through function pointers
// (tests/interop's C# agent, conformance/subjects/csharp): Mono recognises this attribute by
// name on such a method (required under full AOT; it documents the entry points under the JIT).
using System;

namespace DLBridge.VmHost {
  [AttributeUsage(AttributeTargets.Method)]
  internal sealed class MonoPInvokeCallbackAttribute : Attribute {
    public MonoPInvokeCallbackAttribute(Type delegateType) { DelegateType = delegateType; }
    public Type DelegateType { get; private set; }
  }
}
