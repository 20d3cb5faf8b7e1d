/* dlbridge_go.i - the Go module file for dlbridge.i (see generators/swig/generate_go.sh).
 * The package finds the installed C library through pkg-config, so that `go build` needs only
 * Go, a C compiler and pkg-config. */
%module dlbridge
%insert(cgo_comment_typedefs) %{
#cgo pkg-config: dlbridge
%}
%include "dlbridge.i"

/* ---- compact tensors of up to four dimensions, every argument by value ----------------------
 * The same two calls as dlb_tensor_allocate and dlbx_tensor_wrap (dlbridge.i) for the common case,
 * a compact row-major tensor of at most DLBX_GO_EXTENTS_BY_VALUE dimensions, with the extents as
 * scalars: a Go slice given to a cgo call costs the call a heap allocation (cgo makes every
 * pointer argument escape) and cgo's check of the memory it points to, which made these cycles
 * about 80 ns slower (bindings/go/bench_test.go; docs/go.md has the numbers). The package calls
 * them behind Allocate and Wrap, and the general functions for everything else. The first `rank`
 * extents are read; a rank outside 0..4 reaches the core without a shape, which refuses it. */
%inline %{
#define DLBX_GO_EXTENTS_BY_VALUE 4
static dlb_status dlbx_go_allocate_compact(DLDevice device, DLDataType dtype, int32_t rank,
                                           int64_t e0, int64_t e1, int64_t e2, int64_t e3,
                                           uint64_t flags, DLManagedTensorVersioned** out,
                                           dlb_error* error) {
  const int64_t shape[DLBX_GO_EXTENTS_BY_VALUE] = {e0, e1, e2, e3};
  return dlb_tensor_allocate(device, dtype, rank,
                             rank >= 0 && rank <= DLBX_GO_EXTENTS_BY_VALUE ? shape : NULL, NULL,
                             flags, out, error);
}
static dlb_status dlbx_go_wrap_compact(void* data, uint64_t buffer_size, int32_t rank, int64_t e0,
                                       int64_t e1, int64_t e2, int64_t e3, DLDevice device,
                                       DLDataType dtype, uint64_t byte_offset, uint64_t flags,
                                       int64_t release_token, DLManagedTensorVersioned** out,
                                       dlb_error* error) {
  const int64_t shape[DLBX_GO_EXTENTS_BY_VALUE] = {e0, e1, e2, e3};
  return dlbx_tensor_wrap(data, buffer_size, rank,
                          rank >= 0 && rank <= DLBX_GO_EXTENTS_BY_VALUE ? shape : NULL, NULL,
                          device, dtype, byte_offset, flags, release_token, out, error);
}
%}
%newobject dlbx_go_allocate_compact;
%newobject dlbx_go_wrap_compact;
