// The other end of the parity table's channel rows (README.md): one small program that every
// language's parity program starts, so that each language meets the same peer. Modes:
//   connect-close PATH                    connects and exits
//   forge PATH                            sends a descriptor of dtype float33 over a sealed memfd
//   half PATH                             sends 16 bytes of a descriptor, then waits for the close
//   connect-as UID LISTENER_UID PATH      as UID: connects naming LISTENER_UID, echoes one tensor
//   listen-as UID ALLOW_UID               as UID: listens in a new folder, prints the socket's
//                                         path, sends one float32 [4] tensor 0..3 to one peer
// Every mode that stays connected waits until the other end closes, so that the row decides
// when the conversation ends. Exits 0 when it did its part, 1 otherwise (the row reports).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dlbridge/dlbridge.h"
#include "ipc/wire.hpp"
#include "../ipc/ipc_forge.hpp"

namespace {

// Reads from `fd` until the other end closes it.
void wait_for_close(int fd) {
  char byte;
  while (read(fd, &byte, 1) > 0) {
  }
}

dlb::ipc::Wire descriptor(uint8_t bits) {
  dlb::ipc::Wire w{};
  std::memcpy(w.magic, dlb::ipc::kWireMagic, sizeof w.magic);
  w.major = dlb::ipc::kWireMajor;
  w.minor = dlb::ipc::kWireMinor;
  w.size = sizeof w;
  w.device_type = kDLCPU;
  w.ndim = 1;
  w.code = kDLFloat;
  w.bits = bits;
  w.lanes = 1;
  w.handle = dlb::ipc::kHandleMemfd;
  w.segment_size = 4096;
  w.shape[0] = 4;
  w.strides[0] = 1;
  return w;
}

bool drop_to(const char* uid_text) {
  const uid_t uid = static_cast<uid_t>(std::strtoul(uid_text, nullptr, 10));
  return setgid(uid) == 0 && setuid(uid) == 0;
}

int fail(const char* what, const dlb_error& err) {
  std::fprintf(stderr, "parity_peer: %s: %s\n", what, err.message);
  return 1;
}

int echo(const char* path, uint32_t listener_uid) {
  dlb_error err;
  dlb_channel* channel = nullptr;
  if (dlb_channel_connect_with(path, listener_uid, DLB_TIMEOUT_NONE, &channel, &err) != DLB_OK) {
    return fail("connect", err);
  }
  DLManagedTensorVersioned* tensor = nullptr;
  int rc = 0;
  if (dlb_channel_receive(channel, &tensor, &err) != DLB_OK) {
    rc = 1;  // refused by the listener: it closed the connection
  } else {
    if (dlb_channel_send(channel, tensor, 0, &err) != DLB_OK) rc = fail("send", err);
    dlb_tensor_free(tensor);
    DLManagedTensorVersioned* none = nullptr;
    dlb_channel_receive(channel, &none, &err);  // returns when the other end closes
    dlb_tensor_free(none);
  }
  dlb_channel_close(channel);
  return rc;
}

int serve(uint32_t allow_uid) {
  char folder[] = "/tmp/dlbridge-parity-peer-XXXXXX";
  if (mkdtemp(folder) == nullptr) return 1;
  const std::string path = std::string(folder) + "/s";
  dlb_error err;
  dlb_channel* listener = nullptr;
  if (dlb_channel_listen(path.c_str(), &listener, &err) != DLB_OK) return fail("listen", err);
  int rc = 0;
  if (dlb_channel_allow_uid(listener, allow_uid, &err) != DLB_OK ||
      chmod(folder, 0711) != 0 || chmod(path.c_str(), 0666) != 0) {
    rc = 1;
  }
  std::printf("%s\n", path.c_str());
  std::fflush(stdout);
  dlb_channel* channel = nullptr;
  if (rc == 0 && dlb_channel_accept(listener, &channel, &err) == DLB_OK) {
    const DLDevice cpu = {kDLCPU, 0};
    const DLDataType f32 = {kDLFloat, 32, 1};
    const int64_t shape[1] = {4};
    DLManagedTensorVersioned* tensor = nullptr;
    if (dlb_tensor_allocate_shareable(cpu, f32, 1, shape, nullptr, 0, &tensor, &err) == DLB_OK) {
      float* v = static_cast<float*>(tensor->dl_tensor.data) + tensor->dl_tensor.byte_offset / 4;
      for (int i = 0; i < 4; ++i) v[i] = static_cast<float>(i);
      // The other end may have refused us: then the send fails, which is its row's business.
      dlb_channel_send(channel, tensor, 0, &err);
      dlb_tensor_free(tensor);
      DLManagedTensorVersioned* none = nullptr;
      dlb_channel_receive(channel, &none, &err);  // returns when the other end closes
      dlb_tensor_free(none);
    }
    dlb_channel_close(channel);
  }
  dlb_channel_close(listener);
  rmdir(folder);
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "connect-close" && argc == 3) {
    const int fd = forge::connect_raw(argv[2]);
    if (fd < 0) return 1;
    close(fd);
    return 0;
  }
  if ((mode == "forge" || mode == "half") && argc == 3) {
    const int fd = forge::connect_raw(argv[2]);
    if (fd < 0) return 1;
    const dlb::ipc::Wire w = descriptor(mode == "forge" ? 33 : 32);
    bool sent;
    if (mode == "forge") {
      const int segment = forge::memfd(w.segment_size, true);
      sent = segment >= 0 && forge::send(fd, &w, sizeof w, {segment});
      if (segment >= 0) close(segment);
    } else {
      sent = forge::send(fd, &w, 16, {});
    }
    wait_for_close(fd);
    close(fd);
    return sent ? 0 : 1;
  }
  if (mode == "connect-as" && argc == 5) {
    if (!drop_to(argv[2])) return 1;
    return echo(argv[4], static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)));
  }
  if (mode == "listen-as" && argc == 4) {
    if (!drop_to(argv[2])) return 1;
    return serve(static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)));
  }
  std::fprintf(stderr,
               "usage: parity_peer connect-close|forge|half PATH | connect-as UID LISTENER_UID "
               "PATH | listen-as UID ALLOW_UID\n");
  return 2;
}
