// The wire codec: what a sender writes for a tensor (encode), and every check of what a receiver
// reads, made before anything is mapped. A refusal of what the peer sent is DLB_ERR_PROTOCOL
// (another descriptor major: DLB_ERR_UNSUPPORTED_VERSION); its message says what arrived.
#if defined(__linux__)
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>

#include "ipc.hpp"

namespace dlb {
namespace ipc {
namespace {

const char* handle_name(uint32_t handle) {
  return handle == kHandleMemfd      ? "memfd"
         : handle == kHandleCudaFd   ? "cuda-fd"
         : handle == kHandleCudaIpc  ? "cuda-ipc"
         : handle == kHandlePool     ? "pool"
         : handle == kHandleRemote   ? "remote"
                                     : "unknown";
}

// The tensor a descriptor describes, checked as an import validates it (dtype, shape, strides,
// flags, device) and against the size of its segment, with the messages of validation and of
// dlb_tensor_wrap_buffer, as DLB_ERR_PROTOCOL: the peer sent them. Fills `g` (offsets are
// relative to the segment's first byte).
int check_layout(const Wire& wire, Geometry* g, dlb_error* error) {
  // No memory yet: a stand-in address, so that validation sees a tensor with data.
  static char stand_in;
  const DLTensor desc = described_tensor(wire, &stand_in, wire.byte_offset);
  if (validate_tensor(&desc, wire.flags, g, error) != DLB_OK) return DLB_ERR_PROTOCOL;
  if (check_buffer_span(*g, wire.segment_size, error) != DLB_OK) return DLB_ERR_PROTOCOL;
  return DLB_OK;
}

// A host segment's descriptor (a memfd's, a pool's): cpu memory, and a segment of some size.
int check_host_segment(const Wire& wire, const char* kind, dlb_error* error) {
  if (wire.device_type != kDLCPU) {
    DeviceTypeText name(wire.device_type);
    return fail(error, DLB_ERR_PROTOCOL,
                "received a tensor on %s in a %s segment, which holds cpu memory only", name.text,
                kind);
  }
  if (wire.segment_size == 0) {
    return fail(error, DLB_ERR_PROTOCOL, "the descriptor says its segment holds 0 bytes");
  }
  return DLB_OK;
}

// The first check of every descriptor, local or remote.
int check_magic(const Wire& wire, dlb_error* error) {
  if (std::memcmp(wire.magic, kWireMagic, sizeof kWireMagic) != 0) {
    return fail(error, DLB_ERR_PROTOCOL, "not a dlbridge tensor descriptor (bad magic)");
  }
  return DLB_OK;
}

}  // namespace

void encode(const DLManagedTensorVersioned& tensor, uint32_t handle, const void* base,
            uint64_t base_offset, uint64_t segment_size, Wire* wire) {
  const DLTensor& t = tensor.dl_tensor;
  std::memcpy(wire->magic, kWireMagic, sizeof kWireMagic);
  wire->major = kWireMajor;
  wire->minor = kWireMinor;
  wire->size = sizeof(Wire);
  wire->handle = handle;
  wire->segment_size = segment_size;
  wire->device_type = t.device.device_type;
  wire->device_id = t.device.device_id;
  wire->ndim = t.ndim;
  wire->code = t.dtype.code;
  wire->bits = t.dtype.bits;
  wire->lanes = t.dtype.lanes;
  wire->flags = tensor.flags;
  wire->byte_offset = base_offset +
                      static_cast<uint64_t>(static_cast<const char*>(t.data) -
                                            static_cast<const char*>(base)) +
                      t.byte_offset;
  dlb_tensor_get_shape(&t, DLB_MAX_NDIM, wire->shape, nullptr);
  dlb_tensor_get_strides(&t, DLB_MAX_NDIM, wire->strides, nullptr);
}

int check_header(const Wire& wire, dlb_error* error) {
  if (check_magic(wire, error) != DLB_OK) return DLB_ERR_PROTOCOL;
  if (wire.major != kWireMajor || wire.size != sizeof(Wire)) {
    return fail(error, DLB_ERR_UNSUPPORTED_VERSION,
                "tensor descriptor version %u.%u of %u bytes is not supported (dlbridge reads "
                "version %u of %zu bytes)",
                static_cast<unsigned>(wire.major), static_cast<unsigned>(wire.minor),
                static_cast<unsigned>(wire.size), static_cast<unsigned>(kWireMajor), sizeof(Wire));
  }
  return DLB_OK;
}

int check_memfd(const Wire& wire, int fd, int fds, Geometry* g, dlb_error* error) {
  if (fds != 1) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a memfd descriptor must come with exactly one file descriptor; this one came "
                "with %d",
                fds);
  }
  int status = check_host_segment(wire, "memfd", error);
  if (status != DLB_OK) return status;
  status = check_layout(wire, g, error);
  if (status != DLB_OK) return status;
  return check_segment_fd(wire, fd, error);
}

int check_segment_fd(const Wire& wire, int fd, dlb_error* error) {
  struct stat info {};
  if (fstat(fd, &info) != 0) return os_fail(error, errno, DLB_ERR_PROTOCOL, "fstat of the received segment");
  if (!S_ISREG(info.st_mode)) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the file descriptor that came with the tensor is not a memory segment (file "
                "type %o)",
                static_cast<unsigned>(info.st_mode & S_IFMT) >> 12);
  }
  if (static_cast<uint64_t>(info.st_size) != wire.segment_size) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the received segment holds %lld bytes but its descriptor says %llu",
                static_cast<long long>(info.st_size),
                static_cast<unsigned long long>(wire.segment_size));
  }
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the received segment is not sealed against shrinking and growing: its sender "
                "could cut it short under the mapping");
  }
  if ((wire.flags & DLPACK_FLAG_BITMASK_READ_ONLY) == 0) {
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif
    if ((seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) != 0) {
      return fail(error, DLB_ERR_PROTOCOL,
                  "the received segment is sealed against writing, but its tensor was sent "
                  "writable (without READ_ONLY)");
    }
    const int mode = fcntl(fd, F_GETFL);
    if (mode >= 0 && (mode & O_ACCMODE) == O_RDONLY) {
      return fail(error, DLB_ERR_PROTOCOL,
                  "the received segment's file descriptor was opened read-only, but its tensor "
                  "was sent writable (without READ_ONLY)");
    }
  }
  return DLB_OK;
}

int check_pooled(const Wire& wire, const PoolExtension& extension, int fds, Geometry* g,
                 dlb_error* error) {
  if (std::memcmp(extension.magic, kPoolMagic, sizeof kPoolMagic) != 0) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a tensor descriptor with memory handle kind %u must be followed by its "
                "extension frame (bad magic)",
                static_cast<unsigned>(wire.handle));
  }
  constexpr uint32_t kAttachable = kPoolSegmentFd | kPoolReleaseFd | kPoolRingFd;
  if ((extension.attached & ~kAttachable) != 0 || extension.reserved != 0) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the pool descriptor's extension says %u for what comes along and %u in its "
                "reserved field (expected at most %u, and 0)",
                static_cast<unsigned>(extension.attached),
                static_cast<unsigned>(extension.reserved), static_cast<unsigned>(kAttachable));
  }
  if ((extension.attached & kPoolRingFd) != 0 && (extension.attached & kPoolReleaseFd) == 0) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the peer's pool sent its return ring without its release socket");
  }
  const int wanted = ((extension.attached & kPoolSegmentFd) != 0 ? 1 : 0) +
                     ((extension.attached & kPoolReleaseFd) != 0 ? 1 : 0) +
                     ((extension.attached & kPoolRingFd) != 0 ? 1 : 0);
  if (fds != wanted) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a pool descriptor that brings %d file descriptor%s came with %d", wanted,
                wanted == 1 ? "" : "s", fds);
  }
  const int status = check_host_segment(wire, "pool", error);
  if (status != DLB_OK) return status;
  return check_layout(wire, g, error);
}

int check_remote(const void* header, size_t header_size, uint64_t arrived, bool may_come_in_parts,
                 uint64_t max_tensor_bytes, const char* peer, Wire* wire_out,
                 RemoteExtension* extension_out, bool* placed, dlb_error* error) {
  *placed = false;
  if (header_size < kWireHeadBytes) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a tensor descriptor of %zu bytes, shorter than its fixed %zu bytes", header_size,
                kWireHeadBytes);
  }
  Wire& wire = *wire_out;
  RemoteExtension& extension = *extension_out;
  // Only what the rank says travelled is copied (and then read): the head, ndim extents and
  // strides, and the extension's fields; the rest of both frames stays as the caller had it.
  std::memcpy(&wire, header, kWireHeadBytes);
  if (check_magic(wire, error) != DLB_OK) return DLB_ERR_PROTOCOL;
  if (wire.major != kWireMajor) {
    return fail(error, DLB_ERR_UNSUPPORTED_VERSION,
                "tensor descriptor version %u.%u is not supported (dlbridge reads version %u)",
                static_cast<unsigned>(wire.major), static_cast<unsigned>(wire.minor),
                static_cast<unsigned>(kWireMajor));
  }
  // The rank decides where everything after the head lies: checked first, as validation does.
  if (check_rank(wire.ndim, wire.shape, error) != DLB_OK) return DLB_ERR_PROTOCOL;
  if (wire.size != remote_wire_size(wire.ndim) || header_size != remote_header_size(wire.ndim)) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a remote descriptor of a rank-%d tensor takes %zu bytes (%zu of them its "
                "descriptor); this one came in %zu, and says %u",
                static_cast<int>(wire.ndim), remote_header_size(wire.ndim),
                remote_wire_size(wire.ndim), header_size, static_cast<unsigned>(wire.size));
  }
  const auto* bytes_in = static_cast<const unsigned char*>(header);
  const size_t dims = sizeof(int64_t) * static_cast<size_t>(wire.ndim);
  std::memcpy(wire.shape, bytes_in + kWireHeadBytes, dims);
  std::memcpy(wire.strides, bytes_in + kWireHeadBytes + dims, dims);
  std::memcpy(&extension, bytes_in + kWireHeadBytes + 2 * dims, kRemoteExtensionBytes);
  *placed = true;  // the sequence number is known: a refusal from here on keeps its place
  if (wire.handle != kHandleRemote || std::memcmp(extension.magic, kRemoteMagic, 8) != 0) {
    return fail(error, DLB_ERR_PROTOCOL,
                "received a descriptor of memory kind %u on a remote channel, which carries "
                "the bytes themselves",
                wire.handle);
  }
  if (extension.in_parts > 1) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the descriptor's extension frame says %u where 0 or 1 (its bytes follow in parts) "
                "belongs",
                static_cast<unsigned>(extension.in_parts));
  }
  if (extension.in_parts == 1 && !may_come_in_parts) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a tensor in a batch says some of its bytes come in parts; a batch's tensors "
                "come whole");
  }
  if (extension.in_parts == 1 && arrived >= extension.payload_bytes) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a tensor of %llu bytes says some of its bytes come in parts, but %llu came "
                "with it",
                static_cast<unsigned long long>(extension.payload_bytes),
                static_cast<unsigned long long>(arrived));
  }
  // The receiver makes its own tensor of this layout: it is checked as an import would check it
  // on this end's host memory, whatever device the sender's memory was on.
  static char stand_in;
  DLTensor desc = described_tensor(wire, &stand_in, wire.byte_offset);
  desc.device = DLDevice{kDLCPU, 0};
  Geometry g{};
  if (validate_tensor(&desc, wire.flags, &g, error) != DLB_OK) return DLB_ERR_PROTOCOL;
  // The bytes are the covering span: from the lowest element, which byte_offset places.
  if (g.span_bits != 0 && g.begin_bits != 0) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the descriptor's elements begin at byte %lld of the bytes that come with it, "
                "not at byte 0 (its byte offset is %llu)",
                static_cast<long long>(g.begin_bits / 8),
                static_cast<unsigned long long>(wire.byte_offset));
  }
  const uint64_t bytes = (g.span_bits + 7) / 8;
  if (bytes > max_tensor_bytes) {
    return fail(error, DLB_ERR_LIMIT,
                "refused a tensor of %llu bytes from %s: this channel takes at most %llu bytes "
                "(dlb_channel_options_set_max_tensor_bytes)",
                static_cast<unsigned long long>(bytes), peer,
                static_cast<unsigned long long>(max_tensor_bytes));
  }
  // Bytes that come in parts are counted as they come (remote.cc, take_part).
  if (extension.in_parts == 1) arrived = extension.payload_bytes;
  if (bytes != extension.payload_bytes || bytes != arrived) {
    DimsText shape(wire.ndim, wire.shape);
    DTypeText dtype(desc.dtype);
    const bool extension_differs = bytes != extension.payload_bytes;
    return fail(error, DLB_ERR_PROTOCOL, "the descriptor's %s %s tensor takes %llu bytes, but %s %llu",
                shape.text, dtype.text, static_cast<unsigned long long>(bytes),
                extension_differs ? "its extension frame says" : "what came with it is",
                static_cast<unsigned long long>(extension_differs ? extension.payload_bytes
                                                                  : arrived));
  }
  return DLB_OK;
}

int check_batch(const void* header, size_t header_size, uint32_t* count, dlb_error* error) {
  BatchHeader batch;
  if (header_size != sizeof batch) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a batch of tensors with a header of %zu bytes (a batch's header has %zu)",
                header_size, sizeof batch);
  }
  std::memcpy(&batch, header, sizeof batch);
  if (std::memcmp(batch.magic, kBatchMagic, sizeof kBatchMagic) != 0 || batch.reserved != 0 ||
      batch.count == 0) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a batch of tensors with a malformed header (magic, %u records, reserved %u)",
                static_cast<unsigned>(batch.count), static_cast<unsigned>(batch.reserved));
  }
  *count = batch.count;
  return DLB_OK;
}

int next_batch_record(const unsigned char* data, size_t length, size_t* offset, uint32_t index,
                      BatchEntry* out, dlb_error* error) {
  const size_t left = length - *offset;
  BatchRecord record;
  if (left < sizeof record) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a batch of tensors ends inside record %u: %zu bytes left of its %zu-byte frame",
                static_cast<unsigned>(index), left, sizeof record);
  }
  std::memcpy(&record, data + *offset, sizeof record);
  if (record.reserved != 0 || record.header_bytes < kWireHeadBytes ||
      record.header_bytes > kMaxRemoteHeaderBytes) {
    return fail(error, DLB_ERR_PROTOCOL,
                "record %u of a batch of tensors says a header of %u bytes (reserved %u); a "
                "tensor's header takes %zu to %zu",
                static_cast<unsigned>(index), static_cast<unsigned>(record.header_bytes),
                static_cast<unsigned>(record.reserved), kWireHeadBytes, kMaxRemoteHeaderBytes);
  }
  const size_t after_frame = left - sizeof record;
  if (record.header_bytes > after_frame ||
      record.payload_bytes > after_frame - record.header_bytes) {
    return fail(error, DLB_ERR_PROTOCOL,
                "record %u of a batch of tensors says %u header bytes and %llu payload bytes, "
                "but %zu are left",
                static_cast<unsigned>(index), static_cast<unsigned>(record.header_bytes),
                static_cast<unsigned long long>(record.payload_bytes), after_frame);
  }
  out->header = data + *offset + sizeof record;
  out->header_bytes = record.header_bytes;
  out->payload = out->header + record.header_bytes;
  out->payload_bytes = record.payload_bytes;
  *offset += sizeof record + record.header_bytes + static_cast<size_t>(record.payload_bytes);
  return DLB_OK;
}

bool remote_keeps_strides(const Wire& wire) {
  static char stand_in;
  const DLTensor desc = described_tensor(wire, &stand_in, 0);
  return dlb_tensor_is_c_contiguous(&desc) == 0;
}

int check_cuda(const Wire& wire, const WireExtension& extension, int fds, dlb_error* error) {
  if (wire.handle == kHandleRemote) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a remote tensor descriptor (the bytes follow it) arrived on a local channel");
  }
  if (std::memcmp(extension.magic, kExtensionMagic, sizeof kExtensionMagic) != 0) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a tensor descriptor with memory handle kind %u must be followed by its "
                "extension frame (bad magic)",
                static_cast<unsigned>(wire.handle));
  }
  if (wire.handle != kHandleCudaFd && wire.handle != kHandleCudaIpc) {
    return fail(error, DLB_ERR_UNSUPPORTED_VERSION,
                "tensor descriptor version %u.%u names memory handle kind %u, which this "
                "dlbridge (version %u.%u) does not know",
                static_cast<unsigned>(wire.major), static_cast<unsigned>(wire.minor),
                static_cast<unsigned>(wire.handle), static_cast<unsigned>(kWireMajor),
                static_cast<unsigned>(kWireMinor));
  }
  if (wire.device_type != kDLCUDA) {
    DeviceTypeText name(wire.device_type);
    return fail(error, DLB_ERR_PROTOCOL, "a %s descriptor describes cuda memory, not %s",
                handle_name(wire.handle), name.text);
  }
  const int wanted = wire.handle == kHandleCudaFd ? 1 : 0;
  if (fds != wanted) {
    return fail(error, DLB_ERR_PROTOCOL,
                "a %s descriptor must come with %s file descriptor; this one came with %d",
                handle_name(wire.handle), wanted == 1 ? "exactly one" : "no", fds);
  }
  if (wire.segment_size == 0) {
    return fail(error, DLB_ERR_PROTOCOL, "the descriptor says the cuda allocation holds 0 bytes");
  }
  if ((extension.has_event != 0 && extension.has_event != 1) || extension.reserved != 0) {
    return fail(error, DLB_ERR_PROTOCOL,
                "the descriptor extension's event field is %u and its reserved field %u "
                "(expected 0 or 1, and 0)",
                static_cast<unsigned>(extension.has_event),
                static_cast<unsigned>(extension.reserved));
  }
  Geometry g{};
  return check_layout(wire, &g, error);
}

}  // namespace ipc
}  // namespace dlb

#endif  // __linux__
