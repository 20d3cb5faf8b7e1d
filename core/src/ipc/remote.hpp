// Channels across machines (remote.cc, on UCX) and the options every channel is made with
// (options.cc). The Unix-socket channel (channel.cc) hands a call to remote.cc when the channel,
// or the address it is given, is remote; nothing here knows the Unix-socket channel's insides.
#ifndef DLBRIDGE_SRC_IPC_REMOTE_HPP_
#define DLBRIDGE_SRC_IPC_REMOTE_HPP_

#include <cstdint>

#include "../internal.hpp"

struct dlb_channel_options {
  unsigned char key[DLB_REMOTE_MAX_KEY_BYTES];
  uint32_t key_size;  // 0: no key
  DLDevice receive_device;
  uint64_t max_tensor_bytes;
  uint32_t max_in_flight;
  int64_t timeout_ns;
  uint32_t listener_uid;  // local channels: DLB_UID_SELF or one uid
};

namespace dlb {
namespace ipc {

struct Remote;  // remote.cc: a remote channel's or listener's UCX state

// The defaults of dlb_channel_options_create.
void default_options(dlb_channel_options* options);

// DLB_ERR_INVALID_ARGUMENT for a negative time limit other than DLB_TIMEOUT_NONE.
int check_timeout(int64_t timeout_ns, dlb_error* error);

// Whether `address` names a channel across machines ("ucx://" or "tcp://").
bool is_remote_address(const char* address);

// The calls of a remote channel, with the contracts of the dlb_channel_* functions they serve.
// The caller has checked `out` and cleared *out; `channel` is a remote channel (is_remote).
int remote_listen(const char* address, const dlb_channel_options& options, dlb_channel** out,
                  dlb_error* error);
int remote_connect(const char* address, const dlb_channel_options& options, dlb_channel** out,
                   dlb_error* error);
int remote_accept(dlb_channel* listener, dlb_channel** out, dlb_error* error);
int remote_send(dlb_channel* channel, const DLManagedTensorVersioned* tensor, uint32_t options,
                dlb_error* error);
int remote_receive(dlb_channel* channel, DLManagedTensorVersioned** out, dlb_error* error);
int32_t remote_port(const dlb_channel* channel);
void remote_shutdown(dlb_channel* channel);
void remote_close(dlb_channel* channel);
int remote_available(dlb_error* error);

}  // namespace ipc
}  // namespace dlb

#endif  // DLBRIDGE_SRC_IPC_REMOTE_HPP_
