// fuzz_ipc_receive.cc - libFuzzer target for dlb_channel_receive, the one place where a
// process maps memory described by another: whatever arrives must be refused with a message
// and nothing left open, or give a tensor whose every element lies inside the segment.
//
// Input: byte 0 picks what travels with the descriptor (0: nothing, 1: a sealed memfd, 2: an
// unsealed memfd, 3: two sealed memfds); bytes 1-4 the memfd's size (capped at 1 MiB); the rest
// is what is sent: the descriptor (sizeof(Wire) bytes; fewer is a truncated descriptor) and, for
// a descriptor whose memory handle is not a memfd, up to one extension frame behind it. The
// sender then shuts its side down, so that a receiver waiting for more sees the end of the
// stream. A received tensor is read whole (dlb_tensor_copy_to_host): an element outside the
// segment would fault.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../core/src/ipc/wire.hpp"
#include "../ipc/ipc_forge.hpp"
#include "fuzz_common.h"

namespace {

struct Endpoint {
  std::string dir, path;
  dlb_channel* listener = nullptr;
  dlb_channel* server = nullptr;
  int raw = -1;  // the forging sender's end

  Endpoint() {
    char templ[] = "/tmp/dlbridge-fuzz-ipc-XXXXXX";
    dir = mkdtemp(templ);
    path = dir + "/s";
    dlb_error err;
    FUZZ_CHECK_MSG(dlb_channel_listen(path.c_str(), &listener, &err) == DLB_OK, 1, err);
    reconnect();
  }
  ~Endpoint() {
    if (raw >= 0) close(raw);
    dlb_channel_close(server);
    dlb_channel_close(listener);
    rmdir(dir.c_str());
  }
  void reconnect() {
    if (raw >= 0) close(raw);
    dlb_channel_close(server);
    server = nullptr;
    raw = forge::connect_raw(path);
    FUZZ_CHECK(raw >= 0);
    dlb_error err;
    FUZZ_CHECK_MSG(dlb_channel_accept(listener, &server, &err) == DLB_OK, 1, err);
  }
};

int memfd(uint64_t size, bool sealed) {
  const int fd = forge::memfd(size, sealed);
  FUZZ_CHECK(fd >= 0);
  return fd;
}

// The lowest free descriptor number: a descriptor received and leaked would take it.
int lowest_free_fd() {
  const int fd = dup(0);
  close(fd);
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Endpoint* endpoint = new Endpoint();  // lives for the process: one socket, reused
  fuzz::Reader in(data, size);
  const uint8_t mode = in.u8() % 4;
  const uint64_t segment = in.u32() % ((1u << 20) + 1);
  constexpr size_t kMost = sizeof(dlb::ipc::Wire) + sizeof(dlb::ipc::WireExtension);
  const size_t length = in.remaining() < kMost ? in.remaining() : kMost;
  const uint8_t* wire = in.rest();

  const int free_before = lowest_free_fd();
  std::vector<int> fds;
  if (mode == 1 || mode == 3) fds.push_back(memfd(segment, true));
  if (mode == 2) fds.push_back(memfd(segment, false));
  if (mode == 3) fds.push_back(memfd(segment, true));

  if (length > 0 || !fds.empty()) {
    // A zero-byte message carries nothing on a stream socket: one byte stands in for it.
    static const uint8_t zero = 0;
    FUZZ_CHECK(forge::send(endpoint->raw, length > 0 ? wire : &zero, length > 0 ? length : 1, fds));
  }
  for (int fd : fds) close(fd);
  shutdown(endpoint->raw, SHUT_WR);  // the receiver must not wait for more than was sent

  dlb_error err;
  fuzz::error_reset(&err);
  DLManagedTensorVersioned* t = nullptr;
  const int status = dlb_channel_receive(endpoint->server, &t, &err);
  if (status == DLB_OK) {
    FUZZ_CHECK(t != nullptr);
    FUZZ_CHECK(fuzz::error_untouched(err));
    FUZZ_CHECK(dlb_tensor_validate(&t->dl_tensor, t->flags, nullptr) == DLB_OK);
    // Zero strides make a huge tensor of a few bytes of memory (its compact size may even
    // overflow: DLB_ERR_OVERFLOW): read it whole only when its copy is small.
    uint64_t bytes = 0;
    const int sized = dlb_tensor_byte_size(&t->dl_tensor, t->flags, &bytes, nullptr);
    FUZZ_CHECK(sized == DLB_OK || sized == DLB_ERR_OVERFLOW);
    if (sized == DLB_OK && bytes <= (uint64_t{16} << 20)) {
      std::vector<uint8_t> copy(bytes > 0 ? bytes : 1);
      const DLDataType any{0, 0, 0};
      FUZZ_CHECK(dlb_tensor_copy_to_host(t, any, copy.data(), bytes, nullptr) == DLB_OK);
    }
    dlb_tensor_free(t);
  } else {
    FUZZ_CHECK(t == nullptr);
    FUZZ_CHECK_MSG(fuzz::error_filled(err), status, err);
  }
  endpoint->reconnect();  // a clean stream for the next input
  FUZZ_CHECK(dlb_tensor_live_count() == 0);
  FUZZ_CHECK(lowest_free_fd() == free_before);
  return 0;
}
