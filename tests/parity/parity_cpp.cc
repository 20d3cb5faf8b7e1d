// parity_cpp.cc - the parity rows (tests/parity/parity_table.tsv) through the C++ helpers
// (dlbridge.hpp). One line per row: ROW<TAB>STATUS<TAB>DETAIL.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dlbridge/dlbridge.hpp"
#include "foreign_dlpack.h"

using dlbridge::Channel;
using dlbridge::Device;
using dlbridge::DType;
using dlbridge::Error;
using dlbridge::Listener;
using dlbridge::Tensor;
using namespace std::chrono_literals;

extern char** environ;

namespace {

std::string list(const std::vector<int64_t>& v) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < v.size(); ++i) out << (i ? "," : "") << v[i];
  out << "]";
  return out.str();
}

std::string values(const std::vector<float>& v) {
  std::vector<int64_t> whole(v.begin(), v.end());
  return "values=" + list(whole);
}

std::string layout(const Tensor& t) {
  return "shape=" + list(t.shape()) + " strides=" + list(t.strides());
}

Tensor iota(std::vector<int64_t> shape) {
  Tensor t = Tensor::empty<float>(shape);
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  t.copy_from(v);
  return t;
}

// Runs one row: `body` returns the detail of a success; a dlbridge::Error is the row's outcome.
void row(const char* id, const std::function<std::string()>& body) {
  try {
    const std::string detail = body();
    std::cout << id << "\tDLB_OK\t" << detail << "\n";
  } catch (const Error& e) {
    std::cout << id << "\t" << e.status_name() << "\t" << e.what() << "\n";
  } catch (const std::exception& e) {  // the row could not run (no peer program, no folder)
    std::cout << id << "\tERROR\t" << e.what() << "\n";
  }
}

std::string outcome(const std::optional<Error>& reason) {
  if (!reason) return "";
  throw *reason;
}

// ---- the channel rows: the peer is $DLBRIDGE_PARITY_PEER (parity_peer.cc) ------------------

// A new folder of mode 0700 (mkdtemp), removed when this goes out of scope.
struct Folder {
  std::string dir;
  Folder() {
    char tmpl[] = "/tmp/dlbridge-parity-cpp-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
  }
  ~Folder() {
    unlink((dir + "/s").c_str());
    rmdir(dir.c_str());
  }
  std::string socket() const { return dir + "/s"; }
};

// The peer program, started with `args`; reaped when this goes out of scope, so declare it
// before the channels it talks to (they close first, and the peer then ends). With
// `read_stdout`, line() reads the first line it prints.
class PeerProcess {
 public:
  explicit PeerProcess(const std::vector<std::string>& args, bool read_stdout = false) {
    const char* peer = std::getenv("DLBRIDGE_PARITY_PEER");
    if (peer == nullptr) throw std::runtime_error("DLBRIDGE_PARITY_PEER is not set");
    std::vector<char*> argv{const_cast<char*>(peer)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    int fds[2] = {-1, -1};
    if (read_stdout) {
      if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
      posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
      posix_spawn_file_actions_addclose(&actions, fds[0]);
    }
    const int spawned = posix_spawn(&pid_, peer, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (read_stdout) {
      close(fds[1]);
      out_ = fds[0];
    }
    if (spawned != 0) {
      pid_ = -1;
      throw std::runtime_error(std::string("cannot start the peer ") + peer);
    }
  }
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;
  ~PeerProcess() {
    if (out_ >= 0) close(out_);
    int ignored = 0;
    if (pid_ > 0) waitpid(pid_, &ignored, 0);
  }

  // The first line the peer printed, without its newline.
  std::string line() {
    std::string text;
    char c = 0;
    while (read(out_, &c, 1) == 1 && c != '\n') text += c;
    if (text.empty()) throw std::runtime_error("the peer printed no socket path");
    return text;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
};

// A float32 [4] tensor read into the row's detail.
std::string four_values(const Tensor& t) { return values(t.to_vector<float>()); }

// Listen at DIR/s; the peer in `mode` connects; accept (a peer that never came ends the row
// after 10 s); `limit` on the accepted channel; receive: the row's outcome.
std::string receive_from(const char* mode, std::chrono::nanoseconds limit) {
  Folder folder;
  Listener listener = Listener::listen(folder.socket());
  listener.set_timeout(10s);
  PeerProcess peer({mode, folder.socket()});
  Channel channel = listener.accept();
  channel.set_timeout(limit);
  channel.receive();
  return "";
}

// We listen (allowing uid 65534 when `allow`), a peer of uid 65534 connects and echoes a
// shareable float32 [0,1,2,3]; the echo is read.
std::string other_uid_connects(bool allow) {
  Folder folder;
  Listener listener = Listener::listen(folder.socket());
  if (allow) listener.allow_uid(65534);
  chmod(folder.dir.c_str(), 0711);
  chmod(folder.socket().c_str(), 0666);
  listener.set_timeout(10s);
  PeerProcess peer({"connect-as", "65534", "0", folder.socket()});
  Channel channel = listener.accept();
  Tensor t = Tensor::allocate_shareable(Device::cpu(), DType::float32(), {4});
  t.copy_from(std::vector<float>{0, 1, 2, 3});
  channel.send(t);
  return four_values(channel.receive());
}

// A peer of uid 65534 listens and prints its socket's path; we connect, naming its uid when
// `name_uid` (else a plain connect), and read the tensor it sends.
std::string connect_to_other_uid(bool name_uid) {
  PeerProcess peer({"listen-as", "65534", "0"}, true);
  const std::string path = peer.line();
  Channel channel = name_uid ? Channel::connect_with(path, 65534, 10s) : Channel::connect(path);
  channel.set_timeout(10s);
  return four_values(channel.receive());
}

void channel_rows() {
  row("channel_no_listener", [] {
    Channel::connect("dlbridge-parity-absent.sock");
    return std::string();
  });
  {
    // The message names the row's folder: it is written DIR.
    Folder folder;
    chmod(folder.dir.c_str(), 0755);
    try {
      Listener::listen(folder.socket());
      std::cout << "channel_permission\tDLB_OK\t\n";
    } catch (const Error& e) {
      std::string text = e.what();
      const std::size_t at = text.find(folder.dir);
      if (at != std::string::npos) text.replace(at, folder.dir.size(), "DIR");
      std::cout << "channel_permission\t" << e.status_name() << "\t" << text << "\n";
    }
  }
  row("channel_peer_closed", [] { return receive_from("connect-close", 10s); });
  row("channel_forged", [] { return receive_from("forge", 10s); });
  row("channel_timeout", [] { return receive_from("half", 100ms); });
  if (geteuid() != 0) {
    for (const char* id : {"channel_refused_uid_accept", "channel_refused_uid_connect",
                           "channel_second_uid_accept", "channel_second_uid_connect"}) {
      std::cout << id << "\tSKIP\tneeds root to run a peer as another user\n";
    }
  } else {
    row("channel_refused_uid_accept", [] { return other_uid_connects(false); });
    row("channel_refused_uid_connect", [] { return connect_to_other_uid(false); });
    row("channel_second_uid_accept", [] { return other_uid_connects(true); });
    row("channel_second_uid_connect", [] { return connect_to_other_uid(true); });
  }
  row("status_names_channel", [] {
    std::string names;
    for (int status : {DLB_ERR_NO_LISTENER, DLB_ERR_PERMISSION, DLB_ERR_PEER_CLOSED,
                       DLB_ERR_PROTOCOL, DLB_ERR_TIMEOUT, DLB_ERR_LIMIT}) {
      names += std::string(names.empty() ? "" : ",") + Error(status, "").status_name();
    }
    return "names=" + names;
  });
}

}  // namespace

int main() {
  const int64_t live_at_start = dlbridge::live_count();

  row("create", [] {
    Tensor t = Tensor::empty<float>({2, 3});
    return layout(t) + " dtype=" + t.dtype().name() + " device=" + t.device().name();
  });
  row("create_negative_extent", [] { return layout(Tensor::empty<float>({2, -3})); });
  row("create_ndim_65", [] { return layout(Tensor::empty<float>(std::vector<int64_t>(65, 1))); });
  row("create_strides_length",
      [] { return layout(Tensor::allocate(Device::cpu(), DType::float32(), {2, 3}, {1})); });
  row("create_is_copied", [] {
    return layout(Tensor::allocate(Device::cpu(), DType::float32(), {2, 3}, {},
                                   DLPACK_FLAG_BITMASK_IS_COPIED));
  });

  row("wrap", [] {
    std::vector<float> buffer{0, 1, 2, 3, 4, 5};
    const float* memory = buffer.data();
    Tensor t = Tensor::from_vector(std::move(buffer), {2, 3});
    return layout(t) + " " + values(t.to_vector<float>()) +
           " same_memory=" + std::to_string(t.data() == memory);
  });
  row("wrap_beyond_buffer", [] {
    return layout(Tensor::from_vector(std::vector<float>(5), {2, 3}));
  });
  row("wrap_ndim_5", [] {
    Tensor t = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {1, 1, 1, 2, 3});
    return layout(t) + " " + values(t.to_vector<float>());
  });
  row("wrap_ndim_65", [] {
    return layout(Tensor::from_vector(std::vector<float>(1), std::vector<int64_t>(65, 1)));
  });

  row("import_versioned", [] {
    const int64_t deleted = foreign_dlpack_deleted_count();
    std::string read;
    {
      Tensor t = Tensor::import(reinterpret_cast<DLManagedTensorVersioned*>(
          foreign_dlpack_produce_versioned(4, 1, 3, 0)));
      read = values(t.to_vector<float>());
    }
    return read + " deleted=" + std::to_string(foreign_dlpack_deleted_count() - deleted);
  });
  row("import_legacy", [] {
    const int64_t deleted = foreign_dlpack_deleted_count();
    std::string read;
    {
      Tensor t = Tensor::import_legacy(
          reinterpret_cast<DLManagedTensor*>(foreign_dlpack_produce_legacy(4)));
      read = values(t.to_vector<float>());
    }
    return read + " deleted=" + std::to_string(foreign_dlpack_deleted_count() - deleted);
  });
  {
    // The refused tensor's deleter has run: the detail follows the message on this row.
    const int64_t deleted = foreign_dlpack_deleted_count();
    try {
      Tensor::import(
          reinterpret_cast<DLManagedTensorVersioned*>(foreign_dlpack_produce_versioned(4, 2, 0, 0)));
      std::cout << "import_major_2\tDLB_OK\t\n";
    } catch (const Error& e) {
      std::cout << "import_major_2\t" << e.status_name() << "\t" << e.what()
                << " deleted=" << foreign_dlpack_deleted_count() - deleted << "\n";
    }
  }
  row("export_import_legacy", [] {
    Tensor back = Tensor::import_legacy(std::move(iota({2, 3})).export_legacy());
    return layout(back) + " " + values(back.to_vector<float>());
  });
  row("export_import_versioned", [] {
    Tensor back = Tensor::import(iota({2, 3}).release());
    return layout(back) + " " + values(back.to_vector<float>()) +
           " flags=" + std::to_string(back.flags());
  });
  row("export_legacy_read_only", [] {
    Tensor t = iota({2, 3});
    Tensor ro = t.share(DLPACK_FLAG_BITMASK_READ_ONLY);
    std::move(ro).export_legacy();
    return std::string();
  });
  row("export_versioned_read_only", [] {
    Tensor t = iota({2, 3});
    Tensor back = Tensor::import(t.share(DLPACK_FLAG_BITMASK_READ_ONLY).release());
    return "flags=" + std::to_string(back.flags());
  });

  row("slice", [] {
    Tensor v = iota({3, 4}).slice({dlbridge::range(1, 3), dlbridge::all(2)});
    return layout(v) + " " + values(v.to_vector<float>());
  });
  row("slice_step_zero", [] { return layout(iota({3, 4}).slice({dlbridge::range(0, 2, 0)})); });
  row("select", [] {
    Tensor v = iota({3, 4}).select(1, -1);
    return layout(v) + " " + values(v.to_vector<float>());
  });
  row("select_out_of_range", [] { return layout(iota({3, 4}).select(0, 3)); });
  row("reshape", [] {
    Tensor v = iota({3, 4}).reshape({2, -1});
    return layout(v) + " " + values(v.to_vector<float>());
  });
  row("reshape_non_contiguous", [] { return layout(iota({3, 4}).transpose().reshape({12})); });
  row("transpose", [] {
    Tensor v = iota({3, 4}).transpose();
    return layout(v) + " " + values(v.to_vector<float>());
  });
  row("permute", [] { return layout(iota({2, 3, 4}).permute({2, 0, 1})); });
  row("permute_invalid", [] { return layout(iota({2, 3, 4}).permute({0, 0, 1})); });

  row("copy_out", [] { return values(iota({2, 3}).to_vector<float>()); });
  row("copy_out_transposed", [] { return values(iota({2, 3}).transpose().to_vector<float>()); });
  row("copy_out_wrong_type", [] {
    iota({2, 3}).to_vector<int32_t>();
    return std::string();
  });
  row("copy_out_negative_strides", [] {
    return values(iota({3, 4}).slice({dlbridge::all(-1), dlbridge::all(2)}).to_vector<float>());
  });
  row("copy_in_transposed", [] {
    Tensor t = iota({3, 4});
    std::vector<float> in(12);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(100 + i);
    Tensor tr = t.transpose();
    tr.copy_from(in);
    return values(t.to_vector<float>());
  });
  row("copy_in_count_mismatch", [] {
    Tensor tr = iota({3, 4}).transpose();
    tr.copy_from(std::vector<float>(5));
    return std::string();
  });

  row("typed_view", [] {
    Tensor t = iota({2, 3});
    auto v = t.view<float>();
    v(1, 1) = 40;
    return "count=" + std::to_string(v.size()) + " " + values(t.to_vector<float>());
  });
  row("typed_view_wrong_type", [] {
    Tensor t = iota({2, 3});
    t.cview<int32_t>();
    return std::string();
  });
  // C++ hands out strided views (TensorView honours strides), not contiguous arrays: the typed
  // view of a transpose is how C++ reads one.
  std::cout << "typed_view_transposed\tSKIP\tC++ views honour strides: a transpose has a typed view\n";
  row("write_read_only", [] {
    Tensor t = iota({2, 3});
    Tensor ro = t.share(DLPACK_FLAG_BITMASK_READ_ONLY);
    ro.view<float>();
    return std::string();
  });
  row("copy_into_read_only", [] {
    Tensor t = iota({2, 3});
    Tensor ro = t.share(DLPACK_FLAG_BITMASK_READ_ONLY);
    ro.copy_from(std::vector<float>(6));
    return std::string();
  });
  row("element_get", [] {
    Tensor t = iota({2, 3});
    return "value=" + std::to_string(static_cast<int64_t>(t.cview<float>()(1, 2)));
  });
  row("element_out_of_range", [] {
    Tensor t = iota({2, 3});
    return std::to_string(t.cview<float>()(2, 0));
  });

  row("use_after_close", [] {
    Tensor t = iota({2, 3});
    t.reset();
    return list(t.shape());
  });
  row("double_close", [] {
    Tensor t = iota({2, 3});
    t.reset();
    t.reset();
    return std::string();
  });
  std::cout << "close_during_call\tSKIP\ta C++ Tensor, like any C++ object, must not be reset "
               "on one thread while another calls it\n";
  std::cout << "export_during_call\tSKIP\ta C++ Tensor, like any C++ object, must not be "
               "released on one thread while another calls it\n";

  row("cuda_available", [] { return outcome(dlbridge::cuda::unavailable_reason()); });
  row("cuda_allocate", [] { return layout(Tensor::empty<float>({2}, Device::cuda(0))); });
  row("opencl_available", [] { return outcome(dlbridge::opencl::unavailable_reason()); });
  row("dtype_parse_unknown", [] { return DType::parse("float33").name(); });
  row("dtype_parse", [] {
    const DType d = DType::parse("bfloat16x4");
    return "code=" + std::to_string(d.code) + " bits=" + std::to_string(d.bits) +
           " lanes=" + std::to_string(d.lanes);
  });
  row("device_unknown_type", [] {
    const Device d = Device::parse("device_type_99:3");
    return "type=" + std::to_string(d.type) + " id=" + std::to_string(d.id) + " name=" + d.name();
  });
  row("device_parse_unknown", [] { return Device::parse("gpu:0").name(); });
  row("status_name", [] {
    return std::string("names=") + Error(DLB_ERR_READ_ONLY, "").status_name() + "," +
           Error(99, "").status_name();
  });
  channel_rows();
  row("live_count_balance",
      [&] { return "live=" + std::to_string(dlbridge::live_count() - live_at_start); });
  return 0;
}
