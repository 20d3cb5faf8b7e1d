// Native.cs - the hand-written side of the native boundary: the array struct SWIG's wrappers
// pass and the exception hook (native/dlbridge_csharp.c) that turns a core status into an
// exception.
using System;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

namespace DLBridge {
  /// <summary>An array argument as it crosses to C (dlbx_csharp_array): the pinned elements and
  /// their count, -1 for a null array.</summary>
  [StructLayout(LayoutKind.Sequential)]
  internal unsafe struct NativeArray {
    public long Length;
    public void* Data;

    public NativeArray(long length, void* data) {
      Length = length;
      Data = data;
    }
  }

  /// <summary>The one place a native failure becomes an exception (Errors.For): the
  /// native side calls back while the P/Invoke is running, the exception is kept for the calling
  /// thread, and the C# wrapper throws it when the call returns.</summary>
  internal static class NativeExceptions {
    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    private delegate void Callback(int status, IntPtr message);

    // Kept alive for the life of the process: native code holds its function pointer.
    private static readonly Callback callback = OnException;
    [ThreadStatic] private static Exception pending;
    private static int pendingCount;

    internal static void Register() {
      NativeMethods.dlbx_csharp_register_exception(callback);
    }

    private static unsafe void OnException(int status, IntPtr message) {
      string text = Utf8(message);
      if (pending == null) Interlocked.Increment(ref pendingCount);
      pending = Errors.For(status, text);
    }

    internal static unsafe string Utf8(IntPtr text) {
      if (text == IntPtr.Zero) return null;
      byte* p = (byte*)text;
      int n = 0;
      while (p[n] != 0) n++;
      return Encoding.UTF8.GetString(p, n);
    }

    /// <summary>True when some thread has an exception waiting (a plain read: the fast path of
    /// every call).</summary>
    internal static bool AnyPending {
      get { return Volatile.Read(ref pendingCount) != 0; }
    }

    internal static void ThrowPending() {
      Exception e = pending;
      if (e == null) return;
      pending = null;
      Interlocked.Decrement(ref pendingCount);
      throw e;
    }
  }

  /// <summary>The one entry point of native/dlbridge_csharp.c (dlbridge_csharp.h).</summary>
  internal static class NativeMethods {
    [DllImport(NativeLibrary.Name, CallingConvention = CallingConvention.Cdecl)]
    internal static extern void dlbx_csharp_register_exception(Delegate callback);
  }

  /// <summary>The native library, loaded (or found missing) once, before the first call into it:
  /// every generated method calls <see cref="Check"/> first (typemaps_csharp.i). Nothing else
  /// calls into the library from a type initializer, so a missing library is one clear
  /// exception wherever the first call comes from, not nested TypeInitializationExceptions.</summary>
  internal static unsafe class NativeLibrary {
    internal const string Name = "dlbridge_csharp";

    // Static initializers only (no static constructor): the runtime may then run them when it
    // compiles the first method that reads these fields, and leave the check out of every call.
    // They never throw.
    private static readonly Exception missing = Load();

    /// <summary>The release engine's count of queued tokens (dlbx_release_queued), read in
    /// place; a zero of our own when the library is missing.</summary>
    internal static readonly long* Queued = QueuedCounter();

    // Registers the exception hook: the first call into the library, where a missing one shows.
    private static Exception Load() {
      try {
        NativeExceptions.Register();
        return null;
      } catch (DllNotFoundException e) {
        return e;
      } catch (EntryPointNotFoundException e) {
        return e;
      } catch (BadImageFormatException e) {
        return e;
      }
    }

    private static long* QueuedCounter() {
      if (missing == null) return (long*)DLBridgeNativePINVOKE.dlbx_release_queued();
      long* zero = (long*)Marshal.AllocHGlobal(sizeof(long));
      *zero = 0;
      return zero;
    }

    /// <summary>Throws when the native library could not be loaded.</summary>
    internal static void Check() {
      if (missing != null) throw Missing();
    }

    private static DllNotFoundException Missing() {
      return new DllNotFoundException(
          "DLBridge.dll could not load its native library libdlbridge_csharp.so (" + missing.Message + "). " +
          "Install the DLBridge NuGet package, which carries it in runtimes/linux-x64/native/ (a .NET project " +
          "copies it next to its output), or put libdlbridge_csharp.so next to DLBridge.dll or in a folder " +
          "on LD_LIBRARY_PATH; to build it from the dlbridge sources: meson setup build && ninja -C build " +
          "(docs/csharp.md).", missing);
    }
  }
}
