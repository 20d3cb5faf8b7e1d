// The channel functions where there is no memfd and no SCM_RIGHTS (every system but Linux): they
// exist, so that the exported ABI is the same everywhere, and say why they cannot work.
#if !defined(__linux__)
#include "../internal.hpp"

struct dlb_channel {
  int unused;
};

namespace {
int unsupported(dlb_error* error) {
  return dlb::fail(error, DLB_ERR_UNSUPPORTED, "sharing tensors across processes needs Linux");
}
template <typename T>
int unsupported_out(T** out, dlb_error* error) {
  if (out != nullptr) *out = nullptr;
  return unsupported(error);
}
}  // namespace

namespace dlb {
bool memory_is_exposed(dlb_release_fn, void*) { return false; }
}  // namespace dlb

extern "C" {
DLB_API dlb_status dlb_tensor_allocate_shareable(DLDevice, DLDataType, int32_t, const int64_t*,
                                                 const int64_t*, uint64_t,
                                                 DLManagedTensorVersioned** out, dlb_error* error) {
  return unsupported_out(out, error);
}
DLB_API int dlb_tensor_is_shareable(const DLManagedTensorVersioned*) { return 0; }
DLB_API int dlb_tensor_shareable_kind(const DLManagedTensorVersioned*) { return DLB_SHAREABLE_NONE; }
DLB_API dlb_status dlb_channel_listen(const char*, dlb_channel** out, dlb_error* error) {
  return unsupported_out(out, error);
}
DLB_API dlb_status dlb_channel_accept(dlb_channel*, dlb_channel** out, dlb_error* error) {
  return unsupported_out(out, error);
}
DLB_API dlb_status dlb_channel_connect(const char*, dlb_channel** out, dlb_error* error) {
  return unsupported_out(out, error);
}
DLB_API dlb_status dlb_channel_connect_with(const char*, uint32_t, int64_t, dlb_channel** out,
                                            dlb_error* error) {
  return unsupported_out(out, error);
}
DLB_API dlb_status dlb_channel_set_timeout(dlb_channel*, int64_t, dlb_error* error) {
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_allow_uid(dlb_channel*, uint32_t, dlb_error* error) {
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_peer(const dlb_channel*, int32_t*, uint32_t*, dlb_error* error) {
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_send(dlb_channel*, const DLManagedTensorVersioned*, uint32_t,
                                    dlb_error* error) {
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_send_cuda(dlb_channel*, const DLManagedTensorVersioned*, void*,
                                         uint32_t, dlb_error* error) {
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_receive(dlb_channel*, DLManagedTensorVersioned** out,
                                       dlb_error* error) {
  return unsupported_out(out, error);
}
DLB_API dlb_status dlb_channel_allocate(dlb_channel*, DLDevice, DLDataType, int32_t,
                                        const int64_t*, const int64_t*, uint64_t,
                                        DLManagedTensorVersioned** out, dlb_error* error) {
  return unsupported_out(out, error);
}
DLB_API dlb_status dlb_channel_set_pool_limit(dlb_channel*, uint64_t, dlb_error* error) {
  return unsupported(error);
}
DLB_API dlb_status dlb_channel_pool_stats(dlb_channel*, dlb_pool_stats*, dlb_error* error) {
  return unsupported(error);
}
DLB_API void dlb_channel_shutdown(dlb_channel*) {}
DLB_API void dlb_channel_close(dlb_channel*) {}
DLB_API dlb_status dlb_channel_listen_with_options(const char*, const dlb_channel_options*,
                                                   dlb_channel** out, dlb_error* error) {
  return unsupported_out(out, error);
}
DLB_API dlb_status dlb_channel_connect_with_options(const char*, const dlb_channel_options*,
                                                    dlb_channel** out, dlb_error* error) {
  return unsupported_out(out, error);
}
DLB_API int dlb_channel_is_remote(const dlb_channel*) { return 0; }
DLB_API int32_t dlb_channel_port(const dlb_channel*) { return -1; }
DLB_API dlb_status dlb_remote_available(dlb_error* error) { return unsupported(error); }
}  // extern "C"

#endif  // !__linux__
