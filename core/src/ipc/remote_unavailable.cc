// The remote channel's calls in a library built without UCX's headers: every remote listen and
// connect says how to get a build that has them.
#include "remote.hpp"

namespace dlb {
namespace ipc {
namespace {
int unavailable(dlb_error* error) {
  return fail(error, DLB_ERR_UNSUPPORTED,
              "this dlbridge was built without remote channels: UCX's headers (libucx-dev) were "
              "not found when it was built");
}
}  // namespace

int remote_available(dlb_error* error) { return unavailable(error); }
int remote_listen(const char*, const dlb_channel_options&, dlb_channel**, dlb_error* error) {
  return unavailable(error);
}
int remote_connect(const char*, const dlb_channel_options&, dlb_channel**, dlb_error* error) {
  return unavailable(error);
}
// No remote channel exists in this build, so these are never reached.
int remote_accept(dlb_channel*, dlb_channel**, dlb_error* error) { return unavailable(error); }
int remote_send(dlb_channel*, const DLManagedTensorVersioned*, uint32_t, dlb_error* error) {
  return unavailable(error);
}
int remote_receive(dlb_channel*, DLManagedTensorVersioned**, dlb_error* error) {
  return unavailable(error);
}
int32_t remote_port(const dlb_channel*) { return -1; }
void remote_shutdown(dlb_channel*) {}
void remote_close(dlb_channel*) {}

}  // namespace ipc
}  // namespace dlb
