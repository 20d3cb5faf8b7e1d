// Sanitizer defaults for the opencl test programs, so that an ASan/LSan build of the suite
// needs nothing from the CI scripts. The environment (ASAN_OPTIONS, LSAN_OPTIONS) still wins
// for any option it sets. Both settings are about the OpenCL implementation, not dlbridge:
//  - PoCL compiles kernels with LLVM at the first clBuildProgram of a fresh kernel cache and
//    leaks a little there (a bare OpenCL program that builds one kernel and releases every
//    object leaks ~1.4 MB under LSan); dlbridge keeps its contexts and programs for the life of
//    the process, which leaves ~2.5 KB of that unreachable.
//  - LeakSanitizer's scan of dynamic TLS (recorded by intercepting __tls_get_addr) can fault on
//    PoCL's worker threads ("Tracer caught signal 11" in LLVM 14's runtime on glibc 2.36); TLS
//    is still scanned without the interceptor.
#if defined(__SANITIZE_ADDRESS__)
#define DLB_TEST_WITH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DLB_TEST_WITH_ASAN 1
#endif
#endif

#if defined(DLB_TEST_WITH_ASAN)
extern "C" {

__attribute__((visibility("default"), used)) const char* __asan_default_options() {
  return "intercept_tls_get_addr=0";
}

__attribute__((visibility("default"), used)) const char* __lsan_default_suppressions() {
  return "leak:libpocl.so\nleak:libLLVM\n";
}

}  // extern "C"
#endif
